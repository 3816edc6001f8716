"""What the simulation layer asks of every registered protocol: the population it takes
(``ProtocolParams.population_kind``), its :class:`~ldp.simulation.base.Simulation` (found by scanning
:mod:`ldp.simulation`, no protocol named) and the default candidates of the open-domain protocols."""

from __future__ import annotations

import numpy as np
import pytest

from ldp.protocols import protocols, protocols_taking
from ldp.simulation.base import Simulation
from ldp.simulation.collect import accuracy, default_candidates, simulation_for, simulations, zipf
from ldp.simulation.numeric import is_mean_protocol, uniform_values

KINDS = {"counts", "numbers", "attributes"}
NAMES = sorted(protocols())


def _example(name: str):
    return protocols()[name].params_type.examples()[0]


@pytest.mark.parametrize("name", NAMES)
def test_population_kind(name):
    params_type = protocols()[name].params_type
    kind = params_type.population_kind
    assert kind in KINDS
    assert (kind == "numbers") == (name in protocols_taking("numbers")) == is_mean_protocol(params_type) \
        == is_mean_protocol(_example(name))
    if kind != "counts":  # a protocol taking another kind of population has a simulation of its own
        assert type(simulation_for(_example(name))) is not Simulation


def test_every_simulation_serves_a_registered_protocol():
    registered = {p.params_type for p in protocols().values()}
    for params_type, sim in simulations().items():
        assert isinstance(sim, Simulation) and type(sim) is not Simulation
        assert any(issubclass(t, params_type) for t in registered), params_type
        assert type(sim).__module__.startswith("ldp.simulation.")


@pytest.mark.parametrize("name", NAMES)
def test_simulation_for_takes_params_or_their_type(name):
    params = _example(name)
    assert type(simulation_for(params)) is type(simulation_for(type(params)))


@pytest.mark.parametrize("name", [n for n in NAMES if protocols()[n].params_type.population_kind == "counts"
                                  and _example(n).domain_size is None])
def test_default_candidates_are_distinct_strings_the_client_encodes(name):
    params = _example(name)
    cands = default_candidates(params, 4)
    assert len(cands) == len(set(cands)) == 4 and all(isinstance(c, str) for c in cands)
    encoder = protocols()[name].encoder_type(params, rng=1, simulation=True)
    for c in cands:
        encoder.encode(c)


def test_default_candidates_check_d():
    params = _example("cms")
    with pytest.raises(ValueError, match="domain size d must be an int >= 1"):
        default_candidates(params, 0)
    with pytest.raises(ValueError, match="holds its d candidates in memory"):
        default_candidates(params, 10**7)


@pytest.mark.parametrize("name", ["grr", "cms"])
def test_a_population_of_another_kind_is_refused(name):
    params = _example(name)
    with pytest.raises(ValueError, match="take a population of numbers"):
        accuracy(params, uniform_values(0, 1), 100)
    with pytest.raises(ValueError, match=r"multi takes \{attribute: population\}"):
        accuracy(params, {"a": zipf(3)}, 100)


def test_the_mean_and_multi_protocols_refuse_counts():
    with pytest.raises(ValueError, match="take a population of numbers"):
        accuracy(_example("duchi"), zipf(3), 100)
    with pytest.raises(ValueError, match=r"multi takes \{attribute: population\}"):
        accuracy(_example("multi"), zipf(3), 100)


def test_accuracy_dispatches_to_the_protocol_simulation():
    """The mean protocols through :class:`~ldp.simulation.numeric.NumericSimulation`: a mean, not counts."""
    params = _example("duchi")
    res = accuracy(params, uniform_values(params.low, params.high), 500, trials=2, rng=1)
    assert np.isfinite(res.mean_estimate) and res.trials == 2
