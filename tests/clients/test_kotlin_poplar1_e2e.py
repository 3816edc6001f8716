"""The Kotlin client's ``poplar1`` string metrics end to end (issue 89, item 3): JVM devices (clients/kotlin's test
program ``E2EDapDevices``, run from the built classes as tests/clients/test_kotlin_dap_e2e.py runs it) each open a
``TelemetryClient`` on a crash-safe ``FileStore`` folder of its own, given the task file ``ldp collect task`` writes for
the spec's ``poplar1`` metric (read by ``dap.Poplar1Task``: the native client's Poplar1 and HPKE through JNA, the
library built with the features ``prio,poplar1``), and record strings into it. A value ending in NUL is refused
(``not_in_alphabet``) before any charge, the second string of a window by the ledger (``per_window`` over
``per_report``: one report a window); the devices upload with no ingest service to a loopback ``ldp`` leader paired
with an ``ldp`` helper (tests/support/loopback_aggregators.py), and ``ldp collect --heavy-hitters`` walks the window's
prefix tree at the spec's ``threshold`` (carried by the task): with no noise it finds exactly the strings held by at
least that many devices, with their exact counts.

It needs the built client and its native library (``mvn install``, .ci/run); CI sets ``LDP_REQUIRE_KOTLIN_BUILD=1``,
so a missing build fails there. Without the Prio3 binding the aggregators cannot run: skipped (failed under
``LDP_REQUIRE_PRIO=1``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.loopback_aggregators import prio
from support.poplar1_e2e import HOLDERS, SPEC, T0, THRESHOLD, poplar1_aggregators, walk_found
from test_kotlin_dap_e2e import java_command


def _text(bits: list[int]) -> str:
    """The string of a measurement's bits (first bit the most significant of the first byte), its NUL pad cut."""
    return bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)).rstrip(b"\0").decode()


def test_jvm_devices_record_strings_and_the_walk_finds_exactly_those_with_t_holders(tmp_path: Path) -> None:
    """Breaks if the client seals anything but the string's UTF-8 bytes NUL-padded to bits/8, first bit the most
    significant (the walk finds other strings, or the spied bits differ), if its report is not a Poplar1 report of
    the task (the leader or the helper refuses it: fewer counted, or the upload is rejected), if the charge is not
    ``per_report`` (the second record is not refused), or if a value ending in NUL is sealed (a 0x6100 string is
    counted)."""
    command = java_command()
    prio()
    with poplar1_aggregators(tmp_path / "deploy") as (agg, task_file):
        values = [text for text, n in HOLDERS.items() for _ in range(n)]
        devices = [{"state": str(tmp_path / f"device{d}"), "clock": T0 + 600 * d + 17,
                    "records": [["new_words", "a\0"], ["new_words", text], ["new_words", text]]}
                   for d, text in enumerate(values)]
        job = {"spec": SPEC, "tasks": {"new_words": task_file.read_text()}, "devices": devices}
        (tmp_path / "job.json").write_text(json.dumps(job))
        done = subprocess.run([*command, str(tmp_path / "job.json")], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        for device in out["devices"]:
            # the NUL-ended value refused before any charge, the second string by the ledger (k = 1 a window)
            assert device["refused"] == [["new_words", "not_in_alphabet"], ["new_words", "BudgetExceeded"]], device
            result = device["result"]
            assert (result["accepted"], result["acknowledged"], result["stopped"]) == (1, 1, "empty"), device
            assert (result["rejected"], device["again"], device["pending"]) == ({}, 0, 0), device
            assert device["spent"] == {"new_words": 2.0}, device
        assert [_text(bits) for bits in out["made"]["new_words"]] == values
        assert all(len(bits) == 16 for bits in out["made"]["new_words"])
        found, doc = walk_found(tmp_path / "deploy", task_file, tmp_path / "found.json")
        assert found == {"hi": 4, "é": 3}, (doc, agg.log("leader"))
        assert (doc["threshold"], doc["bits"], doc["report_count"]) == (THRESHOLD, 16, len(values))
