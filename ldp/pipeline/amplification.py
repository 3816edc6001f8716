"""The central guarantee the collector's shuffle buys each metric (:mod:`ldp.privacy.shuffle`), from what the fold
knows: how many reports of the metric each closed segment held.

The collector shuffles each segment on its own (:mod:`ldp.pipeline.shuffle`), so a report hides among the other
reports of its metric *in its segment*: the guarantee of a metric is the one of its smallest segment. It is stated
for a device with one report of the metric in that segment (a device that sent k of them, several windows after
a spell offline say, has the guarantee of one report of k·ε₀), against the analyst only, when whoever runs the
collector is not the analyst. Segments closed before shuffled storage (named ``<UTC>-<seq:06d>.jsonl``) give no
central guarantee; they are counted apart."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ldp.privacy.shuffle import shuffled_epsilon
from ldp.server.fold import parse_key_name

__all__ = ["DELTA", "SHUFFLED_NAME", "metric_epsilon", "per_report_epsilon", "segment_counts", "segment_of",
           "shuffle_entry", "window_segments"]

DELTA = 1e-8
"""δ of the central guarantee shown."""
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


def shuffle_entry(eps0: float | None, segments: list[tuple[bool, int]]) -> dict[str, Any] | None:
    """A metric's ``shuffle`` entry: its shuffled segments, the smallest one's reports, the segments not shuffled,
    and the central guarantee of one report in the smallest (``None`` without a per-report ε or a segment)."""
    shuffled = [n for s, n in segments if s and n > 0]
    unshuffled = sum(1 for s, n in segments if not s and n > 0)
    if eps0 is None or not (shuffled or unshuffled):
        return None
    entry: dict[str, Any] = {"segments": len(shuffled), "smallest": min(shuffled, default=None),
                             "unshuffled_segments": unshuffled, "delta": DELTA, "central": None}
    if shuffled:
        entry["central"] = shuffled_epsilon(eps0, min(shuffled), DELTA).to_dict()
    return entry


def metric_epsilon(metric: Any) -> float | None:
    """ε₀ of one report of ``metric`` (a :class:`~ldp.spec.MetricSpec`): its protocol's cost, pure ε only (the
    same figure :func:`per_report_epsilon` reads from the metric's privacy entry)."""
    cost = metric.params.privacy_cost
    return float(cost.epsilon) if cost.delta == 0 and cost.epsilon > 0 else None


def per_report_epsilon(privacy: Mapping[str, Any] | None) -> float | None:
    """ε₀ of a metric's ``privacy`` entry (pure ε only: the bound needs δ₀ = 0)."""
    cost = (privacy or {}).get("per_report")
    if not isinstance(cost, Mapping) or cost.get("delta", 0) not in (0, 0.0):
        return None
    eps = cost.get("epsilon")
    return float(eps) if isinstance(eps, int | float) and eps > 0 else None
