"""Blocked Hadamard Response (protocol ``hr-block``): params, the client's exact law and audit, the per-block FWHT
estimator and its exact variance (against the law, and simulated), the batch law, the planner's choice of B."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.decoders.hadamard_block import HRBlockAggregate, block_totals, hrb_counts, hrb_variance
from ldp.decoders.hadamard_response import hr_variance
from ldp.encoders.hadamard_block import (
    HRBlockEncoder,
    HRBlockParams,
    best_blocks,
    rare_variance,
    uniform_share,
)
from ldp.encoders.hadamard_response import HREncoder, HRParams
from ldp.plan import count_variance
from ldp.plan.oracles import recommend
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import audit_encoder, output_distribution
from ldp.protocols import get_protocol

LABELS = ("a", "b", "c", "d", "e", "f", "g")
PARTIAL = HRBlockParams(3.0, 7, 3, LABELS)  # blocks of 3, 2, 2 values; b = 4, K = 12


def hadamard(k: int) -> np.ndarray:
    """The Sylvester Hadamard matrix ``H[i, j] = (−1)^popcount(i & j)``, built directly."""
    i = np.arange(k)
    return np.where(np.bitwise_count(i[:, None] & i[None, :]) % 2 == 0, 1, -1)


def own_sets(params: HRBlockParams) -> np.ndarray:
    """``(d, K)`` booleans: ``j ∈ C_x``, from the definition (block ``x mod B``, row ``⌊x/B⌋ + 1``)."""
    blocks, b, d = params.nblocks, params.block_order, params.domain_size
    h = hadamard(b)
    member = np.zeros((d, params.order), bool)
    for x in range(d):
        i, r = x % blocks, x // blocks + 1
        member[x, i * b:(i + 1) * b] = h[r] == 1
    return member


def law(params: HRBlockParams) -> np.ndarray:
    """``(d, K)``: ``Pr[j | x]`` by the stated formula."""
    g, k, s = params.gamma, params.order, params.block_order // 2
    return np.where(own_sets(params), g / k + (1 - g) / s, g / k)


@pytest.mark.parametrize("make, rule", [
    (lambda: HRBlockParams(0.0, 3), "epsilon must be finite and > 0"),
    (lambda: HRBlockParams(1.0, 1), "domain_size must be in"),
    (lambda: HRBlockParams(1.0, 4, 0), r"blocks must be in \[1, 4\]"),
    (lambda: HRBlockParams(1.0, 4, 5), r"blocks must be in \[1, 4\]"),
    (lambda: HRBlockParams(1.0, 4, 2.0), "blocks must be an int"),
    (lambda: HRBlockParams(1.0, 2, 1, ("a",)), "labels must have"),
    (lambda: HRBlockParams(50.0, 3, 1), "too large"),
    (lambda: HRBlockParams(1e-20, 3), "too small"),
    (lambda: HRBlockParams(1.0, 1 << 28, 1), "counters"),
])
def test_params_refused_naming_the_rule(make, rule):
    with pytest.raises((ValueError, TypeError), match=rule):
        make()


@settings(max_examples=200, deadline=None)
@given(eps=st.floats(1e-3, 60.0), d=st.integers(2, 5000), frac=st.floats(0.0, 1.0))
def test_params_valid_or_refused_with_a_reason(eps, d, frac):
    """Every (ε, d, B): either refused with a ValueError naming ε, or a layout with K = B·b, b a power of 2 above
    ⌈d/B⌉, γ strictly inside (0, 1), the charge at least ε and the exact ratio of the realized law."""
    blocks = 1 + int(frac * (d - 1))
    try:
        p = HRBlockParams(eps, d, blocks)
    except ValueError as e:
        assert "too large" in str(e) or "too small" in str(e)
        return
    b, k = p.block_order, p.order
    assert b & (b - 1) == 0 and b > -(-d // blocks) >= b // 2 and k == blocks * b
    assert 0.0 < p.gamma < 1.0 and p.privacy_cost.epsilon >= eps
    g = Fraction(p.gamma)
    ratio = (g / k + (1 - g) / (b // 2)) / (g / k)
    assert p.effective_epsilon == pytest.approx(math.log(ratio), rel=1e-12)
    assert HRBlockParams.from_dict(json.loads(json.dumps(p.to_dict()))) == p


def test_round_trip_discovery_and_resolved_blocks():
    p = HRBlockParams.from_labels(4.0, LABELS)
    assert p.blocks == best_blocks(4.0, 7) and p == HRBlockParams(4.0, 7, p.blocks, LABELS)
    assert HRBlockParams.from_dict(json.loads(json.dumps(PARTIAL.to_dict()))) == PARTIAL
    proto = get_protocol("hr-block")
    assert (proto.params_type, proto.encoder_type, proto.aggregate_type) == (HRBlockParams, HRBlockEncoder,
                                                                             HRBlockAggregate)
    assert (PARTIAL.block_order, PARTIAL.order, PARTIAL.schema[0].size) == (4, 12, 12)


def test_values_refused_before_any_charge():
    ledger = BudgetLedger()
    enc = HRBlockEncoder(PARTIAL, ledger=ledger, metric="m")
    for value in (7, -1, "z", 1.0, True, None):
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    enc.encode("g")
    assert ledger.spent("m", "lifetime").epsilon == PARTIAL.privacy_cost.epsilon


@pytest.mark.parametrize("params", [PARTIAL, HRBlockParams(4.0, 5), HRBlockParams(2.0, 9, 2),
                                    HRBlockParams(0.5, 4, 1)])
def test_client_law_is_the_block_sets_and_the_audit_the_claim(params):
    """Pr[j | x] = γ/K + (1−γ)/s on C_x and γ/K elsewhere, exactly; the audit attains the stated ε."""
    want = law(params)
    for x in range(params.domain_size):
        dist = output_distribution(lambda src, x=x: HRBlockEncoder(params, rng=src).encode(x).payload["j"])
        got = [float(dist.get(j, 0)) for j in range(params.order)]
        np.testing.assert_allclose(got, want[x], rtol=1e-12)
    res = audit_encoder(lambda src: HRBlockEncoder(params, rng=src), range(params.domain_size))
    assert res.matches(params.privacy_cost.epsilon), (res.epsilon, params.privacy_cost)


def test_one_block_is_hadamard_response():
    """B = 1 is HR's law and HR's variance (1 − γ = 2p − 1)."""
    for eps, d in ((0.5, 3), (1.0, 6)):
        one, hr = HRBlockParams(eps, d, 1), HRParams(eps, d)
        assert one.order == hr.order and one.blocks == best_blocks(eps, d) == 1
        for x in range(d):
            a = output_distribution(lambda src, x=x, one=one: HRBlockEncoder(one, rng=src).encode(x).payload["j"])
            b = output_distribution(lambda src, x=x, hr=hr: HREncoder(hr, rng=src).encode(x).payload["j"])
            np.testing.assert_allclose([float(a[j]) for j in range(hr.order)],
                                       [float(b[j]) for j in range(hr.order)], rtol=1e-12)
        f = np.arange(d) * 100
        np.testing.assert_allclose(hrb_variance(one, f), hr_variance(hr, f), rtol=1e-12)


def test_fwht_decoder_is_the_block_support_estimator():
    """ĉ_x = (2S_x − T_i)/(1 − γ), S_x the reports in C_x and T_i those in x's block, item by item."""
    params, gen = HRBlockParams(3.0, 23, 5), np.random.default_rng(0)
    hist = gen.integers(0, 50, params.order)
    member, b = own_sets(params), params.block_order
    support = member.astype(int) @ hist
    totals = np.array([hist[(x % 5) * b:(x % 5 + 1) * b].sum() for x in range(23)])
    np.testing.assert_allclose(hrb_counts(params, hist), (2 * support - totals) / (1 - params.gamma), rtol=1e-12)


@pytest.mark.parametrize("params", [PARTIAL, HRBlockParams(5.0, 10), HRBlockParams(0.8, 5, 1)])
def test_estimator_unbiased_and_variance_exact_from_the_law(params):
    """The estimator is linear in the histogram: its mean and variance follow exactly from the per-user law
    (Σ_u Var_u of the user's term), which must be f_x and the closed form."""
    d, probs = params.domain_size, law(params)
    weights = np.stack([hrb_counts(params, np.eye(params.order)[j]) for j in range(params.order)])  # (K, d)
    f = np.array([700, 0, 300, 50, 5, 0, 120, 9, 1, 30][:d])
    mean = f @ (probs @ weights)
    var = f @ (probs @ weights**2 - (probs @ weights) ** 2)
    np.testing.assert_allclose(mean, f, atol=1e-9)
    np.testing.assert_allclose(var, hrb_variance(params, f), rtol=1e-10)


def test_batch_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"in \[0, 7\)"):
        HRBlockEncoder(PARTIAL).encode_batch(np.array([0, 7]))


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0])
@pytest.mark.parametrize("d", [2, 3, 16, 37, 200])
def test_best_blocks_is_the_argmin_over_every_b(eps, d):
    var = [rare_variance(uniform_share(eps, b), b, d) for b in range(1, d + 1)]
    best = best_blocks(eps, d)
    assert var[best - 1] == pytest.approx(min(var), rel=1e-11)
    assert best == 1 + int(np.argmin(np.array(var) * (1 + 1e-12 * np.arange(d))))


def test_planner_choice_and_its_numbers():
    """B = 1 at ε ≤ 1; at large ε the loss against 4e^ε/(e^ε−1)² stays near 2(1 − e^−ε); count_variance is the
    exact variance of a value of a fullest block in the planner's even population."""
    assert best_blocks(0.5, 16) == best_blocks(1.0, 1024) == 1
    for eps, d, ratio in ((4.0, 1024, 1.95), (8.0, 1024, 2.05)):
        e, p = math.exp(eps), HRBlockParams.for_epsilon(eps, d)
        per_user = count_variance(p, 1e6, 0.0, d) / 1e6
        assert per_user / (4 * e / (e - 1) ** 2) < ratio
        assert per_user < count_variance(HRParams(eps, d), 1e6, 0.0, d) / 1e6 / 5
    p, n, c = PARTIAL, 13_000, 1_000
    truth = np.full(7, (n - c) // 6)
    truth[0] = c  # value 0: block 0, the fullest (3 values)
    assert HRBlockAggregate.count_variance(p, n, c, 7) == pytest.approx(hrb_variance(p, truth)[0], rel=1e-12)
    ranking = recommend(4.0, 1024)
    order = [pl.protocol for pl in ranking]
    assert "hr-block" in order and order.index("hr-block") < order.index("hr")


def test_estimate_labels_and_plug_in_errors():
    truth = np.array([4000, 3000, 2000, 1000, 0, 0, 0])
    agg = HRBlockAggregate.simulate(PARTIAL, truth, 3)
    est = agg.estimate()
    assert est.items == list(LABELS) and agg.n == 10_000
    exact = np.sqrt(hrb_variance(PARTIAL, truth))
    assert np.all(np.abs(est.count - truth) < 5 * exact)
    np.testing.assert_allclose(est.std_error, exact, rtol=0.1)
    np.testing.assert_allclose(block_totals(PARTIAL, truth), [5000, 3000, 2000, 5000, 3000, 2000, 5000])
