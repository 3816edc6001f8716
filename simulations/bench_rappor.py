"""RAPPOR sections of ``simulations/benchmark.py`` (registered by :func:`register`; not run alone).

Targets (issue 4): batch encode k=128, h=2, m=64 >= 2e6 reports/s; one client report <= 30 µs;
aggregation of packed reports >= 1e7 reports/s; decode with 10,000 candidates <= 10 s and
<= 2 GB peak memory.
"""

from __future__ import annotations

import os
import tempfile
import time
from types import ModuleType
from typing import Any

import numpy as np

from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.encoders.rappor import RapporEncoder, RapporParams
from ldp.simulation import zipf

PARAMS = RapporParams(128, 2, 64, 0.25, 0.75, 0.5)  # Chrome's NORMAL_NOISE with 128-bit filters
CANDIDATES = [f"https://site{i}.example/" for i in range(1000)]


class _WithCandidates:
    """Adapter so the generic ``batch_encode_section`` can call ``encode_batch(values, rng)``."""

    def __init__(self, encoder: RapporEncoder, candidates: list[str]) -> None:
        self.params, self._enc, self._cands = encoder.params, encoder, candidates

    def encode_batch(self, values: Any, rng: Any) -> Any:
        return self._enc.encode_batch(values, rng, candidates=self._cands)


def register(b: ModuleType) -> None:
    """Add the RAPPOR sections to the benchmark module ``b``."""

    def values(ctx: Any) -> np.ndarray:
        return ctx.rng(40).integers(0, len(CANDIDATES), ctx.sizes.batch_n, dtype=np.uint16)

    def encoder() -> _WithCandidates:
        enc = _WithCandidates(RapporEncoder(PARAMS, secret=b"bench", cohort=0), CANDIDATES)
        enc.encode_batch(np.zeros(1, np.uint16), 0)  # hash the candidates once, outside the timing
        return enc

    @b.benchmark("rappor_batch_encode")
    def rappor_batch_encode(ctx: Any) -> dict[str, Any]:
        return b.batch_encode_section(ctx, encoder(), {"uint16": values(ctx)}, target_rate=2e6)

    @b.benchmark("rappor_aggregate")
    def rappor_aggregate(ctx: Any) -> dict[str, Any]:
        batch = encoder().encode_batch(values(ctx), ctx.rng(41))
        return b.aggregate_section(ctx, lambda: RapporAggregate(PARAMS), batch, target_rate=1e7)

    @b.benchmark("rappor_client_report")
    def rappor_client_report(ctx: Any) -> dict[str, Any]:
        s = ctx.sizes
        out: dict[str, Any] = {"params": PARAMS.to_dict(), "rng": "None (OS CSPRNG via secrets)"}
        for mode in ("ldp", "google"):
            params = PARAMS if mode == "ldp" else RapporParams(32, 2, 64, 0.25, 0.75, 0.5, mode="google")
            make = lambda **kw: RapporEncoder(params, secret=b"client secret", cohort=7, **kw)  # noqa: E731
            b.log(f"  {mode}: {s.client_calls:,} calls, no ledger")
            row = b.client_path_timing(make(), "https://site1.example/", s.client_calls, s.client_batch)
            row["params"] = params.to_dict()
            row.update(ctx.judge(f"{mode}.us_mean", row["us_mean"], "<=", 30.0, "µs/report"))
            with tempfile.TemporaryDirectory(prefix="ldp-bench-") as tmp:
                row["with_ledger"] = {
                    kind: b.ledger_path_timing(lambda led: make(ledger=led, metric="bench"), "https://site1.example/",
                                               ":memory:" if kind == "memory" else os.path.join(tmp, "l.sqlite"),
                                               calls, s.ledger_blocks, True)
                    for kind, calls in (("memory", s.ledger_memory_calls), ("file", s.ledger_file_calls))}
            out[mode] = row
        out["note"] = "with_ledger: memoized charge (ε₁ per report, capped at ε∞ per value) per report"
        return out

    @b.benchmark("rappor_decode")
    def rappor_decode(ctx: Any) -> dict[str, Any]:
        n_true, n_cands, n = 100, 10_000, 10**6
        truth = [f"v{i}" for i in range(1, n_true + 1)]
        counts = zipf(n_true, 1.0).counts(n, exact=True)
        cands = truth + [f"v{i}" for i in range(n_true + 1, n_cands + 1)]
        agg = RapporAggregate.simulate(PARAMS, counts, ctx.rng(42), values=truth)
        b.log(f"  decode: {n_cands:,} candidates, n={n:,}")

        def run(_: Any) -> Any:
            return decode(agg, cands)

        rss_before = b.maxrss_kib()
        timing, est = b.time_runs(run, max(1, ctx.sizes.repeats // 2))
        t0 = time.perf_counter()
        CandidateMap.from_candidates(PARAMS, cands)
        map_seconds = time.perf_counter() - t0
        peak = b.tracemalloc_peak_mib(lambda: decode(agg, cands))
        detected = set(est.detected_items())
        row: dict[str, Any] = {
            "params": PARAMS.to_dict(), "n": n, "candidates": n_cands, "true_values": n_true,
            "population": "zipf(s=1) over v1..v100, exact counts", "seconds": timing,
            "of_which_candidate_hashing_s": map_seconds, "tracemalloc_peak_mib": peak,
            "ru_maxrss_kib": {"before": rss_before, "after": b.maxrss_kib()},
            "detected": len(detected), "false_positives": len(detected - set(truth)),
            "summary": est.summary,
        }
        row.update(ctx.judge("seconds", timing["best_s"], "<=", 10.0, "s"))
        row.update({"memory": ctx.judge("tracemalloc_peak_mib", peak, "<=", 2048.0, "MiB")})
        return row
