"""``ldp``'s aggregators behind the DAP interop test API (draft-dcook-ppm-dap-interop-test-design §4).

The API a test runner uses to give an aggregator a task without knowing its config format: ``POST
/internal/test/ready``, ``/internal/test/endpoint_for_task`` and ``/internal/test/add_task``, as Janus's
``janus_interop_aggregator`` serves it. Here each ``add_task`` becomes a task file and verify key for an
``ldp serve --role leader|helper`` process (one per role, restarted with its tasks so far), so that
simulations/peer_aggregator.py can pair an ``ldp`` aggregator with any implementation behind this API, ``ldp``
itself included (that is how CI runs it). Tasks are VDAF-08 (the interop API's drafts: DAP-09), time-interval
batches (query type 1) of one time precision, no noise; a task's expiration is not kept (``ldp`` tasks do not
expire). :class:`LdpAggregator` is also the harness's own side.

    python simulations/ldp_interop_api.py --dir /tmp/ldp-peer --port 9180
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ldp.aggregators.task import Noise, Task, b64, unb64

__all__ = ["LdpAggregator", "free_port", "task_of"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(args: list[str], url: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """``ldp serve ARGS`` started in ``cwd`` (its stderr appended to ``log``) and waited for until ``url``'s
    ``/healthz`` answers; ``RuntimeError`` with the log's end when it exits or does not answer within 120 s."""
    with open(log, "ab") as err:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen([sys.executable, "-m", "ldp", "serve", *args], stdout=subprocess.DEVNULL,
                                stderr=err, cwd=cwd)
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=5):  # noqa: S310 (loopback)
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ldp serve {' '.join(args)} did not start: {log.read_text()[-3000:]}") from None
            time.sleep(0.1)


class LdpAggregator:
    """``ldp serve --role ROLE`` in ``root`` on ``port``, holding the tasks :meth:`add` gave it (its config written,
    and the process (re)started, by :meth:`restart`). One aggregator config holds one leader token and one
    collector token: every task must present the same."""

    def __init__(self, root: Path, role: str, port: int, *, aggregate_every: float = 1) -> None:
        from ldp import prio
        from ldp.aggregators.config import save_keypair

        self.root, self.role, self.port, self.aggregate_every = root, role, port, aggregate_every
        self.url = f"http://127.0.0.1:{port}/"
        root.mkdir(parents=True)
        save_keypair(root / "hpke.json", prio.HpkeKeypair.generate(secrets.randbelow(250) + 1))
        self.entries, self.peer_url = "", ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.leader_token: str | None = None
        self.collector_token: str | None = None

    def add(self, name: str, task: Task, verify_key: bytes, leader_token: str, collector_token: str | None) -> None:
        """A task (its file and verify key) and the tokens the leader and the collector present."""
        from ldp.web.secret_files import write_secret

        peer = task.helper_url if self.role == "leader" else task.leader_url
        for what, mine, theirs in (("leader token", self.leader_token, leader_token),
                                   ("collector token", self.collector_token, collector_token),
                                   ("peer", self.peer_url or None, peer)):
            if mine is not None and theirs is not None and mine != theirs:
                raise ValueError(f"this {self.role} holds one {what} for all its tasks; task {name} names another")
        task.save(self.root / f"{name}.task.json")
        write_secret(self.root / f"{name}.verify", b64(verify_key) + "\n")
        self.entries += f'[[tasks]]\nfile = "{name}.task.json"\nverify_key_file = "{name}.verify"\n'
        self.leader_token, self.peer_url = leader_token, peer
        self.collector_token = collector_token or self.collector_token

    def restart(self) -> None:
        """The config written with every task so far, the process (re)started and waited for."""
        from ldp.ingest.config import token_sha256
        from ldp.web.secret_files import write_secret

        self.stop()
        head = f'role = "{self.role}"\nstore = "store"\nhpke_key = "hpke.json"\n'
        if self.role == "leader":
            if not (self.root / "helper.token").exists():
                write_secret(self.root / "helper.token", str(self.leader_token))
            head += (f'job_size = 100\naggregate_every = {self.aggregate_every}\n[peer]\nurl = "{self.peer_url}"\n'
                     f'token_file = "helper.token"\ntoken_header = "dap-auth-token"\n'
                     f'[collector]\ntoken_sha256 = "{token_sha256(str(self.collector_token))}"\n')
        else:
            head += f'[peer]\ntoken_sha256 = "{token_sha256(str(self.leader_token))}"\n'
        (self.root / "config.toml").write_text(head + self.entries)
        self.proc = start_serve(["--role", self.role, "--config", str(self.root / "config.toml"), "--port",
                                 str(self.port)], self.url, self.root, self.root / "serve.log")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def task_of(request: dict[str, Any]) -> tuple[Task, bytes]:
    """The :class:`Task` and verify key an ``add_task`` request describes (§4.2.3); ``ValueError`` for what
    ``ldp`` does not run (another query type, VDAF or draft)."""
    if request.get("query_type") != 1:
        raise ValueError(f"query type {request.get('query_type')!r}: ldp runs time-interval tasks (1) only")
    vdaf = dict(request["vdaf"])
    kind = vdaf.pop("type")
    numbers = {k: int(v) for k, v in vdaf.items()}
    if kind == "Prio3Count" and not numbers:
        params: dict[str, int] = {}
    elif kind == "Prio3Sum" and set(numbers) == {"bits"}:
        params = {"max_measurement": 2 ** numbers["bits"] - 1}
    elif kind == "Prio3SumVec" and set(numbers) == {"bits", "length", "chunk_length"}:
        params = {"length": numbers["length"], "max_measurement": 2 ** numbers["bits"] - 1,
                  "chunk_length": numbers["chunk_length"]}
    elif kind == "Prio3Histogram" and set(numbers) == {"length", "chunk_length"}:
        params = numbers
    else:
        raise ValueError(f"VDAF {request['vdaf']!r}: not a Prio3 type ldp runs")
    precision = int(request["time_precision"])
    task = Task(task_id=unb64(request["task_id"], 32, "task_id"), app="interop", metric=kind, vdaf=kind,
                vdaf_params=params, window_seconds=precision, time_precision=precision,
                min_batch_size=int(request["min_batch_size"]), noise=Noise(), leader_url=request["leader"],
                helper_url=request["helper"], collector_hpke_config=unb64(request["collector_hpke_config"]),
                vdaf_draft=8)
    return task, unb64(request["vdaf_verify_key"], task.prio3().verify_key_size, "vdaf_verify_key")


class InteropApi:
    """The three routes, over one :class:`LdpAggregator` per role under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root, self.lock = root, threading.Lock()
        self.ports = {"leader": free_port(), "helper": free_port()}
        self.aggregators: dict[str, LdpAggregator] = {}

    def answer(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        if path == "/internal/test/ready":
            return {}
        if path == "/internal/test/endpoint_for_task":
            return {"status": "success", "endpoint": f"http://127.0.0.1:{self.ports[request['role']]}/"}
        if path == "/internal/test/add_task":
            try:
                self.add_task(request)
            except (ValueError, KeyError, TypeError, RuntimeError) as exc:
                return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            return {"status": "success"}
        raise LookupError(path)

    def add_task(self, request: dict[str, Any]) -> None:
        task, verify_key = task_of(request)
        role = request["role"]
        with self.lock:
            if role not in self.aggregators:
                self.aggregators[role] = LdpAggregator(self.root / role, role, self.ports[role])
            aggregator = self.aggregators[role]
            aggregator.add(task.id_text, task, verify_key, request["leader_authentication_token"],
                           request.get("collector_authentication_token"))
            aggregator.restart()

    def stop(self) -> None:
        for aggregator in self.aggregators.values():
            aggregator.stop()


def serve(api: InteropApi, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                out, status = json.dumps(api.answer(self.path, body)).encode(), 200
            except LookupError:
                out, status = b'{"error": "not found"}', 404
            except ValueError:
                out, status = b'{"error": "the body is not JSON"}', 400
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            return

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="a new folder for the aggregators' files")
    parser.add_argument("--port", type=int, required=True, help="the interop API's port")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True)
    api = InteropApi(args.dir)
    server = serve(api, args.port)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
