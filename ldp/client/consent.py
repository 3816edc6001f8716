"""Opting out and in (docs/client.md, "On the device"): what an app's privacy setting does to the state file.

:func:`opt_out`, in the caller's transaction (one ``BEGIN IMMEDIATE``: a crash keeps all of it or none), deletes
every pending report and pinned batch, the device secret, the cohorts, and the ledger's memoized and
charge-on-change records; it keeps the budget spent (``ldp_ledger_charges`` and the totals: spent stays spent)
and counts the reports it deleted per metric (``ldp_client_discarded``), so ``counts()`` still adds up. The empty
secret and the ``opted_out`` marker in ``ldp_client_meta`` (sealed with the rest) stop ``record`` until
:func:`opt_in` draws a fresh secret: new cohorts and new memoized responses, each charged afresh when first used
(their records were deleted). Both are idempotent. Standard library only.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from ldp.client.state import StateFile
from ldp.errors import OptedOutError, SecretChanged, StateError

__all__ = ["opt_out", "opt_in", "discarded", "current", "SecretChanged", "DISCARDED_TABLE"]

T = TypeVar("T")
logger = logging.getLogger("ldp.client.runtime")

DISCARDED_TABLE = ("CREATE TABLE IF NOT EXISTS ldp_client_discarded (metric TEXT PRIMARY KEY, "
                   "reports INTEGER NOT NULL)")
"""Reports deleted unsent by :func:`opt_out`, per metric (made by the first opt-out)."""

_FORGET = ("DELETE FROM ldp_client_batch", "DELETE FROM ldp_client_outbox", "DELETE FROM ldp_client_cohorts",
           "DELETE FROM ldp_ledger_memo", "DELETE FROM ldp_ledger_changes")


def opt_out(db: sqlite3.Connection, state: StateFile) -> int:
    """Stop collection on this device (module docstring); the pending reports deleted."""
    if state.load_secret(db) is None:
        return 0
    db.execute(DISCARDED_TABLE)
    rows = db.execute("SELECT metric, count(*) FROM ldp_client_outbox GROUP BY metric").fetchall()
    db.executemany("INSERT INTO ldp_client_discarded VALUES (?, ?) ON CONFLICT (metric) DO UPDATE SET "
                   "reports = reports + excluded.reports", rows)
    for statement in _FORGET:
        db.execute(statement)
    state.set_secret(db, None)
    return sum(n for _, n in rows)


def opt_in(db: sqlite3.Connection, state: StateFile) -> bool:
    """Resume collection with a fresh device secret (OS CSPRNG); whether the device had opted out."""
    if state.load_secret(db) is not None:
        return False
    state.set_secret(db, secrets.token_bytes(32))
    return True


def discarded(db: sqlite3.Connection) -> dict[str, int]:
    """Reports deleted unsent by opting out, per metric (none before the first opt-out)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name='ldp_client_discarded'").fetchone() is None:
        return {}
    return {m: int(n) for m, n in db.execute("SELECT metric, reports FROM ldp_client_discarded")}


def current(state: StateFile, ledger: Any, forget: Callable[[], None], fn: Callable[[], T]) -> T:
    """Run ``fn`` (a record) with ``state``'s device secret as the file holds it: another client of the file may
    have opted out or in. ``fn`` checks it inside its own transaction and raises :class:`SecretChanged` when it
    differs; the secret is then read again (``forget``: drop encoders built with the older one) and ``fn`` runs once
    more. :class:`OptedOutError` when the device opted out. The usual record stays one transaction."""
    for attempt in (0, 1):
        if attempt or state._secret is None:
            with state.guard(), ledger.transaction() as db:
                secret = state.load_secret(db)
            if secret != state._secret:
                state._secret = secret
                forget()
            if secret is None:
                logger.info("a report was refused: this device opted out of collection")
                raise OptedOutError(f"{state.path!r}: this device opted out of collection (opt_out): nothing is "
                                    "recorded until it opts in again (opt_in)")
        try:
            return fn()
        except SecretChanged:
            continue
    raise StateError(f"{state.path!r}: the device secret changed twice during one record; try again")
