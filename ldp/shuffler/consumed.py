"""The chunks ``ldp shuffle --keep-originals`` keeps, and how long: ``apps/<app>/shuffler/consumed/``.

A consumed chunk is an unshuffled one: its batches with their ids, arrival windows and lines in arrival order, what
the shuffler exists to break apart. Kept for debugging or replay, it must not stay: every run deletes those a replica
wrote more than ``originals_seconds`` ago (``--originals-days``, 7 by default), with or without ``--keep-originals``
(a run without it still clears what earlier runs kept). The age is read from the key alone, no GET: a chunk's name
starts with the UTC second its replica wrote it (:func:`~ldp.pipeline.chunks.chunk_key`), and the move under
``consumed/`` keeps the name. An object there whose name gives no such time was not put there by a run: it is left
alone, and counted in the log.
"""

from __future__ import annotations

import calendar
import logging
import math
import re
import time

from ldp.shuffler.engine import each
from ldp.storage import Store
from ldp.storage.roles import shuffler_prefix

__all__ = ["DEFAULT_ORIGINALS_SECONDS", "consumed_prefix", "chunk_time", "prune_consumed"]

logger = logging.getLogger(__name__)
DEFAULT_ORIGINALS_SECONDS = 7 * 86400.0
"""How long a consumed chunk kept by ``keep_originals`` stays, from when its replica wrote it."""
_TIME_RE = re.compile(r"(\d{8}T\d{6}Z)-")


def consumed_prefix(app: str) -> str:
    """``apps/<app>/shuffler/consumed/``: where ``keep_originals`` moves the consumed chunks."""
    return f"{shuffler_prefix(app)}consumed/"


def chunk_time(key: str) -> int | None:
    """The Unix second a chunk's key names (its last part starts ``YYYYmmddTHHMMSSZ-``), ``None`` if it names none."""
    m = _TIME_RE.match(key.rsplit("/", 1)[-1])
    if m is None:
        return None
    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))
    except ValueError:  # the shape of a time, not a time (month 13, say)
        return None


def prune_consumed(store: Store, app: str, before: float) -> list[str]:
    """Delete the consumed chunks of ``app`` that their replica wrote before ``before`` (Unix s): the key's second
    plus one at most ``before``, so a chunk written at that very second stays. The keys deleted."""
    if isinstance(before, bool) or not isinstance(before, (int, float)) or math.isnan(before):
        raise ValueError(f"before must be a number, got {before!r}")
    doomed, unknown = [], 0
    for key in store.list(consumed_prefix(app)):
        t = chunk_time(key)
        if t is None:
            unknown += 1
        elif t + 1 <= before:
            doomed.append(key)
    each(store, store.delete, doomed)
    if doomed:
        logger.info("deleted %d consumed chunk(s) of %s past their retention", len(doomed), app)
    if unknown:
        logger.warning("%d object(s) under %s name no time: not a consumed chunk, left alone", unknown,
                       consumed_prefix(app))
    return doomed
