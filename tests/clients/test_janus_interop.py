"""Divvi Up's published DAP client and collector against ``ldp``'s two aggregators (issue 85, item 3).

``janus_client`` and ``janus_collector`` 0.7.145 (DAP-09, VDAF-08 through ``prio`` 0.16.8), as published on
crates.io and used through their public APIs only, in a program of their own (clients/rust/janus-interop, its
Cargo.lock committed): ``janus-interop upload`` builds a ``janus_client::Client`` from the task file (it fetches both
aggregators' HPKE configs, ``GET /hpke_config?task_id=``) and uploads each value with ``upload_with_time`` into
yesterday's window; ``janus-interop collect`` builds a ``janus_collector::Collector`` from the collector's
``ldp collect keygen`` key file and token and runs DAP-09's collection flow for that window (``PUT`` then ``POST``
``/tasks/{id}/collection_jobs/{job}``, the ``Collection``'s two aggregate shares opened under DAP-09's
``AggregateShareAad`` and unsharded by prio 0.16.8). Between them an ``ldp`` leader and an ``ldp`` helper run as
processes on loopback (tests/support/loopback_aggregators.py), one VDAF-08 task per Prio3 type, no noise: the
collected aggregate must equal the truth exactly, every report counted and none refused, for Prio3Count, Prio3Sum,
Prio3SumVec and Prio3Histogram. A second collection of the window, by another collection job, reads the same
release. And a refusal reaches each crate as DAP-09's problem document (§3.2), its type recognized by janus_core:
``invalidBatchSize`` for a collection of a window with too few reports, ``reportRejected`` for a report older than
the leader's report expiry.

CI builds the program first (.ci/run: ``cargo build --locked --release`` in clients/rust/janus-interop, its target
folder cached and named by ``LDP_JANUS_INTEROP``) and sets ``LDP_REQUIRE_JANUS_INTEROP=1``, so a missing build fails
there; elsewhere the tests skip and say how to build it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.loopback_aggregators import LoopbackAggregators, TaskSpec, prio

ROOT = Path(__file__).resolve().parents[2]
CRATE = ROOT / "clients" / "rust" / "janus-interop"
BUILT = CRATE / "target" / "release" / "janus-interop"
WINDOW = 86400
PRECISION = 3600
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
REPORTS = 300

TASKS = {
    "count": TaskSpec("Prio3Count", {}, window_seconds=WINDOW, time_precision=PRECISION, min_batch_size=10),
    "sum": TaskSpec("Prio3Sum", {"max_measurement": 255}, window_seconds=WINDOW, time_precision=PRECISION,
                    min_batch_size=10),
    "sumvec": TaskSpec("Prio3SumVec", {"length": 5, "max_measurement": 7}, window_seconds=WINDOW,
                       time_precision=PRECISION, min_batch_size=10),
    "histogram": TaskSpec("Prio3Histogram", {"length": 16}, window_seconds=WINDOW, time_precision=PRECISION,
                          min_batch_size=10),
}


def program() -> Path:
    """The built ``janus-interop`` (``LDP_JANUS_INTEROP``, else the crate's release build); else a skip, or a
    failure under ``LDP_REQUIRE_JANUS_INTEROP=1``."""
    path = Path(os.environ.get("LDP_JANUS_INTEROP") or BUILT)
    if not path.is_file():
        reason = (f"the Janus interop test needs the built program ({path}): "
                  f"cd {CRATE.relative_to(ROOT)} && cargo build --locked --release")
        if os.environ.get("LDP_REQUIRE_JANUS_INTEROP") == "1":
            pytest.fail(f"LDP_REQUIRE_JANUS_INTEROP=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return path


def run(*args: str, timeout: float = 300) -> dict[str, Any]:
    done = subprocess.run([str(program()), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"janus-interop {args[0]} failed ({done.returncode}): {done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measurements(kind: str, rng: random.Random, n: int) -> list[Any]:
    if kind == "count":
        return [int(rng.random() < 0.3) for _ in range(n)]
    if kind == "sum":
        return [rng.randrange(256) for _ in range(n)]
    if kind == "sumvec":
        return [[rng.randrange(8) for _ in range(5)] for _ in range(n)]
    return [min(15, int(rng.expovariate(0.25))) for _ in range(n)]


def truth(kind: str, values: list[Any]) -> Any:
    """What janus_collector's aggregate result is: an integer (Count, Sum) or a list (SumVec, Histogram)."""
    if kind in ("count", "sum"):
        return sum(values)
    if kind == "sumvec":
        return [sum(v[i] for v in values) for i in range(5)]
    return [values.count(b) for b in range(16)]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackAggregators]:
    program()
    prio()
    d = LoopbackAggregators(tmp_path_factory.mktemp("janus"), TASKS)
    try:
        d.start_both()
        yield d
    finally:
        d.stop()


@pytest.mark.parametrize("kind", list(TASKS))
def test_janus_client_uploads_and_janus_collector_reads_the_exact_truth(deployment: LoopbackAggregators,
                                                                        kind: str) -> None:
    d = deployment
    task_file = str(d.root / "collector" / f"{kind}.task.json")
    values = measurements(kind, random.Random(f"janus-{kind}"), REPORTS)
    values_file = d.root / f"{kind}.values.json"
    values_file.write_text(json.dumps(values))
    started = time.monotonic()
    assert run("upload", "--task", task_file, "--values-file", str(values_file), "--time", str(T0 + 4000)) == {
        "uploaded": REPORTS}
    uploaded = time.monotonic() - started
    collect = ("collect", "--task", task_file, "--collector-key", str(d.root / "collector" / "hpke.json"),
               "--token-file", str(d.root / "collector" / "leader.token"), "--window", str(T0))
    result = run(*collect)
    print(f"  {kind}: {REPORTS} reports uploaded by janus_client in {uploaded:.2f} s, collected by janus_collector "
          f"in {time.monotonic() - started - uploaded:.2f} s: {result['result']}")
    assert result == {"report_count": REPORTS, "interval": [T0, WINDOW], "result": truth(kind, values)}
    # every report counted, none refused, on both sides
    for role in ("leader", "helper"):
        status = next(t for t in d.status(role)["tasks"] if t["task_id"] == d.tasks[kind].id_text)
        assert status["windows"][str(T0)] == {"valid": REPORTS, "refused": {}, "collected": True}, (role, status)
        assert status["refused"] == {} and status.get("refused_at_upload", {}) == {}, (role, status)
    # another collection job for the window: the same release
    assert run(*collect) == result


def test_janus_collector_reads_ldps_refusal_as_dap_09s_problem(deployment: LoopbackAggregators) -> None:
    """A window with too few reports (the day before, empty): the leader refuses the poll with DAP-09's
    ``invalidBatchSize`` problem document (§3.2), which janus_collector reads and reports."""
    d = deployment
    done = subprocess.run([str(program()), "collect", "--task", str(d.root / "collector" / "count.task.json"),
                           "--collector-key", str(d.root / "collector" / "hpke.json"),
                           "--token-file", str(d.root / "collector" / "leader.token"), "--window", str(T0 - WINDOW)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert ("400 Bad Request" in done.stderr and "type urn:ietf:params:ppm:dap:error:invalidBatchSize;" in done.stderr
            and "DAP problem type InvalidBatchSize" in done.stderr), done.stderr


def test_janus_client_reads_ldps_refusal_as_dap_09s_problem(deployment: LoopbackAggregators) -> None:
    """A report older than the leader's report expiry (7 days): refused with DAP-09's ``reportRejected``."""
    d = deployment
    done = subprocess.run([str(program()), "upload", "--task", str(d.root / "collector" / "sum.task.json"),
                           "--values", "[1]", "--time", str(T0 - 8 * WINDOW)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert ("400 Bad Request" in done.stderr and "type urn:ietf:params:ppm:dap:error:reportRejected;" in done.stderr
            and "DAP problem type ReportRejected" in done.stderr), done.stderr
