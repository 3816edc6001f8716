"""Mean mechanisms (Duchi, discrete Piecewise, Hybrid): parameters, client validation before any charge,
exact privacy audit of the realized ε, the crossover points, and bad reports through the generic machinery
(JSON lines, bytes and merge of good ones: the conformance suite, tests/protocols/test_conformance.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp.decoders.numeric import (
    DuchiAggregate,
    HybridAggregate,
    PiecewiseAggregate,
    continuous_pm_variance,
    duchi_report_variance,
    hybrid_report_variance,
    piecewise_report_variance,
)
from ldp.encoders.numeric import (
    HYBRID_THRESHOLD,
    PM_CROSSOVER,
    DuchiEncoder,
    DuchiParams,
    HybridEncoder,
    HybridParams,
    PiecewiseEncoder,
    PiecewiseParams,
)
from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.privacy.audit import audit_encoder
from ldp.protocols import get_protocol
from ldp.reports import Report, parse_json

MECHANISMS = [(DuchiParams, DuchiEncoder, DuchiAggregate), (PiecewiseParams, PiecewiseEncoder, PiecewiseAggregate),
              (HybridParams, HybridEncoder, HybridAggregate)]
MECH_IDS = ["duchi", "piecewise", "hybrid"]


# ----------------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("P", [DuchiParams, PiecewiseParams, HybridParams], ids=MECH_IDS)
@pytest.mark.parametrize("args, error, message", [
    ((0.0, 0, 1), ValueError, "epsilon must be finite and > 0"),
    ((-1.0, 0, 1), ValueError, "epsilon must be finite and > 0"),
    ((math.inf, 0, 1), ValueError, "epsilon must be finite and > 0"),
    ((1.0, math.nan, 1), ValueError, "low must be finite"),
    ((1.0, 0, math.inf), ValueError, "high must be finite"),
    ((1.0, 2, 1), ValueError, "need low < high"),
    ((1.0, 1, 1), ValueError, "need low < high"),
    ((1.0, -1e308, 1e308), ValueError, "high - low must be finite"),
    ((1.0, "0", 1), TypeError, "low must be a real number"),
    ((1.0, 0, True), TypeError, "high must be a real number"),
])
def test_params_refuse_bad_bounds_and_epsilon(P, args, error, message):
    with pytest.raises(error, match=message):
        P(*args)


@pytest.mark.parametrize("P", [PiecewiseParams, HybridParams], ids=MECH_IDS[1:])
@pytest.mark.parametrize("cells, error, message", [
    (1, ValueError, r"cells must be in \[2, 65536\]"), (1 << 17, ValueError, r"cells must be in \[2, 65536\]"),
    (8.0, TypeError, "cells must be an int"), (True, TypeError, "cells must be an int"),
])
def test_params_refuse_bad_cells(P, cells, error, message):
    with pytest.raises(error, match=message):
        P(1.0, 0, 1, cells=cells)


@pytest.mark.parametrize("P", [DuchiParams, PiecewiseParams, HybridParams], ids=MECH_IDS)
def test_epsilon_the_client_cannot_realize_is_refused(P):
    with pytest.raises(ValueError, match="too large"):
        P(200.0, 0, 1)
    with pytest.raises(ValueError, match="too small"):
        P(1e-20, 0, 1)


@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_params_round_trip_and_discovery(P, E, A):
    params = P(1.5, -2, 3.5, clip=True)
    assert P.from_dict(params.to_dict()) == params
    proto = get_protocol(params.protocol)
    assert (proto.params_type, proto.encoder_type, proto.aggregate_type) == (P, E, A)
    assert params.privacy_cost == PrivacyCost(params.realized_epsilon)
    assert params.realized_epsilon <= params.epsilon
    assert params.domain_size is None


def test_piecewise_window_and_probabilities():
    p = PiecewiseParams(1.0, 0, 1, cells=1024)
    c = (math.exp(0.5) + 1) / (math.exp(0.5) - 1)
    assert p.window == round(1024 * (c - 1) / (2 * c)) and p.steps == 1024 - p.window
    w = p.window
    assert p.p_in == pytest.approx(w * math.e / (w * math.e + 1024 - w), rel=1e-15)
    assert p.realized_epsilon == pytest.approx(1.0, rel=1e-14)  # w is rounded but P_in uses the same w
    assert PiecewiseParams(30.0, 0, 1, cells=8).window == 1  # clipped to [1, G - 1]
    assert PiecewiseParams(1e-3, 0, 1, cells=8).window == 4


# ------------------------------------------------------------------------- client input and budget

@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_client_refuses_bad_values_before_charging(P, E, A):
    ledger = BudgetLedger(":memory:", total=BudgetPolicy(per_window=PrivacyCost(10)))
    enc = E(P(1.0, 0, 10), ledger=ledger, metric="m")
    for bad, error, message in [(math.nan, ValueError, "must be finite"), (math.inf, ValueError, "must be finite"),
                                (-math.inf, ValueError, "must be finite"), (True, TypeError, "int or float"),
                                ("5", TypeError, "int or float"), (None, TypeError, "int or float"),
                                (10.5, ValueError, r"outside \[low, high\]"), (-1, ValueError, "clip=True")]:
        with pytest.raises(error, match=message):
            enc.encode(bad)
    assert ledger.history() == []  # nothing was charged for bad input
    enc.encode(10)
    enc.encode(0.0)
    assert len(ledger.history()) == 2
    assert ledger.history()[0]["epsilon"] == pytest.approx(enc.params.realized_epsilon)


@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_clip_clips_to_the_bounds(P, E, A):
    params = P(1.0, 0, 10, clip=True)
    assert E(params, rng=1, simulation=True).prepare(11) == 10.0
    assert E(params, rng=1, simulation=True).prepare(-3) == 0.0
    with pytest.raises(ValueError, match="must be finite"):  # NaN is never clipped
        E(params, rng=1, simulation=True).prepare(math.nan)


# ------------------------------------------------------------------------------- exact privacy audit

AUDIT_INPUTS = [0.0, 10.0, 1.0, 3.3, 5.0, 7.25, 9.999]


def test_audited_distribution_is_the_exact_law():
    """The audit's exact output law is the one the estimators assume (cell probabilities, E[v | x] = x)."""
    from ldp.decoders.numeric import piecewise_cell_probabilities, piecewise_values

    params = PiecewiseParams(1.0, 0, 10, cells=8)
    for x in (0.0, 3.3, 10.0):
        dist = audit_encoder(lambda src: PiecewiseEncoder(params, rng=src), [x, 0.0]).distributions[x]
        probs = np.zeros(8)
        for line, pr in dist.items():
            probs[parse_json(line).payload["cell"]] = float(pr)
        assert probs == pytest.approx(piecewise_cell_probabilities(params, x), abs=1e-15)
        assert probs @ piecewise_values(params) == pytest.approx(x, abs=1e-12)


# ---------------------------------------------------------------------------------- crossovers

def _worst(f, eps):
    return float(np.max(f(eps, np.linspace(-1, 1, 2001))))


def _duchi_cont(eps, t):
    return ((math.exp(eps) + 1) / (math.exp(eps) - 1)) ** 2 - t**2


def _pm_cont(eps, t):
    return continuous_pm_variance(eps, -1, 1, t)


def test_crossovers_are_where_the_worst_case_variances_meet():
    # PM's worst case (t = ±1) equals Duchi's (t = 0) at PM_CROSSOVER ≈ 1.29 (Wang et al.)
    assert PM_CROSSOVER == pytest.approx(1.29, abs=0.005) and HYBRID_THRESHOLD == pytest.approx(0.61, abs=0.005)
    assert _worst(_pm_cont, PM_CROSSOVER) == pytest.approx(_worst(_duchi_cont, PM_CROSSOVER), rel=1e-12)
    assert _worst(_pm_cont, 1.2) > _worst(_duchi_cont, 1.2) and _worst(_pm_cont, 1.4) < _worst(_duchi_cont, 1.4)

    def hybrid(eps, t):
        a = -math.expm1(-eps / 2)
        return a * _pm_cont(eps, t) + (1 - a) * _duchi_cont(eps, t)

    t = np.linspace(-1, 1, 11)
    assert np.ptp(hybrid(2.0, t)) == pytest.approx(0, abs=1e-12)  # α = 1 − e^{−ε/2} makes it flat in t
    assert _worst(hybrid, HYBRID_THRESHOLD) == pytest.approx(_worst(_duchi_cont, HYBRID_THRESHOLD), rel=1e-12)
    assert _worst(hybrid, 0.5) > _worst(_duchi_cont, 0.5) and _worst(hybrid, 0.7) < _worst(_duchi_cont, 0.7)
    assert HybridParams(HYBRID_THRESHOLD * 0.999, 0, 1).alpha == 0
    assert HybridParams(HYBRID_THRESHOLD * 1.001, 0, 1).alpha > 0


def test_discrete_pm_tends_to_the_continuous_variance():
    x = np.linspace(0, 10, 9)
    for eps in (0.5, 1.0, 4.0):
        gap = [np.max(np.abs(piecewise_report_variance(PiecewiseParams(eps, 0, 10, cells=g), x)
                             / continuous_pm_variance(eps, 0, 10, x) - 1)) for g in (256, 65536)]
        assert gap[1] < 2e-3 and gap[1] < gap[0]


def test_hybrid_variance_mixes_the_branches():
    params = HybridParams(2.0, 0, 10, cells=64)
    x = np.array([0.0, 2.5, 10.0])
    a = params.alpha
    want = a * piecewise_report_variance(params.piecewise, x) + (1 - a) * duchi_report_variance(params.duchi, x)
    assert hybrid_report_variance(params, x) == pytest.approx(want)


# ------------------------------------------------------------------- reports through the machinery

@pytest.mark.parametrize("P, E, A, payload", [
    (DuchiParams, DuchiEncoder, DuchiAggregate, {"bit": 2}),
    (PiecewiseParams, PiecewiseEncoder, PiecewiseAggregate, {"cell": 16}),
    (HybridParams, HybridEncoder, HybridAggregate, {"pm": 0, "out": 2}),
    (HybridParams, HybridEncoder, HybridAggregate, {"pm": 2, "out": 0}),
    (HybridParams, HybridEncoder, HybridAggregate, {"pm": 1, "out": 16}),
], ids=["duchi-bit", "pm-cell", "hybrid-duchi-out", "hybrid-pm", "hybrid-pm-out"])
def test_bad_reports_are_rejected_with_a_reason(P, E, A, payload):
    params = P(2.0, 0, 10, cells=16) if P is not DuchiParams else P(2.0, 0, 10)
    bad = Report.trusted(params.protocol, params.fingerprint, payload).to_json()
    good = E(params, rng=3, simulation=True).encode(5).to_json()
    seen = []
    agg = A(params)
    assert agg.add_json_lines([good, bad], on_reject=lambda item, err: seen.append(err.reason)) == 1
    assert agg.rejected == {"out_of_range": 1} and seen == ["out_of_range"]
    columns = {k: np.array([v, 0 if k != "pm" else 1]) for k, v in payload.items()}
    batch = E(params, rng=3, simulation=True)._batch(columns)
    agg = A(params)
    assert agg.add(batch) == 1 and agg.rejected == {"out_of_range": 1} and agg.n == 1
    if payload == {"pm": 0, "out": 2}:  # in every field's range: a binary frame carries it, the aggregate refuses
        agg = A(params)
        assert agg.add_bytes(batch.to_bytes()) == 1 and agg.rejected == {"out_of_range": 1}


@pytest.mark.parametrize("P, E, A", MECHANISMS, ids=MECH_IDS)
def test_huge_bounds_estimate_without_overflow(P, E, A):
    """Regression: the plug-in variance squared per-report values of ~1e300 and overflowed."""
    params = P(3.0, -1e300, 1e300)
    with np.errstate(over="raise", invalid="raise"):
        est = A.simulate(params, [0.0] * 100 + [1e300] * 100, rng=2).estimate()
    assert math.isfinite(est.mean) and math.isfinite(est.std_error) and abs(est.mean - 5e299) < 6 * est.std_error


def test_hybrid_fold_matches_a_row_by_row_count():
    """The one-bincount fold of the Hybrid aggregate against a plain count of (pm, out) pairs."""
    import collections

    import numpy as np

    from ldp.decoders.numeric import HybridAggregate
    from ldp.encoders.numeric import HybridParams

    params = HybridParams(2.0, 0.0, 1.0, cells=16)
    gen = np.random.default_rng(5)
    pm = gen.integers(0, 2, 5000).astype(np.uint8)
    out = np.where(pm == 1, gen.integers(0, 16, 5000), gen.integers(0, 2, 5000)).astype(np.int64)
    agg = HybridAggregate(params)
    agg._fold({"pm": pm, "out": out})
    pairs = collections.Counter(zip(pm.tolist(), out.tolist(), strict=True))
    assert agg.duchi.tolist() == [pairs[(0, 0)], pairs[(0, 1)]]
    assert agg.cells.tolist() == [pairs[(1, j)] for j in range(16)]


def test_hybrid_batch_rejects_keep_the_rows_of_the_batch():
    """A row broken by the Hybrid's own rule and a row the generic checks reject: both reported with their
    row numbers in the batch given (the generic check once saw the filtered batch's numbers)."""
    import numpy as np

    from ldp.decoders.numeric import HybridAggregate
    from ldp.encoders.numeric import HybridParams
    from ldp.reports import ReportBatch

    params = HybridParams(2.0, 0.0, 1.0, cells=16)
    cols = {"pm": np.array([0, 1, 1, 0], dtype=np.uint8), "out": np.array([5, 3, 16, 1], dtype=np.uint32)}
    batch = ReportBatch(params.protocol, params.fingerprint, tuple(params.schema), cols)
    seen = []
    agg = HybridAggregate(params)
    assert agg.add(batch, on_reject=lambda row, err: seen.append((row, err.reason))) == 2
    assert sorted(seen) == [(0, "out_of_range"), (2, "out_of_range")]
    assert agg.rejected["out_of_range"] == 2 and agg.n == 2
