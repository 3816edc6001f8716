"""Tests of the ``multi`` protocol (several attributes per report): params, estimators against their exact
variances, batch and aggregate-level simulation, merge/bytes, JSON-line rejects, the client. The exact audit of
its audit examples (split and sample modes) is the conformance suite's (tests/protocols/test_conformance.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.decoders.base import Aggregate
from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.multi import MultiAggregate, inverse_moment, multi_variance, recommend_mode
from ldp.decoders.results import Estimates
from ldp.encoders.multi import MultiEncoder, MultiParams, build_component
from ldp.protocols import get_protocol, params_from_dict
from ldp.reports import Report, ReportError, canonical_json

ATTRS = (("app", "grr", {"domain_size": 3}), ("minutes", "duchi", {"low": 0, "high": 60}))
EVERY = ATTRS + (("smoker", "rr", {}), ("lat", "dbitflip", {"edges": [0, 1, 2, 4], "d": 2}),
                 ("h", "hybrid", {"low": 0, "high": 1, "cells": 16}), ("pm", "piecewise", {"low": 0, "high": 1,
                                                                                         "cells": 8}),
                 ("b", "bucket-grr", {"edges": [0, 5, 10]}))
VALUE = {"app": 2, "minutes": 12.5, "smoker": True, "lat": 3.0, "h": 0.25, "pm": 0.5, "b": 7}


def encoder(params: MultiParams, rng=1) -> MultiEncoder:
    return MultiEncoder(params, rng=rng, simulation=True)


# -- params ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["split", "sample"])
def test_params_round_trip_and_cost(mode):
    p = MultiParams(3.5, mode, EVERY)
    assert get_protocol("multi").aggregate_type is MultiAggregate
    again = params_from_dict(json.loads(json.dumps({"protocol": "multi", "params": p.to_dict()})))
    assert again == p and again.fingerprint == p.fingerprint and hash(again) == hash(p)
    as_objects = [{"name": n, "protocol": pr, "params": dict(ps)} for n, pr, ps in EVERY]
    assert MultiParams(3.5, mode, tuple(as_objects)).fingerprint == p.fingerprint
    each = 3.5 / 7 if mode == "split" else 3.5
    assert [c.privacy_cost for c in p.components] == [build_component(pr, ps, each).privacy_cost
                                                      for _, pr, ps in EVERY]
    costs = [c.privacy_cost.epsilon for c in p.components]
    assert p.privacy_cost.epsilon == pytest.approx(sum(costs) if mode == "split" else max(costs), rel=1e-12)
    names = [f.name for f in p.schema]
    assert names[:3] == (["attr", "app_index", "minutes_bit"] if mode == "sample" else
                         ["app_index", "minutes_bit", "smoker_bit"])
    assert canonical_json(p.to_dict())  # JSON-ready


@pytest.mark.parametrize("args, error, match", [
    ((0, "split", ATTRS), ValueError, "epsilon"),
    ((1, "both", ATTRS), ValueError, "mode must be"),
    ((1, "split", ATTRS[:1]), ValueError, "at least 2 attributes"),
    ((1, "split", "app"), TypeError, "sequence"),
    ((1, "split", (ATTRS[0], ATTRS[0])), ValueError, "distinct"),
    ((1, "split", (ATTRS[0], ("Bad", "grr", {"domain_size": 2}))), ValueError, "names are"),
    ((1, "split", (ATTRS[0], ("x", "rappor", {}))), ValueError, "protocol must be one of"),
    ((1, "split", (ATTRS[0], ("x", "grr", {"domain_size": 2, "epsilon": 1}))), ValueError, "must not carry epsilon"),
    ((1, "split", (ATTRS[0], ("x", "grr", {"domain_size": 1}))), ValueError, r"attributes\[1\] \(x\): grr"),
    ((1, "split", (ATTRS[0], ("x", "rr", {"p": 0.2}))), ValueError, "rr attributes take no params"),
    ((1, "split", (ATTRS[0], ("x", "duchi", {"low": 1, "high": 0}))), ValueError, "low < high"),
    ((1, "split", (ATTRS[0], ("x", "grr", [1]))), TypeError, "params must be a mapping"),
    ((1, "split", (ATTRS[0], {"name": "x", "protocol": "rr"})), ValueError, "exactly the keys"),
    ((1, "split", tuple((f"a{i}", "hybrid", {"low": 0, "high": 1}) for i in range(9))), ValueError, "at most 16"),
    ((1, "split", (ATTRS[0], ("x" * 30, "rr", {}))), ValueError, "32 characters"),
])
def test_params_validation_names_the_rule(args, error, match):
    with pytest.raises(error, match=match):
        MultiParams(*args)


# -- client values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value, error, match", [
    ([2, 12.5], TypeError, "mapping"),
    ({"app": 2}, ValueError, r"missing attributes \['minutes'\]"),
    ({"app": 2, "minutes": 1, "x": 1}, ValueError, r"unknown attributes \['x'\]"),
    ({"app": 3, "minutes": 1}, ValueError, "attribute 'app'"),
    ({"app": 1, "minutes": float("nan")}, ValueError, "attribute 'minutes'.*finite"),
    ({"app": 1, "minutes": "5"}, TypeError, "attribute 'minutes'"),
])
def test_bad_values_fail_before_any_charge(tmp_path, value, error, match):
    from ldp.privacy.accountant import BudgetLedger

    ledger = BudgetLedger(tmp_path / "l.db")
    enc = MultiEncoder(MultiParams(1, "sample", ATTRS), ledger=ledger, metric="m")
    with pytest.raises(error, match=match):
        enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0
    enc.encode({"app": 1, "minutes": 1})
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(1)


# -- reports, validation, rejects ------------------------------------------------------------------
def test_sample_reports_zero_the_other_attributes_and_bad_ones_are_rejected():
    p = MultiParams(2.0, "sample", EVERY)
    enc = encoder(p)
    reports = [enc.encode(VALUE) for _ in range(200)]
    for r in reports:
        p.validate(r)
        j = r.payload["attr"]
        for i, zeros in enumerate(p.zero_payloads):
            assert (dict((k, r.payload[k]) for k in zeros) == zeros) == (i != j) or i == j
    good = reports[0].to_dict()
    j = good["payload"]["attr"]
    other = p.names[(j + 1) % p.d]
    bad_zero = json.loads(json.dumps(good))
    field = next(f.name for f in p.schema if f.name.startswith(other + "_") and f.kind == "uint")
    bad_zero["payload"][field] = 1
    bad_attr = json.loads(json.dumps(good))
    bad_attr["payload"]["attr"] = p.d
    lines = [json.dumps(good), json.dumps(bad_zero), json.dumps(bad_attr), "{",
             json.dumps({**good, "params": "0" * 16})]
    agg, seen = MultiAggregate(p), []
    assert agg.add_json_lines(lines, on_reject=lambda item, err: seen.append(err.reason)) == 1
    assert seen == ["not_json", "bad_value", "out_of_range", "wrong_fingerprint"]
    assert dict(agg.rejected) == {"bad_value": 1, "out_of_range": 1, "not_json": 1, "wrong_fingerprint": 1}
    with pytest.raises(ReportError, match="not all zero"):
        p.validate(Report(**{k: v for k, v in {"protocol": "multi", "fingerprint": p.fingerprint,
                                                "payload": bad_zero["payload"]}.items()}))


def test_split_report_breaking_a_component_rule_is_rejected_with_its_reason():
    p = MultiParams(2.0, "split", EVERY)
    good = encoder(p).encode(VALUE).to_dict()
    bad = json.loads(json.dumps(good))
    bad["payload"]["lat_sampled"] = "111"  # dBitFlip: exactly d = 2 sampled buckets
    bad_h = json.loads(json.dumps(good))
    bad_h["payload"].update(h_pm=0, h_out=5)  # hybrid: a Duchi bit when pm = 0
    agg, seen = MultiAggregate(p), []
    agg.add_json_lines([json.dumps(x) for x in (good, bad, bad_h)], on_reject=lambda i, e: seen.append(e))
    assert agg.n == 1 and [e.reason for e in seen] == ["bad_value", "out_of_range"]
    assert "attribute 'lat'" in str(seen[0]) and "attribute 'h'" in str(seen[1])


@pytest.mark.parametrize("mode", ["split", "sample"])
def test_batch_path_rejects_the_same_rows_as_the_report_path(mode):
    p = MultiParams(2.0, mode, EVERY)
    n = 300
    gen = np.random.default_rng(5)
    values = {"app": gen.integers(0, 3, n), "minutes": gen.uniform(0, 60, n), "smoker": gen.integers(0, 2, n),
              "lat": gen.integers(0, 3, n), "h": gen.uniform(0, 1, n), "pm": gen.uniform(0, 1, n),
              "b": gen.integers(0, 2, n)}
    batch = encoder(p).encode_batch(values, rng=7)
    cols = {k: np.array(v, copy=True) for k, v in batch.columns.items()}
    cols["h_pm"][3], cols["h_out"][3] = 0, 9  # hybrid rule
    cols["lat_sampled"][4] = 0  # dBitFlip rule (sample mode: zero fields too, unless lat was sampled)
    if mode == "sample":
        j = int(cols["attr"][10])
        cols[("app_index", "minutes_bit")[j == 0]][10] = 1  # a field of an attribute not sampled
    tampered = type(batch)(batch.protocol, batch.fingerprint, batch.schema, cols)
    by_batch, rows = MultiAggregate(p), []
    by_batch.add(tampered, on_reject=lambda i, e: rows.append(i))
    by_report = MultiAggregate(p)
    by_report.add(list(tampered.reports()))
    assert by_batch.rejected == by_report.rejected and by_batch.n == by_report.n == n - len(rows)
    assert {3, 4} <= set(rows) or mode == "sample"
    assert np.array_equal(by_batch.reports, by_report.reports)
    by_frames = MultiAggregate(p)  # binary frames: columns viewed as numpy arrays, then the batch path
    by_frames.add_bytes(tampered.to_bytes())
    assert by_frames.rejected == by_report.rejected and np.array_equal(by_frames.reports, by_report.reports)
    assert all(np.array_equal(a, b) for a, b in zip(by_batch._state().values(), by_report._state().values(),
                                                     strict=True))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(tamper=st.lists(st.tuples(st.integers(0, 59), st.integers(0, 1), st.integers(1, 3)), max_size=8),
       seed=st.integers(0, 2**31))
def test_sample_batches_with_fields_outside_their_attribute_fold_as_report_by_report(tamper, seed):
    """The batch fold's shortcut (rows checked closely only when some field is set outside its attribute's rows)
    rejects and counts exactly what the report-by-report path does."""
    p = MultiParams(2.0, "sample", ATTRS + (("smoker", "rr", {}),))
    n = 60
    gen = np.random.default_rng(seed)
    batch = encoder(p).encode_batch({"app": gen.integers(0, 3, n), "minutes": gen.uniform(0, 60, n),
                                     "smoker": gen.integers(0, 2, n)}, rng=seed)
    cols = {k: np.array(v, copy=True) for k, v in batch.columns.items()}
    others = {0: ("minutes_bit", "smoker_bit"), 1: ("app_index", "smoker_bit"), 2: ("app_index", "minutes_bit")}
    for row, which, value in tamper:  # a field of an attribute this row did not sample, set
        field = others[int(cols["attr"][row])][which]
        cols[field][row] = value % 3 or 1 if field == "app_index" else 1
    tampered = type(batch)(batch.protocol, batch.fingerprint, batch.schema, cols)
    by_batch, by_report = MultiAggregate(p), MultiAggregate(p)
    by_batch.add(tampered, on_reject=lambda i, e: None)
    by_report.add(list(tampered.reports()), on_reject=lambda i, e: None)
    assert by_batch.rejected == by_report.rejected and by_batch.n == by_report.n
    assert all(np.array_equal(a, b) for a, b in zip(by_batch._state().values(), by_report._state().values(),
                                                     strict=True))


@pytest.mark.parametrize("mode", ["split", "sample"])
def test_merge_and_bytes_round_trip(mode):
    p = MultiParams(1.0, mode, EVERY)
    enc = encoder(p)
    a, b = MultiAggregate(p), MultiAggregate(p)
    a.add([enc.encode(VALUE) for _ in range(40)])
    b.add([enc.encode(VALUE) for _ in range(25)])
    b.add_json_lines(["nope"])
    back = Aggregate.from_bytes(a.to_bytes())
    assert isinstance(back, MultiAggregate) and back.n == 40 and np.array_equal(back.reports, a.reports)
    back.merge(b)
    assert back.n == 65 and back.rejected["not_json"] == 1 and int(back.reports.sum()) == (65 * 7 if mode == "split"
                                                                                          else 65)
    est = back.estimate()
    assert set(est) == set(p.names) and all(e.n == 65 for e in est.values())
    assert isinstance(est["app"], Estimates) and isinstance(est["minutes"], MeanEstimate)
    assert json.loads(est.to_json())["attributes"]["minutes"]["protocol"] == "duchi" and "minutes" in str(est)
    assert est.to_csv().splitlines()[0] == "attribute,item,estimate,std_error,ci_low,ci_high"
    assert len(est.to_csv().splitlines()) == 1 + 3 + 1 + 2 + 3 + 1 + 1 + 2
    assert back.part("app").n == (65 if mode == "split" else int(back.reports[0]))
    other = MultiAggregate(MultiParams(1.0, "split" if mode == "sample" else "sample", EVERY))
    with pytest.raises(ValueError, match="parameters differ"):
        back.merge(other)


# -- estimators against the exact variance ---------------------------------------------------------
MIX = (("app", "grr", {"domain_size": 3}), ("minutes", "duchi", {"low": 0, "high": 60}),
       ("lat", "dbitflip", {"edges": [0, 1, 2, 3], "d": 1}))


def _truth(n: int) -> dict:
    gen = np.random.default_rng(11)
    counts = np.array([n // 2, n // 3, n - n // 2 - n // 3])
    return {"app": counts, "minutes": gen.uniform(0, 60, n).round(1), "lat": counts[::-1].copy()}


def _point(est) -> np.ndarray:
    return np.atleast_1d(est.count if isinstance(est, Estimates) else est.mean)


def _check_moments(draws: dict, truth: dict, exact: dict, trials: int) -> None:
    for name, values in draws.items():
        arr = np.array(values)
        target = truth[name] if name != "minutes" else truth[name].mean()
        var = np.atleast_1d(exact[name])
        assert np.all(np.abs(arr.mean(axis=0) - target) <= 5 * np.sqrt(var / trials)), name
        ratio = arr.var(axis=0, ddof=1) / var  # sd of the ratio ≈ sqrt(2/(T-1)) (+ kurtosis: 6 sd)
        assert np.all(np.abs(ratio - 1) <= 6 * math.sqrt(2 / (trials - 1))), (name, ratio)


def test_sample_standard_errors_track_the_exact_variance():
    p = MultiParams(1.0, "sample", MIX[:1] + (("s", "rr", {}),))
    truth = {"app": np.array([100_000, 60_000, 40_000]), "s": np.array([150_000, 50_000])}
    est = MultiAggregate.simulate(p, truth, 3).estimate()
    exact = MultiAggregate.exact_variance(p, truth)
    for name in p.names:
        assert np.allclose(est[name].std_error ** 2, exact[name], rtol=0.05)


def test_inverse_moment():
    assert inverse_moment(10, 1.0) == 0.1
    n, p = 12, 0.25  # by the definition
    pmf = [math.comb(n, m) * p**m * (1 - p) ** (n - m) for m in range(n + 1)]
    assert inverse_moment(n, p) == pytest.approx(sum(pmf[m] / m for m in range(1, n + 1)) / (1 - pmf[0]), rel=1e-12)
    assert inverse_moment(10**7, 0.25) == pytest.approx(4e-7, rel=1e-5)


def test_multi_variance_sample_wins_at_small_epsilon_split_at_large():
    attrs = (("a", "grr", {"domain_size": 4}), ("b", "grr", {"domain_size": 4}))
    small = multi_variance(0.5, attrs, 10_000)
    assert all(np.all(v["sample"] < v["split"]) for v in small.values())
    assert recommend_mode(0.5, attrs, 10_000) == "sample"
    assert recommend_mode(14.0, attrs, 10_000) == "split"
    means = (("x", "duchi", {"low": 0, "high": 1}), ("y", "piecewise", {"low": 0, "high": 1}))
    assert recommend_mode(1.0, means, 1000, {"x": np.linspace(0, 1, 1000), "y": np.linspace(0, 1, 1000)}) == "sample"
    with pytest.raises(ValueError, match="give n"):
        multi_variance(1.0, attrs)


# -- the client ------------------------------------------------------------------------------------
def test_telemetry_client_with_a_multi_metric(tmp_path):
    from ldp.client.runtime import TelemetryClient
    from ldp.spec import CollectionSpec, SpecError, parse_envelope

    doc = {"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
           "metrics": {"usage": {"protocol": "multi",
                                 "params": {"epsilon": 2, "mode": "sample",
                                            "attributes": [["screen", "grr", {"domain_size": 3}],
                                                           ["minutes", "piecewise", {"low": 0, "high": 120}]]},
                                 "budget": {"per_report": 2}}}}
    spec = CollectionSpec.from_dict(json.loads(json.dumps(doc)))
    assert CollectionSpec.from_dict(spec.to_dict()).fingerprint == spec.fingerprint
    bad = json.loads(json.dumps(doc))
    bad["metrics"]["usage"]["params"]["attributes"][0][2]["domain_size"] = 1
    with pytest.raises(SpecError, match=r"attributes\[0\] \(screen\): grr"):
        CollectionSpec.from_dict(bad)
    client = TelemetryClient(spec, tmp_path / "state.db", rng=3, simulation=True)
    with pytest.raises(ValueError, match="missing"):
        client.record("usage", {"screen": 1})
    assert client.spent("usage").epsilon == 0
    for minutes in (5.0, 30.0):
        client.record("usage", {"screen": 2, "minutes": minutes})
    assert client.spent("usage").epsilon == pytest.approx(2 * spec.params("usage").privacy_cost.epsilon)
    agg = MultiAggregate(spec.params("usage"))
    for item in client.pending():
        agg.add(parse_envelope(item.line, spec).report)
    assert agg.n == 2 and not agg.rejected
