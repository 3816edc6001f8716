"""Release thresholds: what of a metric's estimates may be shown (the spec's ``release``, docs/client.md).

The one place the rule is applied. ``ldp decode``, the fold (``estimates.json``, from which ``ldp watch``, the
JSON API and the dashboard read) all call :func:`release` on the result objects the decoders return, and they and
``ldp merge --all-windows`` choose the windows of a pooled view with :func:`pool_windows`:

* a metric's window (or an aggregate made without windows) of fewer than ``min_reports`` reports is withheld whole:
  no estimate, only the reason, ``not enough reports yet — 37 of 100``; a pooled view sums the other windows only
  (below);
* of item estimates (frequencies, histograms, heavy hitters), each item whose estimate is below ``min_z``
  standard errors (``estimate / std_error < min_z``; an item without an estimate too) is withheld, name and value,
  and counted: ``12 items below 2 SE withheld``. A mean has no items: only ``min_reports`` applies to it.

**No view differences a withheld window out** (issue 57). ``min_reports`` is a rule per window: a window of a metric
is *releasable* when its own count ``n_w >= min_reports``. Every pooled view of a metric — all windows
(``ldp decode --window all``, the fold's ``"window": "all"`` entry that ``/v1/estimates?window=all`` and the
dashboard read), several window files decoded together (a range), ``ldp merge --all-windows`` — is the sum of its
releasable windows only (:func:`pool_windows`); the others are left out of the sum and named in the view's
``release`` (``left_out``: window, ``n``, reason). Were a withheld window W1 (30 of 100) pooled with a released W2
(200), the pooled view (230, released) minus W2's would be W1's exact counts. Now every released view is a sum of
releasable windows, so the difference of any two released views is a signed sum of releasable windows: no withheld
window can be recovered from released views. A left-out window's ``n`` is printed: the rule already prints it in
the window's own reason (``not enough reports yet — 30 of 100``), so naming it says nothing new.

``min_z`` is an item rule inside a released window and is not pooled this way: an item withheld in one window may be
released in a pooled view and in the other windows, whose difference is its estimate in that window. ``min_z``
keeps estimates indistinguishable from noise out of the tables; it hides no report (docs/ingest.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import numpy as np

from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.multi import MultiEstimates
from ldp.decoders.results import Estimates
from ldp.spec import CollectionSpec, Release

__all__ = ["LEFT_OUT", "NOT_RELEASED", "Pooling", "Released", "metric_policy", "pool_windows", "releasable",
           "release", "release_info", "withheld_mask", "z_scores"]

NOT_RELEASED = "not enough reports yet"
LEFT_OUT = "left out of the pooled view"
SHOWN_LEFT_OUT = 5
"""Left-out windows named in a view's ``text`` (all of them are in its ``left_out`` list)."""

Window: TypeAlias = int | None
"""A window index, or ``None`` for an aggregate made without windows (one unit: its count is all the rule sees)."""


def releasable(n: int, policy: Release) -> bool:
    """Whether a window (or one aggregate) of ``n`` reports may be released under ``policy``'s ``min_reports``."""
    return policy.min_reports is None or n >= policy.min_reports


def _order(w: Window) -> tuple[bool, int]:
    return w is not None, -1 if w is None else w


def _label(w: Window) -> str:
    return "(no window)" if w is None else str(w)


@dataclass(frozen=True)
class Pooling:
    """The windows a pooled view of a metric is made of (:func:`pool_windows`): ``pooled`` (in order), their ``n``,
    and ``left_out``: each window withheld, ``{"window", "n", "reason"}``, in order. ``applied=False``: every
    window pooled (``--no-release``, the data owner's view)."""

    pooled: tuple[Window, ...]
    n: int
    left_out: tuple[dict[str, Any], ...] = ()
    applied: bool = True

    @property
    def empty(self) -> bool:
        """Nothing pooled because every window was left out (``False`` when there was no window at all)."""
        return not self.pooled and bool(self.left_out)

    def text(self) -> str:
        """The windows left out, for people (empty when none): ``window 20000 left out of the pooled view (not
        enough reports yet — 30 of 100)``, or ``3 windows left out of the pooled view: 20000 (…), …``."""
        if not self.left_out:
            return ""
        named = [f"{_label(e['window'])} ({e['reason']})" for e in self.left_out[:SHOWN_LEFT_OUT]]
        if len(self.left_out) == 1:
            return f"window {_label(self.left_out[0]['window'])} {LEFT_OUT} ({self.left_out[0]['reason']})"
        more = len(self.left_out) - len(named)
        return (f"{len(self.left_out):,} windows {LEFT_OUT}: " + ", ".join(named)
                + (f" and {more:,} more (listed in left_out)" if more else ""))

    def to_dict(self) -> dict[str, Any]:
        """``pooled_windows`` (how many) and ``left_out`` (the list), as a pooled view's ``release`` holds them."""
        return {"pooled_windows": len(self.pooled), "left_out": [dict(e) for e in self.left_out]}


def pool_windows(counts: Mapping[Window, int], policy: Release, *, held: Mapping[Window, str] | None = None,
                 apply: bool = True) -> Pooling:
    """Which of a metric's windows (``counts``: window -> its own report count) a pooled view may sum: those of
    at least ``policy.min_reports`` reports, but for those ``held`` (window -> reason: the ingest service's central
    target) whatever their count. Every other window is left out, with its ``n`` and reason (``not enough reports
    yet — 30 of 100``, as its own view says). ``apply=False``: all of them (the data owner's view).

    Why per window: the pooled sum of a withheld window and released ones, released because the total passes
    ``min_reports``, minus the released windows' views, is the withheld window (the module docstring)."""
    order = sorted(counts, key=_order)
    if not apply:
        return Pooling(tuple(order), sum(int(counts[w]) for w in order), (), applied=False)
    pooled: list[Window] = []
    left: list[dict[str, Any]] = []
    for w in order:
        n = int(counts[w])
        reason = (held or {}).get(w)
        if reason is None and not releasable(n, policy):
            reason = f"{NOT_RELEASED} — {n:,} of {policy.min_reports:,}"
        if reason is None:
            pooled.append(w)
        else:
            left.append({"window": w, "n": n, "reason": reason})
    return Pooling(tuple(pooled), sum(int(counts[w]) for w in pooled), tuple(left))


def metric_policy(specs: Mapping[str, CollectionSpec], metric: str, fingerprint: str) -> Release:
    """The release thresholds of ``metric`` with parameters ``fingerprint`` among the spec versions ``specs``:
    those of the spec :func:`ldp.jobs.decode.find_metric` picks (the last version holding them), so ``ldp merge``
    and ``ldp decode`` apply the same. ``ValueError`` when no spec given has that metric with those parameters."""
    found = [s for s in specs.values() if (m := s.metrics.get(metric)) is not None and m.params_fingerprint ==
             fingerprint]
    if not found:
        raise ValueError(f"no metric {metric!r} with parameters {fingerprint} in the spec(s) given: its release "
                         "thresholds are unknown (pass the spec version its reports were made under)")
    return found[-1].release_for(metric)


def z_scores(count: Any, std_error: Any) -> np.ndarray:
    """``count / std_error`` per item: ±inf for a nonzero count with a zero standard error, 0 for 0/0, NaN
    where either is missing or the standard error is infinite or negative."""
    c = np.asarray(count, dtype=np.float64)
    se = np.asarray(std_error, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.where(se > 0, c / se, np.sign(c) * np.inf)
    z = np.where((se == 0) & (c == 0), 0.0, z)
    return np.where(np.isfinite(c) & np.isfinite(se) & (se >= 0), z, np.nan)


def withheld_mask(est: Estimates, min_z: float | None) -> np.ndarray:
    """``True`` for each item of ``est`` withheld at ``min_z`` (none when ``min_z`` is ``None``)."""
    if min_z is None:
        return np.zeros(len(est.items), dtype=bool)
    return ~(z_scores(est.count, est.std_error) >= min_z)  # NaN compares False: withheld


def _keep(est: Estimates, withheld: np.ndarray) -> Estimates:
    """``est`` without the withheld items (every per-item column cut alike)."""
    if not withheld.any():
        return est
    keep = np.flatnonzero(~withheld)
    size = len(est.items)
    extra = {k: (np.asarray(v)[keep] if np.ndim(v) == 1 and len(v) == size else v) for k, v in est.extra.items()}
    return replace(est, items=[est.items[i] for i in keep], count=np.asarray(est.count)[keep],
                   std_error=np.asarray(est.std_error)[keep], extra=extra)


def release_info(policy: Release, n: int, withheld_items: int = 0, *, applied: bool = True,
                 pooling: Pooling | None = None) -> dict[str, Any]:
    """The release state as plain JSON: the thresholds, ``n``, ``released`` (``False``: under ``min_reports``),
    ``withheld_items``, ``reason`` and ``text`` (the line people see; empty when nothing is withheld).

    A pooled view (``pooling``: its windows, :func:`pool_windows`; ``n`` is then their reports) also has
    ``pooled_windows`` and ``left_out``, and its ``text`` names the windows left out; when every window was left out
    it is not released (``not enough reports yet — no window has 100 reports: …``)."""
    enough = not applied or policy.min_reports is None or n >= policy.min_reports
    reason = None if enough else f"{NOT_RELEASED} — {n:,} of {policy.min_reports:,}"
    if applied and pooling is not None and pooling.empty:
        enough = False
        by_count = policy.min_reports is not None and all(e["reason"].startswith(NOT_RELEASED)
                                                          for e in pooling.left_out)
        head = f"{NOT_RELEASED} — no window has {policy.min_reports:,} reports of its own" if by_count else \
            "no window released yet"
        reason = f"{head}: {pooling.text()}"
    text = reason or ""
    if enough and withheld_items and policy.min_z is not None:
        text = f"{withheld_items:,} item{'s' if withheld_items != 1 else ''} below {policy.min_z:g} SE withheld"
    if enough and pooling is not None and pooling.left_out:
        text = "; ".join(t for t in (text, pooling.text()) if t)
    if not applied:
        text = "release thresholds not applied (--no-release): every estimate, for the data owner only"
    out = {"applied": applied, "min_reports": policy.min_reports, "min_z": policy.min_z, "n": n,
           "released": enough, "withheld_items": withheld_items if enough else None, "reason": reason, "text": text}
    return out if pooling is None else {**out, **pooling.to_dict()}


@dataclass(frozen=True)
class Released:
    """What :func:`release` lets out: ``estimates`` (``None`` when the metric is withheld whole, or was not
    decoded), and the state; ``released`` is ``False`` when the metric is under ``min_reports``."""

    estimates: Any
    policy: Release
    n: int
    withheld_items: int = 0
    applied: bool = True
    pooling: Pooling | None = field(default=None, compare=False)

    @property
    def released(self) -> bool:
        return bool(self.to_dict()["released"])

    def to_dict(self) -> dict[str, Any]:
        """:func:`release_info` of this result."""
        return release_info(self.policy, self.n, self.withheld_items, applied=self.applied, pooling=self.pooling)

    @property
    def text(self) -> str:
        return str(self.to_dict()["text"])


def release(est: Any, policy: Release, n: int, *, basis: Any = None, apply: bool = True,
            pooling: Pooling | None = None) -> Released:
    """``est`` (a decoder's result: :class:`Estimates`, :class:`MeanEstimate` or :class:`MultiEstimates`) as
    ``policy`` lets it out for ``n`` reports. ``est`` may be ``None`` (not decoded: withheld, or nothing to show).
    ``basis``: the estimate the z test reads, item for item (default ``est``; the raw estimate when ``est`` is
    post-processed). ``apply=False``: everything, marked as not applied (the data owner's view). ``pooling``: the
    windows ``est`` pools (:func:`pool_windows`; ``n`` is their reports): it is withheld when every window was left
    out, and its state names those left out. ``est`` must be the estimate of ``pooling.pooled`` alone: the caller
    merges those windows only."""
    if not apply:
        return Released(est, policy, n, 0, applied=False, pooling=pooling)
    if (policy.min_reports is not None and n < policy.min_reports) or (pooling is not None and pooling.empty):
        return Released(None, policy, n, pooling=pooling)
    if est is None or policy.min_z is None:
        return Released(est, policy, n, pooling=pooling)
    if isinstance(est, Estimates):
        mask = withheld_mask(est if basis is None else basis, policy.min_z)
        if mask.shape != (len(est.items),):
            raise ValueError(f"the basis has {mask.size} items, the estimates {len(est.items)}")
        return Released(_keep(est, mask), policy, n, int(mask.sum()), pooling=pooling)
    if isinstance(est, MultiEstimates):
        parts, count = {}, 0
        for name, part in est.items():
            one = release(part, Release(None, policy.min_z), n)
            parts[name] = one.estimates
            count += one.withheld_items
        return Released(MultiEstimates(parts), policy, n, count, pooling=pooling)
    if isinstance(est, MeanEstimate):
        return Released(est, policy, n, pooling=pooling)
    raise TypeError(f"no release rule for {type(est).__name__}")

