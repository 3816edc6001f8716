"""The native (Rust) client end to end (issue 46): a Rust program built from ``clients/rust``
(``examples/e2e_devices.rs``, release build with the ``uploader`` feature) makes 100 simulated devices, each with
its own crash-safe state folder (``FileStore``) and secret, records five metrics (GRR with labels, binary RR, OLH,
Duchi and the memoized longitudinal unary encoding L-OUE) and uploads them through the Rust ``Uploader`` (``ureq``)
to a real ``python -m ldp serve`` on loopback. The collector folds the reports and the Python decoder's estimates
must each lie within its 99 % interval of the truth, with every report accepted and acknowledged exactly once. A
second run over the same states sends nothing (their outboxes are empty). A second test gives the uploader an endpoint
list whose first entry is a loopback port nothing listens on: every report is delivered through the live collector
and stored once (issue 50's failover).

The devices' noise comes from a seeded stream (``KeyedRandomSource`` keyed by the seed below, one message per
device): a simulation, labelled so in the program, so that this test's outcome is fixed; every other part is the
production path. The law of every report is proven exactly by the Rust suite's audit; this test proves the path from
the device to the decoder.

CI builds the program first (.ci/run: ``cargo build --release --features uploader --example e2e_devices``) and sets
``LDP_REQUIRE_RUST_BUILD=1``, so a missing build fails there; a developer without cargo gets a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.e2e import free_port, serve, wait_for_fold, write_collector_config

ROOT = Path(__file__).resolve().parents[2]
RUST = ROOT / "clients" / "rust"
PROGRAM = RUST / "target" / "release" / "examples" / "e2e_devices"
APP = "native"
DEVICES = 100
FAILOVER_DEVICES = 20  # the failover test: fewer devices, to stay quick
SEED = "727573742d6532652d31"  # "rust-e2e-1": an arbitrary fixed seed (see the module docstring)
Z99 = 2.5758293035489004  # the two-sided 99 % normal quantile
LABELS = ["games", "social", "news", "other"]
SHARES = [0.4, 0.3, 0.2, 0.1]
PAGES = [f"/p{i}" for i in range(8)]
METRICS: dict[str, dict[str, Any]] = {
    "app_category": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 4, "labels": LABELS},
                     "budget": {"per_report": 2.0}},
    "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
    "page": {"protocol": "olh", "params": {"epsilon": 2.0, "domain_size": 8, "labels": PAGES},
             "budget": {"per_report": 2.0}},
    "load_time": {"protocol": "duchi", "params": {"epsilon": 1.0, "low": 0.0, "high": 1000.0},
                  "budget": {"per_report": 1.0}},
    "theme": {"protocol": "loue", "params": {"epsilon_perm": 4.0, "epsilon": 1.0, "domain_size": 3,
                                             "labels": ["light", "dark", "auto"]},
              "budget": {"per_report": 4.0}},
}
SPEC = {"spec_version": 1, "name": "rust_e2e", "description": "The native client end to end.",
        "budget": {"per_window": 20.0, "lifetime": 100.0}, "upload": {"min_interval_seconds": 0, "max_batch": 64},
        "metrics": METRICS}
FOLD_TIMEOUT = 60.0


def devices() -> list[list[list[Any]]]:
    """Each device's [metric, value] pairs."""
    cats = [label for label, s in zip(LABELS, SHARES, strict=True) for _ in range(round(s * DEVICES))]
    themes = ["light", "dark", "auto"]
    return [[["app_category", cats[d]], ["dark_mode", d % 3 == 0], ["page", PAGES[(d * 7) % 8]],
             ["load_time", float((d * 37) % 1000)], ["theme", themes[d % 5 % 3]]] for d in range(DEVICES)]


def truth() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    for values in devices():
        for metric, value in values:
            if metric == "load_time":
                out[metric]["sum"] = out[metric].get("sum", 0.0) + value
            else:
                key = ("yes" if value else "no") if metric == "dark_mode" else value
                out[metric][key] = out[metric].get(key, 0) + 1
    return out


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
    from ldp.collector.config import new_token

    program()
    token = new_token()
    config = write_collector_config(tmp_path, APP, token, SPEC)
    (tmp_path / "devices.json").write_text(json.dumps(devices()))
    reports = DEVICES * len(METRICS)
    with serve(config, tmp_path / "server.log") as served:
        first = run_devices(tmp_path, f"{served.url}/v1/reports", token)
        again = run_devices(tmp_path, f"{served.url}/v1/reports", token)  # resumes the same states: nothing left
    assert first["recorded"] == first["acknowledged"] == first["accepted"] == reports, first
    assert first["rejected"] == {} and first["duplicates"] == 0, first
    assert again["acknowledged"] == again["accepted"] == 0 and again["pending"] == 0, again
    with serve(config, tmp_path / "server.log") as served:  # the stop closed the segment: fold it
        folded = wait_for_fold(served, APP, reports, DEVICES, FOLD_TIMEOUT)
    assert {s["fingerprint"] for s in folded["specs"]} == {first["spec"]}
    true = truth()
    for m in folded["metrics"]:
        name, rows = m["metric"], {r["item"]: r for r in m["rows"]}
        assert m["error"] is None and m["n"] == DEVICES, m
        if m["kind"] == "mean":
            (row,) = rows.values()
            mean = true[name]["sum"] / DEVICES
            assert abs(row["estimate"] - mean) <= Z99 * row["std_error"], (name, row, mean)
            continue
        for item, count in true[name].items():
            r = rows[item]
            assert abs(r["estimate"] - count) <= Z99 * r["std_error"], (name, item, r, count)


def test_rust_uploader_fails_over_from_a_dead_endpoint_to_the_live_collector(tmp_path: Path) -> None:
    """The endpoint list ``[a port nothing listens on, the live collector]``: each device's upload call starts with
    the dead port, fails over at once, and every report is acknowledged and stored once."""
    from ldp.collector.config import new_token

    program()
    token = new_token()
    config = write_collector_config(tmp_path, APP, token, SPEC)
    (tmp_path / "devices.json").write_text(json.dumps(devices()[:FAILOVER_DEVICES]))
    reports = FAILOVER_DEVICES * len(METRICS)
    with serve(config, tmp_path / "server.log") as served:
        dead = next(p for p in iter(free_port, None) if p != served.port)  # bound then closed: connections refused
        endpoints = f"http://127.0.0.1:{dead}/v1/reports,{served.url}/v1/reports"
        first = run_devices(tmp_path, endpoints, token)
        again = run_devices(tmp_path, endpoints, token)
    assert first["recorded"] == first["acknowledged"] == first["accepted"] == reports, first
    assert first["rejected"] == {} and first["duplicates"] == 0 and first["pending"] == 0, first
    assert again["acknowledged"] == again["accepted"] == 0 and again["pending"] == 0, again
    with serve(config, tmp_path / "server.log") as served:  # the stop closed the segment: fold it
        folded = wait_for_fold(served, APP, reports, FAILOVER_DEVICES, FOLD_TIMEOUT)
    assert folded["accepted"] == reports, folded  # stored once: no report twice
    assert all(m["n"] == FAILOVER_DEVICES for m in folded["metrics"]), folded
