"""Memoized dBitFlip: permanent sample and per-bucket responses, the exact audit of what repeats and changes leak,
the ledger's charges, the horizon cost, and the estimator with the same devices' panel."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.batch.dbitflip_memo import memo_dbitflip_devices
from ldp.encoders.dbitflip_memo import MemoDBitFlipEncoder, MemoDBitFlipParams, memoized_charges
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import audit

EDGES3 = (0.0, 1.0, 2.0, 3.0)
MID3 = [0.5, 1.5, 2.5]


def test_params_checks():
    for bad in ({"gamma": 0.5}, {"gamma": -0.1}, {"d": 0}, {"d": 4}, {"epsilon": 0.0}, {"epsilon": 200.0}):
        with pytest.raises((ValueError, TypeError)):
            MemoDBitFlipParams(**{"epsilon": 1.0, "edges": EDGES3, **bad})


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 6.0), st.integers(2, 40), st.data(), st.sampled_from([0.0, 0.01, 0.2, 0.45]))
def test_params_properties(eps, k, data, gamma):
    d = data.draw(st.integers(1, k))
    p = MemoDBitFlipParams(eps, tuple(float(i) for i in range(k + 1)), d=d, gamma=gamma)
    assert MemoDBitFlipParams.from_dict(p.to_dict()) == p
    assert p.p0 + p.p1 == pytest.approx(1.0, abs=1e-12)
    assert p.privacy_cost.epsilon <= p.memo_cap.epsilon * (1 + 1e-12)
    assert (p.privacy_cost == p.memo_cap) == (gamma == 0.0)
    leaks = [p.change_leakage(m) for m in range(1, min(k, 6) + 1)]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(leaks))  # more runs never leak less
    assert all(leak <= m * p.memo_cap.epsilon * (1 + 1e-12) for m, leak in enumerate(leaks, 1))  # the charges bound it
    charges = memoized_charges(p, 5)
    assert charges["min"].epsilon == pytest.approx(min(5 * p.privacy_cost.epsilon, p.memo_cap.epsilon))


def test_sample_and_responses_are_permanent():
    p = MemoDBitFlipParams(2.0, tuple(float(i) for i in range(9)), d=3)
    a, b = MemoDBitFlipEncoder(p, secret=b"dev"), MemoDBitFlipEncoder(p, secret=b"dev")
    assert a.sampled == b.sampled and bin(a.sampled).count("1") == 3
    reports = [a.encode(x).to_json() for x in (0.5, 0.5, 4.5, 0.5)]
    assert reports[0] == reports[1] == reports[3]  # γ = 0: a replay is the first report
    assert b.encode(0.5).to_json() == reports[0]  # from the secret: the same after a restart
    assert [a.memo_bits(v) & ~a.sampled for v in range(8)] == [0] * 8
    assert len({MemoDBitFlipEncoder(p, secret=bytes([i])).sampled for i in range(40)}) > 10


def _run(params, values, src):
    enc = MemoDBitFlipEncoder(params, secret=b"audit", rng=src, prr_rng=src)
    return tuple(enc.encode(v).to_json() for v in values)


def _audit(params, trajectories):
    return audit(trajectories, lambda values, src: _run(params, values, src))


@pytest.mark.parametrize("d", [1, 2])
def test_exact_audit_repeats_of_one_bucket_leak_one_report(d):
    p = MemoDBitFlipParams(2.0, EDGES3, d=d)
    for t in (1, 3):
        res = _audit(p, [(x,) * t for x in MID3])
        assert res.epsilon == pytest.approx(p.memo.effective_epsilon, rel=1e-9)


def test_exact_audit_repeats_with_output_flips_stay_within_the_charges():
    p = MemoDBitFlipParams(2.0, EDGES3, d=2, gamma=0.15)
    one = _audit(p, [(x,) for x in MID3]).epsilon
    assert one == pytest.approx(p.privacy_cost.epsilon, rel=1e-9)
    for t in (2, 3):
        leak = _audit(p, [(x,) * t for x in MID3]).epsilon
        charged = memoized_charges(p, t)["min"].epsilon
        assert one < leak <= charged * (1 + 1e-12)  # more than one report, never more than the ledger charged
    assert memoized_charges(p, 3)["min"] == p.memo_cap  # capped: the memoized response's ε


@pytest.mark.parametrize("d,runs", [(1, 2), (2, 2), (2, 3), (3, 3)])
def test_exact_audit_of_a_change_is_change_leakage(d, runs):
    """Trajectories of ``runs`` distinct buckets (same change pattern): exactly min(runs, d)·(up + down)."""
    p = MemoDBitFlipParams(2.0, EDGES3, d=d)
    res = _audit(p, list(itertools.permutations(MID3, runs)))
    assert res.epsilon == pytest.approx(p.change_leakage(runs), rel=1e-9)
    assert res.epsilon <= runs * p.memo_cap.epsilon * (1 + 1e-12)


def test_exact_audit_change_points_visible_unless_flipped():
    pattern = [(0.5, 0.5), (0.5, 1.5), (1.5, 2.5)]
    assert _audit(MemoDBitFlipParams(2.0, EDGES3, d=1), pattern).epsilon == math.inf
    flipped = _audit(MemoDBitFlipParams(2.0, EDGES3, d=1, gamma=0.2), pattern).epsilon
    assert 0 < flipped < math.inf


def test_ledger_charges_first_report_of_a_bucket_then_nothing():
    p = MemoDBitFlipParams(2.0, EDGES3, d=2)
    ledger = BudgetLedger()
    enc = MemoDBitFlipEncoder(p, secret=b"dev", ledger=ledger, metric="m")
    cap = p.memo_cap.epsilon
    for x, total in ((0.5, 1), (0.5, 1), (0.7, 1), (1.5, 2), (0.5, 2), (2.5, 3), (1.5, 3)):
        enc.encode(x)
        assert ledger.spent("m", "lifetime").epsilon == pytest.approx(total * cap, rel=1e-12)


def test_ledger_with_flips_charges_per_report_up_to_the_cap():
    p = MemoDBitFlipParams(2.0, EDGES3, d=2, gamma=0.1)
    c, cap = p.privacy_cost.epsilon, p.memo_cap.epsilon
    ledger = BudgetLedger()
    enc = MemoDBitFlipEncoder(p, secret=b"dev", ledger=ledger, metric="m")
    seq = [0.5] * 4 + [1.5]
    for x in seq:
        enc.encode(x)
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(min(4 * c, cap) + c, rel=1e-12)
    upfront = BudgetLedger()
    enc = MemoDBitFlipEncoder(p, secret=b"dev", ledger=upfront, metric="m", charging="upfront")
    for x in seq:
        enc.encode(x)
    assert upfront.spent("m", "lifetime").epsilon == pytest.approx(2 * cap, rel=1e-12)


@pytest.mark.parametrize("gamma", [0.0, 0.1])
def test_horizon_cost_is_the_worst_the_ledger_charges(gamma):
    p = MemoDBitFlipParams(2.0, EDGES3, d=2, gamma=gamma)
    for reports, distinct in ((1, 1), (6, 1), (6, 2), (6, 3), (2, 3)):
        one, per_value, total = p.horizon_cost(reports, distinct)
        worst = 0.0
        for split in itertools.product(range(reports + 1), repeat=min(distinct, reports)):
            if sum(split) != reports:
                continue
            ledger = BudgetLedger()
            enc = MemoDBitFlipEncoder(p, secret=b"dev", ledger=ledger, metric="m")
            for bucket, times in enumerate(split):
                for _ in range(times):
                    enc.encode(MID3[bucket])
            worst = max(worst, ledger.spent("m", "lifetime").epsilon)
        assert total.epsilon == pytest.approx(worst, rel=1e-12)
        assert one == p.privacy_cost
        assert per_value.epsilon == pytest.approx(min(reports * p.privacy_cost.epsilon, p.memo_cap.epsilon))


def test_panel_replays_memoized_bits():
    p = MemoDBitFlipParams(1.0, tuple(float(i) for i in range(11)), d=3)
    enc = MemoDBitFlipEncoder(p, secret=b"sim")
    gen = np.random.default_rng(1)
    devices = memo_dbitflip_devices(p, 500, gen)
    x = gen.integers(0, 10, 500)
    a, b = (enc.encode_batch(x, gen, devices=devices).columns for _ in range(2))
    assert np.array_equal(a["bits"], b["bits"]) and np.array_equal(a["sampled"], devices.sampled)
    flipped = MemoDBitFlipParams(1.0, p.edges, d=3, gamma=0.3)
    c = MemoDBitFlipEncoder(flipped, secret=b"sim").encode_batch(x, gen, devices=devices).columns
    assert not np.array_equal(c["bits"], a["bits"]) and not (c["bits"] & ~devices.sampled).any()
    with pytest.raises(ValueError, match="devices"):
        enc.encode_batch(x[:10], gen, devices=devices)
