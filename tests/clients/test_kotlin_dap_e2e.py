"""The Kotlin client's two-aggregator metrics end to end (issue 87): JVM devices (clients/kotlin's test program
``E2EDapDevices``, run from the built classes like tests/clients/test_kotlin_e2e.py) each open a ``TelemetryClient``
on a crash-safe ``FileStore`` folder of its own, given the task files ``ldp collect task`` writes (both aggregators'
configs inside, read by ``dap.DapTask``: the native client's Prio3 and HPKE through JNA), and record the example
spec's two metrics (docs/two-aggregators.md): the exact value of ``search_engine`` (``two-aggregator``, VDAF draft
18) and the randomized bit of ``crashed`` (``two-aggregator+local``, VDAF-08, two reports a window). Each report is
charged with Python's charge, bit for bit, the third ``crashed`` a window is refused, and the devices upload with no
ingest service (``UploadOptions()``) to a loopback ``ldp`` leader paired with an ``ldp`` helper
(tests/support/loopback_aggregators.py); ``ldp collect`` reads back exactly the sum of the measurements the devices
made (no noise: the spec without its central target). A second upload sends nothing.

The program watches each task (a delegate around ``DapTask``) to print the measurements the client made, randomized
ones included; the reports' IDs, shares, keys and the local noise come from the OS generator, as on a real device.

It needs the built client and its native library (``mvn install``: the classes, ``target/classpath.txt`` and
``target/native``, the native library the build made, .ci/run); CI sets ``LDP_REQUIRE_KOTLIN_BUILD=1``, so a missing
build fails there. Without the Prio3 binding the aggregators cannot run: skipped (failed under ``LDP_REQUIRE_PRIO=1``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec, prio

from ldp.spec import CollectionSpec

KOTLIN = ROOT / "clients" / "kotlin"
CLASSPATH_FILE = KOTLIN / "target" / "classpath.txt"
NATIVE = KOTLIN / "target" / "native"
MAIN = "io.github.ldptelemetry.client.e2e.E2EDapDevices"
JVM_FLAGS = ["-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
"""As tests/clients/test_kotlin_e2e.py: a short run of one program, the quick compiler only."""
SPEC = ROOT / "examples" / "two_aggregators.json"
WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
DEVICES = 6


def java_command() -> list[str]:
    """``java`` with the built client's classes, test classes, dependencies (JNA) and native library."""
    java = shutil.which("java")
    built = [CLASSPATH_FILE, KOTLIN / "target" / "test-classes", NATIVE]
    if java is None or not all(p.exists() for p in built) or not any(NATIVE.iterdir()):
        reason = (f"the Kotlin two-aggregator end-to-end test needs the built client: cd clients/kotlin && mvn -B "
                  f"install dependency:build-classpath -Dmdep.outputFile={CLASSPATH_FILE.relative_to(KOTLIN)}")
        if os.environ.get("LDP_REQUIRE_KOTLIN_BUILD") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    classpath = os.pathsep.join([str(KOTLIN / "target" / "classes"), str(KOTLIN / "target" / "test-classes"),
                                 CLASSPATH_FILE.read_text().strip()])
    return [str(java), *JVM_FLAGS, f"-Djna.library.path={NATIVE}", "-cp", classpath, MAIN]


def test_jvm_devices_record_upload_and_the_aggregators_count_exactly(tmp_path: Path) -> None:
    command = java_command()
    prio()
    doc = json.loads(SPEC.read_text())
    del doc["release"]  # no central target: the count is read without noise, exactly
    spec = CollectionSpec.from_dict(doc)
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {
        "search_engine": TaskSpec("Prio3Histogram", draft=18, time_precision=3600),
        "crashed": TaskSpec("Prio3Count", draft=8, time_precision=3600)}, collection=spec)
    agg.start_both()
    try:
        tasks = {m: (tmp_path / "deploy" / "collector" / f"{m}.task.json").read_text()
                 for m in ("search_engine", "crashed")}
        labels = spec.params("search_engine").labels
        devices = [{"state": str(tmp_path / f"device{d}"), "clock": T0 + 700 * d + 11,
                    "records": [["search_engine", labels[d % 4]], ["crashed", d % 2 == 0], ["crashed", d % 3 == 0],
                                ["crashed", True]]} for d in range(DEVICES)]
        (tmp_path / "job.json").write_text(json.dumps({"spec": doc, "tasks": tasks, "devices": devices}))
        done = subprocess.run([*command, str(tmp_path / "job.json")], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        search, crashed = spec.report_charge("search_engine").epsilon, spec.report_charge("crashed").epsilon
        for device in out["devices"]:
            assert device["refused"] == [["crashed", "BudgetExceeded"]], device  # k = 2 a window
            result = device["result"]
            assert (result["accepted"], result["acknowledged"], result["stopped"]) == (3, 3, "empty"), device
            assert (result["rejected"], result["duplicates"], device["again"], device["pending"]) == ({}, 0, 0, 0)
            assert device["spent"] == {"search_engine": 0.0 + search, "crashed": 0.0 + crashed + crashed}, device
        made = {metric: [m[0] for m in ms] for metric, ms in out["made"].items()}
        assert made["search_engine"] == [d % 4 for d in range(DEVICES)]
        assert len(made["crashed"]) == 2 * DEVICES and set(made["crashed"]) <= {0, 1}
        for metric, measurements in made.items():
            _, collected = agg.collect(metric, T0)
            assert collected is not None, agg.log("leader")
            fit = spec.params(metric).prio3_fit()
            assert collected["sums"] == fit.sums(measurements), metric
            assert collected["n"] == len(measurements) and collected["refused"] == {}, collected
    finally:
        agg.stop()
