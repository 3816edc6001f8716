"""The central guarantee the ingest service's shuffle buys each metric (:mod:`ldp.privacy.shuffle`), from what the fold
knows: how many reports of the metric each closed segment held, per window.

The ingest service shuffles each segment on its own (:mod:`ldp.pipeline.shuffle`), and the analyst sees each report's
window, so a report hides among the other reports of its metric *and window in its segment*: the guarantee of a metric
is the one of its smallest such set. It is computed by :func:`ldp.pipeline.guarantee.window_guarantee` (the one function
every figure of a window comes from) with the metric's protocol params (ε₀ and the protocol's ``shuffle_structure``) and
the most reports a device may send of it in a window (k reports: never above k·ε₀, :mod:`ldp.privacy.target`; one report
when the spec caps no window), against the analyst only, when whoever runs the ingest service is not the analyst.
Segments closed before shuffled storage (named ``<UTC>-<seq:06d>.jsonl``) give no central guarantee; they are counted
apart."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ldp.jobs.fold import parse_key_name
from ldp.pipeline.guarantee import DELTA, window_guarantee

__all__ = ["DELTA", "SHUFFLED_NAME", "segment_counts", "segment_of",
           "shuffle_entry", "smallest_set", "window_guarantee", "window_segments"]

SHUFFLED_NAME = re.compile(r"-[0-9a-f]{16}(-f[0-9]{1,12})?(-p[0-9]{5})?\.jsonl\Z")
"""A closed segment written shuffled (its name ends in 16 random hex digits, then the shuffler's fencing token
``-f<n>`` when the shuffler stage wrote it: :func:`ldp.pipeline.shuffle.closed_name`), or one part ``-p<k>`` of
such a segment (the shuffler's Dask engine, :mod:`ldp.shuffler.dask_engine`: a window's parts are random subsets
of its one shuffled order, so together they are one segment, counted as one by :func:`segment_of`)."""
_PART = re.compile(r"-p[0-9]{5}(\.jsonl)\Z")


def segment_of(path: str) -> str:
    """The segment an input ``path`` belongs to: itself, or for a part of a shuffled segment its stem's name."""
    return _PART.sub(r"\1", path) if SHUFFLED_NAME.search(path) else path


def segment_counts(job_dir: Path) -> dict[tuple[str, str], list[tuple[bool, int]]]:
    """Per (metric, params fingerprint), each folded segment's report count and whether it was shuffled, from the
    job's manifest (inputs folded before the manifest kept counts per metric are left out)."""
    try:
        doc = json.loads((job_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    out: dict[tuple[str, str], dict[str, tuple[bool, int]]] = {}
    for entry in doc.get("inputs") or []:
        by_key = entry.get("n_by_key") if isinstance(entry, dict) else None
        if not isinstance(by_key, dict):
            continue
        shuffled = SHUFFLED_NAME.search(str(entry.get("path", ""))) is not None
        path = segment_of(str(entry.get("path")))  # the parts of one shuffled segment count as that segment
        for name, n in by_key.items():
            try:
                metric, fp, _ = parse_key_name(str(name))
            except ValueError:
                continue
            seg = out.setdefault((metric, fp), {})
            old = seg.get(path, (shuffled, 0))
            seg[path] = (shuffled, old[1] + int(n))
    return {k: list(v.values()) for k, v in out.items()}


def window_segments(job_dir: Path) -> dict[tuple[str, str], dict[int, list[tuple[bool, int]]]]:
    """Per (metric, params fingerprint) and window, each folded segment holding reports of that window: whether it
    was shuffled and how many reports of the metric *and window* it held (the analyst sees each report's window,
    so a report hides among those of its window in its segment), from the job's manifest."""
    try:
        doc = json.loads((job_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    out: dict[tuple[str, str], dict[int, dict[str, tuple[bool, int]]]] = {}
    for entry in doc.get("inputs") or []:
        by_key = entry.get("n_by_key") if isinstance(entry, dict) else None
        if not isinstance(by_key, dict):
            continue
        path = str(entry.get("path", ""))
        shuffled = SHUFFLED_NAME.search(path) is not None
        path = segment_of(path)
        for name, n in by_key.items():
            try:
                metric, fp, window = parse_key_name(str(name))
            except ValueError:
                continue
            if window is None or not int(n) > 0:
                continue
            seg = out.setdefault((metric, fp), {}).setdefault(window, {})
            seg[path] = (shuffled, seg.get(path, (shuffled, 0))[1] + int(n))
    return {k: {w: list(v.values()) for w, v in ws.items()} for k, ws in out.items()}


def smallest_set(windows: Mapping[int, list[tuple[bool, int]]]) -> int | None:
    """The fewest reports of a metric that one of its reports hides among: over its windows (``window_segments``'
    entry of the metric), the smallest count a shuffled segment holds of one window (``None``: none shuffled)."""
    return min((n for segs in windows.values() for s, n in segs if s and n > 0), default=None)


def shuffle_entry(params: Any | None, segments: list[tuple[bool, int]], reports: int | None = 1,
                  windows: Mapping[int, list[tuple[bool, int]]] | None = None) -> dict[str, Any] | None:
    """A metric's ``shuffle`` entry: its shuffled ``segments`` (:func:`segment_counts`), the ``smallest`` set of
    reports one of them hides among (per window when the metric's ``windows`` are given, :func:`smallest_set`;
    else per segment), the segments not shuffled, the ``reports_per_window`` a device may send (``None``: not
    capped, the figure is then one report's) and the ``central`` guarantee of a device's reports in that smallest
    set (:func:`~ldp.pipeline.guarantee.window_guarantee` with the protocol's ``params``; ``None`` without params,
    a shuffled segment or a pure ε₀). ``None`` when the metric has no segment."""
    shuffled = [n for s, n in segments if s and n > 0]
    unshuffled = sum(1 for s, n in segments if not s and n > 0)
    if params is None or not (shuffled or unshuffled):
        return None
    smallest = smallest_set(windows) if windows else None
    if smallest is None:
        smallest = min(shuffled, default=None)
    entry: dict[str, Any] = {"segments": len(shuffled), "smallest": smallest, "unshuffled_segments": unshuffled,
                             "delta": DELTA, "reports_per_window": reports, "central": None}
    if smallest is not None:
        g = window_guarantee(params, smallest, DELTA, reports or 1)
        entry["central"] = None if g is None else g.to_dict()
    return entry
