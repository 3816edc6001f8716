"""The native (Rust) client's two-aggregator metrics end to end (issue 87): a Rust program built from ``clients/rust``
(``examples/dap_devices.rs``, release build with the ``uploader`` and ``prio`` features) makes several devices, each
a ``TelemetryClient`` on its own crash-safe state folder given the task files ``ldp collect task`` writes (both
aggregators' configs inside), recording the example spec's two metrics (docs/two-aggregators.md): the exact value of
``search_engine`` (``two-aggregator``) and the randomized bit of ``crashed`` (``two-aggregator+local``, two reports
a window). Each report is charged to the device's ledger with Python's charge, bit for bit, the third ``crashed`` a
window is refused, and the devices upload with no collector to a loopback ``ldp`` leader paired with an ``ldp``
helper (tests/support/loopback_aggregators.py); ``ldp collect`` then reads back exactly the sum of the measurements
the devices made (no noise: the spec without its central target), on both VDAF drafts (18 and 08, each metric on
each). A second run over the same states sends nothing.

The devices' local noise comes from a seeded stream (``KeyedRandomSource`` keyed by the seed below, one message per
device): a simulation, labelled so in the program, which makes each randomized payload again with a twin encoder on
the same stream, so that the measurements the sealed reports carry are known here; the reports' IDs, shares and
HPKE keys come from the OS generator, as on a real device.

CI builds the program first (.ci/run: ``cargo build --release --features uploader,prio --example dap_devices``) and
sets ``LDP_REQUIRE_RUST_BUILD=1``, so a missing build fails there; a developer without cargo gets a skip. Without the
Prio3 binding the aggregators cannot run: skipped (failed under ``LDP_REQUIRE_PRIO=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec

from ldp.spec import CollectionSpec

PROGRAM = ROOT / "clients" / "rust" / "target" / "release" / "examples" / "dap_devices"
SPEC = ROOT / "examples" / "two_aggregators.json"
SEED = "727573742d6461702d31"  # "rust-dap-1": an arbitrary fixed seed (see the module docstring)
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
DEVICES = 8


def program() -> Path:
    """The built devices program (a release build with the uploader and prio features)."""
    if not PROGRAM.exists():
        reason = ("the Rust two-aggregator end-to-end test needs the built program: cd clients/rust && "
                  "cargo build --release --features uploader,prio --example dap_devices")
        if os.environ.get("LDP_REQUIRE_RUST_BUILD") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return PROGRAM


def run_devices(tmp: Path, tasks: dict[str, Path]) -> dict[str, Any]:
    cmd = [str(program()), str(tmp / "spec.json"), str(tmp / "devices.json"), str(tmp / "states"), SEED,
           *(f"{metric}={path}" for metric, path in tasks.items())]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("drafts", [(18, 8), (8, 18)], ids=["search18-crashed08", "search08-crashed18"])
def test_rust_devices_record_upload_and_the_aggregators_count_exactly(tmp_path: Path,
                                                                       drafts: tuple[int, int]) -> None:
    program()
    doc = json.loads(SPEC.read_text())
    del doc["release"]  # no central target: the count is read without noise, exactly
    spec = CollectionSpec.from_dict(doc)
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    labels = spec.params("search_engine").labels
    devices = [{"at": float(T0 + 600 * d + 17),
                "values": [["search_engine", labels[d % 4]], ["crashed", d % 2 == 0], ["crashed", d % 3 == 0],
                           ["crashed", True]]} for d in range(DEVICES)]
    (tmp_path / "devices.json").write_text(json.dumps(devices))
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=drafts[0], time_precision=3600),
        "crashed": TaskSpec("Prio3Count", draft=drafts[1], time_precision=3600)}, collection=spec)
    agg.start_both()
    try:
        tasks = {m: tmp_path / "deploy" / "collector" / f"{m}.task.json" for m in ("search_engine", "crashed")}
        result = run_devices(tmp_path, tasks)
        n = DEVICES * 3
        assert (result["recorded"], result["refused"]) == (n, {"crashed": DEVICES}), result
        assert (result["accepted"], result["acknowledged"], result["pending"]) == (n, n, 0), result
        assert (result["rejected"], result["duplicates"]) == ({}, 0), result
        check_charges(spec, result["spent"])
        made = {"search_engine": [labels.index(labels[d % 4]) for d in range(DEVICES)],
                "crashed": [spec.params("crashed").prio3_fit().measurement(p) for p in result["payloads"]["crashed"]]}
        assert len(made["crashed"]) == 2 * DEVICES
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            fit = spec.params(metric).prio3_fit()
            assert collected["sums"] == fit.sums(measurements), metric
            assert collected["n"] == len(measurements) and collected["refused"] == {}, collected
        again = run_devices(tmp_path, tasks)
        assert (again["recorded"], again["acknowledged"], again["pending"]) == (0, 0, 0), again
    finally:
        agg.stop()


def check_charges(spec: CollectionSpec, spent: list[dict[str, float]]) -> None:
    """Each device's ledger holds Python's charges bit for bit: one ``search_engine`` report (the spec's
    ``per_report``) and two ``crashed`` ones (the protocol's local ε), summed as the ledger sums them, up to the
    per-window cap Python's spec computes."""
    search, crashed = spec.report_charge("search_engine").epsilon, spec.report_charge("crashed").epsilon
    cap = spec.device_window_cap("crashed")
    assert cap is not None and (0.0 + crashed + crashed) <= cap.epsilon * (1 + 1e-9)
    assert len(spent) == DEVICES
    for device in spent:
        assert device == {"search_engine": 0.0 + search, "crashed": 0.0 + crashed + crashed}, device
        assert device["crashed"].hex() == (crashed + crashed).hex()
