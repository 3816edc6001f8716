"""The client's outbox: envelopes waiting for upload in the state file, the upload interval, and the batches
pinned for upload until the ingest service acknowledges them.

``ldp_client_outbox`` holds one envelope line per recorded report (stored in the transaction that charged it,
:mod:`ldp.client.runtime`); :meth:`ClientOutbox.pending` reads the next batch (at most ``upload.max_batch``
lines, nothing before ``upload.min_interval_seconds`` have passed since the last acknowledged upload);
:meth:`ClientOutbox.acknowledge` deletes delivered lines and counts them per metric in ``ldp_client_uploads``.
For the uploader (:mod:`ldp.client.uploader`), a batch is pinned in ``ldp_client_batch`` with its id
(:func:`~ldp.client.uploader.batch_id`, keyed by the device's random batch salt) before it is first sent, so a
retry, a crash or a lost answer resends the same lines under the same id.

**Two lanes.** The reports of two-aggregator metrics (``dap_metrics``: :mod:`ldp.client.dap`) wait in the same
table, charged and capped alike, but go to their task's leader one by one (:mod:`ldp.client.dap_upload`), not to the
ingest service: :meth:`ClientOutbox.pending`, the batches and the upload interval are the ingest lane's only, and
:meth:`ClientOutbox.dap_pending` reads the other. Standard library only.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from typing import NamedTuple

from ldp.client.state import StateFile, at
from ldp.client.uploader import BATCH_ID_CHARS, batch_id
from ldp.privacy.ledger import BudgetLedger, Reservation, check_clock
from ldp.spec import UploadPolicy

__all__ = ["ClientOutbox", "PendingItem"]

_CHUNK = 500  # ids per SQL statement (SQLite allows 999 parameters at least)


class PendingItem(NamedTuple):
    """An outbox entry: ``id`` (local, for :meth:`TelemetryClient.acknowledge`; never sent) and the
    ``line`` to upload."""

    id: int
    line: str


class ClientOutbox:
    """The outbox of one state file (``ledger``'s file, checked by ``state``) under an upload ``policy``; every
    method runs in its own ledger transaction, but :meth:`put` (in the caller's). The public methods are those
    of :class:`~ldp.client.TelemetryClient` of the same names."""

    def __init__(self, ledger: BudgetLedger, state: StateFile, policy: UploadPolicy,
                 clock: Callable[[], float], dap_metrics: frozenset[str] = frozenset()) -> None:
        self._ledger, self._state, self._policy, self._clock = ledger, state, policy, clock
        self._dap = sorted(dap_metrics)
        marks = ",".join("?" * len(self._dap))
        self._ingest_lane = f"metric NOT IN ({marks})"  # the SQL condition of an ingest lane row (parameters _dap)

    def put(self, db: sqlite3.Connection, reservation: Reservation, line: str) -> int:
        """Store the envelope ``line`` of a charged report (inside the charge's transaction); its outbox id."""
        cur = db.execute("INSERT INTO ldp_client_outbox (charge, metric, window, line) VALUES (?, ?, ?, ?)",
                         (reservation.id, reservation.metric, reservation.window, line))
        at("inserted")
        return int(cur.lastrowid)  # type: ignore[arg-type]  # an INSERT sets lastrowid

    @staticmethod
    def pending_bytes(db: sqlite3.Connection) -> int:
        """Bytes of envelope lines waiting for upload, each with its newline (the cap's measure)."""
        return int(db.execute("SELECT COALESCE(SUM(length(CAST(line AS BLOB))) + count(*), 0) "
                              "FROM ldp_client_outbox").fetchone()[0])

    # -- the outbox and the upload interval ----------------------------------------------------------------
    def _last_upload(self, db: sqlite3.Connection) -> float:
        row = db.execute("SELECT value FROM ldp_client_meta WHERE key='last_upload'").fetchone()
        try:
            return float(row[0])
        except (TypeError, ValueError):
            raise self._state.fail(f"is damaged: last_upload is {row and row[0]!r}") from None

    def next_upload_at(self) -> float:
        """Unix time from which :meth:`pending` returns a batch (``-inf``: at once)."""
        with self._state.guard(), self._ledger.transaction() as db:
            return self._last_upload(db) + self._policy.min_interval_seconds

    def pending(self, limit: int | None = None) -> list[PendingItem]:
        """The next batch to upload, oldest first (read only)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
        with self._state.guard(), self._ledger.transaction() as db:
            return self._pending(db, limit)

    def _pending(self, db: sqlite3.Connection, limit: int | None) -> list[PendingItem]:
        n = self._policy.max_batch if limit is None else min(limit, self._policy.max_batch)
        last = self._last_upload(db)
        if max(check_clock(self._clock()), last) < last + self._policy.min_interval_seconds:
            return []
        rows = db.execute(f"SELECT id, line FROM ldp_client_outbox WHERE {self._ingest_lane} ORDER BY id LIMIT ?",
                          (*self._dap, n)).fetchall()
        return [PendingItem(int(i), line) for i, line in rows]

    def dap_pending(self, limit: int) -> list[tuple[int, str, str]]:
        """The oldest ``limit`` reports of the two-aggregator lane: ``(id, metric, line)`` (read only; no upload
        interval: a device sends at most its cap of them a window)."""
        if not self._dap:
            return []
        with self._state.guard(), self._ledger.transaction() as db:
            rows = db.execute(f"SELECT id, metric, line FROM ldp_client_outbox WHERE NOT {self._ingest_lane} "
                              "ORDER BY id LIMIT ?", (*self._dap, limit)).fetchall()
        return [(int(i), str(metric), str(line)) for i, metric, line in rows]

    def acknowledge(self, ids: list[int], interval: bool = True) -> int:
        """Delete uploaded items; how many were there. ``interval=False`` (the two-aggregator lane): the ingest
        lane's upload interval does not start."""
        if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
            raise TypeError("outbox ids are ints (PendingItem.id)")
        with self._state.guard(), self._ledger.transaction() as db:
            return self._acknowledge(db, ids, interval)

    def _acknowledge(self, db: sqlite3.Connection, ids: list[int], interval: bool = True) -> int:
        """``acknowledge`` inside the caller's transaction."""
        ids = sorted(set(ids))
        done = 0
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for metric, n in db.execute(f"SELECT metric, count(*) FROM ldp_client_outbox WHERE id IN ({marks}) "
                                        "GROUP BY metric", chunk).fetchall():
                db.execute("INSERT INTO ldp_client_uploads VALUES (?, ?) ON CONFLICT (metric) DO UPDATE SET "
                           "reports = reports + excluded.reports", (metric, n))
                done += n
            db.execute(f"DELETE FROM ldp_client_outbox WHERE id IN ({marks})", chunk)
            db.execute(f"DELETE FROM ldp_client_batch WHERE outbox IN ({marks})", chunk)
        at("acknowledge")
        if done and interval:
            last = self._last_upload(db)
            db.execute("UPDATE ldp_client_meta SET value=? WHERE key='last_upload'",
                       (repr(max(check_clock(self._clock()), last)),))
        return done

    def has_pending(self, lane: str | None = None) -> bool:
        """Whether the outbox holds a report not yet acknowledged (of ``lane``, ``"ingest"`` or ``"dap"``: of
        either by default)."""
        where = {None: "1", "ingest": self._ingest_lane, "dap": f"NOT {self._ingest_lane}"}[lane]
        with self._state.guard(), self._ledger.transaction() as db:
            return db.execute(f"SELECT 1 FROM ldp_client_outbox WHERE {where} LIMIT 1",
                              () if lane is None else self._dap).fetchone() is not None

    # -- upload batches: pinned in the state file (table ldp_client_batch) until acknowledged ----------------
    def next_batch(self, limit: int | None = None) -> tuple[str, list[PendingItem]] | None:
        """The pinned batch's first part, else a new batch pinned now; ``None``: nothing to send now."""
        with self._state.guard(), self._ledger.transaction() as db:
            # items acknowledged by other means (say, an older version sharing the file) were delivered
            db.execute("DELETE FROM ldp_client_batch WHERE outbox NOT IN (SELECT id FROM ldp_client_outbox)")
            row = db.execute("SELECT batch FROM ldp_client_batch ORDER BY outbox LIMIT 1").fetchone()
            if row is not None:
                if not (isinstance(row[0], str) and len(row[0]) == BATCH_ID_CHARS
                        and all(c in "0123456789abcdef" for c in row[0])):
                    raise self._state.fail(f"is damaged: pinned batch id {row[0]!r} is not {BATCH_ID_CHARS} "
                                           "hex digits")
                return row[0], self._batch_items(db, row[0])
            items = self._pending(db, limit)
            if not items:
                return None
            bid = self._pin(db, items)
        at("pinned")
        return bid, items

    def split_batch(self, batch: str) -> int:
        """Pin the items of part ``batch`` as two new parts; the size of the first."""
        with self._state.guard(), self._ledger.transaction() as db:
            items = self._batch_items(db, batch)
            half = (len(items) + 1) // 2
            if half:
                self._pin(db, items[:half])
                self._pin(db, items[half:])
        return half

    def acknowledge_batch(self, batch: str, ids: list[int]) -> int:
        """Acknowledge the items ``ids`` of part ``batch`` and unpin it, in one transaction."""
        at("uploaded")
        with self._state.guard(), self._ledger.transaction() as db:
            done = self._acknowledge(db, ids)
            db.execute("DELETE FROM ldp_client_batch WHERE batch = ?", (batch,))
        return done

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
            raise self._state.fail("is damaged: its batch_salt is not 32 bytes of hex")
        return salt
