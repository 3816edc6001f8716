#!/usr/bin/env python3
"""Hostile uploads: time and peak RSS of ``ldp fold`` on junk inputs of every format.

Each case writes one junk file of ``--size`` bytes in a temporary folder, runs ``ldp fold``
on it in a fresh subprocess (``-q --json``) and reads the child's peak RSS from ``os.wait4``. The
job must finish with every record rejected and counted (or, for a file that is not a Parquet file
at all, refused with one line ``error:`` and exit status 2), within ``60 s`` and ``512 MiB``::

    python simulations/bench_hostile.py                    # 1 GiB per case
    python simulations/bench_hostile.py --size 64M --cases csv_cell,ldpe_random

Also a section of ``simulations/benchmark.py`` (``--only ingest_hostile``; 64 MiB, 16 MiB with
``--quick``). Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "examples" / "collection.json"
TIME_LIMIT, RSS_LIMIT_MIB = 60.0, 512.0
BLOCK = 1 << 22


def _printable_lines(rng: np.random.Generator, n: int, commas: bool) -> bytes:
    """About ``n`` bytes of random short lines (1 to 40 printable ASCII characters, no quotes)."""
    alphabet = np.frombuffer(b"".join(bytes([c]) for c in range(32, 127) if c != 34 and (commas or c != 44)),
                             np.uint8)
    body = alphabet[rng.integers(0, len(alphabet), n)]
    ends = np.cumsum(rng.integers(2, 42, n // 2))
    body[ends[ends < n]] = 10
    return body.tobytes()


def _fill(path: Path, size: int, head: bytes, block: Callable[[int], bytes], tail: bytes = b"") -> None:
    """``head``, then blocks from ``block(i)`` up to ``size`` bytes in all, then ``tail``."""
    with open(path, "wb") as fh:
        fh.write(head)
        left, i = size - len(head) - len(tail), 0
        while left > 0:
            data = block(i)[:left]
            fh.write(data)
            left -= len(data)
            i += 1
        fh.write(tail)


def write_case(case: str, folder: Path, size: int, seed: int = 0) -> Path:
    """One junk input of about ``size`` bytes (the cases of :data:`CASES`)."""
    rng = np.random.default_rng(seed)
    lines = _printable_lines(rng, BLOCK, commas=case == "csv_rows")  # one block, repeated
    rand = lambda i: rng.bytes(BLOCK)  # noqa: E731
    path = folder / {"jsonl_short": "a.jsonl", "jsonl_huge": "a.jsonl", "csv_rows": "a.csv", "csv_cell": "a.csv",
                     "ldpe_random": "a.ldpe", "ldpe_magics": "a.ldpe", "ldpe_magics_v1": "a.ldpe",
                     "parquet_random": "a.parquet"}[case]
    if case in ("jsonl_short", "csv_rows"):
        _fill(path, size, b"spec,metric,window,report\n" if case == "csv_rows" else b"", lambda i: lines, b"\n")
    elif case == "jsonl_huge":
        _fill(path, size, b"", lambda i: b"x" * BLOCK, b"\n")
    elif case in ("ldpe_magics", "ldpe_magics_v1"):  # every 4 or 5 bytes a false frame start
        unit = b"LDPB" if case == "ldpe_magics" else b"LDPB\x01"
        _fill(path, size, b"", lambda i: unit * (BLOCK // len(unit)))
    elif case == "csv_cell":
        _fill(path, size, b'spec,metric,window,report\n0123456789abcdef,m,1,"', lambda i: b'x""' * (BLOCK // 3),
              b'"\n')
    else:
        _fill(path, size, b"", rand)
    return path


CASES = ("jsonl_short", "jsonl_huge", "csv_rows", "csv_cell", "ldpe_random", "ldpe_magics", "ldpe_magics_v1",
         "parquet_random")


def run_case(case: str, size: int, seed: int = 0, timeout: float = 600.0) -> dict[str, Any]:
    """Write the case's input, run ``ldp fold`` on it (killed after ``timeout`` s), return time,
    peak RSS and the summary."""
    with tempfile.TemporaryDirectory(prefix="ldp-hostile-") as tmp:
        path = write_case(case, Path(tmp), size, seed)
        # -P: the installed ldp, not a source tree in the current directory (benchmark.py --source puts the
        # working tree on PYTHONPATH, inherited)
        cmd = [sys.executable, "-P", "-m", "ldp.cli", "fold", os.fspath(path), "--spec", os.fspath(SPEC),
               "--out", os.fspath(Path(tmp) / "job"), "-q", "--json"]
        t0 = time.perf_counter()
        with open(Path(tmp) / "stdout", "w+b") as out, open(Path(tmp) / "stderr", "w+b") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err)
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage (peak RSS)
            timer.cancel()
            seconds = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        rss = _peak_rss_mib(usage)
        rejects = Path(tmp) / "job" / "rejects.jsonl"
        row: dict[str, Any] = {"bytes": path.stat().st_size, "seconds": round(seconds, 2), "peak_rss_mib": rss,
                               "exit": proc.returncode,
                               "rejects_file_bytes": rejects.stat().st_size if rejects.exists() else 0}
        if proc.returncode == 0:
            s = json.loads(stdout)
            row.update(records=s["records"], accepted=s["accepted"], rejected=s["rejected"], blank=s["blank"])
        else:
            row["error"] = stderr.decode(errors="replace").strip()[-300:]
        row["meets_target"] = bool(seconds <= TIME_LIMIT and rss <= RSS_LIMIT_MIB
                                   and (proc.returncode == 0 and row["accepted"] == 0 or
                                        proc.returncode == 2 and case == "parquet_random"))
        return row


def _peak_rss_mib(usage: Any) -> float:
    return round(usage.ru_maxrss / 1024, 1)  # KiB on Linux


def run(cases: list[str], size: int, seed: int = 0, timeout: float = 600.0,
        progress: bool | None = None) -> dict[str, Any]:
    """:func:`run_case` for each case; ``progress``: a bar over the cases on stderr (:mod:`ldp.display.progress`)."""
    from ldp.display.progress import iterate

    return {"size_bytes": size, "limits": {"seconds": TIME_LIMIT, "peak_rss_mib": RSS_LIMIT_MIB},
            "cases": {c: run_case(c, size, seed, timeout)
                      for c in iterate(cases, desc="bench_hostile", enabled=progress, unit="case")}}


def parse_size(text: str) -> int:
    """``1G``, ``64M``, ``512K`` or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def register(b: ModuleType) -> None:
    """Add the ``ingest_hostile`` section to the benchmark module ``b``."""

    @b.benchmark("ingest_hostile")
    def ingest_hostile(ctx: Any) -> dict[str, Any]:
        """Junk inputs of every format: all rejected and counted, time and peak RSS bounded."""
        size = (16 if ctx.quick else 64) << 20
        out = run(list(CASES), size, ctx.seed)
        for case, row in out["cases"].items():
            row["time_check"] = ctx.judge(f"{case}.seconds", row["seconds"], "<=", TIME_LIMIT * size / (1 << 30), "s")
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, default=1 << 30, help="bytes per junk input (1G, 64M, ...)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {','.join(CASES)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)} (known: {', '.join(CASES)})")
    print(json.dumps(run(cases, args.size, args.seed, args.timeout, False if args.quiet else None), indent=1))


if __name__ == "__main__":
    main()
