"""The Python client's ``poplar1`` metrics (issue 89, item 3; ldp.client.dap): conformance/specs/poplar1.json replayed
through ``TelemetryClient`` (its specs, records without a task, and each measurement through a device's Poplar1
task), a task that is not the metric's refused when the client is made, and a recorded string sealed as a Poplar1
DAP-09 report that both aggregators open and verify to a count of 1 at the string and 0 beside it. The upload and
the heavy-hitter walk end to end: tests/client/test_client_poplar1_e2e.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import prio

from ldp.aggregators.task import Noise, Task
from ldp.client import TelemetryClient
from ldp.conformance.refusals import refusal_of
from ldp.errors import SpecError
from ldp.reports import canonical_json
from ldp.spec import CollectionSpec

VECTORS = json.loads((ROOT / "conformance" / "specs" / "poplar1.json").read_text("ascii"))
T = 1_764_000_000.0


def _spec(bits: int = 64, **params: int) -> CollectionSpec:
    return CollectionSpec.from_dict({
        "spec_version": 1, "name": "words", "budget": {"per_window": 10, "lifetime": 100},
        "metrics": {"w": {"protocol": "poplar1", "params": {"bits": bits, "threshold": 2, "max_candidates": 16,
                                                            **params},
                          "budget": {"per_report": 1.0}, "trust": "two-aggregator"}}})


def _task(spec: CollectionSpec, keys: Any = None) -> Task:
    p = prio()
    leader, helper, collector = keys or [p.HpkeKeypair.generate(i) for i in (1, 2, 3)]
    return Task.for_metric(spec, "w", leader_url="http://leader.test", helper_url="http://helper.test",
                           collector_hpke_config=collector.config.to_bytes(), min_batch_size=1, noise=Noise(),
                           hpke_configs=(leader.config.to_bytes(), helper.config.to_bytes()))


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_the_spec_cases_replay(case: dict[str, Any], tmp_path: Path) -> None:
    """Each case through the public API (not the generator): the canonical form, fingerprint, trust, each record's
    refusal and the pending count, or every error's path and message in order."""
    if "errors" in case:
        with pytest.raises(SpecError) as exc:
            CollectionSpec.from_dict(case["spec"])
        assert [dict(zip(("path", "message"), e.split(": ", 1), strict=True)) for e in exc.value.errors] == \
            case["errors"]
        return
    spec = CollectionSpec.from_dict(case["spec"])
    assert (canonical_json(spec.to_dict(release=False)), spec.fingerprint) == (case["canonical"], case["fingerprint"])
    assert {n: m.trust for n, m in spec.metrics.items()} == case["trust"]
    with TelemetryClient(spec, tmp_path / "state", clock=lambda: T) as client:
        for record in case.get("records", []):
            try:
                client.record(record["metric"], record["value"])
                got = None
            except (TypeError, ValueError) as err:
                got = refusal_of(err, "values")
            assert got == record.get("error"), record
        assert len(client.pending()) == case.get("pending", 0)


def test_each_measurement_replays_through_a_devices_poplar1_task(tmp_path: Path) -> None:
    """The device's own path (its DapEncoder's prepare and measurement): the bits, first bit first, are the hex's;
    a refused value has the vector's code. Breaks if the client pads, orders bits or checks values otherwise."""
    by_bits: dict[int, Any] = {}
    for m in VECTORS["measurements"]:
        if m["bits"] not in by_bits:
            spec = _spec(m["bits"])
            client = TelemetryClient(spec, tmp_path / f"{m['bits']}.db", clock=lambda: T, tasks={"w": _task(spec)})
            by_bits[m["bits"]] = (client, client._encoder("w"))
        enc = by_bits[m["bits"]][1]
        try:
            bits = enc.measurement(enc.prepare(m["value"]))
        except (TypeError, ValueError) as err:
            assert refusal_of(err, "values")["code"] == m.get("error"), m
            continue
        want = int(m["hex"], 16)
        assert bits == tuple(bool(want >> (m["bits"] - 1 - i) & 1) for i in range(m["bits"])), m
    for client, _ in by_bits.values():
        client.close()


@pytest.mark.parametrize("change", [{"vdaf": "Prio3Count", "vdaf_params": {}},
                                    {"vdaf_params": {"bits": 32, "max_candidates": 16}},
                                    {"vdaf_params": {"bits": 16, "max_candidates": 8}},
                                    {"metric": "other"}, {"window_seconds": 3600, "time_precision": 3600}])
def test_a_task_that_is_not_the_metrics_is_refused_when_the_client_is_made(change: dict[str, Any],
                                                                            tmp_path: Path) -> None:
    spec = _spec(16)
    task = _task(spec)
    with pytest.raises(ValueError, match="the task given for metric 'w'"):
        TelemetryClient(spec, tmp_path / "s.db", clock=lambda: T, tasks={"w": dataclasses.replace(task, **change)})


def test_the_tasks_own_threshold_and_levels_are_not_the_devices_concern(tmp_path: Path) -> None:
    spec = _spec(16)
    task = dataclasses.replace(_task(spec), vdaf_params={"bits": 16, "max_candidates": 16, "levels": 4,
                                                         "threshold": 9})
    with TelemetryClient(spec, tmp_path / "s.db", clock=lambda: T, tasks={"w": task}) as client:
        client.record("w", "ok")
        assert client.spent("w").epsilon == 1.0  # the spec's per_report


def test_a_recorded_string_is_a_poplar1_report_both_aggregators_verify(tmp_path: Path) -> None:
    """The outbox line's report opens at each aggregator and verifies at the last level to 1 for the string's 16
    bits and 0 beside it; breaks if the client seals another measurement, to another key or under another task."""
    from ldp.client.dap import parse_dap_line
    from ldp.prio.poplar1 import agg_param, bits_of, signed_counts, verify_report

    p = prio()
    keys = [p.HpkeKeypair.generate(i) for i in (1, 2, 3)]
    spec = _spec(16)
    task = _task(spec, keys)
    with TelemetryClient(spec, tmp_path / "s.db", clock=lambda: T, tasks={"w": task}) as client:
        client.record("w", "é")
        assert client.pending() == []  # nothing for the ingest service
        (_, metric, line), = client._outbox.dap_pending(10)
    task_id, body = parse_dap_line(line)
    assert (metric, task_id) == ("w", task.id_text)
    r = p.DapReport.from_bytes(body)
    shares = [p.open_input_share(key, role=role, task_id=task.task_id, report_id=r.report_id, time=r.time,
                                 public_share=r.public_share, ciphertext=ct)
              for key, role, ct in ((keys[0], "leader", r.leader_ciphertext), (keys[1], "helper", r.helper_ciphertext))]
    vdaf = task.prio3()
    here = int.from_bytes("é".encode(), "big")
    param = agg_param(15, sorted([here, here ^ 1]))
    outs = verify_report(vdaf, bytes(vdaf.verify_key_size), param, r.report_id, r.public_share, shares)
    counts = signed_counts([vdaf.aggregate(param, [out]) for out in outs])
    assert dict(zip(sorted([here, here ^ 1]), counts, strict=True)) == {here: 1, here ^ 1: 0}
    assert bits_of("é", 16) == tuple(bool(here >> (15 - i) & 1) for i in range(16))
