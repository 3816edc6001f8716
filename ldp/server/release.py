"""Release thresholds: what of a metric's estimates may be shown (the spec's ``release``, docs/client.md).

The one place the rule is applied. ``ldp decode``, the fold (``estimates.json``, from which ``ldp watch``, the
JSON API and the dashboard read) all call :func:`release` on the result objects the decoders return:

* a metric (one window, or the pooled data) of fewer than ``min_reports`` reports is withheld whole: no estimate,
  only the reason, ``not enough reports yet — 37 of 100``;
* of item estimates (frequencies, histograms, heavy hitters), each item whose estimate is below ``min_z``
  standard errors (``estimate / std_error < min_z``; an item without an estimate too) is withheld, name and value,
  and counted: ``12 items below 2 SE withheld``. A mean has no items: only ``min_reports`` applies to it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.multi import MultiEstimates
from ldp.decoders.results import Estimates
from ldp.spec import Release

__all__ = ["NOT_RELEASED", "Released", "release", "release_info", "withheld_mask", "z_scores"]

NOT_RELEASED = "not enough reports yet"


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


def release_info(policy: Release, n: int, withheld_items: int = 0, *, applied: bool = True) -> dict[str, Any]:
    """The release state as plain JSON: the thresholds, ``n``, ``released`` (``False``: under ``min_reports``),
    ``withheld_items``, ``reason`` and ``text`` (the line people see; empty when nothing is withheld)."""
    enough = not applied or policy.min_reports is None or n >= policy.min_reports
    reason = None if enough else f"{NOT_RELEASED} — {n:,} of {policy.min_reports:,}"
    text = reason or ""
    if enough and withheld_items and policy.min_z is not None:
        text = f"{withheld_items:,} item{'s' if withheld_items != 1 else ''} below {policy.min_z:g} SE withheld"
    if not applied:
        text = "release thresholds not applied (--no-release): every estimate, for the data owner only"
    return {"applied": applied, "min_reports": policy.min_reports, "min_z": policy.min_z, "n": n,
            "released": enough, "withheld_items": withheld_items if enough else None, "reason": reason, "text": text}


@dataclass(frozen=True)
class Released:
    """What :func:`release` lets out: ``estimates`` (``None`` when the metric is withheld whole, or was not
    decoded), and the state; ``released`` is ``False`` when the metric is under ``min_reports``."""

    estimates: Any
    policy: Release
    n: int
    withheld_items: int = 0
    applied: bool = True

    @property
    def released(self) -> bool:
        return bool(self.to_dict()["released"])

    def to_dict(self) -> dict[str, Any]:
        """:func:`release_info` of this result."""
        return release_info(self.policy, self.n, self.withheld_items, applied=self.applied)

    @property
    def text(self) -> str:
        return str(self.to_dict()["text"])


def release(est: Any, policy: Release, n: int, *, basis: Any = None, apply: bool = True) -> Released:
    """``est`` (a decoder's result: :class:`Estimates`, :class:`MeanEstimate` or :class:`MultiEstimates`) as
    ``policy`` lets it out for ``n`` reports. ``est`` may be ``None`` (not decoded: withheld, or nothing to show).
    ``basis``: the estimate the z test reads, item for item (default ``est``; the raw estimate when ``est`` is
    post-processed). ``apply=False``: everything, marked as not applied (the data owner's view)."""
    if not apply:
        return Released(est, policy, n, 0, applied=False)
    if policy.min_reports is not None and n < policy.min_reports:
        return Released(None, policy, n)
    if est is None or policy.min_z is None:
        return Released(est, policy, n)
    if isinstance(est, Estimates):
        mask = withheld_mask(est if basis is None else basis, policy.min_z)
        if mask.shape != (len(est.items),):
            raise ValueError(f"the basis has {mask.size} items, the estimates {len(est.items)}")
        return Released(_keep(est, mask), policy, n, int(mask.sum()))
    if isinstance(est, MultiEstimates):
        parts, count = {}, 0
        for name, part in est.items():
            one = release(part, Release(None, policy.min_z), n)
            parts[name] = one.estimates
            count += one.withheld_items
        return Released(MultiEstimates(parts), policy, n, count)
    if isinstance(est, MeanEstimate):
        return Released(est, policy, n)
    raise TypeError(f"no release rule for {type(est).__name__}")

