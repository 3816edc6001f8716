"""The client runtime: one SQLite state file per collection, ``record`` -> outbox -> upload.

:class:`TelemetryClient` keeps, in ONE file: the client's secret (OS CSPRNG; each metric whose encoder
memoizes, RAPPOR's or one with ``needs_secret``, gets a secret derived from it), the cohort of each
RAPPOR metric (drawn once, uniformly), the budget ledger (:class:`ldp.privacy.ledger.BudgetLedger`'s own
tables) and the outbox of envelopes waiting for upload.

``record(metric, value)`` validates the value, then in ONE ``BEGIN IMMEDIATE`` transaction checks
and charges every cap, randomizes, and stores the envelope in the outbox (``record_many`` does
the same for a batch of reports, all or nothing, in one transaction). If the process dies
before COMMIT, SQLite rolls back the charge together with the report that was never stored nor
returned: nothing left the device, so this is not a refund. After COMMIT, both exist. Several
processes may share the file (WAL; the write lock serializes check-and-charge). A file that is
not a state file of this collection, or is damaged, raises :class:`StateError`: the budget is
never silently reset. Standard library + mmh3 + bitarray only. See ``docs/client.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from ldp.client.uploader import BATCH_ID_CHARS, Opener, UploadError, UploadResult, batch_id, upload
from ldp.encoders.base import Encoder
from ldp.encoders.rappor import RapporEncoder
from ldp.errors import BudgetExceeded, LedgerDamagedError, LedgerError, StateError
from ldp.privacy.accountant import PrivacyCost
from ldp.privacy.ledger import BudgetLedger, BudgetPolicy, Reservation, check_clock
from ldp.privacy.ledger_store import LEDGER_TABLES
from ldp.protocols import client_protocols
from ldp.randomness import SeededRandomnessWarning, client_source, is_seeded
from ldp.reports import canonical_json
from ldp.spec import CollectionSpec, Envelope

__all__ = ["TelemetryClient", "StateError", "PendingItem", "STATE_FORMAT", "BudgetExceeded", "UploadError",
           "UploadResult"]

logger = logging.getLogger(__name__)
"""Events and counts only (a state file opened, reports recorded or refused, uploads acknowledged):
never a value, a report, a secret or a cohort."""

STATE_FORMAT = 1
_CLIENT_TABLES = frozenset({"ldp_client_meta", "ldp_client_cohorts", "ldp_client_outbox", "ldp_client_uploads"})
_BATCH_TABLE = "CREATE TABLE ldp_client_batch (outbox INTEGER PRIMARY KEY, batch TEXT NOT NULL)"
"""The pinned upload batch: its outbox ids, each with the id of the batch part it is sent in (added
after format 1 was released: created when a file lacks it)."""
_SCHEMA = (
    "CREATE TABLE ldp_client_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ldp_client_cohorts (metric TEXT NOT NULL, params TEXT NOT NULL, cohort INTEGER NOT NULL, "
    "PRIMARY KEY (metric, params))",
    "CREATE TABLE ldp_client_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, charge INTEGER NOT NULL UNIQUE, "
    "metric TEXT NOT NULL, window INTEGER NOT NULL, line TEXT NOT NULL)",
    "CREATE TABLE ldp_client_uploads (metric TEXT PRIMARY KEY, reports INTEGER NOT NULL)",
    _BATCH_TABLE,
)
_SEALED = ("format", "collection", "secret")  # with the ledger's salt and window: covered by the digest
_METRIC_SECRET = b"ldp/client/metric-secret/v1\x00"

_fault: Callable[[str], None] | None = None
"""Tests only: called at named points of ``record``/``acknowledge`` (to kill the process there)."""


def _at(point: str) -> None:
    if _fault is not None:
        _fault(point)


@contextmanager
def _log_refusal(what: str, reports: int) -> Iterator[None]:
    """Log (at INFO) a budget refusal of ``reports`` report(s) of ``what`` (a metric, or a batch), then re-raise."""
    try:
        yield
    except BudgetExceeded:
        logger.info("the privacy budget refused %d report(s) of %s: nothing recorded", reports, what)
        raise


class PendingItem(NamedTuple):
    """An outbox entry: ``id`` (local, for :meth:`TelemetryClient.acknowledge`; never sent) and the
    ``line`` to upload."""

    id: int
    line: str


class TelemetryClient:
    """A collection's client on one device: ``record`` -> ``pending`` -> upload -> ``acknowledge``.

    ``spec`` is a :class:`~ldp.spec.CollectionSpec` or the path of one. ``clock`` gives Unix
    seconds (the ledger keeps it monotone; a reading outside ``[0, MAX_CLOCK]`` raises
    :class:`~ldp.privacy.ledger.ClockError` with nothing written). ``rng`` is the OS CSPRNG by default; a
    seed makes every device given it report the same noise, so it needs ``simulation=True`` (a
    ``ValueError`` otherwise), and the state file then records that it was used so (opening such a
    file later without ``simulation=True`` warns). One instance per thread; any number of processes
    may share ``state_path``.
    """

    def __init__(self, spec: CollectionSpec | str | os.PathLike[str], state_path: str | os.PathLike[str], *,
                 clock: Callable[[], float] = time.time, rng: Any = None, timeout: float = 30.0,
                 simulation: bool = False) -> None:
        if not isinstance(simulation, bool):
            raise TypeError(f"simulation must be a bool, got {type(simulation).__name__}")
        if is_seeded(rng) and not simulation:
            raise ValueError("TelemetryClient: a seeded rng makes every device given the seed report the same noise; "
                             "leave rng=None (the OS CSPRNG) in an app, or pass simulation=True for a simulation")
        self.spec = spec if isinstance(spec, CollectionSpec) else CollectionSpec.load(spec)
        self.path = os.fspath(state_path)
        self._clock = clock
        self._rng = client_source(rng)
        self.simulation = simulation
        self._encoders: dict[str, Encoder] = {}
        s = self.spec
        try:
            self._ledger = BudgetLedger(
                self.path, total=BudgetPolicy(s.budget.per_window, s.budget.lifetime),
                metrics={n: BudgetPolicy(m.budget.per_window, m.budget.lifetime) for n, m in s.metrics.items()},
                window_seconds=float(s.window_seconds), clock=clock, timeout=timeout, setup=self._setup)
        except StateError:
            raise
        except LedgerError as exc:
            raise StateError(f"{self.path!r} cannot be used as the state of collection {s.name!r}: {exc}") from None
        if simulation and is_seeded(rng):
            self._ledger.mark_simulation()
        elif self._ledger.simulation and not simulation:
            warnings.warn(f"{self.path!r} was used by a simulation with seeded randomness: reports recorded in it "
                          "are not private; use a new state file on a real device", SeededRandomnessWarning,
                          stacklevel=2)
        logger.debug("opened the state of collection %r (%d metric(s))", s.name, len(s.metrics))

    # -- the state file --------------------------------------------------------------------------
    def _fail(self, msg: str) -> StateError:
        return StateError(f"{self.path!r} {msg}; refusing to use it (the budget is never reset silently)")

    def _setup(self, db: sqlite3.Connection, tables: frozenset[str]) -> None:
        """Create a new state file, or check an existing one (inside the ledger's opening transaction)."""
        if not tables:
            for statement in _SCHEMA:
                db.execute(statement)
            meta = {"format": str(STATE_FORMAT), "collection": self.spec.name, "secret": secrets.token_bytes(32).hex()}
            db.executemany("INSERT INTO ldp_client_meta VALUES (?, ?)",
                           [*meta.items(), ("digest", self._digest(db, meta)), ("last_upload", "-inf")])
        elif "ldp_client_meta" not in tables:
            raise self._fail("is a bare budget ledger, not a telemetry client state file")
        elif missing := (LEDGER_TABLES | _CLIENT_TABLES) - tables:
            raise self._fail(f"is damaged: table(s) {', '.join(sorted(missing))} missing")
        elif "ldp_client_batch" not in tables:  # a file of a version without the uploader
            db.execute(_BATCH_TABLE)
        if (check := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise self._fail(f"is corrupted: {check}")
        meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
        if lacking := [k for k in (*_SEALED, "digest", "last_upload") if k not in meta]:
            raise self._fail(f"is damaged: meta key(s) {', '.join(lacking)} missing")
        if meta["format"] != str(STATE_FORMAT):
            raise self._fail(f"has state format {meta['format']!r}; this version reads {STATE_FORMAT}")
        if not hmac.compare_digest(meta["digest"], self._digest(db, meta)):
            raise self._fail("is damaged: its meta data (collection, secret, salt or window) was modified")
        if meta["collection"] != self.spec.name:
            raise self._fail(f"belongs to collection {meta['collection']!r}, not {self.spec.name!r} "
                             "(each collection keeps its own state file)")
        try:
            self._secret = bytes.fromhex(meta["secret"])
        except ValueError:
            raise self._fail("is damaged: its secret is not hex") from None

    @staticmethod
    def _digest(db: sqlite3.Connection, meta: dict[str, str]) -> str:
        ledger = dict(db.execute("SELECT key, value FROM ldp_ledger_meta WHERE key IN ('salt', 'window_seconds')"))
        sealed = {**{k: meta[k] for k in _SEALED}, **{f"ledger_{k}": v for k, v in ledger.items()}}
        return hashlib.sha256(b"ldp/client/state/v1\x00" + canonical_json(sealed).encode("ascii")).hexdigest()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Report a file damaged while open as :class:`StateError` (a busy file stays ``OperationalError``)."""
        try:
            yield
        except LedgerDamagedError as exc:
            raise self._fail(f"is damaged: {exc}") from None
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise
            raise self._fail(f"is damaged: {exc}") from None

    # -- encoders --------------------------------------------------------------------------------
    def _encoder(self, metric: str) -> Encoder:
        if (enc := self._encoders.get(metric)) is not None:
            return enc
        if metric not in self.spec.metrics:
            raise ValueError(f"no metric {metric!r} in collection {self.spec.name!r} "
                             f"(metrics: {', '.join(self.spec.metrics)})")
        params = self.spec.params(metric)
        encoder_type = client_protocols()[params.protocol][1]
        extra: dict[str, Any] = {}
        if issubclass(encoder_type, RapporEncoder):
            extra["cohort"] = self._cohort(metric, params)
        if extra or getattr(encoder_type, "needs_secret", False):  # memoized responses: the metric's secret
            extra["secret"] = hmac.new(self._secret, _METRIC_SECRET + metric.encode("ascii"), hashlib.sha256).digest()
        enc = encoder_type(params, rng=self._rng, simulation=self.simulation, **extra)
        self._encoders[metric] = enc
        return enc

    def _cohort(self, metric: str, params: Any) -> int:
        """The metric's cohort under these parameters: drawn once (CSPRNG, uniform), then kept."""
        with self._guard(), self._ledger.transaction() as db:
            key = (metric, params.fingerprint)
            row = db.execute("SELECT cohort FROM ldp_client_cohorts WHERE metric=? AND params=?", key).fetchone()
            if row is None:
                row = (secrets.randbelow(params.num_cohorts),)
                db.execute("INSERT INTO ldp_client_cohorts VALUES (?, ?, ?)", (*key, row[0]))
        if type(row[0]) is not int or not 0 <= row[0] < params.num_cohorts:
            raise self._fail(f"is damaged: cohort {row[0]!r} of {metric!r} is not in [0, {params.num_cohorts})")
        return row[0]

    def cohort(self, metric: str) -> int | None:
        """The cohort a RAPPOR metric reports in (``None`` for protocols without cohorts)."""
        return getattr(self._encoder(metric), "cohort", None)

    # -- recording -------------------------------------------------------------------------------
    def record(self, metric: str, value: Any) -> int:
        """Privatize ``value`` for ``metric`` and put the envelope in the outbox; return its outbox id.

        A bad value raises ``ValueError``/``TypeError`` and a spent budget :class:`BudgetExceeded`,
        both with nothing written. Charge and outbox row are committed together (see the module)."""
        enc = self._encoder(metric)
        prepared = enc.prepare(value)  # invalid values fail here, before any charge
        spec_fp = self.spec.fingerprint

        def store(reservation: Reservation, db: sqlite3.Connection) -> int:
            return self._store(db, spec_fp, enc, prepared, reservation)

        _at("before_charge")
        with self._guard(), _log_refusal(repr(metric), 1):
            outbox_id = self._ledger.charge_atomically(metric, enc.charge_for(prepared), store)
        _at("committed")
        logger.debug("recorded 1 report of %r", metric)
        return outbox_id

    def record_many(self, items: Iterable[tuple[str, Any]]) -> list[int]:
        """Record several ``(metric, value)`` pairs in ONE transaction (one fsync); return their
        outbox ids, in order. All or nothing:

        * every value is checked first: a bad one raises ``ValueError``/``TypeError`` naming its
          item, with nothing written;
        * then all are charged in order, each seeing the ones before it (as the same ``record``
          calls in a row would); if any would exceed a cap, :class:`BudgetExceeded` is raised (its
          ``index`` is the refused item) and NONE is charged or stored — retry without that item,
          or with ``record`` one by one to keep the ones that fit;
        * a crash before COMMIT keeps nothing of the batch, after COMMIT everything."""
        batch = list(items)
        work = []
        for i, item in enumerate(batch):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"record_many takes (metric, value) pairs; item {i} is {item!r}")
            metric, value = item
            try:
                enc = self._encoder(metric)
                prepared = enc.prepare(value)  # invalid values fail here, before any charge
            except (ValueError, TypeError) as exc:
                if type(exc) not in (ValueError, TypeError):
                    raise
                raise type(exc)(f"record_many item {i} ({metric!r}): {exc}") from None
            work.append((metric, enc, prepared))
        spec_fp = self.spec.fingerprint

        def store(reservations: list[Reservation], db: sqlite3.Connection) -> list[int]:
            return [self._store(db, spec_fp, enc, prepared, r)
                    for (_, enc, prepared), r in zip(work, reservations, strict=True)]  # one reservation per item

        _at("before_charge")
        with self._guard(), _log_refusal("a batch", len(work)):
            ids = self._ledger.charge_many([(m, enc.charge_for(p)) for m, enc, p in work], store)
        _at("committed")
        logger.debug("recorded %d report(s) in one batch", len(ids))
        return ids

    @staticmethod
    def _store(db: sqlite3.Connection, spec_fp: str, enc: Encoder, prepared: Any, reservation: Reservation) -> int:
        """Randomize a charged report and put its envelope in the outbox (inside the charge's transaction)."""
        _at("charged")
        line = Envelope(spec_fp, reservation.metric, reservation.window, enc.randomize(prepared)).to_json()
        _at("randomized")
        cur = db.execute("INSERT INTO ldp_client_outbox (charge, metric, window, line) VALUES (?, ?, ?, ?)",
                         (reservation.id, reservation.metric, reservation.window, line))
        _at("inserted")
        return int(cur.lastrowid)  # type: ignore[arg-type]  # an INSERT sets lastrowid

    # -- uploading -------------------------------------------------------------------------------
    def _last_upload(self, db: sqlite3.Connection) -> float:
        row = db.execute("SELECT value FROM ldp_client_meta WHERE key='last_upload'").fetchone()
        try:
            return float(row[0])
        except (TypeError, ValueError):
            raise self._fail(f"is damaged: last_upload is {row and row[0]!r}") from None

    def next_upload_at(self) -> float:
        """Unix time from which :meth:`pending` returns a batch (``-inf``: at once)."""
        with self._guard(), self._ledger.transaction() as db:
            return self._last_upload(db) + self.spec.upload.min_interval_seconds

    def pending(self, limit: int | None = None) -> list[PendingItem]:
        """The next batch to upload, oldest first: at most ``upload.max_batch`` (and ``limit``) items,
        and nothing until ``upload.min_interval_seconds`` have passed since the last acknowledged
        upload. Read only: the same batch comes back until it is acknowledged."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
        with self._guard(), self._ledger.transaction() as db:
            return self._pending(db, limit)

    def _pending(self, db: sqlite3.Connection, limit: int | None) -> list[PendingItem]:
        n = self.spec.upload.max_batch if limit is None else min(limit, self.spec.upload.max_batch)
        last = self._last_upload(db)
        if max(check_clock(self._clock()), last) < last + self.spec.upload.min_interval_seconds:
            return []
        rows = db.execute("SELECT id, line FROM ldp_client_outbox ORDER BY id LIMIT ?", (n,)).fetchall()
        return [PendingItem(int(i), line) for i, line in rows]

    def acknowledge(self, ids: Iterable[int]) -> int:
        """Delete uploaded items from the outbox; return how many were there (unknown or already
        acknowledged ids are ignored, so a repeated call is harmless). Starts the upload interval."""
        ids = list(ids)
        if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
            raise TypeError("outbox ids are ints (PendingItem.id)")
        with self._guard(), self._ledger.transaction() as db:
            done = self._acknowledge(db, ids)
        logger.debug("acknowledged %d uploaded report(s)", done)
        return done

    def _acknowledge(self, db: sqlite3.Connection, ids: list[int]) -> int:
        """``acknowledge`` inside the caller's transaction."""
        ids = sorted(set(ids))
        done = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for metric, n in db.execute(f"SELECT metric, count(*) FROM ldp_client_outbox WHERE id IN ({marks}) "
                                        "GROUP BY metric", chunk).fetchall():
                db.execute("INSERT INTO ldp_client_uploads VALUES (?, ?) ON CONFLICT (metric) DO UPDATE SET "
                           "reports = reports + excluded.reports", (metric, n))
                done += n
            db.execute(f"DELETE FROM ldp_client_outbox WHERE id IN ({marks})", chunk)
            db.execute(f"DELETE FROM ldp_client_batch WHERE outbox IN ({marks})", chunk)
        _at("acknowledge")
        if done:
            last = self._last_upload(db)
            db.execute("UPDATE ldp_client_meta SET value=? WHERE key='last_upload'",
                       (repr(max(check_clock(self._clock()), last)),))
        return done

    # -- upload batches: pinned in the state file (table ldp_client_batch) until acknowledged ----------------
    def next_batch(self, limit: int | None = None) -> tuple[str, list[PendingItem]] | None:
        """The next batch part to upload and its id: the pinned batch's first part, else a new batch from
        :meth:`pending` (at most ``limit`` items), pinned in this same transaction. ``None``: nothing to send
        now. The same part and id come back until :meth:`acknowledge_batch` or :meth:`split_batch`."""
        with self._guard(), self._ledger.transaction() as db:
            # items acknowledged by other means (say, an older version sharing the file) were delivered
            db.execute("DELETE FROM ldp_client_batch WHERE outbox NOT IN (SELECT id FROM ldp_client_outbox)")
            row = db.execute("SELECT batch FROM ldp_client_batch ORDER BY outbox LIMIT 1").fetchone()
            if row is not None:
                if not (isinstance(row[0], str) and len(row[0]) == BATCH_ID_CHARS
                        and all(c in "0123456789abcdef" for c in row[0])):
                    raise self._fail(f"is damaged: pinned batch id {row[0]!r} is not {BATCH_ID_CHARS} hex digits")
                return row[0], self._batch_items(db, row[0])
            items = self._pending(db, limit)
            if not items:
                return None
            bid = self._pin(db, items)
        _at("pinned")
        return bid, items

    def split_batch(self, batch: str) -> int:
        """Split pinned part ``batch`` (refused as too large: nothing of it was stored) in two new parts;
        return the size of the first."""
        with self._guard(), self._ledger.transaction() as db:
            items = self._batch_items(db, batch)
            half = (len(items) + 1) // 2
            if half:
                self._pin(db, items[:half])
                self._pin(db, items[half:])
        return half

    def acknowledge_batch(self, batch: str, ids: Iterable[int]) -> int:
        """After the collector stored part ``batch``: acknowledge its items ``ids`` and unpin it, in one
        transaction; return how many were in the outbox."""
        _at("uploaded")
        with self._guard(), self._ledger.transaction() as db:
            done = self._acknowledge(db, list(ids))
            db.execute("DELETE FROM ldp_client_batch WHERE batch = ?", (batch,))
        return done

    def has_pending(self) -> bool:
        """Whether the outbox holds a report not yet acknowledged."""
        with self._guard(), self._ledger.transaction() as db:
            return db.execute("SELECT 1 FROM ldp_client_outbox LIMIT 1").fetchone() is not None

    @staticmethod
    def _batch_items(db: sqlite3.Connection, batch: str) -> list[PendingItem]:
        rows = db.execute("SELECT o.id, o.line FROM ldp_client_batch b JOIN ldp_client_outbox o "
                          "ON o.id = b.outbox WHERE b.batch = ? ORDER BY o.id", (batch,)).fetchall()
        return [PendingItem(int(i), line) for i, line in rows]

    def _pin(self, db: sqlite3.Connection, items: list[PendingItem]) -> str:
        ids = [item.id for item in items]
        bid = batch_id(self._batch_salt(db), ids, [item.line for item in items])
        db.executemany("INSERT OR REPLACE INTO ldp_client_batch VALUES (?, ?)", [(i, bid) for i in ids])
        return bid

    def _batch_salt(self, db: sqlite3.Connection) -> bytes:
        """The device's random key for batch ids: made (CSPRNG) on first use, then kept."""
        db.execute("INSERT OR IGNORE INTO ldp_client_meta VALUES ('batch_salt', ?)", (secrets.token_bytes(32).hex(),))
        value = db.execute("SELECT value FROM ldp_client_meta WHERE key='batch_salt'").fetchone()[0]
        try:
            salt = bytes.fromhex(value)
        except (TypeError, ValueError):
            salt = b""
        if len(salt) != 32:
            raise self._fail("is damaged: its batch_salt is not 32 bytes of hex")
        return salt

    def upload(self, url: str, token: str, *, timeout: float = 30.0, max_attempts: int = 8, gzip: bool = True,
               max_delay: float = 300.0, opener: Opener | None = None, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] | None = None) -> UploadResult:
        """Upload the outbox to an ``ldp serve`` collector (``POST url``, bearer ``token``) until it is
        empty or the upload interval stops it; return what was done.

        Each batch is pinned in the state file (its outbox ids and its id) before it is first sent,
        and acknowledged only after a 2xx naming its id, so a retry, a crash or a lost answer resends
        the same lines under the same id, and the collector stores them once. Raises
        :class:`~ldp.client.uploader.UploadError` (the batch stays pinned and pending) when the collector
        refuses it or it is not delivered in ``max_attempts`` tries. ``opener``, ``sleep`` and
        ``clock`` (default: the client's) are for tests. See :mod:`ldp.client.uploader`."""
        return upload(self, url, token, timeout=timeout, max_attempts=max_attempts, gzip=gzip, max_delay=max_delay,
                      opener=opener, sleep=sleep, clock=clock or self._clock)

    # -- transparency ----------------------------------------------------------------------------
    def spent(self, metric: str | None = None, period: str = "window") -> PrivacyCost:
        """ε (and δ) spent on ``metric`` (default: all metrics) in the current window or ``"lifetime"``."""
        with self._guard():
            return self._ledger.spent(metric or BudgetLedger.ALL, period)

    def remaining(self, metric: str | None = None) -> dict[str, PrivacyCost | None]:
        """What may still be spent on ``metric`` (or on all metrics) per window and lifetime."""
        with self._guard():
            return self._ledger.remaining(metric or BudgetLedger.ALL)

    def current_window(self) -> int:
        """The window index reports recorded now would carry."""
        with self._guard():
            return self._ledger.current_window()

    def counts(self) -> dict[str, dict[str, int]]:
        """Per metric: ``reports`` recorded (charges), ``pending`` in the outbox, ``uploaded``
        (acknowledged). Always ``reports == pending + uploaded``."""
        out: dict[str, dict[str, int]] = {}
        with self._guard(), self._ledger.transaction() as db:
            for key, sql in (("reports", "SELECT metric, count(*) FROM ldp_ledger_charges GROUP BY metric"),
                             ("pending", "SELECT metric, count(*) FROM ldp_client_outbox GROUP BY metric"),
                             ("uploaded", "SELECT metric, reports FROM ldp_client_uploads")):
                for metric, n in db.execute(sql):
                    out.setdefault(metric, {"reports": 0, "pending": 0, "uploaded": 0})[key] = n
        return out

    def close(self) -> None:
        self._ledger.close()

    def __enter__(self) -> TelemetryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
