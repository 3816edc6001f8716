"""Aggregation against the hardware limit: sections and helpers of ``simulations/benchmark.py``.

Targets (issue 16, item 6), single core, folded from binary frames (``add_bytes``: CRC-32, zero-copy
parsing, validation and the fold): RAPPOR (k=128, h=2, m=64) >= 5e7 reports/s and CMS (k=256,
m=1024) >= 1e7 reports/s. The reference is the machine's memory read bandwidth, measured in the same
run (:func:`hardware`, also the ``memory_bandwidth`` section): every aggregate section that uses
:func:`fold_section` reports its fold rate in bytes/s and as a fraction of that bandwidth, and of
``zlib.crc32``'s rate (a frame's bytes must all pass through its CRC before they are folded).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ldp.batch.bits import FOLD_KERNEL

_HARDWARE: dict[str, Any] = {}


def _best_rate(fn: Callable[[], Any], nbytes: int, repeats: int) -> float:
    """Bytes/s of the best of ``repeats`` timed calls (after one warm-up)."""
    fn()
    best = min(_timed(fn) for _ in range(repeats))
    return nbytes / best


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def hardware(ctx: Any) -> dict[str, Any]:
    """Single-core memory read bandwidth (``np.sum`` over a uint64 array far larger than the caches),
    copy bandwidth (``np.copyto``: bytes read) and ``zlib.crc32`` rate; measured once per run."""
    if not _HARDWARE:
        nbytes = (64 if ctx.quick else 256) << 20
        a = np.ones(nbytes // 8, np.uint64)
        out = np.empty_like(a)
        blob = a.tobytes()
        repeats = max(3, ctx.sizes.repeats)
        _HARDWARE.update({
            "array_mib": nbytes >> 20,
            "read_bytes_per_s": _best_rate(lambda: a.sum(), nbytes, repeats),
            "copy_read_bytes_per_s": _best_rate(lambda: np.copyto(out, a), nbytes, repeats),
            "crc32_bytes_per_s": _best_rate(lambda: zlib.crc32(blob), nbytes, repeats),
            "method": "best of repeated single-threaded passes: np.sum (read), np.copyto (read+write), zlib.crc32",
        })
    return _HARDWARE


def fold_section(b: ModuleType, ctx: Any, make_aggregate: Callable[[], Any], batch: Any, target_rate: float | None,
                 bytes_target: float | None = None) -> dict[str, Any]:
    """``b.aggregate_section`` plus bytes/s, the fraction of the read bandwidth and of the CRC-32 rate,
    and (``bytes_target``) a judged target on ``add_bytes`` reports/s."""
    out = b.aggregate_section(ctx, make_aggregate, batch, target_rate)
    hw = hardware(ctx)
    n = max(out["n"], 1)
    per_report = {"add_batch": sum(np.asarray(c).nbytes for c in batch.columns.values()) / n,
                  "add_bytes": out["to_bytes"]["bytes"] / n}
    for key, size in per_report.items():
        bps = out[key]["reports_per_s"]["best"] * size
        out[key].update({"bytes_per_report": size, "bytes_per_s": bps,
                         "of_read_bandwidth": bps / hw["read_bytes_per_s"]})
    out["add_bytes"]["of_crc32_rate"] = out["add_bytes"]["bytes_per_s"] / hw["crc32_bytes_per_s"]
    out["fold_kernel"] = FOLD_KERNEL
    out["read_bandwidth_bytes_per_s"] = hw["read_bytes_per_s"]
    if bytes_target is not None:
        out["add_bytes"].update(ctx.judge("add_bytes.reports_per_s", out["add_bytes"]["reports_per_s"]["best"], ">=",
                                          bytes_target, "reports/s"))
    return out


def register(b: ModuleType) -> None:
    """Add the hardware reference section to the benchmark module ``b``."""

    @b.benchmark("memory_bandwidth")
    def memory_bandwidth(ctx: Any) -> dict[str, Any]:
        out = dict(hardware(ctx))
        out["fold_kernel"] = FOLD_KERNEL
        out["note"] = ("the reference of the *_aggregate sections' of_read_bandwidth ratios (measured once per run, "
                       "when first needed); fold_kernel 'numpy' means the optional C extension is not built")
        return out
