#!/usr/bin/env python3
"""RAPPOR with unknown strings (Fanti et al.): recall@10/50/100 and false strings vs n and ε.

    python simulations/rappor_ngrams.py                 # n 1e5, 1e6; ε 4, 8; 2 repetitions
    python simulations/rappor_ngrams.py --quick         # n 1e5; ε 4, 8; 1 repetition, 1,000 words
    python simulations/rappor_ngrams.py --ns 1e6 --epsilons 8 --gram 3 --max-length 6

The population is ``sfp_discovery.py``'s (imported: ``--words english`` is wordfreq's list when installed,
else the synthetic English-like list), over the letters a–z. Words over ``--max-length`` (L, default 6)
letters are cut by the client (``truncate=True``); the truth is the words as the client encodes them.

Parameters at total ε per user (:func:`params_for`): one report per client, so ``f = 0`` and each RAPPOR's
ε is its ε₁ = ``2h·ln(q/p)`` with ``q = 1 − p``; the full string gets ``--full-share`` (default 1/2) of ε
and each of the two n-gram reports half the rest. Bloom filters: full string k = 32, h = 2, m = 64; n-grams
k = 32, h = 2, m = 64 (2,048 rows: every one of the 703 possible 2-grams per position is fitted). The
aggregate is drawn with the client's law in batch (:meth:`RapporNgramsAggregate.simulate`), then
``discover()`` with its defaults (BH 0.05 for n-grams and strings, pairs at 0.05 per table), timed.
Columns: ``recall_top{10,50,100}`` (share of the true top words found), ``discovered``, ``false_found``
(found strings nobody holds), ``candidates`` (strings formed from the n-gram pairs), ``seconds_discover``.
Writes ``results.csv`` and ``summary.csv`` (means over repetitions) in ``--out``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):  # this source tree's ldp, and sfp_discovery beside this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import sfp_discovery as sfp  # noqa: E402

from ldp.simulation.collect import comma_list, write_rows_csv  # noqa: E402

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
COLUMNS = ("n", "epsilon", "gram", "max_length", "rep", "recall_top10", "recall_top50", "recall_top100",
           "discovered", "false_found", "candidates", "seconds_discover")
METRICS = COLUMNS[5:]


def params_for(epsilon: float, gram: int = 2, max_length: int = 6, full_share: float = 0.5,
               alphabet: str = ALPHABET, bloom: tuple[int, int, int] = (32, 2, 64),
               gram_bloom: tuple[int, int, int] = (32, 2, 64)) -> Any:
    """Parameters whose per-report cost is ``epsilon`` (module docstring: ``f = 0``, ``q = 1 − p``)."""
    from ldp.encoders.rappor_ngrams import RapporNgramsParams

    def pq(eps: float, h: int) -> tuple[float, float]:
        p = 1.0 / (1.0 + math.exp(eps / (2 * h)))
        return p, 1.0 - p

    p, q = pq(epsilon * full_share, bloom[1])
    gp, gq = pq(epsilon * (1 - full_share) / 2, gram_bloom[1])
    return RapporNgramsParams(*bloom, p, q, 0.0, *gram_bloom, gp, gq, 0.0, n=gram, max_length=max_length,
                              alphabet=alphabet, truncate=True)


class _Encoding:
    """What ``sfp_discovery.make_population`` asks of a client: ``prepare_word`` → ``.word``, ``.truncated``."""

    def __init__(self, params: Any) -> None:
        self.params = params

    def prepare_word(self, word: str) -> Any:
        text = self.params.unpad(self.params.padded(word))
        return SimpleNamespace(word=text, truncated=len(word) > self.params.max_length)


def run_rep(pop: Any, params: Any, epsilon: float, rep: int, seed: int) -> dict[str, Any]:
    """One collection of ``pop`` and its discovery, scored."""
    import numpy as np

    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate

    rng = np.random.default_rng([seed, pop.n, round(epsilon * 1000), rep])
    agg = RapporNgramsAggregate.simulate(params, pop.counts, rng, values=pop.words)
    start = time.perf_counter()
    found = agg.discover(rng=rng)
    seconds = time.perf_counter() - start
    got = set(found.strings.items)
    row: dict[str, Any] = {"n": pop.n, "epsilon": epsilon, "gram": params.n, "max_length": params.max_length,
                           "rep": rep}
    for k in (10, 50, 100):
        top = pop.top(k)
        row[f"recall_top{k}"] = sum(w in got for w in top) / len(top)
    row.update(discovered=len(got), false_found=sum(w not in pop.encoded for w in got),
               candidates=len(found.candidates), seconds_discover=seconds)
    return row


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = sorted({(r["n"], r["epsilon"], r["gram"], r["max_length"]) for r in rows})
    out = []
    for key in keys:
        sel = [r for r in rows if (r["n"], r["epsilon"], r["gram"], r["max_length"]) == key]
        out.append({"n": key[0], "epsilon": key[1], "gram": key[2], "max_length": key[3], "rep": len(sel),
                    **{m: sum(float(r[m]) for r in sel) / len(sel) for m in METRICS}})
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=comma_list(int), default=[10**5, 10**6])
    ap.add_argument("--epsilons", type=comma_list(float), default=[4.0, 8.0], help="total ε per user")
    ap.add_argument("--gram", type=int, default=2, help="n-gram length (default 2)")
    ap.add_argument("--max-length", type=int, default=6, help="L, a multiple of --gram (default 6)")
    ap.add_argument("--full-share", type=float, default=0.5, help="share of ε for the full string (default 0.5)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="n = 1e5, 1 repetition, 1,000 words")
    ap.add_argument("--words", choices=("english", "english-like"), default="english")
    ap.add_argument("--vocab", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "rappor-ngrams")
    args = ap.parse_args(argv)
    if not 0.0 < args.full_share < 1.0:
        ap.error("--full-share must be in (0, 1)")
    if args.quick:
        args.reps, args.ns, args.vocab = 1, [10**5], min(args.vocab, 1000)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sfp_args = sfp.parse_args(["--no-pure", "--words", args.words, "--vocab", str(args.vocab),
                               "--seed", str(args.seed), "--no-plots"])
    words, weights, described = sfp.word_list(sfp_args)
    rows: list[dict[str, Any]] = []
    for n in args.ns:
        encoding = _Encoding(params_for(1.0, args.gram, args.max_length, args.full_share))
        pop = sfp.make_population(n, words, 1.0, args.seed, encoding, weights)
        for eps in args.epsilons:
            params = params_for(eps, args.gram, args.max_length, args.full_share)
            for rep in range(args.reps):
                rows.append(run_rep(pop, params, eps, rep, args.seed))
    args.out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    write_rows_csv(args.out / "results.csv", COLUMNS, rows)
    write_rows_csv(args.out / "summary.csv", COLUMNS, summary)
    print(f"population: {described}; n-grams of {args.gram}, L = {args.max_length}, alphabet a-z; "
          f"full string {args.full_share:g} of ε")
    print(f"{'n':>9} {'ε':>4} {'rec@10':>7} {'rec@50':>7} {'rec@100':>7} {'found':>6} {'false':>6} {'cands':>6} "
          f"{'sec':>6}")
    for s in summary:
        print(f"{s['n']:>9} {s['epsilon']:>4g} {s['recall_top10']:>7.2f} {s['recall_top50']:>7.2f} "
              f"{s['recall_top100']:>7.2f} {s['discovered']:>6.1f} {s['false_found']:>6.2f} {s['candidates']:>6.0f} "
              f"{s['seconds_discover']:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
