"""Hadamard Response (protocol ``hr``): params, audit, FWHT estimator and exact variance, batch law, wire format."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ldp.decoders.hadamard_response import HRAggregate, hr_counts, hr_variance
from ldp.decoders.pure import pure_count_variance
from ldp.decoders.sketch import fwht
from ldp.encoders.hadamard_response import HREncoder, HRParams, hr_order
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import output_distribution
from ldp.protocols import get_protocol

LABELS = ("a", "b", "c")
HR = HRParams(1.0, 3, LABELS)


def hadamard(k: int) -> np.ndarray:
    """The Sylvester Hadamard matrix ``H[i, j] = (−1)^popcount(i & j)``, built directly."""
    i = np.arange(k)
    return np.where(np.bitwise_count(i[:, None] & i[None, :]) % 2 == 0, 1, -1)


@pytest.mark.parametrize("make, rule", [
    (lambda: HRParams(0.0, 3), "epsilon must be finite and > 0"),
    (lambda: HRParams(math.nan, 3), "epsilon must be finite"),
    (lambda: HRParams(1.0, 1), "domain_size must be in"),
    (lambda: HRParams(1.0, 3.0), "domain_size must be an int"),
    (lambda: HRParams(1.0, 2, ("a",)), "labels must have"),
    (lambda: HRParams(1.0, 2, ("a", "a")), "labels must be distinct"),
    (lambda: HRParams(50.0, 3), "too large"),
    (lambda: HRParams(1e-20, 3), "too small"),
    (lambda: HRParams(1.0, 1 << 28), "counters"),
])
def test_params_refused_naming_the_rule(make, rule):
    with pytest.raises((ValueError, TypeError), match=rule):
        make()


def test_params_round_trip_discovery_and_probabilities():
    assert HRParams.from_dict(json.loads(json.dumps(HR.to_dict()))) == HR == HRParams.from_labels(1.0, LABELS)
    proto = get_protocol("hr")
    assert proto.params_type is HRParams and proto.encoder_type is HREncoder and proto.aggregate_type is HRAggregate
    assert [hr_order(d) for d in (2, 3, 4, 7, 8, 65_536)] == [4, 4, 8, 8, 16, 131_072]
    assert HR.p == pytest.approx(math.e / (math.e + 1), rel=1e-15) and HR.q == 0.5
    assert HR.effective_epsilon == pytest.approx(1.0, rel=1e-12) and HR.privacy_cost.epsilon >= 1.0
    assert HR.schema[0].kind == "uint" and HR.schema[0].size == 4


def test_values_refused_before_any_charge():
    ledger = BudgetLedger()
    enc = HREncoder(HR, ledger=ledger, metric="m")
    for value in (3, -1, "z", 1.0, True, None):
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    enc.encode("b")
    assert ledger.spent("m", "lifetime").epsilon == HR.privacy_cost.epsilon


def test_client_law_is_the_hadamard_sets():
    """Each j of C_v = {j: H[v+1, j] = +1} w.p. 2p/K, each other j w.p. 2(1−p)/K, exactly."""
    params = HRParams(1.5, 5)
    k, h = params.order, hadamard(params.order)
    for v in range(5):
        dist = output_distribution(lambda src, v=v: HREncoder(params, rng=src).encode(v).payload["j"])
        want = np.where(h[v + 1] == 1, 2 * params.p / k, 2 * (1 - params.p) / k)
        np.testing.assert_allclose([float(dist.get(j, 0)) for j in range(k)], want, rtol=1e-12)


def test_fwht_decoder_is_the_support_count_estimator():
    params, gen = HRParams(1.0, 11), np.random.default_rng(0)
    hist = gen.integers(0, 50, params.order)
    h = hadamard(params.order)
    support = np.array([hist[h[v + 1] == 1].sum() for v in range(11)])  # S_v, item by item
    n = hist.sum()
    np.testing.assert_allclose(hr_counts(params, hist), (support - n / 2) / (params.p - 0.5), rtol=1e-12)
    np.testing.assert_allclose(fwht(hist.reshape(1, -1))[0], h @ hist)


def test_variance_closed_form_and_ratio_to_the_optimum():
    f = np.array([500, 300, 200])
    np.testing.assert_allclose(hr_variance(HR, f), 1000 / (2 * HR.p - 1) ** 2 - f, rtol=1e-12)
    np.testing.assert_allclose(hr_variance(HR, f), pure_count_variance(f, 1000, HR.p, 0.5), rtol=1e-12)
    for eps in (0.5, 1.0, 2.0, 4.0):  # per user at f_v ≪ n: (e^ε+1)²/(4e^ε) times the optimum
        e = math.exp(eps)
        per_user = hr_variance(HRParams(eps, 4), [0, 0, 0, 1_000_000])[0] / 1_000_000
        assert per_user / (4 * e / (e - 1) ** 2) == pytest.approx((e + 1) ** 2 / (4 * e), rel=1e-9)


def test_batch_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        HREncoder(HR).encode_batch(np.array([0, 3]))


