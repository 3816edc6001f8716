"""Check 3 of the conformance suite (:mod:`ldp.protocols.checks`), ``statistics``: a protocol's estimates are
unbiased and their variance is its exact formula's, along both simulation paths of :func:`ldp.simulation.accuracy`.

Per item, ``|mean − truth| ≤ z·σ/√T`` and the sample variance within the two-sided chi-square band
``[χ²_{a/2}(T−1), χ²_{1−a/2}(T−1)]/(T−1)`` of the exact variance σ² (``exact_variance``); ``z`` and ``a`` Bonferroni
over the items (:data:`~ldp.protocols.check_examples.ALPHA`). Params with a ``hash_seed`` are redrawn per collection
(their exact variance averages over the hash family); their collision noise is heavy-tailed, so their variance band
is ``z·√((μ₄ − s⁴)/T)``, the large-sample variance of a sample variance (Cramér 1946, ch. 27). What the simulated
users hold is the protocol's own answer: its params' :attr:`~ldp.encoders.base.ProtocolParams.population_kind`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import stats

from ldp.protocols.check_examples import ALPHA, SEED, examples_of
from ldp.protocols.registry import Protocol

__all__ = ["CANDIDATES", "TRIALS", "check_statistics"]

TRIALS = {"aggregate": (300, 2_000), "per_report": (100, 1_000)}
"""Simulated collections and users per collection, per simulation path."""
CANDIDATES = 3
"""Strings an open-domain protocol is simulated on (:func:`ldp.simulation.default_candidates`)."""


@dataclass(frozen=True)
class _Moments:
    """Per item: truth, mean and sample variance of ``trials`` estimates, exact variance; the fourth central
    moment when the estimates may be far from normal (else ``None``: the chi-square band applies)."""

    label: str
    truth: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    exact: np.ndarray
    trials: int
    fourth: np.ndarray | None = None


def _moments(label: str, res: Any) -> Iterator[_Moments]:
    """The moments of an accuracy result: counts, a mean, or one of either per attribute (``multi``)."""
    if hasattr(res, "attributes"):
        for name, part in res.attributes.items():
            yield from _moments(f"{label} attribute {name}", part)
    elif hasattr(res, "true_mean"):
        yield _Moments(label, np.array([res.true_mean]), np.array([res.mean_estimate]),
                       np.array([res.empirical_se**2]), np.array([res.exact_se**2]), res.trials)
    else:
        yield _Moments(label, np.asarray(res.true_count, float), res.mean_estimate, res.empirical_sd**2,
                       res.theoretical_sd**2, res.trials)


def _population(params: Any) -> Any:
    """What the simulated users hold, by the params'
    :attr:`~ldp.encoders.base.ProtocolParams.population_kind`: numbers uniform in ``[low, high]``
    (``"numbers"``), every attribute's default (``"attributes"``), else one of ``domain_size`` values or, for an
    open domain, of :data:`CANDIDATES` strings (``"counts"``)."""
    from ldp.simulation.collect import zipf
    from ldp.simulation.numeric import uniform_values

    kind = params.population_kind
    if kind == "numbers":
        return uniform_values(params.low, params.high)
    if kind == "attributes":
        return None
    return zipf(params.domain_size if params.domain_size is not None else CANDIDATES)


def _simulated(params: Any, method: str, trials: int, n: int, seed: int) -> Iterator[_Moments]:
    from ldp.simulation.collect import accuracy, from_counts

    label = f"{params!r} ({method}, {trials} collections of {n})"
    pop = _population(params)
    if "hash_seed" not in {f.name for f in dataclasses.fields(params)}:
        yield from _moments(label, accuracy(params, pop, n, trials=trials, method=method, rng=seed))
        return
    gen = np.random.default_rng(seed)
    fixed = from_counts(pop.counts(n, gen))
    seeds = gen.choice(1 << 24, trials, replace=False) << 6  # hash families far apart: no function shared
    runs = [accuracy(dataclasses.replace(params, hash_seed=int(s)), fixed, n, trials=1, method=method, rng=gen)
            for s in seeds]
    est = np.array([r.mean_estimate for r in runs])
    dev = est - est.mean(axis=0)
    yield _Moments(label + ", a hash_seed per collection", np.asarray(runs[0].true_count, float), est.mean(axis=0),
                   est.var(axis=0, ddof=1), runs[0].theoretical_sd**2, trials, (dev**4).mean(axis=0))


def _check_moments(m: _Moments, tests: int) -> None:
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * tests))
    a = ALPHA / tests
    t = m.trials
    lo, hi = stats.chi2.ppf(a / 2, t - 1) / (t - 1), stats.chi2.isf(a / 2, t - 1) / (t - 1)
    for i in range(m.truth.size):
        exact, truth, mean, var = m.exact[i], m.truth[i], m.mean[i], m.var[i]
        assert math.isfinite(exact) and exact > 0, f"{m.label}: item {i}: exact variance {exact} is not > 0"
        se = math.sqrt(exact / t)
        assert abs(mean - truth) <= z * se, (f"{m.label}: item {i}: the mean estimate {mean:.6g} is "
                                             f"{(mean - truth) / se:+.2f} standard errors from the truth {truth:.6g} "
                                             f"(allowed ±{z:.2f})")
        if m.fourth is None:
            assert lo <= var / exact <= hi, (f"{m.label}: item {i}: empirical / exact variance = {var / exact:.4f}, "
                                             f"outside the chi-square band [{lo:.4f}, {hi:.4f}]")
        else:
            se_var = math.sqrt(max(m.fourth[i] - var**2, 0.0) / t)
            assert abs(var - exact) <= z * se_var, (f"{m.label}: item {i}: empirical variance {var:.6g} is "
                                                    f"{(var - exact) / se_var:+.2f} standard errors from the exact "
                                                    f"{exact:.6g} (allowed ±{z:.2f})")


def check_statistics(proto: Protocol) -> None:
    """Estimates unbiased, their variance the exact formula's, along both simulation paths."""
    for k, p in enumerate(examples_of(proto)):
        for j, (method, (trials, n)) in enumerate(TRIALS.items()):
            found = list(_simulated(p, method, trials, n, SEED + 10 * k + j))
            tests = 2 * sum(m.truth.size for m in found)
            for m in found:
                _check_moments(m, tests)
