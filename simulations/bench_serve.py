"""Load, latency and SIGKILL harness for ``ldp serve`` (issue 22). Prints one JSON document.

* ``throughput``: ``--clients`` threads POST 500-report batches over loopback keep-alive connections
  for ``--seconds``; reports/s, latency percentiles, and zero loss checked (below).
* ``latency``: the same at ``--rate`` reports/s (default: half the throughput measured), p50/p99.
* ``--kill N``: during a load run, SIGKILL the server N times at random moments and restart it;
  clients retry unacknowledged batches under the same id until acknowledged.

Every run ends with the checks: the server stopped with SIGTERM; its seen index holds each batch id the
clients saw acknowledged exactly once and no other; the closed segments' lines are, as a multiset, exactly
the lines of the bodies acknowledged (their order is shuffled); and ``ldp fold`` of the closed
segments equals, exactly, the aggregate of every report sent. The reports come from a pool of
batches encoded once (``--pool`` batches), so the load generator costs little CPU.

    python simulations/bench_serve.py --seconds 60
    python simulations/bench_serve.py --seconds 20 --kill 10 --mode kill
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ldp.ingest.config import new_token, token_sha256
from ldp.jobs.fold import Folder, key_name
from ldp.jobs.job import fold_files
from ldp.jobs.lines import fold_lines
from ldp.jobs.store import canonical_bytes, read_aggregate
from ldp.protocols import client_protocols
from ldp.spec import CollectionSpec
from ldp.spec.envelope import Envelope

SPEC_DOC: dict[str, Any] = {
    "spec_version": 1, "name": "bench_app", "budget": {"per_window": 4, "lifetime": 100},
    "upload": {"min_interval_seconds": 0, "max_batch": 500},
    "metrics": {
        "color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 8}, "budget": {"per_report": 1}},
        "flag": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}},
    },
}


def make_pool(spec: CollectionSpec, batches: int, size: int, seed: int = 0) -> list[bytes]:
    """``batches`` bodies of ``size`` envelope lines each (every 97th line junk, rejected as not_json)."""
    rng = random.Random(seed)
    encoders = {name: client_protocols()[m.protocol][1](m.params, rng=seed + i, simulation=True)
                for i, (name, m) in enumerate(sorted(spec.metrics.items()))}
    out = []
    for b in range(batches):
        lines = []
        for j in range(size):
            if (b * size + j) % 97 == 96:
                lines.append(f"junk line {b}-{j}")
                continue
            name = "color" if j % 2 else "flag"
            value: Any = rng.randrange(8) if name == "color" else int(rng.random() < 0.3)
            enc = encoders[name]
            lines.append(Envelope(spec.fingerprint, name, 20000, enc.randomize(enc.prepare(value))).to_json())
        out.append(("\n".join(lines) + "\n").encode())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A ``ldp serve`` subprocess (restartable) on a loopback port."""

    config: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    extra: tuple[str, ...] = ()  # more ``ldp serve`` arguments

    def start(self, timeout: float = 30.0) -> None:
        with open(self.log, "ab") as log:
            # -P: the installed ldp, not a source tree in the current directory (benchmark.py --source puts
            # the working tree on PYTHONPATH, inherited)
            self.proc = subprocess.Popen([sys.executable, "-P", "-m", "ldp", "serve", "--config", str(self.config),
                                          "--port", str(self.port), *self.extra], stdout=log, stderr=log)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}); see {self.log}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"the server did not become healthy in {timeout} s; see {self.log}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        """SIGTERM and wait: the exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


@dataclass
class Tally:
    """What the clients saw: per acknowledged batch id, its pool index; latencies in ms."""

    acked: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)  # time.monotonic() of each latency's acknowledgement
    retries: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class LoadConnection:
    """The load generator's keep-alive HTTP/1.1 connection, made to cost the clients' cores little: a request is
    one ``sendall`` of its bytes, an answer is parsed for its status, ``Content-Length`` and ``Connection: close``
    only. ``http.client`` builds a message object per answer (its email header parser) and holds the GIL for it,
    so four client threads timed each other's parsing: with it the clients' p99 was ~2.5 ms above the server's own."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""

    def post(self, head: bytes, body: bytes) -> tuple[int, bytes, bool]:
        """Send ``head`` (the request line and headers, with their blank line) and ``body``: the answer's status,
        body, and whether the server closes the connection. ``OSError`` or ``ValueError`` (a malformed answer)
        when it cannot."""
        self.sock.sendall(head + body)
        data = self.pending
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += self._recv()
        lines = data[:end].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection":
                close = value.strip().lower() == b"close"
        data = data[end + 4:]
        while len(data) < length:
            data += self._recv()
        self.pending = data[length:]
        return status, data[:length], close

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError("the server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


def client(wid: int, port: int, token: str, pool: list[bytes], stop_at: float, tally: Tally,
           interval: float | None = None, give_up: float = 120.0) -> None:
    """POST pool batches until ``stop_at`` (every ``interval`` s when given), each until acknowledged."""
    conn: LoadConnection | None = None
    seq, next_at = 0, time.monotonic()
    while time.monotonic() < stop_at:
        if interval is not None:
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        idx, batch_id = (wid * 7919 + seq) % len(pool), f"w{wid}-{seq}"
        seq += 1
        head = (f"POST /v1/reports HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/x-ndjson\r\nLdp-Batch-Id: {batch_id}\r\n"
                f"Content-Length: {len(pool[idx])}\r\n\r\n").encode()
        t0, last = time.perf_counter(), time.monotonic() + give_up
        while True:
            try:
                if conn is None:
                    conn = LoadConnection(port)
                status, data, close = conn.post(head, pool[idx])
                if close:
                    conn.close()
                    conn = None
                if status == 200:
                    doc = json.loads(data)
                    assert doc["lines"] == pool[idx].count(b"\n"), doc
                    with tally.lock:
                        tally.acked[batch_id] = idx
                        tally.latencies.append((time.perf_counter() - t0) * 1e3)
                        tally.acked_at.append(time.monotonic())
                    break
                if status not in (429, 503):
                    raise RuntimeError(f"unexpected {status}: {data[:200]!r}")
                tally.retries[str(status)] += 1
            except (OSError, ValueError) as exc:
                tally.retries[type(exc).__name__] += 1
                if conn is not None:
                    conn.close()
                conn = None
            if time.monotonic() > last:
                tally.failed.append(batch_id)
                break
            time.sleep(0.02 + random.random() * 0.03)
    if conn is not None:
        conn.close()


def load(server: Server, token: str, pool: list[bytes], clients: int, seconds: float,
         rate: float | None = None, kills: int = 0, seed: int = 0) -> tuple[Tally, float, list[float]]:
    """Run the clients (and the killer); returns the tally, the wall time and the kill moments."""
    tally, lines = Tally(), pool[0].count(b"\n")
    interval = None if rate is None else clients * lines / rate
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(w, server.port, token, pool, t0 + seconds, tally, interval))
               for w in range(clients)]
    for t in threads:
        t.start()
    moments: list[float] = []
    rng = random.Random(seed)
    for k in range(kills):  # kill at a random point of each of `kills` equal slices of the run
        slot = seconds / kills
        time.sleep(max(0.0, t0 + k * slot + rng.uniform(0.1, 0.9) * slot - time.monotonic()))
        moments.append(round(time.monotonic() - t0, 3))
        server.kill()
        server.start()
    for t in threads:
        t.join()
    return tally, time.monotonic() - t0, moments


def verify(data_dir: Path, app: str, spec_path: Path, pool: list[bytes], tally: Tally, work: Path) -> dict[str, Any]:
    """Every acknowledged batch exactly once in the segments, nothing else; aggregates exact."""
    app_dir = data_dir / "apps" / app
    closed = app_dir / "segments" / "closed"
    seen = [json.loads(x) for x in (app_dir / "journal" / "seen.jsonl").read_bytes().splitlines()]
    ids = Counter(d["id"] for d in seen if "id" in d)
    problems = []
    if set(ids) != set(tally.acked) or max(ids.values(), default=1) != 1:
        problems.append(f"journal ids differ from the acknowledged ones: {len(ids)} vs {len(tally.acked)}, "
                        f"max count {max(ids.values(), default=0)}")
    segments = {p.name: p.read_bytes() for p in closed.glob("*.jsonl")}
    if list((app_dir / "segments" / "open").glob("*")):
        problems.append("a segment is still open after SIGTERM")
    stored = Counter(line for data in segments.values() for line in data.splitlines())
    if stored != Counter(line for i in tally.acked.values() for line in pool[i].splitlines()):
        problems.append("the segments' lines are not exactly the lines of the acknowledged batches")
    spec = CollectionSpec.load(spec_path)
    per_batch = []
    for body in pool:
        folder = Folder({spec.fingerprint: spec})
        fold_lines(folder, body, 0)
        per_batch.append(folder.aggregates)
    want: dict[Any, Any] = {}
    for idx in tally.acked.values():
        for key, agg in per_batch[idx].items():
            if key in want:
                want[key].merge(agg)
            else:
                want[key] = agg.copy()
    summary = fold_files([closed], [spec_path], work / "agg", progress=False, duplicates="count")
    got = {name: canonical_bytes(read_aggregate(work / "agg" / "aggregates" / f"{name}.agg"))
           for name in summary.aggregates}
    exact = got == {key_name(k): canonical_bytes(a) for k, a in want.items()}
    if not exact:
        problems.append("the aggregate of the segments differs from the aggregate of the reports sent")
    sent = sum(pool[i].count(b"\n") for i in tally.acked.values())
    return {"batches_acknowledged": len(tally.acked), "reports_sent": sent, "reports_in_segments": summary.records,
            "segments": len(segments), "aggregate_exact": exact, "unacknowledged": len(tally.failed),
            "ok": not problems and not tally.failed and summary.records == sent, "problems": problems[:10]}


def server_latency(log: Path) -> dict[str, float]:
    """p50/p99/max (ms) of the uploads the server answered 200, as its access log times them (from the request's
    start in the app to its answer: the HTTP parsing before and the sending after are the clients' side of the
    difference with ``latency_ms``); empty when the log has none."""
    times = []
    for line in log.read_text(errors="replace").splitlines():
        start = line.find('{"method":"POST"')
        if start >= 0:
            try:
                entry = json.loads(line[start:])
            except ValueError:
                continue
            if entry.get("status") == 200 and isinstance(entry.get("ms"), (int, float)):
                times.append(float(entry["ms"]))
    if not times:
        return {}
    return {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99), "max": percentile(times, 1.0)}


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 2) if s else float("nan")


def run(mode: str, seconds: float, clients: int, kills: int, rate: float | None, pool_size: int,
        work: Path, seed: int = 0) -> dict[str, Any]:
    """One run in a fresh data directory under ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(SPEC_DOC))
    spec = CollectionSpec.load(spec_path)
    token = new_token()
    config = work / "serve.toml"
    config.write_text(f'data_dir = "data"\n[limits]\nsegment_max_seconds = 2\nsegment_max_bytes = 8388608\n'
                      f'[apps.bench]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
    pool = make_pool(spec, pool_size, 500, seed)
    server = Server(config, free_port(), work / "server.log")
    server.start()
    load_before = os.getloadavg()
    try:
        tally, wall, moments = load(server, token, pool, clients, seconds, rate, kills if mode == "kill" else 0, seed)
    finally:
        load_after = os.getloadavg()
        status = server.stop()
    sent = sum(pool[i].count(b"\n") for i in tally.acked.values())
    out = {"mode": mode, "seconds": round(wall, 2), "clients": clients, "batch_reports": 500,
           "reports_per_second": round(sent / wall), "latency_ms": {"p50": percentile(tally.latencies, 0.5),
                                                                   "p99": percentile(tally.latencies, 0.99),
                                                                   "max": percentile(tally.latencies, 1.0)},
           "server_latency_ms": server_latency(server.log),
           # the machine's load around the run (1, 5 and 15 min; the server's and the clients' own work included)
           "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
           "cpus": os.cpu_count(), "retries": dict(tally.retries), "server_exit": status,
           "server_starts": server.starts}
    if rate is not None:
        out["target_rate"] = rate
    if moments:
        out["kills_at_seconds"] = moments
        log = server.log.read_text(errors="replace")
        out["restarts_that_cut_torn_bytes"] = log.count("bytes past the last acknowledged batch")
    out["check"] = verify(work / "data", "bench", spec_path, pool, tally, work)
    return out


def register(b: ModuleType) -> None:
    """Add the ``collector`` section to the benchmark module ``b`` (issue 22's and issue 31's targets)."""

    @b.benchmark("collector")
    def collector(ctx: Any) -> dict[str, Any]:
        with b.all_cpus():  # the server and its clients need every core
            return _section(3.0, 10.0) if ctx.quick else _section(60.0)


def _section(seconds: float, kill_seconds: float | None = None) -> dict[str, Any]:
    """The throughput and the two latency runs of ``seconds`` each, and the kill run (10 SIGKILLs) of
    ``kill_seconds`` (default: ``max(20, seconds / 3)``)."""
    with tempfile.TemporaryDirectory(prefix="bench_collector_") as tmp:
        out = {"throughput": run("throughput", seconds, 4, 0, None, 40, Path(tmp) / "throughput")}
        rate = out["throughput"]["reports_per_second"] / 2
        out["latency"] = run("latency", seconds, 4, 0, rate, 40, Path(tmp) / "latency")
        # issue 61: p99 <= 10 ms at 200,000 reports/s (20 s; the quick run: its seconds)
        out["latency_200k"] = run("latency", min(seconds, 20.0), 4, 0, 200000.0, 40, Path(tmp) / "latency200k")
        # and at half the target's rate (10,000 reports/s), the load the latency target names
        out["latency_half_target"] = run("latency", seconds, 4, 0, 10000.0, 40, Path(tmp) / "latency10k")
        out["kill"] = run("kill", kill_seconds or max(20.0, seconds / 3), 4, 10, None, 40, Path(tmp) / "kill")
    # issue 22: 20,000 reports/s; issue 31: 200,000 with the segments shuffled on close (always on)
    out["targets"] = {"reports_per_second": 20000, "reports_per_second_shuffled": 200000, "p99_ms_at_half_rate": 50.0,
                      "p99_ms_at_200k": 10.0, "kills": 10}
    out["meets"] = {"throughput": out["throughput"]["reports_per_second"] >= 20000,
                    "throughput_shuffled": out["throughput"]["reports_per_second"] >= 200000,
                    "latency": max(out[k]["latency_ms"]["p99"] for k in ("latency", "latency_half_target")) <= 50.0,
                    "latency_200k": out["latency_200k"]["latency_ms"]["p99"] <= 10.0,
                    "exact": all(out[k]["check"]["ok"] for k in ("throughput", "latency", "latency_200k",
                                                                "latency_half_target", "kill")),
                    "kills": len(out["kill"].get("kills_at_seconds", [])) >= 10}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("all", "throughput", "latency", "kill"), default="all")
    ap.add_argument("--seconds", type=float, default=60.0, help="duration of each run (default 60)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--kill", type=int, default=10, help="SIGKILLs in the kill run (default 10)")
    ap.add_argument("--rate", type=float, help="reports/s of the latency run (default: half the throughput)")
    ap.add_argument("--pool", type=int, default=40, help="distinct pregenerated batches (default 40)")
    ap.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_collector_", dir=args.dir) as tmp:
        results: dict[str, Any] = {}
        if args.mode in ("all", "throughput"):
            results["throughput"] = run("throughput", args.seconds, args.clients, 0, None, args.pool,
                                        Path(tmp) / "throughput")
        if args.mode in ("all", "latency"):
            rate = args.rate or results.get("throughput", {}).get("reports_per_second", 40000) / 2
            results["latency"] = run("latency", args.seconds, args.clients, 0, rate, args.pool, Path(tmp) / "latency")
        if args.mode in ("all", "kill"):
            results["kill"] = run("kill", args.seconds, args.clients, args.kill, None, args.pool, Path(tmp) / "kill")
    print(json.dumps(results, indent=1))
    return 0 if all(r["check"]["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
