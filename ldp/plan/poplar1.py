"""The discovery threshold of Poplar1's tree walk by formula (issue 89, item 4): how many holders a string needs to
be found with probability ``power`` (0.9 here), beside PEM's and SFP's from their own planners.

**Poplar1** (:mod:`ldp.prio.heavy_hitters`): a string is found when its prefix passes the threshold T at every one
of the m levels walked (and the ``max_candidates`` cap drops none of them). At level ℓ the collector reads
``c_ℓ + Z₀ + Z₁``, ``c_ℓ`` the count of the string's prefix (at least its own h holders), the two aggregators'
noises independent of each other and across levels, so

    P(found) = Π_ℓ P(c_ℓ + Z₀ + Z₁ ≥ T)        (:func:`find_probability`, exact without the cap),

and a string whose prefixes nobody else shares (``c_ℓ = h`` at every level) is found with probability
``P(Z₀ + Z₁ ≥ T − h)^m``. The **holders needed** (:func:`holders_needed`) is the smallest integer h for which that
reaches ``power``; prefixes shared with other strings only raise ``c_ℓ``, so it is an upper bound for any string
(the simulation, :mod:`ldp.simulation.poplar1`, measures the actual one). The noise's law is exact
(:class:`~ldp.prio.heavy_hitters.NoiseLaw`). It does not depend on n: the noise is central.

**PEM and SFP** (local ε, the same figure against everyone): their planners' minimum detectable count at the same
power, :func:`ldp.plan.plan` (:mod:`ldp.plan.pem`: the last round's test among its candidates, normal
approximation, ``f = z_{1−α/C}·SE₀ + z_power·SE(f)``; :mod:`ldp.plan.sfp`: the fragment test at one position, times
the positions), at ``alpha = 0.05``. PEM with an alphabet scores at most ``top_k·(|alphabet| + 1)`` candidates in
its last round (the alphabet and the padding byte), which :func:`local_holders_needed` passes as its ``C``.

**Shuffled** (an honest shuffler between the devices and the analysts): the same PEM or SFP reports at the largest
local ε₀ whose n shuffled reports are (ε, δ)-DP against the analysts (:func:`shuffled_local_epsilon`: the project's
amplification bound for any pure ε₀-LDP report, :func:`ldp.privacy.shuffle.shuffled_epsilon` without a channel
structure), then their planners at ε₀.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ldp.prio.heavy_hitters import (
    DEFAULT_ALPHA,
    NoiseLaw,
    WalkCalibration,
    calibrate,
    check_levels,
    recommended_threshold,
)

__all__ = ["find_probability", "holders_needed", "poplar1_discovery", "local_holders_needed", "discovery_table",
           "shuffled_local_epsilon", "DEFAULT_POWER"]

DEFAULT_POWER = 0.9
"""The probability of being found at which the holders needed are stated."""


def find_probability(law: NoiseLaw, threshold: float, counts: Iterable[float]) -> float:
    """``Π_ℓ P(c_ℓ + Z₀ + Z₁ ≥ T)`` over the levels' prefix counts ``counts`` (module docstring): the probability a
    walk with threshold T finds the string, the ``max_candidates`` cap aside."""
    import numpy as np

    c = np.asarray(list(counts), dtype=np.float64)
    return float(np.prod(law.tail(threshold - c)))


def holders_needed(calibration: WalkCalibration, threshold: float, power: float = DEFAULT_POWER) -> int:
    """The smallest integer h with ``P(Z₀ + Z₁ ≥ T − h)^m ≥ power`` (module docstring), m the calibration's
    levels: the holders a string whose prefixes nobody else shares needs to be found with probability ``power``."""
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    law = NoiseLaw.of(calibration.level_noise)
    per_level = power ** (1.0 / calibration.levels)
    lo, hi = 0, max(0, math.ceil(threshold)) + 2 * law.half_width + 1  # tail(T − hi) = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if law.tail(threshold - mid) >= per_level:
            hi = mid
        else:
            lo = mid + 1
    return lo


def poplar1_discovery(noise: str, bits: int, max_candidates: int, *, levels: Sequence[int] | None = None,
                      alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER,
                      threshold: float | None = None) -> dict[str, Any]:
    """Poplar1's walk at ``noise`` (``laplace:EPS`` or ``gaussian:EPS:DELTA``, the whole walk's guarantee) over
    ``bits``-bit strings: its calibration, T (:func:`~ldp.prio.heavy_hitters.recommended_threshold` unless given),
    the noise on one count and the holders needed (JSON-ready)."""
    walked = check_levels(levels, bits, max_candidates)
    cal = calibrate(noise, len(walked))
    t = recommended_threshold(cal, max_candidates, alpha) if threshold is None else threshold
    cost = cal.cost()
    return {"protocol": f"poplar1-{cal.mechanism}", "noise": noise, "bits": bits, "levels": len(walked),
            "max_candidates": max_candidates, "alpha": alpha, "threshold": t,
            "level_epsilon": cal.level_noise.epsilon, "rho_total": cal.rho_total,
            "walk_epsilon": cost.epsilon, "walk_delta": cost.delta,
            "aggregator_scale": cal.level_noise.spread, "count_sd": cal.count_sd,
            "power": power, "holders_needed": holders_needed(cal, t, power)}


def local_holders_needed(params: Any, n: int, *, power: float = DEFAULT_POWER, alpha: float = DEFAULT_ALPHA,
                         candidates: int | None = None) -> float:
    """The holders a string needs to be found with probability ``power`` among ``n`` users of a local protocol's
    ``params`` (PEM's, SFP's): :func:`ldp.plan.plan`'s minimum detectable count, its test among ``candidates``
    (default: the protocol's planner's; module docstring)."""
    from ldp.plan.frequency import plan

    return float(plan(params, n=int(n), domain_size=1 << 20, alpha=alpha, candidates=candidates,
                      power=power).min_detectable_count)


def _local_params(epsilon: float, length: int, top_k: int, alphabet: str | None) -> list[tuple[Any, int | None]]:
    """PEM (``PEMParams(ε, max_length=length, top_k=top_k)``, its last round among ``top_k·(|alphabet| + 1)``
    candidates with an alphabet) and SFP (``SfpParams(ε/2, ε/2, length=length)``, the budget split as
    ``docs/discovery.md`` compares them), each with the candidates of its test (``None``: its planner's)."""
    from ldp.encoders.pem import PEMParams
    from ldp.encoders.sfp import SfpParams

    cands = None if alphabet is None else top_k * (len(set(alphabet)) + 1)
    return [(PEMParams(epsilon, max_length=length, top_k=top_k), cands),
            (SfpParams(epsilon / 2, epsilon / 2, length=length), None)]


def shuffled_local_epsilon(epsilon: float, n: int, delta: float) -> float:
    """The largest ε₀ (to 1e-4 relative, from below) at which ``n`` shuffled reports of any ε₀-LDP randomizer are
    (ε, δ)-DP against the analysts: :func:`ldp.compare.trust.largest_at_most` on
    :func:`ldp.privacy.shuffle.shuffled_epsilon` (generic: no channel structure), which rises with ε₀."""
    from ldp.compare.trust import largest_at_most
    from ldp.privacy.shuffle import shuffled_epsilon

    return largest_at_most(lambda e0: shuffled_epsilon(e0, int(n), delta).epsilon, epsilon, epsilon, 30.0, 1e-4)


def discovery_table(ns: Iterable[int], epsilons: Iterable[float], *, bits: int = 64, delta: float = 1e-8,
                    max_candidates: int | Any = 4096, power: float = DEFAULT_POWER, pem_top_k: int = 32,
                    alphabet: str | None = None) -> list[dict[str, Any]]:
    """Holders needed by formula for every ``(n, ε)``: Poplar1 with ``gaussian:ε:delta`` and ``laplace:ε`` over
    ``bits``-bit strings (``max_candidates`` an int or a function of n), PEM and SFP at local ε and shuffled (at
    :func:`shuffled_local_epsilon` of ε and ``delta``) over strings of ``bits // 8`` bytes (symbols)."""
    rows = []
    for n in ns:
        cap = max_candidates(n) if callable(max_candidates) else max_candidates
        for eps in epsilons:
            for noise in (f"gaussian:{eps:g}:{delta:g}", f"laplace:{eps:g}"):
                row = poplar1_discovery(noise, bits, cap, power=power)
                rows.append({"n": int(n), "epsilon": float(eps), **row})
            shuffled = shuffled_local_epsilon(eps, n, delta)
            for local, suffix in ((eps, ""), (shuffled, "-shuffled")):
                for params, cands in _local_params(local, bits // 8, pem_top_k, alphabet):
                    h = local_holders_needed(params, n, power=power, candidates=cands)
                    rows.append({"n": int(n), "epsilon": float(eps), "protocol": params.protocol + suffix,
                                 "local_epsilon": local, "power": power, "holders_needed": h})
    return rows
