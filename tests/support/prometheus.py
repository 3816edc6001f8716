"""A real Prometheus for the tests of the exported estimates (Debian's ``prometheus`` package, /usr/bin/prometheus):
started on a free loopback port with a scrape job of its own, its data in the test's folder, and queried with PromQL
over its HTTP API. ``LDP_REQUIRE_PROMETHEUS=1`` (CI, which installs the package) makes a missing one fail the test
rather than skip it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.e2e import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
REQUIRE = "LDP_REQUIRE_PROMETHEUS"


def need_prometheus() -> str:
    """The binary; skip (or fail, with ``LDP_REQUIRE_PROMETHEUS=1``) when it is missing."""
    if not os.access(PROMETHEUS, os.X_OK):
        message = "Prometheus is not installed (apt-get install prometheus)"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return PROMETHEUS


@contextmanager
def prometheus(folder: Path, target_port: int, token: str, *, path: str = "/metrics/estimates",
               interval: str = "1s", timeout: float = 60.0) -> Iterator[str]:
    """Run Prometheus scraping ``http://127.0.0.1:<target_port><path>`` every ``interval`` with the bearer
    ``token`` (written to a file, as a scrape config keeps credentials); yield its base URL, stop it on leaving."""
    binary = need_prometheus()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token)
    config = folder / "prometheus.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "scrape_configs": [{"job_name": "ldp-estimates", "metrics_path": path,
                            "authorization": {"type": "Bearer", "credentials_file": str(folder / "token")},
                            "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}]}))
    port = free_port()
    log = open(folder / "prometheus.log", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {proc.returncode}: {_tail(folder)}")
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus was not ready within {timeout} s: {_tail(folder)}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _tail(folder: Path) -> str:
    try:
        return (folder / "prometheus.log").read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"


def query(url: str, promql: str) -> list[dict[str, Any]]:
    """The instant vector ``promql`` evaluates to now: ``[{"metric": labels, "value": float}, ...]``."""
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}",
                                timeout=10) as answer:
        doc = json.load(answer)
    assert doc["status"] == "success", doc
    return [{"metric": r["metric"], "value": float(r["value"][1])} for r in doc["data"]["result"]]


def wait_for_series(url: str, promql: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """:func:`query` once it returns at least ``count`` series; ``AssertionError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    got: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        got = query(url, promql)
        if len(got) >= count:
            return got
        time.sleep(0.5)
    with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=10) as answer:
        targets = answer.read().decode()[:2000]
    raise AssertionError(f"{promql}: {len(got)} series after {timeout} s (targets: {targets})")
