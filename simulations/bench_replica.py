"""The capacity of one ingest service replica over object storage (issue 50). Prints one JSON document.

One ``ldp serve`` replica with ``[storage]`` on an S3-compatible server (moto in server mode, the ``test`` extra)
on this machine, loaded by ``--clients`` threads POSTing 500-report batches (the load of
``simulations/bench_serve.py``): as fast as it takes them (``throughput``), then at a fixed ``--rate``
(``latency``). Each group commit is one chunk object, acknowledged once stored. Reported: reports/s, request
latency p50/p99, chunk objects written per second, and bytes stored per million reports, in the chunks and in the
anonymized segments the shuffler makes of them. The check: the shuffler's segments hold exactly the accepted lines
of the batches acknowledged, each once (the pool's junk lines, rejected, stay in the replica's data folder). The S3
server runs on the same cores as the replica and its clients, so these are floors of what a replica does against
real object storage::

    python simulations/bench_replica.py --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests): its siblings, after the
    sys.path.append(str(Path(__file__).resolve().parent))  # repository (benchmark.py --source puts that first)
from bench_serve import SPEC_DOC, Server, free_port, load, make_pool, percentile, server_latency  # noqa: E402
from scale_out import BUCKET, CREDENTIALS, s3_server  # noqa: E402

from ldp.ingest.config import new_token, token_sha256  # noqa: E402
from ldp.shuffler import shuffle_app  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402
from ldp.storage import open_store  # noqa: E402


def run(seconds: float, clients: int, rate: float | None, work: Path, pool_size: int = 40,
        batch_reports: int = 500) -> dict[str, Any]:
    """One load run against a fresh replica and store under ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(CREDENTIALS)  # this script's own process: the replica and the store client inherit them
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(SPEC_DOC))
    token = new_token()
    pool = make_pool(CollectionSpec.load(spec_path), pool_size, batch_reports)
    with s3_server(work / "s3.log") as endpoint:
        url = f"s3://{BUCKET}/bench-{time.time_ns()}"
        config = work / "replica.toml"
        config.write_text(f'data_dir = "data"\nreplica = "r1"\n[fold]\nevery_seconds = 0\n'
                          f'[storage]\nurl = "{url}"\nendpoint_url = "{endpoint}"\nregion_name = "us-east-1"\n'
                          f'[apps.bench]\ntoken_sha256 = "{token_sha256(token)}"\nspecs = ["spec.json"]\n')
        server = Server(config, free_port(), work / "replica.log")
        server.start()
        load_before = os.getloadavg()
        try:
            tally, wall, _ = load(server, token, pool, clients, seconds, rate)
        finally:
            load_after = os.getloadavg()
            status = server.stop()
        store = open_store(url, {"endpoint_url": endpoint})
        chunks = store.list("apps/bench/incoming/")
        chunk_bytes = sum(len(store.get(k)) for k in chunks)
        t0 = time.perf_counter()
        shuffle_app(store, "bench", now=time.time() + 2 * 86400, min_reports=1)  # the day's window closed
        shuffle_seconds = time.perf_counter() - t0
        stored: Counter[bytes] = Counter()
        segment_bytes = 0
        for key in store.list("apps/bench/segments/closed/"):
            data = store.get(key)
            segment_bytes += len(data)
            stored.update(data.splitlines())
    lines = Counter(line for i in tally.acked.values() for line in pool[i].splitlines())
    reports = sum(lines.values())  # every line acknowledged, the pool's junk (1 in 97, rejected) included
    sent = Counter({line: n for line, n in lines.items() if line.startswith(b"{")})  # what must reach a segment:
    # the junk stays in the replica's data folder, never in a chunk (issue 70)
    out: dict[str, Any] = {
        "seconds": round(wall, 2), "clients": clients, "batch_reports": batch_reports,
        "reports_per_second": round(reports / wall), "requests_per_second": round(len(tally.acked) / wall),
        "latency_ms": {"p50": percentile(tally.latencies, 0.5), "p99": percentile(tally.latencies, 0.99),
                       "max": percentile(tally.latencies, 1.0)},
        "server_latency_ms": server_latency(work / "replica.log"),
        # the machine's load around the run (1, 5 and 15 min; moto's server, the replica's and the clients' work in it)
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "cpus": os.cpu_count(),
        "chunks_per_second": round(len(chunks) / wall, 1),
        "chunk_bytes_per_million_reports": round(chunk_bytes / max(1, reports) * 1e6),
        "segment_bytes_per_million_reports": round(segment_bytes / max(1, reports) * 1e6),
        "shuffle_seconds": round(shuffle_seconds, 2),
        "shuffle_reports_per_second": round(reports / shuffle_seconds) if shuffle_seconds > 0 else None,
        "retries": dict(tally.retries), "server_exit": status,
        "check": {"reports_acknowledged": sum(sent.values()), "reports_in_segments": sum(stored.values()),
                  "rejected_lines_kept_out": reports - sum(sent.values()),
                  "ok": stored == sent and not tally.failed}}
    if rate is not None:
        out["target_rate"] = rate
    return out


def measure(seconds: float, clients: int = 4, rate: float | None = None) -> dict[str, Any]:
    """Throughput, then latency at ``rate`` (default: half the throughput measured), with 500-report batches; and
    the request rate with a device's batch (5 reports, 64 clients)."""
    with tempfile.TemporaryDirectory(prefix="bench_replica_") as tmp:
        out = {"throughput": run(seconds, clients, None, Path(tmp) / "throughput")}
        rate = rate or out["throughput"]["reports_per_second"] / 2
        out["latency"] = run(seconds, clients, rate, Path(tmp) / "latency")
        out["device_batches"] = run(seconds, 64, None, Path(tmp) / "small", pool_size=400, batch_reports=5)
    return out


def register(b: ModuleType) -> None:
    """Add the ``replica`` section to the benchmark module ``b``."""

    @b.benchmark("replica")
    def replica(ctx: Any) -> dict[str, Any]:
        import scale_out

        with b.all_cpus():
            out = measure(3.0 if ctx.quick else 20.0)
            out["scale_out"] = scale_out.run(devices=60 if ctx.quick else 200, rounds=2 if ctx.quick else 3)
        out["meets"] = {"exact": all(out[k]["check"]["ok"] for k in ("throughput", "latency", "device_batches")),
                        "scale_out": out["scale_out"]["lost"] == out["scale_out"]["duplicated"] == 0}
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each run (default 20)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--rate", type=float, help="reports/s of the latency run (default: half the throughput)")
    args = ap.parse_args(argv)
    out = measure(args.seconds, args.clients, args.rate)
    print(json.dumps(out, indent=1))
    return 0 if all(r["check"]["ok"] for r in out.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
