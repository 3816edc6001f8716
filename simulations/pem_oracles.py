#!/usr/bin/env python3
"""PEM's oracle choice: recall@10/50/100 and false strings of ``oracle="olh"`` against ``oracle="auto"``
(GRR for the groups whose prefix domain is small enough that GRR's variance is the smaller).

    python simulations/pem_oracles.py                          # n 1e5; ε 6, 8; start/step 8/8 and 4/4; 5 reps
    python simulations/pem_oracles.py --ns 1e5,1e6 --epsilons 6 --schedules 8:8 --reps 3
    python simulations/pem_oracles.py --max-length 2 --ns 1e4,1e5 --epsilons 8,11 --schedules 8:8

``--max-length m`` (default 10) cuts the population's words to their first ``m`` letters (merging the words
that become one string: the truth as a client with ``max_length=m, truncate=True`` encodes it), so a
short-string collection (two-letter codes, say) where GRR can serve the last groups too.

The population, the scores and the summary are ``pem_discovery.py``'s (imported, unchanged): its
``english`` list (wordfreq when installed, else the synthetic English-like list), strings cut to 10 bytes,
``discover(alphabet=a–z)``. Both oracles see the same population and, per repetition, the same generator
seed, so the difference is the oracle's. Prints the means over repetitions.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import pem_discovery as pd  # noqa: E402

from ldp.simulation.collect import comma_list  # noqa: E402


@dataclass(frozen=True)
class Cut:
    """``pem_discovery``'s population with every word cut to ``max_length`` letters (what ``score`` reads)."""

    n: int
    words: list[str]
    counts: list[int]
    encoded: dict[str, int]

    @classmethod
    def of(cls, pop: Any, max_length: int) -> Cut:
        merged: dict[str, int] = {}
        for w, c in pop.encoded.items():
            merged[w[:max_length]] = merged.get(w[:max_length], 0) + c
        enc = dict(sorted(merged.items(), key=lambda kv: -kv[1]))
        return cls(pop.n, list(enc), list(enc.values()), enc)

    def top(self, k: int) -> list[str]:
        return list(self.encoded)[:k]


def rep(pop: Any, epsilon: float, start: int, step: int, oracle: str, r: int, seed: int, top_k: int,
        max_length: int = 10) -> dict[str, Any]:
    """One collection and its discovery (``pem_discovery.pem_rep`` with the schedule and the oracle)."""
    import numpy as np

    from ldp.decoders.pem import PEMAggregate
    from ldp.encoders.pem import PEMParams

    params = PEMParams(epsilon, max_length=max_length, truncate=True, top_k=top_k, start_bits=start, step_bits=step,
                       oracle=oracle)
    gen = np.random.default_rng([seed, pop.n, round(epsilon * 1000), r, start, step])
    agg = PEMAggregate.simulate(params, pop.counts, gen, values=pop.words)
    t0 = time.perf_counter()
    found = agg.discover(alphabet=pd.ALPHABET)
    row = pd.score(f"{oracle} {start}/{step} {params.oracle_summary}", pop, epsilon, r, found.strings.items,
                   time.perf_counter() - t0)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=comma_list(int), default=[10**5])
    ap.add_argument("--epsilons", type=comma_list(float), default=[6.0, 8.0])
    ap.add_argument("--schedules", type=comma_list(str), default=["8:8", "4:4"], help="start_bits:step_bits")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--top-k", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-length", type=int, default=10, help="cut the words to this many letters (default 10)")
    args = ap.parse_args(argv)
    sfp_args = pd.sfp.parse_args(["--no-pure", "--words", "english", "--seed", str(args.seed), "--no-plots"])
    words, weights, described = pd.sfp.word_list(sfp_args)
    rows = []
    for n in args.ns:
        pop = pd.population(n, words, weights, args.seed)
        if args.max_length < 10:
            pop = Cut.of(pop, args.max_length)
        for eps in args.epsilons:
            for sched in args.schedules:
                start, step = (int(x) for x in sched.split(":"))
                for oracle in ("olh", "auto"):
                    rows += [rep(pop, eps, start, step, oracle, r, args.seed, args.top_k, args.max_length)
                             for r in range(args.reps)]
    print(f"population: {described}, cut to {args.max_length} letters; top_k={args.top_k}, alphabet a-z; "
          f"{args.reps} repetitions")
    print(f"{'oracle schedule groups':28} {'n':>8} {'ε':>4} {'rec@10':>7} {'rec@50':>7} {'rec@100':>7} {'found':>6} "
          f"{'false':>6} {'sec':>5}")
    for s in pd.summarize(rows):
        print(f"{s['method']:28} {s['n']:>8} {s['epsilon']:>4g} {s['recall_top10']:>7.2f} {s['recall_top50']:>7.2f} "
              f"{s['recall_top100']:>7.2f} {s['discovered']:>6.1f} {s['false_found']:>6.2f} "
              f"{s['seconds_discover']:>5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
