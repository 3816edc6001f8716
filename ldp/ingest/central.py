"""The central target of a metric (the spec's ``release.central``), enforced by the fold.

A device takes part in every window it reports in, and every window the ingest service serves (its estimate, or its
reports in the pooled estimate) is one more release against the analyst. Per metric, the windows served so far
compose: each is bounded by :func:`ldp.privacy.target.window_releases` from the fold's manifest (the smallest
*shuffled* segment count of the window's reports, rounded down to two significant digits — fewer reports shuffled
can only weaken the bound — and the number of segments holding them), and their privacy-loss distributions are
composed by :func:`ldp.privacy.over_time.central_over_windows` at the target's δ
(:func:`ldp.pipeline.guarantee.over_windows`: one window alone is stated at its own figure, the one the dashboard's
window line, ``ldp shuffle`` and ``ldp privacy --shuffled N`` state for it, computed by the same
:func:`~ldp.pipeline.guarantee.window_guarantee` rule: k reports never above k·ε₀, :mod:`ldp.privacy.target`).
The rounding of n can only raise the cumulative figure above a window's own. Windows are taken in order; one
whose release would take the cumulative ε above the target is withheld, with its reason; so is every window when
nothing can be proven (no per-window cap, a report with δ > 0, a memoizing protocol, reports stored unshuffled),
unless the spec's lifetime cap on a device's cost for the metric is itself within the target: a local bound, it
holds against the analyst for every protocol and every window.

The decisions live in ``DATA/apps/<app>/central.json``, written atomically (temporary file, fsync, rename) *before*
the ``estimates.json`` that serves them: a crash in between leaves a window recorded as released but not served
(counted, never lost), never served but not recorded. Every window served is recorded, with or without a target,
so a target set later counts what was served before it. A window's record keeps the worst facts it was served
under; when later reports (a late upload) make them worse, the window is checked again and, if it no longer
fits, withheld from then on while still counted. Withheld decisions are kept while the target is the same.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ldp.ingest.series import WITHHELD
from ldp.jobs.store import write_atomic
from ldp.pipeline.guarantee import DELTA, over_windows
from ldp.privacy.target import MetricLoss, meets, metric_loss, window_releases
from ldp.spec import CollectionSpec
from ldp.spec.cli import lifetime_cap

__all__ = ["STATE_FILE", "STATE_FORMAT", "WITHHELD", "decide", "find_metric", "load_state", "round_down",
           "state_path"]

STATE_FILE = "central.json"
STATE_FORMAT = "ldp-central/1"


def state_path(base: Path) -> Path:
    """``DATA/apps/<app>/central.json``."""
    return base / STATE_FILE


def load_state(base: Path) -> dict[str, Any]:
    """The recorded decisions (empty before the first). A damaged file raises ``ValueError``: the fold then
    fails rather than forget windows it served."""
    try:
        doc = json.loads(state_path(base).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"format": STATE_FORMAT, "metrics": {}}
    except ValueError as exc:
        raise ValueError(f"{state_path(base)} is damaged ({exc}): the fold will not release windows without the "
                         "record of those it released") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT or not isinstance(doc.get("metrics"), dict):
        raise ValueError(f"{state_path(base)} is not an {STATE_FORMAT} document")
    return doc


def round_down(n: int) -> int:
    """``n`` rounded down to two significant digits (a smaller n gives a larger, still valid, ε)."""
    if n < 100:
        return n
    unit = 10 ** (len(str(n)) - 2)
    return n // unit * unit


def _facts(segments: list[tuple[bool, int]], reports: int) -> dict[str, Any]:
    """A window's facts: the smallest shuffled count (``None`` when some of its reports are unshuffled) and the
    number of segments that matter (at most the device's reports a window)."""
    counts = [n for _, n in segments if n > 0]
    n = None if any(not s for s, c in segments if c > 0) else round_down(min(counts))
    return {"n": n, "segments": max(1, min(len(counts), reports))}


def _worse(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    return bool(old["n"] is not None and (new["n"] is None or new["n"] < old["n"])) or new["segments"] > \
        old["segments"]


def _worst(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    if old is None:
        return dict(new)
    n = None if old["n"] is None or new["n"] is None else min(old["n"], new["n"])
    return {"n": n, "segments": max(old["segments"], new["segments"])}


@lru_cache(maxsize=512)
def _compose(releases: tuple[Any, ...], delta: float) -> Any:
    return over_windows(list(releases), delta)


def _over(released: Mapping[int, Mapping[str, Any]], loss: MetricLoss, delta: float) -> Any:
    releases: list[Any] = []
    for w in sorted(released):
        releases += window_releases(loss, released[w]["n"], released[w]["segments"])
    return _compose(tuple(releases), delta)


def _metric(st: Mapping[str, Any], target: Any, loss: MetricLoss, windows: Mapping[int, list[tuple[bool, int]]],
            current: int) -> dict[str, Any]:
    """One metric's new record from its old one (module docstring)."""
    tdict = None if target is None else target.to_dict()
    released = {int(w): dict(v) for w, v in (st.get("released") or {}).items()}
    withheld = {int(w): str(r) for w, r in (st.get("withheld") or {}).items()} if st.get("target") == tdict else {}
    k = loss.reports or 1
    for w in sorted(windows):
        if target is not None and w > current:
            continue  # a window not started yet is a candidate once it starts
        facts, rec = _facts(windows[w], k), released.get(w)
        if w in withheld or (rec is not None and not _worse(facts, rec)):
            continue
        if target is None or (loss.lifetime is not None and meets(loss.lifetime.epsilon, loss.lifetime.delta,
                                                                  target)):
            released[w] = _worst(rec, facts)  # no target, or the device's lifetime cap is within it
        elif loss.per_report is None:
            withheld[w] = f"{WITHHELD}: nothing can be proven ({loss.reason})"
        elif facts["n"] is None:
            withheld[w] = (f"{WITHHELD}: reports of this window were stored before shuffling, so no central bound "
                           "holds for them")
        else:
            trial = {**released, w: _worst(rec, facts)}
            try:
                over = _over(trial, loss, target.delta)
            except ValueError as exc:  # no bound computable: nothing can be proven for this window
                withheld[w] = f"{WITHHELD}: no central bound ({exc})"
                continue
            if meets(over.epsilon, over.delta, target):
                released = trial
            else:
                withheld[w] = (f"{WITHHELD}: releasing it would make the cumulative central ε {over.epsilon:.4g} "
                               f"(δ={target.delta:g}), above the target ε={target.epsilon:g}")
    return {"target": tdict, "released": {str(w): released[w] for w in sorted(released)},
            "withheld": {str(w): withheld[w] for w in sorted(withheld)}}


def find_metric(specs: Mapping[str, CollectionSpec], metric: str, fp: str) -> tuple[CollectionSpec, Any] | None:
    """The spec and :class:`~ldp.spec.MetricSpec` of ``metric`` with params fingerprint ``fp`` among ``specs``
    (``None``: none has it)."""
    for spec in specs.values():
        m = spec.metrics.get(metric)
        if m is not None and m.params_fingerprint == fp:
            return spec, m
    return None


def decide(base: Path, specs: Mapping[str, CollectionSpec],
           windows: Mapping[tuple[str, str], Mapping[int, list[tuple[bool, int]]]], now: float
           ) -> dict[tuple[str, str], dict[str, Any]]:
    """Decide and record (atomically, before anything is served) which windows of each metric are served; return
    per (metric, params fingerprint) its ``central`` entry: ``target``, ``withheld`` (window -> reason),
    ``served`` (the windows the pooled estimate may merge; ``None``: all, no target), the cumulative ``epsilon``
    and ``delta`` over the windows released (``None`` when nothing can be proven), ``windows`` released, the
    ``local`` ε those windows cost a device (k·ε₀ each), and ``reason`` (why no bound)."""
    state = load_state(base)
    old_metrics = state["metrics"]
    new_metrics: dict[str, Any] = {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (metric, fp), ws in sorted(windows.items()):
        found = find_metric(specs, metric, fp)
        if found is None:
            continue
        spec, m = found
        target = spec.release_for(metric).central
        loss = metric_loss(m.params, spec.reports_per_window(metric), lifetime_cap(spec, metric))
        key = f"{metric}.{fp}"
        rec = _metric(old_metrics.get(key) or {}, target, loss, ws, math.floor(now) // spec.window_seconds)
        new_metrics[key] = rec
        out[(metric, fp)] = _entry(rec, target, loss)
    for key, rec in old_metrics.items():
        new_metrics.setdefault(key, rec)  # a metric no longer folded keeps its record
    doc = {"format": STATE_FORMAT, "metrics": dict(sorted(new_metrics.items()))}
    if doc != state:
        write_atomic(state_path(base), (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
    return out


def _entry(rec: Mapping[str, Any], target: Any, loss: MetricLoss) -> dict[str, Any]:
    released = {int(w): v for w, v in rec["released"].items()}
    withheld = dict(rec["withheld"])
    delta = target.delta if target is not None else DELTA
    out: dict[str, Any] = {"target": rec["target"], "withheld": withheld, "reason": loss.reason,
                           "served": None if target is None else sorted(w for w in released if str(w) not in withheld),
                           "windows": len(released), "epsilon": None, "delta": delta, "local": None,
                           "reports_per_window": loss.reports}
    if loss.per_report is not None:
        out["local"] = loss.per_report.epsilon * len(released)
        if released:
            try:
                over = _over(released, loss, delta)
            except ValueError as exc:  # shown, never a failed fold: the estimates are served as without a target
                out["reason"] = f"no central bound ({exc})"
            else:
                out.update(epsilon=over.epsilon, delta=over.delta)
        else:
            out["epsilon"] = 0.0
    if released and loss.lifetime is not None:  # the lifetime cap bounds every protocol, memoized ones too
        eps, _ = loss.bound(out["epsilon"], out["delta"])
        if eps != out["epsilon"]:
            out.update(epsilon=eps, bound="the spec's lifetime cap")
        if out["local"] is None or loss.lifetime.epsilon < out["local"]:
            out["local"] = loss.lifetime.epsilon
    return out
