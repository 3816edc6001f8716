"""PEM sections of ``simulations/benchmark.py`` (registered by :func:`register`).

Target (issue 21): PEM at n = 10^6, ε = 4, strings of up to 10 letters from an English word list
(wordfreq's if installed, else the synthetic English-like list of ``sfp_discovery.py``): recall@10 >= SFP's
at the same total ε (ε_word = ε_fragment = 2), 0 false strings, server time (``discover``) <= 10 s. Also
timed: batch encoding and the per-report client encode with the CSPRNG.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from ldp.encoders.pem import PEMEncoder, PEMParams

N, EPSILON = 1_000_000, 4.0


def target_run(reps: int = 1, seed: int = 0) -> dict[str, Any]:
    """The issue's PEM target against SFP on the same populations (``pem_discovery.py``'s repetitions)."""
    import pem_discovery as pd
    import sfp_discovery as sfp

    sfp_args = sfp.parse_args(["--no-pure", "--vocab", "5000", "--seed", str(seed), "--no-plots"])
    words, weights, described = sfp.word_list(sfp_args)
    pop = pd.population(N, words, weights, seed)
    pem = [pd.pem_rep(pop, EPSILON, rep, seed, 32) for rep in range(reps)]
    sfp_rows = [pd.sfp_rep(pop, EPSILON, rep, sfp_args) for rep in range(reps)]

    def worst(rows: list[dict[str, Any]], key: str, pick: Any) -> float:
        return float(pick(r[key] for r in rows))

    return {"population": described, "reps": reps,
            "pem_recall_top10_min": worst(pem, "recall_top10", min),
            "sfp_recall_top10_max": worst(sfp_rows, "recall_top10", max),
            "pem_recall_top50_mean": float(np.mean([r["recall_top50"] for r in pem])),
            "sfp_recall_top50_mean": float(np.mean([r["recall_top50"] for r in sfp_rows])),
            "pem_false_max": worst(pem, "false_found", max),
            "pem_seconds_max": worst(pem, "seconds_discover", max),
            "sfp_seconds_max": worst(sfp_rows, "seconds_discover", max)}


def register(b: ModuleType) -> None:
    """Add the PEM sections to the benchmark module ``b``."""

    @b.benchmark("pem_target")
    def pem_target(ctx: Any) -> dict[str, Any]:
        out = target_run(reps=1 if ctx.quick else 3, seed=ctx.seed)
        out["recall_top10_vs_sfp"] = ctx.judge("pem_recall_top10_minus_sfp",
                                               out["pem_recall_top10_min"] - out["sfp_recall_top10_max"], ">=", 0.0,
                                               "share")
        out["false_strings"] = ctx.judge("pem_false_strings", out["pem_false_max"], "<=", 0.0, "strings")
        out["server_seconds"] = ctx.judge("pem_discover_seconds", out["pem_seconds_max"], "<=", 10.0, "s")
        return out

    @b.benchmark("pem_encode")
    def pem_encode(ctx: Any) -> dict[str, Any]:
        params = PEMParams(EPSILON)
        words = ["the", "of", "and", "informal", "zebra"]
        values = ctx.rng(70).integers(0, len(words), ctx.sizes.batch_n, dtype=np.uint8)
        enc = PEMEncoder(params)
        start = time.perf_counter()
        enc.encode_batch(values, ctx.rng(71), candidates=words)
        batch_s = time.perf_counter() - start
        reps = 2000
        start = time.perf_counter()
        for i in range(reps):
            enc.encode(words[i % len(words)])
        return {"batch_reports_per_s": values.size / batch_s, "csprng_encode_us": (time.perf_counter() - start)
                / reps * 1e6}
