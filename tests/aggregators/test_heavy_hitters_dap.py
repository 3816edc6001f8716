"""Heavy hitters through DAP-09's collection flow (issue 89, item 2; ``docs/two-aggregators.md`` §17): each level
of the walk is a collection job whose ``CollectionReq`` carries the level's aggregation parameter, polled for a
``Collection`` that the collector opens with the parameter in the associated data. The job's rules: a Poplar1 job
names a parameter that decodes, a Prio3 job names none, a job ID is one request; the walk's figures, computed by
the collector from the task, are the leader's."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, WINDOW, world

from ldp.aggregators import collection_jobs
from ldp.aggregators.codec import Interval
from ldp.aggregators.collection_messages import CollectionReq
from ldp.aggregators.heavy_hitters import collect_heavy_hitters, collector_walk_cost, dap_level
from ldp.aggregators.task import Noise, b64
from ldp.errors import AggregatorError

BITS = 8
VALUES = [5] * 20 + [200] * 12 + [77] * 3 + list(range(100, 115))


def _world(tmp_path: Path, noise: Noise | None = None, vdaf: str = "Poplar1") -> Any:
    params = {"bits": BITS, "max_candidates": 16} if vdaf == "Poplar1" else {}
    return world(tmp_path, vdaf=vdaf, params=params, min_batch_size=5, job_size=16, noise=noise, seed=3)


def _upload(w: Any, values: list[int]) -> None:
    from ldp.prio.poplar1 import bits_of

    assert w.leader.upload_many(w.task.task_id, [w.report(bits_of(v, BITS)) for v in values]) == [None] * len(values)
    w.now = T0 + WINDOW + 1


def _job(w: Any, param: bytes, job: str | None = None) -> tuple[str, bytes]:
    """A collection job created and polled at the leader, in process: (its ID, the Collection)."""
    job = job or b64(secrets.token_bytes(16))
    body = CollectionReq(Interval(T0, WINDOW), param).to_bytes()
    collection_jobs.create_job(w.leader, w.task.task_id, job, body)
    out, wait = collection_jobs.poll_job(w.leader, w.task.task_id, job)
    assert wait == 0 and out is not None
    return job, out


def _dap_ask(w: Any) -> Any:
    return lambda window, param: dap_level(w.task, _job(w, param)[1])


def test_the_walk_over_collection_jobs_finds_what_the_json_route_finds(tmp_path: Path) -> None:
    """Breaks if the job drops the parameter (the leader refuses a Poplar1 collection without one), seals the shares
    to another one (they do not open), or the walk's figures differ from the leader's."""
    w = _world(tmp_path, noise=Noise("gaussian", 4.0, 1e-6))
    _upload(w, VALUES * 4)
    found = collect_heavy_hitters(w.task, w.collector_key, _dap_ask(w), T0, threshold=40)
    # the same walk through the JSON route: every level answered from its release (the same parameters)
    again = collect_heavy_hitters(w.task, w.collector_key, lambda win, p: w.leader.collect(w.task.task_id, win, p),
                                  T0, threshold=40)
    assert found["strings"] == again["strings"] and 5 in {int(s["bits"], 16) for s in found["strings"]}
    assert found["levels_released"] == again["levels_released"] == BITS
    assert found["walk_epsilon"] == again["walk_epsilon"] == collector_walk_cost(w.task, BITS)
    assert collector_walk_cost(w.task, 0) is None


def test_a_poplar1_job_names_a_parameter_that_decodes_and_one_job_is_one_request(tmp_path: Path) -> None:
    from ldp.prio.poplar1 import agg_param

    w = _world(tmp_path)
    _upload(w, VALUES)
    for bad in (b"", b"\x00\x01garbage"):
        with pytest.raises(AggregatorError) as refused:
            _job(w, bad)
        assert refused.value.code == "invalid_message"
    job, first = _job(w, agg_param(0, [0, 1]).to_bytes())
    assert _job(w, agg_param(0, [0, 1]).to_bytes(), job)[1] == first  # the same request again: the same answer
    with pytest.raises(AggregatorError) as other:
        _job(w, agg_param(1, [0, 1, 2, 3]).to_bytes(), job)
    assert (other.value.code, other.value.status) == ("job_mismatch", 409)
    with pytest.raises(AggregatorError) as twice:  # level 0 again with another parameter: each level once
        _job(w, agg_param(0, [1]).to_bytes())
    assert twice.value.code == "batch_queried_too_many_times"


def test_a_prio3_job_still_takes_no_parameter(tmp_path: Path) -> None:
    from ldp.prio.poplar1 import agg_param

    w = _world(tmp_path, vdaf="Prio3Count")
    with pytest.raises(AggregatorError) as refused:
        collection_jobs.create_job(w.leader, w.task.task_id, b64(secrets.token_bytes(16)),
                                   CollectionReq(Interval(T0, WINDOW), agg_param(0, [0, 1]).to_bytes()).to_bytes())
    assert refused.value.code == "invalid_message" and "Prio3 takes no aggregation parameter" in str(refused.value)


def test_a_collection_of_another_interval_is_refused_by_the_collector(tmp_path: Path) -> None:
    from ldp.aggregators.codec import HpkeCiphertext
    from ldp.aggregators.collection_messages import Collection

    w = _world(tmp_path)
    empty = HpkeCiphertext(1, b"", b"")
    with pytest.raises(AggregatorError) as refused:
        dap_level(w.task, Collection(3, Interval(T0 + 1, WINDOW), empty, empty).to_bytes())
    assert refused.value.code == "invalid_message"
    with pytest.raises(AggregatorError):
        dap_level(w.task, b"\x01")


def test_the_status_page_shows_each_level_of_a_window(tmp_path: Path) -> None:
    """The dashboard's levels table: none before the collector asks, then one row per level with its valid reports
    and release, on both sides. Breaks if the page drops the levels or shows another side's counts."""
    from ldp.aggregators.dashboard import render, view

    w = _world(tmp_path)
    _upload(w, VALUES)
    assert "no level asked yet" in render(w.leader.status())
    collect_heavy_hitters(w.task, w.collector_key, _dap_ask(w), T0, threshold=10)
    for side in (w.leader, w.helper):
        levels = view(side.status())["tasks"][0]["levels"]
        assert [(lv["level"], lv["valid"], lv["released"]) for lv in levels] == [(i, "50", "yes") for i in range(BITS)]
        page = render(side.status())
        assert "Levels (Poplar1" in page and page.count("<td>50</td>") >= BITS
    prio3 = _world(tmp_path / "prio3", vdaf="Prio3Count")
    assert view(prio3.leader.status())["tasks"][0]["levels"] is None and "Levels (Poplar1" not in render(
        prio3.leader.status())
