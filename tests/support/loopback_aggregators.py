"""An ``ldp`` leader and helper as processes on loopback, for tests that drive them from outside: ``ldp serve --role
helper`` and ``--role leader``, each from its own config, key, token and store (as docs/two-aggregators.md §4–§6
says), holding any number of tasks of either VDAF draft; reports uploaded over HTTP; ``ldp collect`` reading a
window back. tests/aggregators/test_loopback.py runs the same deployment from a collection spec; this one takes
the tasks' Prio3 types and parameters directly (Prio3Sum included, which no spec protocol fits), for the clients of
other implementations (tests/clients/test_divviup_interop.py).

The keys are made in-process (``prio.HpkeKeypair.generate``, saved as ``ldp serve keygen`` saves them) and the task
files written by :class:`ldp.aggregators.task.Task` (as ``ldp collect task`` writes them), to keep the start short;
only the servers and the collector run as ``ldp`` commands. Without the Prio3 binding the tests skip (fail under
``LDP_REQUIRE_PRIO=1``)."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ldp.aggregators.task import Noise, Task, b64, chunk_length
from ldp.ingest.config import new_token, token_sha256

__all__ = ["OUTSIDE", "TaskSpec", "LoopbackAggregators", "free_port", "ldp_command", "prio"]

OUTSIDE = Path(__file__).resolve().parents[2].parent
"""Where the processes run: outside the source tree, so that ``python -m ldp`` imports the installed package (with
its compiled binding), not the checkout's sources."""


def prio() -> Any:
    """``ldp.prio`` with its binding (else skipped, or failed under ``LDP_REQUIRE_PRIO=1``)."""
    from ldp import prio as module

    if not module.available() or not hasattr(module, "seal_report"):
        why = "the Prio3 binding (with DAP reports) is not built"
        if os.environ.get("LDP_REQUIRE_PRIO") == "1":
            pytest.fail(f"LDP_REQUIRE_PRIO=1 but {why}", pytrace=False)
        pytest.skip(why)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ldp_command(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m ldp ARGS`` (from :data:`OUTSIDE`); an ``AssertionError`` with its stderr when it fails and
    ``check``."""
    out = subprocess.run([sys.executable, "-m", "ldp", *args], capture_output=True, text=True, timeout=timeout,
                         cwd=OUTSIDE)
    if check and out.returncode != 0:
        raise AssertionError(f"ldp {' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return out


def _secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


@dataclass(frozen=True)
class TaskSpec:
    """One task of the deployment: its Prio3 type and parameters (``chunk_length`` included for SumVec and
    Histogram, else the crate's default), its VDAF draft, window, time precision and minimum batch size; no noise
    unless said."""

    vdaf: str
    params: dict[str, int] = field(default_factory=dict)
    draft: int = 8
    window_seconds: int = 86400
    time_precision: int = 3600
    min_batch_size: int = 1
    noise: Noise = field(default_factory=Noise)


class LoopbackAggregators:
    """Two organisations' aggregators and a collector, in folders of their own under ``root``, sharing the tasks
    ``specs`` names (``self.tasks[name]``: the :class:`Task`; its file ``root/collector/NAME.task.json``, with both
    aggregators' HPKE configs for devices); with ``collection`` (a collection spec), each task is that of the
    spec's metric of its name (``ldp collect task``'s), its ``TaskSpec`` giving the draft, precision, batch and
    noise."""

    def __init__(self, root: Path, specs: dict[str, TaskSpec], *, job_size: int = 500,
                 collection: Any = None) -> None:
        p = prio()
        from ldp.aggregators.config import save_keypair

        self.root = root
        self.leader_port, self.helper_port = free_port(), free_port()
        self.leader_url = f"http://127.0.0.1:{self.leader_port}"
        self.helper_url = f"http://127.0.0.1:{self.helper_port}"
        for org in ("leader", "helper", "collector"):
            (root / org).mkdir()
        keys = {org: p.HpkeKeypair.generate(config_id) for config_id, org in enumerate(("leader", "helper",
                                                                                         "collector"), start=1)}
        for org, keypair in keys.items():
            save_keypair(root / org / "hpke.json", keypair)
        collector_config = keys["collector"].config.to_bytes()
        configs = (keys["leader"].config.to_bytes(), keys["helper"].config.to_bytes())
        self.tasks: dict[str, Task] = {}
        entries = ""
        for name, spec in specs.items():
            task = self._task(name, spec, collection, collector_config, configs)
            self.tasks[name] = task
            task.save(root / "collector" / f"{name}.task.json")
            verify = b64(secrets.token_bytes(task.prio3().verify_key_size)) + "\n"
            for org in ("leader", "helper"):
                task.save(root / org / f"{name}.task.json")
                _secret(root / org / f"{name}.verify", verify)
            entries += f'[[tasks]]\nfile = "{name}.task.json"\nverify_key_file = "{name}.verify"\n'
        leader_token, self.collector_token = new_token(), new_token()
        _secret(root / "leader" / "helper.token", leader_token)
        _secret(root / "collector" / "leader.token", self.collector_token)
        (root / "helper" / "helper.toml").write_text(
            f'role = "helper"\nstore = "store"\nhpke_key = "hpke.json"\n'
            f'[peer]\ntoken_sha256 = "{token_sha256(leader_token)}"\n' + entries)
        (root / "leader" / "leader.toml").write_text(
            f'role = "leader"\nstore = "store"\nhpke_key = "hpke.json"\njob_size = {job_size}\naggregate_every = 0\n'
            f'[peer]\nurl = "{self.helper_url}"\ntoken_file = "helper.token"\n'
            f'[collector]\ntoken_sha256 = "{token_sha256(self.collector_token)}"\n' + entries)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _task(self, name: str, spec: TaskSpec, collection: Any, collector_config: bytes,
              configs: tuple[bytes, bytes]) -> Task:
        """Task ``name``: of the metric of that name in ``collection`` (a collection spec: its Prio3 type, window,
        trust model), else of ``spec``'s Prio3 type; with both aggregators' configs, for devices."""
        if collection is not None:
            return Task.for_metric(collection, name, leader_url=self.leader_url, helper_url=self.helper_url,
                                   collector_hpke_config=collector_config, min_batch_size=spec.min_batch_size,
                                   noise=spec.noise, time_precision=spec.time_precision, vdaf_draft=spec.draft,
                                   hpke_configs=configs)
        params = dict(spec.params)
        if spec.vdaf in ("Prio3SumVec", "Prio3Histogram") and "chunk_length" not in params:
            params["chunk_length"] = chunk_length(spec.vdaf, params, spec.draft)
        return Task(task_id=secrets.token_bytes(32), app="interop", metric=name, vdaf=spec.vdaf,
                    vdaf_params=params, window_seconds=spec.window_seconds, min_batch_size=spec.min_batch_size,
                    noise=spec.noise, leader_url=self.leader_url, helper_url=self.helper_url,
                    collector_hpke_config=collector_config, time_precision=spec.time_precision,
                    vdaf_draft=spec.draft, hpke_configs=configs)

    # -- the processes ----------------------------------------------------------------------------------------
    def start(self, role: str) -> None:
        """``ldp serve --role ROLE``, waited for until its ``/healthz`` answers (its stderr in ``root/ROLE.log``)."""
        port = self.leader_port if role == "leader" else self.helper_port
        cmd = [sys.executable, "-m", "ldp", "serve", "--role", role, "--config",
               str(self.root / role / f"{role}.toml"), "--port", str(port)]
        log = self.root / f"{role}.log"
        with open(log, "ab") as err:
            self.procs[role] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=self.root)
        url = self.leader_url if role == "leader" else self.helper_url
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                if self.procs[role].poll() is not None:
                    raise AssertionError(f"the {role} exited: {log.read_text()}") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def start_both(self) -> None:
        self.start("helper")
        self.start("leader")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def log(self, role: str) -> str:
        path = self.root / f"{role}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- devices ----------------------------------------------------------------------------------------------
    def hpke_configs(self, name: str) -> tuple[Any, Any]:
        """The leader's and the helper's HPKE configs, as a device fetches them (``GET /hpke_config?task_id=``)."""
        p = prio()
        query = "/hpke_config?task_id=" + self.tasks[name].id_text
        leader = p.decode_hpke_config_list(urllib.request.urlopen(self.leader_url + query).read())[0]
        helper = p.decode_hpke_config_list(urllib.request.urlopen(self.helper_url + query).read())[0]
        return leader, helper

    def reports(self, name: str, measurements: list[Any], time: int) -> list[bytes]:
        """DAP-09 reports of ``measurements`` for task ``name`` made by ``ldp.prio.seal_report`` (the task's
        ``prio3()``, its draft), at ``time`` (rounded down to the task's time precision)."""
        p = prio()
        task = self.tasks[name]
        leader, helper = self.hpke_configs(name)
        vdaf = task.prio3()
        t = time - time % task.time_precision
        return [p.seal_report(vdaf, m, task_id=task.task_id, time=t, time_precision=task.time_precision,
                              leader=leader, helper=helper) for m in measurements]

    def upload(self, name: str, reports: list[bytes], threads: int = 4) -> list[int]:
        """PUT each report over keep-alive connections; the statuses."""
        path = f"/tasks/{self.tasks[name].id_text}/reports"

        def send(part: list[bytes]) -> list[int]:
            conn = http.client.HTTPConnection("127.0.0.1", self.leader_port, timeout=60)
            out = []
            for body in part:
                conn.request("PUT", path, body=body, headers={"Content-Type": "application/dap-report"})
                resp = conn.getresponse()
                resp.read()
                out.append(resp.status)
            conn.close()
            return out

        parts = [reports[i::threads] for i in range(threads)]
        with ThreadPoolExecutor(threads) as pool:
            return [s for part in pool.map(send, parts) for s in part]

    # -- the collector ----------------------------------------------------------------------------------------
    def collect(self, name: str, window: int, check: bool = True) -> tuple[subprocess.CompletedProcess[str],
                                                                             dict[str, Any] | None]:
        """``ldp collect`` of task ``name``'s window starting at ``window``: the process and its ``--out`` JSON
        (``None`` when it wrote none)."""
        out = self.root / "collector" / f"{name}-{window}.json"
        if out.exists():
            out.unlink()
        proc = ldp_command("collect", "--task", str(self.root / "collector" / f"{name}.task.json"),
                           "--key", str(self.root / "collector" / "hpke.json"),
                           "--token-file", str(self.root / "collector" / "leader.token"), "--window", str(window),
                           "--out", str(out), check=check)
        return proc, (json.loads(out.read_text()) if out.exists() else None)

    def status(self, role: str) -> dict[str, Any]:
        """The aggregator's ``/status`` (the collector's token at the leader, the leader's at the helper)."""
        token = self.collector_token
        url = self.leader_url
        if role == "helper":
            token, url = (self.root / "leader" / "helper.token").read_text(), self.helper_url
        req = urllib.request.Request(url + "/status", headers={"Authorization": f"Bearer {token}"})
        return dict(json.loads(urllib.request.urlopen(req).read()))
