"""An ``ldp`` aggregator paired with another implementation's, each exact on the same reports (issue 85, item 4).

The other aggregator (the *peer*) is named by ``LDP_PEER_AGGREGATOR``: the base URL of its interop test API
(draft-dcook-ppm-dap-interop-test-design §4, which Janus's ``janus_interop_aggregator``, Divvi Up's and
Cloudflare's Daphne serve): ``POST /internal/test/ready``, ``/internal/test/endpoint_for_task`` (its DAP endpoint
for a task, relative to that base or absolute) and ``/internal/test/add_task`` (the task's ID, VDAF and parameters,
verify key, tokens, collector HPKE config, role). For each pairing asked for (``--peer-role helper``: the peer is
the helper and an ``ldp`` leader drives it; ``--peer-role leader``: the peer leads an ``ldp`` helper) and each
Prio3 type, this harness

1. makes a VDAF-08 task (time-interval batches of one ``--precision``, the collector's HPKE key pair, a verify
   key, the leader's and the collector's tokens, sent as DAP-Auth-Token), gives it to the peer through
   ``add_task`` and to ``ldp serve --role leader|helper`` as its task file and config;
2. seals ``--reports`` measurements as DAP-09 reports with ``ldp.prio.seal_report`` (the binding over the ``prio``
   crate 0.16.8), each to both aggregators' HPKE configs as a device fetches them, into the previous time
   interval, and uploads them to the leader (``PUT /tasks/{id}/reports``);
3. collects the interval with ``ldp collect`` (DAP-09's collection flow, polling the leader's collection job) and
   compares the collected aggregate with the truth: noise is off, so it must be equal, every report counted.

Without ``LDP_PEER_AGGREGATOR`` the peer is another ``ldp`` behind the same interop test API
(simulations/ldp_interop_api.py), which is how CI runs this harness (tests/aggregators/test_peer_harness.py).
With Janus (simulations/janus_stack.py starts one built from its repository)::

    LDP_PEER_AGGREGATOR=http://127.0.0.1:9080 python simulations/peer_aggregator.py --reports 10000

It prints one JSON line per run and a summary; the exit status is 1 when any run was not exact.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ldp_interop_api import LdpAggregator, free_port

from ldp.aggregators.task import Noise, Task, b64, chunk_length

HERE = Path(__file__).resolve().parent
DRAFT = 8
PRIO3 = {  # kind: (ldp's Prio3 type and parameters, the interop API's VDAF object)
    "count": ("Prio3Count", {}, {"type": "Prio3Count"}),
    "sum": ("Prio3Sum", {"max_measurement": 255}, {"type": "Prio3Sum", "bits": "8"}),
    "sumvec": ("Prio3SumVec", {"length": 5, "max_measurement": 7}, {"type": "Prio3SumVec", "bits": "3",
                                                                    "length": "5"}),
    "histogram": ("Prio3Histogram", {"length": 16}, {"type": "Prio3Histogram", "length": "16"}),
}


def measurements(kind: str, rng: random.Random, n: int) -> list[Any]:
    """``n`` measurements of ``kind``'s type (within its bounds), drawn from ``rng``."""
    if kind == "count":
        return [int(rng.random() < 0.3) for _ in range(n)]
    if kind == "sum":
        return [rng.randrange(256) for _ in range(n)]
    if kind == "sumvec":
        return [[rng.randrange(8) for _ in range(5)] for _ in range(n)]
    return [min(15, int(rng.expovariate(0.25))) for _ in range(n)]


def truth(kind: str, values: list[Any]) -> list[int]:
    """The exact aggregate, as ``ldp collect`` states it (one count per item)."""
    if kind in ("count", "sum"):
        return [sum(values)]
    if kind == "sumvec":
        return [sum(v[i] for v in values) for i in range(5)]
    return [values.count(b) for b in range(16)]


def _post_json(url: str, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (the operator's peer)
        text = resp.read()
    return dict(json.loads(text)) if text.strip() else {}


class Peer:
    """The other implementation's aggregator, through its interop test API at ``base``."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/") + "/"

    def ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                _post_json(self.base + "internal/test/ready", {})
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def endpoint(self, task_id: bytes, role: str) -> str:
        """Its DAP endpoint for the task, absolute, with the trailing slash DAP's routes are joined to."""
        out = _post_json(self.base + "internal/test/endpoint_for_task",
                         {"task_id": b64(task_id), "role": role, "hostname": "127.0.0.1"})
        if out.get("status") != "success":
            raise RuntimeError(f"the peer refused endpoint_for_task: {out}")
        return urllib.parse.urljoin(self.base, str(out["endpoint"])).rstrip("/") + "/"

    def add_task(self, request: dict[str, Any]) -> None:
        out = _post_json(self.base + "internal/test/add_task", request)
        if out.get("status") != "success":
            raise RuntimeError(f"the peer refused add_task: {out.get('error', out)}")


def add_task_request(task: Task, kind: str, role: str, verify_key: bytes, leader_token: str,
                     collector_token: str) -> dict[str, Any]:
    """The interop API's ``add_task`` body for ``task`` in ``role`` (draft-dcook-ppm-dap-interop-test-design
    §4.2.3: numbers inside the VDAF object as strings; query type 1, time-interval)."""
    vdaf = dict(PRIO3[kind][2])
    if "chunk_length" in task.vdaf_params:
        vdaf["chunk_length"] = str(task.vdaf_params["chunk_length"])
    body: dict[str, Any] = {
        "task_id": task.id_text, "leader": task.leader_url, "helper": task.helper_url, "vdaf": vdaf,
        "leader_authentication_token": leader_token, "role": role, "vdaf_verify_key": b64(verify_key),
        "max_batch_query_count": 1, "query_type": 1, "min_batch_size": task.min_batch_size,
        "time_precision": task.time_precision, "collector_hpke_config": b64(task.collector_hpke_config),
        "task_expiration": int(time.time()) + 7 * 86400}
    if role == "leader":
        body["collector_authentication_token"] = collector_token
    return body


def upload(leader_url: str, task: Task, reports: list[bytes], threads: int) -> dict[int, int]:
    """Each report ``PUT`` to the leader over ``threads`` keep-alive connections; the count of each status."""
    parsed = urllib.parse.urlsplit(leader_url)
    path = parsed.path.rstrip("/") + f"/tasks/{task.id_text}/reports"

    def send(part: list[bytes]) -> list[int]:
        conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port or 80, timeout=120)
        out = []
        for body in part:
            conn.request("PUT", path, body=body, headers={"Content-Type": "application/dap-report"})
            resp = conn.getresponse()
            resp.read()
            out.append(resp.status)
        conn.close()
        return out

    statuses: dict[int, int] = {}
    with ThreadPoolExecutor(threads) as pool:
        for part in pool.map(send, [reports[i::threads] for i in range(threads)]):
            for status in part:
                statuses[status] = statuses.get(status, 0) + 1
    return statuses


def pairing(peer: Peer, peer_role: str, kinds: list[str], args: argparse.Namespace, work: Path
            ) -> list[dict[str, Any]]:
    """Every ``kind`` with the peer in ``peer_role`` and ``ldp`` in the other: one result per kind."""
    from ldp import prio
    from ldp.ingest.config import new_token

    our_role = "leader" if peer_role == "helper" else "helper"
    ours = LdpAggregator(work / f"ldp-{our_role}", our_role, free_port())
    collector = prio.HpkeKeypair.generate(7)
    from ldp.aggregators.config import save_keypair

    save_keypair(work / f"collector-{peer_role}.json", collector)
    leader_token, collector_token = new_token(), new_token()  # one leader and one collector: a token each
    now = int(time.time())
    interval = now - now % args.precision - args.precision
    tasks: dict[str, tuple[Task, str]] = {}
    for kind in kinds:
        task_id = secrets.token_bytes(32)
        peer_url = peer.endpoint(task_id, peer_role)
        vdaf, params = PRIO3[kind][0], dict(PRIO3[kind][1])
        if vdaf in ("Prio3SumVec", "Prio3Histogram"):
            params["chunk_length"] = chunk_length(vdaf, params, DRAFT)
        leader_url, helper_url = (peer_url, ours.url) if peer_role == "leader" else (ours.url, peer_url)
        task = Task(task_id=task_id, app="peer", metric=kind, vdaf=vdaf, vdaf_params=params,
                    window_seconds=args.precision, time_precision=args.precision, min_batch_size=args.min_batch_size,
                    noise=Noise(),
                    leader_url=leader_url, helper_url=helper_url,
                    collector_hpke_config=collector.config.to_bytes(), vdaf_draft=DRAFT)
        verify_key = secrets.token_bytes(task.prio3().verify_key_size)
        peer_key = secrets.token_bytes(len(verify_key)) if args.fault == "verify-key" else verify_key
        peer.add_task(add_task_request(task, kind, peer_role, peer_key, leader_token, collector_token))
        ours.add(kind, task, verify_key, leader_token, collector_token)
        task.save(work / f"{kind}-{peer_role}.task.json")
        (work / f"{kind}-{peer_role}.token").write_text(collector_token)
        os.chmod(work / f"{kind}-{peer_role}.token", 0o600)
        tasks[kind] = (task, leader_url)
    ours.restart()
    try:
        return [one_run(kind, *tasks[kind], peer_role, interval, args, work) for kind in kinds]
    finally:
        ours.stop()


def one_run(kind: str, task: Task, leader_url: str, peer_role: str, interval: int, args: argparse.Namespace,
            work: Path) -> dict[str, Any]:
    """Seal, upload, collect and compare one task's reports."""
    from ldp import prio

    values = measurements(kind, random.Random(f"{kind}-{args.seed}"), args.reports)
    configs = {}
    for role, url in (("leader", task.leader_url), ("helper", task.helper_url)):
        with urllib.request.urlopen(f"{url}hpke_config?task_id={task.id_text}", timeout=30) as resp:  # noqa: S310
            configs[role] = prio.decode_hpke_config_list(resp.read())[0]
    started = time.monotonic()
    reports = [prio.seal_report(task.prio3(), v, task_id=task.task_id, time=interval,
                                time_precision=task.time_precision, leader=configs["leader"],
                                helper=configs["helper"]) for v in values]
    sealed = time.monotonic()
    statuses = upload(leader_url, task, reports, args.threads)
    uploaded = time.monotonic()
    out = work / f"{kind}-{peer_role}.result.json"
    cmd = [sys.executable, "-m", "ldp", "collect", "--task", str(work / f"{kind}-{peer_role}.task.json"),
           "--key", str(work / f"collector-{peer_role}.json"), "--token-file", str(work / f"{kind}-{peer_role}.token"),
           "--token-header", "dap-auth-token", "--wait", str(args.wait), "--window", str(interval), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.wait + 300, cwd=work)
    collected = time.monotonic()
    got = json.loads(out.read_text()) if done.returncode == 0 and out.exists() else None
    counts = [round(c) for c in got["count"]] if got else None
    expected = truth(kind, values)
    return {"peer_role": peer_role, "vdaf": task.vdaf, "params": task.vdaf_params, "reports": len(values),
            "statuses": statuses, "collected_n": got["n"] if got else None, "collected": counts, "truth": expected,
            "exact": counts == expected and got is not None and got["n"] == len(values),
            "seconds": {"seal": round(sealed - started, 2), "upload": round(uploaded - sealed, 2),
                        "collect": round(collected - uploaded, 2)},
            **({} if got else {"collect_error": (done.stderr or done.stdout)[-2000:]})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=10_000, help="reports per run (default 10,000)")
    parser.add_argument("--vdaf", default=",".join(PRIO3),
                        help=f"the Prio3 types, comma-separated ({', '.join(PRIO3)})")
    parser.add_argument("--peer-role", default="helper,leader", help="the peer's roles: helper, leader or both")
    parser.add_argument("--precision", type=int, default=3600, help="the task's time precision (the batch interval)")
    parser.add_argument("--min-batch-size", type=int, default=100)
    parser.add_argument("--threads", type=int, default=32, help="upload connections")
    parser.add_argument("--wait", type=float, default=600, help="seconds the collector polls a collection job")
    parser.add_argument("--seed", default="peer")
    parser.add_argument("--fault", choices=("verify-key",), help="break the pairing on purpose (a test of this "
                        "harness): verify-key gives the peer another verify key, so no report may be counted")
    parser.add_argument("--dir", type=Path, help="a folder for the runs' files (default: a temporary one)")
    args = parser.parse_args(argv)
    kinds = [k for k in args.vdaf.split(",") if k]
    roles = [r for r in args.peer_role.split(",") if r]
    if unknown := [k for k in kinds if k not in PRIO3] + [r for r in roles if r not in ("helper", "leader")]:
        parser.error(f"unknown: {', '.join(unknown)}")
    work = args.dir or Path(tempfile.mkdtemp(prefix="ldp-peer-"))
    work.mkdir(parents=True, exist_ok=True)
    shim = None
    base = os.environ.get("LDP_PEER_AGGREGATOR")
    if not base:  # another ldp behind the interop test API
        port = free_port()
        shim = subprocess.Popen([sys.executable, str(HERE / "ldp_interop_api.py"), "--dir", str(work / "peer"),
                                 "--port", str(port)], stdout=subprocess.DEVNULL,
                                stderr=open(work / "peer.log", "ab"))  # noqa: SIM115
        base = f"http://127.0.0.1:{port}"
    peer = Peer(base)
    results = []
    try:
        peer.ready()
        for role in roles:
            for result in pairing(peer, role, kinds, args, work / role):
                print(json.dumps(result), flush=True)
                results.append(result)
    finally:
        if shim:
            shim.terminate()
            shim.wait(timeout=60)
    exact = sum(r["exact"] for r in results)
    print(f"{exact} of {len(results)} runs exact (peer {'ldp' if shim else base}; files in {work})", flush=True)
    return 0 if exact == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
