"""The planner for RAPPOR with unknown strings (``rappor-ngrams``): a string's standard error and the share of
users it needs to be discovered, as functions of n, ε and the string length (``max_length``).

Discovery (:mod:`ldp.decoders.rappor_ngrams_discovery`) finds a string only when every one of its tests
passes; the planner models each as the decoder runs it, with the normal approximation and the RAPPOR
least-squares variance (:func:`ldp.decoders.rappor_decode.exact_count_covariance`, through
:func:`ldp.plan.count_variance`), the other users spread evenly over the other candidates:

1. **screen**, each of the ``P`` positions: the string's n-gram is one of the ``C_i`` possible n-grams
   (:func:`~ldp.decoders.rappor_ngrams_discovery.possible_grams`) in a RAPPOR collection of about ``2n/P``
   reports (each client reports two positions); it passes when ``ĉ > z_{1−gram_alpha/C_i}·SE₀``
   (Bonferroni: at least as strict as the decoder's Benjamini–Hochberg);
2. **pairs**, each of the ``P(P−1)/2`` position pairs, seen by about ``N = n/(P(P−1)/2)`` clients: the
   joint cell ``π_uv`` passes when ``π̂_uv > z_{1−pair_alpha/K}·SE₀`` with ``K = max_grams²`` (the most
   tested cells). Its variance is that of the moment estimator ``mean(ψ_u·ψ_v)`` over the pair's clients,
   ``ψ`` the per-report unbiased indicator of the least squares (``Var ψ = w = Var[ĉ]/N``):
   ``Var[π̂] = (w_a·w_b + s·(w_a + w_b + 1) − s²)/N`` at share ``s`` — an upper bound on the EM's (the
   maximum-likelihood fit is at least as efficient), so the plan errs on the safe side;
3. **strings**: the full-string RAPPOR decoded against ``candidates`` strings, ``ĉ > z_{1−alpha/C}·SE₀``.

A string at share ``s`` is found with probability about the product of its tests' ``Φ((f − z·SE₀)/SE(f))``
(the tests use mostly different reports); the detectable share is the smallest ``s`` where that product
reaches ``power`` (bisection). Not modelled: n-grams shared with other strings (they only help), the
``max_grams`` cap by estimate, the binomial split over positions and pairs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from statistics import NormalDist
from typing import Any, ClassVar

from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor_ngrams import ALPHABET, PLANNER_FULL_SHARE, RapporNgramsParams
from ldp.plan.planners import CountPlanner, CountVariance

__all__ = ["ngrams_default_params", "ngrams_count_variance", "ngrams_pass_probability", "ngrams_detectable_share",
           "ngrams_notes", "detectable_grid", "NgramsPlanner"]

def ngrams_default_params(epsilon: float, *, n: int = 2, max_length: int = 6, alphabet: str = ALPHABET,
                          full_share: float = PLANNER_FULL_SHARE) -> RapporNgramsParams:
    """The planner's parameters at ``epsilon`` (:meth:`RapporNgramsParams.for_epsilon`), shaped by the rest."""
    return RapporNgramsParams.for_epsilon(epsilon, n=n, max_length=max_length, alphabet=alphabet,
                                          full_share=full_share)


def ngrams_count_variance(params: RapporNgramsParams, n: float, count: float, candidates: int) -> float:
    """``Var[ĉ]`` of a string held by ``count`` of ``n`` users: the full-string RAPPOR over ``candidates``."""
    return RapporAggregate.count_variance(params.full, n, count, max(candidates, 2))


def _test(var: Callable[[float], float], z: float) -> Callable[[float], float]:
    """``f ↦ Pr[f̂ > z·SE₀]`` for an estimate of mean ``f`` and variance ``var(f)`` (normal approximation)."""
    threshold = z * math.sqrt(var(0.0))

    def passes(f: float) -> float:
        return NormalDist().cdf((f - threshold) / math.sqrt(max(var(f), 1e-300)))

    return passes


def _scaled(test: Callable[[float], float], reports: float, share: float) -> float:
    """A count test as a function of the share: ``test(share·reports)``."""
    return test(share * reports)


def _per_report(var: Callable[[float], float], reports: float, share: float) -> float:
    """``w``, the per-report variance of the count estimate at ``share`` (``Var[ĉ]/N``)."""
    return var(share * reports) / reports


def _z(alpha: float, tests: int) -> float:
    return NormalDist().inv_cdf(1.0 - alpha / max(tests, 1))


def _tests(params: RapporNgramsParams, n: float, *, alpha: float, gram_alpha: float, pair_alpha: float,
           max_grams: int, candidates: int) -> dict[str, Callable[[float], float]]:
    """Each test of discovery as ``share ↦ pass probability`` (module docstring)."""
    from ldp.decoders.rappor_ngrams_discovery import possible_grams

    positions = params.positions
    n_pos = 2.0 * n / positions
    n_pair = n / params.pairs
    tests: dict[str, Callable[[float], float]] = {}
    per_report: list[Callable[[float], float]] = []
    memo: dict[tuple[int, float], float] = {}  # each variance costs a C×C inverse; the tests share them
    for i in range(positions):
        c_i = len(possible_grams(params, i))

        def var(f: float, c: int = c_i) -> float:
            if (c, f) not in memo:
                memo[(c, f)] = RapporAggregate.count_variance(params.gram, n_pos, f, c)
            return memo[(c, f)]

        screen = _test(var, _z(gram_alpha, c_i))
        tests[f"screen {i}"] = functools.partial(_scaled, screen, n_pos)
        per_report.append(functools.partial(_per_report, var, n_pos))
    cells = max_grams ** 2
    for a in range(positions):
        for b in range(a + 1, positions):
            def pair_var(s: float, wa: Callable[[float], float] = per_report[a],
                         wb: Callable[[float], float] = per_report[b]) -> float:
                w_a, w_b = wa(s), wb(s)
                return (w_a * w_b + s * (w_a + w_b + 1.0) - s * s) / n_pair

            tests[f"pair {a},{b}"] = _test(pair_var, _z(pair_alpha, cells))
    full = _test(lambda f: ngrams_count_variance(params, n, f, candidates), _z(alpha, candidates))
    tests["string"] = functools.partial(_scaled, full, n)
    return tests


def ngrams_pass_probability(params: RapporNgramsParams, n: float, share: float, *, alpha: float = 0.05,
                            gram_alpha: float = 0.05, pair_alpha: float = 0.05, max_grams: int = 32,
                            candidates: int = 32) -> dict[str, float]:
    """Each test's pass probability for a string held by ``share`` of ``n`` users, and ``"found"``, their
    product. ``candidates``: the strings the final decode fits (its Bonferroni ``C``)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share}")
    tests = _tests(params, n, alpha=alpha, gram_alpha=gram_alpha, pair_alpha=pair_alpha, max_grams=max_grams,
                   candidates=candidates)
    out = {name: t(share) for name, t in tests.items()}
    out["found"] = math.prod(out.values())
    return out


def ngrams_detectable_share(params: RapporNgramsParams, n: float, *, power: float = 0.5, alpha: float = 0.05,
                            gram_alpha: float = 0.05, pair_alpha: float = 0.05, max_grams: int = 32,
                            candidates: int = 32) -> float:
    """The smallest share found with probability ``power`` (module docstring); ``inf`` if even 1 is not."""
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")
    tests = list(_tests(params, n, alpha=alpha, gram_alpha=gram_alpha, pair_alpha=pair_alpha, max_grams=max_grams,
                        candidates=candidates).values())

    def found(s: float) -> float:
        return math.prod(t(s) for t in tests)

    if found(1.0) < power:
        return math.inf
    low, high = 0.0, 1.0
    while high - low > 1e-3 * high:
        mid = (low + high) / 2
        low, high = (mid, high) if found(mid) < power else (low, mid)
    return high


def ngrams_notes(params: RapporNgramsParams, candidates: int, max_grams: int = 32) -> list[str]:
    """What the plan of a rappor-ngrams collection assumes."""
    return [f"discovery: the string's n-gram is screened at each of {params.positions} positions (~2n/"
            f"{params.positions} reports each), each of its {params.pairs} n-gram pairs tested among "
            f"{max_grams}² cells (~n/{params.pairs} clients each), then the full string among {candidates:,} "
            "candidates; found = all tests pass (their probabilities multiplied)",
            "the pair test's variance is the moment estimator's, an upper bound on the EM's; n-grams shared "
            "with other strings and the split over positions are not modelled"]


class NgramsPlanner(CountPlanner):
    """rappor-ngrams' answers to :func:`ldp.plan.plan`: a string is found when all its tests pass
    (:func:`ngrams_detectable_share`), not when its count estimate alone does (:func:`ngrams_notes`)."""

    params_type: ClassVar[type[RapporNgramsParams]] = RapporNgramsParams

    def min_detectable_count(self, params: RapporNgramsParams, n: float, domain_size: int, candidates: int, *,
                             alpha: float, power: float, f2: float | None,
                             variance: CountVariance) -> tuple[float, int]:
        """``n`` times the share found with probability ``power``, the full string among ``candidates``."""
        return n * ngrams_detectable_share(params, n, power=power, alpha=alpha, candidates=candidates), candidates

    def notes(self, params: RapporNgramsParams, candidates: int) -> list[str]:
        return ngrams_notes(params, candidates)


def detectable_grid(ns: Iterable[int], epsilons: Iterable[float], max_lengths: Iterable[int], *,
                    power: float = 0.5, alphabet: str = ALPHABET, **options: Any) -> list[dict[str, Any]]:
    """The share of users a string needs to be discovered (:func:`ngrams_detectable_share`) for every
    ``(n, ε, max_length)`` with the planner's default parameters over ``alphabet``; ``options``: the
    tests' (``alpha``, ``candidates``, ...)."""
    rows = []
    for length in max_lengths:
        for eps in epsilons:
            params = ngrams_default_params(float(eps), max_length=int(length), alphabet=alphabet)
            for n in ns:
                rows.append({"n": int(n), "epsilon": float(eps), "max_length": int(length),
                             "positions": params.positions,
                             "detectable_share": ngrams_detectable_share(params, int(n), power=power, **options)})
    return rows
