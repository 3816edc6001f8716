"""What ``ldp decode`` asks of every registered protocol's aggregate: whether it takes a candidate dictionary
(``Aggregate.candidate_dictionary``) and how it decodes (``Aggregate.decode``), read by
:func:`ldp.jobs.decode.decode_aggregate` without naming a protocol."""

from __future__ import annotations

import numpy as np
import pytest

from ldp.jobs.decode import decode_aggregate
from ldp.protocols import protocols
from ldp.simulation.collect import default_candidates, simulate, simulation_for
from ldp.simulation.multi import attribute_populations, draw_truth
from ldp.simulation.numeric import uniform_values

NAMES = sorted(protocols())
TAKES = {"none", "required", "optional"}


def _aggregate(name: str):
    """An exact simulated aggregate of the first example parameters, and the candidates it was made of (if any)."""
    params = protocols()[name].params_type.examples()[0]
    kind, rng = params.population_kind, np.random.default_rng(5)
    if kind == "numbers":
        return simulate(params, uniform_values(params.low, params.high).draw(400, rng), rng=rng), None
    if kind == "attributes":
        return simulate(params, draw_truth(params, attribute_populations(params), 400, rng), rng=rng), None
    if params.domain_size is None:
        cands = default_candidates(params, 4)
        return simulate(params, dict(zip(cands, [200, 100, 60, 40], strict=True)), rng=rng), cands
    return simulate(params, np.full(params.domain_size, 100), rng=rng), None


@pytest.mark.parametrize("name", NAMES)
def test_candidate_dictionary(name):
    proto = protocols()[name]
    takes = proto.aggregate_type.candidate_dictionary
    assert takes in TAKES
    params = proto.params_type.examples()[0]
    open_domain = params.population_kind == "counts" and params.domain_size is None
    assert (takes != "none") == open_domain  # the open-domain protocols decode strings


@pytest.mark.parametrize("name", NAMES)
def test_decode(name):
    agg, cands = _aggregate(name)
    takes = agg.candidate_dictionary
    if takes == "none":  # all in the aggregate: the estimate at the confidence, candidates ignored
        got, want = decode_aggregate(agg, ["x"], confidence=0.9), agg.estimate(confidence=0.9)
        assert type(got) is type(want)
        assert got.to_json() == want.to_json()
        return
    est = decode_aggregate(agg, cands, confidence=0.9)
    assert list(est.items) == cands and est.confidence == 0.9
    if takes == "required":
        with pytest.raises(ValueError, match="needs a candidate dictionary"):
            decode_aggregate(agg, None)
        with pytest.raises(ValueError, match="candidate strings"):
            agg.decode(None)
    else:  # discovery without candidates
        assert decode_aggregate(agg, [], confidence=0.9).confidence == 0.9


def test_simulation_of_an_open_domain_protocol_scores_what_decode_takes():
    """The simulation's candidate scoring hands the aggregate what its decoder takes (RAPPOR: a candidate map)."""
    for name in ("rappor", "cms", "sfp"):
        agg, cands = _aggregate(name)
        scoring = simulation_for(agg.params).scoring(agg.params, cands)
        est = agg.estimate(scoring.decoder_input, confidence=0.9, **scoring.options)
        assert list(est.items) == cands
        assert scoring.variance(np.array([200, 100, 60, 40])).shape == (4,)
