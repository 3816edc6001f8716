"""A mean protocol is found through the registry like any other (issue 48: no list of protocol names to edit): one
registered for the test — Duchi's mechanism under another name — is a mean protocol to the mean planner, its
ranking, the simulation and ``ldp plan`` / ``ldp simulate``; a memoized one (its encoder needs a device secret) is
planned but not ranked."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from support import call_main

from ldp.decoders.longitudinal import MemoMeanAggregate
from ldp.decoders.numeric import DuchiAggregate
from ldp.encoders.longitudinal import MemoMeanEncoder, MemoMeanParams
from ldp.encoders.numeric import DuchiEncoder, DuchiParams
from ldp.plan.numeric import default_mean_params, plan_mean, ranked_mean_protocols, recommend_mean
from ldp.protocols import protocols_taking
from ldp.protocols.registry import Protocol, provisionally_registered
from ldp.simulation.collect import accuracy
from ldp.simulation.numeric import uniform_values


def _renamed(name: str, params: type, encoder: type, aggregate: type) -> Protocol:
    """The protocol of ``params`` under the name ``name``: a params subclass, its encoder and its aggregate."""
    renamed = dataclass(frozen=True)(type(f"{params.__name__}_{name}", (params,), {"protocol": name}))
    return Protocol(name, renamed, type(f"{encoder.__name__}_{name}", (encoder,), {"params_type": renamed}),
                    type(f"{aggregate.__name__}_{name}", (aggregate,), {"params_type": renamed}))


TOY_MEAN = _renamed("toy-mean", DuchiParams, DuchiEncoder, DuchiAggregate)
TOY_MEMO = _renamed("toy-memo", MemoMeanParams, MemoMeanEncoder, MemoMeanAggregate)


@pytest.fixture
def registered() -> Iterator[None]:
    with provisionally_registered(TOY_MEAN), provisionally_registered(TOY_MEMO):
        yield
    assert "toy-mean" not in protocols_taking("numbers")


def test_a_registered_mean_protocol_is_planned_ranked_and_simulated(registered: None) -> None:
    import ldp.encoders.numeric

    assert {"toy-mean", "toy-memo"} <= set(protocols_taking("numbers"))
    assert {"toy-mean", "toy-memo"} <= set(ldp.encoders.numeric.MEAN_PROTOCOLS)
    assert "toy-mean" in ranked_mean_protocols() and "toy-memo" not in ranked_mean_protocols()
    params = default_mean_params("toy-mean", 1.0, 0.0, 10.0)
    assert type(params) is TOY_MEAN.params_type
    duchi = plan_mean(DuchiParams(1.0, 0.0, 10.0), n=1000)
    assert plan_mean(params, n=1000).std_error == duchi.std_error
    assert "toy-mean" in [p.protocol for p in recommend_mean(1.0)]
    assert plan_mean(default_mean_params("toy-memo", 1.0), n=1000).std_error > 0
    result = accuracy(params, uniform_values(0.0, 10.0), 500, trials=3, rng=1)
    assert result.estimates.shape[0] == 3


@pytest.mark.parametrize("argv", [
    ["plan", "toy-mean", "--epsilon", "1", "--param", "low=0", "--param", "high=10", "--n", "1000", "--json"],
    ["plan", "--recommend", "--mean", "--epsilon", "1", "--json"],
    ["simulate", "toy-mean", "--epsilon", "1", "--param", "low=0", "--param", "high=10", "--n", "500", "--trials", "2"],
])
def test_the_command_line_takes_a_registered_mean_protocol(registered: None, argv: list[str]) -> None:
    status, out, err = call_main(argv)
    assert status == 0, err
    assert "toy-mean" in out
