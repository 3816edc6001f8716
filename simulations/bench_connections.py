"""Idle and slow connections against ``ldp serve`` (issue 30): a crowd of sockets that send nothing or
send their headers one byte at a time, while well-behaved clients upload and a health check polls.
Prints one JSON document.

* The crowd runs in its own process (``--crowd``, a non-blocking socket loop): ``--idle`` connections
  that never send a byte and ``--slow`` ones that send one header byte every ``--gap`` s. When the
  server closes one, the crowd opens another, so it holds its number of sockets for the whole run.
* ``--clients`` threads POST 500-report batches at ``--rate`` reports/s in all (the harness of
  ``bench_serve.py``: keep-alive connections, retry on 429/503 and errors, giving up after 5 s).
* A poller GETs ``/healthz`` every 0.1 s on a new connection, as a load balancer does.

The run ends with SIGTERM and the checks of ``bench_serve.verify``: every acknowledged batch is in
the segments exactly once, nothing else is, and the aggregate is exact. The targets: at least 99 % of
the batches stored, p99 latency at most 100 ms, no 503 (and no failure) on ``/healthz``::

    python simulations/bench_connections.py                  # 20 s, 10,000 reports/s, 1,000 + 1,000 sockets
    python simulations/bench_connections.py --seconds 60 --idle 5000 --slow 5000
"""

from __future__ import annotations

import argparse
import errno
import http.client
import importlib.util
import json
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ldp.ingest.config import new_token, token_sha256
from ldp.spec import CollectionSpec

HERE = Path(__file__).resolve().parent
SLOW_HEADERS = b"GET /healthz HTTP/1.1\r\nHost: collector\r\nX-Slow: " + b"a" * 100_000


def _sibling(stem: str) -> ModuleType:
    """``simulations/<stem>.py`` (imported by name when ``simulations/`` is on ``sys.path``, else by path)."""
    if stem in sys.modules:
        return sys.modules[stem]
    spec = importlib.util.spec_from_file_location(stem, HERE / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[stem] = mod
    spec.loader.exec_module(mod)
    return mod


bench_serve = _sibling("bench_serve")


def raise_nofile(need: int) -> int:
    """Raise this process's soft open-files limit to the hard one; the limit (a ``RuntimeError`` below ``need``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, need)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    if soft < need:
        raise RuntimeError(f"{need} open files needed, the limit is {soft} (ulimit -n)")
    return soft


# ------------------------------------------------------------------------------------------------
# The crowd: one process, one selector loop
# ------------------------------------------------------------------------------------------------


@dataclass
class _Conn:
    kind: str  # "idle" or "slow"
    sock: socket.socket
    opened: float
    connected: bool = False
    sent: int = 0
    got: bytes = b""


@dataclass
class CrowdStats:
    """What the crowd saw: connections opened, and those the server closed, by kind (``idle``, ``slow``)
    and by answer (``408``: cut at the header deadline; ``none``: closed without a word, as idle)."""

    opened: int = 0
    connect_errors: int = 0
    closed: dict[str, int] = field(default_factory=lambda: {"idle": 0, "slow": 0})
    lifetimes: dict[str, list[float]] = field(default_factory=lambda: {"408": [], "none": []})
    other_answers: int = 0
    max_connected: int = 0
    connected_at_end: int = 0

    def summary(self) -> dict[str, Any]:
        def q(xs: list[float], p: float) -> float | None:
            s = sorted(xs)
            return round(s[min(len(s) - 1, int(p * len(s)))], 3) if s else None

        return {"opened": self.opened, "connect_errors": self.connect_errors, "max_connected": self.max_connected,
                "connected_at_end": self.connected_at_end, "closed_by_server": self.closed,
                "other_answers": self.other_answers,
                "lifetime_s": {k: {"count": len(v), "min": q(v, 0.0), "p50": q(v, 0.5), "max": q(v, 1.0)}
                               for k, v in self.lifetimes.items()},
                "lifetimes": self.lifetimes}


def crowd(port: int, idle: int, slow: int, gap: float, stop: threading.Event, stats: CrowdStats,
          host: str = "127.0.0.1") -> None:
    """Hold ``idle`` silent and ``slow`` byte-by-byte connections until ``stop``; reopen each one the server closes."""
    sel = selectors.DefaultSelector()
    conns: dict[int, _Conn] = {}
    reopen: list[str] = []

    def open_one(kind: str) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        c = _Conn(kind, s, time.monotonic())
        err = s.connect_ex((host, port))
        if err not in (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            stats.connect_errors += 1
            s.close()
            reopen.append(kind)
            return
        stats.opened += 1
        conns[s.fileno()] = c
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)

    def drop(c: _Conn, by_server: bool) -> None:
        sel.unregister(c.sock)
        conns.pop(c.sock.fileno(), None)
        if by_server:
            stats.closed[c.kind] += 1
            lifetime = time.monotonic() - c.opened
            if c.got.startswith(b"HTTP/1.1 408"):
                stats.lifetimes["408"].append(lifetime)
            elif c.got:
                stats.other_answers += 1
            else:
                stats.lifetimes["none"].append(lifetime)
        c.sock.close()
        reopen.append(c.kind)

    for i in range(max(idle, slow)):  # interleaved, so both kinds are there from the start
        if i < idle:
            open_one("idle")
        if i < slow:
            open_one("slow")
    next_round = time.monotonic() + gap
    while not stop.is_set():
        for key, mask in sel.select(timeout=0.02):
            c = key.data
            if not c.connected and mask & selectors.EVENT_WRITE:
                if c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    stats.connect_errors += 1
                    drop(c, False)
                    continue
                c.connected = True
                sel.modify(c.sock, selectors.EVENT_READ, c)
            if mask & selectors.EVENT_READ:
                try:
                    data = c.sock.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    c.got += data
                else:
                    drop(c, True)
        stats.max_connected = max(stats.max_connected, sum(c.connected for c in conns.values()))
        now = time.monotonic()
        if now >= next_round:
            next_round = now + gap
            for c in list(conns.values()):
                if c.kind == "slow" and c.connected:
                    try:
                        c.sent += c.sock.send(SLOW_HEADERS[c.sent:c.sent + 1])
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        pass  # closed by the server: the read side sees it
        while reopen and not stop.is_set():
            open_one(reopen.pop())
            if len(reopen) > 10_000:  # connects keep failing: do not spin
                time.sleep(0.01)
    stats.connected_at_end = sum(c.connected for c in conns.values())
    for c in list(conns.values()):
        sel.unregister(c.sock)
        c.sock.close()
    sel.close()


class CrowdProcess:
    """The crowd in a child process (``bench_connections.py --crowd``): started, then stopped for its stats."""

    def __init__(self, port: int, idle: int, slow: int, gap: float = 0.5, nice: bool = True) -> None:
        # niced: on a test machine the crowd shares the cores with the server; an attacker's would not. A
        # test on a loaded machine does not nice it: starved, it could not hold its sockets at all.
        cmd = [sys.executable, str(Path(__file__).resolve()), "--crowd", "--port", str(port), "--idle", str(idle),
               "--slow", str(slow), "--gap", str(gap)]
        prefix = ["nice", "-n", "19"] if nice and shutil.which("nice") else []
        self.proc = subprocess.Popen([*prefix, *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "ready" once every socket is opened
        if not line.startswith(b"ready"):
            self.proc.kill()
            raise RuntimeError(f"the crowd did not start: {line!r}")

    def stop(self) -> dict[str, Any]:
        out, _ = self.proc.communicate(b"", timeout=60)
        return dict(json.loads(out))


def _crowd_main(args: argparse.Namespace) -> int:
    raise_nofile(args.idle + args.slow + 64)
    stop, stats = threading.Event(), CrowdStats()
    worker = threading.Thread(target=crowd, args=(args.port, args.idle, args.slow, args.gap, stop, stats))
    worker.start()
    while stats.opened < args.idle + args.slow and worker.is_alive():
        time.sleep(0.01)
    print("ready", flush=True)
    sys.stdin.read()  # until the parent closes stdin
    stop.set()
    worker.join()
    print(json.dumps(stats.summary()), flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# The health checker and the server's resources
# ------------------------------------------------------------------------------------------------


@dataclass
class Health:
    """``/healthz`` answers by status (``"error"``: no answer), their latencies (ms), the server's peak fds and RSS."""

    statuses: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    max_fds: int = 0
    max_rss_kib: int = 0
    cpu_seconds: float = 0.0


def _proc_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _proc_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _proc_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0.0


def poll_health(port: int, pid: int, stop: threading.Event, health: Health, every: float = 0.1) -> None:
    """GET /healthz on a new connection every ``every`` s until ``stop``; sample the server's fds and RSS."""
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            resp.read()
            key = str(resp.status)
            conn.close()
        except (OSError, http.client.HTTPException):
            key = "error"
        health.latencies.append((time.perf_counter() - t0) * 1e3)
        health.statuses[key] = health.statuses.get(key, 0) + 1
        health.max_fds = max(health.max_fds, _proc_fds(pid))
        health.max_rss_kib = max(health.max_rss_kib, _proc_rss_kib(pid))
        health.cpu_seconds = _proc_cpu_seconds(pid)
        stop.wait(every)


def scrape_connections(port: int) -> dict[str, float]:
    """The ``ldp_collector_connections_*`` samples of the server's ``/metrics`` (name without the prefix)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        page = conn.getresponse().read().decode()
    finally:
        conn.close()
    prefix, out = "ldp_collector_connections_", {}
    for line in page.splitlines():
        if line.startswith(prefix) and not line.startswith("#"):
            name, _, number = line.partition(" ")
            out[name[len(prefix):]] = float(number)
    return out


# ------------------------------------------------------------------------------------------------
# One run
# ------------------------------------------------------------------------------------------------


def write_config(work: Path, limits: dict[str, float]) -> tuple[Path, Path, str]:
    """The spec, a token and a config (with ``limits``) in ``work``: (config, spec, token)."""
    work.mkdir(parents=True, exist_ok=True)
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(bench_serve.SPEC_DOC))
    token = new_token()
    lines = "".join(f"{k} = {v}\n" for k, v in limits.items())
    config = work / "serve.toml"
    config.write_text(f'data_dir = "data"\n[limits]\n{lines}[fold]\nevery_seconds = 0\n'
                      f'[apps.bench]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
    return config, spec_path, token


def run(work: Path, seconds: float = 20.0, rate: float = 10_000.0, clients: int = 4, idle: int = 1000,
        slow: int = 1000, gap: float = 0.5, batch: int = 500, limits: dict[str, float] | None = None,
        pool_size: int = 40, give_up: float = 5.0, nice: bool = True) -> dict[str, Any]:
    """One run: the server, the crowd, the clients and the poller for ``seconds``; then SIGTERM and the checks."""
    raise_nofile(64)
    config, spec_path, token = write_config(work, limits or {})
    pool = bench_serve.make_pool(CollectionSpec.load(spec_path), pool_size, batch)
    server = bench_serve.Server(config, bench_serve.free_port(), work / "server.log")
    server.start()
    assert server.proc is not None
    rss_before = _proc_rss_kib(server.proc.pid)
    fds_before = _proc_fds(server.proc.pid)
    cpu_before = _proc_cpu_seconds(server.proc.pid)
    health, stop = Health(), threading.Event()
    try:
        crowd_proc = CrowdProcess(server.port, idle, slow, gap, nice) if idle + slow else None
        poller = threading.Thread(target=poll_health, args=(server.port, server.proc.pid, stop, health))
        poller.start()
        tally = bench_serve.Tally()
        interval = clients * batch / rate
        t0 = time.monotonic()
        threads = [threading.Thread(target=bench_serve.client, args=(w, server.port, token, pool, t0 + seconds,
                                                                           tally, interval, give_up))
                   for w in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        connections = scrape_connections(server.port)  # the server's view, the crowd still there
        stop.set()
        poller.join()
        crowd_out = crowd_proc.stop() if crowd_proc is not None else {}
    finally:
        stop.set()
        status = server.stop()
    attempted = len(tally.acked) + len(tally.failed)
    check = bench_serve.verify(work / "data", "bench", spec_path, pool, tally, work)
    lat = tally.latencies
    log = server.log.read_text(errors="replace")
    start_line = next((x for x in log.splitlines() if x.startswith("ldp serve: listening on")), None)
    return {
        "seconds": round(wall, 2), "rate_target": rate, "clients": clients, "batch_reports": batch,
        "crowd": {"idle": idle, "slow": slow, "gap_s": gap, **{k: v for k, v in crowd_out.items() if k != "lifetimes"}},
        "limits": limits or "defaults",
        "batches": {"attempted": attempted, "stored": len(tally.acked), "gave_up": len(tally.failed),
                    "stored_fraction": round(len(tally.acked) / attempted, 5) if attempted else None,
                    "retries": dict(tally.retries)},
        "reports_per_second": round(sum(pool[i].count(b"\n") for i in tally.acked.values()) / wall),
        "latency_ms": {"p50": bench_serve.percentile(lat, 0.5), "p99": bench_serve.percentile(lat, 0.99),
                       "max": bench_serve.percentile(lat, 1.0)},
        "healthz": {"statuses": health.statuses, "p99_ms": bench_serve.percentile(health.latencies, 0.99),
                    "max_ms": bench_serve.percentile(health.latencies, 1.0)},
        "server": {"fds_before": fds_before, "fds_max": health.max_fds, "rss_mib_before": round(rss_before / 1024, 1),
                   "rss_mib_max": round(health.max_rss_kib / 1024, 1),
                   "cpu_seconds": round(health.cpu_seconds - cpu_before, 2), "exit": status, "start_line": start_line,
                   "connections": connections},
        "check": check, "crowd_lifetimes": crowd_out.get("lifetimes", {}),
    }


def judge(out: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets against one run (with the crowd)."""
    statuses = out["healthz"]["statuses"]
    return {"targets": {"stored_fraction": 0.99, "p99_ms": 100.0, "healthz_503": 0},
            "meets": {"stored": (out["batches"]["stored_fraction"] or 0) >= 0.99,
                      "latency": out["latency_ms"]["p99"] <= 100.0,
                      "healthz": statuses.get("503", 0) == 0 and statuses.get("error", 0) == 0,
                      "exact": out["check"]["ok"]}}


def compare(work: Path, seconds: float, baseline: bool = True, **kw: Any) -> dict[str, Any]:
    """The run with the crowd, judged, and (``baseline``) the same load without it, for comparison."""
    out: dict[str, Any] = {}
    if baseline:
        out["baseline"] = run(work / "baseline", seconds, **{**kw, "idle": 0, "slow": 0})
        out["baseline"].pop("crowd_lifetimes")
    out["crowd"] = run(work / "crowd", seconds, **kw)
    out["crowd"].pop("crowd_lifetimes")
    out.update(judge(out["crowd"]))
    return out


def register(b: ModuleType) -> None:
    """Add the ``connections`` section to the benchmark module ``b`` (issue 30's availability target)."""

    @b.benchmark("connections")
    def connections(ctx: Any) -> dict[str, Any]:
        with b.all_cpus(), tempfile.TemporaryDirectory(prefix="bench_connections_") as tmp:
            return compare(Path(tmp), 5.0 if ctx.quick else 20.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each run (default 20)")
    ap.add_argument("--rate", type=float, default=10_000.0, help="reports/s of the clients in all (default 10,000)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--idle", type=int, default=1000, help="connections that send nothing (default 1,000)")
    ap.add_argument("--slow", type=int, default=1000,
                    help="connections sending a header byte per --gap (default 1,000)")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between a slow connection's bytes (default 0.5)")
    ap.add_argument("--limit", action="append", default=[], metavar="KEY=VALUE",
                    help="a [limits] key of the server's config (repeatable), e.g. header_timeout_seconds=5")
    ap.add_argument("--no-baseline", action="store_true", help="skip the run without the crowd")
    ap.add_argument("--crowd", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    args = ap.parse_args(argv)
    if args.crowd:
        return _crowd_main(args)
    limits = {k: float(v) if "." in v else int(v) for k, v in (x.split("=", 1) for x in args.limit)}
    with tempfile.TemporaryDirectory(prefix="bench_connections_", dir=args.dir) as tmp:
        out = compare(Path(tmp), args.seconds, not args.no_baseline, rate=args.rate, clients=args.clients,
                      idle=args.idle, slow=args.slow, gap=args.gap, limits=limits)
    print(json.dumps(out, indent=1))
    return 0 if all(out["meets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
