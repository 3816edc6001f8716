"""The end-to-end run that the JVM (Kotlin) and native (Rust) clients share: a devices program of the client's own
records five metrics on simulated devices and uploads them to a real ``python -m ldp serve`` on loopback.

This module holds what the two tests have in common: the collection (GRR with labels, binary RR, OLH, Duchi and one
memoized longitudinal protocol, named by the caller), the devices' values and their truth, and the two runs —
:func:`check_devices_upload` (every report accepted and acknowledged once, a second run sends nothing, every
estimate of the Python decoder within its 99 % interval of the truth) and :func:`check_failover` (the endpoint list
``[a port nothing listens on, the live ingest service]``: every report delivered and stored once). A test passes its
``run_devices(tmp, endpoints, token)``: the program run on ``tmp/spec.json``, ``tmp/devices.json`` and
``tmp/states`` with the endpoints joined by commas, giving the program's summary line as a dict.
:func:`work_folder` gives the clients' tests a folder in memory for their files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.e2e import free_port, serve, wait_for_fold, write_ingest_config

SHM = Path("/dev/shm")
SHM_FREE = 256 * 2**20
"""The room :func:`work_folder` wants free in ``SHM`` (a container's may be 64 MiB): else it uses the disk."""


@contextmanager
def work_folder(tmp_path: Path) -> Iterator[Path]:
    """A fresh folder for a test's files (the devices' states, the ingest service's config and data, a web site): in
    memory, under ``/dev/shm`` (a tmpfs), when the machine has one with room, else ``tmp_path`` itself. The
    clients' stores and the ingest service fsync each commit, as they must: on this machine's disk that was ~7 ms each,
    and it was most of these tests' time (the Rust program's 100 devices: 16 s of 17 s, at 0.9 s of CPU), where a
    tmpfs makes it free. The same production path runs (every fsync is still called): only where the files live
    changes. If the body raises, the folder is copied to ``tmp_path / "work"`` (kept for a look, as ``tmp_path``
    is); then it is removed."""
    if not (SHM.is_dir() and os.access(SHM, os.W_OK | os.X_OK) and shutil.disk_usage(SHM).free >= SHM_FREE):
        yield tmp_path
        return
    work = Path(tempfile.mkdtemp(prefix="ldp-e2e-", dir=SHM))
    try:
        yield work
    except BaseException:
        shutil.copytree(work, tmp_path / "work", symlinks=True, dirs_exist_ok=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


RunDevices = Callable[[Path, str, str], dict[str, Any]]
"""``run_devices(tmp, endpoints, token)``: run the client's devices program; its summary line."""

DEVICES = 100
FAILOVER_DEVICES = 20  # the failover run: fewer devices, to stay quick
Z99 = 2.5758293035489004  # the two-sided 99 % normal quantile
LABELS = ["games", "social", "news", "other"]
SHARES = [0.4, 0.3, 0.2, 0.1]
PAGES = [f"/p{i}" for i in range(8)]
THEMES = ["light", "dark", "auto"]
FOLD_TIMEOUT = 60.0


def app_metrics() -> dict[str, dict[str, Any]]:
    """The four metrics every client's end-to-end test records (the web client's too): GRR with labels, binary RR,
    OLH and Duchi."""
    return {
        "app_category": {"protocol": "grr", "params": {"epsilon": 2.0, "domain_size": 4, "labels": LABELS},
                         "budget": {"per_report": 2.0}},
        "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
        "page": {"protocol": "olh", "params": {"epsilon": 2.0, "domain_size": 8, "labels": PAGES},
                 "budget": {"per_report": 2.0}},
        "load_time": {"protocol": "duchi", "params": {"epsilon": 1.0, "low": 0.0, "high": 1000.0},
                      "budget": {"per_report": 1.0}},
    }


def collection(name: str, description: str, theme_protocol: str) -> dict[str, Any]:
    """The collection spec: :func:`app_metrics` and ``theme`` by the memoized protocol ``theme_protocol``."""
    metrics = app_metrics()
    metrics["theme"] = {"protocol": theme_protocol, "budget": {"per_report": 4.0},
                        "params": {"epsilon_perm": 4.0, "epsilon": 1.0, "domain_size": 3, "labels": THEMES}}
    return {"spec_version": 1, "name": name, "description": description,
            "budget": {"per_window": 20.0, "lifetime": 100.0}, "upload": {"min_interval_seconds": 0, "max_batch": 64},
            "metrics": metrics}


def devices() -> list[list[list[Any]]]:
    """Each device's ``[metric, value]`` pairs."""
    cats = [label for label, s in zip(LABELS, SHARES, strict=True) for _ in range(round(s * DEVICES))]
    return [[["app_category", cats[d]], ["dark_mode", d % 3 == 0], ["page", PAGES[(d * 7) % 8]],
             ["load_time", float((d * 37) % 1000)], ["theme", THEMES[d % 5 % 3]]] for d in range(DEVICES)]


def truth() -> dict[str, dict[str, float]]:
    """Per metric, each item's true count (``load_time``: the sum of the values)."""
    out: dict[str, dict[str, float]] = {}
    for values in devices():
        for metric, value in values:
            counts = out.setdefault(metric, {})
            if metric == "load_time":
                counts["sum"] = counts.get("sum", 0.0) + value
            else:
                key = ("yes" if value else "no") if metric == "dark_mode" else value
                counts[key] = counts.get(key, 0) + 1
    return out


def _runs(tmp: Path, app: str, spec: dict[str, Any], run_devices: RunDevices, n: int,
          endpoints: Callable[[Any], str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Upload ``n`` devices twice through ``endpoints(served)``, check both runs, fold: (first run, folded)."""
    from ldp.ingest.config import new_token

    token = new_token()
    config = write_ingest_config(tmp, app, token, spec)
    (tmp / "devices.json").write_text(json.dumps(devices()[:n]))
    reports = n * len(spec["metrics"])
    with serve(config, tmp / "server.log") as served:
        first = run_devices(tmp, endpoints(served), token)
        again = run_devices(tmp, endpoints(served), token)  # resumes the same states: nothing left
    assert first["recorded"] == first["acknowledged"] == first["accepted"] == reports, first
    assert first["rejected"] == {} and first["duplicates"] == 0 and first["pending"] == 0, first
    assert again["acknowledged"] == again["accepted"] == 0 and again["pending"] == 0, again
    with serve(config, tmp / "server.log") as served:  # the stop closed the segment: fold it
        folded = wait_for_fold(served, app, reports, n, FOLD_TIMEOUT)
    assert folded["accepted"] == reports, folded  # stored once: no report counted twice
    assert all(m["n"] == n for m in folded["metrics"]), folded
    return first, folded


def check_devices_upload(tmp: Path, app: str, spec: dict[str, Any], run_devices: RunDevices) -> None:
    """Every device's reports accepted and acknowledged once, nothing sent again, every estimate within its 99 %
    interval of the truth."""
    first, folded = _runs(tmp, app, spec, run_devices, DEVICES, lambda served: f"{served.url}/v1/reports")
    assert {s["fingerprint"] for s in folded["specs"]} == {first["spec"]}
    true = truth()
    for m in folded["metrics"]:
        name, rows = m["metric"], {r["item"]: r for r in m["rows"]}
        assert m["error"] is None, m
        if m["kind"] == "mean":
            (row,) = rows.values()
            mean = true[name]["sum"] / DEVICES
            assert abs(row["estimate"] - mean) <= Z99 * row["std_error"], (name, row, mean)
            continue
        for item, count in true[name].items():
            r = rows[item]
            assert abs(r["estimate"] - count) <= Z99 * r["std_error"], (name, item, r, count)


def check_failover(tmp: Path, app: str, spec: dict[str, Any], run_devices: RunDevices) -> tuple[str, str]:
    """The endpoint list ``[a port nothing listens on, the live ingest service]`` for :data:`FAILOVER_DEVICES` devices:
    every report delivered through the live ingest service and stored once. The two endpoints' ``host:port``."""
    hosts: list[str] = []

    def endpoints(served: Any) -> str:
        if not hosts:  # a port bound then closed: connections are refused
            dead = next(p for p in iter(free_port, None) if p != served.port)
            hosts.extend([f"127.0.0.1:{dead}", served.url.split("/")[2]])
        return f"http://{hosts[0]}/v1/reports,{served.url}/v1/reports"

    _runs(tmp, app, spec, run_devices, FAILOVER_DEVICES, endpoints)
    return hosts[0], hosts[1]
