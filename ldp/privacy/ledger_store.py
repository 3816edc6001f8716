"""The budget ledger's SQLite schema and statements (used by :mod:`ldp.privacy.ledger` only).

One charge is one ``BEGIN IMMEDIATE`` transaction that writes the advanced clock (skipped when it
did not move), logs the charge, and adds it to the window and lifetime totals of its metric and
of all metrics (one two-row upsert per table). It reads the stored clock and the four running
totals (one query) only when :class:`Known` cannot vouch for them. The statement texts are module
constants, so :mod:`sqlite3`'s per-connection statement cache reuses their compiled plans.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
from typing import TypeAlias

from ldp.errors import LedgerDamagedError
from ldp.privacy.cost import ChangeCharge, Charge, MemoizedCharge, PrivacyCost

__all__ = ["APPLICATION_ID", "LEDGER_TABLES", "Known", "Transaction", "create_schema", "has_ledger_tables",
           "memo_increment", "rebuild_totals", "Change", "change_increment", "increment"]

APPLICATION_ID = 0x4C445031  # "LDP1"
LEDGER_TABLES = frozenset({"ldp_ledger_meta", "ldp_ledger_charges", "ldp_ledger_window_totals",
                           "ldp_ledger_lifetime_totals", "ldp_ledger_memo"})

# The charge log has no secondary index: caps are checked against the running totals, and only
# history()/counts() scan the log; an index cost every charge an extra B-tree write (ledgers made
# before it was dropped lose it when opened).
SCHEMA = """
CREATE TABLE IF NOT EXISTS ldp_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ldp_ledger_charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT, metric TEXT NOT NULL, window INTEGER NOT NULL,
    epsilon REAL NOT NULL, delta REAL NOT NULL, at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('reserved', 'committed')));
DROP INDEX IF EXISTS ldp_ledger_charges_mw;
CREATE TABLE IF NOT EXISTS ldp_ledger_window_totals (
    scope TEXT NOT NULL, window INTEGER NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    PRIMARY KEY (scope, window));
CREATE TABLE IF NOT EXISTS ldp_ledger_lifetime_totals (
    scope TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL NOT NULL);
CREATE TABLE IF NOT EXISTS ldp_ledger_memo (
    metric TEXT NOT NULL, key TEXT NOT NULL, reports INTEGER NOT NULL,
    epsilon REAL NOT NULL, delta REAL NOT NULL, PRIMARY KEY (metric, key));
CREATE TABLE IF NOT EXISTS ldp_ledger_changes (
    metric TEXT NOT NULL, stream TEXT NOT NULL, value TEXT NOT NULL, epoch INTEGER NOT NULL,
    PRIMARY KEY (metric, stream));
"""
# ldp_ledger_changes (ChangeCharge) is not in LEDGER_TABLES: files made before it get it when opened, unrefused

READ_META = "SELECT value FROM ldp_ledger_meta WHERE key=?"
WRITE_CLOCK = "UPDATE ldp_ledger_meta SET value=? WHERE key='clock'"
_WINDOW_TOTAL = "SELECT {k}, epsilon, delta FROM ldp_ledger_window_totals WHERE scope=?{s} AND window=?3"
_LIFETIME_TOTAL = "SELECT {k}, epsilon, delta FROM ldp_ledger_lifetime_totals WHERE scope=?{s}"
READ_TOTALS = " UNION ALL ".join((  # (metric, ALL, window) -> rows (k, ε, δ), k in the order caps are checked
    _WINDOW_TOTAL.format(k=0, s=1), _LIFETIME_TOTAL.format(k=1, s=1),  # the metric's window, lifetime
    _WINDOW_TOTAL.format(k=2, s=2), _LIFETIME_TOTAL.format(k=3, s=2)))  # all metrics' window, lifetime
"""Four primary-key lookups (``scope IN (?, ?)`` costs three times as much: an ephemeral table)."""
READ_WINDOW_TOTAL = "SELECT epsilon, delta FROM ldp_ledger_window_totals WHERE scope=? AND window=?"
READ_LIFETIME_TOTAL = "SELECT epsilon, delta FROM ldp_ledger_lifetime_totals WHERE scope=?"
INSERT_CHARGE = "INSERT INTO ldp_ledger_charges (metric, window, epsilon, delta, at, state) VALUES (?,?,?,?,?,?)"
ADD_WINDOW_TOTALS = (  # (metric, window, ε, δ, ALL, window, ε, δ)
    "INSERT INTO ldp_ledger_window_totals VALUES (?,?,?,?), (?,?,?,?) ON CONFLICT (scope, window) DO UPDATE SET "
    "epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta")
ADD_LIFETIME_TOTALS = (  # (metric, ε, δ, ALL, ε, δ)
    "INSERT INTO ldp_ledger_lifetime_totals VALUES (?,?,?), (?,?,?) ON CONFLICT (scope) DO UPDATE SET "
    "epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta")
READ_MEMO = "SELECT reports, epsilon, delta FROM ldp_ledger_memo WHERE metric=? AND key=?"
ADD_MEMO = ("INSERT INTO ldp_ledger_memo VALUES (?,?,1,?,?) ON CONFLICT (metric, key) DO UPDATE SET "
            "reports=reports+1, epsilon=epsilon+excluded.epsilon, delta=delta+excluded.delta")
READ_CHANGE = "SELECT value, epoch FROM ldp_ledger_changes WHERE metric=? AND stream=?"
SET_CHANGE = ("INSERT INTO ldp_ledger_changes VALUES (?,?,?,?) ON CONFLICT (metric, stream) DO UPDATE SET "
              "value=excluded.value, epoch=excluded.epoch")
MARK_COMMITTED = "UPDATE ldp_ledger_charges SET state='committed' WHERE id=? AND metric=?"


Key: TypeAlias = tuple[str, int | None]  # (scope, window) of a window total, (scope, None) of a lifetime total


class Known:
    """What this connection knows of the file's clock and running totals, so that a charge need
    not read them. It holds while ``PRAGMA data_version`` is unchanged: SQLite changes that value
    whenever another connection (another process, another ledger object) commits, and never for
    this connection's own commits. A private database (``:memory:``) has no other connection.

    Values are the raw stored floats, updated by each charge exactly as its SQL updates the file
    (IEEE double sums), so they are right after COMMIT; any rollback, or a failed COMMIT, forgets
    everything (:meth:`forget`), and the next transaction reads the file again."""

    __slots__ = ("private", "version", "clock", "totals")
    MAX_TOTALS = 4096

    def __init__(self, private: bool) -> None:
        self.private = private
        self.version: int | None = None
        self.clock: float | None = None
        self.totals: dict[Key, tuple[float, float]] = {}

    def check(self, db: sqlite3.Connection) -> None:
        """Inside a transaction, before using what is known: forget it if another connection wrote."""
        if self.private:
            return
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self.version:
            self.forget()
            self.version = version

    def forget(self) -> None:
        self.version = self.clock = None
        self.totals.clear()

    def spent(self, cur: sqlite3.Cursor, metric: str, everything: str,
              window: int) -> tuple[tuple[Key, ...], list[tuple[float, float]]]:
        """The running totals a charge to ``metric`` in ``window`` is checked against, in cap order
        (metric window, metric lifetime, all metrics' window, all metrics' lifetime), as raw
        stored floats: known, or read in one query (inside the charge's transaction)."""
        keys = ((metric, window), (metric, None), (everything, window), (everything, None))
        known = self.totals.get
        spent = [known(keys[0]), known(keys[1]), known(keys[2]), known(keys[3])]
        if None in spent:
            spent = [(0.0, 0.0)] * 4
            for k, e, d in cur.execute(READ_TOTALS, (metric, everything, window)):
                spent[k] = (e, d)
        return keys, spent  # type: ignore[return-value]  # no None left: all four were known, or all were read

    def add(self, keys: tuple[Key, ...], spent: list[tuple[float, float]], epsilon: float, delta: float) -> None:
        """Know what :data:`ADD_WINDOW_TOTALS` and :data:`ADD_LIFETIME_TOTALS` just stored (IEEE sums)."""
        totals = self.totals
        if len(totals) > self.MAX_TOTALS:
            totals.clear()
        try:
            for k in range(4):
                totals[keys[k]] = (spent[k][0] + epsilon, spent[k][1] + delta)
        except TypeError:  # a damaged total that is not a number: read the totals from the file again
            totals.clear()


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception, also when COMMIT fails,
    and then ``known`` is forgotten): a plain context manager, cheaper than a generator one."""

    __slots__ = ("_db", "_known")

    def __init__(self, db: sqlite3.Connection, known: Known) -> None:
        self._db, self._known = db, known

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")  # takes the write lock: one writer across processes

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        db = self._db
        if exc_type is None:
            try:
                db.execute("COMMIT")
                return
            except BaseException:
                self._known.forget()
                if db.in_transaction:  # COMMIT itself failed (disk full, I/O error)
                    db.execute("ROLLBACK")
                raise
        self._known.forget()
        if db.in_transaction:
            db.execute("ROLLBACK")


def memo_increment(cur: sqlite3.Cursor, salt: bytes, metric: str,
                   charge: MemoizedCharge) -> tuple[str, PrivacyCost]:
    """The keyed hash of a :class:`~ldp.privacy.cost.MemoizedCharge`'s key (HMAC-SHA256 of ``metric || 0x00 ||
    key`` under the ledger's salt: the value itself is never stored) and what this report of it costs:
    ``first`` for the first report, ``then`` after, each cut so that the key's total stays within ``cap``."""
    key = hmac.new(salt, metric.encode() + b"\x00" + bytes(charge.key), hashlib.sha256).hexdigest()
    row = cur.execute(READ_MEMO, (metric, key)).fetchone()
    reports, eps, delta = row if row else (0, 0.0, 0.0)
    step = charge.first if reports == 0 else charge.then
    return key, PrivacyCost(max(0.0, min(step.epsilon, charge.cap.epsilon - eps)),
                            max(0.0, min(step.delta, charge.cap.delta - delta)))


class Change:
    """What a :class:`~ldp.privacy.cost.ChangeCharge` does: the stream's ``epoch`` for this report, whether it
    opens it (``moved``: a new value, or the stream's first report), the ``increment`` charged (its cost if it
    moved, else 0) and the row :data:`SET_CHANGE` writes once the charge fits every cap."""

    __slots__ = ("epoch", "moved", "increment", "row")

    def __init__(self, epoch: int, moved: bool, increment: PrivacyCost, row: tuple[str, str, str, int]) -> None:
        self.epoch, self.moved, self.increment, self.row = epoch, moved, increment, row


def change_increment(cur: sqlite3.Cursor, salt: bytes, metric: str, charge: ChangeCharge) -> Change:
    """The epoch of a :class:`~ldp.privacy.cost.ChangeCharge` and its increment: the stream and the value are
    stored as keyed hashes under the ledger's salt (as memo keys are), the stream's last value is compared with
    this one, and the epoch moves on (charged ``cost``) when they differ or the stream is new."""
    prefix = metric.encode() + b"\x00"
    stream = hmac.new(salt, b"stream\x00" + prefix + bytes(charge.stream), hashlib.sha256).hexdigest()
    value = hmac.new(salt, b"value\x00" + prefix + bytes(charge.value), hashlib.sha256).hexdigest()
    row = cur.execute(READ_CHANGE, (metric, stream)).fetchone()
    if row is not None and (type(row[1]) is not int or row[1] < 0):
        raise LedgerDamagedError(f"ledger is corrupted: the epoch of a stream of {metric!r} is {row[1]!r}")
    if row is not None and row[0] == value:
        return Change(row[1], False, PrivacyCost(0.0), (metric, stream, value, row[1]))
    epoch = 0 if row is None else row[1] + 1
    return Change(epoch, True, charge.cost, (metric, stream, value, epoch))


def increment(cur: sqlite3.Cursor, salt: bytes, metric: str,
              charge: Charge) -> tuple[str | None, Change | None, PrivacyCost]:
    """What one report's ``charge`` adds: ``(memo key, None, increment)`` for a
    :class:`~ldp.privacy.cost.MemoizedCharge` (:func:`memo_increment`), ``(None, change, increment)`` for a
    :class:`~ldp.privacy.cost.ChangeCharge` (:func:`change_increment`), ``(None, None, charge)`` for a cost."""
    if isinstance(charge, MemoizedCharge):
        key, inc = memo_increment(cur, salt, metric, charge)
        return key, None, inc
    if isinstance(charge, ChangeCharge):
        change = change_increment(cur, salt, metric, charge)
        return None, change, change.increment
    return None, None, charge


def has_ledger_tables(db: sqlite3.Connection) -> bool:
    count: int = db.execute("SELECT count(*) FROM sqlite_master WHERE name='ldp_ledger_meta'").fetchone()[0]
    return count == 1


def create_schema(db: sqlite3.Connection, window_seconds: float) -> frozenset[str]:
    """Make the ledger's tables and meta rows (inside the opening transaction); return the names
    of the tables that existed before."""
    tables = frozenset(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    if db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:  # set once: opening writes nothing
        db.execute(f"PRAGMA application_id={APPLICATION_ID}")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('window_seconds', ?)", (repr(window_seconds),))
    db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('salt', ?)", (os.urandom(16).hex(),))
    db.execute("INSERT OR IGNORE INTO ldp_ledger_meta VALUES ('clock', '-inf')")
    if db.execute(READ_META, ("totals",)).fetchone() is None:
        rebuild_totals(db)
    return tables


def rebuild_totals(db: sqlite3.Connection) -> None:
    """Recompute the running totals from the charge log (a ledger written before they existed)."""
    db.execute("DELETE FROM ldp_ledger_window_totals")
    db.execute("DELETE FROM ldp_ledger_lifetime_totals")
    for scope_sql in ("metric", "'*'"):
        db.execute(f"INSERT INTO ldp_ledger_window_totals SELECT {scope_sql}, window, SUM(epsilon), SUM(delta) "
                   f"FROM ldp_ledger_charges GROUP BY {scope_sql}, window")
        db.execute(f"INSERT INTO ldp_ledger_lifetime_totals SELECT {scope_sql}, SUM(epsilon), SUM(delta) "
                   f"FROM ldp_ledger_charges GROUP BY {scope_sql}")
    db.execute("INSERT OR REPLACE INTO ldp_ledger_meta VALUES ('totals', '1')")
