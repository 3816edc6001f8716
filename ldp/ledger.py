"""The client's budget ledger: caps per metric and overall, per window and lifetime, in SQLite.

Design notes (research: apple-and-theory.md §8.3): charge before randomizing and never refund;
no carry-over between windows; a monotone clock; memoization-aware charges; one SQLite file
shared safely by several processes (``BEGIN IMMEDIATE`` serializes writers).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, TypeVar

from ldp.accountant import PrivacyCost, _check_real
from ldp.reports import MAX_WINDOW

__all__ = ["BudgetPolicy", "MemoizedCharge", "Reservation", "BudgetExceeded", "LedgerError", "LedgerDamagedError",
           "ClockError", "BudgetLedger", "MAX_CLOCK", "check_clock"]

MAX_CLOCK = 253402300799.0
"""The last second of 9999-12-31 UTC: the latest clock reading a ledger accepts."""

T = TypeVar("T")


@dataclass(frozen=True)
class BudgetPolicy:
    """Caps for one scope (a metric, or all metrics): per window and over the lifetime."""

    per_window: PrivacyCost | None = None
    lifetime: PrivacyCost | None = None


@dataclass(frozen=True)
class MemoizedCharge:
    """A history-dependent charge for a memoized response (RAPPOR's PRR).

    The first report of ``key`` is charged ``first``; each later report ``then``; the total ever
    charged for ``key`` in its metric never exceeds ``cap`` (each increment is cut to fit).
    """

    key: bytes
    first: PrivacyCost
    then: PrivacyCost
    cap: PrivacyCost


@dataclass(frozen=True)
class Reservation:
    """A charge recorded by :meth:`BudgetLedger.reserve` (spent whether or not it is committed)."""

    id: int
    metric: str
    cost: PrivacyCost
    window: int


class BudgetExceeded(Exception):
    """A charge would exceed a cap; nothing was charged and no report may be produced."""

    def __init__(self, scope: str, period: str, requested: PrivacyCost, spent: PrivacyCost, cap: PrivacyCost):
        self.scope, self.period, self.requested, self.spent, self.cap = scope, period, requested, spent, cap
        where = "all metrics" if scope == BudgetLedger.ALL else f"metric {scope!r}"
        super().__init__(f"privacy budget exceeded for {where} ({period}): spent {spent}, requested {requested}, cap {cap}")


class LedgerError(Exception):
    """The ledger file is not an ldp ledger, is corrupted, or was made with other settings."""


class LedgerDamagedError(LedgerError):
    """A value the ledger stored is unreadable (the file was modified or damaged); nothing was changed."""


class ClockError(LedgerError, ValueError):
    """A clock reading that is not a Unix time in ``[0, MAX_CLOCK]``; nothing was charged or written."""


def check_clock(reading: object) -> float:
    """A clock reading as a float, or :class:`ClockError`: it must be a finite real number of seconds
    since the Unix epoch, at most :data:`MAX_CLOCK` (a reading of 1e300 or -5 is a broken clock,
    and storing it would move every later window)."""
    if isinstance(reading, bool) or not isinstance(reading, (int, float)):
        raise ClockError(f"the clock must return a number of seconds, got {type(reading).__name__}")
    try:
        t = float(reading)
    except OverflowError:
        t = math.inf
    if not 0.0 <= t <= MAX_CLOCK:  # also NaN and ±inf
        raise ClockError(f"clock reading {reading!r} is not a Unix time in [0, {MAX_CLOCK:.0f}] (year 9999); "
                         "nothing was charged")
    return t


_APPLICATION_ID = 0x4C445031  # "LDP1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS ldp_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ldp_ledger_charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT, metric TEXT NOT NULL, window INTEGER NOT NULL,
    epsilon REAL NOT NULL, delta REAL NOT NULL, at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('reserved', 'committed')));
CREATE INDEX IF NOT EXISTS ldp_ledger_charges_mw ON ldp_ledger_charges (metric, window);
CREATE TABLE IF NOT EXISTS ldp_ledger_window_totals (
    scope TEXT NOT NULL, window INTEGER NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    PRIMARY KEY (scope, window));
CREATE TABLE IF NOT EXISTS ldp_ledger_lifetime_totals (
    scope TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL NOT NULL);
CREATE TABLE IF NOT EXISTS ldp_ledger_memo (
    metric TEXT NOT NULL, key TEXT NOT NULL, reports INTEGER NOT NULL,
    epsilon REAL NOT NULL, delta REAL NOT NULL, PRIMARY KEY (metric, key));
"""


class BudgetLedger:
    """A client's privacy budget, persisted atomically in SQLite (safe across processes).

    * caps per metric (``metrics``, or ``default`` for unlisted metrics) and across all metrics
      (``total``), each per window of ``window_seconds`` (aligned to the Unix epoch: UTC days by
      default) and over the lifetime; unused budget never carries over to another window;
    * :meth:`reserve` charges durably *before* randomization; :meth:`commit` marks the report as
      produced. A reservation is never refunded, so a crash in between keeps the charge;
    * time is monotone: ``now = max(clock(), latest time ever seen)``, so a clock moved backwards
      never reopens a past window;
    * :class:`MemoizedCharge` supports charges that depend on a value's history; the ledger keeps
      only a keyed hash of each value, never the value.

    Callers that keep their own tables in the same file (:mod:`ldp.client`) pass ``setup``, run
    their own statements in :meth:`transaction`, and charge with :meth:`charge_atomically`.
    """

    ALL = "*"
    """Scope name of the budget across all metrics."""

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        total: BudgetPolicy | None = None,
        metrics: Mapping[str, BudgetPolicy] | None = None,
        default: BudgetPolicy | None = None,
        window_seconds: float = 86400.0,
        clock: Callable[[], float] = time.time,
        timeout: float = 30.0,
        setup: Callable[[sqlite3.Connection, frozenset[str]], None] | None = None,
    ) -> None:
        """``setup(connection, tables)``, if given, runs inside the transaction that opens the file,
        after the ledger's tables are made, with the names of the tables that existed before; it
        may create tables of its own, or raise to refuse the file (nothing it or the ledger wrote
        is kept then)."""
        self.window_seconds = _check_real(window_seconds, "window_seconds")
        if self.window_seconds == 0.0:
            raise ValueError("window_seconds must be > 0, got 0")
        if MAX_CLOCK / self.window_seconds > MAX_WINDOW:
            raise ValueError(f"window_seconds must be >= {MAX_CLOCK / MAX_WINDOW:.3g} (window indices stay below 2^53), "
                             f"got {self.window_seconds}")
        self.total = total or BudgetPolicy()
        self.metrics = dict(metrics or {})
        if self.ALL in self.metrics:
            raise ValueError(f"metric name {self.ALL!r} is reserved for the budget across all metrics")
        self.default = default or BudgetPolicy()
        self._clock = clock
        try:
            self._db = sqlite3.connect(os.fspath(path), timeout=timeout, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{os.fspath(path)!r} is not a usable ldp budget ledger: {exc}") from None
        try:
            self._init_schema(setup)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise LedgerError(f"{os.fspath(path)!r} is not a usable ldp budget ledger: {exc}") from None
        except BaseException:
            self._db.close()
            raise

    # -- setup -------------------------------------------------------------------------------
    def _init_schema(self, setup: Callable[[sqlite3.Connection, frozenset[str]], None] | None) -> None:
        db = self._db
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        has_tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        if app_id not in (0, _APPLICATION_ID) or (app_id == 0 and has_tables and not self._has_ledger_tables()):
            raise LedgerError("file belongs to another application")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        with self._transaction():
            tables = frozenset(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))
            db.execute(f"PRAGMA application_id={_APPLICATION_ID}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('window_seconds', ?)", (repr(self.window_seconds),))
            db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('salt', ?)", (os.urandom(16).hex(),))
            db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('clock', '-inf')")
            if db.execute("SELECT value FROM ldp_ledger_meta WHERE key='totals'").fetchone() is None:
                self._rebuild_totals()
            if setup is not None:
                setup(db, tables)
            stored = float(self._meta("window_seconds"))
        if stored != self.window_seconds:
            raise LedgerError(f"ledger was created with window_seconds={stored}, opened with {self.window_seconds}")
        self._salt = bytes.fromhex(self._meta("salt"))

    def _rebuild_totals(self) -> None:
        """Recompute the running totals from the charge log (a ledger written before they existed)."""
        db = self._db
        db.execute("DELETE FROM ldp_ledger_window_totals")
        db.execute("DELETE FROM ldp_ledger_lifetime_totals")
        for scope_sql in ("metric", "'*'"):
            db.execute(f"INSERT INTO ldp_ledger_window_totals SELECT {scope_sql}, window, SUM(epsilon), SUM(delta) "
                       f"FROM ldp_ledger_charges GROUP BY {scope_sql}, window")
            db.execute(f"INSERT INTO ldp_ledger_lifetime_totals SELECT {scope_sql}, SUM(epsilon), SUM(delta) "
                       f"FROM ldp_ledger_charges GROUP BY {scope_sql}")
        db.execute("INSERT OR REPLACE INTO ldp_ledger_meta VALUES ('totals', '1')")

    def _has_ledger_tables(self) -> bool:
        row = self._db.execute("SELECT count(*) FROM sqlite_master WHERE name='ldp_ledger_meta'").fetchone()
        return row[0] == 1

    def _meta(self, key: str) -> str:
        row = self._db.execute("SELECT value FROM ldp_ledger_meta WHERE key=?", (key,)).fetchone()
        if row is None or not isinstance(row[0], str):
            raise LedgerDamagedError(f"ledger is corrupted: {key!r} is {'missing' if row is None else repr(row[0])}")
        return row[0]

    def mark_simulation(self) -> None:
        """Record in the file that seeded (reproducible, simulation-only) randomness charged it."""
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO ldp_ledger_meta VALUES ('simulation', '1')")

    @property
    def simulation(self) -> bool:
        """Whether seeded randomness ever charged this ledger (see :meth:`mark_simulation`)."""
        row = self._db.execute("SELECT value FROM ldp_ledger_meta WHERE key='simulation'").fetchone()
        return row is not None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")  # takes the write lock: one writer across processes
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # also when COMMIT itself failed (disk full, I/O error)
                self._db.execute("ROLLBACK")
            raise

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` on the ledger's connection, for callers' own tables in the same file
        (committed on normal exit, rolled back on an exception). Never write the ``ldp_ledger_*``
        tables through it."""
        with self._transaction():
            yield self._db

    # -- time --------------------------------------------------------------------------------
    def _stored_clock(self) -> float:
        text = self._meta("clock")
        try:
            stored = float(text)
        except ValueError:
            stored = math.nan
        if not (stored == -math.inf or 0.0 <= stored <= MAX_CLOCK):
            raise LedgerDamagedError(f"ledger is corrupted: its clock {text!r} is not a Unix time in [0, {MAX_CLOCK:.0f}]")
        return stored

    def _advance_clock(self) -> float:
        """Monotone now (inside a transaction): never earlier than any time seen before. A reading
        outside ``[0, MAX_CLOCK]`` raises :class:`ClockError` before anything is written."""
        now = max(check_clock(self._clock()), self._stored_clock())
        self._db.execute("UPDATE ldp_ledger_meta SET value=? WHERE key='clock'", (repr(now),))
        return now

    def current_window(self) -> int:
        """Index of the current window (monotone)."""
        with self._transaction():
            return math.floor(self._advance_clock() / self.window_seconds)

    # -- spending ----------------------------------------------------------------------------
    def _policy(self, metric: str) -> BudgetPolicy:
        return self.total if metric == self.ALL else self.metrics.get(metric, self.default)

    def _sum(self, scope: str, window: int | None) -> PrivacyCost:
        """Running total of ``scope`` (a metric or ``ALL``) in ``window``, or over the lifetime."""
        if window is None:
            row = self._db.execute("SELECT epsilon, delta FROM ldp_ledger_lifetime_totals WHERE scope=?", (scope,))
        else:
            row = self._db.execute(
                "SELECT epsilon, delta FROM ldp_ledger_window_totals WHERE scope=? AND window=?", (scope, window))
        eps, delta = row.fetchone() or (0.0, 0.0)
        return PrivacyCost(max(eps, 0.0), min(max(delta, 0.0), math.nextafter(1.0, 0.0)))

    def _add_to_totals(self, scope: str, window: int, inc: PrivacyCost) -> None:
        self._db.execute(
            "INSERT INTO ldp_ledger_window_totals VALUES (?,?,?,?) ON CONFLICT (scope, window) DO UPDATE SET "
            "epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta", (scope, window, inc.epsilon, inc.delta))
        self._db.execute(
            "INSERT INTO ldp_ledger_lifetime_totals VALUES (?,?,?) ON CONFLICT (scope) DO UPDATE SET "
            "epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta", (scope, inc.epsilon, inc.delta))

    def _memo_increment(self, metric: str, charge: MemoizedCharge) -> tuple[str, PrivacyCost]:
        key = hmac.new(self._salt, metric.encode() + b"\x00" + bytes(charge.key), hashlib.sha256).hexdigest()
        row = self._db.execute(
            "SELECT reports, epsilon, delta FROM ldp_ledger_memo WHERE metric=? AND key=?", (metric, key)
        ).fetchone()
        reports, eps, delta = row if row else (0, 0.0, 0.0)
        step = charge.first if reports == 0 else charge.then
        inc = PrivacyCost(
            max(0.0, min(step.epsilon, charge.cap.epsilon - eps)), max(0.0, min(step.delta, charge.cap.delta - delta))
        )
        return key, inc

    def reserve(self, metric: str, cost: PrivacyCost | MemoizedCharge) -> Reservation:
        """Charge ``cost`` to ``metric`` now, or raise :class:`BudgetExceeded` and charge nothing."""
        self._check_charge(metric, cost)
        with self._transaction():
            return self._charge(metric, cost, "reserved")

    def charge_atomically(self, metric: str, cost: PrivacyCost | MemoizedCharge,
                          work: Callable[[Reservation, sqlite3.Connection], T]) -> T:
        """Charge ``cost`` and run ``work(reservation, connection)`` in ONE transaction; return its result.

        The charge (recorded as 'committed') and whatever ``work`` writes persist together at COMMIT,
        or not at all: an exception in ``work``, or the process dying before COMMIT, rolls both back.
        That is no refund only because ``work``'s output cannot leave the process before COMMIT:
        use it to randomize and *store* a report (the client's outbox), never to send one.
        :class:`BudgetExceeded` is raised before ``work`` runs, with nothing charged."""
        self._check_charge(metric, cost)
        with self._transaction():
            return work(self._charge(metric, cost, "committed"), self._db)

    def _check_charge(self, metric: str, cost: PrivacyCost | MemoizedCharge) -> None:
        if not isinstance(metric, str) or not metric or metric == self.ALL:
            raise ValueError(f"metric must be a non-empty name other than {self.ALL!r}, got {metric!r}")
        if not isinstance(cost, (PrivacyCost, MemoizedCharge)):
            raise TypeError(f"cost must be a PrivacyCost or MemoizedCharge, got {type(cost).__name__}")

    def _charge(self, metric: str, cost: PrivacyCost | MemoizedCharge, state: str) -> Reservation:
        """Check every cap and record the charge (inside a transaction)."""
        now = self._advance_clock()
        window = math.floor(now / self.window_seconds)
        memo_key, inc = self._memo_increment(metric, cost) if isinstance(cost, MemoizedCharge) else (None, cost)
        for scope in (metric, self.ALL):
            policy = self._policy(scope)
            for period, cap, win in (("window", policy.per_window, window), ("lifetime", policy.lifetime, None)):
                if cap is None:
                    continue
                spent = self._sum(scope, win)
                if not (spent + inc).fits_within(cap):
                    raise BudgetExceeded(scope, period, inc, spent, cap)
        cur = self._db.execute(
            "INSERT INTO ldp_ledger_charges (metric, window, epsilon, delta, at, state) VALUES (?,?,?,?,?,?)",
            (metric, window, inc.epsilon, inc.delta, now, state),
        )
        for scope in (metric, self.ALL):
            self._add_to_totals(scope, window, inc)
        if memo_key is not None:
            self._db.execute(
                "INSERT INTO ldp_ledger_memo VALUES (?,?,1,?,?) ON CONFLICT (metric, key) DO UPDATE SET "
                "reports=reports+1, epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta",
                (metric, memo_key, inc.epsilon, inc.delta),
            )
        return Reservation(int(cur.lastrowid), metric, inc, window)

    def commit(self, reservation: Reservation) -> None:
        """Mark a reservation's report as produced (the charge itself was already final).

        The mark is written without its own fsync (``synchronous=NORMAL``): the charge was made
        durable by :meth:`reserve`, and a mark lost in a power cut leaves the charge 'reserved',
        which still counts in full."""
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction():
                cur = self._db.execute(
                    "UPDATE ldp_ledger_charges SET state='committed' WHERE id=? AND metric=?",
                    (reservation.id, reservation.metric),
                )
                if cur.rowcount != 1:
                    raise LedgerError(f"no reservation {reservation.id} for metric {reservation.metric!r} in this ledger")
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def charge(self, metric: str, cost: PrivacyCost | MemoizedCharge) -> Iterator[Reservation]:
        """``reserve`` on entry, ``commit`` on normal exit; an exception leaves the charge reserved."""
        reservation = self.reserve(metric, cost)
        yield reservation
        self.commit(reservation)

    # -- transparency --------------------------------------------------------------------------
    def spent(self, metric: str = ALL, period: str = "window") -> PrivacyCost:
        """Spent in the current window (``period='window'``) or ever (``'lifetime'``)."""
        if period not in ("window", "lifetime"):
            raise ValueError(f"period must be 'window' or 'lifetime', got {period!r}")
        window = self.current_window() if period == "window" else None
        return self._sum(metric, window)

    def remaining(self, metric: str = ALL) -> dict[str, PrivacyCost | None]:
        """What may still be spent on ``metric`` (its own caps and the total's), ``None`` = uncapped."""
        out: dict[str, PrivacyCost | None] = {}
        for period in ("window", "lifetime"):
            left: PrivacyCost | None = None
            for scope in {metric, self.ALL}:
                cap = getattr(self._policy(scope), "per_window" if period == "window" else "lifetime")
                if cap is None:
                    continue
                s = self.spent(scope, period)
                here = PrivacyCost(max(0.0, cap.epsilon - s.epsilon), max(0.0, cap.delta - s.delta))
                left = here if left is None else PrivacyCost(min(left.epsilon, here.epsilon), min(left.delta, here.delta))
            out[period] = left
        return out

    def history(self, metric: str | None = None) -> list[dict[str, object]]:
        """Every charge (oldest first): id, metric, window, epsilon, delta, at, state."""
        sql = "SELECT id, metric, window, epsilon, delta, at, state FROM ldp_ledger_charges"
        rows = self._db.execute(sql + (" WHERE metric=? ORDER BY id" if metric else " ORDER BY id"), (metric,) if metric else ())
        names = ("id", "metric", "window", "epsilon", "delta", "at", "state")
        return [dict(zip(names, r)) for r in rows]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "BudgetLedger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
