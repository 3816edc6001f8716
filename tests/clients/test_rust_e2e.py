"""The native (Rust) client end to end (issue 46): a Rust program built from ``clients/rust``
(``examples/e2e_devices.rs``, release build with the ``uploader`` feature; CI adds ``prio``) makes 100 simulated
devices, each with its own crash-safe state folder (``FileStore``) and secret, records five metrics (GRR with labels,
binary RR, OLH, Duchi and the memoized longitudinal unary encoding L-OUE) and uploads them through the Rust
``Uploader`` (``ureq``) to a real ``python -m ldp serve`` on loopback. The ingest service folds the reports and the
Python decoder's estimates must each lie within its 99 % interval of the truth, with every report accepted and
acknowledged exactly once. A second run over the same states sends nothing (their outboxes are empty). A second test
gives the uploader an endpoint list whose first entry is a loopback port nothing listens on: every report is delivered
through the live ingest service and stored once (issue 50's failover).

The devices' noise comes from a seeded stream (``KeyedRandomSource`` keyed by the seed below, one message per
device): a simulation, labelled so in the program, so that this test's outcome is fixed; every other part is the
production path. The law of every report is proven exactly by the Rust suite's audit; this test proves the path from
the device to the decoder.

CI builds the program first (.ci/run: ``cargo build --release --features uploader,prio --example e2e_devices``) and
sets ``LDP_REQUIRE_RUST_BUILD=1``, so a missing build fails there; a developer without cargo gets a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.devices_e2e import check_devices_upload, check_failover, collection, work_folder

ROOT = Path(__file__).resolve().parents[2]
RUST = ROOT / "clients" / "rust"
PROGRAM = RUST / "target" / "release" / "examples" / "e2e_devices"
APP = "native"
SEED = "727573742d6532652d31"  # "rust-e2e-1": an arbitrary fixed seed (see the module docstring)
SPEC = collection("rust_e2e", "The native client end to end.", theme_protocol="loue")


def program() -> Path:
    """The built devices program (a release build with the uploader feature)."""
    if not PROGRAM.exists():
        reason = ("the Rust end-to-end test needs the built program: cd clients/rust && "
                  "cargo build --release --features uploader --example e2e_devices")
        if os.environ.get("LDP_REQUIRE_RUST_BUILD") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return PROGRAM


def run_devices(tmp: Path, url: str, token: str) -> dict[str, Any]:
    cmd = [str(program()), str(tmp / "spec.json"), str(tmp / "devices.json"), str(tmp / "states"), url, token, SEED]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_rust_devices_upload_and_the_python_decoder_recovers_the_truth(tmp_path: Path) -> None:
    program()
    with work_folder(tmp_path) as work:
        check_devices_upload(work, APP, SPEC, run_devices)


def test_rust_uploader_fails_over_from_a_dead_endpoint_to_the_live_collector(tmp_path: Path) -> None:
    """The endpoint list ``[a port nothing listens on, the live ingest service]``: each device's upload call starts with
    the dead port, fails over at once, and every report is acknowledged and stored once."""
    program()
    with work_folder(tmp_path) as work:
        check_failover(work, APP, SPEC, run_devices)
