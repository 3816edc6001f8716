"""The harness that pairs an ``ldp`` aggregator with another implementation's (simulations/peer_aggregator.py,
issue 85, item 4), run here as CI can: the peer is another ``ldp`` behind the DAP interop test API
(simulations/ldp_interop_api.py), the same API through which the harness drives Janus's ``janus_interop_aggregator``
(the runs with Janus are in the issue's closing note: nothing can be fetched in CI). Exact both ways, a broken
pairing reported as not exact, and the interop API's ``add_task`` parser under arbitrary requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support.scripts import load_script
from two_aggregators import prio

ROOT = Path(__file__).resolve().parents[2]
interop = load_script("ldp_interop_api")


def harness(tmp_path: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run([sys.executable, str(ROOT / "simulations" / "peer_aggregator.py"), "--dir",
                           str(tmp_path / "runs"), "--min-batch-size", "10", "--wait", "60", *args],
                          capture_output=True, text=True, timeout=600, env={**__import__("os").environ,
                                                                             "LDP_PEER_AGGREGATOR": ""})
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, lines, done.stdout + done.stderr


def test_an_ldp_leader_and_an_ldp_helper_paired_through_the_interop_api_are_exact_both_ways(tmp_path: Path) -> None:
    prio()
    rc, runs, out = harness(tmp_path, "--reports", "60", "--vdaf", "sum,histogram")
    assert rc == 0, out
    assert [(r["peer_role"], r["vdaf"]) for r in runs] == [
        ("helper", "Prio3Sum"), ("helper", "Prio3Histogram"), ("leader", "Prio3Sum"), ("leader", "Prio3Histogram")]
    for r in runs:
        assert r["exact"] and r["collected"] == r["truth"] and r["collected_n"] == 60, r
        assert r["statuses"] == {"201": 60}, r
    assert "4 of 4 runs exact (peer ldp;" in out


def test_a_pairing_whose_aggregators_hold_different_verify_keys_is_reported_as_not_exact(tmp_path: Path) -> None:
    """Every report fails preparation (the two verify keys differ), so none is counted and the window is too small
    to release: the harness says so and exits 1."""
    prio()
    rc, runs, out = harness(tmp_path, "--reports", "30", "--vdaf", "count", "--peer-role", "helper",
                            "--fault", "verify-key")
    assert rc == 1, out
    assert len(runs) == 1 and not runs[0]["exact"] and runs[0]["collected"] is None, runs
    assert "0 of 1 runs exact" in out


def _request(vdaf: dict[str, str], /, **over: Any) -> dict[str, Any]:
    from ldp.aggregators.task import b64

    p = prio()
    body = {"task_id": b64(bytes(32)), "leader": "http://127.0.0.1:1/", "helper": "http://127.0.0.1:2/",
            "vdaf": vdaf, "leader_authentication_token": "t", "role": "helper", "vdaf_verify_key": b64(bytes(16)),
            "max_batch_query_count": 1, "query_type": 1, "min_batch_size": 10, "time_precision": 3600,
            "collector_hpke_config": b64(p.HpkeKeypair.generate(1).config.to_bytes())}
    return {**body, **over}


@pytest.mark.parametrize(("vdaf", "params"), [
    ({"type": "Prio3Count"}, {}),
    ({"type": "Prio3Sum", "bits": "8"}, {"max_measurement": 255}),
    ({"type": "Prio3SumVec", "bits": "3", "length": "5", "chunk_length": "5"},
     {"length": 5, "max_measurement": 7, "chunk_length": 5}),
    ({"type": "Prio3Histogram", "length": "16", "chunk_length": "6"}, {"length": 16, "chunk_length": 6}),
])
def test_add_task_maps_the_interop_apis_vdaf_objects_onto_vdaf_08_tasks(vdaf: dict[str, str],
                                                                        params: dict[str, int]) -> None:
    task, key = interop.task_of(_request(vdaf))
    assert (task.vdaf, task.vdaf_params, task.vdaf_draft, key) == (vdaf["type"], params, 8, bytes(16))
    assert (task.window_seconds, task.time_precision, task.min_batch_size) == (3600, 3600, 10)


@pytest.mark.parametrize("over", [
    {"query_type": 2}, {"vdaf": {"type": "Poplar1", "bits": "8"}}, {"vdaf": {"type": "Prio3Sum"}},
    {"vdaf_verify_key": "AAAA"}, {"task_id": "short"}, {"time_precision": 0},
])
def test_add_task_refuses_what_ldp_does_not_run(over: dict[str, Any]) -> None:
    api = interop.InteropApi(Path("/nonexistent"))
    out = api.answer("/internal/test/add_task", _request({"type": "Prio3Count"}, **over))
    assert out["status"] == "error" and out["error"], out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["task_id", "vdaf", "query_type", "min_batch_size", "time_precision",
                                        "vdaf_verify_key", "collector_hpke_config", "leader", "role"]),
                       st.one_of(st.none(), st.integers(-2, 2 ** 70), st.text(max_size=40),
                                 st.dictionaries(st.text(max_size=12), st.text(max_size=6), max_size=4)),
                       max_size=4))
def test_add_task_answers_any_request_with_a_task_or_an_error_status(over: dict[str, Any]) -> None:
    api = interop.InteropApi(Path("/nonexistent"))
    try:
        task, _ = interop.task_of(_request({"type": "Prio3Count"}, **over))
    except (ValueError, KeyError, TypeError) as exc:
        api.add_task = lambda request: interop.task_of(request)  # no process: the parser's answer only
        out = api.answer("/internal/test/add_task", _request({"type": "Prio3Count"}, **over))
        assert out["status"] == "error", (over, exc)
    else:
        assert task.vdaf_draft == 8
