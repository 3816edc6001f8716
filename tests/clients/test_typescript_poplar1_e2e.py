"""The TypeScript client's ``poplar1`` string metrics end to end in Node (issue 89, item 3): devices made by
clients/typescript/test-support/dap-device.mjs (the built package: ``ldp-telemetry-client/dap``'s WebAssembly, the
native client's Poplar1 report builder; the client's ``FileStore``) record strings into a spec's ``poplar1`` metric
with the task file ``ldp collect task`` writes for it, are held to the k reports a window the task counts, and upload
to a loopback ``ldp`` leader paired with an ``ldp`` helper (tests/support/loopback_aggregators.py); ``ldp collect
--heavy-hitters`` walks the window's prefix tree at the spec's ``threshold`` (carried by the task) and, with no
noise, finds exactly the strings held by at least that many devices, with their exact counts.

CI builds the client first (.ci/run) and sets ``LDP_REQUIRE_TS_BUNDLE=1``: without the build this test fails there
instead of skipping."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.poplar1_e2e import HOLDERS, SPEC, T0, THRESHOLD, poplar1_aggregators, walk_found
from support.typescript import CLIENT, DAP_WASM, node_for

DEVICE = CLIENT / "test-support" / "dap-device.mjs"


def _node() -> str:
    return node_for([DAP_WASM], "the TypeScript client's dap entry is not built (npm test in clients/typescript)")


def test_node_devices_record_strings_and_the_walk_finds_exactly_those_with_t_holders(tmp_path: Path) -> None:
    """Breaks if the client seals anything but the string's UTF-8 bytes NUL-padded to bits/8, first bit the most
    significant (the walk finds other strings, or the spied bytes differ), if its report is not a Poplar1 report of
    the task (the leader or the helper refuses it: fewer counted), if the charge is not ``per_report`` (the second
    record is not refused), or if a value ending in NUL is sealed (a 0x6100 string is counted)."""
    node = _node()
    with poplar1_aggregators(tmp_path / "deploy") as (agg, task_file):
        values = [text for text, n in HOLDERS.items() for _ in range(n)]
        jobs = [{"spec": SPEC, "tasks": {"new_words": task_file.read_text()}, "state": str(tmp_path / f"device{d}"),
                 "clock": T0 + 600 * d + 17, "records": [["new_words", "a\0"], ["new_words", text],
                                                          ["new_words", text]]}
                for d, text in enumerate(values)]
        out = subprocess.run([node, str(DEVICE)], input=json.dumps(jobs), capture_output=True, text=True,
                             timeout=300, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
        made: list[str] = []
        for device in json.loads(out.stdout):
            # the NUL-ended value refused before any charge, the second string by the ledger (k = 1 a window)
            assert device["refused"] == [["new_words", "LdpValueError", "not_in_alphabet"],
                                         ["new_words", "BudgetExceeded"]], device
            assert (device["result"]["accepted"], device["result"]["stopped"], device["pending"]) == (1, "empty", 0)
            made += device["made"]["new_words"]
        assert made == [text.encode().ljust(2, b"\0").hex() for text in values]
        found, doc = walk_found(tmp_path / "deploy", task_file, tmp_path / "found.json")
        assert found == {"hi": 4, "é": 3}, (doc, agg.log("leader"))
        assert (doc["threshold"], doc["bits"], doc["report_count"]) == (THRESHOLD, 16, len(values))
