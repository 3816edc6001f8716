"""A device's central (ε, δ) over releases of noised aggregate shares (the two-aggregator mode's figures; issue 71,
item 4; per device, issue 84, item 5): each release a record with its ``noise`` (mechanism, ε, δ, scale,
sensitivity), composed by zero-concentrated DP (a pure ε-DP release is ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4;
a discrete Gaussian of parameter σ with L2 sensitivity Δ is Δ²/(2σ²)-zCDP, Canonne, Kamath & Steinke 2020, Thm. 14;
zCDP adds up) converted at δ by CKS Corollary 13, and by basic composition (ε and δ add up), the smaller ε kept.
Per device with k reports a window: Laplace ``k·ε`` (group privacy), Gaussian ``k²·ρ`` (the L2 change is k·Δ₂).
:mod:`ldp.aggregators.release` applies it to a task's releases; :mod:`ldp.prio.heavy_hitters` to a walk's levels.

Standard library only (``zcdp_epsilon`` of :mod:`ldp.privacy.central_noise`).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from ldp.privacy.central_noise import zcdp_epsilon
from ldp.privacy.cost import PrivacyCost

__all__ = ["DEFAULT_DELTA", "device_cost", "over_releases", "release_cost"]

DEFAULT_DELTA = 1e-9
"""The δ at which pure-ε releases over time are stated when the task's target gives none."""


def release_cost(rec: dict[str, Any]) -> PrivacyCost | None:
    """One release's central (ε, δ), from its record (``None``: released without noise)."""
    noise = rec.get("noise", {})
    if noise.get("mechanism", "none") == "none":
        return None
    return PrivacyCost(float(noise["epsilon"]), float(noise.get("delta") or 0.0))


def _rho(noise: dict[str, Any]) -> float:
    """ρ of one report's release: ε²/2 (pure ε, Bun & Steinke 2016 Prop. 1.4) or Δ₂²/(2σ²) (discrete Gaussian, CKS
    Thm. 14)."""
    if noise["mechanism"] == "laplace":
        return float(noise["epsilon"]) ** 2 / 2
    sigma2 = float(Fraction(noise["scale"]))
    return float(noise["sensitivity"]) ** 2 / (2 * sigma2)


def _k(reports_per_window: int | None) -> int:
    k = 1 if reports_per_window is None else reports_per_window
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"reports_per_window must be an integer >= 1 or None, got {reports_per_window!r}")
    return k


def _noise_cost(noise: dict[str, Any], k: int) -> PrivacyCost:
    """The release of ``noise`` for k reports of one device: ``(k·ε, 0)`` (Laplace) or
    ``(zcdp_epsilon(k²·ρ, δ), δ)`` (Gaussian, at the release's δ); the release's own (ε, δ) when k = 1."""
    eps, delta = float(noise["epsilon"]), float(noise.get("delta") or 0.0)
    if k == 1:
        return PrivacyCost(eps, delta)
    if noise["mechanism"] == "laplace":
        return PrivacyCost(k * eps, 0.0)
    return PrivacyCost(zcdp_epsilon(k * k * _rho(noise), delta), delta)


def device_cost(rec: dict[str, Any], reports_per_window: int | None = 1) -> PrivacyCost | None:
    """One release's central (ε, δ) for a device that sends up to ``reports_per_window`` (k) reports in the window
    (module docstring: Laplace k·ε; Gaussian the zCDP conversion of k²·ρ at the release's δ); ``None``: released
    without noise. ``None`` or 1 for k: :func:`release_cost`."""
    noise = rec.get("noise", {})
    if noise.get("mechanism", "none") == "none":
        return None
    return _noise_cost(noise, _k(reports_per_window))


def over_releases(records: Iterable[dict[str, Any]], delta: float = DEFAULT_DELTA,
                  reports_per_window: int | None = 1) -> PrivacyCost | None:
    """A device's central (ε, δ) over the releases ``records`` (module docstring), each counting
    ``reports_per_window`` (k) reports of the device (``None``: one); ``None`` when one of them has no noise
    (nothing is proven against the collector) or there are none. The smaller ε of basic composition (the
    releases' :func:`device_cost` summed, ε and δ) and zCDP (``k²·Σρ`` converted at ``delta``)."""
    k = _k(reports_per_window)
    noises = [r.get("noise", {}) for r in records]
    if not noises or any(n.get("mechanism", "none") == "none" for n in noises):
        return None
    costs = [_noise_cost(n, k) for n in noises]
    basic = PrivacyCost(sum(c.epsilon for c in costs), min(1.0, sum(c.delta for c in costs)))
    if len(noises) == 1:
        return basic
    zcdp = PrivacyCost(zcdp_epsilon(k * k * sum(_rho(n) for n in noises), delta), delta)
    return basic if basic.delta <= delta and basic.epsilon <= zcdp.epsilon else zcdp
