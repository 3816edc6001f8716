"""What the planner asks of every protocol (issue 29): its :class:`~ldp.plan.planners.CountPlanner` (found in
:mod:`ldp.plan` by the params types it serves), and the params hooks ``frequency_oracle_for`` (what
``recommend`` ranks) and ``from_options`` (what the command line's loose options give)."""

from __future__ import annotations

import argparse
import math

import pytest

from ldp.encoders.base import ProtocolParams
from ldp.plan.frequency import PLANNED_PROTOCOLS, count_variance, default_params, plan
from ldp.plan.oracles import FIXED_DOMAIN_ORACLES, frequency_oracles, recommend
from ldp.plan.planners import CountPlanner, min_detectable, planner_for, planners
from ldp.protocols import client_protocols, get_protocol, protocols

NOT_GIVEN = {"epsilon": None, "d": None, "p": None, "q": None, "truth_prob": None, "yes_prob": None}


def _planned_params(name: str, d: int = 8) -> ProtocolParams:
    return default_params(name, 1.0, 2 if get_protocol(name).params_type.frequency_oracle_for(2)
                          and not get_protocol(name).params_type.frequency_oracle_for(3) else d)


def test_every_count_planner_serves_registered_planned_protocols() -> None:
    found = planners()
    assert found, "no CountPlanner found in ldp.plan"
    registered = {proto.params_type: name for name, proto in protocols().items()}
    for params_type, planner in found.items():
        assert isinstance(planner, CountPlanner) and type(planner) is not CountPlanner
        assert params_type in registered, f"{type(planner).__name__} serves unregistered {params_type.__name__}"
        assert registered[params_type] in PLANNED_PROTOCOLS, f"{registered[params_type]} is not planned"
    assert {registered[t] for t in found} == {"sfp", "pem", "rappor-ngrams", "lgrr", "loue", "hh"}


@pytest.mark.parametrize("name", PLANNED_PROTOCOLS)
def test_every_planned_protocol_answers_the_planner(name: str) -> None:
    """Each answer of the protocol's planner is what the plan shows: candidates, detection, notes, charges."""
    params = _planned_params(name)
    d = params.domain_size or 8
    planner = planner_for(params)
    m = planner.candidates(params, d)
    assert isinstance(m, int) and m >= 1
    mdc, tested = planner.min_detectable_count(params, 10_000, d, m, alpha=0.05, power=0.5, f2=None,
                                               variance=count_variance)
    assert mdc > 0 and isinstance(tested, int) and tested >= 1
    charges = planner.per_value_by_charging(params, 30)
    assert all(mode and cost.epsilon > 0 for mode, cost in charges.items())
    pl = plan(params, n=10_000, domain_size=d, reports=30)
    assert (pl.candidates, pl.min_detectable_count) == (tested, mdc) or math.isinf(mdc)
    assert list(pl.notes) == planner.notes(params, tested) and pl.per_value_by_charging == charges
    if type(planner) is CountPlanner:  # the frequency oracles' answers: the item's own count among d values
        assert m == d and tested == m and not pl.notes and not charges
        var = lambda f: count_variance(params, 10_000, f, d)  # noqa: E731
        assert mdc == min_detectable(var, 10_000, 0.05, d, 0.5)


def test_memoized_protocols_plan_both_charging_modes() -> None:
    """A protocol planned with charging modes is one whose horizon cost is capped (memoized reports)."""
    for name in PLANNED_PROTOCOLS:
        params = _planned_params(name)
        charges = planner_for(params).per_value_by_charging(params, 30)
        _, per_value, _ = params.horizon_cost(30, 1)
        if charges:
            assert set(charges) == {"min", "upfront"} and charges["min"] == per_value
            assert charges["upfront"].epsilon >= charges["min"].epsilon or math.isclose(
                charges["upfront"].epsilon, charges["min"].epsilon)


@pytest.mark.parametrize("name", sorted(client_protocols()))
def test_frequency_oracles_are_planned_one_shot_counting_protocols(name: str) -> None:
    """Every protocol ``recommend`` may rank is planned from ε, counts values and is planned as an oracle."""
    params_type = client_protocols()[name][0]
    for d in (2, 3, 8, 200, 5000):
        answer = params_type.frequency_oracle_for(d)
        assert isinstance(answer, bool)
        if answer:
            assert name in PLANNED_PROTOCOLS and params_type.population_kind == "counts"
            params = default_params(name, 1.0, d)
            assert params.domain_size in (None, d)
            assert type(planner_for(params)) is CountPlanner, f"{name} is planned otherwise than an oracle"
            assert name in frequency_oracles(d)
        else:
            assert name not in frequency_oracles(d)


def test_recommend_ranks_the_frequency_oracles() -> None:
    for d in (2, 8, 2000):
        r = recommend(1.0, d)
        assert set(r.scores) | set(r.left_out) == set(frequency_oracles(d))
    assert frequency_oracles(2)[0] == "rr" and "rr" not in frequency_oracles(3)  # the binary one first at d = 2
    assert "rappor" in frequency_oracles(1024) and "rappor" not in frequency_oracles(1025)
    assert set(FIXED_DOMAIN_ORACLES) == set(frequency_oracles(2)) - {"cms", "hcms", "rappor"}


@pytest.mark.parametrize("name", sorted(client_protocols()))
def test_from_options_gives_the_protocols_params_or_none(name: str) -> None:
    """With no option the hook gives params of the protocol, ``None`` (read the fields) or a ValueError."""
    params_type = client_protocols()[name][0]
    for options in (NOT_GIVEN, {**NOT_GIVEN, "epsilon": 1.0, "d": 4}):
        try:
            params = params_type.from_options(options)
        except ValueError:
            continue
        assert params is None or type(params) is params_type


def test_rr_and_grr_read_their_own_options() -> None:
    from ldp.cli.protocols import build_params
    from ldp.encoders import BinaryRRParams, GRRParams

    rr = BinaryRRParams.from_options
    assert rr(NOT_GIVEN) == BinaryRRParams.forced_response()
    assert rr({**NOT_GIVEN, "truth_prob": 0.6}) == BinaryRRParams.forced_response(0.6, 0.5)
    assert rr({**NOT_GIVEN, "p": 0.2, "q": 0.7, "epsilon": 3.0}) == BinaryRRParams(0.2, 0.7)
    assert rr({**NOT_GIVEN, "epsilon": 1.0}) == BinaryRRParams.from_epsilon(1.0)
    with pytest.raises(ValueError, match="needs both"):
        rr({**NOT_GIVEN, "p": 0.2})
    assert GRRParams.from_options({**NOT_GIVEN, "epsilon": 2.0, "d": 5}) == GRRParams(2.0, 5)
    with pytest.raises(ValueError, match="grr needs --epsilon and --d"):
        GRRParams.from_options({**NOT_GIVEN, "epsilon": 2.0})
    args = argparse.Namespace(param=[], **NOT_GIVEN)
    args.epsilon, args.d = 2.0, 5
    assert build_params("grr", args) == GRRParams(2.0, 5)
    args.param = [("domain_size", 7)]  # a --param: the fields, not the protocol's own options
    assert build_params("grr", args) == GRRParams(2.0, 7)
