"""The ``ledger_batch`` section of ``simulations/benchmark.py`` (registered by :func:`register`).

Issue 16 item 4: one SQLite transaction per charged report, at most one fsync per report with the
file ledger, and batches of many metrics' reports in one transaction. Per charged report, with
caps on the metric and on the total: the ledger alone (``charge_atomically``) <= 30 µs in memory
and <= 1 ms with the file ledger; the same per report for batches of 10 (``charge_many``); and the
client runtime (``TelemetryClient.record`` one by one against ``record_many``, <= 1 ms per report
with the file). ``fsync_us``
is the cost of one ``os.fsync`` on the benchmark's disk, measured in the same run.
"""

from __future__ import annotations

import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

BATCH = 10


def fsync_us(folder: str, n: int = 40) -> dict[str, Any]:
    """µs of one sync on this disk, in a scratch file of ``folder`` (best, median of ``n``):
    ``os.fsync`` after overwriting 4 KiB in place, and ``os.fdatasync`` after appending 24 KiB to a
    growing file (what one charge's COMMIT does to a young WAL: 6 frames of a page and a header)."""
    path = os.path.join(folder, f".fsync-probe-{os.getpid()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    out: dict[str, Any] = {}
    try:
        probes = (("overwrite_4k_fsync", 4096, os.fsync), ("append_24k_fdatasync", 6 * 4120, os.fdatasync))
        for name, size, sync in probes:
            runs = []
            for i in range(n):
                where = (i % 16) * size if name.startswith("overwrite") else (16 + i) * size
                os.pwrite(fd, os.urandom(size), where)
                t0 = time.perf_counter()
                sync(fd)
                runs.append((time.perf_counter() - t0) * 1e6)
            out[name] = {"best": min(runs), "median": statistics.median(runs), "n": n}
    finally:
        os.close(fd)
        os.unlink(path)
    out["median"] = out["append_24k_fdatasync"]["median"]
    return out


def _per_call_us(fn: Callable[[], Any], calls: int, per_call: int = 1, blocks: int = 4) -> dict[str, float]:
    """µs per report of ``fn`` (which makes ``per_call`` reports): mean and best over ``blocks`` blocks."""
    fn()  # warm-up (statement cache, encoders, cohorts)
    size = max(1, calls // blocks)
    per_block = []
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(blocks):
            t0 = time.perf_counter()
            for _ in range(size):
                fn()
            per_block.append((time.perf_counter() - t0) / (size * per_call) * 1e6)
    finally:
        if was:
            gc.enable()
    return {"us_mean": statistics.fmean(per_block), "us_best_block": min(per_block),
            "reports": size * blocks * per_call}


def _spec() -> Any:
    from ldp.spec import CollectionSpec

    big = {"per_window": 1e9, "lifetime": 1e9}
    metrics = {f"m{i}": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 16},
                         "budget": {"per_report": 1.0, **big}} for i in range(BATCH)}
    return CollectionSpec.from_dict({"spec_version": 1, "name": "bench_ledger", "budget": big,
                                     "upload": {"min_interval_seconds": 0, "max_batch": 1000}, "metrics": metrics})


def register(b: ModuleType) -> None:
    """Add the ``ledger_batch`` section to the benchmark module ``b``."""

    @b.benchmark("ledger_batch")
    def ledger_batch(ctx: Any) -> dict[str, Any]:
        from ldp.client.runtime import TelemetryClient
        from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, PrivacyCost

        s = ctx.sizes
        big = PrivacyCost(1e9)
        policy = BudgetPolicy(per_window=big, lifetime=big)
        one = PrivacyCost(1.0)
        batch = [(f"m{i}", one) for i in range(BATCH)]
        spec = _spec()
        values = [(f"m{i}", i) for i in range(BATCH)]
        out: dict[str, Any] = {"caps": "per_window and lifetime ε=1e9 on every metric and on the total",
                               "batch": BATCH, "memory": {}, "file": {}}
        with tempfile.TemporaryDirectory(prefix="ldp-bench-ledger-") as tmp:
            out["fsync_us"] = fsync_us(tmp)
            for kind, calls in (("memory", s.ledger_memory_calls), ("file", s.ledger_file_calls)):
                path = ":memory:" if kind == "memory" else os.path.join(tmp, "ledger.db")
                b.log(f"  ledger {kind}: charge_atomically / charge_many x{BATCH}, {calls:,} reports")
                row: dict[str, Any] = {}
                with BudgetLedger(path, total=policy, metrics=dict.fromkeys(batch[0][:1], policy),
                                  default=policy) as ledger:
                    row["charge_atomically"] = _per_call_us(
                        lambda: ledger.charge_atomically("m0", one, lambda r, db: None), calls)
                    row["charge_many"] = _per_call_us(
                        lambda: ledger.charge_many(batch, lambda rs, db: None), calls, BATCH)
                state = os.path.join(tmp, f"client-{kind}.db") if kind == "file" else ":memory:"
                b.log(f"  client {kind}: record / record_many x{BATCH}, {calls:,} reports")
                with TelemetryClient(spec, state) as app:
                    row["record"] = _per_call_us(lambda: app.record("m1", 3), calls)
                    row["record_many"] = _per_call_us(lambda: app.record_many(values), calls, BATCH)
                target = 30.0 if kind == "memory" else 1000.0
                row["charge_atomically"].update(ctx.judge(f"{kind}.charge_atomically.us_mean",
                                                          row["charge_atomically"]["us_mean"], "<=", target,
                                                          "µs/report"))
                row["charge_many"].update(ctx.judge(f"{kind}.charge_many.us_per_report",
                                                    row["charge_many"]["us_mean"], "<=", target, "µs/report"))
                if kind == "file":  # the client path (envelope, outbox row) has no memory target of its own
                    row["record_many"].update(ctx.judge("file.record_many.us_per_report",
                                                        row["record_many"]["us_mean"], "<=", target, "µs/report"))
                if kind == "file":
                    row["record_over_fsync"] = row["record"]["us_mean"] / out["fsync_us"]["median"]
                out[kind] = row
        out["note"] = ("one BEGIN IMMEDIATE transaction per charge_atomically/record call and per batch of "
                       f"{BATCH} (charge_many/record_many); the file ledger is WAL with synchronous=FULL: one "
                       "fsync of the WAL per COMMIT, so a batch pays one fsync for all its reports.")
        return out
