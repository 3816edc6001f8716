"""Poplar1's heavy-hitter collection over the two aggregators in-process (issue 89, items 2 and 5): the walk finds
exactly the strings with at least T holders without noise; with noise its ε is the calibration's composition;
a malformed IDPF key is refused and counted; a level asked twice (another parameter) or out of order is refused by
both aggregators; a level asked again with its parameter is answered from its record (no fresh noise)."""

from __future__ import annotations

import random
import secrets
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import T0, WINDOW, handmade_report, world

from ldp.aggregators.codec import Interval
from ldp.aggregators.heavy_hitters import collect_heavy_hitters, open_level
from ldp.aggregators.messages import AggregateShareReq, AggregationJobInitReq
from ldp.aggregators.task import Noise
from ldp.errors import AggregatorError

BITS = 8


def _world(tmp_path: Path, noise: Noise | None = None, levels: int | None = None, seed: int | None = None) -> Any:
    params = {"bits": BITS, "max_candidates": 16, **({"levels": levels} if levels else {})}
    return world(tmp_path, vdaf="Poplar1", params=params, min_batch_size=5, job_size=16, noise=noise, seed=seed)


def _upload(w: Any, values: list[int]) -> None:
    from ldp.prio.poplar1 import bits_of

    bodies = [w.report(bits_of(v, BITS)) for v in values]
    assert w.leader.upload_many(w.task.task_id, bodies) == [None] * len(bodies)
    w.now = T0 + WINDOW + 1


def _ask(w: Any) -> Any:
    return lambda window, param: w.leader.collect(w.task.task_id, window, param)


def _param(level: int, prefixes: list[int]) -> Any:
    from ldp.prio.poplar1 import agg_param

    return agg_param(level, prefixes)


# 50 devices: 0x05 held by 20, 0xc8 by 12, 0x4d by 3 (below T = 10), 15 singletons
VALUES = [5] * 20 + [200] * 12 + [77] * 3 + list(range(100, 115))


def test_without_noise_the_walk_finds_exactly_the_strings_at_or_above_the_threshold(tmp_path: Path) -> None:
    """Breaking the jobs' two rounds, the aggregation, or the collector's reading of the shares changes a count."""
    w = _world(tmp_path)
    _upload(w, VALUES)
    found = collect_heavy_hitters(w.task, w.collector_key, _ask(w), T0, threshold=10)
    assert {int(s["bits"], 16): s["count"] for s in found["strings"]} == {5: 20, 200: 12}
    assert found["levels_released"] == BITS and found["walk_epsilon"] is None and found["report_count"] == 50
    # the threshold is inclusive: at T = 3 the string of 3 holders is found too, and no singleton
    w2 = _world(tmp_path / "b")
    _upload(w2, VALUES)
    found = collect_heavy_hitters(w2.task, w2.collector_key, _ask(w2), T0, threshold=3)
    assert {int(s["bits"], 16) for s in found["strings"]} == {5, 200, 77}


def test_with_noise_the_walk_epsilon_is_the_calibrations_composition(tmp_path: Path) -> None:
    """Each level's release carries one level's noise (the whole ε per level would make the walk's ε m times
    larger, and this fail); the levels composed are the calibration's figure."""
    from ldp.prio.heavy_hitters import calibrate

    w = _world(tmp_path, noise=Noise("gaussian", 4.0, 1e-6), levels=BITS, seed=5)
    _upload(w, VALUES * 4)
    found = collect_heavy_hitters(w.task, w.collector_key, _ask(w), T0, threshold=40)
    cal = calibrate("gaussian:4:1e-6", BITS)
    assert found["levels_released"] == BITS
    assert found["walk_epsilon"]["epsilon"] == pytest.approx(cal.cost().epsilon, rel=1e-12)
    assert found["walk_epsilon"]["epsilon"] <= 4.0 + 1e-9
    doc = w.leader.collect(w.task.task_id, T0, _param(0, [0, 1]).to_bytes())
    assert doc["noise"] == cal.level_record()  # the level's noise, not the walk's whole ε
    assert 5 in {int(s["bits"], 16) for s in found["strings"]}  # 80 holders, the noise's sd 2σ ≈ 13 (seeded)


def test_a_level_asked_again_is_answered_from_its_record(tmp_path: Path) -> None:
    """A fresh noise draw on a repeated request (which averaging would defeat) changes the shares."""
    w = _world(tmp_path, noise=Noise("laplace", 2.0), seed=9)
    _upload(w, VALUES)
    param = _param(0, [0, 1])
    first = w.leader.collect(w.task.task_id, T0, param.to_bytes())
    again = w.leader.collect(w.task.task_id, T0, param.to_bytes())
    assert (again["leader_share"], again["helper_share"]) == (first["leader_share"], first["helper_share"])
    assert open_level(w.task, w.collector_key, param, again) == open_level(w.task, w.collector_key, param, first)
    w.restart_helper()
    w.restart_leader()
    assert w.leader.collect(w.task.task_id, T0, param.to_bytes())["helper_share"] == first["helper_share"]


def test_the_same_level_twice_or_a_level_out_of_order_is_refused_by_both(tmp_path: Path) -> None:
    """Without the parameter rules a level could be asked with many candidate sets (more releases than the noise
    is calibrated for) or walked back."""
    w = _world(tmp_path)
    _upload(w, VALUES)
    lead = w.leader.collect
    lead(w.task.task_id, T0, _param(0, [0, 1]).to_bytes())
    lead(w.task.task_id, T0, _param(1, [0, 1]).to_bytes())
    with pytest.raises(AggregatorError) as twice:
        lead(w.task.task_id, T0, _param(1, [0, 2]).to_bytes())
    assert twice.value.code == "batch_queried_too_many_times"
    with pytest.raises(AggregatorError) as back:
        lead(w.task.task_id, T0, _param(0, [0]).to_bytes())  # level 0 again, another parameter
    assert back.value.code == "batch_queried_too_many_times"
    with pytest.raises(AggregatorError) as wrong:
        lead(w.task.task_id, T0, _param(2, [7]).to_bytes())  # 0b111 extends 0b11, never asked at level 1
    assert wrong.value.code == "invalid_message"
    # the helper on its own: a leader skipping the rules is refused there too
    job = AggregationJobInitReq((), _param(1, [1, 3]).to_bytes())
    stored = next(iter(w.leader.task_state(w.task.task_id).stored.values()))
    from ldp.aggregators.messages import PrepareInit, ReportShare, initialize

    r = stored.report
    init = PrepareInit(ReportShare(stored.rid, r.time, r.public_share, r.helper_ciphertext), initialize(b"\0" * 8))
    job = AggregationJobInitReq((init,), _param(1, [1, 3]).to_bytes())
    with pytest.raises(AggregatorError) as helper_twice:
        w.helper.aggregation_job(w.task.task_id, "A" * 22, job.to_bytes())
    assert helper_twice.value.code == "batch_queried_too_many_times"
    req = AggregateShareReq(Interval(T0, WINDOW), 50, bytes(32), _param(3, [1]).to_bytes())
    with pytest.raises(AggregatorError):
        w.helper.aggregate_share(w.task.task_id, req.to_bytes())


def test_more_levels_than_the_task_allows_are_refused(tmp_path: Path) -> None:
    """The noise is split over the task's levels: one more release would exceed the walk's ε."""
    w = _world(tmp_path, levels=2)
    _upload(w, VALUES)
    w.leader.collect(w.task.task_id, T0, _param(0, [0, 1]).to_bytes())
    w.leader.collect(w.task.task_id, T0, _param(1, [0, 1]).to_bytes())
    with pytest.raises(AggregatorError) as exc:
        w.leader.collect(w.task.task_id, T0, _param(2, [0]).to_bytes())
    assert exc.value.code == "batch_queried_too_many_times"


@pytest.mark.parametrize("side", ["leader", "helper"])
def test_a_malformed_idpf_key_is_refused_and_counted(tmp_path: Path, side: str) -> None:
    """A key with flipped bytes of the right length passes the door's length checks; verification refuses it
    (vdaf_invalid) on both sides, or the door refuses a share that does not decode (invalid_message). Without the
    checks the report would be counted in some prefix."""
    from ldp.prio.poplar1 import bits_of

    w = _world(tmp_path)
    rng = random.Random(4)
    vdaf = w.task.prio3()
    bad = []
    for _ in range(3):
        rid = secrets.token_bytes(16)
        _, public, (leader, helper) = vdaf.shard(bits_of(5, BITS), nonce=rid)
        share = bytearray(leader if side == "leader" else helper)
        i = rng.randrange(len(share) // 2)  # the key's seed and control bits: the front of the share
        share[i] ^= 0x5A
        shares = (bytes(share), helper) if side == "leader" else (leader, bytes(share))
        bad.append(handmade_report(w, public, *shares, report_id=rid))
    door = w.leader.upload_many(w.task.task_id, bad)
    _upload(w, VALUES)
    refused_at_door = sum(e is not None for e in door)
    doc = w.leader.collect(w.task.task_id, T0, _param(0, [0, 1]).to_bytes())
    counts = open_level(w.task, w.collector_key, _param(0, [0, 1]), doc)
    assert counts == [38, 12] and doc["report_count"] == 50  # first bits: 0 for all but 0xc8; the 3 bad ones not in
    status = w.leader.status()["tasks"][0]
    level0 = status["levels"][0]
    assert refused_at_door + level0["refused"].get("vdaf_invalid", 0) == 3
    assert sum(status["refused_at_upload"].values()) == refused_at_door
    if refused_at_door < 3:  # the helper counts what reached it too
        helper_level0 = w.helper.status()["tasks"][0]["levels"][0]
        assert helper_level0["refused"].get("vdaf_invalid", 0) == 3 - refused_at_door


def test_a_report_is_prepared_once_per_level_and_late_reports_are_refused(tmp_path: Path) -> None:
    """The helper refuses a report already in a job at that level (report_replayed); the door refuses a report of a
    window whose collection began (batch_collected)."""
    from ldp.prio.poplar1 import bits_of

    w = _world(tmp_path)
    _upload(w, VALUES)
    w.leader.collect(w.task.task_id, T0, _param(0, [0, 1]).to_bytes())
    late = w.leader.upload_many(w.task.task_id, [w.report(bits_of(5, BITS), time=T0 + 7)])
    assert late[0] is not None and late[0].code == "batch_collected"
    from ldp.aggregators.messages import AggregationJobResp, PrepareInit, ReportShare, initialize

    stored = next(iter(w.leader.task_state(w.task.task_id).stored.values()))
    r = stored.report
    init = PrepareInit(ReportShare(stored.rid, r.time, r.public_share, r.helper_ciphertext), initialize(b"\0" * 8))
    body = AggregationJobInitReq((init,), _param(0, [0, 1]).to_bytes()).to_bytes()
    resp = AggregationJobResp.from_bytes(w.helper.aggregation_job(w.task.task_id, "B" * 22, body))
    assert resp.prepare_resps[0].error is not None
    assert resp.prepare_resps[0].error.code in ("report_replayed", "batch_collected")
