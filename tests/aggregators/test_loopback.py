"""The two aggregators as processes on loopback (issue 71, item 6): ``ldp serve --role helper`` and ``--role leader``
from their own configs and stores, 10⁴ simulated devices uploading DAP-09 reports over HTTP, ``ldp collect``
reading the exact truth back; replays and invalid measurements refused and counted on both sides; the helper killed
after it recorded a job and before it answered, restarted, and nothing lost or counted twice; and each aggregator's
store holding nothing of the other's."""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from two_aggregators import prio

from ldp.ingest.config import new_token, token_sha256

WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW  # yesterday's window: ended, so it can be collected

CRASHING = """
import os, sys
import ldp.aggregators.crashpoints as h
def fault(point):
    if point == os.environ["LDP_TEST_CRASH_AT"]:
        os._exit(137)
h._fault = fault
from ldp.cli.command import main
sys.exit(main(sys.argv[1:]))
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


OUTSIDE = Path(__file__).resolve().parents[2].parent
"""Where the processes run: outside the source tree, so that ``python -m ldp`` imports the installed package (with
its compiled binding), not the checkout's sources."""


def _ldp(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "ldp", *args], capture_output=True, text=True, timeout=300,
                         cwd=OUTSIDE)
    if check and out.returncode != 0:
        raise AssertionError(f"ldp {' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return out


def _secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


class Deployment:
    """Two organisations' aggregators and a collector, in folders of their own under ``root``."""

    def __init__(self, root: Path, domain: int = 16, min_batch: int = 100) -> None:
        self.root = root
        self.leader_port, self.helper_port = _port(), _port()
        self.leader_url = f"http://127.0.0.1:{self.leader_port}"
        self.helper_url = f"http://127.0.0.1:{self.helper_port}"
        for org in ("leader", "helper", "collector"):
            (root / org).mkdir()
        spec = {"spec_version": 1, "name": "app", "window_seconds": WINDOW,
                "budget": {"per_window": 4, "lifetime": 100},
                "metrics": {"browser": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": domain},
                                        "budget": {"per_report": 1.0}, "trust": "two-aggregator"}}}
        (root / "collector" / "spec.json").write_text(json.dumps(spec))
        for org in ("leader", "helper", "collector"):
            _ldp("serve", "keygen", "--out", str(root / org / "hpke.json"))
        self.task_file = root / "collector" / "browser.task.json"
        _ldp("collect", "task", "--spec", str(root / "collector" / "spec.json"), "--metric", "browser",
             "--leader", self.leader_url, "--helper", self.helper_url,
             "--collector-key", str(root / "collector" / "hpke.json"), "--min-batch-size", str(min_batch),
             "--noise", "none", "--out", str(self.task_file), "--verify-key", str(root / "verify.key"))
        verify = (root / "verify.key").read_text()
        for org in ("leader", "helper"):
            (root / org / "browser.task.json").write_text(self.task_file.read_text())
            _secret(root / org / "browser.verify", verify)
        leader_token, self.collector_token = new_token(), new_token()
        _secret(root / "leader" / "helper.token", leader_token)
        _secret(root / "collector" / "leader.token", self.collector_token)
        task = '[[tasks]]\nfile = "browser.task.json"\nverify_key_file = "browser.verify"\n'
        (root / "helper" / "helper.toml").write_text(
            f'role = "helper"\nstore = "store"\nhpke_key = "hpke.json"\njob_retention = 86400\n'
            f'[peer]\ntoken_sha256 = "{token_sha256(leader_token)}"\n' + task)
        (root / "leader" / "leader.toml").write_text(
            f'role = "leader"\nstore = "store"\nhpke_key = "hpke.json"\njob_size = 500\naggregate_every = 0\n'
            f'[peer]\nurl = "{self.helper_url}"\ntoken_file = "helper.token"\n'
            f'[collector]\ntoken_sha256 = "{token_sha256(self.collector_token)}"\n' + task)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, role: str, crash_at: str | None = None, http: str = "native") -> None:
        """``ldp serve --role ROLE --http HTTP`` (the binding's front or uvicorn: each test runs both)."""
        port = self.leader_port if role == "leader" else self.helper_port
        args = ["serve", "--role", role, "--config", str(self.root / role / f"{role}.toml"), "--port", str(port),
                "--http", http]
        env = dict(os.environ)
        if crash_at:
            env["LDP_TEST_CRASH_AT"] = crash_at
            cmd = [sys.executable, "-c", CRASHING, *args]
        else:
            cmd = [sys.executable, "-m", "ldp", *args]
        log = self.root / f"{role}.log"
        with open(log, "ab") as err:
            self.procs[role] = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=self.root)
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

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def configs(self) -> tuple[Any, Any, Any]:
        p = prio()
        from ldp.aggregators.task import Task

        task = Task.load(self.task_file)
        leader = p.decode_hpke_config_list(urllib.request.urlopen(self.leader_url + "/hpke_config").read())[0]
        helper = p.decode_hpke_config_list(urllib.request.urlopen(self.helper_url + "/hpke_config").read())[0]
        return task, leader, helper

    def upload(self, reports: list[bytes], threads: int = 16) -> list[int]:
        """PUT each report over keep-alive connections; the statuses."""
        task, _, _ = self.configs()
        path = f"/tasks/{task.id_text}/reports"

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

    def collect(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = self.root / "collector" / "result.json"
        if out.exists():
            out.unlink()
        return _ldp("collect", "--task", str(self.task_file), "--key", str(self.root / "collector" / "hpke.json"),
                    "--token-file", str(self.root / "collector" / "leader.token"), "--window", str(T0),
                    "--out", str(out), check=check)

    def status(self, role: str) -> dict[str, Any]:
        token = self.collector_token
        url = self.leader_url if role == "leader" else self.helper_url
        if role == "helper":
            token = (self.root / "leader" / "helper.token").read_text()
        req = urllib.request.Request(url + "/status", headers={"Authorization": f"Bearer {token}"})
        return dict(json.loads(urllib.request.urlopen(req).read()))


@pytest.fixture
def deployment(tmp_path: Path) -> Any:
    prio()
    d = Deployment(tmp_path)
    yield d
    d.stop()


def _reports(d: Deployment, measurements: list[int]) -> list[bytes]:
    p = prio()
    task, leader, helper = d.configs()
    vdaf = task.prio3()
    return [p.seal_report(vdaf, m, task_id=task.task_id, time=T0 + 60, time_precision=task.time_precision,
                          leader=leader, helper=helper) for m in measurements]


def test_ten_thousand_devices_on_loopback(deployment: Deployment) -> None:
    d = deployment
    d.start("helper", http="uvicorn")
    d.start("leader")  # the binding's front: its uploads in batches
    rng = random.Random(4)
    measurements = [min(15, int(rng.expovariate(0.25))) for _ in range(10_000)]
    reports = _reports(d, measurements)
    assert set(d.upload(reports)) == {201}
    # a replay, and a two-hot measurement (another VDAF's shares, sealed as DAP-09 says)
    assert d.upload(reports[:1]) == [409]
    from two_aggregators import forged

    task, leader, helper = d.configs()

    class _W:  # what forged() needs of a world
        pass

    w: Any = _W()
    w.task = task
    w.leader_key = type("K", (), {"config": leader})()
    w.helper_key = type("K", (), {"config": helper})()
    two_hot = forged(w, prio().Prio3SumVec(length=16, max_measurement=1, ctx=task.task_id), [1, 1] + [0] * 14,
                     time=T0)
    assert d.upload([two_hot]) == [201]  # the door cannot tell; the two aggregators together can
    d.collect()
    result = json.loads((d.root / "collector" / "result.json").read_text())
    assert result["sums"] == [measurements.count(v) for v in range(16)]
    assert result["n"] == 10_000 and result["refused"] == {"vdaf_invalid": 1}
    assert result["central"]["release"] is None and result["local"] is None
    leader_status, helper_status = d.status("leader"), d.status("helper")
    assert leader_status["tasks"][0]["refused"] == helper_status["tasks"][0]["refused"] == {"vdaf_invalid": 1}
    assert leader_status["tasks"][0]["refused_at_upload"] == {"report_replayed": 1}
    # each aggregator's store is its own: nothing of the other's role in it
    assert not any("helper" in str(p) for p in (d.root / "leader" / "store").rglob("*"))
    assert not any("leader" in str(p) for p in (d.root / "helper" / "store").rglob("*"))
    # a second collection of the window gives the same release
    first = result
    d.collect()
    assert json.loads((d.root / "collector" / "result.json").read_text())["sums"] == first["sums"]


def test_a_helper_killed_mid_job_and_restarted_loses_and_double_counts_nothing(deployment: Deployment) -> None:
    d = deployment
    d.start("helper", crash_at="helper_job_recorded")
    d.start("leader", http="uvicorn")
    # one helper per store: a second one is refused while the first runs (the role's lease)
    second = subprocess.run([sys.executable, "-m", "ldp", "serve", "--role", "helper", "--config",
                             str(d.root / "helper" / "helper.toml"), "--port", str(_port())],
                            capture_output=True, text=True, timeout=120, cwd=d.root)
    assert second.returncode == 3 and "lease" in second.stderr, second.stderr
    rng = random.Random(5)
    measurements = [rng.randrange(16) for _ in range(1200)]
    assert set(d.upload(_reports(d, measurements))) == {201}
    failed = d.collect(check=False)  # the helper dies after recording the first job, before answering it
    assert failed.returncode != 0 and "helper" in failed.stderr
    assert d.procs["helper"].wait(timeout=60) == 137
    d.start("helper")  # restarted over the same store
    d.collect()
    result = json.loads((d.root / "collector" / "result.json").read_text())
    assert result["sums"] == [measurements.count(v) for v in range(16)] and result["n"] == 1200
    jobs = [p for p in (d.root / "helper" / "store").rglob("jobs/*.json")]
    assert len(jobs) == 3  # 1200 reports in jobs of 500: the first job recorded once, answered from its record
    # kept a day at the helper (its job_retention); at the leader (retention 0) deleted once the window is released
    assert not list((d.root / "leader" / "store").rglob("jobs/*.json"))
