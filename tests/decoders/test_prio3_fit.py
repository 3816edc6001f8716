"""The protocols that fit in the two-aggregator mode (issue 71, item 5; ldp.encoders.base_vdaf): rr, grr, sue, oue,
pgr and hpg say their Prio3 type; every report they make is a valid measurement of it; the sum of the measurements, made
an aggregate by ``Aggregate.from_sums``, estimates exactly what folding the same reports estimates (a
differential test); what is not a measurement, or not a sum of n of them, is refused."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.encoders.base_vdaf import Prio3Fit
from ldp.protocols import protocols

FITTING = {"rr": "Prio3Count", "grr": "Prio3Histogram", "sue": "Prio3SumVec", "oue": "Prio3SumVec",
           "pgr": "Prio3Histogram", "hpg": "Prio3Histogram"}


def _params(name: str, d: int) -> object:
    from ldp.plan.frequency import default_params

    return default_params(name, 1.5, 2 if name == "rr" else max(d, 4) if name == "hpg" else d)


def test_the_registry_says_which_protocols_fit() -> None:
    fits = {}
    for name, proto in protocols().items():
        for params in proto.params_type.examples():
            fit = params.prio3_fit()
            if fit is not None:
                fits[name] = fit.vdaf
    assert fits == FITTING


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(FITTING)), st.integers(2, 40), st.integers(1, 400), st.integers(0, 2**32))
def test_summed_measurements_estimate_what_folding_estimates(name: str, d: int, n: int, seed: int) -> None:
    params = _params(name, d)
    fit = params.prio3_fit()
    assert fit is not None and fit.vdaf == FITTING[name]
    proto = protocols()[name]
    encoder = proto.encoder_type(params, rng=seed, simulation=True)
    values = [random.Random(seed + i).randrange(params.domain_size) for i in range(n)]
    reports = [encoder.encode(v) for v in values]
    measurements = [fit.measurement(r.payload) for r in reports]  # each a valid measurement
    folded = proto.aggregate_type(params)
    folded.add(reports)
    summed = proto.aggregate_type.from_sums(params, fit.sums(measurements), n)
    a, b = folded.estimate(), summed.estimate()
    assert summed.n == folded.n == n
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_array_equal(a.std_error, b.std_error)


def test_what_is_not_a_measurement_or_a_sum_is_refused() -> None:
    grr = _params("grr", 5)
    fit = grr.prio3_fit()
    assert fit.params == {"length": 5}
    for bad in (5, -1, True, "2"):
        with pytest.raises(ValueError, match="Prio3Histogram measurement"):
            fit.measurement({"index": bad})
    from ldp.protocols import get_protocol

    g = get_protocol("grr").aggregate_type
    with pytest.raises(ValueError, match="hold 5 entries"):
        g.from_sums(grr, [1, 2], 3)
    with pytest.raises(ValueError, match="sums to n"):
        g.from_sums(grr, [1, 1, 1, 0, 0], 4)
    with pytest.raises(ValueError, match=r"in \[0, n=3\]"):
        g.from_sums(grr, [4, 0, 0, 0, 0], 3)
    sue = _params("sue", 3).prio3_fit()
    with pytest.raises(ValueError, match="Prio3SumVec measurement of length 3"):
        sue.measurement({"bits": "0120"})
    with pytest.raises(ValueError, match="does not fit"):
        get_protocol("olh").aggregate_type.from_sums(_params("olh", 8), [0], 0)
    with pytest.raises(ValueError, match="vdaf must be one of"):
        Prio3Fit("Prio3Nothing", "x", "y")
