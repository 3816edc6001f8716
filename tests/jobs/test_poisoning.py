"""Poisoning evidence (ldp.jobs.poisoning and the families' laws): exact laws by enumeration, false alarms on
honest windows, input validation."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.encoders.local_hashing import OLHParams
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.unary import OUEParams, SUEParams
from ldp.jobs.local_hashing_poisoning import support_moments, support_sizes
from ldp.jobs.poisoning import (
    bernoulli_binomial_pmf,
    check_reports,
    chi_square_check,
    poisoning_evidence,
    popcounts,
    range_check,
    z_check,
)
from ldp.jobs.rappor_poisoning import rappor_ones_bounds
from ldp.jobs.unary_poisoning import unary_ones_moments
from ldp.protocols import get_protocol


def _moments(pmf: np.ndarray) -> tuple[float, float]:
    x = np.arange(pmf.size)
    mean = float((x * pmf).sum())
    return mean, float(((x - mean) ** 2 * pmf).sum())


@pytest.mark.parametrize("params", [OUEParams(1.0, 4), SUEParams(2.0, 3)])
def test_unary_ones_law_by_enumeration(params: OUEParams | SUEParams) -> None:
    """Every bit pattern of a report of value 0: the law of its 1s is the pmf; the moments are the pmf's."""
    d, p, q = params.domain_size, params.p, params.q
    law = np.zeros(d + 1)
    for bits in itertools.product((0, 1), repeat=d):
        pr = (p if bits[0] else 1 - p) * math.prod(q if b else 1 - q for b in bits[1:])
        law[sum(bits)] += pr
    np.testing.assert_allclose(bernoulli_binomial_pmf(p, q, d), law, atol=1e-15)
    np.testing.assert_allclose(_moments(law), unary_ones_moments(params), rtol=1e-12)


@pytest.mark.parametrize(("g", "d", "p"), [(2, 3, 0.7), (3, 3, 0.6), (4, 2, 0.5)])
def test_local_hashing_support_law_by_enumeration(g: int, d: int, p: float) -> None:
    """Random-hash model: every hash function [0, d) -> [0, g) equally likely, then GRR over [0, g) of the
    hash of value 0: the support size's law is Bernoulli(p) + Binomial(d − 1, 1/g)."""
    law = np.zeros(d + 1)
    other = (1 - p) / (g - 1)
    for h in itertools.product(range(g), repeat=d):
        for y in range(g):
            pr = (p if y == h[0] else other) / g ** d
            law[sum(v == y for v in h)] += pr
    np.testing.assert_allclose(bernoulli_binomial_pmf(p, 1 / g, d), law, atol=1e-15)


def test_local_hashing_moments_and_support_sizes() -> None:
    params = OLHParams(1.0, 6)
    mean, var = support_moments(params)
    assert _moments(bernoulli_binomial_pmf(params.p, 1 / params.g, 6)) == pytest.approx((mean, var), rel=1e-12)
    seeds = np.array([0, 7, 123456], np.uint32)
    ys = np.array([0, 1, 2], np.uint32)
    want = [sum(params.hash_of(v, int(s)) == int(y) for v in range(6)) for s, y in zip(seeds, ys, strict=True)]
    assert support_sizes(params, seeds, ys).tolist() == want


def test_rappor_bounds_by_enumeration() -> None:
    """For B set Bloom bits of k, the 1s of a report: enumerate every report, compare the range ends."""
    params = RapporParams(num_bloombits=5, num_hashes=3, num_cohorts=1, p=0.25, q=0.75, f=0.5)
    ps, qs = params.p_star, params.q_star
    found = []
    for b in (1, 3):
        law = np.zeros(6)
        for bits in itertools.product((0, 1), repeat=5):
            law[sum(bits)] += math.prod((qs if i < b else ps) if x else (1 - (qs if i < b else ps))
                                        for i, x in enumerate(bits))
        found.append(_moments(law))
    lo, hi, var = rappor_ones_bounds(params)
    assert (lo, hi) == pytest.approx((min(m for m, _ in found), max(m for m, _ in found)), rel=1e-12)
    assert var == pytest.approx(max(v for _, v in found), rel=1e-12)


def _honest(params: Any, n: int, rng: np.random.Generator, d: int) -> tuple[Any, Any]:
    proto = get_protocol(params.protocol)
    enc: Any = proto.encoder_type(params)
    values = rng.integers(0, d, n)
    if params.domain_size is None:
        batch = enc.encode_batch(values, rng, candidates=[f"c{i}" for i in range(d)])
    else:
        batch = enc.encode_batch(values, rng)
    agg = proto.aggregate_type(params)
    agg.add(batch)
    return agg, batch


@pytest.mark.parametrize("params", [OUEParams(1.0, 32), SUEParams(1.0, 32), OLHParams(2.0, 32),
                                    RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75,
                                                 f=0.5)])
def test_false_alarm_rate_on_honest_windows(params: object) -> None:
    """200 honest windows of 2,000 reports at family-wise alpha = 0.05: at most 5 % false alarms in expectation
    (RAPPOR's range test fewer); the limit is the binomial tail's 0.1 % point (21 of 200)."""
    rng = np.random.default_rng(31)
    alarms = sum(poisoning_evidence(*_honest(params, 2000, rng, 32), alpha=0.05).suspicious for _ in range(200))
    limit = stats.binom.isf(1e-3, 200, 0.05)
    assert alarms <= limit


def test_unary_and_olh_law_mismatch_is_seen() -> None:
    """Reports of the wrong law (OUE reports checked as SUE's) are flagged by both tests."""
    rng = np.random.default_rng(1)
    agg, batch = _honest(OUEParams(1.0, 32), 5000, rng, 32)
    ev = check_reports(SUEParams(1.0, 32), batch, alpha=0.01)
    assert ev.suspicious and ev.checks[0].name == "ones_per_report"


def test_untested_protocol_is_explicit() -> None:
    rng = np.random.default_rng(2)
    agg, batch = _honest(GRRParams(1.0, 8), 100, rng, 8)
    ev = poisoning_evidence(agg, batch)
    assert ev.verdict == "untested" and not ev.suspicious
    assert "no known-law test" in ev.message
    assert ev.checks[0].verdict == "untested"


def test_tiny_window_is_untested_not_passed() -> None:
    ev = chi_square_check("x", "oue", np.array([1]), bernoulli_binomial_pmf(0.5, 0.3, 4), 0.01, "ones")
    assert ev.verdict == "untested"


@settings(max_examples=60, deadline=None)
@given(alpha=st.one_of(st.floats(allow_nan=True), st.integers(-2, 2), st.booleans()))
def test_alpha_is_validated(alpha: float) -> None:
    if not isinstance(alpha, bool) and isinstance(alpha, int | float) and 0 < alpha < 1:
        assert z_check("t", "oue", 10, 5.0, 5.0, 1.0, alpha, "ones").verdict == "ok"
        return
    with pytest.raises(ValueError, match="alpha"):
        z_check("t", "oue", 10, 5.0, 5.0, 1.0, alpha, "ones")
    with pytest.raises(ValueError, match="alpha"):
        range_check("t", "oue", 10, 5.0, 4.0, 6.0, 1.0, alpha, "ones")


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-3, 12), min_size=0, max_size=300), d=st.integers(1, 8))
def test_chi_square_validates_values(values: list[int], d: int) -> None:
    pmf = bernoulli_binomial_pmf(0.5, 0.25, d)
    v = np.asarray(values, dtype=np.int64)
    if v.size and (v.min() < 0 or v.max() > d):
        with pytest.raises(ValueError, match="integers in"):
            chi_square_check("t", "oue", v, pmf, 0.01, "ones")
        return
    c = chi_square_check("t", "oue", v, pmf, 0.01, "ones")
    assert c.verdict == "untested" or (0.0 <= c.p_value <= 1.0 and c.statistic >= 0.0)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 5), width=st.integers(0, 4), nbits=st.integers(1, 24))
def test_popcounts_validates_shape(rows: int, width: int, nbits: int) -> None:
    a = np.full((rows, width), 0xFF, np.uint8)
    if width != (nbits + 7) // 8:
        with pytest.raises(ValueError, match="packed rows"):
            popcounts(a, nbits)
        return
    assert popcounts(a, nbits).tolist() == [nbits] * rows


def test_reports_must_be_columns() -> None:
    with pytest.raises(TypeError, match="ReportBatch"):
        check_reports(OUEParams(1.0, 4), [1, 2, 3])


@pytest.mark.parametrize("params", [OUEParams(1.0, 8), SUEParams(1.0, 8), OLHParams(2.0, 8),
                                    RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75,
                                                 f=0.5)])
def test_each_law_returns_as_many_checks_as_it_announces(params: Any) -> None:
    """The counts split alpha (Bonferroni): a law returning more checks than it announces would raise the
    family-wise false-alarm rate above alpha."""
    from ldp.jobs.poisoning import law_for

    agg, batch = _honest(params, 300, np.random.default_rng(5), 8)
    law = law_for(params)
    assert law is not None
    assert len(law.aggregate_checks(agg, 0.01)) == law.aggregate_check_count(agg) >= 1
    assert len(law.report_checks(params, batch.columns, 0.01)) == law.report_check_count(params)
