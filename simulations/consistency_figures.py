#!/usr/bin/env python3
"""The error of consistency post-processing against ε, for docs/postprocessing.md.

    python simulations/consistency_figures.py                     # CSV, and the PNG into docs/img (a minute)
    python simulations/consistency_figures.py --quick --no-plots  # coarse grid, CSV only (seconds)

A Zipf(``--zipf``) population of ``--n`` users over ``--d`` items (exact largest-remainder counts); at each ε,
``--reps`` aggregates of GRR and of OUE are drawn at the aggregate level (exact laws,
:meth:`~ldp.decoders.base.Aggregate.simulate`), decoded raw, and post-processed by every method of
:class:`~ldp.decoders.results.Estimates`: clipped, projected, Norm-Sub, Base-Cut (default Bonferroni
threshold) and IBU (default tolerance and iterations). The MSE of the *fractions*, averaged over the items
and the repetitions, is written to ``mse.csv`` (``--out``, default ``simulations/results/consistency_figures``)
and, when matplotlib is present, drawn in ``consistency-mse-vs-epsilon.png`` (``--img``, default ``docs/img``,
or the ``--out`` folder with ``--quick``). Seeded (``--seed``).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, save_png, write_rows_csv as write_csv, zipf  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "consistency_figures"
DEFAULT_IMG = ROOT / "docs" / "img"
PNG = "consistency-mse-vs-epsilon.png"
PROTOCOLS = ("grr", "oue")
METHODS = ("raw", "clipped", "projected", "norm_sub", "base_cut", "ibu")
COLUMNS = ("protocol", "epsilon", "method", "d", "n", "reps", "mse_fraction", "mse_ratio_to_raw", "sum_fraction")
LABELS = {"raw": "raw (unbiased)", "clipped": "clipped to [0, n]", "projected": "projected (simplex)",
          "norm_sub": "Norm-Sub", "base_cut": "Base-Cut", "ibu": "IBU (EM)"}
STYLES = {"raw": ("black", "-", "o"), "clipped": ("tab:gray", "--", "s"), "projected": ("tab:blue", "-", "^"),
          "norm_sub": ("tab:orange", ":", "v"), "base_cut": ("tab:green", "-", "D"), "ibu": ("tab:red", "-", "x")}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"CSV folder (default {DEFAULT_OUT})")
    ap.add_argument("--img", type=Path, default=None, help=f"PNG folder (default {DEFAULT_IMG}; with --quick, --out)")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG figure")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--quick", action="store_true", help="coarse grid and few repetitions (seconds)")
    ap.add_argument("--seed", type=int, default=2026, help="seed (default 2026)")
    ap.add_argument("--n", type=int, default=10_000, help="users (default 10000)")
    ap.add_argument("--d", type=int, default=64, help="items (default 64)")
    ap.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of the population (default 1.1)")
    ap.add_argument("--reps", type=int, default=None, help="aggregates per point (default 40; quick 3)")
    ap.add_argument("--epsilons", type=comma_list(float), default=None,
                    help="ε grid (default 0.25,0.5,1,1.5,2,3,4,5; quick 0.5,2)")
    args = ap.parse_args(argv)
    if args.img is None:  # coarse --quick figures never replace the documentation's
        args.img = args.out if args.quick else DEFAULT_IMG
    if args.reps is None:
        args.reps = 3 if args.quick else 40
    if args.epsilons is None:
        args.epsilons = [0.5, 2.0] if args.quick else [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0]
    if args.n < 1 or args.d < 2 or args.reps < 1 or not args.epsilons or min(args.epsilons) <= 0:
        ap.error("need --n >= 1, --d >= 2, --reps >= 1 and --epsilons values > 0")
    return args


def _params_and_aggregate(protocol: str, epsilon: float, d: int) -> tuple[Any, Any]:
    from ldp.decoders import GRRAggregate, UnaryAggregate
    from ldp.encoders.randomized_response import GRRParams
    from ldp.encoders.unary import OUEParams

    if protocol == "grr":
        return GRRParams(epsilon, d), GRRAggregate
    return OUEParams(epsilon, d), UnaryAggregate


def mse_rows(protocols: Sequence[str], epsilons: Sequence[float], true_counts: np.ndarray, reps: int,
             gen: np.random.Generator, tick: Callable[[], None]) -> list[dict[str, Any]]:
    """Per (protocol, ε, method): the MSE of the fractions over items and repetitions, and the mean total."""
    n, d = int(true_counts.sum()), true_counts.size
    truth = true_counts / n
    rows = []
    for protocol in protocols:
        for eps in epsilons:
            params, agg_type = _params_and_aggregate(protocol, eps, d)
            err = {m: 0.0 for m in METHODS}
            total = {m: 0.0 for m in METHODS}
            for _ in range(reps):
                raw = agg_type.simulate(params, true_counts, gen).estimate()
                outs = {"raw": raw, "clipped": raw.clipped(), "projected": raw.projected(),
                        "norm_sub": raw.norm_sub(), "base_cut": raw.base_cut(), "ibu": raw.ibu(params)}
                for m, est in outs.items():
                    err[m] += float(np.mean((est.fraction - truth) ** 2)) / reps
                    total[m] += float(est.fraction.sum()) / reps
            for m in METHODS:
                rows.append({"protocol": protocol, "epsilon": eps, "method": m, "d": d, "n": n, "reps": reps,
                             "mse_fraction": err[m], "mse_ratio_to_raw": err[m] / err["raw"],
                             "sum_fraction": total[m]})
            tick()
    return rows


def plot(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PROTOCOLS), figsize=(10, 4.2), sharey=True)
    for ax, protocol in zip(axes, PROTOCOLS, strict=True):
        for m in METHODS:
            pts = [r for r in rows if r["protocol"] == protocol and r["method"] == m]
            color, style, marker = STYLES[m]
            ax.plot([r["epsilon"] for r in pts], [r["mse_fraction"] for r in pts], style, color=color,
                    marker=marker, ms=5, mfc="none", label=LABELS[m])
        ax.set_xscale("log")
        ax.set_yscale("log")
        eps = sorted({r["epsilon"] for r in rows})
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.minorticks_off()
        ax.set_xlabel("ε")
        ax.set_title(protocol.upper())
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
    axes[0].set_ylabel("MSE of the fractions (mean over items)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_png(fig, path)


def summary(rows: list[dict[str, Any]]) -> str:
    lines = []
    for protocol in PROTOCOLS:
        for eps in sorted({r["epsilon"] for r in rows}):
            pts = {r["method"]: r for r in rows if r["protocol"] == protocol and r["epsilon"] == eps}
            if pts:
                ratios = ", ".join(f"{m} {pts[m]['mse_ratio_to_raw']:.2f}" for m in METHODS[1:])
                lines.append(f"{protocol} ε={eps:g}: MSE / raw: {ratios}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plots = not args.no_plots and importlib.util.find_spec("matplotlib") is not None
    if not args.no_plots and not plots:
        print("note: matplotlib is not installed; writing the CSV only", file=sys.stderr)
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    true_counts = zipf(args.d, args.zipf).counts(args.n, exact=True)
    gen = np.random.default_rng(args.seed)
    steps = len(PROTOCOLS) * len(args.epsilons)
    ibu_log = logging.getLogger("ldp.decoders.consistency")
    level = ibu_log.level
    ibu_log.setLevel(logging.ERROR)  # IBU stopping at max_iter (a sparse Zipf tail) is expected here
    try:
        with progress(steps, "consistency_figures", False if args.quiet else None, unit="point") as bar:
            rows = mse_rows(PROTOCOLS, args.epsilons, true_counts, args.reps, gen, lambda: bar.update(1))
    finally:
        ibu_log.setLevel(level)
    write_csv(args.out / "mse.csv", COLUMNS, rows)
    if plots:
        args.img.mkdir(parents=True, exist_ok=True)
        plot(args.img / PNG, rows, f"Zipf({args.zipf:g}) over d={args.d}, n={args.n}: "
                                   f"mean of {args.reps} aggregates per point")
    print(summary(rows))
    where = f"{args.out / 'mse.csv'}" + (f" and {args.img / PNG}" if plots else "")
    print(f"{time.perf_counter() - start:.1f} s; wrote {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
