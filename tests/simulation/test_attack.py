"""Poisoning attacks (ldp.simulation.attack): damage as derived, detection with a derived power, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.encoders.local_hashing import OLHParams
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.unary import OUEParams, SUEParams
from ldp.jobs.local_hashing_poisoning import support_moments, support_sizes
from ldp.jobs.poisoning import _merged_cells, bernoulli_binomial_pmf, popcounts
from ldp.jobs.unary_poisoning import unary_ones_moments
from ldp.protocols import get_protocol
from ldp.simulation.attack import fake_reports, simulate_attack
from ldp.simulation.population import zipf
from ldp.simulation.unary_attack import unary_mga_ones

N, BETA, D, R, ALPHA = 20_000, 0.05, 64, 10, 0.01


@pytest.mark.parametrize("params", [OUEParams(1.0, D), SUEParams(1.0, D)])
def test_unary_mga_reports_and_gain(params: OUEParams | SUEParams) -> None:
    """Every MGA report has the targets' bits and l ones; the gain is β(r(1−q)/(p−q) − Σ f_t) (the targets' bits
    always 1), up to noise of order 1e-3 (the honest counts enter both estimates)."""
    targets = np.arange(R)
    batch = fake_reports(params, "mga", targets, 500, 1)
    bits = np.unpackbits(batch.columns["bits"], axis=1, bitorder="little")[:, :D]
    assert bits[:, :R].all() and (bits.sum(axis=1) == unary_mga_ones(params)).all()
    pop = zipf(D)
    res = simulate_attack(params, pop, N, attack="mga", fraction=BETA, targets=list(targets), rng=3, alpha=ALPHA)
    p, q = params.p, params.q
    want = BETA * (R * (1 - q) / (p - q) - pop.pmf[:R].sum())
    assert res.fake == N * BETA and res.gain == pytest.approx(want, abs=0.02)


@pytest.mark.parametrize("params", [OUEParams(1.0, D), SUEParams(1.0, D)])
def test_unary_mga_is_caught_by_the_per_report_law(params: OUEParams | SUEParams) -> None:
    """The total of 1s matches (l is the honest mean); the histogram does not. Power derived: Pearson's statistic
    is noncentral chi-square with λ = N Σ_cells (π − π0)²/π0, π = (1 − β)π0 + β·δ_l, tested at α/2."""
    res = simulate_attack(params, zipf(D), N, attack="mga", fraction=BETA, targets=R, rng=4, alpha=ALPHA)
    pmf = bernoulli_binomial_pmf(params.p, params.q, D)
    cell = _merged_cells(N * pmf)
    pi0 = np.bincount(cell, weights=pmf)
    delta = np.zeros_like(pi0)
    delta[cell[unary_mga_ones(params)]] = 1.0
    lam = N * BETA ** 2 * float(((delta - pi0) ** 2 / pi0).sum())
    df = pi0.size - 1
    power = stats.ncx2.sf(stats.chi2.isf(ALPHA / 2, df), df, lam)
    assert power > 0.999
    by_name = {c.name: c for c in res.evidence.checks}
    assert res.detected and by_name["ones_per_report"].suspicious


@pytest.mark.parametrize("params", [OUEParams(1.0, D), SUEParams(1.0, D)])
def test_random_report_is_caught_by_the_total(params: OUEParams | SUEParams) -> None:
    """Random reports carry Bin(d, 1/2) ones: the total moves by m(d/2 − μ), z = that / √(N σ²) (> 8 here)."""
    mean, var = unary_ones_moments(params)
    z = N * BETA * (D / 2 - mean) / math.sqrt(N * var)
    assert z > 8
    res = simulate_attack(params, zipf(D), N, attack="random", fraction=BETA, targets=R, rng=5, alpha=ALPHA)
    assert res.attack == "random-report" and {c.name: c for c in res.evidence.checks}["ones_total"].suspicious


def test_olh_mga_support_and_detection() -> None:
    """OLH MGA reports support many targets; the total support moves by Σ(S_i − μ) over the fake reports, whose
    z (derived from the fake reports themselves) is far past the threshold, and the window is flagged."""
    params = OLHParams(1.0, D)
    targets = np.arange(R)
    batch = fake_reports(params, "mga", targets, 200, 6, tries=1000)
    hits = support_sizes(params.__class__(1.0, R), batch.columns["seed"], batch.columns["y"])
    assert hits.mean() > 5  # best of 1,000 seeds: g = 4, r = 10 (a random seed gives ~3.4)
    mean, var = support_moments(params)
    sizes = support_sizes(params, batch.columns["seed"], batch.columns["y"])
    z = (N * BETA) * (sizes.mean() - mean) / math.sqrt(N * var)
    assert z > 8
    res = simulate_attack(params, zipf(D), N, attack="mga", fraction=BETA, targets=R, rng=7, alpha=ALPHA)
    assert res.detected and res.gain > 0.5


def test_random_value_follows_the_honest_law() -> None:
    """Random values through the honest encoder are honest reports: popcounts follow the law (no alarm at this
    seed) and they promote nothing."""
    res = simulate_attack(OUEParams(1.0, D), zipf(D), N, attack="random-value", fraction=BETA, targets=R, rng=8,
                          alpha=ALPHA)
    assert not res.detected and abs(res.gain) < 0.05


def test_grr_and_rappor() -> None:
    """GRR: the MGA (a target per fake report) gains β((1 − rq)/(p − q) − Σ f_t) and nothing is tested.
    RAPPOR: the random report is caught by the total of 1s (mean k/2 against k·p* + B(q* − p*))."""
    grr, pop = GRRParams(1.0, D), zipf(D)
    res = simulate_attack(grr, pop, N, attack="mga", fraction=BETA, targets=list(range(R)), rng=9)
    want = BETA * ((1 - R * grr.q) / (grr.p - grr.q) - pop.pmf[:R].sum())
    assert res.evidence.verdict == "untested" and res.gain == pytest.approx(want, abs=0.05)
    rp = RapporParams(num_bloombits=64, num_hashes=2, num_cohorts=8, p=0.25, q=0.75, f=0.5)
    res = simulate_attack(rp, zipf(D), N, attack="random", fraction=BETA, targets=R, rng=10)
    assert res.detected
    mga = fake_reports(rp, "mga", np.arange(3), 100, 11, domain=D, candidates=[f"item{i}" for i in range(D)])
    assert (popcounts(mga.columns["bits"], 64) >= 16).all()  # l = round(64·0.375 + 2·0.25) = 25 >= 6 target bits


def test_bare_mga_sets_the_targets_bits_alone() -> None:
    """Unary: exactly the r target bits. RAPPOR: exactly the targets' Bloom bits of the report's cohort. Protocols
    whose MGA pads nothing have no bare variant."""
    targets = np.arange(R)
    bits = np.unpackbits(fake_reports(OUEParams(1.0, D), "mga-bare", targets, 50, 1).columns["bits"], axis=1,
                         bitorder="little")[:, :D]
    assert bits[:, :R].all() and (bits.sum(axis=1) == R).all()
    from ldp.batch.rappor import bloom_index_table

    rp = RapporParams(num_bloombits=64, num_hashes=2, num_cohorts=8, p=0.25, q=0.75, f=0.5)
    names = [f"item{i}" for i in range(D)]
    cols = fake_reports(rp, "mga-bare", [2, 5], 40, 2, domain=D, candidates=names).columns
    idx = bloom_index_table(rp, [names[2], names[5]])
    got = np.unpackbits(cols["bits"], axis=1, bitorder="little")
    for row, c in zip(got, cols["cohort"], strict=True):
        assert set(np.flatnonzero(row)) == set(idx[:, int(c), :].ravel().tolist())
    for params in (OLHParams(1.0, 8), GRRParams(1.0, 8)):
        with pytest.raises(NotImplementedError, match="unpadded"):
            fake_reports(params, "mga-bare", [0], 1, 0)


@settings(max_examples=40, deadline=None)
@given(attack=st.sampled_from(["mga", "mga-bare", "random", "bogus"]), m=st.integers(-2, 30),
       targets=st.lists(st.integers(-2, 10), min_size=0, max_size=4))
def test_fake_reports_validate(attack: str, m: int, targets: list[int]) -> None:
    params = OUEParams(1.0, 8)
    ok = attack != "bogus" and m >= 0 and targets and min(targets) >= 0 and max(targets) < 8 \
        and len(set(targets)) == len(targets)
    if not ok:
        with pytest.raises(ValueError):
            fake_reports(params, attack, targets, m, 0)
        return
    assert fake_reports(params, attack, targets, m, 0).n == m


def test_simulate_attack_validates() -> None:
    with pytest.raises(ValueError, match="fraction"):
        simulate_attack(OUEParams(1.0, 8), zipf(8), 100, fraction=1.0)
    with pytest.raises(ValueError, match="population"):
        simulate_attack(OUEParams(1.0, 8), zipf(9), 100)
    with pytest.raises(ValueError, match="targets"):
        simulate_attack(OUEParams(1.0, 8), zipf(8), 100, targets=9)
    hr = get_protocol("hr").params_type.examples()[0]
    with pytest.raises(NotImplementedError, match="no maximal gain"):
        fake_reports(hr, "mga", [0], 1, 0)
    assert fake_reports(hr, "random-value", [0], 3, 0).n == 3
