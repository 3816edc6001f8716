"""The client's budget ledger: caps per metric and overall, per window and lifetime, in SQLite.

Design notes (research: apple-and-theory.md §8.3): a charge is on disk before its report can leave
the process, and is never refunded; no carry-over between windows; a monotone clock;
memoization-aware charges; one SQLite file shared safely by several processes (``BEGIN IMMEDIATE``
serializes writers). One charged report is one transaction (schema and statements: ``ldp.privacy.ledger_store``).
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

from ldp.errors import ALL_METRICS, BudgetExceeded, ClockError, LedgerDamagedError, LedgerError
from ldp.privacy import ledger_store as sql
from ldp.privacy.cost import Charge, MemoizedCharge, PrivacyCost, cap_limits, check_real, clamped, first_exceeded
from ldp.reports import MAX_WINDOW

__all__ = ["BudgetPolicy", "MemoizedCharge", "Reservation", "BudgetExceeded", "LedgerError", "LedgerDamagedError",
           "ClockError", "BudgetLedger", "MAX_CLOCK", "check_clock"]

MAX_CLOCK = 253402300799.0
"""The last second of 9999-12-31 UTC: the latest clock reading a ledger accepts."""

T = TypeVar("T")

_Caps: TypeAlias = tuple[PrivacyCost | None, ...]
_Limits: TypeAlias = tuple["BudgetPolicy", "BudgetPolicy", _Caps, tuple[tuple[int, float, float], ...]]
"""What :meth:`BudgetLedger._caps` keeps per metric: its policy, the total's, their caps and limits."""


@dataclass(frozen=True)
class BudgetPolicy:
    """Caps for one scope (a metric, or all metrics): per window and over the lifetime."""

    per_window: PrivacyCost | None = None
    lifetime: PrivacyCost | None = None


@dataclass(frozen=True)
class Reservation:
    """A charge recorded by :meth:`BudgetLedger.reserve` (spent whether or not it is committed)."""

    id: int
    metric: str
    cost: PrivacyCost
    window: int
    epoch: int | None = None  # the stream's epoch of a ChangeCharge (None for the other charges)


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


class BudgetLedger:
    """A client's privacy budget, persisted atomically in SQLite (safe across processes).

    * caps per metric (``metrics``, or ``default`` for unlisted metrics) and across all metrics
      (``total``), each per window of ``window_seconds`` (aligned to the Unix epoch: UTC days by
      default) and over the lifetime; unused budget never carries over to another window;
    * a charge is on disk before any report it pays for can leave the process, and is never
      refunded: :meth:`charge_atomically` (one transaction: charge, then randomize inside it; the
      report exists outside only after COMMIT) or :meth:`reserve` -> randomize -> :meth:`commit`
      (a crash in between keeps the charge); :meth:`charge_many` charges a batch all or nothing;
    * windows are monotone: a charge's window is that of ``max(clock(), the time stored when the
      latest window began)``, so a clock moved backwards never reopens a past window;
    * :class:`MemoizedCharge` and :class:`~ldp.privacy.cost.ChangeCharge` support charges that depend on a
      value's history; the ledger keeps only a keyed hash of each value, never the value.

    Callers that keep their own tables in the same file (:mod:`ldp.client.runtime`) pass ``setup``, run
    their own statements in :meth:`transaction`, and charge with :meth:`charge_atomically`.
    """

    ALL = ALL_METRICS
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
        self.window_seconds = check_real(window_seconds, "window_seconds")
        if self.window_seconds == 0.0:
            raise ValueError("window_seconds must be > 0, got 0")
        if MAX_CLOCK / self.window_seconds > MAX_WINDOW:
            raise ValueError(f"window_seconds must be >= {MAX_CLOCK / MAX_WINDOW:.3g} "
                             "(window indices stay below 2^53), "
                             f"got {self.window_seconds}")
        self.total = total or BudgetPolicy()
        self.metrics = dict(metrics or {})
        if self.ALL in self.metrics:
            raise ValueError(f"metric name {self.ALL!r} is reserved for the budget across all metrics")
        self.default = default or BudgetPolicy()
        self._clock = clock
        try:
            self._timeout = float(timeout)
            self._db = sqlite3.connect(os.fspath(path), timeout=timeout, isolation_level=None)
            # a ledger never closed is closed when it is collected (Python 3.13 warns of an open connection)
            self._finalizer = weakref.finalize(self, self._db.close)
            self._cur = self._db.cursor()  # the per-charge statements (their plans stay in the connection's cache)
            self._known = sql.Known(private=os.fspath(path) in (":memory:", ""))
            if self._known.private:  # smaller pages: less to copy into the rollback journal per charge
                self._db.execute("PRAGMA page_size=1024")
            self._txn = sql.Transaction(self._db, self._known)
            self._limits: dict[str, _Limits] = {}
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
        if app_id not in (0, sql.APPLICATION_ID) or (app_id == 0 and has_tables and not sql.has_ledger_tables(db)):
            raise LedgerError("file belongs to another application")
        self._wal()
        db.execute("PRAGMA synchronous=FULL")  # every charge is on disk (one WAL fsync) before COMMIT returns
        with self._transaction():
            tables = sql.create_schema(db, self.window_seconds)
            if setup is not None:
                setup(db, tables)
            stored = float(self._meta("window_seconds"))
        if stored != self.window_seconds:
            raise LedgerError(f"ledger was created with window_seconds={stored}, opened with {self.window_seconds}")
        self._salt = bytes.fromhex(self._meta("salt"))

    def _wal(self) -> None:
        """Put the file in WAL mode (once: a file in it stays). Switching needs the file to itself, and SQLite answers
        "database is locked" at once, without its busy wait, while another process opens or switches the same new
        file: retried with short sleeps for up to the connection's timeout."""
        db = self._db
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    def _meta(self, key: str) -> str:
        row = self._db.execute(sql.READ_META, (key,)).fetchone()
        if row is None or not isinstance(row[0], str):
            raise LedgerDamagedError(f"ledger is corrupted: {key!r} is {'missing' if row is None else repr(row[0])}")
        return row[0]

    def mark_simulation(self) -> None:
        """Record in the file that seeded (reproducible, simulation-only) randomness charged it."""
        if self.simulation:  # marked already: nothing to write
            return
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO ldp_ledger_meta VALUES ('simulation', '1')")

    @property
    def simulation(self) -> bool:
        """Whether seeded randomness ever charged this ledger (see :meth:`mark_simulation`)."""
        return self._db.execute(sql.READ_META, ("simulation",)).fetchone() is not None

    def _transaction(self) -> sql.Transaction:
        return self._txn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` on the ledger's connection, for callers' own tables in the same file
        (committed on normal exit, rolled back on an exception). Never write the ``ldp_ledger_*``
        tables through it."""
        with self._transaction():
            yield self._db

    # -- time --------------------------------------------------------------------------------
    def _advance_clock(self) -> float:
        """Monotone now, inside the caller's transaction: ``max(clock(), latest time stored)``, the
        stored time read from the file (or known unchanged since this connection wrote it: see
        :class:`ldp.privacy.ledger_store.Known`), so it is monotone across processes. A reading outside
        ``[0, MAX_CLOCK]`` raises :class:`ClockError` before anything is written. The stored time is
        written only when it moves to a later window: windows, which are what the caps count, are
        then exactly those of the latest time ever seen (a clock moved back never reopens one),
        and a charge costs one write fewer."""
        reading = check_clock(self._clock())
        known = self._known
        known.check(self._db)
        stored = known.clock
        if stored is None:
            text = self._meta("clock")
            try:
                stored = float(text)
            except ValueError:  # not a number
                stored = math.nan
            if not (stored == -math.inf or 0.0 <= stored <= MAX_CLOCK):
                raise LedgerDamagedError(f"ledger is corrupted: its clock {text!r} is not a Unix time in "
                                         f"[0, {MAX_CLOCK:.0f}]")
        ws = self.window_seconds
        if reading > stored and (stored == -math.inf or math.floor(reading / ws) > math.floor(stored / ws)):
            self._cur.execute(sql.WRITE_CLOCK, (repr(reading),))  # only when the window moves on
            stored = reading
        known.clock = stored
        return max(reading, stored)

    def current_window(self) -> int:
        """Index of the current window (monotone)."""
        with self._transaction():
            return math.floor(self._advance_clock() / self.window_seconds)

    # -- spending ----------------------------------------------------------------------------
    def _policy(self, metric: str) -> BudgetPolicy:
        return self.total if metric == self.ALL else self.metrics.get(metric, self.default)

    def _caps(self, metric: str) -> tuple[_Caps, tuple[tuple[int, float, float], ...]]:
        """The caps a charge to ``metric`` must fit, in the order they are checked (metric window,
        metric lifetime, total window, total lifetime), and their ``(k, limits)`` for
        :func:`~ldp.privacy.cost.first_exceeded` (kept while the policies are the same objects)."""
        mine, total = self.metrics.get(metric, self.default), self.total
        hit = self._limits.get(metric)
        if hit is None or hit[0] is not mine or hit[1] is not total:
            caps = (mine.per_window, mine.lifetime, total.per_window, total.lifetime)
            hit = self._limits[metric] = (mine, total, caps,
                                          tuple((k, *cap_limits(c)) for k, c in enumerate(caps) if c is not None))
        return hit[2], hit[3]

    def _sum(self, scope: str, window: int | None) -> PrivacyCost:
        """Running total of ``scope`` (a metric or ``ALL``) in ``window``, or over the lifetime."""
        if window is None:
            row = self._db.execute(sql.READ_LIFETIME_TOTAL, (scope,))
        else:
            row = self._db.execute(sql.READ_WINDOW_TOTAL, (scope, window))
        return PrivacyCost(*clamped(*(row.fetchone() or (0.0, 0.0))))

    def reserve(self, metric: str, cost: Charge) -> Reservation:
        """Charge ``cost`` to ``metric`` now (durably, state 'reserved'), or raise
        :class:`BudgetExceeded` and charge nothing. Randomize after it, then :meth:`commit`."""
        self._check_charge(metric, cost)
        with self._transaction():
            return self._charge(metric, cost, "reserved", self._advance_clock())

    def charge_atomically(self, metric: str, cost: Charge,
                          work: Callable[[Reservation, sqlite3.Connection], T]) -> T:
        """Charge ``cost`` and run ``work(reservation, connection)`` in ONE transaction; return its result.

        The charge (recorded as 'committed') and whatever ``work`` writes persist together at COMMIT,
        or not at all: an exception in ``work``, or the process dying before COMMIT, rolls both back.
        That is no refund only because ``work``'s output cannot leave the process before COMMIT:
        use it to randomize and *store* a report (the client's outbox) or to *return* one (what
        :meth:`ldp.encoders.base.Encoder.encode` does), never to send one. COMMIT returns only once
        the charge is on disk (``synchronous=FULL``: one WAL fsync), so a report that left the
        process was charged durably. :class:`BudgetExceeded` is raised before ``work`` runs, with
        nothing charged."""
        self._check_charge(metric, cost)
        with self._txn:
            return work(self._charge(metric, cost, "committed", self._advance_clock()), self._db)

    def charge_many(self, charges: Iterable[tuple[str, Charge]],
                    work: Callable[[list[Reservation], sqlite3.Connection], T]) -> T:
        """Charge several ``(metric, cost)`` pairs and run ``work(reservations, connection)`` in ONE
        transaction (one fsync in all); return ``work``'s result. All or nothing.

        The charges are made in order at one time (one window), exactly as the same calls of
        :meth:`charge_atomically` in a row would make them (each sees the ones before it, memoized
        keys included), except that if any would exceed a cap, :class:`BudgetExceeded` (with its
        ``index``) is raised before ``work`` runs and NONE of them is kept. Everything else is as
        in :meth:`charge_atomically`."""
        items: Sequence[tuple[str, Charge]] = list(charges)
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"charges are (metric, cost) pairs, got {item!r}")
            self._check_charge(*item)
        with self._transaction():
            now = self._advance_clock()
            reservations = []
            for i, (metric, cost) in enumerate(items):
                try:
                    reservations.append(self._charge(metric, cost, "committed", now))
                except BudgetExceeded as exc:
                    raise BudgetExceeded(exc.scope, exc.period, exc.requested, exc.spent, exc.cap, index=i) from None
            return work(reservations, self._db)

    def _check_charge(self, metric: str, cost: Charge) -> None:
        if not isinstance(metric, str) or not metric or metric == self.ALL:
            raise ValueError(f"metric must be a non-empty name other than {self.ALL!r}, got {metric!r}")
        if not isinstance(cost, Charge):  # PrivacyCost | MemoizedCharge | ChangeCharge
            raise TypeError(f"cost must be a PrivacyCost or MemoizedCharge or ChangeCharge, not {type(cost).__name__}")

    def _charge(self, metric: str, cost: Charge, state: str, now: float) -> Reservation:
        """Check every cap and record the charge at time ``now`` (inside a transaction)."""
        cur = self._cur
        window = math.floor(now / self.window_seconds)
        memo_key, change, inc = sql.increment(cur, self._salt, metric, cost)
        eps, delta = inc.epsilon, inc.delta
        keys, spent = self._known.spent(cur, metric, self.ALL, window)
        caps, limits = self._caps(metric)
        if limits and (k := first_exceeded(spent, eps, delta, limits)) >= 0:
            raise BudgetExceeded(metric if k < 2 else self.ALL, "lifetime" if k % 2 else "window",
                                 inc, PrivacyCost(*clamped(*spent[k])),
                                 caps[k])  # type: ignore[arg-type]  # k is in limits only for a cap that is not None
        charge_id = cur.execute(sql.INSERT_CHARGE, (metric, window, eps, delta, now, state)).lastrowid
        cur.execute(sql.ADD_WINDOW_TOTALS, (metric, window, eps, delta, self.ALL, window, eps, delta))
        cur.execute(sql.ADD_LIFETIME_TOTALS, (metric, eps, delta, self.ALL, eps, delta))
        if memo_key is not None:
            cur.execute(sql.ADD_MEMO, (metric, memo_key, eps, delta))
        if change is not None and change.moved:
            cur.execute(sql.SET_CHANGE, change.row)
        self._known.add(keys, spent, eps, delta)
        return Reservation(int(charge_id), metric, inc, window,  # type: ignore[arg-type]  # INSERT sets lastrowid
                           None if change is None else change.epoch)

    def commit(self, reservation: Reservation) -> None:
        """Mark a reservation's report as produced (the charge itself was already final).

        The mark is written without its own fsync (``synchronous=NORMAL``): the charge was made
        durable by :meth:`reserve`, and a mark lost in a power cut leaves the charge 'reserved',
        which still counts in full."""
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction():
                cur = self._db.execute(sql.MARK_COMMITTED, (reservation.id, reservation.metric))
                if cur.rowcount != 1:
                    raise LedgerError(f"no reservation {reservation.id} for metric {reservation.metric!r} "
                                      "in this ledger")
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def charge(self, metric: str, cost: Charge) -> Iterator[Reservation]:
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
                left = here if left is None else PrivacyCost(min(left.epsilon, here.epsilon),
                                                             min(left.delta, here.delta))
            out[period] = left
        return out

    def history(self, metric: str | None = None) -> list[dict[str, object]]:
        """Every charge (oldest first): id, metric, window, epsilon, delta, at, state."""
        sql = "SELECT id, metric, window, epsilon, delta, at, state FROM ldp_ledger_charges"
        rows = self._db.execute(sql + (" WHERE metric=? ORDER BY id" if metric else " ORDER BY id"),
                                (metric,) if metric else ())
        names = ("id", "metric", "window", "epsilon", "delta", "at", "state")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def close(self) -> None:
        """Close the database connection (also done when the ledger is garbage-collected)."""
        self._finalizer()

    def __enter__(self) -> BudgetLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
