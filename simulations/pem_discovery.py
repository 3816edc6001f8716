#!/usr/bin/env python3
"""PEM against SFP at the same total ε: recall@10/50/100 and false strings vs n and ε.

    python simulations/pem_discovery.py                 # n 1e5, 1e6; ε 2, 4, 8; 3 repetitions
    python simulations/pem_discovery.py --quick         # 1 repetition
    python simulations/pem_discovery.py --ns 1e6 --epsilons 4 --reps 5 --no-sfp

The population is that of ``sfp_discovery.py`` (imported: ``--words english`` is wordfreq's list when
installed, else the synthetic English-like list; words over 10 letters are truncated by both clients, so
the truth "as the client encodes it" is the same). PEM: ``PEMParams(ε, max_length=10, truncate=True)``
(8-bit start and steps: 10 groups), aggregate drawn with the client's law in batch
(:meth:`PEMAggregate.simulate`), ``discover(alphabet=a–z, top_k=--top-k)``. SFP: ``ε_word = ε_fragment =
ε/2`` (the same total ε per user), ``sfp_discovery.run_rep`` with its defaults (peeled tests, 0.05
expected false words). Columns: ``recall_top{10,50,100}`` (share of the true top words found),
``discovered``, ``false_found`` (found strings nobody holds), ``seconds_discover`` (server time).
Writes ``results.csv`` and ``summary.csv`` (means over repetitions) in ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):  # this source tree's ldp, and sfp_discovery beside this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import sfp_discovery as sfp  # noqa: E402

from ldp.simulation.collect import comma_list, write_rows_csv  # noqa: E402

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
COLUMNS = ("method", "n", "epsilon", "rep", "recall_top10", "recall_top50", "recall_top100", "discovered",
           "false_found", "seconds_discover")
METRICS = COLUMNS[4:]


def pem_rep(pop: Any, epsilon: float, rep: int, seed: int, top_k: int) -> dict[str, Any]:
    """One PEM collection of ``pop`` at ``epsilon`` and its discovery."""
    import numpy as np

    from ldp.decoders.pem import PEMAggregate
    from ldp.encoders.pem import PEMParams

    params = PEMParams(epsilon, max_length=10, truncate=True, top_k=top_k)
    agg = PEMAggregate.simulate(params, pop.counts, np.random.default_rng([seed, pop.n, round(epsilon * 1000), rep]),
                                values=pop.words)
    start = time.perf_counter()
    found = agg.discover(alphabet=ALPHABET)
    seconds = time.perf_counter() - start
    return score("pem", pop, epsilon, rep, found.strings.items, seconds)


def sfp_rep(pop: Any, epsilon: float, rep: int, sfp_args: argparse.Namespace) -> dict[str, Any]:
    """SFP at ``ε_word = ε_fragment = ε/2`` (sfp_discovery's repetition, its defaults)."""
    row = sfp.run_rep(pop, epsilon / 2, epsilon / 2, rep, sfp_args).row
    return {"method": "sfp", "n": pop.n, "epsilon": epsilon, "rep": rep, **{m: row[m] for m in METRICS}}


def score(method: str, pop: Any, epsilon: float, rep: int, found: Sequence[str], seconds: float) -> dict[str, Any]:
    got = set(found)
    row: dict[str, Any] = {"method": method, "n": pop.n, "epsilon": epsilon, "rep": rep}
    for k in (10, 50, 100):
        top = pop.top(k)
        row[f"recall_top{k}"] = sum(w in got for w in top) / len(top)
    row["discovered"] = len(got)
    row["false_found"] = sum(w not in pop.encoded for w in got)
    row["seconds_discover"] = seconds
    return row


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = sorted({(r["method"], r["n"], r["epsilon"]) for r in rows})
    out = []
    for key in keys:
        sel = [r for r in rows if (r["method"], r["n"], r["epsilon"]) == key]
        out.append({"method": key[0], "n": key[1], "epsilon": key[2], "rep": len(sel),
                    **{m: sum(float(r[m]) for r in sel) / len(sel) for m in METRICS}})
    return out


def population(n: int, words: list[str], weights: Any, seed: int) -> Any:
    """sfp_discovery's population (truth as the clients encode it: a–z words cut to 10 letters)."""
    return sfp.make_population(n, words, 1.0, seed, sfp.make_params(1.0, 1.0), weights)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=comma_list(int), default=[10**5, 10**6])
    ap.add_argument("--epsilons", type=comma_list(float), default=[2.0, 4.0, 8.0], help="total ε per user")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 repetition")
    ap.add_argument("--top-k", type=int, default=32, help="PEM: prefixes kept per round (default 32)")
    ap.add_argument("--words", choices=("english", "english-like"), default="english")
    ap.add_argument("--vocab", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-sfp", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pem_discovery")
    args = ap.parse_args(argv)
    if args.quick:
        args.reps = 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sfp_args = sfp.parse_args(["--no-pure", "--words", args.words, "--vocab", str(args.vocab),
                               "--seed", str(args.seed), "--reps", str(args.reps), "--no-plots"])
    words, weights, described = sfp.word_list(sfp_args)
    rows: list[dict[str, Any]] = []
    for n in args.ns:
        pop = population(n, words, weights, args.seed)
        for eps in args.epsilons:
            for rep in range(args.reps):
                rows.append(pem_rep(pop, eps, rep, args.seed, args.top_k))
                if not args.no_sfp:
                    rows.append(sfp_rep(pop, eps, rep, sfp_args))
    args.out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    write_rows_csv(args.out / "results.csv", COLUMNS, rows)
    write_rows_csv(args.out / "summary.csv", COLUMNS, summary)
    print(f"population: {described}; PEM top_k={args.top_k}, alphabet a-z; SFP ε_word = ε_fragment = ε/2")
    print(f"{'method':6} {'n':>9} {'ε':>4} {'rec@10':>7} {'rec@50':>7} {'rec@100':>7} {'found':>6} {'false':>6} "
          f"{'sec':>6}")
    for s in summary:
        print(f"{s['method']:6} {s['n']:>9} {s['epsilon']:>4g} {s['recall_top10']:>7.2f} {s['recall_top50']:>7.2f} "
              f"{s['recall_top100']:>7.2f} {s['discovered']:>6.1f} {s['false_found']:>6.2f} "
              f"{s['seconds_discover']:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
