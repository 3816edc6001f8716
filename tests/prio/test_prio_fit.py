"""The protocols that fit, through the real Prio3 (issue 71, item 5): each fitting protocol's reports, made
measurements by its ``prio3_fit()``, sharded, verified and aggregated by two aggregators of ``ldp.prio`` built from
the fit's own parameters, unshard to the sums ``Prio3Fit.sums`` says, and the protocol's aggregate made of them
estimates what folding the reports estimates."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from prio_support import binding

from ldp.plan.frequency import default_params
from ldp.protocols import protocols

CTX = b"ldp two-aggregator test"


@pytest.mark.parametrize("name, d", [("rr", 2), ("grr", 7), ("sue", 5), ("oue", 9)])
def test_a_fitting_protocols_reports_through_two_aggregators(name: str, d: int) -> None:
    prio = binding()
    params = default_params(name, 2.0, d)
    fit = params.prio3_fit()
    proto = protocols()[name]
    vdaf = getattr(prio, fit.vdaf)(**fit.params, ctx=CTX)
    encoder = proto.encoder_type(params, rng=11, simulation=True)
    rng = random.Random(5)
    reports = [encoder.encode(rng.randrange(d)) for _ in range(60)]
    key = os.urandom(prio.VERIFY_KEY_SIZE)
    leader, helper = vdaf.aggregate_init(), vdaf.aggregate_init()
    measurements = []
    for r in reports:
        m = fit.measurement(r.payload)
        measurements.append(m)
        nonce, public, (s0, s1) = vdaf.shard(m)
        st0, v0 = vdaf.verify_init(key, 0, nonce, public, s0)
        st1, v1 = vdaf.verify_init(key, 1, nonce, public, s1)
        msg = vdaf.verifier_shares_to_message([v0, v1])
        leader.accumulate(vdaf.verify_next(st0, msg))
        helper.accumulate(vdaf.verify_next(st1, msg))
    result = vdaf.unshard([leader, helper], len(reports))
    result = [int(x) for x in (result if isinstance(result, list) else [result])]
    assert result == fit.sums(measurements)
    folded = proto.aggregate_type(params)
    folded.add(reports)
    summed = proto.aggregate_type.from_sums(params, result, len(reports))
    np.testing.assert_array_equal(folded.estimate().count, summed.estimate().count)
