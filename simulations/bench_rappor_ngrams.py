"""RAPPOR with unknown strings: sections of ``simulations/benchmark.py`` (registered by :func:`register`).

Timed: the per-report client encode with the CSPRNG, batch encoding, and discovery on the small case of
``tests/protocols/test_rappor_ngrams.py`` (L = 6, n = 2, 8 letters, 10 strings, 10^5 clients): strings found,
false strings (the judged targets: all 10 found, 0 false).
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from ldp.encoders.rappor_ngrams import RapporNgramsEncoder, RapporNgramsParams

PARAMS = RapporNgramsParams(32, 2, 32, 0.25, 0.75, 0.25, 16, 2, 16, 0.25, 0.75, 0.25, n=2, max_length=6,
                            alphabet="abcdefgh")
WORDS = ["abc", "bad", "cafe", "dead", "face", "beef", "fed", "gag", "hag", "added"]
SHARES = [0.2, 0.15, 0.12, 0.1, 0.1, 0.09, 0.08, 0.07, 0.05, 0.04]


def small_case(seed: int = 0, n: int = 100_000) -> dict[str, Any]:
    """Discovery on the small case: seconds, strings found and false strings."""
    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate

    counts = dict(zip(WORDS, np.round(np.array(SHARES) * n).astype(int).tolist(), strict=True))
    agg = RapporNgramsAggregate.simulate(PARAMS, counts, np.random.default_rng([seed, 0x4E47]))
    start = time.perf_counter()
    found = agg.discover()
    seconds = time.perf_counter() - start
    got = set(found.strings.items)
    return {"discover_seconds": seconds, "found": len(got & set(WORDS)), "false": len(got - set(WORDS)),
            "candidates": len(found.candidates)}


def register(b: ModuleType) -> None:
    """Add the RAPPOR-with-unknown-strings sections to the benchmark module ``b``."""

    @b.benchmark("rappor_ngrams_discovery")
    def rappor_ngrams_discovery(ctx: Any) -> dict[str, Any]:
        out = small_case(ctx.seed)
        out["all_found"] = ctx.judge("rappor_ngrams_found", out["found"], ">=", len(WORDS), "strings")
        out["no_false"] = ctx.judge("rappor_ngrams_false", out["false"], "<=", 0, "strings")
        return out

    @b.benchmark("rappor_ngrams_encode")
    def rappor_ngrams_encode(ctx: Any) -> dict[str, Any]:
        values = ctx.rng(80).integers(0, len(WORDS), ctx.sizes.batch_n, dtype=np.uint8)
        enc = RapporNgramsEncoder(PARAMS)
        start = time.perf_counter()
        enc.encode_batch(values, ctx.rng(81), candidates=WORDS)
        batch_s = time.perf_counter() - start
        reps = 2000
        start = time.perf_counter()
        for i in range(reps):
            enc.encode(WORDS[i % len(WORDS)])
        return {"batch_reports_per_s": values.size / batch_s,
                "csprng_encode_us": (time.perf_counter() - start) / reps * 1e6}
