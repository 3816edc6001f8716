"""Check 3 of the conformance suite (:mod:`ldp.protocols.checks`), ``statistics``: a protocol's estimates are
unbiased, their variance is its exact formula's, and the planner's standard error is the simulated one, along both
simulation paths of :func:`ldp.simulation.accuracy` (the aggregate's exact law, ``Aggregate.simulate``; and every
report encoded by ``encode_batch`` and folded).

**The collections.** Each example is simulated at a truth the planner can state: ``c`` users hold the item
:attr:`~ldp.decoders.base.Aggregate.count_variance_item` and the others are spread evenly over the other ``d − 1``
values (``d`` the domain, or :data:`CANDIDATES` strings for an open domain), for protocols whose aggregate answers
:meth:`~ldp.decoders.base.Aggregate.count_variance`; a Zipf population otherwise; uniform numbers for a mean;
every attribute's default for ``multi`` (the params' :attr:`~ldp.encoders.base.ProtocolParams.population_kind`).
Params with a ``hash_seed`` are redrawn per collection (their exact variance averages over the hash family).

**The tests**, on every example, each able to fail:

1. *Pooled variance* (the powered test). Per collection ``t``, ``Q_t = mean_i ((θ̂_ti − θ_i)/σ_i)²`` over the
   items, ``σ_i²`` the exact variance; ``E[Q] = 1`` exactly when the estimates are unbiased and the formula is
   right, and ``E[Q] = 1/c`` when the formula is ``c`` times the true variance. The test is
   ``|Q̄ − 1| ≤ z·s/√T`` over the ``T`` collections of both paths (``s`` their sample SD; a normal test on a mean
   of ``T ≥`` thousands of independent draws). ``z`` gives a false alarm of at most :data:`POOLED_ALPHA` per
   protocol, shared by its examples. ``T`` is sized by a pilot run so that a formula off by
   :data:`VARIANCE_ERROR` (10 %, either way) fails with probability :data:`POWER`: the statistic then has
   ``|E[Z]| = 0.1·√T/s`` standard errors, so ``T = ((z + z_β)·s/0.1)²`` (``s`` first the pilot's, then the
   run's own: topped up, by :data:`TOP_UP_MARGIN` more than it asks, while it asks for more), capped at
   :data:`MAX_TRIALS` per path;
   the power reached is :func:`statistics_power`'s (``simulations/battery_power.py`` prints it for every
   protocol).
2. *Per item*, on each path: ``|mean − truth| ≤ z·σ/√T`` and the sample variance within the two-sided chi-square
   band ``[χ²_{a/2}(T−1), χ²_{1−a/2}(T−1)]/(T−1)`` of σ²; ``z`` and ``a`` Bonferroni over the items and paths
   (:data:`~ldp.protocols.check_examples.ALPHA`). Heavy-tailed estimates (a ``hash_seed`` per collection) use the
   band ``z·√((μ₄ − s⁴)/T)``, the large-sample variance of a sample variance (Cramér 1946, ch. 27).
3. *The planner*: for counts, ``count_variance(params, n, c, d)`` equals the simulation's exact variance of the
   planned item (relative 1e-9: for one report per user they are the same number; a protocol planned for several
   reports per user plans them through ``horizon_cost``, not here), and the planner's predicted standard error
   (:func:`ldp.plan.plan`) is the simulated one: within the chi-square band of the planned item's sample variance
   (where the planner takes the params: it refuses n-gram Bloom filters too small to plan discovery on). For a
   mean, the mean planner's standard error at the simulated users' numbers (:func:`ldp.plan.plan_mean`) is the
   exact one (relative 1e-9) and the simulated one (the chi-square band).

Nothing here is keyed by a protocol's name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import stats

from ldp.decoders.base import Aggregate
from ldp.protocols.check_examples import ALPHA, SEED, examples_of
from ldp.protocols.registry import Protocol

__all__ = ["CANDIDATES", "MAX_TRIALS", "PILOT", "POOLED_ALPHA", "POWER", "USERS", "VARIANCE_ERROR", "assert_passed",
           "check_statistics", "statistics_power"]

USERS = {"aggregate": 2_000, "per_report": 1_000}
"""Simulated users per collection, per simulation path."""
PILOT = {"aggregate": 100, "per_report": 100}
"""Collections of the pilot run that sizes the tested run (and its least number of collections per path)."""
MAX_TRIALS = 5_000
"""The most collections per path of one example."""
CANDIDATES = 3
"""Strings an open-domain protocol is simulated on (:func:`ldp.simulation.default_candidates`)."""
VARIANCE_ERROR = 0.10
"""The relative error of a variance formula the pooled test is sized to detect."""
POWER = 0.99
"""The probability the pooled test is sized to detect :data:`VARIANCE_ERROR` with."""
POOLED_ALPHA = 5e-5
"""False-alarm probability of the pooled variance tests of one protocol (shared by its examples). With the
per-item families (:data:`~ldp.protocols.check_examples.ALPHA` each) and the batch check's, a correct protocol
fails the suite with probability below 1e-4."""


@dataclass(frozen=True)
class _Moments:
    """Per item: truth, every collection's estimate, exact variance; whether the estimates may be far from normal
    (the fourth-moment band then)."""

    label: str
    truth: np.ndarray
    estimates: np.ndarray  # (T, items)
    exact: np.ndarray
    heavy: bool = False
    values: np.ndarray | None = None  # the users' numbers (a mean's simulation), for the mean planner

    @property
    def trials(self) -> int:
        return int(self.estimates.shape[0])

    def q(self) -> np.ndarray:
        """``Q_t``: each collection's mean squared standardized error over the items."""
        z = (self.estimates - self.truth) / np.sqrt(self.exact)
        out: np.ndarray = (z**2).mean(axis=1)
        return out


@dataclass(frozen=True)
class PowerRow:
    """One example's pooled variance test: what it measured and how sharp it is."""

    params: str
    collections: dict[str, int]
    q_mean: float
    q_sd: float
    z: float
    power: float
    """The probability a variance formula off by :data:`VARIANCE_ERROR` (either way) fails the test, at the
    measured ``q_sd``: ``Φ(0.1·√T/s − z)``."""
    planned_item: int | None
    failures: tuple[str, ...]


def _moments(label: str, res: Any, values: np.ndarray | None = None) -> Iterator[_Moments]:
    """The moments of an accuracy result: counts, a mean, or one of either per attribute (``multi``)."""
    if hasattr(res, "attributes"):
        for name, part in res.attributes.items():
            yield from _moments(f"{label} attribute {name}", part)
    elif hasattr(res, "true_mean"):
        yield _Moments(label, np.array([res.true_mean]), np.asarray(res.estimates, float)[:, None],
                       np.array([res.exact_se**2]), values=values)
    else:
        yield _Moments(label, np.asarray(res.true_count, float), np.asarray(res.estimates, float),
                       np.asarray(res.theoretical_sd, float) ** 2)


def planned(proto: Protocol) -> bool:
    """Does the protocol's aggregate give the planner a count variance?"""
    agg = proto.aggregate_type
    base = Aggregate.count_variance.__func__  # type: ignore[attr-defined]
    return agg is not None and getattr(agg.count_variance, "__func__", None) is not base


def planned_truth(params: Any, n: int, item: int) -> tuple[np.ndarray, int]:
    """The planner's scenario for ``n`` users: about a quarter hold ``item``, the others spread evenly over the
    other values (whole counts: ``n − (d−1)·m`` and ``m``); the domain ``d`` is the params' or
    :data:`CANDIDATES`."""
    d = params.domain_size if params.domain_size is not None else CANDIDATES
    m = round(0.75 * n / (d - 1))
    truth = np.full(d, m, dtype=np.int64)
    truth[item] = n - (d - 1) * m
    return truth, d


def _population(params: Any, n: int, item: int | None, seed: int) -> Any:
    """What the ``n`` simulated users hold (:attr:`~ldp.encoders.base.ProtocolParams.population_kind`), drawn once
    from ``seed`` (a stream apart from the noise's): the planner's scenario (``item`` given), numbers uniform in
    ``[low, high]`` (the planner is then asked for the mean of exactly those), Zipf counts; ``None`` for every
    attribute's default (``multi``: drawn by each simulation)."""
    from ldp.simulation.collect import from_counts, zipf
    from ldp.simulation.numeric import NumericPopulation

    kind, gen = params.population_kind, np.random.default_rng([seed, n, 1])
    if kind == "numbers":
        return NumericPopulation("uniform", params.low, params.high, values=gen.uniform(params.low, params.high, n))
    if kind == "attributes":
        return None
    if item is not None:
        return from_counts(planned_truth(params, n, item)[0].tolist())
    d = params.domain_size if params.domain_size is not None else CANDIDATES
    return from_counts(zipf(d).counts(n, gen).tolist())


def _simulated(params: Any, method: str, trials: int, n: int, seed: int, item: int | None,
               truth_seed: int) -> Iterator[_Moments]:
    """``trials`` collections of ``n`` users on one path, as the moments of each result."""
    from ldp.simulation.collect import accuracy

    label = f"{params!r} ({method}, {trials} collections of {n})"
    pop = _population(params, n, item, truth_seed)
    if "hash_seed" not in {f.name for f in dataclasses.fields(params)}:
        yield from _moments(label, accuracy(params, pop, n, trials=trials, method=method, rng=seed, discover=False),
                            getattr(pop, "values", None))
        return
    gen = np.random.default_rng(seed)
    seeds = gen.choice(1 << 24, trials, replace=False) << 6  # hash families far apart: no function shared
    runs = [accuracy(dataclasses.replace(params, hash_seed=int(s)), pop, n, trials=1, method=method, rng=gen,
                     discover=False)
            for s in seeds]
    first = runs[0]
    yield _Moments(label + ", a hash_seed per collection", np.asarray(first.true_count, float),
                   np.array([np.asarray(r.estimates)[0] for r in runs], dtype=float),
                   np.asarray(first.theoretical_sd, float) ** 2,
                   heavy=True)


def _upper_sd(q: np.ndarray) -> float:
    """The pilot's SD of ``Q`` plus two standard errors (``Var[s²] ≈ (μ₄ − s⁴)/T``, the delta method for ``s``):
    the run it sizes reaches the power with room for the pilot's own noise."""
    s2 = float(q.var(ddof=1))
    mu4 = float(((q - q.mean()) ** 4).mean())
    return math.sqrt(s2) + 2 * math.sqrt(max(mu4 - s2**2, 0.0) / q.size) / (2 * math.sqrt(s2))


def _collect(params: Any, trials: dict[str, int], seed: int, item: int | None,
             truth_seed: int) -> list[list[_Moments]]:
    """Each path's moments (several for ``multi``: one per attribute, from the same collections)."""
    return [list(_simulated(params, method, t, USERS[method], seed + j, item, truth_seed))
            for j, (method, t) in enumerate(trials.items())]


def _concat(a: _Moments, b: _Moments) -> _Moments:
    """The collections of two runs at the same truth as one."""
    assert np.array_equal(a.truth, b.truth) and np.array_equal(a.exact, b.exact), "top-up at another truth"
    label = a.label.replace(f"{a.trials} collections", f"{a.trials + b.trials} collections")
    return dataclasses.replace(a, label=label, estimates=np.concatenate([a.estimates, b.estimates]))


def _q(paths: list[list[_Moments]]) -> np.ndarray:
    """``Q_t`` of every collection of every path (averaged over the attributes of one collection)."""
    return np.concatenate([np.mean([m.q() for m in path], axis=0) for path in paths])


def _band(t: int, a: float) -> tuple[float, float]:
    """The two-sided chi-square band of a sample variance over an exact one, ``T`` draws, level ``a``:
    ``[χ²_{a/2}(T−1), χ²_{1−a/2}(T−1)]/(T−1)``."""
    return stats.chi2.ppf(a / 2, t - 1) / (t - 1), stats.chi2.isf(a / 2, t - 1) / (t - 1)


def _per_item(m: _Moments, tests: int) -> list[str]:
    """Test 2 on one path's moments: bias and variance of each item (Bonferroni over ``tests``)."""
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * tests))
    a = ALPHA / tests
    t = m.trials
    lo, hi = _band(t, a)
    mean, var = m.estimates.mean(axis=0), m.estimates.var(axis=0, ddof=1)
    fourth = ((m.estimates - mean) ** 4).mean(axis=0)
    out = []
    for i in range(m.truth.size):
        exact, truth = m.exact[i], m.truth[i]
        if not (math.isfinite(exact) and exact > 0):
            out.append(f"{m.label}: item {i}: exact variance {exact} is not > 0")
            continue
        se = math.sqrt(exact / t)
        if abs(mean[i] - truth) > z * se:
            out.append(f"{m.label}: item {i}: the mean estimate {mean[i]:.6g} is {(mean[i] - truth) / se:+.2f} "
                       f"standard errors from the truth {truth:.6g} (allowed ±{z:.2f})")
        if not m.heavy:
            if not lo <= var[i] / exact <= hi:
                out.append(f"{m.label}: item {i}: empirical / exact variance = {var[i] / exact:.4f}, outside the "
                           f"chi-square band [{lo:.4f}, {hi:.4f}]")
        else:
            se_var = math.sqrt(max(fourth[i] - var[i] ** 2, 0.0) / t)
            if abs(var[i] - exact) > z * se_var:
                out.append(f"{m.label}: item {i}: empirical variance {var[i]:.6g} is {(var[i] - exact) / se_var:+.2f}"
                           f" standard errors from the exact {exact:.6g} (allowed ±{z:.2f})")
    return out


def _pooled(paths: list[list[_Moments]], alpha: float) -> tuple[float, float, float, float, list[str]]:
    """Test 1 over the collections of both paths: ``(Q̄, s, z, power, failures)``."""
    q = _q(paths)
    t, q_mean, q_sd = q.size, float(q.mean()), float(q.std(ddof=1))
    z = NormalDist().inv_cdf(1 - alpha / 2)
    se = q_sd / math.sqrt(t)
    power = NormalDist().cdf(VARIANCE_ERROR / se - z) if se > 0 else 1.0
    failures = []
    if not abs(q_mean - 1) <= z * se:
        failures.append(f"{paths[0][0].label.split(' (')[0]}: the pooled variance test over {t} collections finds the "
                        f"squared standardized errors average {q_mean:.4f}, {(q_mean - 1) / se:+.2f} standard errors "
                        f"from 1 (allowed ±{z:.2f}): the estimates' variance is not the exact formula's "
                        f"(about {q_mean:.3f} × it), or they are biased")
    return q_mean, q_sd, z, power, failures


def _planner(proto: Protocol, params: Any, found: list[_Moments], item: int, tests: int) -> list[str]:
    """Test 3: ``count_variance`` is the exact variance of the planned item, and the planner's standard error is
    the simulated one, on each path."""
    from ldp.plan.frequency import plan

    out = []
    a = ALPHA / tests
    for m in found:
        n = int(m.truth.sum())
        c, d = float(m.truth[item]), m.truth.size
        planner = float(proto.aggregate_type.count_variance(params, n, c, d))
        exact = float(m.exact[item])
        if not math.isclose(planner, exact, rel_tol=1e-9):
            out.append(f"{m.label}: count_variance(n={n}, count={c:g}, d={d}) = {planner:.10g} but the exact variance "
                       f"of item {item} is {exact:.10g} (ratio {planner / exact:.6f}): the planner's formula is not "
                       "the aggregate's")
        try:
            se = plan(params, n=n, domain_size=d, frequency=c / n).std_error_count
        except ValueError:  # the planner refuses these params (e.g. n-gram Bloom filters too small to plan on)
            continue
        t = m.trials
        var = float(m.estimates[:, item].var(ddof=1))
        lo, hi = _band(t, a)
        if not m.heavy and not lo <= var / se**2 <= hi:
            out.append(f"{m.label}: the planner's standard error {se:.6g} for item {item} against the simulated "
                       f"{math.sqrt(var):.6g}: variance ratio {var / se**2:.4f} outside the chi-square band "
                       f"[{lo:.4f}, {hi:.4f}]")
    return out


def _mean_planner(params: Any, found: list[_Moments], tests: int) -> list[str]:
    """Test 3 for a mean: the mean planner's standard error at the users' numbers (:func:`ldp.plan.plan_mean`) is
    the exact one and the simulated one, on each path."""
    from ldp.plan.numeric import plan_mean

    out = []
    a = ALPHA / tests
    for m in found:
        assert m.values is not None
        se = plan_mean(params, n=m.values.size, values=m.values).std_error
        exact = math.sqrt(float(m.exact[0]))
        if not math.isclose(se, exact, rel_tol=1e-9):
            out.append(f"{m.label}: the mean planner's standard error {se:.10g} is not the exact {exact:.10g} "
                       f"(ratio {se / exact:.6f})")
        t, var = m.trials, float(m.estimates[:, 0].var(ddof=1))
        lo, hi = _band(t, a)
        if not lo <= var / se**2 <= hi:
            out.append(f"{m.label}: the mean planner's standard error {se:.6g} against the simulated "
                       f"{math.sqrt(var):.6g}: variance ratio {var / se**2:.4f} outside the chi-square band "
                       f"[{lo:.4f}, {hi:.4f}]")
    return out


TOP_UPS = 3
"""The most top-ups of a run whose measured spread asks for more collections than its pilot's did."""
TOP_UP_MARGIN = 1.05
"""A top-up adds this much more than the run's spread asks for (in collections), so that the spread of the larger
run, a little different, asks for no more."""
UPPER_PILOT = {"attributes"}
"""Population kinds sized by the pilot's spread plus two of its standard errors rather than the spread itself: a
top-up of theirs runs every collection again (``multi``, whose attributes each run draws), so the first run should
not need one."""


def _sized_run(params: Any, seed: int, item: int | None, k: float) -> tuple[list[list[_Moments]], dict[str, int]]:
    """The collections of each path, as many as the pooled test needs: ``T = (k·s)²`` in all, ``k = (z_α/2 +
    z_β)/0.1``, ``s`` the SD of ``Q`` — first from a pilot run (its upper bound for :data:`UPPER_PILOT`), then from
    the run itself, topped up (at the same truth; ``multi``, whose attributes each run draws, runs again at the full
    size) while it asks for more, up to :data:`TOP_UPS` times and :data:`MAX_TRIALS` a path."""
    pilot = _q(_collect(params, PILOT, seed + 5, item, seed))
    s = _upper_sd(pilot) if params.population_kind in UPPER_PILOT else float(pilot.std(ddof=1))
    trials = {method: min(max(PILOT[method], math.ceil((k * s) ** 2 / len(PILOT))), MAX_TRIALS) for method in PILOT}
    paths = _collect(params, trials, seed, item, seed)
    for round_ in range(TOP_UPS):
        s = float(_q(paths).std(ddof=1))
        if sum(trials.values()) >= (k * s) ** 2:
            break
        aim = math.ceil(TOP_UP_MARGIN * (k * s) ** 2 / len(PILOT))
        more = {method: min(aim, MAX_TRIALS) - t for method, t in trials.items()}
        if not all(m > 0 for m in more.values()):
            break
        trials = {method: t + more[method] for method, t in trials.items()}
        if params.population_kind == "attributes":
            paths = _collect(params, trials, seed, item, seed)
        else:
            extra = _collect(params, more, seed + 7 + 1000 * round_, item, seed)
            paths = [[_concat(a, b) for a, b in zip(old, new, strict=True)]
                     for old, new in zip(paths, extra, strict=True)]
    return paths, trials


def statistics_power(proto: Protocol) -> list[PowerRow]:
    """Run tests 1–3 on every example of ``proto``: one :class:`PowerRow` each (its ``failures`` empty when the
    example passes)."""
    examples = examples_of(proto)
    alpha = POOLED_ALPHA / len(examples)
    z_beta = NormalDist().inv_cdf(POWER)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    rows = []
    for k, p in enumerate(examples):
        item = proto.aggregate_type.count_variance_item if planned(proto) and p.population_kind == "counts" else None
        seed = SEED + 10 * k
        paths, trials = _sized_run(p, seed, item, (z + z_beta) / VARIANCE_ERROR)
        found = [m for path in paths for m in path]
        tests = 2 * sum(m.truth.size for m in found)
        failures = [f for m in found for f in _per_item(m, tests)]
        q_mean, q_sd, z_used, power, pooled = _pooled(paths, alpha)
        failures += pooled
        if item is not None:
            failures += _planner(proto, p, found, item, 2 * len(found))
        elif p.population_kind == "numbers":
            failures += _mean_planner(p, found, 2 * len(found))
        rows.append(PowerRow(repr(p), trials, q_mean, q_sd, z_used, power, item, tuple(failures)))
    return rows


def check_statistics(proto: Protocol) -> None:
    """Estimates unbiased, their variance the exact formula's (a pooled test sized to catch a 10 % error), the
    planner's variance the exact one, along both simulation paths."""
    assert_passed(statistics_power(proto))


def assert_passed(rows: Sequence[PowerRow]) -> None:
    """``AssertionError`` with the failures of the first failing example of :func:`statistics_power`'s ``rows``:
    what :func:`check_statistics` raises, for a caller that keeps the rows (the test suite runs the battery once per
    protocol and shares it)."""
    for row in rows:
        if row.failures:
            raise AssertionError("; ".join(row.failures))
