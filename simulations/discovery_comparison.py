#!/usr/bin/env python3
"""SFP, PEM and unknown-string RAPPOR on one word-frequency population: recall@10/50/100 and false strings.

    python simulations/discovery_comparison.py --plot docs/img/discovery_comparison.png
    python simulations/discovery_comparison.py --quick          # about a minute
    python simulations/discovery_comparison.py --replot docs/img/discovery_comparison.png   # from summary.csv

The population is ``sfp_discovery.py``'s (``--words english``: wordfreq's most frequent a–z words when
installed, else its synthetic English-like list; the same multinomial draw of ``n`` users for every method).
Each method gets the same total ε per user and is run by its own script's repetition function, imported:

* ``pem``: ``pem_discovery.pem_rep`` (``PEMParams(ε, max_length=10, truncate=True, top_k=--pem-top-k)``);
* ``sfp``: ``pem_discovery.sfp_rep`` (``ε_word = ε_fragment = ε/2``, sfp_discovery's defaults, L = 10);
* ``rappor-ngrams``: ``rappor_ngrams.run_rep`` with ``rappor_ngrams.params_for(ε)`` (2-grams, L = 6, half
  of ε for the full string). Its pair EM is slow and its recall weak at these n, so it has its own n grid
  (``--ngram-ns``) and a time budget per run (``--ngram-budget`` seconds, simulation and discovery, in a
  forked process): a run over budget is recorded as ``timeout`` and the larger n at that ε are skipped.

The truth is the population as each client encodes it (SFP and PEM cut words to 10 letters, the n-gram
client to 6), so a false string is one no user's encoded word equals. Columns: ``recall_top{10,50,100}``,
``discovered``, ``false_found``, ``seconds_discover`` (server time), ``status`` (``ok``, ``timeout``,
``skipped``). Writes ``results.csv`` and ``summary.csv`` (means over the ``ok`` repetitions) in ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing as mp
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):  # this source tree's ldp, and the sibling scripts
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import pem_discovery as pem  # noqa: E402
import rappor_ngrams as ngrams  # noqa: E402
import sfp_discovery as sfp  # noqa: E402

from ldp.simulation.collect import comma_list, write_rows_csv  # noqa: E402

METHODS = ("pem", "sfp", "rappor-ngrams")
METRICS = ("recall_top10", "recall_top50", "recall_top100", "discovered", "false_found", "seconds_discover")
COLUMNS = ("method", "n", "epsilon", "max_length", "rep", "status", *METRICS)
MAX_LENGTH = {"pem": 10, "sfp": 10}


def _child(fn: Callable[[], dict[str, Any]], conn: Connection) -> None:
    try:
        conn.send(("ok", fn()))
    except BaseException as exc:  # reported to the parent, which re-raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_with_budget(fn: Callable[[], dict[str, Any]], budget: float | None) -> dict[str, Any] | None:
    """``fn()`` in a forked process, or ``None`` if it took more than ``budget`` seconds (it is then
    terminated). Without a budget, or where fork is unavailable, ``fn()`` runs here."""
    if budget is None or "fork" not in mp.get_all_start_methods():
        return fn()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, send), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(budget):
            proc.terminate()
            return None
        status, value = recv.recv()
    finally:
        proc.join()
        recv.close()
    if status != "ok":
        raise RuntimeError(f"rappor-ngrams run failed: {value}")
    return dict(value)


def ngram_rep(pop: Any, epsilon: float, rep: int, seed: int, budget: float | None) -> dict[str, Any]:
    """``rappor_ngrams.run_rep`` at total ``epsilon`` under ``budget``, as a comparison row."""
    params = ngrams.params_for(epsilon)
    out = run_with_budget(lambda: ngrams.run_rep(pop, params, epsilon, rep, seed), budget)
    row: dict[str, Any] = {"method": "rappor-ngrams", "n": pop.n, "epsilon": epsilon,
                           "max_length": params.max_length, "rep": rep}
    if out is None:
        return {**row, "status": "timeout", **{m: math.nan for m in METRICS}}
    return {**row, "status": "ok", **{m: out[m] for m in METRICS}}


def ngram_population(n: int, words: list[str], weights: Any, seed: int) -> Any:
    """The same multinomial draw as SFP's and PEM's (seeded by ``n``), as the n-gram client encodes it (cut
    to L = 6), with the users counted per *encoded* word: the batch kernel refuses two raw words that cut to
    the same string ("thought", "though") as repeated candidates, and cutting is deterministic, so the law
    of the reports is the same."""
    import numpy as np

    pop = sfp.make_population(n, words, 1.0, seed, ngrams._Encoding(ngrams.params_for(1.0)), weights)
    return sfp.Population(pop.n, list(pop.encoded), np.array(list(pop.encoded.values()), dtype=np.int64),
                          pop.encoded, pop.truncated)


def skipped(n: int, epsilon: float, rep: int) -> dict[str, Any]:
    return {"method": "rappor-ngrams", "n": n, "epsilon": epsilon, "max_length": ngrams.params_for(1.0).max_length,
            "rep": rep, "status": "skipped", **{m: math.nan for m in METRICS}}


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Means over the ``ok`` repetitions of each (method, n, ε); ``rep`` is their number."""
    keys = sorted({(r["method"], r["n"], r["epsilon"]) for r in rows}, key=lambda k: (METHODS.index(k[0]), k[1], k[2]))
    out = []
    for key in keys:
        sel = [r for r in rows if (r["method"], r["n"], r["epsilon"]) == key]
        ok = [r for r in sel if r["status"] == "ok"]
        means = {m: sum(float(r[m]) for r in ok) / len(ok) if ok else math.nan for m in METRICS}
        out.append({"method": key[0], "n": key[1], "epsilon": key[2], "max_length": sel[0]["max_length"],
                    "rep": len(ok), "status": "ok" if ok else sel[0]["status"], **means})
    return out


def read_summary(path: Path) -> list[dict[str, Any]]:
    """``summary.csv`` back as rows with numbers (for ``--replot``)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [{**r, "n": int(r["n"]), "epsilon": float(r["epsilon"]), "rep": int(r["rep"]),
             **{m: float(r[m]) for m in METRICS}} for r in rows]


def format_table(summary: list[dict[str, Any]]) -> str:
    lines = [f"{'method':14} {'n':>9} {'ε':>4} {'L':>3} {'reps':>4} {'rec@10':>7} {'rec@50':>7} {'rec@100':>7} "
             f"{'found':>6} {'false':>6} {'sec':>7}"]
    for s in summary:
        head = f"{s['method']:14} {s['n']:>9} {s['epsilon']:>4g} {s['max_length']:>3} {s['rep']:>4}"
        if s["status"] != "ok":
            lines.append(f"{head}  {s['status']}")
            continue
        lines.append(f"{head} {s['recall_top10']:>7.2f} {s['recall_top50']:>7.2f} {s['recall_top100']:>7.2f} "
                     f"{s['discovered']:>6.1f} {s['false_found']:>6.2f} {s['seconds_discover']:>7.2f}")
    return "\n".join(lines)


def plot(path: Path, summary: list[dict[str, Any]], note: str) -> None:
    """Recall@10 (top row) and recall@50 (bottom row) vs n, one column per ε, a line per method; the mean
    number of false strings is written beside every point where it is above 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps = sorted({s["epsilon"] for s in summary})
    fig, axes = plt.subplots(2, len(eps), figsize=(4.2 * len(eps), 6.4), sharex=True, sharey=True, squeeze=False)
    styles = {"pem": ("C0", "o"), "sfp": ("C1", "s"), "rappor-ngrams": ("C2", "^")}
    for col, e in enumerate(eps):
        for row, (metric, label) in enumerate((("recall_top10", "recall@10"), ("recall_top50", "recall@50"))):
            ax = axes[row][col]
            for method in METHODS:
                color, marker = styles[method]
                pts = sorted((s["n"], s[metric], s["false_found"]) for s in summary
                             if s["method"] == method and s["epsilon"] == e and s["status"] == "ok")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, label=method)
                for x, y, false in pts:
                    if false > 0:
                        ax.annotate(f"{false:.1f} false", (x, y), textcoords="offset points", xytext=(4, -10),
                                    fontsize=7, color=color)
                for t in summary:  # runs over the time budget (or skipped): a hollow marker on the axis
                    if t["method"] == method and t["epsilon"] == e and t["status"] != "ok":
                        ax.plot([t["n"]], [0.0], color=color, marker=marker, fillstyle="none", linestyle="none")
                        ax.annotate(t["status"], (t["n"], 0.0), textcoords="offset points", xytext=(-14, 8),
                                    fontsize=7, color=color)
            ax.set_xscale("log")
            ax.set_ylim(-0.03, 1.05)
            ax.grid(True, alpha=0.3)
            if row == 0:
                ax.set_title(f"total ε = {e:g} per user")
            else:
                ax.set_xlabel("users n")
            if col == 0:
                ax.set_ylabel(label)
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.text(0.5, 0.005, note, ha="center", va="bottom", fontsize=7)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLOT_NOTE = ("same population and total ε per user; means over repetitions; false strings annotated where > 0 "
             "(none otherwise)\nPEM keeps top_k prefixes per round (recall@50 ≤ top_k/50); rappor-ngrams: L = 6, "
             "its own n grid, a time budget per run (hollow: over budget)")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--ns", type=comma_list(int), default=[10**5, 10**6], help="n for SFP and PEM")
    ap.add_argument("--ngram-ns", type=comma_list(int), default=[10**5, 3 * 10**5], help="n for rappor-ngrams")
    ap.add_argument("--ngram-budget", type=float, default=600.0,
                    help="seconds per rappor-ngrams run (simulation + discovery); 0: no limit")
    ap.add_argument("--epsilons", type=comma_list(float), default=[4.0, 8.0], help="total ε per user")
    ap.add_argument("--methods", type=comma_list(str), default=list(METHODS))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--ngram-reps", type=int, default=1, help="repetitions of rappor-ngrams (default 1)")
    ap.add_argument("--pem-top-k", type=int, default=32, help="PEM: prefixes kept per round (default 32)")
    ap.add_argument("--words", choices=("english", "english-like"), default="english")
    ap.add_argument("--vocab", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition, 1,000 words, n 3e4 and 1e5 (n-grams 1e5), budget 60 s")
    ap.add_argument("--plot", type=Path, default=None, help="draw the figure to this PNG (needs matplotlib)")
    ap.add_argument("--replot", type=Path, default=None, help="only redraw this PNG from --out's summary.csv")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "discovery_comparison")
    args = ap.parse_args(argv)
    bad = [m for m in args.methods if m not in METHODS]
    if bad:
        ap.error(f"unknown method(s) {bad}; choose from {', '.join(METHODS)}")
    if args.quick:
        args.reps, args.ngram_reps, args.vocab = 1, 1, min(args.vocab, 1000)
        args.ns, args.ngram_ns, args.ngram_budget = [3 * 10**4, 10**5], [10**5], 60.0
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot is not None:
        plot(args.replot, read_summary(args.out / "summary.csv"), PLOT_NOTE)
        print(f"figure: {args.replot}")
        return 0
    budget = args.ngram_budget or None
    sfp_args = sfp.parse_args(["--no-pure", "--words", args.words, "--vocab", str(args.vocab),
                               "--seed", str(args.seed), "--reps", str(args.reps), "--no-plots"])
    words, weights, described = sfp.word_list(sfp_args)
    rows: list[dict[str, Any]] = []
    for n in sorted(set(args.ns) if {"pem", "sfp"} & set(args.methods) else set()):
        pop = pem.population(n, words, weights, args.seed)  # one draw for SFP and PEM (both cut to 10)
        for eps in args.epsilons:
            for rep in range(args.reps):
                if "pem" in args.methods:
                    rows.append({**pem.pem_rep(pop, eps, rep, args.seed, args.pem_top_k), "max_length": 10,
                                 "status": "ok"})
                if "sfp" in args.methods:
                    rows.append({**pem.sfp_rep(pop, eps, rep, sfp_args), "max_length": 10, "status": "ok"})
    if "rappor-ngrams" in args.methods:
        over: set[float] = set()  # ε whose run at a smaller n went over budget
        for n in sorted(set(args.ngram_ns)):
            pop = ngram_population(n, words, weights, args.seed)
            for eps in args.epsilons:
                for rep in range(args.ngram_reps):
                    row = skipped(n, eps, rep) if eps in over else ngram_rep(pop, eps, rep, args.seed, budget)
                    if row["status"] != "ok":
                        over.add(eps)
                    rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    write_rows_csv(args.out / "results.csv", COLUMNS, rows)
    write_rows_csv(args.out / "summary.csv", COLUMNS, summary)
    print(f"population: {described}; the same total ε per user for every method")
    print(f"PEM: OLH, L = 10 bytes, top_k = {args.pem_top_k}; SFP: ε_word = ε_fragment = ε/2, L = 10; "
          f"rappor-ngrams: 2-grams, L = 6, half of ε for the full string")
    if "rappor-ngrams" in args.methods:
        print(f"rappor-ngrams is slow (pair EM) and weak at these n: its own n grid {args.ngram_ns}, "
              f"{args.ngram_reps} repetition(s), a budget of {budget or 'no limit'} s per run")
    print(format_table(summary))
    if args.plot is not None:
        plot(args.plot, summary, PLOT_NOTE)
        print(f"figure: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
