"""Longitudinal protocols: L-GRR and the memoized 1BitMean (α-point rounding, output perturbation)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldp.batch.longitudinal import lgrr_memo, memo_mean_devices
from ldp.decoders.longitudinal import LGRRAggregate, MemoMeanAggregate
from ldp.encoders.longitudinal import LGRREncoder, LGRRParams, MemoMeanEncoder, MemoMeanParams, lgrr_leakage
from ldp.privacy.accountant import BudgetLedger, MemoizedCharge, PrivacyCost
from ldp.privacy.audit import audit
from ldp.randomness import RandomSource

LG = LGRRParams(2.0, 0.5, 3)
MM = MemoMeanParams(1.0, 0.0, 10.0, buckets=2, gamma=0.1)
ALPHAS = (0, 1 << 62, 1 << 63, (1 << 64) - 1)  # α = 0, 1/4, 1/2, just below 1


def lgrr_run(params: LGRRParams):
    def run(xs, src: RandomSource):
        enc = LGRREncoder(params, secret=b"s", rng=src, prr_rng=src)
        return tuple(enc.encode(x).payload["index"] for x in xs)
    return run


def mm_run(params: MemoMeanParams, alpha: int):
    def run(xs, src: RandomSource):
        enc = MemoMeanEncoder(params, secret=b"s", rng=src, prr_rng=src, alpha=alpha)
        return tuple(enc.encode(x).payload["bit"] for x in xs)
    return run


def brute_leakage(params: LGRRParams, t: int) -> float:
    """L(t) by enumerating every report sequence (the /tmp/lgrr.py check), floats."""
    k, p1, p2 = params.domain_size, params.permanent.p, params.instantaneous.p
    q1, q2 = (1 - p1) / (k - 1), (1 - p2) / (k - 1)
    worst = 0.0
    for reps in itertools.product(range(k), repeat=t):
        probs = [sum((p1 if m == v else q1) * math.prod(p2 if r == m else q2 for r in reps) for m in range(k))
                 for v in range(k)]
        worst = max(worst, math.log(max(probs) / min(probs)))
    return worst


# ------------------------------------------------------------------------------------------- params
@pytest.mark.parametrize("kwargs, rule", [
    ({"epsilon_perm": 1.0, "epsilon": 1.0, "domain_size": 3}, "epsilon < epsilon_perm"),
    ({"epsilon_perm": 2.0, "epsilon": 0.0, "domain_size": 3}, "epsilon must be finite and > 0"),
    ({"epsilon_perm": math.inf, "epsilon": 1.0, "domain_size": 3}, "epsilon_perm must be finite"),
    ({"epsilon_perm": 2.0, "epsilon": 1.0, "domain_size": 1}, "domain_size must be in"),
    ({"epsilon_perm": 2.0, "epsilon": 1.0, "domain_size": 2, "labels": ("a",)}, "labels must have"),
    ({"epsilon_perm": 60.0, "epsilon": 1.0, "domain_size": 2}, "too large"),
])
def test_lgrr_params_refused_naming_the_rule(kwargs, rule):
    with pytest.raises(ValueError, match=rule):
        LGRRParams(**kwargs)


@pytest.mark.parametrize("kwargs, rule", [
    ({"gamma": 0.5}, r"gamma .* must be in \[0, 0.5\)"),
    ({"gamma": -0.1}, "gamma"),
    ({"buckets": 0}, "buckets must be in"),
    ({"buckets": (1 << 16) + 1}, "buckets must be in"),
    ({"high": 0.0}, "low < high"),
    ({"epsilon": -1.0}, "epsilon must be finite and > 0"),
])
def test_memo_mean_params_refused_naming_the_rule(kwargs, rule):
    args = {"epsilon": 1.0, "low": 0.0, "high": 10.0, **kwargs}
    with pytest.raises(ValueError, match=rule):
        MemoMeanParams(**args)


@pytest.mark.parametrize("enc, bad", [
    (lambda led: LGRREncoder(LG, ledger=led, metric="m"), [3, -1, "r", 1.0, True]),
    (lambda led: MemoMeanEncoder(MM, ledger=led, metric="m"), [-0.1, 10.5, math.nan, math.inf, "1", True]),
])
def test_values_refused_before_any_charge(enc, bad):
    ledger = BudgetLedger()
    e = enc(ledger)
    for value in bad:
        with pytest.raises((ValueError, TypeError)):
            e.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0


# ------------------------------------------------------------------------------------ exact audits


@pytest.mark.parametrize("k, e_perm, e_one", [(3, 2.0, 0.5), (5, 2.0, 0.5), (2, 4.0, 1.0)])
def test_lgrr_repeated_reports_of_one_value_leak_exactly_L_t(k, e_perm, e_one):
    params = LGRRParams(e_perm, e_one, k)
    c, cap = params.report_charge.epsilon, params.memo_cap.epsilon
    for t in (2, 3):
        res = audit([(v,) * t for v in range(k)], lgrr_run(params))
        assert res.matches(params.leakage(t)) and params.leakage(t) == pytest.approx(brute_leakage(params, t))
        assert res.epsilon <= min(t * c, cap) * (1 + 1e-12)


def test_lgrr_the_rappor_per_bit_argument_fails_for_k_ary():
    """Two reports of one value can leak more than 2 ε: the ``min`` charge is L(t)/t, not ε."""
    for k, want in ((5, 1.0045), (8, 1.0498)):
        params = LGRRParams(2.0, 0.5, k)
        assert params.leakage(2) == pytest.approx(want, abs=1e-4) and params.leakage(2) > 2 * 0.5
        assert params.report_charge.epsilon == pytest.approx(want / 2, abs=1e-4)
    assert LGRRParams(2.0, 0.5, 5).leakage(2) == pytest.approx(brute_leakage(LGRRParams(2.0, 0.5, 5), 2))
    big = LGRRParams(8.0, 1.0, 1 << 20)  # a large domain: two reports nearly reveal the memoized value
    assert big.leakage(2) > 6.6 and big.report_charge.epsilon > 3.3


def test_lgrr_report_charge_bounds_every_t():
    for params in (LG, LGRRParams(4.0, 1.0, 100), LGRRParams(6.0, 0.5, 1000)):
        c, cap = params.report_charge.epsilon, params.memo_cap.epsilon
        for t in range(1, 40):
            assert params.leakage(t) <= min(t * c, cap) * (1 + 1e-12)
    assert lgrr_leakage(LG.permanent.p, LG.instantaneous.p, 3, 200) <= LG.memo_cap.epsilon
    wide = LGRRParams(10.0, 0.05, 3)  # no T within MAX_CHARGE_REPORTS: "min" charges like "upfront"
    assert wide.report_charge == wide.memo_cap


def test_lgrr_changing_values_same_pattern_is_bounded_by_the_charges_and_the_pattern_is_not():
    c = LG.report_charge.epsilon
    # distinct values: independent permanent responses, each report charged c (its first)
    res = audit([(a, b) for a, b in itertools.permutations(range(3), 2)], lgrr_run(LG))
    assert res.epsilon <= 2 * c * (1 + 1e-12)
    res = audit([(a, a, b) for a, b in itertools.permutations(range(3), 2)], lgrr_run(LG))
    assert res.epsilon <= (min(2 * c, 2.0) + c) * (1 + 1e-12)
    # a change against no change: the change point leaks beyond either trajectory's charge (documented)
    res = audit(list(itertools.product(range(3), repeat=2)), lgrr_run(LG))
    assert res.epsilon == pytest.approx(1.0545, abs=1e-4) and res.epsilon > 2 * c
    assert sorted(len(set(x)) for x in res.worst_inputs) == [1, 2]  # no change against a change


@pytest.mark.parametrize("params", [MM, MemoMeanParams(1.0, 0.0, 10.0, buckets=2),
                                    MemoMeanParams(0.5, -1, 1, buckets=1)])
def test_memo_mean_one_report_audit_is_the_stated_epsilon_for_every_alpha(params):
    xs = [(params.low,), (params.low + 0.3 * (params.high - params.low),), (params.high,)]
    for alpha in ALPHAS:
        res = audit(xs, mm_run(params, alpha))
        assert res.matches(params.realized_epsilon)
    assert params.privacy_cost.epsilon == params.realized_epsilon <= params.epsilon
    if params.gamma == 0:
        assert params.realized_epsilon == params.memo_cap.epsilon


def test_memo_mean_repeated_reports_leak_at_most_min_t_eps_cap():
    eps1, cap = MM.privacy_cost.epsilon, MM.memo_cap.epsilon
    assert eps1 < cap
    for t, alpha in itertools.product((2, 3), ALPHAS):
        res = audit([(MM.low,) * t, (4.0,) * t, (MM.high,) * t], mm_run(MM, alpha))
        assert res.epsilon <= min(t * eps1, cap) * (1 + 1e-12)
        assert res.epsilon > eps1  # repeats leak more than one report (γ > 0), never more than the memo
    res = audit([(MM.low,) * 3, (MM.high,) * 3], mm_run(MemoMeanParams(1.0, 0.0, 10.0, buckets=2), 0))
    assert res.matches(MM.memo_cap.epsilon)  # γ = 0: three reports are the memoized bit, ε exactly


def test_memo_mean_changing_values_compose_per_rounded_value():
    eps1 = MM.privacy_cost.epsilon
    # every sequence of two edges (α = 0: x = edge j rounds to j): the same pattern of distinct edges
    res = audit([(0.0, 5.0), (5.0, 10.0), (10.0, 0.0)], mm_run(MM, 0))
    assert res.epsilon <= 2 * eps1 * (1 + 1e-12)
    res = audit([(0.0, 0.0, 5.0), (10.0, 10.0, 0.0)], mm_run(MM, 0))
    assert res.epsilon <= (2 * eps1 + eps1) * (1 + 1e-12)


# ------------------------------------------------------------------------------ memoization, ledger
def test_memoized_responses_come_from_the_secret():
    a, b = LGRREncoder(LG, secret=b"x"), LGRREncoder(LG, secret=b"x")
    assert [a.permanent_response(v) for v in range(3)] == [b.permanent_response(v) for v in range(3)]
    m1, m2 = MemoMeanEncoder(MM, secret=b"x"), MemoMeanEncoder(MM, secret=b"x")
    assert m1.alpha == m2.alpha and [m1.memo_bit(j) for j in range(3)] == [m2.memo_bit(j) for j in range(3)]
    zero = MemoMeanEncoder(MemoMeanParams(1.0, 0.0, 10.0, buckets=4), secret=b"x")
    assert len({zero.encode(3.3).payload["bit"] for _ in range(20)}) == 1  # γ = 0: replayed as is
    assert MemoMeanEncoder(MM, secret=b"y").alpha != m1.alpha


def test_alpha_rounding_is_the_rule():
    enc = MemoMeanEncoder(MemoMeanParams(1.0, 0.0, 10.0, buckets=4), secret=b"s", alpha=1 << 63)  # α = 1/2
    assert [enc.prepare(x) for x in (0.0, 1.2, 1.3, 2.5, 3.7, 3.8, 10.0)] == [0, 0, 1, 1, 1, 2, 4]


def test_ledger_lgrr_charges_per_value_with_the_memoized_bound():
    c, cap = LG.report_charge.epsilon, LG.memo_cap.epsilon
    ledger = BudgetLedger()
    enc = LGRREncoder(LG, secret=b"s", ledger=ledger, metric="m")
    for t in range(1, 8):
        enc.encode(1)
        assert ledger.spent("m", "lifetime").epsilon == pytest.approx(min(t * c, cap))
    enc.encode(2)
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(cap + c)
    up = BudgetLedger()
    enc = LGRREncoder(LG, secret=b"s", ledger=up, metric="m", charging="upfront")
    for _ in range(5):
        enc.encode(0)
    assert up.spent("m", "lifetime").epsilon == pytest.approx(cap)
    for v in range(3):
        enc.encode(v)
    assert up.spent("m", "lifetime").epsilon == pytest.approx(3 * cap)  # lifetime ≤ k·ε_perm
    charge = enc.charge_for(0)
    assert isinstance(charge, MemoizedCharge) and charge.cap == LG.memo_cap
    with pytest.raises(ValueError, match="charging"):
        LGRREncoder(LG, charging="never")


def test_ledger_memo_mean_lifetime_spend_is_per_rounded_value():
    eps1, cap = MM.privacy_cost.epsilon, MM.memo_cap.epsilon
    ledger = BudgetLedger()
    enc = MemoMeanEncoder(MM, secret=b"s", ledger=ledger, metric="m", alpha=1 << 63)
    for _ in range(10):  # 1.0 and 2.0 both round to edge 0 with α = 1/2: one memoized bit
        enc.encode(1.0)
        enc.encode(2.0)
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(cap)
    enc.encode(9.0)  # edge 2
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(cap + eps1)
    for x in np.linspace(0, 10, 50):
        for _ in range(6):
            enc.encode(float(x))
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx((MM.buckets + 1) * cap)  # the lifetime bound


# ------------------------------------------------------------------------------ estimators, batches


def _lgrr_batch_estimate(params: LGRRParams, values: np.ndarray, seed: int) -> np.ndarray:
    agg = LGRRAggregate(params)
    agg.add(LGRREncoder(params, secret=b"s").encode_batch(values, rng=seed))
    return agg.estimate().count


def test_panels_replay_the_memoized_responses():
    params = LGRRParams(8.0, 0.5, 3)  # the permanent response is nearly the value, reports noisy
    memo = lgrr_memo(params, 4000, rng=1)
    enc = LGRREncoder(params, secret=b"s")
    values = np.zeros(4000, dtype=np.int64)
    days = [enc.encode_batch(values, rng=d, memo=memo).columns["index"] for d in range(3)]
    assert not np.array_equal(days[0], days[1])
    mm = MemoMeanParams(2.0, 0.0, 10.0, buckets=4)
    devices = memo_mean_devices(mm, 1000, rng=2)
    m_enc = MemoMeanEncoder(mm, secret=b"s")
    x = np.full(1000, 3.3)
    b1, b2 = (m_enc.encode_batch(x, rng=d, devices=devices).columns["bit"] for d in (5, 6))
    assert np.array_equal(b1, b2)  # γ = 0 and the same values: the same bits every day
    with pytest.raises(ValueError, match="one row"):
        enc.encode_batch(values[:10], memo=memo)


# --------------------------------------------------------------------------------- aggregates, wire


def test_estimates_print():
    agg = LGRRAggregate.simulate(LGRRParams(2.0, 1.0, 3, ("r", "g", "b")), [60, 30, 10], rng=0)
    assert agg.estimate().items == ["r", "g", "b"]
    est = MemoMeanAggregate.simulate(MM, [1.0, 9.0] * 50, rng=0).estimate()
    assert est.protocol == "memo-mean" and "correlated" in est.notes[0]


# ---------------------------------------------------------------------------------------- client
def test_telemetry_client_gives_memoizing_encoders_the_metric_secret(tmp_path):
    from ldp.client.runtime import TelemetryClient
    from ldp.spec import CollectionSpec

    doc = {"spec_version": 1, "name": "app", "budget": {"per_window": 50, "lifetime": 100},
           "upload": {"min_interval_seconds": 3600, "max_batch": 3},
           "metrics": {
               "mode": {"protocol": "lgrr", "params": {"epsilon_perm": 2.0, "epsilon": 0.5, "domain_size": 3},
                        "budget": {"per_report": 2}},
               "minutes": {"protocol": "memo-mean", "params": {"epsilon": 1.0, "low": 0, "high": 600,
                                                               "buckets": 8, "gamma": 0.1},
                           "budget": {"per_report": 2}}}}
    spec = CollectionSpec.from_dict(doc)
    path = tmp_path / "state.db"
    with TelemetryClient(spec, path, rng=1, simulation=True) as client:
        mode, minutes = client._encoder("mode"), client._encoder("minutes")
        assert isinstance(mode, LGRREncoder) and isinstance(minutes, MemoMeanEncoder)
        assert mode.secret != minutes.secret
        memo, alpha = mode.permanent_response(1), minutes.alpha
        for _ in range(6):
            client.record("mode", 1)
        assert client.spent("mode", "lifetime") == LG.memo_cap
        client.record("minutes", 42.0)
        assert client.spent("minutes", "lifetime").epsilon == pytest.approx(minutes.params.privacy_cost.epsilon)
    with TelemetryClient(spec, path, rng=2, simulation=True) as again:  # reopened: the same secrets
        assert again._encoder("mode").permanent_response(1) == memo and again._encoder("minutes").alpha == alpha
    with TelemetryClient(spec, tmp_path / "other.db", rng=3, simulation=True) as other:
        assert other._encoder("mode").secret != mode.secret
    assert PrivacyCost(LG.memo_cap.epsilon) == LG.memo_cap
