"""The native (Rust) client's ``poplar1`` metrics end to end (issue 89, item 3): the Rust devices program of
tests/clients/test_rust_dap_e2e.py (``clients/rust/examples/dap_devices.rs``, a release build with the ``uploader``
and ``poplar1`` features) makes several devices, each a ``TelemetryClient`` on its own crash-safe state folder given
the metric's Poplar1 task file (written from the spec as ``ldp collect task`` writes it, both aggregators' configs
inside), recording strings into the spec's ``poplar1`` metric: each a sealed Poplar1 DAP-09 report, charged the
spec's ``per_report`` (a device's third string a window refused by the cap). They upload with no collector to a
loopback ``ldp`` leader paired with an ``ldp`` helper (tests/support/loopback_aggregators.py), and
``ldp collect --heavy-hitters`` (the spec's threshold, carried by the task) walks the prefix tree: without noise it
finds exactly the strings held by at least T reports, with their exact counts.

CI builds the program with the ``poplar1`` feature (.ci/run: ``cargo build --release --features uploader,poplar1
--example dap_devices``) and sets ``LDP_REQUIRE_RUST_BUILD=1``, so a missing build, or one without the feature,
fails there; a developer without either gets a skip. Without the Prio3 binding the aggregators cannot run: skipped
(failed under ``LDP_REQUIRE_PRIO=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.poplar1_e2e import T0, THRESHOLD, poplar1_aggregators, walk_found
from test_rust_dap_e2e import program

SEED = "727573742d706f706c617231"  # "rust-poplar1": the devices' (unused) local noise stream
SPEC = {"spec_version": 1, "name": "rust_words", "budget": {"per_window": 10, "lifetime": 100},
        "metrics": {"new_words": {"protocol": "poplar1", "params": {"bits": 16, "threshold": THRESHOLD,
                                                                    "max_candidates": 8},
                                  "budget": {"per_report": 1.0, "per_window": 2.0}, "trust": "two-aggregator"}}}
"""16-bit strings (2 bytes of UTF-8), two reports a device a window."""
DEVICES = [["hi", "ok", "hi"], ["hi", "ok"], ["ok", "hi"], ["é", "hi"], ["ok", "é"], ["z", "hi"]]
"""Each device's strings: 12 recorded (the first device's third refused by the window's cap): "hi" 5 times and "ok"
4 times, at or above T = 3; "é" (c3 a9) twice and "z" once, below."""


def run_devices(tmp: Path, task: Path) -> dict[str, Any]:
    """The devices program on this test's devices; skipped (failed under ``LDP_REQUIRE_RUST_BUILD=1``) when the
    program was built without the ``poplar1`` feature."""
    cmd = [str(program()), str(tmp / "spec.json"), str(tmp / "devices.json"), str(tmp / "states"), SEED,
           f"new_words={task}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "the `poplar1` feature" in done.stderr:
        reason = ("the Rust poplar1 end-to-end test needs the program built with the poplar1 feature: cd clients/rust"
                  " && cargo build --release --features uploader,poplar1 --example dap_devices")
        if os.environ.get("LDP_REQUIRE_RUST_BUILD") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_rust_devices_record_strings_and_the_walk_finds_exactly_those_with_t_holders(tmp_path: Path) -> None:
    """Breaks if the Rust client seals anything but the string's padded bits (the walk finds other strings or other
    counts), if its task check refuses the task ``ldp collect task`` writes for the metric (the program fails), if
    the charge is not ``per_report`` (the third string is not refused, or another is), or if a report is not
    accepted by the leader (fewer counted)."""
    program()
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    devices = [{"at": float(T0 + 600 * d + 17), "values": [["new_words", w] for w in words]}
               for d, words in enumerate(DEVICES)]
    (tmp_path / "devices.json").write_text(json.dumps(devices))
    with poplar1_aggregators(tmp_path / "deploy", SPEC) as (agg, task):
        result = run_devices(tmp_path, task)
        n = sum(min(len(words), 2) for words in DEVICES)
        assert (result["recorded"], result["refused"]) == (n, {"new_words": 1}), result
        assert (result["accepted"], result["acknowledged"], result["pending"]) == (n, n, 0), result
        assert (result["rejected"], result["duplicates"]) == ({}, 0), result
        assert all(device == {"new_words": 0.0 + 1.0 + 1.0} for device in result["spent"]), result["spent"]
        found, doc = walk_found(tmp_path / "deploy", task, tmp_path / "found.json")
        assert found == {"hi": 5, "ok": 4}, (doc, agg.log("leader"))
        assert (doc["threshold"], doc["bits"], doc["report_count"]) == (THRESHOLD, 16, n)
        again = run_devices(tmp_path, task)  # the states hold nothing more: a second run sends nothing
        assert (again["recorded"], again["acknowledged"], again["pending"]) == (0, 0, 0), again
