"""Aggregation against the hardware limit: sections and helpers of ``simulations/benchmark.py``.

Targets (issue 16, item 6), single core, folded from binary frames (``add_bytes``: CRC-32, zero-copy
parsing, validation and the fold): RAPPOR (k=128, h=2, m=64) >= 5e7 reports/s and CMS (k=256,
m=1024) >= 1e7 reports/s. The reference is the machine's memory read bandwidth, measured in the same
run (:func:`hardware`, also the ``memory_bandwidth`` section): every aggregate section that uses
:func:`fold_section` reports its fold rate in bytes/s and as a fraction of that bandwidth, and of
``zlib.crc32``'s rate (a frame's bytes must all pass through its CRC before they are folded).

Issue 61, item 1 (the ``fold_bandwidth`` section): each fold of 10^6 reports (RAPPOR k=128, h=2, m=16; CMS and HCMS
k=256, m=1024) timed beside a numpy read (``.sum()`` of the bytes viewed as uint64) of the very bytes it folds, in
this process, each run after the caches were emptied (a 96 MiB read in between: both read from memory, as an
ingest service folding fresh batches does); target: fold >= 0.25 of the read's rate for ``add(batch)``. The same ratio
with the bytes left in the caches is reported beside it, as are ``add_bytes`` (whose CRC-32 alone runs at
``crc32_of_read`` of the read's rate) and the compiled kernel alone (cold and warm). Every pair also reports
``of_read_cpu``, the ratio of the best thread CPU times (``time.thread_time``): on a machine others load, time spent
descheduled is left out of both (the judged ratio stays the wall-clock one).
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


FOLD_N = 10**6
_EVICT: list[np.ndarray] = []


def _read(*buffers: Any) -> int:
    """A numpy read of every byte of ``buffers``: ``.sum()`` of each one's bytes viewed as uint64 (and its tail)."""
    total = 0
    for buf in buffers:
        a = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf.reshape(-1).view(np.uint8)
        whole = a.size // 8 * 8
        total += int(a[:whole].view(np.uint64).sum()) + int(a[whole:].sum())
    return total


def _evict() -> None:
    """Empty the caches of the bytes read before: read 96 MiB of other memory (3x this machine class's L3)."""
    if not _EVICT:
        _EVICT.append(np.ones(12 << 20, np.uint64))
    _EVICT[0].sum()


def paired_runs(fold: Callable[[Any], Any], setup: Callable[[], Any], buffers: tuple[Any, ...], repeats: int,
                cold: bool) -> dict[str, Any]:
    """Best times of ``fold(setup())`` and of :func:`_read` of ``buffers`` (the same bytes), alternated, each run
    after :func:`_evict` when ``cold``; ``of_read``: the read's time over the fold's (the fold's rate as a share of
    the read's); ``of_read_cpu``: the same of the best thread CPU times."""
    import gc

    folds: list[float] = []
    reads: list[float] = []
    cpu: dict[str, list[float]] = {"fold": [], "read": []}
    for i in range(repeats + 1):
        arg = setup()
        for runs in (folds, reads):
            if cold:
                _evict()
            gc.disable()
            try:
                c0, t0 = time.thread_time(), time.perf_counter()
                fold(arg) if runs is folds else _read(*buffers)
                dt, dc = time.perf_counter() - t0, time.thread_time() - c0
            finally:
                gc.enable()
            if i:  # the first round warms up
                runs.append(dt)
                cpu["fold" if runs is folds else "read"].append(dc)
    return {"fold_s": min(folds), "read_s": min(reads), "of_read": min(reads) / min(folds),
            "of_read_cpu": min(cpu["read"]) / max(min(cpu["fold"]), 1e-9), "fold_runs_s": folds, "read_runs_s": reads}


def fold_bandwidth(b: ModuleType, ctx: Any) -> dict[str, Any]:
    """Issue 61, item 1: the folds beside a numpy read of the same bytes (module docstring)."""
    import os

    from ldp.batch import bits
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.sketch import SketchAggregate
    from ldp.encoders.cms import CmsEncoder, CmsParams
    from ldp.encoders.hcms import HcmsEncoder, HcmsParams
    from ldp.encoders.rappor import RapporEncoder, RapporParams

    rng = ctx.rng(61)
    rappor = RapporParams(128, 2, 16, 0.25, 0.75, 0.5)
    urls, words = [f"https://site{i}.example/" for i in range(1000)], [f"emoji-{i:04d}" for i in range(2000)]
    cases: dict[str, tuple[Any, Any, Any, list[str]]] = {
        "rappor_k128_m16": (rappor, RapporAggregate, RapporEncoder(rappor, secret=b"bench", cohort=0), urls),
        "cms_k256_m1024": (CmsParams(4.0, 256, 1024), SketchAggregate, CmsEncoder(CmsParams(4.0, 256, 1024)), words),
        "hcms_k256_m1024": (HcmsParams(4.0, 256, 1024), SketchAggregate, HcmsEncoder(HcmsParams(4.0, 256, 1024)),
                            words),
    }
    repeats = max(3, ctx.sizes.repeats)
    engines = bits.fold_engines()
    out: dict[str, Any] = {"n": FOLD_N, "fold_kernel": bits.FOLD_KERNEL, "engine": engines[-1] if engines else None,
                           "load_average": os.getloadavg(), "repeats": repeats, "cases": {}}
    for name, (params, aggregate, encoder, cands) in cases.items():
        b.log(f"  {name}: encode {FOLD_N:,} reports")
        batch = encoder.encode_batch(rng.integers(0, len(cands), FOLD_N), rng, candidates=cands)
        data, columns = batch.to_bytes(), tuple(batch.columns.values())

        fresh, folded, add_batch, add_bytes, frames = _runners(params, aggregate, batch, data)
        row: dict[str, Any] = {"bytes_per_report": {"add_batch": sum(c.nbytes for c in columns) / FOLD_N,
                                                    "add_bytes": len(data) / FOLD_N}}
        for cold in (True, False):
            b.log(f"    add(batch), add_bytes ({'cold' if cold else 'warm'} caches)")
            key = "cold" if cold else "warm"
            row[f"add_batch_{key}"] = paired_runs(add_batch, folded, columns, repeats, cold)
            row[f"add_bytes_{key}"] = paired_runs(add_bytes, folded, (data,), repeats, cold)
        if name.startswith("rappor"):  # a fresh aggregate also makes its first choices (16 cohorts here)
            row["add_batch_fresh_cold"] = paired_runs(add_batch, fresh, columns, repeats, True)
        row["crc32_of_read"] = paired_runs(zlib.crc32, frames, (data,), repeats, True)["of_read"]
        row["kernel_cold"] = _kernel_runs(name, batch, params, repeats, True)
        row["kernel_warm"] = _kernel_runs(name, batch, params, repeats, False)
        if name.startswith("rappor"):  # what the per-report statistics cost: the fold alone, no histogram or tests
            row["kernel_fold_only_cold"] = _kernel_runs(name, batch, params, repeats, True, statistics=False)
        if name.startswith("hcms"):  # the barest scattered increments, in C, beside a C read of the same bytes
            row["floor"] = scatter_floor(batch, params, repeats, row["add_batch_cold"]["read_s"])
        if name.startswith("rappor"):  # the fold and its statistics, each alone and together, in C
            row["floor"] = rappor_floor(batch, params, repeats, row["add_batch_cold"]["read_s"])
        row.update(ctx.judge(f"{name}.add_batch.of_read_cold", row["add_batch_cold"]["of_read"], ">=", 0.25,
                             "fold rate / numpy read rate of the same bytes"))
        out["cases"][name] = row
    return out


def _runners(params: Any, aggregate: Any, batch: Any, data: bytes) -> tuple[Any, ...]:
    """A fresh aggregate; one that has folded the batch once (steady state: RAPPOR's first choices of bits, per
    aggregate, are made); ``add(batch)`` and ``add_bytes(frames)`` on an aggregate; the frames."""

    def fresh() -> Any:
        return aggregate(params)

    def folded() -> Any:
        agg = aggregate(params)
        agg.add(batch)
        return agg

    def add_batch(agg: Any) -> Any:
        return agg.add(batch)

    def add_bytes(agg: Any) -> Any:
        return agg.add_bytes(data)

    return fresh, folded, add_batch, add_bytes, lambda: data


def _kernel_runs(name: str, batch: Any, params: Any, repeats: int, cold: bool,
                 statistics: bool = True) -> dict[str, Any] | None:
    """The compiled kernel alone on the batch's columns (RAPPOR: the fold with its statistics, the tests counted per
    cohort, as ``add`` runs it; or, ``statistics=False``, the fold alone), beside the read of the same bytes; None
    without the kernel."""
    from ldp.batch import bits

    fk = bits._foldkernel
    if fk is None:
        return None
    cols = batch.columns
    if name.startswith("rappor"):
        m, k = params.num_cohorts, params.num_bloombits
        c, r = bits.group_column(cols["cohort"]), cols["bits"]
        tested = np.frombuffer(np.random.default_rng(0).bytes((c.size + 7) // 8), np.uint8)
        masks, chosen = np.zeros((m, 2, r.shape[1]), np.uint8), np.ones(m, np.uint8)

        def fold(_: Any) -> None:
            if not statistics:
                fk.fold_rows(c, c.itemsize, r, r.shape[1], k, np.zeros(m, np.int64), np.zeros((m, k), np.int64),
                             None, None, None, 0, None, None)
                return
            fk.fold_rows(c, c.itemsize, r, r.shape[1], k, np.zeros(m, np.int64), np.zeros((m, k), np.int64),
                         np.zeros(k + 1, np.int64), tested, masks, 2, chosen, np.zeros((m, 3), np.int64))
    elif "bits" in cols:
        def fold(_: Any) -> None:
            bits.add_ones_by_group(cols["hash"], cols["bits"], np.zeros(params.num_hashes, np.int64),
                                   np.zeros((params.num_hashes, params.width), np.int64))
    else:
        def fold(_: Any) -> None:
            bits.add_signs_by_group(cols["hash"], cols["row"], cols["bit"], np.zeros(params.num_hashes, np.int64),
                                    np.zeros((params.num_hashes, params.width), np.int64))
    return paired_runs(fold, lambda: None, tuple(cols.values()), repeats, cold)


def _run_floor(source: str, payload: bytes, repeats: int, exe: Any = None) -> dict[str, Any] | None:
    """Build ``simulations/<source>`` with the system's ``cc`` (-O2 -march=native; ``exe``: already built), run it on
    ``payload`` (its input file) and return its line of JSON; None without a C compiler."""
    import json
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None and exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "input.bin"
        if exe is None and cc is not None:
            exe = Path(tmp) / Path(source).stem
            subprocess.run([cc, "-O2", "-march=native", "-o", str(exe), str(Path(__file__).with_name(source))],
                           check=True)
        data.write_bytes(payload)
        out: dict[str, Any] = json.loads(subprocess.run([str(exe), str(data), str(repeats)], check=True,
                                                        capture_output=True, text=True).stdout)
    out.pop("sink")
    return out


def _against(out: dict[str, Any], loops: tuple[str, ...], read_s: float | None) -> dict[str, Any]:
    """``out`` with its C read as ``c_read_s``, ``read_s`` the read judged against (the numpy one when given), each
    loop not run (-1) as None, and ``of_read``: each loop's rate as a share of that read's."""
    out["c_read_s"] = out.pop("read_s")
    out["read_s"] = out["c_read_s"] if read_s is None else read_s
    for k in loops:
        if out[f"{k}_s"] < 0:
            out[f"{k}_s"] = None
    out["of_read"] = {k: out["read_s"] / out[f"{k}_s"] for k in loops if out[f"{k}_s"]}
    return out


def scatter_floor(batch: Any, params: Any, repeats: int, read_s: float | None = None,
                  exe: Any = None) -> dict[str, Any] | None:
    """The floor under an exact HCMS fold (``simulations/fold_floor.c``): the best times of the barest loops that add
    each report into its cell (int32 sums and the counts; int16 sums alone; int16 sums in two passes, split by hash
    first so that each scatter stays in L1, ``part16``, None when its keys do not fit 16 bits; the reports cold, the
    table in the caches) and of a C read of the same bytes; ``of_read`` as :func:`_against`. None without a C
    compiler."""
    cols = batch.columns
    g, c, bit = (np.ascontiguousarray(cols[k], t) for k, t in (("hash", np.uint8), ("row", np.uint16),
                                                                  ("bit", np.uint8)))
    shape = np.array([params.num_hashes, params.width], np.uint32)
    out = _run_floor("fold_floor.c", np.uint64(g.size).tobytes() + shape.tobytes() + g.tobytes() + c.tobytes()
                     + bit.tobytes(), repeats, exe)
    return None if out is None else _against(out, ("scatter32", "scatter16", "part16"), read_s)


def rappor_floor(batch: Any, params: Any, repeats: int, read_s: float | None = None, exe: Any = None,
                 seed: int = 0) -> dict[str, Any] | None:
    """The parts of RAPPOR's fold with its statistics, each alone and together (``simulations/rappor_floor.c``): the
    fold into byte lanes (8 copies a cohort), the statistics alone (the histogram, the tests of a fair-coin half
    against two random sets a cohort, of ``cooccurrence_sizes`` bits), both in one pass, and a C read of the same
    bytes; ``of_read`` as :func:`_against`. None without a C compiler, or for rows of more than 16 bytes (k > 128),
    or more than 256 cohorts."""
    from ldp.batch.rappor_evidence import cooccurrence_sizes

    k, m = params.num_bloombits, params.num_cohorts
    if k > 128 or m > 256:
        return None
    cohorts, bits_col = (np.ascontiguousarray(batch.columns[c], np.uint8) for c in ("cohort", "bits"))
    n = cohorts.size
    rows = np.zeros((n, 16), np.uint8)  # the program's rows are 16 bytes
    rows[:, :bits_col.shape[1]] = bits_col
    rng = np.random.default_rng(seed)
    sets = np.zeros((m, 2, 128), bool)  # a set left empty (fewer sizes) is held by every row
    for g in range(m):
        for j, size in enumerate(cooccurrence_sizes(params)[:2]):
            sets[g, j, rng.choice(k, size, replace=False)] = True
    payload = (np.uint64(n).tobytes() + np.array([k, m], np.uint32).tobytes()
               + cohorts.tobytes() + rows.tobytes()
               + rng.bytes((n + 7) // 8) + np.packbits(sets, axis=2, bitorder="little").tobytes())
    out = _run_floor("rappor_floor.c", payload, repeats, exe)
    return None if out is None else _against(out, ("fold", "stats", "both"), read_s)


def register(b: ModuleType) -> None:
    """Add the hardware reference section and the folds' bandwidth section to the benchmark module ``b``."""

    @b.benchmark("memory_bandwidth")
    def memory_bandwidth(ctx: Any) -> dict[str, Any]:
        out = dict(hardware(ctx))
        out["fold_kernel"] = FOLD_KERNEL
        out["note"] = ("the reference of the *_aggregate sections' of_read_bandwidth ratios (measured once per run, "
                       "when first needed); fold_kernel 'numpy' means the optional C extension is not built")
        return out

    @b.benchmark("fold_bandwidth")
    def fold_bandwidth_section(ctx: Any) -> dict[str, Any]:
        return fold_bandwidth(b, ctx)
