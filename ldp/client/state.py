"""The client's state file: its tables, its format, and the checks that refuse a foreign or damaged file.

One SQLite file per collection holds the budget ledger's tables (:mod:`ldp.privacy.ledger_store`) and the
client's: ``ldp_client_meta`` (state format, collection name, the device secret, a digest sealing them with the
ledger's salt and window, the time of the last upload, the batch-id salt), ``ldp_client_cohorts`` (each RAPPOR
metric's cohort), ``ldp_client_outbox`` (envelopes waiting for upload, :mod:`ldp.client.outbox`),
``ldp_client_uploads`` (reports acknowledged, per metric) and ``ldp_client_batch`` (the pinned upload batch).

:class:`StateFile` creates them in a new file, or checks them in an existing one, inside the ledger's opening
transaction; a file that fails a check raises :class:`StateError`: the budget is never silently reset. Also here:
the named points at which the crash tests stop a write (:func:`at`), and the lock that lets one upload of a state
file run at a time in this process (:func:`upload_lock`). Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ldp.errors import LedgerDamagedError, OptedOutError, StateError, ThreadMisuseError
from ldp.privacy.ledger_store import LEDGER_TABLES
from ldp.reports import canonical_json

__all__ = ["STATE_FORMAT", "StateError", "StateFile", "at", "metric_secret", "refuse_orphan_traces", "OPTED_OUT",
           "UploadLock", "upload_lock"]

STATE_FORMAT = 1
CLIENT_TABLES = frozenset({"ldp_client_meta", "ldp_client_cohorts", "ldp_client_outbox", "ldp_client_uploads"})
BATCH_TABLE = "CREATE TABLE ldp_client_batch (outbox INTEGER PRIMARY KEY, batch TEXT NOT NULL)"
"""The pinned upload batch: its outbox ids, each with the id of the batch part it is sent in (added
after format 1 was released: created when a file lacks it)."""
SCHEMA = (
    "CREATE TABLE ldp_client_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ldp_client_cohorts (metric TEXT NOT NULL, params TEXT NOT NULL, cohort INTEGER NOT NULL, "
    "PRIMARY KEY (metric, params))",
    "CREATE TABLE ldp_client_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, charge INTEGER NOT NULL UNIQUE, "
    "metric TEXT NOT NULL, window INTEGER NOT NULL, line TEXT NOT NULL)",
    "CREATE TABLE ldp_client_uploads (metric TEXT PRIMARY KEY, reports INTEGER NOT NULL)",
    BATCH_TABLE,
)
_SEALED = ("format", "collection", "secret")  # with the ledger's salt and window: covered by the digest
OPTED_OUT = "opted_out"
"""The meta key of the opt-out marker: ``"1"`` (and an empty secret) while the device opted out."""
_DIGEST_TAG = b"ldp/client/state/v1\x00"
_METRIC_SECRET = b"ldp/client/metric-secret/v1\x00"

_fault: Callable[[str], None] | None = None
"""Tests only: called at named points of ``record``/``acknowledge``/batch pinning (to kill the process there)."""


def at(point: str) -> None:
    """A named point of a write to the state file: the crash tests' ``_fault`` is called here."""
    if _fault is not None:
        _fault(point)


def metric_secret(device_secret: bytes, metric: str) -> bytes:
    """``HMAC-SHA256(device secret, "ldp/client/metric-secret/v1\\0" || metric)``: the secret a memoizing metric's
    responses derive from (docs/conformance.md gives the derivation to clients in other languages)."""
    return hmac.new(device_secret, _METRIC_SECRET + metric.encode("ascii"), hashlib.sha256).digest()


_TRACES = ("-wal", "-journal")
"""What SQLite leaves beside a state file that holds its data."""


def refuse_orphan_traces(path: str) -> None:
    """Fail closed: :class:`StateError` when the state file ``path`` is missing but SQLite's ``-wal`` or ``-journal``
    beside it remain (a partial restore, a cleaner): opened, it would be a new device with nothing spent beside
    reports charged to the old one.

    The traces are looked for first, the file itself after: SQLite creates a file before its first journal, so a
    trace seen before the file is found missing is an orphan, never another process's first transaction in a new
    file (checked the other way round, that process could create both between the two looks)."""
    traces = [path + t for t in _TRACES if os.path.exists(path + t)]
    if not traces or os.path.exists(path):
        return
    raise StateError(f"{path!r} is missing but {', '.join(map(repr, traces))} remain(s): the budget this device "
                     "spent cannot be known, so it is not opened as a new device; restore the state file, or delete "
                     "these files too to start over deliberately (the budget is never reset silently)")


class StateFile:
    """The client side of one state file: :meth:`setup` creates or checks its tables (the ledger calls it in
    its opening transaction), :meth:`guard` reports damage found later, :meth:`metric_secret` derives each
    metric's secret from the device secret kept in the file."""

    def __init__(self, path: str, collection: str) -> None:
        self.path = path
        self.collection = collection
        self._secret: bytes | None = None
        self._thread = threading.get_ident()  # the thread that opens the file: its connection stays there
        self._thread_name = threading.current_thread().name

    def check_thread(self) -> None:
        """Raise :class:`ThreadMisuseError` when called from another thread than the one that opened the file."""
        if threading.get_ident() != self._thread:
            raise ThreadMisuseError(
                f"this TelemetryClient ({self.path!r}) was created in thread {self._thread_name!r} and is used from "
                f"thread {threading.current_thread().name!r}: its SQLite connection stays in the thread that "
                "opened it. Create one TelemetryClient per thread (any number may share the state file: the budget "
                "is checked and charged under the file's lock), or hand the work to the thread that owns it")

    def fail(self, msg: str) -> StateError:
        """The error for a state file that cannot be used: ``msg`` says why."""
        return StateError(f"{self.path!r} {msg}; refusing to use it (the budget is never reset silently)")

    def setup(self, db: sqlite3.Connection, tables: frozenset[str]) -> None:
        """Create a new state file, or check an existing one (inside the ledger's opening transaction)."""
        if not tables:
            for statement in SCHEMA:
                db.execute(statement)
            meta = {"format": str(STATE_FORMAT), "collection": self.collection, "secret": secrets.token_bytes(32).hex()}
            db.executemany("INSERT INTO ldp_client_meta VALUES (?, ?)",
                           [*meta.items(), ("digest", self._digest(db, meta)), ("last_upload", "-inf")])
        elif "ldp_client_meta" not in tables:
            raise self.fail("is a bare budget ledger, not a telemetry client state file")
        elif missing := (LEDGER_TABLES | CLIENT_TABLES) - tables:
            raise self.fail(f"is damaged: table(s) {', '.join(sorted(missing))} missing")
        elif "ldp_client_batch" not in tables:  # a file of a version without the uploader
            db.execute(BATCH_TABLE)
        if (check := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise self.fail(f"is corrupted: {check}")
        self._secret = self.load_secret(db)

    def load_secret(self, db: sqlite3.Connection) -> bytes | None:
        """The device secret the file holds now (``None``: opted out), its meta data checked (format, seal,
        collection): another client of the file may have opted out or in since this one read it."""
        meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
        if lacking := [k for k in (*_SEALED, "digest", "last_upload") if k not in meta]:
            raise self.fail(f"is damaged: meta key(s) {', '.join(lacking)} missing")
        if meta["format"] != str(STATE_FORMAT):
            raise self.fail(f"has state format {meta['format']!r}; this version reads {STATE_FORMAT}")
        if not hmac.compare_digest(meta["digest"], self._digest(db, meta)):
            raise self.fail("is damaged: its meta data (collection, secret, salt or window) was modified")
        if meta["collection"] != self.collection:
            raise self.fail(f"belongs to collection {meta['collection']!r}, not {self.collection!r} "
                            "(each collection keeps its own state file)")
        if meta.get(OPTED_OUT) == "1" and meta["secret"] == "":
            return None
        try:
            secret = bytes.fromhex(meta["secret"])
        except ValueError:
            raise self.fail("is damaged: its secret is not hex") from None
        if len(secret) != 32 or meta.get(OPTED_OUT, "0") != "0":
            raise self.fail("is damaged: its secret is not 32 bytes, or its opt-out marker does not match it")
        return secret

    def set_secret(self, db: sqlite3.Connection, secret: bytes | None) -> None:
        """Replace the device secret (``None``: opted out, the marker set) and its seal, inside ``db``'s
        transaction (:mod:`ldp.client.consent`)."""
        meta = dict(db.execute("SELECT key, value FROM ldp_client_meta"))
        meta["secret"] = "" if secret is None else secret.hex()
        db.executemany("INSERT OR REPLACE INTO ldp_client_meta VALUES (?, ?)",
                       [("secret", meta["secret"]), (OPTED_OUT, "0" if secret is not None else "1"),
                        ("digest", self._digest(db, meta))])
        self._secret = secret

    @staticmethod
    def _digest(db: sqlite3.Connection, meta: dict[str, str]) -> str:
        """``SHA-256(tag || canonical JSON of the sealed meta keys and the ledger's salt and window)`` as hex."""
        ledger = dict(db.execute("SELECT key, value FROM ldp_ledger_meta WHERE key IN ('salt', 'window_seconds')"))
        sealed = {**{k: meta[k] for k in _SEALED}, **{f"ledger_{k}": v for k, v in ledger.items()}}
        return hashlib.sha256(_DIGEST_TAG + canonical_json(sealed).encode("ascii")).hexdigest()

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Report a file damaged while open as :class:`StateError` (a busy file stays ``OperationalError``); first,
        refuse another thread (:meth:`check_thread`) before the file is touched."""
        self.check_thread()
        try:
            yield
        except LedgerDamagedError as exc:
            raise self.fail(f"is damaged: {exc}") from None
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise
            raise self.fail(f"is damaged: {exc}") from None

    @property
    def secret(self) -> bytes:
        """The device secret kept in the file (never sent, never logged); :class:`OptedOutError` when the device
        opted out (it has none then)."""
        if self._secret is None:
            raise OptedOutError(f"{self.path!r}: this device opted out of collection (opt_out): nothing is "
                                "recorded until it opts in again (opt_in)")
        return self._secret

    @property
    def opted_out(self) -> bool:
        """Whether the device had opted out when the file was last read by this client."""
        return self._secret is None

    def metric_secret(self, metric: str) -> bytes:
        """``HMAC-SHA256(device secret, tag || metric)``: each metric's memoized responses get their own secret."""
        return metric_secret(self.secret, metric)


class UploadLock:
    """A state file's upload lock in this process (:func:`upload_lock`), and the thread holding it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None
        self.acquire = self._lock.acquire
        self.release = self._lock.release


_upload_locks: dict[str, UploadLock] = {}
_upload_locks_guard = threading.Lock()


def upload_lock(path: str) -> UploadLock:
    """The upload lock of the state file at ``path`` (by its real path), shared by every client of this process."""
    key = os.path.normcase(os.path.realpath(path))
    with _upload_locks_guard:
        return _upload_locks.setdefault(key, UploadLock())
