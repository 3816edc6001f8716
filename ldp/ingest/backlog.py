"""Reports accepted but not folded yet, and when the next fold will count them.

The ingest service counts what it accepted (``DATA/ingest.json``, ``apps.<app>.accepted``, exact: rebuilt from
the journal on start); the last fold counts what it aggregated (``estimates.json``, ``accepted``). The
difference waits in segments not folded yet. A closed segment is folded at the next fold
(``checked_at + every_seconds``); the open one only once it is closed (``segment_max_seconds`` after it was
opened, which its name says), so the honest time is the first fold after both.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["open_segment_started", "waiting_state"]


def open_segment_started(app_dir: str | os.PathLike[str]) -> datetime | None:
    """When the app's open segment (``segments/open/<UTC>-<seq>.jsonl``, not empty) was opened, or ``None``."""
    started = None
    for path in Path(app_dir, "segments", "open").glob("*.jsonl"):
        try:
            if path.stat().st_size == 0:
                continue
            t = datetime.strptime(path.name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except (OSError, ValueError):
            continue
        started = t if started is None or t < started else started
    return started


def _time(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def _seconds(v: Any) -> float | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    return float(v) if ok else None


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting_state(doc: Mapping[str, Any] | None, ingest_app: Mapping[str, Any] | None,
                  open_started: datetime | None, now: datetime) -> dict[str, Any] | None:
    """How many reports wait for a fold and when they will be counted: ``reports``, ``next_fold_at`` (the
    first fold after the open segment closes; ``None`` when unknown: never folded, or folding by hand),
    ``open_segment_closes_at``, ``overdue`` (the expected fold is past) and ``text`` for people. ``None``
    when the counters are unknown; ``reports`` 0 when nothing waits."""
    accepted = (ingest_app or {}).get("accepted")
    if not isinstance(accepted, int) or isinstance(accepted, bool):
        return None
    folded = (doc or {}).get("accepted", 0)
    waiting = max(0, accepted - (folded if isinstance(folded, int) else 0))
    schedule = (doc or {}).get("schedule") or {}
    every, seg = _seconds(schedule.get("every_seconds")), _seconds(schedule.get("segment_max_seconds"))
    checked = _time((doc or {}).get("checked_at"))
    closes = open_started + timedelta(seconds=seg) if open_started is not None and seg is not None else None
    next_fold = None
    if checked is not None and every is not None:
        ticks = 1
        if closes is not None and closes > checked:
            ticks = max(1, math.ceil((closes - checked).total_seconds() / every))
        next_fold = checked + timedelta(seconds=ticks * every)
    overdue = next_fold is not None and next_fold < now - timedelta(seconds=(every or 0) + 5)
    state = {"reports": waiting, "accepted": accepted, "folded": folded, "next_fold_at": _iso(next_fold),
             "open_segment_started": _iso(open_started), "open_segment_closes_at": _iso(closes),
             "overdue": overdue, "text": ""}
    if not waiting:
        return state
    what = f"{waiting:,} report{'s' if waiting != 1 else ''} waiting for the next fold"
    if next_fold is None:
        when = (" (not folded yet: the first fold counts them)" if doc is None else
                " (no folding period is known: folds run by hand or by ldp watch)")
    else:
        clock = next_fold.strftime("%H:%M:%S UTC") if next_fold.date() == now.date() else \
            next_fold.strftime("%Y-%m-%d %H:%M:%S UTC")
        when = f" at {clock}" + (" (overdue: is folding running?)" if overdue else "")
    if closes is not None and closes > now:
        when += (f"; reports in the open segment are folded only once it closes, by "
                 f"{closes.strftime('%H:%M:%S UTC')} (segments close after {seg:g} s)")
    state["text"] = what + when
    return state
