"""Unary encoding: SUE, OUE, bucketized OUE and longitudinal OUE (L-OUE)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from ldp.decoders.histogram import BucketOUEAggregate
from ldp.decoders.randomized_response import grr_variance
from ldp.decoders.unary import UnaryAggregate, unary_variance
from ldp.encoders.histogram import BucketOUEParams
from ldp.encoders.randomized_response import GRRParams
from ldp.encoders.unary import LOUEEncoder, LOUEParams, OUEEncoder, OUEParams, SUEParams, loue_leakage
from ldp.plan.frequency import default_params, plan
from ldp.privacy.accountant import BudgetLedger, MemoizedCharge
from ldp.privacy.audit import audit
from ldp.protocols import get_protocol
from ldp.randomness import RandomSource

LABELS = ("a", "b", "c")
OUE = OUEParams(1.0, 3, LABELS)
SUE = SUEParams(1.0, 3, LABELS)
LOUE = LOUEParams(2.0, 0.5, 3, LABELS)
LSUE = LOUEParams(2.0, 0.5, 3, LABELS, permanent="sue")
BOUE = BucketOUEParams(1.0, (0, 10, 20, 50))


def encoder(params, **kw):
    return get_protocol(params.protocol).encoder_type(params, **kw)


# ------------------------------------------------------------------------------------------- params
@pytest.mark.parametrize("make, rule", [
    (lambda: OUEParams(0.0, 3), "epsilon must be finite and > 0"),
    (lambda: SUEParams(math.inf, 3), "epsilon must be finite"),
    (lambda: OUEParams(1.0, 1), "domain_size must be in"),
    (lambda: OUEParams(1.0, 3.0), "domain_size must be an int"),
    (lambda: SUEParams(1.0, 2, ("a",)), "labels must have"),
    (lambda: SUEParams(1.0, 2, ("a", "a")), "labels must be distinct"),
    (lambda: SUEParams(1.0, 2, ("a", 1)), "labels must be strings"),
    (lambda: OUEParams(50.0, 3), "too large"),
    (lambda: SUEParams(100.0, 3), "too large"),
    (lambda: OUEParams(1e-20, 3), "too small"),
    (lambda: OUEParams(1.0, 1 << 22), "bytes as an upload line"),
    (lambda: LOUEParams(1.0, 1.0, 3), "epsilon < epsilon_perm"),
    (lambda: LOUEParams(2.0, 1.0, 3, permanent="grr"), "permanent must be one of"),
    (lambda: LOUEParams(60.0, 1.0, 3), "too large"),
    (lambda: BucketOUEParams(1.0, (0, 1, 1)), "strictly increasing"),
    (lambda: BucketOUEParams(-1.0, (0, 1, 2)), "epsilon must be finite and > 0"),
])
def test_params_refused_naming_the_rule(make, rule):
    with pytest.raises((ValueError, TypeError), match=rule):
        make()


def test_params_round_trip_discovery_and_probabilities():
    for params in (OUE, SUE, LOUE, LSUE, BOUE):
        assert type(params).from_dict(json.loads(json.dumps(params.to_dict()))) == params
        proto = get_protocol(params.protocol)
        assert proto.params_type is type(params) and proto.aggregate_type is not None
    e = math.exp(1.0)
    assert OUE.p == 0.5 and OUE.q == pytest.approx(1 / (e + 1), rel=1e-15)
    assert SUE.p == pytest.approx(math.exp(0.5) / (math.exp(0.5) + 1), rel=1e-15) and SUE.p + SUE.q == 1.0
    for params in (OUE, SUE):  # the stated ε is the realized law's, and ε itself up to rounding
        assert params.effective_epsilon == pytest.approx(1.0, rel=1e-12)
        assert params.privacy_cost.epsilon == max(1.0, params.effective_epsilon)
    assert BOUE.labels == ("[0, 10)", "[10, 20)", "[20, 50]") and BOUE.oue == OUEParams(1.0, 3, BOUE.labels)
    assert LOUE.realized_epsilon == pytest.approx(0.5, rel=1e-12) and LOUE.memo_cap == LOUE.perm.privacy_cost


@pytest.mark.parametrize("params, bad", [
    (OUE, [3, -1, "z", 1.0, True, None]),
    (SUE, [3, "z", b"a"]),
    (LOUE, [3, -1, "z", 0.5]),
    (BOUE, [-1.0, 51.0, math.nan, "5", True]),
])
def test_values_refused_before_any_charge(params, bad):
    ledger = BudgetLedger()
    enc = encoder(params, ledger=ledger, metric="m")
    for value in bad:
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    enc.encode(15.0 if isinstance(params, BucketOUEParams) else params.labels[1])
    assert ledger.spent("m", "lifetime").epsilon > 0.0


# ------------------------------------------------------------------------------------ exact audits


def loue_run(params: LOUEParams):
    def run(xs, src: RandomSource):
        enc = LOUEEncoder(params, secret=b"s", rng=src, prr_rng=src)
        return tuple(enc.encode(x).payload["bits"].to01() for x in xs)
    return run


# exhaustive path enumeration in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@pytest.mark.parametrize("params", [LOUE, LSUE, LOUEParams(3.0, 1.0, 2), LOUEParams(1.0, 0.9, 3, permanent="sue")])
def test_loue_audits_one_two_and_three_reports(params):
    """One report: the stated ε. t reports of one value: exactly L(t), and within min(t·ε, ε_perm) — the
    per-bit argument (docs/protocols/unary.md), checked here by exact enumeration before the ledger relies on it."""
    d = params.domain_size
    one = audit([(v,) for v in range(d)], loue_run(params))
    assert one.matches(params.realized_epsilon) and params.privacy_cost.epsilon >= one.epsilon * (1 - 1e-12)
    assert params.report_charge.epsilon == pytest.approx(params.privacy_cost.epsilon, rel=1e-12)  # c = ε1
    cap = params.memo_cap.epsilon
    for t in (2, 3):
        res = audit([(v,) * t for v in range(d)], loue_run(params))
        assert res.matches(params.leakage(t), rel_tol=1e-7)
        assert res.epsilon <= min(t * params.report_charge.epsilon, cap) * (1 + 1e-12)
    assert params.leakage(1) == pytest.approx(params.realized_epsilon, rel=1e-9)
    assert all(params.leakage(t) <= min(t * params.privacy_cost.epsilon, cap) * (1 + 1e-12) for t in range(1, 65))


@pytest.mark.parametrize("permanent", ["oue", "sue"])
def test_loue_charge_is_one_reports_epsilon_over_a_grid(permanent):
    for eps_perm in (0.5, 1.0, 2.0, 4.0, 8.0):
        for ratio in (0.1, 0.5, 0.9, 0.99):
            params = LOUEParams(eps_perm, eps_perm * ratio, 4, permanent=permanent)
            assert params.report_charge.epsilon == pytest.approx(params.privacy_cost.epsilon, rel=1e-9)


# exhaustive path enumeration in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
def test_loue_changing_values_same_pattern_is_bounded_by_the_charges_and_the_pattern_is_not():
    c = LOUE.report_charge.epsilon
    res = audit([(a, b) for a, b in itertools.permutations(range(3), 2)], loue_run(LOUE))
    assert res.epsilon <= 2 * c * (1 + 1e-12)  # distinct values: independent permanent responses
    # a change against no change: the change point leaks beyond either trajectory's charge (as L-GRR's)
    res = audit([(0, 1), (2, 2)], loue_run(LOUE))
    assert res.epsilon > 2 * c


def test_loue_leakage_of_one_report_is_its_epsilon():
    p1, q1, f = LOUE.perm.p, LOUE.perm.q, LOUE.flip
    ps, qs = p1 * (1 - f) + (1 - p1) * f, q1 * (1 - f) + (1 - q1) * f
    assert loue_leakage(p1, q1, f, 1) == pytest.approx(math.log(ps * (1 - qs) / ((1 - ps) * qs)), rel=1e-12)
    assert (LOUE.p, LOUE.q) == pytest.approx((ps, qs), rel=1e-15)


# ------------------------------------------------------------------------------------ the ledger
def test_ledger_loue_charges_per_value_with_the_memoized_bound():
    c, cap = LOUE.report_charge.epsilon, LOUE.memo_cap.epsilon
    ledger = BudgetLedger()
    enc = LOUEEncoder(LOUE, secret=b"s", ledger=ledger, metric="m")
    for t in range(1, 8):
        enc.encode("a")
        assert ledger.spent("m", "lifetime").epsilon == pytest.approx(min(t * c, cap))
    enc.encode("b")
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(cap + c)
    assert isinstance(enc.charge_for(0), MemoizedCharge) and enc.charge_for(0).cap == LOUE.memo_cap
    assert enc.permanent_response(0) == LOUEEncoder(LOUE, secret=b"s").permanent_response(0)
    assert enc.permanent_response(0) != LOUEEncoder(LOUE, secret=b"t").permanent_response(0) or \
        enc.permanent_response(1) != LOUEEncoder(LOUE, secret=b"t").permanent_response(1)


# ------------------------------------------------------------------- estimator: mean and variance
def test_variance_forms_agree_and_oue_beats_grr_past_3e_eps_plus_2():
    f, n = np.array([500, 300, 200]), 1000
    for params in (OUE, SUE, LOUE):
        p, q = params.p, params.q
        wang = n * q * (1 - q) / (p - q) ** 2 + f * (1 - p - q) / (p - q)
        np.testing.assert_allclose(unary_variance(params, f), wang, rtol=1e-12)
    for eps in (0.5, 1.0, 2.0, 4.0):
        e = math.exp(eps)
        per_user = OUEParams(eps, 4).q * (1 - OUEParams(eps, 4).q) / (0.5 - OUEParams(eps, 4).q) ** 2
        assert per_user == pytest.approx(4 * e / (e - 1) ** 2, rel=1e-12)
        cross = 3 * e + 2
        for d in (math.floor(cross) - 1, math.ceil(cross) + 1):
            zero = np.zeros(d, np.int64)
            zero[1] = 1000
            oue, grr = unary_variance(OUEParams(eps, d), zero)[0], grr_variance(GRRParams(eps, d), zero)[0]
            assert (oue < grr) == (d > cross)


# ------------------------------------------------------------------ batch encoding's exact law


def test_batch_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        OUEEncoder(OUE).encode_batch(np.array([0, 3]))


# ---------------------------------------------------------------- aggregate, wire format and rejects


def test_fold_is_the_per_bit_count():
    rows = OUEEncoder(OUEParams(1.0, 13)).encode_batch(np.arange(1000) % 13, rng=2).columns["bits"]
    agg = UnaryAggregate(OUEParams(1.0, 13))
    agg._fold({"bits": rows})
    np.testing.assert_array_equal(agg.ones, np.unpackbits(rows, axis=1, bitorder="little")[:, :13].sum(axis=0))
    assert BucketOUEAggregate.simulate(BOUE, [1, 2, 3], rng=0).estimate().protocol == "bucket-oue"


# ------------------------------------------------------------------------------- planner, client
def test_planner_knows_unary():
    for name in ("sue", "oue", "bucket-oue", "loue"):
        params = default_params(name, 1.0, 8)
        pl = plan(name, n=10_000, domain_size=8, epsilon=1.0, reports=5)
        assert pl.report_bits == 8 and pl.epsilon_per_report == params.privacy_cost
        count = np.zeros(8, np.int64)
        count[0], count[1:] = 1250, 1250
        assert pl.std_error_count == pytest.approx(math.sqrt(unary_variance(params, count)[0]), rel=1e-9)
    pl = plan("loue", n=10_000, domain_size=8, epsilon=1.0, reports=10)
    assert pl.epsilon_per_value == LOUEParams(4.0, 1.0, 8).memo_cap
    assert set(pl.per_value_by_charging) == {"min", "upfront"}


def test_telemetry_client_round_trip(tmp_path):
    from ldp.client.runtime import TelemetryClient
    from ldp.spec import CollectionSpec

    doc = {"spec_version": 1, "name": "app", "budget": {"per_window": 50, "lifetime": 100},
           "upload": {"min_interval_seconds": 0, "max_batch": 100},
           "metrics": {
               "browser": {"protocol": "oue", "params": {"epsilon": 1.0, "domain_size": 3, "labels": list(LABELS)},
                           "budget": {"per_report": 2}},
               "mode": {"protocol": "loue", "params": {"epsilon_perm": 2.0, "epsilon": 0.5, "domain_size": 3},
                        "budget": {"per_report": 2}}}}
    spec = CollectionSpec.from_dict(doc)
    with TelemetryClient(spec, tmp_path / "state.db", rng=1, simulation=True) as client:
        for v in ("a", "b", "b"):
            client.record("browser", v)
        for _ in range(6):
            client.record("mode", 1)
        assert client.spent("browser", "lifetime").epsilon == pytest.approx(3 * OUE.privacy_cost.epsilon)
        assert client.spent("mode", "lifetime") == LOUEParams(2.0, 0.5, 3).memo_cap
        lines = [json.dumps(json.loads(item.line)["report"]) for item in client.pending()]
    assert len(lines) == 9
    browser = UnaryAggregate(OUE)
    assert browser.add_json_lines(lines) == 3 and sum(browser.rejected.values()) == 6
    mode = UnaryAggregate(LOUEParams(2.0, 0.5, 3))
    assert mode.add_json_lines(lines) == 6 and mode.estimate().n == 6
