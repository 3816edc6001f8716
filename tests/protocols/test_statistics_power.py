"""The statistics check (:mod:`ldp.protocols.check_statistics`) catches wrong error bars (issue 48): five broken
toys built from GRR — a planner variance doubled, and an exact variance 20 % low, 30 % high, 10 % low and 10 % high
(the planner's formula broken with it, so that only the simulation can tell) — each fail it, naming the test that
caught them; the correct GRR passes with the power the check is sized for."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ldp.decoders.randomized_response import GRRAggregate, grr_variance
from ldp.protocols import check_statistics as battery, get_protocol
from ldp.protocols.check_statistics import (
    POWER,
    VARIANCE_ERROR,
    PowerRow,
    check_statistics,
    planned_truth,
    statistics_power,
)

_COUNT_VARIANCE = GRRAggregate.count_variance.__func__  # type: ignore[attr-defined]


def _break(monkeypatch: pytest.MonkeyPatch, exact: float = 1.0, planner: float = 1.0) -> None:
    """GRR made into a toy whose exact variance is ``exact`` × the truth and whose planner's is ``planner`` ×."""
    monkeypatch.setattr(GRRAggregate, "exact_variance", staticmethod(lambda p, t: exact * grr_variance(p, t)))
    monkeypatch.setattr(GRRAggregate, "count_variance",
                        classmethod(lambda cls, *a, **k: planner * _COUNT_VARIANCE(cls, *a, **k)))


@pytest.mark.parametrize("name", ["grr", "hr", "multi"])
def test_the_correct_protocol_passes_with_the_power_it_is_sized_for(
        name: str, statistics_battery: Callable[[str], tuple[PowerRow, ...]]) -> None:
    """GRR; HR, whose run asks for more than its pilot did (topped up at the same truth); multi, whose attributes
    each run draws (run again at the full size). The battery is the conformance test's (``statistics_power``, run once
    per protocol: tests/conftest.py)."""
    rows = statistics_battery(name)
    assert rows and all(not r.failures for r in rows)
    assert all(r.power >= POWER for r in rows), [(r.params, r.power) for r in rows]
    assert all(r.planned_item == (0 if name != "multi" else None) for r in rows)


def test_a_run_capped_at_max_trials_stops_there_and_states_its_power(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose spread asks for more collections than :data:`MAX_TRIALS` a path runs that many, no more, and its
    row states the lower power it reached (the tests themselves still run, at their own false-alarm levels)."""
    monkeypatch.setattr(battery, "MAX_TRIALS", 150)
    rows = statistics_power(get_protocol("grr"))
    assert [r.collections for r in rows] == [{"aggregate": 150, "per_report": 150}] * len(rows)
    assert all(r.power < POWER for r in rows) and not any(r.failures for r in rows)


def test_a_doubled_planner_variance_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _break(monkeypatch, planner=2.0)
    with pytest.raises(AssertionError, match=r"count_variance\(n=.*ratio 2\.000000.*the planner's formula"):
        check_statistics(get_protocol("grr"))


@pytest.mark.parametrize("factor", [0.8, 1.3, 1 - VARIANCE_ERROR, 1 + VARIANCE_ERROR])
def test_a_wrong_exact_variance_fails_even_with_the_planner_agreeing(monkeypatch: pytest.MonkeyPatch,
                                                                     factor: float) -> None:
    _break(monkeypatch, exact=factor, planner=factor)
    with pytest.raises(AssertionError, match="the pooled variance test") as caught:
        check_statistics(get_protocol("grr"))
    measured = float(re.search(r"about ([0-9.]+) × it", str(caught.value)).group(1))  # type: ignore[union-attr]
    assert measured == pytest.approx(1 / factor, rel=0.05)  # the true variance, in units of the broken formula


def test_a_wrong_exact_variance_alone_also_breaks_the_planner_tie(monkeypatch: pytest.MonkeyPatch) -> None:
    _break(monkeypatch, exact=1.3)
    with pytest.raises(AssertionError, match="the planner's formula is not the aggregate's"):
        check_statistics(get_protocol("grr"))


@pytest.mark.parametrize("d,n", [(2, 2000), (3, 2000), (9, 1000), (4, 7)])
def test_the_planned_truth_is_whole_and_sums_to_n(d: int, n: int) -> None:
    params = get_protocol("grr").params_type(epsilon=1.0, domain_size=d)
    truth, dd = planned_truth(params, n, 1)
    assert dd == d and truth.sum() == n and truth.dtype.kind == "i" and (truth >= 0).all()
    assert len(set(truth[[0] + list(range(2, d))].tolist())) == 1  # the others spread evenly
