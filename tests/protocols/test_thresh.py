"""The charge-on-change protocol (thresh): epochs and replays, the exact audit of what changes leak, the ledger's
(c + 1)·ε through the encoder and the client (restart, crash), the estimator of a window and of a change."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import ldp.client.state as client_state
from ldp.batch.thresh import ThreshPanel
from ldp.client import TelemetryClient
from ldp.decoders.thresh import (
    ThreshAggregate,
    change_estimate,
    change_variance,
    fresh_change_variance,
)
from ldp.encoders.thresh import ThreshEncoder, ThreshParams
from ldp.errors import BudgetExceeded
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import audit
from ldp.spec import CollectionSpec, parse_envelope

PARAMS = ThreshParams(1.0, 3)
EPS = PARAMS.privacy_cost.epsilon


def test_params_checks():
    for bad in ({"epsilon": 0.0, "domain_size": 3}, {"epsilon": 1.0, "domain_size": 1},
                {"epsilon": 1.0, "domain_size": 3, "labels": ["a", "a", "b"]}, {"epsilon": 80.0, "domain_size": 3}):
        with pytest.raises((ValueError, TypeError)):
            ThreshParams(**bad)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 8.0), st.integers(2, 1000), st.integers(0, 50), st.integers(1, 400), st.integers(1, 60))
def test_params_properties(eps, k, changes, reports, runs):
    p = ThreshParams(eps, k)
    assert ThreshParams.from_dict(p.to_dict()) == p
    assert p.privacy_cost == p.grr.privacy_cost and p.support_probabilities == (p.grr.p, p.grr.q)
    assert p.change_cost(changes).epsilon == pytest.approx((changes + 1) * p.privacy_cost.epsilon, rel=1e-12)
    one, per_value, total = p.horizon_cost(reports, runs)
    assert one == per_value == p.privacy_cost
    assert total.epsilon == pytest.approx(min(runs, reports) * one.epsilon, rel=1e-12)


def test_epochs_replay_and_a_change_back_draws_afresh():
    enc = ThreshEncoder(PARAMS, secret=b"device")
    seq = [0, 0, 1, 1, 0, 0]
    reports = [enc.encode(v).payload["index"] for v in seq]
    assert enc.epoch == 2
    assert reports[0] == reports[1] and reports[2] == reports[3] and reports[4] == reports[5]
    assert reports[4] == enc.response(2, 0)  # epoch 2 (value 0 again) has its own response
    assert [enc.response(e, 0) for e in range(40)] != [enc.response(0, 0)] * 40  # not the epoch-0 response again
    again = ThreshEncoder(PARAMS, secret=b"device")
    assert [again.encode(v).payload["index"] for v in seq] == reports  # a function of (secret, epoch, value)


def _run(params, values, src):
    enc = ThreshEncoder(params, secret=b"audit", rng=src, prr_rng=src)
    return tuple(enc.encode(v).payload["index"] for v in values)


def _pattern_pairs(k, pattern):
    """All trajectories with the change pattern ``pattern`` (run lengths) whose consecutive runs differ."""
    runs = [v for v in itertools.product(range(k), repeat=len(pattern))
            if all(a != b for a, b in itertools.pairwise(v))]
    return [tuple(x for v, n in zip(run, pattern, strict=True) for x in [v] * n) for run in runs]


@pytest.mark.parametrize("pattern", [(3,), (2, 1), (1, 1, 1), (1, 2, 1)])
def test_exact_audit_each_epoch_leaks_epsilon(pattern):
    """Same change points: the reports leak exactly (runs)·ε, whatever the number of reports."""
    res = audit(_pattern_pairs(3, pattern), lambda values, src: _run(PARAMS, values, src))
    assert res.epsilon == pytest.approx(len(pattern) * PARAMS.grr.effective_epsilon, rel=1e-9)
    assert res.epsilon <= PARAMS.change_cost(len(pattern) - 1).epsilon * (1 + 1e-12)


def test_exact_audit_change_points_are_visible():
    """Different change points: a replayed response against two independent ones is infinite (as for every
    memoized protocol: the change points are not protected)."""
    res = audit([(0, 0), (0, 1)], lambda values, src: _run(PARAMS, values, src))
    assert res.epsilon == math.inf


def test_ledger_charges_changes_plus_one_and_replays_nothing():
    ledger = BudgetLedger()
    enc = ThreshEncoder(PARAMS, secret=b"device", ledger=ledger, metric="m")
    seq = [2, 2, 2, 0, 0, 2, 1, 1, 1, 1]  # 3 changes over 10 reports
    out = [enc.encode(v).payload["index"] for v in seq]
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(4 * EPS, rel=1e-12)
    assert [h["epsilon"] for h in ledger.history()] == [EPS, 0, 0, EPS, 0, EPS, EPS, 0, 0, 0]
    mem = ThreshEncoder(PARAMS, secret=b"device")
    assert [mem.encode(v).payload["index"] for v in seq] == out  # the ledger's epochs are the in-memory ones


def _spec(lifetime: float = 100.0) -> CollectionSpec:
    return CollectionSpec.from_dict({"spec_version": 1, "name": "change", "budget": {"per_window": lifetime,
                                     "lifetime": lifetime}, "metrics": {"m": {"protocol": "thresh", "params":
                                     PARAMS.to_dict(), "budget": {"per_report": EPS, "lifetime": lifetime}}}})


def _reports(client: TelemetryClient) -> list[int]:
    spec = client.spec
    return [parse_envelope(item.line, spec).report.payload["index"] for item in client.pending()]


def test_client_keeps_the_epoch_across_restarts(tmp_path: Path):
    state = tmp_path / "state.db"
    with TelemetryClient(_spec(), state) as client:
        for v in (1, 1, 0):
            client.record("m", v)
        first = _reports(client)
    with TelemetryClient(_spec(), state) as client:  # a restart: the epoch and the last value are in the file
        client.record("m", 0)  # a replay: free, and the same report as before the restart
        client.record_many([("m", 2), ("m", 2), ("m", 1)])
        after = _reports(client)
        assert after[:3] == first and after[3] == first[2]
        assert after[4] == after[5]
        assert client.spent("m", "lifetime").epsilon == pytest.approx(4 * EPS, rel=1e-12)


def test_client_crash_before_commit_loses_the_change_with_its_charge(tmp_path: Path, monkeypatch):
    state = tmp_path / "state.db"
    with TelemetryClient(_spec(), state) as client:
        client.record("m", 1)

        def crash(point: str) -> None:
            if point == "randomized":
                raise KeyboardInterrupt("killed")

        monkeypatch.setattr(client_state, "_fault", crash)
        with pytest.raises(KeyboardInterrupt):
            client.record("m", 2)
        monkeypatch.setattr(client_state, "_fault", None)
    with TelemetryClient(_spec(), state) as client:
        assert client.spent("m", "lifetime").epsilon == pytest.approx(EPS, rel=1e-12)
        client.record("m", 1)  # still epoch 0: a replay, free
        assert client.spent("m", "lifetime").epsilon == pytest.approx(EPS, rel=1e-12)
        reports = _reports(client)
        assert len(reports) == 2 and reports[0] == reports[1]


def test_the_lifetime_cap_bounds_the_changes(tmp_path: Path):
    with TelemetryClient(_spec(lifetime=2 * EPS * (1 + 1e-12)), tmp_path / "state.db") as client:
        client.record("m", 0)
        client.record("m", 1)
        with pytest.raises(BudgetExceeded):
            client.record("m", 2)
        for _ in range(5):
            client.record("m", 1)  # replays of the current value still report
        assert len(client.pending()) == 7


def test_change_estimate_has_the_movers_variance_only():
    """Two windows of the same devices; 10 % move. Δ̂ is unbiased with change_variance, far below fresh reports'."""
    params, n, trials = ThreshParams(1.0, 3), 3_000, 400
    gen = np.random.default_rng(11)
    before = gen.integers(0, 3, n)
    after = before.copy()
    movers = gen.choice(n, n // 10, replace=False)
    after[movers] = (before[movers] + 1 + gen.integers(0, 2, movers.size)) % 3
    after[movers[:50]] = before[movers[:50]]  # changed and changed back between the windows: a new epoch
    moved = np.zeros((3, 3))
    np.add.at(moved, (before[movers], after[movers]), 1)
    enc = ThreshEncoder(params, secret=b"sim")
    deltas = np.empty((trials, 3))
    for t in range(trials):
        panel = ThreshPanel(n)
        a, b = ThreshAggregate(params), ThreshAggregate(params)
        a.add(enc.encode_batch(before, gen, panel=panel))
        panel.last[movers[:50]] = -1  # their intermediate value: the next report opens a new epoch
        b.add(enc.encode_batch(after, gen, panel=panel))
        deltas[t] = change_estimate(a, b)
    truth = np.bincount(after, minlength=3) - np.bincount(before, minlength=3)
    var = change_variance(params, moved)
    z = stats.norm.isf(1e-4 / 6)
    assert np.all(np.abs(deltas.mean(axis=0) - truth) <= z * np.sqrt(var / trials))
    lo, hi = stats.chi2.ppf([1e-4 / 6, 1 - 1e-4 / 6], trials - 1) / (trials - 1)
    ratio = deltas.var(axis=0, ddof=1) / var
    assert np.all((lo <= ratio) & (ratio <= hi)), ratio
    fresh = fresh_change_variance(params, np.bincount(before, minlength=3), np.bincount(after, minlength=3))
    assert np.all(var < fresh / 9)  # 10 % movers: about a tenth of the noise


def test_panel_replays_unchanged_devices_and_counts_epochs():
    params = ThreshParams(0.5, 5)
    enc = ThreshEncoder(params, secret=b"sim")
    panel = ThreshPanel(1_000)
    gen = np.random.default_rng(3)
    x = gen.integers(0, 5, 1_000)
    r1 = enc.encode_batch(x, gen, panel=panel).columns["index"].copy()
    y = x.copy()
    y[:100] = (x[:100] + 1) % 5
    r2 = enc.encode_batch(y, gen, panel=panel).columns["index"]
    assert np.array_equal(r1[100:], r2[100:])
    assert panel.epochs.tolist() == [2] * 100 + [1] * 900
    with pytest.raises(ValueError, match="panel"):
        enc.encode_batch(x[:10], gen, panel=panel)
