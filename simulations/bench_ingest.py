"""Server ingestion sections of ``simulations/benchmark.py`` (registered by :func:`register`).

Targets (issue 9): JSONL ingestion >= 500,000 reports/s on one core; binary and Parquet >= 10
million reports/s; memory flat in the input size (peak RSS at 10^7 reports stated); Dask on 2
local workers: the aggregation time of 10^8 simulated reports against the single-process path.

Inputs follow ``examples/collection.json``: a third each of ``app_category`` (GRR, d = 4),
``dark_mode`` (RR) and ``homepage`` (RAPPOR, 32 bits, 64 cohorts), interleaved, one window. The
payloads are uniformly random valid values (ingestion cost does not depend on them); the JSONL lines
are the exact bytes a client writes. "Ingestion" is :func:`ldp.jobs.read_input` into a fresh
:class:`~ldp.jobs.Folder`: read, parse, validate against the spec, fold. The whole job
(:func:`ldp.jobs.fold_files`: also SHA-256 of the input, the manifest and the output files)
is timed once beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ldp.jobs import Folder, Section, fold_files, read_input, write_binary, write_parquet
from ldp.jobs.store import same_reports
from ldp.reports import ReportBatch
from ldp.spec import CollectionSpec

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "examples" / "collection.json"
WINDOW = 20000
METRICS = ("app_category", "dark_mode", "homepage")


def random_sections(spec: CollectionSpec, n: int, rng: np.random.Generator) -> list[Section]:
    """``n`` reports split evenly over the three metrics, uniformly random valid payloads."""
    out = []
    for k, metric in enumerate(METRICS):
        m = n // 3 + (k < n % 3)
        p = spec.params(metric)
        cols = {}
        for f in p.schema:
            if f.kind == "uint":
                cols[f.name] = rng.integers(0, f.size, m, dtype=np.min_scalar_type(f.size - 1))
            else:
                cols[f.name] = rng.integers(0, 256, (m, (f.size + 7) // 8), dtype=np.uint8)
        out.append(Section(spec.fingerprint, metric, WINDOW, ReportBatch(p.protocol, p.fingerprint, p.schema, cols)))
    return out


def jsonl_block(sections: list[Section]) -> bytes:
    """The client's exact lines for these sections, metrics interleaved (round robin)."""
    per_metric = []
    for s in sections:
        b = s.reports
        head = (f'{{"spec":"{s.spec}","metric":"{s.metric}","window":{s.window},"report":{{"v":1,'
                f'"protocol":"{b.protocol}","params":"{b.fingerprint}","payload":{{')
        texts = []
        for f in b.schema:
            col = b.columns[f.name]
            if f.kind == "uint":
                texts.append([f'"{f.name}":{v}' for v in col.tolist()])
            else:
                chars = (np.unpackbits(col, axis=1, bitorder="little")[:, :f.size] + 48).astype(np.uint8)
                texts.append([f'"{f.name}":"{x.decode()}"' for x in chars.view(f"S{f.size}").ravel().tolist()])
        per_metric.append([head + ",".join(parts) + "}}}" for parts in zip(*texts, strict=True)])
    lines = [x for group in zip(*per_metric, strict=False) for x in group]
    lines += [x for group in per_metric for x in group[len(per_metric[-1]):]]
    return ("\n".join(lines) + "\n").encode("ascii")


def write_inputs(folder: Path, n: int, seed: int, repeat: int = 1) -> dict[str, Path]:
    """``n`` reports as JSONL, binary and Parquet files (JSONL: one block of n/repeat lines, repeated)."""
    spec = CollectionSpec.load(SPEC)
    rng = np.random.default_rng(seed)
    sections = random_sections(spec, n // repeat, rng)
    paths = {fmt: folder / f"in-{n}.{ext}" for fmt, ext in (("jsonl", "jsonl"), ("binary", "ldpe"),
                                                             ("parquet", "parquet"))}
    block = jsonl_block(sections)
    with open(paths["jsonl"], "wb") as fh:
        for _ in range(repeat):
            fh.write(block)
    whole = sections if repeat == 1 else random_sections(spec, n, rng)
    write_binary(paths["binary"], whole)
    write_parquet(paths["parquet"], whole)
    return paths


_RSS_CHILD = r"""
import json, resource, sys, time
from ldp.jobs import Folder, read_input
from ldp.spec import CollectionSpec

def peak_kib():
    try:  # the high-water mark of this process's own memory (a fresh one after exec)
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):  # elsewhere: ru_maxrss (KiB on Linux, bytes on macOS)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

spec = CollectionSpec.load(sys.argv[1])
before = peak_kib()
folder = Folder({spec.fingerprint: spec})
t0 = time.perf_counter()
read_input(sys.argv[2], folder)
dt = time.perf_counter() - t0
print(json.dumps({"records": folder.records, "accepted": folder.accepted, "seconds": dt,
                  "peak_rss_kib_after_imports": before, "peak_rss_kib": peak_kib()}))
"""


def peak_rss(path: Path) -> dict[str, Any]:
    """Ingest ``path`` in a fresh process; its peak RSS (KiB: VmHWM, or ``ru_maxrss``) after the
    imports and at the end. The child imports the ldp the benchmark measures (``-P``: not a source tree in
    the current directory; ``benchmark.py --source`` puts the working tree on ``PYTHONPATH``)."""
    res = subprocess.run([sys.executable, "-P", "-c", _RSS_CHILD, str(SPEC), str(path)], capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout)


def _two_processes(paths: list[Path]) -> float:
    """Seconds to fold ``paths`` with two plain worker processes (no Dask, no manifest)."""
    from concurrent.futures import ProcessPoolExecutor

    from ldp.jobs import fold_input

    docs = [CollectionSpec.load(SPEC).to_dict()]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_warm, range(2)))
        t0 = time.perf_counter()
        list(pool.map(fold_input, [str(p) for p in paths], [None] * len(paths), [docs] * len(paths),
                      [False] * len(paths), [str(p) for p in paths]))
        return time.perf_counter() - t0


def _warm(_: int) -> None:
    import pyarrow.parquet  # noqa: F401

    import ldp.jobs.arrow  # noqa: F401


def register(b: ModuleType) -> None:
    """Add the ingestion sections to the benchmark module ``b``."""
    spec = CollectionSpec.load(SPEC)

    def ingest(path: Path) -> Folder:
        folder = Folder({spec.fingerprint: spec})
        read_input(path, folder)
        return folder

    @b.benchmark("ingest_throughput")
    def ingest_throughput(ctx: Any) -> dict[str, Any]:
        """Reports/s of each format on one core, and the whole job once."""
        sizes = {"jsonl": 10**6, "binary": 10**7, "parquet": 10**7}
        if ctx.quick:
            sizes = {k: v // 10 for k, v in sizes.items()}
        out: dict[str, Any] = {"inputs": "examples/collection.json: 1/3 grr, 1/3 rr, 1/3 rappor (32 bits)"}
        targets = {"jsonl": 5e5, "binary": 1e7, "parquet": 1e7}
        with tempfile.TemporaryDirectory(prefix="ldp-bench-ingest-") as tmp:
            for fmt, n in sizes.items():
                b.log(f"  {fmt}: writing {n:,} reports")
                path = write_inputs(Path(tmp), n, ctx.seed)[fmt]
                b.log(f"  {fmt}: ingesting {path.stat().st_size:,} bytes")
                timing, folder = b.time_runs(lambda _, path=path: ingest(path), ctx.sizes.repeats)
                rate = b.throughput(n, timing)
                t0 = time.perf_counter()
                job = fold_files([path], spec, Path(tmp) / f"job-{fmt}", progress=False)
                row = {"n": n, "bytes": path.stat().st_size, "bytes_per_report": path.stat().st_size / n,
                       "reports_per_s": rate, "seconds": timing,
                       "whole_job": {"seconds": time.perf_counter() - t0,
                                     "reports_per_s": n / (time.perf_counter() - t0)},
                       "check_all_accepted": folder.accepted == n == job.accepted and not folder.rejected}
                row.update(ctx.judge(f"{fmt}.reports_per_s", rate["best"], ">=", targets[fmt], "reports/s"))
                out[fmt] = row
                for f in Path(tmp).glob("in-*"):
                    f.unlink()
        return out

    @b.benchmark("ingest_memory")
    def ingest_memory(ctx: Any) -> dict[str, Any]:
        """Peak RSS of a fresh process ingesting 10^6 and 10^7 reports (10^5, 10^6 with --quick)."""
        small, big = (10**5, 10**6) if ctx.quick else (10**6, 10**7)
        out: dict[str, Any] = {"method": "peak RSS (VmHWM) of a fresh child process that imports ldp and ingests "
                                         "one file (KiB); JSONL: the n/10 block repeated 10 times"}
        with tempfile.TemporaryDirectory(prefix="ldp-bench-rss-") as tmp:
            for n in (small, big):
                b.log(f"  writing {n:,} reports in each format")
                paths = write_inputs(Path(tmp), n, ctx.seed, repeat=10)
                for fmt, path in paths.items():
                    b.log(f"  {fmt}: {n:,} reports in a child process")
                    res = peak_rss(path)
                    out.setdefault(fmt, {})[str(n)] = {**res, "bytes": path.stat().st_size,
                                                       "peak_rss_mib": res["peak_rss_kib"] / 1024}
                    path.unlink()
        for fmt in ("jsonl", "binary", "parquet"):
            ratio = out[fmt][str(big)]["peak_rss_kib"] / out[fmt][str(small)]["peak_rss_kib"]
            out[fmt]["rss_ratio_10x_input"] = ratio
            out[fmt].update(ctx.judge(f"{fmt}.rss_ratio_10x_input", ratio, "<=", 1.25, "ratio"))
        return out

    @b.benchmark("ingest_dask")
    def ingest_dask(ctx: Any) -> dict[str, Any]:
        """10^8 reports (2·10^6 with --quick) in 16 files, binary and Parquet: the job in one process
        vs the job with ``engine="dask"`` on a local cluster of 2 worker processes."""
        try:
            import distributed
        except ImportError:
            return {"skipped": "dask[distributed] is not installed"}
        n, files = (2 * 10**6 if ctx.quick else 10**8), 16
        out: dict[str, Any] = {"n": n, "files": files, "cpus": os.cpu_count(),
                               "cluster": "LocalCluster(n_workers=2, threads_per_worker=1, processes=True)",
                               "timed": "fold_files over all files: SHA-256, fold, manifest, merged output"}
        pinned = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        with tempfile.TemporaryDirectory(prefix="ldp-bench-dask-") as tmp:
            root = Path(tmp)
            rng = ctx.rng(90)
            b.log(f"  writing {n:,} reports in {files} binary and {files} Parquet files")
            paths: dict[str, list[Path]] = {"binary": [], "parquet": []}
            for i in range(files):
                sections = random_sections(spec, n // files, rng)
                paths["binary"].append(root / f"part-{i:02d}.ldpe")
                write_binary(paths["binary"][-1], sections)
                paths["parquet"].append(root / f"part-{i:02d}.parquet")
                write_parquet(paths["parquet"][-1], sections)
            if pinned is not None:  # the workers must not inherit the benchmark's pinning to one CPU
                os.sched_setaffinity(0, range(os.cpu_count() or 1))
            try:
                cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                   dashboard_address=None)
                client = distributed.Client(cluster)
                client.run(lambda: [__import__(m) for m in ("ldp.jobs.arrow", "pyarrow.parquet")])  # warm (untimed)
                for fmt, group in paths.items():
                    row: dict[str, Any] = {"bytes": sum(p.stat().st_size for p in group)}
                    for engine in ("local", "dask"):
                        b.log(f"  {fmt}: {engine}")
                        t0 = time.perf_counter()
                        fold_files(group, spec, root / f"{fmt}-{engine}", engine=engine, scheduler=client,
                                        progress=False)
                        row[f"{engine}_s"] = time.perf_counter() - t0
                        row[f"{engine}_reports_per_s"] = n / row[f"{engine}_s"]
                    b.log(f"  {fmt}: two plain processes (the machine's ceiling, no Dask)")
                    row["two_processes_s"] = _two_processes(group)
                    row["speedup"] = row["local_s"] / row["dask_s"]
                    row["two_processes_speedup"] = row["local_s"] / row["two_processes_s"]
                    row["check_same_bytes"] = all(  # but the fold's own coins (same_reports)
                        same_reports(root / f"{fmt}-local" / "aggregates" / p.name, p)
                        for p in (root / f"{fmt}-dask" / "aggregates").glob("*.agg"))
                    out[fmt] = row
                client.close()
                cluster.close()
            finally:
                if pinned is not None:
                    os.sched_setaffinity(0, pinned)
        out["note"] = ("local: one process (pinned to one CPU like every section); dask: 2 worker processes, one "
                       "task per file, the client commits each file's partial aggregates to the manifest; "
                       "two_processes: the same per-file folding in 2 plain processes, the machine's ceiling")
        return out
