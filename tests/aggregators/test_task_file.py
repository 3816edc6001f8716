"""The task file carries every Prio3 parameter a third-party client needs, the chunk length included, and the
reports a device sends per window (issue 84, items 5 and 6a); old task files, without either, still load."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from two_aggregators import T0, prio, world

from ldp.aggregators.task import Noise, Task, chunk_length
from ldp.errors import AggregatorError
from ldp.spec import CollectionSpec

EXAMPLE = ROOT / "examples" / "two_aggregators.json"


def _task(metric: str, draft: int = 18) -> Task:
    p = prio()
    return Task.for_metric(CollectionSpec.load(EXAMPLE), metric, leader_url="https://l.example",
                           helper_url="https://h.example", min_batch_size=10, noise=Noise("laplace", 1.0),
                           collector_hpke_config=p.HpkeKeypair.generate(1).config.to_bytes(), vdaf_draft=draft)


def test_the_task_file_records_its_vdaf_draft() -> None:
    """Issue 85, item 1: a task names its VDAF draft; a task file of before the drafts is draft 18."""
    task = _task("search_engine", 8)
    doc = task.to_dict()
    assert doc["vdaf"]["draft"] == 8 and Task.from_dict(json.loads(json.dumps(doc))) == task
    vdaf = task.prio3()
    assert (vdaf.draft, vdaf.verify_key_size) == (8, 16)  # VDAF-08: no context string, 16-byte verify keys
    old = {**doc, "vdaf": {k: v for k, v in doc["vdaf"].items() if k != "draft"}}
    assert Task.from_dict(old).vdaf_draft == 18
    for bad in (7, "08", True):
        with pytest.raises(ValueError, match="vdaf_draft must be one of 8, 18"):
            Task.from_dict({**doc, "vdaf": {**doc["vdaf"], "draft": bad}})
    summed = {**doc, "vdaf": {"type": "Prio3Sum", "draft": 8, "max_measurement": 200}, "labels": None}
    with pytest.raises(ValueError, match="2\\^bits - 1 \\(such as 127 or 255\\)"):
        Task.from_dict(summed)
    assert Task.from_dict({**summed, "vdaf": {**summed["vdaf"], "max_measurement": 255}}).prio3().bits == 8


def test_the_task_file_holds_the_chunk_length_and_the_reports_per_window() -> None:
    task = _task("search_engine")
    doc = task.to_dict()
    assert doc["vdaf"] == {"type": "Prio3Histogram", "draft": 18, "length": 4, "chunk_length": 2}
    assert doc["reports_per_window"] == 1
    assert Task.from_dict(json.loads(json.dumps(doc))) == task
    crashed = _task("crashed").to_dict()  # rr: per_window 2.2 over per_report 1.1
    assert crashed["vdaf"] == {"type": "Prio3Count", "draft": 18} and crashed["reports_per_window"] == 2


def test_the_chunk_length_is_the_crates_default_and_reaches_the_binding() -> None:
    p = prio()
    for vdaf, params in (("Prio3Histogram", {"length": 100}), ("Prio3SumVec", {"length": 7, "max_measurement": 9})):
        assert chunk_length(vdaf, params) == getattr(p, vdaf)(ctx=b"x", **params).chunk_length
    task = _task("search_engine")
    other = dataclasses.replace(task, vdaf_params={"length": 4, "chunk_length": 3})
    assert task.prio3().chunk_length == 2 and other.prio3().chunk_length == 3


def test_an_old_task_file_without_them_loads_with_the_defaults() -> None:
    doc = _task("search_engine").to_dict()
    del doc["reports_per_window"]
    doc["vdaf"] = {"type": "Prio3Histogram", "length": 4}
    old = Task.from_dict(doc)
    assert old.reports_per_window is None and old.vdaf_params == {"length": 4}
    assert old.prio3().chunk_length == chunk_length("Prio3Histogram", {"length": 4})
    assert "reports_per_window" not in old.to_dict() and old.to_dict()["vdaf"] == {**doc["vdaf"], "draft": 18}


@pytest.mark.parametrize(("change", "message"), [
    ({"vdaf": {"type": "Prio3Count", "chunk_length": 2}}, "Prio3Count takes"),
    ({"vdaf": {"type": "Prio3Histogram", "length": 4, "chunk_length": 0}}, "optionally chunk_length"),
    ({"vdaf": {"type": "Prio3Histogram", "chunk_length": 2}}, "Prio3Histogram takes"),
    ({"reports_per_window": 0}, "reports_per_window"),
    ({"reports_per_window": True}, "reports_per_window"),
    ({"reports_per_window": 1.5}, "reports_per_window"),
])
def test_bad_values_are_refused(change: dict[str, Any], message: str) -> None:
    doc = {**_task("search_engine").to_dict(), **change}
    with pytest.raises(ValueError, match=message):
        Task.from_dict(doc)


def test_the_aggregators_use_the_tasks_chunk_length(tmp_path: Path) -> None:
    """A task with a chunk length other than the default: the devices' reports made with it are taken and counted,
    those made with the default refused at the door."""
    p = prio()
    w = world(tmp_path, params={"length": 16, "chunk_length": 5}, min_batch_size=1)
    assert w.task.prio3().chunk_length == 5
    for m in (3, 3, 7):
        w.leader.upload(w.task.task_id, w.report(m))
    default = p.Prio3Histogram(length=16, ctx=w.task.task_id)
    stray = p.seal_report(default, 3, task_id=w.task.task_id, time=T0 + 5, leader=w.leader_key.config,
                          helper=w.helper_key.config)
    with pytest.raises(AggregatorError) as exc:
        w.leader.upload(w.task.task_id, stray)
    assert exc.value.code == "invalid_message"
    result = w.collect()
    assert list(result.sums) == [int(i == 3) * 2 + int(i == 7) for i in range(16)]
