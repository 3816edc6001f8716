"""Telemetry over time: decode an app's per-window aggregates into the metric entries of ``estimates.json``.

The fold (:func:`ldp.ingest.watch.fold_app`) runs the job with ``by_window``: one aggregate per metric,
parameters and window, ``<metric>.<fingerprint>.w<window>.agg``. The window is the envelope's ``window`` field,
the spec's window index (``floor(unix time / window_seconds)``) the device charged its per-window budget in, so a
device offline for three days that uploads three windows at once is counted once in each of the three. A
window starts at ``window * window_seconds`` (UTC).

Each metric entry holds the pooled estimate of all windows (``"window": "all"``) and ``windows``: the last N windows,
each decoded on its own. A window whose aggregate has the same ``n`` as at the previous fold keeps its previous
decoded entry (nothing is decoded twice).

The pooled estimate is the merge of the windows that may be released (:func:`ldp.jobs.release.pool_windows`):
each of at least the metric's ``min_reports`` reports of its own and, under a central target, served by it. The
others are left out, and named in its ``release.left_out``: were a withheld window pooled, the pooled estimate minus
the released windows' (all in ``/v1/estimates``, which any analyst reads) would be that window's. The pooled ``n``
counts the windows pooled; ``window_n`` has every window's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ldp.decoders.base import Aggregate
from ldp.jobs.fold import parse_key_name
from ldp.jobs.release import Pooling, pool_windows, release, release_info
from ldp.jobs.store import AGG_SUFFIX, merge_all, read_aggregate
from ldp.privacy.accountant import PrivacyCost
from ldp.spec import CollectionSpec, MetricSpec

WITHHELD = "withheld: central target"
"""The start of the reason of every window the central target holds back (:mod:`ldp.ingest.central`)."""

__all__ = ["DEFAULT_WINDOWS", "WINDOW_FIELDS", "decode_metrics", "estimate_rows", "metric_entry", "privacy_entry",
           "release_settings", "window_entry_for", "window_times"]

logger = logging.getLogger(__name__)

DEFAULT_WINDOWS = 14
"""Windows kept decoded per metric in ``estimates.json`` (config ``[fold] windows``)."""
WINDOW_FIELDS = ("window", "start", "end", "open", "key", "n", "rejected", "confidence", "kind", "rows", "detected",
                 "notes", "error", "release", "poisoning", "quantiles")
"""The keys of one window's entry (the rest of a metric's entry is the same for every window)."""


def window_times(window: int, window_seconds: int) -> tuple[str | None, str | None]:
    """A window's start and end (exclusive) as ISO 8601 UTC (``None`` past the year 9999)."""
    def iso(t: int) -> str | None:
        try:
            return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            return None

    return iso(window * window_seconds), iso((window + 1) * window_seconds)


def _cost(c: PrivacyCost | None) -> dict[str, Any] | None:
    return None if c is None else {**c.to_dict(), "text": str(c)}


def costs(per_window: PrivacyCost | None, lifetime: PrivacyCost | None) -> dict[str, Any]:
    """A cap pair as JSON: ``per_window`` and ``lifetime`` (each ``None`` when uncapped)."""
    return {"per_window": _cost(per_window), "lifetime": _cost(lifetime)}


def privacy_entry(spec: CollectionSpec, metric: MetricSpec) -> dict[str, Any]:
    """What one report of ``metric`` costs, and the caps a device spends it under (as ``ldp spec`` prints
    them): the metric's per report / per window / lifetime, and the collection's over all metrics."""
    b = metric.budget
    return {"per_report": _cost(metric.params.privacy_cost), "per_report_cap": _cost(b.per_report),
            "metric": costs(b.per_window, b.lifetime), "collection": costs(spec.budget.per_window,
                                                                           spec.budget.lifetime),
            "window_seconds": spec.window_seconds}


POOLED_RULE = "released windows"
"""How the pooled estimate is made, part of every metric's release settings: the merge of the windows that may be
released only (``ldp.jobs.release.pool_windows``). An ``estimates.json`` folded before this rule (its pooled
estimate of every window) has other settings: the next fold decodes again, and until then it is not shown."""


def release_settings(specs: Mapping[str, CollectionSpec]) -> dict[str, dict[str, Any]]:
    """Every metric's release thresholds, ``{"<spec fingerprint>/<metric>": {min_reports, min_z, pooled}}``: part
    of the fold's settings, so a change (which moves no fingerprint) decodes again, and the dashboard can tell an
    ``estimates.json`` made under other thresholds (or another pooling rule, :data:`POOLED_RULE`)."""
    return {f"{fp}/{name}": {**spec.release_for(name).to_dict(), "pooled": POOLED_RULE}
            for fp, spec in sorted(specs.items()) for name in sorted(spec.metrics)}


def metric_entry(spec: CollectionSpec, m: MetricSpec, *, n: int, rejected: Mapping[str, int]) -> dict[str, Any]:
    """A metric's entry before decoding: its spec fields, ``n`` reports, no rows, no windows."""
    return {"key": None, "metric": m.name, "description": m.description, "protocol": m.protocol,
            "params_fingerprint": m.params_fingerprint, "spec": spec.name, "n": n,
            "rejected": dict(sorted(rejected.items())), "privacy": privacy_entry(spec, m), "confidence": None,
            "kind": None, "rows": [], "detected": None, "notes": [], "error": None, "quantiles": None,
            "release": release_info(spec.release_for(m.name), n, pooling=Pooling((), 0)), "window": "all",
            "window_seconds": spec.window_seconds, "latest": None, "window_n": {}, "future_reports": 0,
            "windows": []}


def estimate_rows(est: Any) -> dict[str, Any]:
    """Any decoder's result as ``kind`` (counts, mean or multi), ``rows`` of item, estimate, std_error,
    ci_low, ci_high (and detected where the protocol detects), ``detected`` items (or ``None``) and notes."""
    from ldp.decoders.mean_results import MeanEstimate
    from ldp.decoders.multi import MultiEstimates

    if isinstance(est, MeanEstimate):
        return {"kind": "mean", "rows": [{"item": "mean", "estimate": est.mean, "std_error": est.std_error,
                                          "ci_low": est.ci_low, "ci_high": est.ci_high}],
                "detected": None, "notes": list(est.notes)}
    if isinstance(est, MultiEstimates):
        rows = [{"item": f"{r.pop('attribute')}: {r.pop('item')}", **r} for r in est.rows()]
        notes = [f"{name}: {n}" for name, e in est.items() for n in e.notes]
        return {"kind": "multi", "rows": rows, "detected": None, "notes": notes}
    rows = [{"item": str(r["item"]), "estimate": r["count"], "std_error": r["std_error"], "ci_low": r["ci_low"],
             "ci_high": r["ci_high"], **({"detected": bool(r["detected"])} if "detected" in r else {})}
            for r in est.to_dicts()]
    detected = [r["item"] for r in rows if r.get("detected")] if "detected" in est.extra else None
    return {"kind": "counts", "rows": rows, "detected": detected, "notes": list(est.notes)}


def summary_quantiles(est: Any) -> dict[str, Any] | None:
    """The estimate's own summary quantiles (its ``summary_quantiles()`` hook: p50 and p95 with CIs for the
    histogram protocols) as plain JSON, else ``None``. Taken before items are withheld: a quantile is the whole
    metric's, as a mean is (only ``min_reports`` applies to it)."""
    ask = getattr(est, "summary_quantiles", None)
    table = ask() if ask is not None else None
    return None if table is None else table.to_dict()


def poisoning(agg: Aggregate, candidates: Sequence[str] | None = None) -> dict[str, Any] | None:
    """The poisoning evidence of one aggregate (:func:`ldp.jobs.poisoning.evidence_summary`: its totals and the
    per-report statistics its fold kept), ``None`` for an empty aggregate. With the metric's ``candidates`` (the
    spec's), RAPPOR's candidates' own pairs are tested too, as ``ldp decode`` tests them
    (:func:`ldp.jobs.rappor_poisoning.candidate_evidence_summary`)."""
    from ldp.jobs.poisoning import evidence_summary

    if candidates and hasattr(agg, "pair_bins"):
        from ldp.jobs.rappor_poisoning import candidate_evidence_summary

        return candidate_evidence_summary(agg, candidates)
    return evidence_summary(agg)


def _spec_candidates(spec: CollectionSpec, m: MetricSpec) -> list[str] | None:
    """The metric's candidates from the spec, ``None`` when it has none or they cannot be read here (a URL)."""
    from ldp.jobs.decode import load_candidates

    try:
        return load_candidates(spec, m.name)
    except ValueError:
        return None


def _decode(agg: Aggregate, spec: CollectionSpec, m: MetricSpec, confidence: float, alpha: float,
            pooling: Pooling | None = None) -> dict[str, Any]:
    """``kind``, ``rows``, ``detected``, ``notes``, ``confidence``, ``error`` and ``release`` of one aggregate,
    decoded as ``ldp decode`` does and released by the metric's thresholds (:mod:`ldp.jobs.release`: only what
    they let out is kept; under ``min_reports`` nothing is decoded); a metric that cannot be decoded (no
    candidate dictionary, say) says why in ``error``. ``pooling``: the pooled view's windows (``agg`` is their
    merge), named in ``release``."""
    from ldp.errors import error_text
    from ldp.jobs.decode import decode_aggregate, load_candidates

    policy = spec.release_for(m.name)
    out: dict[str, Any] = {"confidence": None, "kind": None, "rows": [], "detected": None, "notes": [], "error": None,
                           "release": release(None, policy, agg.n, pooling=pooling).to_dict(),
                           "poisoning": poisoning(agg, _spec_candidates(spec, m)), "quantiles": None}
    if not out["release"]["released"]:
        return out
    try:
        est = decode_aggregate(agg, load_candidates(spec, m.name), confidence=confidence, alpha=alpha)
    except (ValueError, ArithmeticError) as exc:
        logger.warning("fold: cannot decode %s (%d reports): %s", m.name, agg.n, error_text(exc))
        out["error"] = error_text(exc)
        return out
    shown = release(est, policy, agg.n, pooling=pooling)
    out.update(estimate_rows(shown.estimates), release=shown.to_dict(), quantiles=summary_quantiles(est))
    out["confidence"] = confidence
    return out


def decode_metrics(agg_dir: Path, specs: Mapping[str, CollectionSpec], aggregates: Mapping[str, Mapping[str, Any]],
                   previous: Sequence[Mapping[str, Any]] | None, *, confidence: float, alpha: float, keep: int,
                   now: datetime | None = None, central: Mapping[tuple[str, str], Mapping[str, Any]] | None = None
                   ) -> list[dict[str, Any]]:
    """One entry per metric (and parameters) of the job's per-window aggregates (``aggregates``: the job
    summary's, name -> info), then one with no reports per spec metric without an aggregate. ``previous``:
    the metric entries of the last fold (same settings), whose windows are reused when their ``n`` did not
    change; the pooled estimate is reused when no window changed. ``central``: per (metric, params fingerprint)
    the central target's decisions (:func:`ldp.ingest.central.decide`): its ``withheld`` windows are served
    with their reason only, and the pooled estimate merges its ``served`` windows only (all when ``None``)."""
    now = now or datetime.now(UTC)
    groups: dict[tuple[str, str], dict[int | None, str]] = {}
    for name in aggregates:
        metric, fp, window = parse_key_name(name)
        groups.setdefault((metric, fp), {})[window] = name
    before = {(e["metric"], e["params_fingerprint"]): e for e in previous or ()}
    entries = [_metric_with_windows(agg_dir, specs, key, names, aggregates, before.get(key), confidence, alpha,
                                    keep, now, (central or {}).get(key)) for key, names in sorted(groups.items())]
    seen = {(e["metric"], e["params_fingerprint"]) for e in entries}
    for spec in specs.values():
        for m in spec.metrics.values():
            if (m.name, m.params_fingerprint) not in seen and spec.envelope_metric(m.name) is not None:
                seen.add((m.name, m.params_fingerprint))
                entries.append(metric_entry(spec, m, n=0, rejected={}))
    return sorted(entries, key=lambda e: (e["metric"], e["params_fingerprint"]))


def _metric_with_windows(agg_dir: Path, specs: Mapping[str, CollectionSpec], key: tuple[str, str],
                         names: Mapping[int | None, str], info: Mapping[str, Mapping[str, Any]],
                         old: Mapping[str, Any] | None, confidence: float, alpha: float, keep: int,
                         now: datetime, central: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The entry of metric and parameters ``key`` from its per-window aggregates ``names`` (``None``: a job made
    without windows): its ``keep`` latest windows that have started (:func:`_window_entries`) and its pooled view
    (:func:`_pooled_view`), each reused from ``old`` (the last fold's entry) where nothing changed."""
    from ldp.jobs.decode import find_metric

    windows = sorted(w for w in names if w is not None)
    first = read_aggregate(agg_dir / f"{names[windows[-1] if windows else None]}{AGG_SUFFIX}")
    m = find_metric(first, specs, key[0])
    spec = next(s for s in specs.values() if s.metrics.get(m.name) is m)
    metric = _Metric(spec, m, agg_dir, names, windows, {str(w): int(info[names[w]]["n"]) for w in windows}, first)
    # a window that has not started yet (a device's clock ahead, or a forged report) is never the latest:
    # it would push the real windows out of the series; its reports count in the pooled view
    current = int(now.timestamp()) // spec.window_seconds
    started = [w for w in windows if w <= current]
    future = sum(metric.window_n[str(w)] for w in windows if w > current)
    kept = _window_entries(metric, started, current, keep, old, central, confidence, alpha)
    pooled = _pooled_view(metric, old, central, confidence, alpha)
    entry = metric_entry(spec, m, n=pooled["n"], rejected=pooled["rejected"])
    entry.update(pooled, key=f"{key[0]}.{key[1]}", latest=started[-1] if started else None,
                 window_n=metric.window_n, windows=kept, future_reports=future)
    if central is not None:
        entry["central"] = dict(central)
    return entry


@dataclass(frozen=True)
class _Metric:
    """One metric (and parameters) of a fold: its spec, its per-window aggregates in the job's folder (``names`` by
    window, ``windows`` sorted; ``None``: a job made without windows), each window's reports, and the latest
    aggregate (``first``), read once."""

    spec: CollectionSpec
    m: MetricSpec
    agg_dir: Path
    names: Mapping[int | None, str]
    windows: list[int]
    window_n: dict[str, int]
    first: Aggregate

    def read(self, w: int | None) -> Aggregate:
        """The aggregate of window ``w`` (the latest: the one read already)."""
        if w == (self.windows[-1] if self.windows else None):
            return self.first
        return read_aggregate(self.agg_dir / f"{self.names[w]}{AGG_SUFFIX}")


def _window_entries(metric: _Metric, started: list[int], current: int, keep: int, old: Mapping[str, Any] | None,
                    central: Mapping[str, Any] | None, confidence: float, alpha: float) -> list[dict[str, Any]]:
    """The ``keep`` latest ``started`` windows' entries: held back with their reason when the central target
    withholds them, the last fold's when their ``n`` did not change (and were neither an error nor the central
    target's), else decoded."""
    old_windows = {int(w["window"]): w for w in (old or {}).get("windows", [])}
    kept = []
    for w in started:
        if w <= started[-1] - keep:
            continue
        start, end = window_times(w, metric.spec.window_seconds)
        prev = old_windows.get(w)
        held = (central or {}).get("withheld", {}).get(str(w))
        n = metric.window_n[str(w)]
        if held is not None:
            entry = {"key": metric.names[w], "n": n, "rejected": {}, **_held(held, n)}
        elif prev is not None and prev.get("n") == n and not prev.get("error") and \
                not (prev.get("release") or {}).get("central"):
            entry = dict(prev)
        else:
            agg = metric.read(w)
            entry = {"key": metric.names[w], "n": agg.n, "rejected": dict(sorted(agg.rejected.items())),
                     **_decode(agg, metric.spec, metric.m, confidence, alpha)}
        entry.update(window=w, start=start, end=end, open=w == current)
        kept.append({k: entry.get(k) for k in WINDOW_FIELDS})
    return kept


def _pooled_view(metric: _Metric, old: Mapping[str, Any] | None, central: Mapping[str, Any] | None,
                 confidence: float, alpha: float) -> dict[str, Any]:
    """The pooled view: the merge of the windows that may be released (each of min_reports reports of its own and,
    under a central target, served by it; ldp.jobs.release.pool_windows), the others left out and named; or the
    one aggregate of a job made without windows. The last fold's when no window changed."""
    spec, m, windows, window_n = metric.spec, metric.m, metric.windows, metric.window_n
    held_back: dict[int | None, str] | None = None
    if central is not None and central.get("served") is not None:
        served, reasons = set(central["served"]), central.get("withheld") or {}
        later = f"{WITHHELD}: not decided yet (the window had not started at the fold)"
        held_back = {w: str(reasons.get(str(w)) or later) for w in windows if w not in served}
    counts: dict[int | None, int] = {w: window_n[str(w)] for w in windows} if windows else {None: metric.first.n}
    pooling = pool_windows(counts, spec.release_for(m.name), held=held_back)
    if old is not None and old.get("window_n") == window_n and not old.get("error") and windows and \
            "left_out" in (old.get("release") or {}) and \
            (old.get("central") or {}).get("served") == (None if central is None else central.get("served")):
        return {k: old.get(k) for k in ("n", "rejected", "confidence", "kind", "rows", "detected", "notes", "error",
                                         "release", "poisoning", "quantiles")}
    if pooling.empty:
        state = release(None, spec.release_for(m.name), 0, pooling=pooling).to_dict()
        if any(e["reason"].startswith(WITHHELD) for e in pooling.left_out):  # the central target's words first
            state.update(central=True, reason=f"{WITHHELD}: no window released yet — {pooling.text()}")
            state["text"] = state["reason"]
        return {"n": 0, "rejected": {}, **_held("", 0), "release": state}
    total = merge_all(metric.read(w) for w in pooling.pooled)
    return {"n": total.n, "rejected": dict(sorted(total.rejected.items())),
            **_decode(total, spec, m, confidence, alpha, pooling)}


def _held(reason: str, n: int) -> dict[str, Any]:
    """The decoded fields of a window (or pooled view) the central target holds back: its reason, nothing else
    (not even the poisoning check, which is computed from its reports)."""
    return {"confidence": None, "kind": None, "rows": [], "detected": None, "notes": [], "error": None,
            "poisoning": None, "quantiles": None,
            "release": {"applied": True, "min_reports": None, "min_z": None, "n": n, "released": False,
                        "withheld_items": None, "reason": reason, "text": reason, "central": True}}


def window_entry_for(metric: Mapping[str, Any], window: int | str) -> dict[str, Any]:
    """``metric``'s entry (of ``estimates.json``) for one window: an index, ``"latest"`` or ``"all"`` (the
    pooled estimate). A window with no reports has ``n`` 0; one with reports but older than the windows kept
    has its ``n`` and an ``error`` saying how to decode it."""
    common = {k: v for k, v in metric.items()
              if k not in WINDOW_FIELDS and k not in ("windows", "window_n", "future_reports")}
    if window == "all":
        return {**common, **{k: metric.get(k) for k in WINDOW_FIELDS}, "window": "all"}
    kept = {int(w["window"]): w for w in metric.get("windows") or []}
    if window == "latest":
        latest = metric.get("latest")
        if latest is None:
            return {**common, **_empty(None, metric)}
        window = int(latest)
    if not isinstance(window, int):
        raise ValueError(f"a window is an index, 'latest' or 'all', got {window!r}")
    if window in kept:
        return {**common, **kept[window]}
    entry = {**common, **_empty(window, metric)}
    n = (metric.get("window_n") or {}).get(str(window))
    if n:
        entry["n"] = n
        latest = metric.get("latest")
        entry["error"] = (f"window {window} had not started at the last fold (a device's clock ahead?): its "
                          "reports count in the pooled view only" if latest is None or window > latest else
                          f"window {window} is older than the {len(kept)} latest windows kept in estimates.json: "
                          f"decode it with ldp decode JOB --window {window}")
    return entry


def _empty(window: int | None, metric: Mapping[str, Any]) -> dict[str, Any]:
    seconds = metric.get("window_seconds")
    start, end = window_times(window, seconds) if window is not None and isinstance(seconds, int) else (None, None)
    return {"window": window, "start": start, "end": end, "open": None, "key": None, "n": 0, "rejected": {},
            "confidence": None, "kind": None, "rows": [], "detected": None, "notes": [], "error": None,
            "release": None, "poisoning": None, "quantiles": None}
