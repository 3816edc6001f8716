"""Association analysis (ldp.decoders.association): likelihoods, EM, standard errors, budget, bad input."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ldp.batch.association as kernel
from ldp.batch.association import PairData, draw_cells, em_fit, simulate_pairs
from ldp.decoders.association import Variable, associate, pair_cost, pair_data, report_loglik
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.rappor import RapporParams, bloom_bits
from ldp.encoders.unary import LOUEParams, OUEParams, SUEParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import realized_probability

TINY_RAPPOR = RapporParams(4, 2, 2, 0.25, 0.75, 0.5)
CANDS = ["a", "b", "c"]
JOINT = np.array([[0.30, 0.10], [0.05, 0.25], [0.10, 0.20]])


def _all_bits(k: int) -> np.ndarray:
    rows = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.uint8)
    return np.packbits(rows, axis=1, bitorder="little")


def _brute_rappor(pr: RapporParams, bloom: set[int], bits: tuple[int, ...]) -> float:
    """Pr[report bits | Bloom set] by enumerating every PRR outcome (no p*/q* formula)."""
    f, p, q = pr.f_effective, realized_probability(pr.p), realized_probability(pr.q)
    total = 0.0
    for prr in itertools.product((0, 1), repeat=pr.k):
        pp = math.prod((1 - f / 2) if prr[i] == (i in bloom) else f / 2 for i in range(pr.k))
        ps = math.prod((q if prr[i] else p) if bits[i] else (1 - q if prr[i] else 1 - p) for i in range(pr.k))
        total += pp * ps
    return total


def test_rappor_likelihoods_match_brute_force_enumeration() -> None:
    pr, k = TINY_RAPPOR, TINY_RAPPOR.k
    rows = _all_bits(k)
    for cohort in range(pr.m):
        cols = {"cohort": np.full(len(rows), cohort), "bits": rows}
        got = np.exp(report_loglik(Variable(pr, CANDS, other=True), cols))
        for r, bits in enumerate(itertools.product((0, 1), repeat=k)):
            for v, cand in enumerate(CANDS):
                assert got[r, v] == pytest.approx(_brute_rappor(pr, set(bloom_bits(pr, cand, cohort)), bits), rel=1e-12)
            # "other": h uniform hash positions, enumerated
            other = np.mean([_brute_rappor(pr, set(pos), bits) for pos in itertools.product(range(k), repeat=pr.h)])
            assert got[r, -1] == pytest.approx(other, rel=1e-12)
        assert np.allclose(got.sum(axis=0), 1.0)  # a law over the 2^k reports, for every value


@pytest.mark.parametrize("params", [GRRParams(1.5, 4), OUEParams(1.0, 3), SUEParams(2.0, 3), BinaryRRParams(0.2, 0.7)])
def test_fixed_domain_likelihoods_are_the_protocol_law(params: GRRParams | OUEParams | SUEParams | BinaryRRParams,
                                                       ) -> None:
    var = Variable(params)
    d = len(var.labels)
    if params.protocol == "grr":
        cols = {"index": np.arange(d)}
        want = np.full((d, d), params.q) + np.eye(d) * (params.p - params.q)
    elif params.protocol == "rr":
        cols = {"bit": np.array([0, 1])}
        p, q = params.p, params.q
        want = np.array([[1 - p, 1 - q], [p, q]])
    else:
        cols = {"bits": _all_bits(d)}
        p, q = params.p, params.q
        want = np.array([[math.prod((p if i == v else q) if b else (1 - p if i == v else 1 - q)
                                    for i, b in enumerate(bits)) for v in range(d)]
                         for bits in itertools.product((0, 1), repeat=d)])
    assert np.allclose(np.exp(report_loglik(var, cols)), want, rtol=1e-12, atol=0)


def _reference_em(la: np.ndarray, lb: np.ndarray, maps: int) -> np.ndarray:
    """Plain EM with one likelihood row per client (no grouping)."""
    pi = np.full((la.shape[1], lb.shape[1]), 1.0 / (la.shape[1] * lb.shape[1]))
    for _ in range(maps):
        d = np.einsum("iu,uv,iv->i", la, pi, lb)
        pi = pi * (la.T @ (lb / d[:, None])) / la.shape[0]
    return pi


KERNELS = ["numpy", pytest.param("compiled", marks=pytest.mark.skipif(
    kernel._emkernel is None, reason="the compiled EM kernel is not built"))]


@pytest.mark.parametrize(("dense", "which"), [(True, None), (False, "numpy"), (False, "compiled")])
def test_grouped_em_equals_per_client_reference(monkeypatch: pytest.MonkeyPatch, dense: bool,
                                                 which: str | None) -> None:
    if which == "compiled" and kernel._emkernel is None:
        pytest.skip("the compiled EM kernel is not built")
    a, b = Variable(TINY_RAPPOR, CANDS), Variable(GRRParams(1.0, 2))
    ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 3000, 5, candidates_a=CANDS)
    if not dense:
        monkeypatch.setattr(kernel, "DENSE_CELLS", 0)
    data = pair_data(a, b, ra, rb)
    assert data.dense is dense and data.counts.sum() == 3000 and data.ia.size < 3000
    fit = em_fit(data, np.full((3, 2), 1 / 6), tol=0.0, max_maps=7, accelerate=False, kernel=which)
    la = np.exp(report_loglik(a, dict(ra.columns)))
    lb = np.exp(report_loglik(b, dict(rb.columns)))
    assert np.allclose(fit.pi[0], _reference_em(la, lb, 7), rtol=1e-10, atol=1e-15)
    assert fit.maps == 7


def test_squarem_reaches_the_plain_em_fixed_point_faster() -> None:
    a, b = Variable(GRRParams(1.0, 3)), Variable(GRRParams(1.0, 2))
    ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 20000, 6)
    data = pair_data(a, b, ra, rb)
    fast = em_fit(data, np.full((3, 2), 1 / 6), tol=1e-12)
    slow = em_fit(data, np.full((3, 2), 1 / 6), tol=1e-12, accelerate=False, max_maps=100000)
    assert fast.converged[0] and slow.converged[0] and fast.maps < slow.maps
    assert np.allclose(fast.pi, slow.pi, atol=1e-9)
    assert fast.loglik[0] >= slow.loglik[0] - 1e-6


@pytest.mark.parametrize("kind", ["grr-grr", "rappor-oue", "rappor-rappor"])
def test_em_recovers_a_known_table_within_its_errors(kind: str) -> None:
    rappor = RapporParams(16, 2, 8, 0.25, 0.75, 0.25)
    pairs = {"grr-grr": (Variable(GRRParams(2.0, 3)), Variable(GRRParams(2.0, 2))),
             "rappor-oue": (Variable(rappor, CANDS), Variable(OUEParams(2.0, 2))),
             "rappor-rappor": (Variable(rappor, CANDS), Variable(rappor, ["x", "y"]))}
    a, b = pairs[kind]
    ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 40000, 7, candidates_a=a.candidates,
                                  candidates_b=b.candidates)
    res = associate(a, b, ra, rb, se="information")
    assert res.converged and res.n == 40000 and res.table.sum() == pytest.approx(1.0)
    assert np.all(np.abs(res.table - JOINT) < 4.5 * res.se)  # 6 cells: 4.5 SE is p < 1e-4 overall
    assert np.all(res.se < 0.02)


def _coverage(se: str, collections: int = 200) -> np.ndarray:
    a, b = Variable(GRRParams(2.0, 3)), Variable(GRRParams(2.0, 2))
    gen = np.random.default_rng(11)
    hits = np.zeros(JOINT.shape)
    for _ in range(collections):
        ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 4000, gen)
        res = associate(a, b, ra, rb, se=se, replicates=100, rng=gen)
        hits += (res.lower <= JOINT) & (JOINT <= res.upper)
    return hits / collections


@pytest.mark.parametrize("se", ["information", "bootstrap"])
def test_standard_errors_are_calibrated(se: str) -> None:
    """95 % intervals over 200 collections: each cell's coverage within 3 binomial sd of 0.95, pooled >= 0.94 - 3 sd."""
    cover = _coverage(se)
    sd = math.sqrt(0.95 * 0.05 / 200)
    assert np.all(np.abs(cover - 0.95) < 3 * sd), cover
    assert cover.mean() >= 0.94 - 3 * sd / math.sqrt(cover.size)


def test_reports_objects_columns_and_batches_agree() -> None:
    a, b = Variable(TINY_RAPPOR, CANDS, other=True), Variable(OUEParams(1.0, 2))
    ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 300, 8, candidates_a=CANDS)
    one = associate(a, b, ra, rb, se="none")
    two = associate(a, b, list(ra.reports()), list(rb.reports()), se="none")
    three = associate(a, b, dict(ra.columns), dict(rb.columns), se="none")
    assert np.array_equal(one.table, two.table) and np.array_equal(one.table, three.table)
    assert one.labels_a == ["a", "b", "c", "(other)"] and one.labels_b == ["0", "1"]


def test_privacy_cost_is_the_sum_of_the_two_reports() -> None:
    g, rp = GRRParams(1.0, 3), RapporParams(8, 2, 4, 0.25, 0.75, 0.5)
    res = associate(Variable(g), Variable(rp, CANDS), *simulate_pairs(g, rp, JOINT, 50, 1, candidates_b=["a", "b"])[:2],
                    se="none")
    assert res.privacy_cost == g.privacy_cost + rp.privacy_cost
    assert pair_cost(g, rp, 1000) == PrivacyCost(1000 * g.epsilon + rp.epsilon_inf)  # the memoized PRR caps RAPPOR
    assert pair_cost(g, g, 2) == PrivacyCost(4 * g.privacy_cost.epsilon)
    with pytest.raises(ValueError, match="reports must be an integer"):
        pair_cost(g, g, 0)


def test_bad_input_is_refused_with_clear_errors() -> None:
    g = GRRParams(1.0, 3)
    ra, rb, _, _ = simulate_pairs(g, g, np.ones((3, 3)), 10, 1)
    with pytest.raises(ValueError, match="same length: 10 reports of A, 9 of B"):
        associate(Variable(g), Variable(g), ra, {"index": rb.columns["index"][:9]})
    with pytest.raises(ValueError, match="no reports"):
        associate(Variable(g), Variable(g), {"index": np.zeros(0, int)}, {"index": np.zeros(0, int)})
    with pytest.raises(ValueError, match="association supports the protocols"):
        Variable(LOUEParams(2.0, 1.0, 3))
    with pytest.raises(ValueError, match="needs its candidate strings"):
        Variable(TINY_RAPPOR)
    with pytest.raises(ValueError, match="fixed domain"):
        Variable(g, ["a"])
    with pytest.raises(ValueError, match="other parameters"):
        associate(Variable(g), Variable(GRRParams(2.0, 3)), ra, rb)
    with pytest.raises(ValueError, match=r"integers in \[0, 3\)"):
        associate(Variable(g), Variable(g), ra, {"index": np.full(10, 3)})
    with pytest.raises(ValueError, match="column 'index'"):
        associate(Variable(g), Variable(g), ra, {"bits": np.zeros(10, int)})
    with pytest.raises(TypeError, match="ReportBatch, a sequence of Reports"):
        associate(Variable(g), Variable(g), ra, 5)
    with pytest.raises(ValueError, match="se must be one of"):
        associate(Variable(g), Variable(g), ra, rb, se="jackknife")
    with pytest.raises(ValueError, match="replicates must be"):
        associate(Variable(g), Variable(g), ra, rb, replicates=1)
    with pytest.raises(ValueError, match="joint must be"):
        draw_cells(np.array([[-1.0, 2.0]]), 5)


def test_information_refuses_tables_too_large_for_it() -> None:
    g = GRRParams(4.0, 60)
    ra, rb, _, _ = simulate_pairs(g, g, np.ones((60, 60)), 50000, 2)
    with pytest.raises(ValueError, match="use se='bootstrap'"):
        associate(Variable(g), Variable(g), ra, rb, se="information")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=40))
def test_grouping_counts_every_pair_once(pairs: list[tuple[int, int]]) -> None:
    a, b = Variable(GRRParams(1.0, 3)), Variable(GRRParams(1.0, 2))
    cols_a = {"index": np.array([p[0] for p in pairs])}
    cols_b = {"index": np.array([p[1] for p in pairs])}
    data: PairData = pair_data(a, b, cols_a, cols_b)
    got: Counter[tuple[int, int]] = Counter()
    for i, j, c in zip(data.ia, data.ib, data.counts, strict=True):
        # rows are distinct reports: map them back to the reported index through the likelihood's argmax
        got[(int(np.argmax(data.la[i])), int(np.argmax(data.lb[j])))] += int(c)
    assert got == Counter(pairs)


def test_z_matches_level() -> None:
    g = GRRParams(1.0, 2)
    res = associate(Variable(g), Variable(g), *simulate_pairs(g, g, np.ones((2, 2)), 200, 3)[:2], se="information",
                    level=0.9)
    assert np.allclose(res.upper - res.table, np.minimum(NormalDist().inv_cdf(0.95) * res.se, 1 - res.table))


def _random_pairs(gen: np.random.Generator, ra: int, rb: int, d: int, j: int) -> tuple[PairData, np.ndarray]:
    la, lb = gen.random((ra, d)) + 0.01, gen.random((rb, d)) + 0.01
    ia, ib = np.sort(gen.integers(0, ra, j)), gen.integers(0, rb, j)
    counts = gen.integers(0, 4, j).astype(np.float64)  # zero counts too (a bootstrap replicate has them)
    return PairData(la, lb, ia, ib, counts), gen.random((d, d)) + 0.1


@pytest.mark.skipif(kernel._emkernel is None, reason="the compiled EM kernel is not built")
@settings(max_examples=40, deadline=None)
@given(ra=st.integers(1, 30), rb=st.integers(1, 30), d=st.integers(1, 13), j=st.integers(0, 400),
       seed=st.integers(0, 2**32 - 1))
def test_compiled_pass_agrees_with_numpy(ra: int, rb: int, d: int, j: int, seed: int) -> None:
    """Differential: the fused C pass gives the numpy path's W·L_B and log-likelihood (to the last bits
    of the dot product's summation order)."""
    data, pi = _random_pairs(np.random.default_rng(seed), ra, rb, d, j)
    m = data.la @ pi
    fast = kernel._Mapper(data, data.counts[None, :], "compiled")._sparse_pass(m, data.counts)
    slow = kernel._Mapper(data, data.counts[None, :], "numpy")._sparse_pass(m, data.counts)
    assert np.allclose(fast[0], slow[0], rtol=1e-12, atol=0.0)
    assert math.isclose(fast[1], slow[1], rel_tol=1e-12, abs_tol=1e-9)


@pytest.mark.skipif(kernel._emkernel is None, reason="the compiled EM kernel is not built")
def test_compiled_pass_in_parts_agrees_and_checks_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "KERNEL_THREADS", 3)
    data, pi = _random_pairs(np.random.default_rng(9), 500, 400, 3, (1 << 17) + 1000)
    mapper = kernel._Mapper(data, data.counts[None, :], "compiled")
    assert len(mapper.parts) == 4 and mapper.parts[0] == 0 and mapper.parts[-1] == data.ia.size
    cut = np.array(mapper.parts[1:-1])
    assert (data.ia[cut] != data.ia[cut - 1]).all()  # parts are cut between A-rows: no row of g is shared
    m = data.la @ pi
    fast = mapper._sparse_pass(m, data.counts)
    slow = kernel._Mapper(data, data.counts[None, :], "numpy")._sparse_pass(m, data.counts)
    assert np.allclose(fast[0], slow[0], rtol=1e-12, atol=0.0) and math.isclose(fast[1], slow[1], rel_tol=1e-12)
    g = np.zeros((2, 3))
    with pytest.raises(ValueError, match="out of range"):
        kernel._emkernel.pair_step(np.ones((2, 3)), np.ones((2, 3)), np.array([0, 2]), np.array([0, 1]),
                                   np.ones(2), 2, 2, 2, 3, g)
    with pytest.raises(ValueError, match="bad sizes"):
        kernel._emkernel.pair_step(np.ones((2, 3)), np.ones((2, 3)), np.array([0, 1]), np.array([0, 1]),
                                   np.ones(2), 3, 2, 2, 3, g)
    with pytest.raises(ValueError, match="kernel must be"):
        kernel._Mapper(data, data.counts[None, :], "fortran")


def test_independence_start_is_the_product_of_the_fitted_marginals() -> None:
    a, b = Variable(GRRParams(2.0, 3)), Variable(GRRParams(2.0, 2))
    ra, rb, _, _ = simulate_pairs(a.params, b.params, JOINT, 20000, 3)
    data = pair_data(a, b, ra, rb)
    start = kernel.independence_start(data, mix=0.0)
    joint = em_fit(data, np.full((3, 2), 1 / 6), tol=1e-12).pi[0]
    # the joint MLE's margins are the marginal MLEs when both are interior (GRR: the same likelihood factors)
    assert np.allclose(start[0], np.outer(joint.sum(axis=1), joint.sum(axis=0)), atol=1e-6)
    assert (kernel.independence_start(data) > 0).all() and math.isclose(kernel.independence_start(data).sum(), 1.0)
