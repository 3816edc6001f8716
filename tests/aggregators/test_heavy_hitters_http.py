"""Poplar1's heavy-hitter collection over HTTP (issue 89, item 2): the helper and the leader each served on loopback
by the binding's front (:func:`ldp.aggregators.service.front_for`), the leader reaching the helper through
:class:`~ldp.aggregators.http.HelperClient` (each level's job: the ``PUT`` of its first round, the ``POST`` of its
``AggregationJobContinueReq``, then the helper's aggregate share), devices' reports uploaded with
:class:`~ldp.aggregators.http.LeaderClient`, and ``ldp collect --heavy-hitters`` run in process against the leader's
URL (each level a DAP-09 collection job whose ``CollectionReq`` carries the level's ``agg_param``). Without noise the
walk finds exactly the strings with at least ``T`` holders, and its ``--out`` file says so; with noise the walk's
(ε, δ) it prints is the calibration's composition over the levels."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support import call_main
from two_aggregators import T0, WINDOW, world

from ldp.aggregators.http import HelperClient, LeaderClient, create_app
from ldp.aggregators.messages import MEDIA_TYPES
from ldp.aggregators.service import front_for
from ldp.ingest.config import new_token, token_sha256

BITS = 8
PEER, COLLECTOR = new_token(), new_token()
# 16 devices over 4 strings: "A" held by 7, "z" by 5, "0" by 3 (below T = 4), "~" by 1
HOLDERS = {"A": 7, "z": 5, "0": 3, "~": 1}


@pytest.fixture
def served(tmp_path: Path) -> Any:
    """(world, the leader's URL): a noiseless Poplar1 task, its helper and leader each behind a loopback front, the
    leader's helper the HTTP client of the helper's front."""
    yield from _serve(tmp_path, None)


def _serve(tmp_path: Path, noise: Any) -> Any:
    w = world(tmp_path, vdaf="Poplar1", params={"bits": BITS, "max_candidates": 8}, min_batch_size=4, job_size=6,
              noise=noise, seed=None if noise is None else 11)
    helper = front_for(create_app(w.helper, peer_token_sha256=token_sha256(PEER)), "helper", "127.0.0.1", 0)
    helper.start()
    try:
        host, port = helper.address
        seeded = {} if noise is None else {"noise_source": random.Random(12)}  # the leader's noise too, seeded
        w.restart_leader(helper=HelperClient(f"http://{host}:{port}", PEER, attempts=1), **seeded)
        leader = front_for(create_app(w.leader, collector_token_sha256=token_sha256(COLLECTOR)), "leader",
                           "127.0.0.1", 0)
        leader.start()
        try:
            yield w, "http://{}:{}".format(*leader.address)
        finally:
            leader.stop()
    finally:
        helper.stop()


def _command(w: Any, url: str, tmp_path: Path, holders: dict[str, int]) -> list[str]:
    """Devices' reports uploaded over HTTP, the window ended, and the ``ldp collect`` command line of the task."""
    from ldp.aggregators.config import save_keypair, write_secret
    from ldp.prio.poplar1 import bits_of

    client = LeaderClient(url)
    for text, n in holders.items():
        for _ in range(n):
            client.upload(w.task.task_id, w.report(bits_of(ord(text), BITS)))
    w.now = T0 + WINDOW + 1  # the window has ended
    w.task.save(tmp_path / "task.json")
    save_keypair(tmp_path / "collector.json", w.collector_key)
    write_secret(tmp_path / "token", COLLECTOR + "\n")
    return ["collect", "--task", str(tmp_path / "task.json"), "--leader", url, "--key",
            str(tmp_path / "collector.json"), "--token-file", str(tmp_path / "token"), "--window", str(T0)]


def test_ldp_collect_heavy_hitters_over_http_finds_exactly_the_strings_with_t_holders(served: Any,
                                                                                      tmp_path: Path) -> None:
    """Breaks if the continue route or its media type is refused (the leader's collect answers an error, the
    command exits 2), if the collection job drops ``agg_param``, or if either round or the aggregation changes a
    count (the strings or their counts differ)."""
    w, url = served
    command = _command(w, url, tmp_path, HOLDERS)
    out = tmp_path / "found.json"
    code, _, err = call_main(command)  # a Poplar1 task has no Prio3 collection: named before the leader is asked
    assert code == 2 and "collected with --heavy-hitters" in err, err
    code, printed, err = call_main([*command, "--heavy-hitters", "--threshold", "4", "--out", str(out)])
    assert code == 0, err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {s["text"]: s["count"] for s in doc["strings"]} == {"A": 7, "z": 5}
    assert {s["bits"] for s in doc["strings"]} == {b"A".hex(), b"z".hex()}
    assert (doc["threshold"], doc["bits"], doc["levels_released"], doc["report_count"]) == (4, BITS, BITS, 16)
    assert doc["walk_epsilon"] is None and not doc["capped"] and len(doc["trace"]) == BITS
    assert "2 string(s) of 8 bits with a noised count >= 4 over 8 level(s); no noise" in printed
    # both aggregators ran every level's jobs over HTTP: the helper's status counts the same levels and reports
    levels = w.helper.status()["tasks"][0]["levels"]
    assert [(lv["level"], lv["valid"], lv["released"]) for lv in levels] == [(i, 16, True) for i in range(BITS)]
    # the walk again: every level answered from its record (the same parameters), the same strings
    code, _, err = call_main([*command, "--heavy-hitters", "--threshold", "4", "--out", str(tmp_path / "b.json")])
    assert code == 0 and json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))["strings"] == doc["strings"]


def test_the_continue_request_is_sent_and_taken_as_dap_09s_media_type(served: Any) -> None:
    """DAP-09 §9.5 names the continue request's media type: the client sends it and the helper takes it (a job it
    never began is then ``unrecognized_aggregation_job``); another type is refused before the body is read (415,
    ``invalid_message``) and counted in ``refused_jobs``, as a first round's is. Breaks if the route stops checking
    the type or the client sends another."""
    import urllib.error
    import urllib.request

    from ldp.aggregators.poplar1_messages import AggregationJobContinueReq
    from ldp.errors import AggregatorError

    w, _ = served
    helper, job = w.leader.helper, "A" * 22
    body = AggregationJobContinueReq(1, ()).to_bytes()
    with pytest.raises(AggregatorError) as unknown:
        helper.aggregation_job_continue(w.task.task_id, job, body)
    assert unknown.value.code == "unrecognized_aggregation_job" and unknown.value.status == 404
    req = urllib.request.Request(f"{helper.url}/tasks/{w.task.id_text}/aggregation_jobs/{job}", data=body,
                                 method="POST", headers={"Authorization": f"Bearer {PEER}",
                                                         "Content-Type": MEDIA_TYPES["AggregationJobInitReq"]})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=30)  # noqa: S310 (loopback)
    assert refused.value.code == 415 and json.loads(refused.value.read())["code"] == "invalid_message"
    assert w.helper.refused_jobs["invalid_message"] == 1


def test_with_noise_over_http_the_walk_states_the_calibrations_figure(tmp_path: Path) -> None:
    """Each aggregator noises each level over HTTP; the command's walk (ε, δ) is the calibration's over the 8 levels
    (the figure the collector computes from the task: a Collection states none), at most the task's ε, and the
    strings held by many devices are still found (seeded noise, both aggregators'; the count's sd is 7.2, so 60
    holders against T = 25 pass each level by 4.9 sd)."""
    from ldp.aggregators.task import Noise
    from ldp.prio.heavy_hitters import calibrate

    served_noisy = _serve(tmp_path / "w", Noise("gaussian", 4.0, 1e-6))
    w, url = next(served_noisy)
    try:
        command = _command(w, url, tmp_path, {"A": 80, "z": 60, "~": 2})
        out = tmp_path / "found.json"
        code, printed, err = call_main([*command, "--heavy-hitters", "--threshold", "25", "--out", str(out)])
        assert code == 0, err
    finally:
        served_noisy.close()
    doc = json.loads(out.read_text(encoding="utf-8"))
    want = calibrate("gaussian:4:1e-6", BITS).cost()
    assert doc["walk_epsilon"]["epsilon"] == pytest.approx(want.epsilon, rel=1e-12) and want.epsilon <= 4.0 + 1e-9
    assert doc["levels_released"] == BITS and {"A", "z"} <= {s["text"] for s in doc["strings"]}
    assert f"walk ε = {want.epsilon:.4g}" in printed
