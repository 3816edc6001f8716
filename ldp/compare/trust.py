"""Trust models side by side (issue 71, item 7): the standard error of one count at the same central ε against
whoever analyses the data, when the guarantee rests on no one (local), on an honest shuffler (shuffle), on one of
two non-colluding aggregators (two-aggregator, Prio3 with central noise), or on that plus local noise that holds
even if both aggregators collude (two-aggregator + local).

n users each hold one of ``d`` values; the count estimated is one value's, held by ``count`` users (0 by default:
the noise floor, which the other users' reports set). For each model, the formula and, with :func:`simulate`, the
standard deviation of the estimates over simulated collections:

* **local** — the best frequency oracle of the registry at ε (:func:`ldp.plan.oracles.frequency_oracles`), its
  exact ``count_variance``; at ε = 1, n = 10⁶ it is about 1,919 (``n·4e^ε/(e^ε − 1)²``, the optimal oracles').
* **shuffle** — k-ary randomized response at the largest ε₀ whose shuffled reports give the central ε (δ) against
  the analyst (:func:`ldp.privacy.shuffle.shuffled_epsilon` with GRR's exact channel structure, found by
  bisection); its ``count_variance`` at ε₀. When no ε₀ > ε is amplified to ε (a large domain at small n), ε₀ = ε.
* **two-aggregator** — the exact counts (Prio3Histogram sums one-hot vectors), plus each aggregator's discrete
  Laplace of scale ``Δ₁/ε`` (Δ₁ = 2: one device's report replaced) on its share (:mod:`ldp.privacy.share_noise`):
  variance ``2·Var(DLap(2/ε))``, about 15.7 at ε = 1 (standard error about 4), whatever n.
* **two-aggregator + local** — GRR at a local ε_L on the device (default: the shuffle model's ε₀, the same
  exposure of a report to everyone), then the same central noise on the histogram of reports, debiased:
  ``Var_GRR(ε_L) + 2·Var(DLap(2/ε))/(keep − other)²``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["TrustRow", "largest_at_most", "trust_table", "shuffle_epsilon0", "simulate", "MODELS"]

MODELS = ("local", "shuffle", "two-aggregator", "two-aggregator + local")
SENSITIVITY = 2
"""L1 sensitivity of a one-hot histogram when one device's report is replaced by another."""


@dataclass(frozen=True)
class TrustRow:
    """One model's figures: the central ``epsilon`` (δ) against the analyst, the ``local_epsilon`` each report
    keeps against everyone else (``None``: none, the aggregators see nothing but each alone learns nothing of a
    report), the ``protocol`` on the device, and the ``standard_error`` of one count (the formula's)."""

    model: str
    epsilon: float
    delta: float
    local_epsilon: float | None
    protocol: str
    standard_error: float
    trusts: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _grr(epsilon: float, d: int) -> Any:
    from ldp.encoders.randomized_response import GRRParams

    return GRRParams(epsilon, d)


def shuffle_epsilon0(epsilon: float, n: int, d: int, delta: float = 1e-8, hi: float = 30.0,
                     rel: float = 1e-4) -> float:
    """The largest ε₀ (to ``rel``) at which n shuffled GRR reports over d values are (ε, δ)-DP against the analyst:
    :func:`largest_at_most` on :func:`~ldp.privacy.shuffle.shuffled_epsilon`, which rises with ε₀; ε itself when no
    larger ε₀ is amplified to ε."""
    from ldp.privacy.shuffle import shuffled_epsilon

    def central(eps0: float) -> float:
        return shuffled_epsilon(eps0, n, delta, _grr(eps0, d).shuffle_structure).epsilon

    if central(epsilon * (1 + rel)) > epsilon:
        return epsilon
    return largest_at_most(central, epsilon, epsilon, hi, rel)


def largest_at_most(f: Callable[[float], float], target: float, lo: float, hi: float, rel: float) -> float:
    """The largest ``x`` in ``[lo, hi)`` with ``f(x) <= target``, to ``rel`` (the true one within ``[x, x(1 + rel)]``),
    for ``f`` positive and non-decreasing with ``f(lo) <= target`` and ``f(hi) > target`` (``hi`` itself is never
    evaluated, ``0 < lo``). The bracket ``f(lo) <= target < f(hi)`` is kept throughout: split at its geometric
    mean until both ends have been evaluated, then narrowed by regula falsi on ``ln f`` (a shuffle figure grows
    about exponentially in ε₀), Illinois variant (Dowell and Jarratt, BIT 11, 1971: the value at an end kept twice
    in a row is halved), each point at least half the tolerance inside the bracket, and split again after any step
    that did not halve it: at most two evaluations of ``f`` (each a shuffle figure) per halving whatever ``f`` is,
    and about 0.36 of a bisection's on a figure growing exponentially. (Splitting only after two such steps in a row
    took three per halving where ``ln f`` bends at the root, e.g. a kink from slope 2 to 10: 62 evaluations where a
    bisection takes 29.)"""
    def g(x: float) -> float:  # ln f − ln target: near linear where f grows about exponentially (a shuffle figure)
        return math.log(max(f(x), 1e-300) / target)

    flo: float = g(lo)
    fhi: float | None = None  # g(hi), once evaluated
    kept, poor = 0, False  # kept: +1 the last step kept hi, -1 it kept lo; poor: the last step did not halve
    while hi - lo > rel * lo:
        width, pad = hi - lo, 0.5 * rel * lo
        if fhi is None or poor:  # bisect, geometrically (lo > 0)
            x, kept = math.sqrt(lo * hi), 0
        else:
            x = min(max(lo - flo * width / (fhi - flo), lo + pad), hi - pad)
        fx = g(x)
        if fx <= 0:
            lo, flo = x, fx
            fhi = fhi / 2 if kept == 1 and fhi is not None else fhi
            kept = 1
        else:
            hi, fhi = x, fx
            flo = flo / 2 if kept == -1 else flo
            kept = -1
        poor = hi - lo > width / 2
    return lo


def trust_table(n: int, d: int, epsilon: float, delta: float = 1e-8, count: float = 0.0,
                local_epsilon: float | None = None) -> list[TrustRow]:
    """The four models' rows (module docstring) for one count held by ``count`` of ``n`` users over ``d`` values,
    at central ``epsilon`` (``delta`` for the shuffle model); ``local_epsilon``: the device's ε inside the
    two-aggregator mode (default: the shuffle model's ε₀)."""
    from ldp.plan.frequency import count_variance, default_params
    from ldp.plan.oracles import frequency_oracles
    from ldp.privacy.share_noise import ShareNoise

    if isinstance(n, bool) or not isinstance(n, int) or n < 2 or isinstance(d, bool) or not isinstance(d, int) \
            or d < 2:
        raise ValueError(f"n and d must be ints >= 2, got n={n!r}, d={d!r}")
    best = min(((p, count_variance(default_params(p, epsilon, d), n, count, d)) for p in frequency_oracles(d)),
               key=lambda pv: pv[1])
    eps0 = shuffle_epsilon0(epsilon, n, d, delta)
    shuffle_var = count_variance(_grr(eps0, d), n, count, d)
    central = 2 * ShareNoise.laplace(epsilon, SENSITIVITY).count_variance
    eps_l = eps0 if local_epsilon is None else float(local_epsilon)
    keep, other = _grr(eps_l, d).p, _grr(eps_l, d).q
    inside = count_variance(_grr(eps_l, d), n, count, d) + central / (keep - other) ** 2
    return [
        TrustRow("local", epsilon, 0.0, epsilon, best[0], math.sqrt(best[1]), "no one"),
        TrustRow("shuffle", epsilon, delta, eps0, "grr", math.sqrt(shuffle_var), "the shuffler"),
        TrustRow("two-aggregator", epsilon, 0.0, None, "prio3-histogram", math.sqrt(central),
                 "one of two aggregators"),
        TrustRow("two-aggregator + local", epsilon, 0.0, eps_l, "grr in prio3-histogram", math.sqrt(inside),
                 "one of two aggregators (ε_L against both)"),
    ]


def simulate(rows: list[TrustRow], n: int, d: int, count: int = 0, repeats: int = 200, seed: int = 0
             ) -> dict[str, float]:
    """The standard deviation of each model's estimate of the count over ``repeats`` simulated collections: exact
    aggregate-level draws of the local oracles (their ``simulate``), exact discrete Laplace draws for the
    aggregators' noise (a seeded generator: simulation only)."""
    import random

    import numpy as np

    from ldp.plan.frequency import default_params
    from ldp.privacy.share_noise import ShareNoise
    from ldp.protocols import get_protocol

    rng, noise_rng = np.random.default_rng(seed), random.Random(seed)
    truth = np.full(d, (n - count) // (d - 1), dtype=np.int64)
    truth[0] = count
    truth[1] += n - int(truth.sum())
    by = {r.model: r for r in rows}

    def local_estimate(protocol: str, eps: float) -> Callable[[], float]:
        params = default_params(protocol, eps, d)
        agg = get_protocol(protocol).aggregate_type
        return lambda: float(agg.simulate_estimates(params, truth, rng)[0][0])

    noise = ShareNoise.laplace(by["two-aggregator"].epsilon, SENSITIVITY)
    eps_l = by["two-aggregator + local"].local_epsilon or 1.0
    grr = get_protocol("grr").aggregate_type
    grr_params = _grr(eps_l, d)
    keep, other = grr_params.p, grr_params.q

    def inside() -> float:
        reported = grr.simulate(grr_params, truth, rng).counts[0]  # the histogram of reports, item 0
        noisy = float(reported) + noise.draw(noise_rng) + noise.draw(noise_rng)
        return (noisy - n * other) / (keep - other)

    draws: dict[str, Callable[[], float]] = {
        "local": local_estimate(by["local"].protocol, by["local"].epsilon),
        "shuffle": local_estimate("grr", by["shuffle"].local_epsilon or by["shuffle"].epsilon),
        "two-aggregator": lambda: float(count + noise.draw(noise_rng) + noise.draw(noise_rng)),
        "two-aggregator + local": inside,
    }
    out = {}
    for model, draw in draws.items():
        xs = np.array([draw() for _ in range(repeats)])
        out[model] = float(xs.std(ddof=1))
    return out
