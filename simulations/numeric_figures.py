#!/usr/bin/env python3
"""The variance of the mean mechanisms against ε, for docs/protocols/numeric.md.

    python simulations/numeric_figures.py                     # CSVs, and the PNG into docs/img (seconds)
    python simulations/numeric_figures.py --quick --no-plots  # coarse grid, CSVs only (about a second)

On ``[−1, 1]``, the worst case over the inputs of the per-report variance (from the decoders' exact
formulas, :func:`ldp.plan.numeric.worst_case_variance`) of Duchi's mechanism, the discrete PM and the
Hybrid at ``--cells`` output cells, the continuous PM's formula ``4s/(3(s − 1)²)`` (``s = e^{ε/2}``),
and local Laplace noise ``8/ε²`` (a reference, not a protocol here), for ε on a log grid. At each ε
of ``--measure`` every mechanism is also *measured*: ``--n`` reports of each of the inputs
``t = −1, 0, 1`` (where the worst cases are) encoded by the vectorized client law, the per-report
values' sample variance taken, and the largest kept. The crossovers are marked.

Tables (CSV in ``--out``, default ``simulations/results/numeric_figures``): ``curves.csv``,
``measured.csv``, ``crossovers.csv``; figure (``--img``, default ``docs/img``, or the ``--out``
folder with ``--quick``): ``numeric-variance-vs-epsilon.png``. Seeded (``--seed``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, save_png, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "numeric_figures"
DEFAULT_IMG = ROOT / "docs" / "img"
PNG = "numeric-variance-vs-epsilon.png"
MECHANISMS = ("duchi", "piecewise", "hybrid")
CURVE_COLUMNS = ("epsilon", "duchi", "piecewise", "pm_continuous", "hybrid", "laplace")
MEASURED_COLUMNS = ("protocol", "epsilon", "n", "worst_t", "measured_variance", "exact_variance", "ratio")
CROSSOVER_COLUMNS = ("name", "epsilon", "how")
LABELS = {"duchi": "Duchi (1 bit)", "piecewise": "PM, discrete", "pm_continuous": "PM, continuous formula",
          "hybrid": "Hybrid, discrete", "laplace": "local Laplace (reference)"}
STYLES = {"duchi": ("tab:blue", "-"), "piecewise": ("tab:orange", "-"), "pm_continuous": ("tab:red", ":"),
          "hybrid": ("tab:green", "-"), "laplace": ("tab:gray", "--")}
WIDTHS = {"duchi": 4.0, "piecewise": 2.5, "pm_continuous": 1.5, "hybrid": 1.5, "laplace": 1.5}  # overlaps show
INPUTS = (-1.0, 0.0, 1.0)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"CSV folder (default {DEFAULT_OUT})")
    ap.add_argument("--img", type=Path, default=None, help=f"PNG folder (default {DEFAULT_IMG}; with --quick, --out)")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG figure")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--quick", action="store_true", help="coarse grid and fewer reports (about a second)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of the measured points (default 2026)")
    ap.add_argument("--cells", type=int, default=1024, help="output cells of the discrete PM and Hybrid (1024)")
    ap.add_argument("--n", type=int, default=None, help="reports per measured input (default 400000; quick 20000)")
    ap.add_argument("--measure", type=comma_list(float), default=[0.5, 1.0, 2.0, 4.0, 8.0],
                    help="ε of the measured points (default 0.5,1,2,4,8)")
    args = ap.parse_args(argv)
    if args.img is None:  # coarse --quick figures never replace the documentation's
        args.img = args.out if args.quick else DEFAULT_IMG
    if args.n is None:
        args.n = 20_000 if args.quick else 400_000
    if args.n < 2 or not args.measure or min(args.measure) <= 0 or args.cells < 2:
        ap.error("need --n >= 2, --cells >= 2 and --measure values > 0")
    return args


def _params(name: str, epsilon: float, cells: int) -> Any:
    from ldp.encoders.numeric import DuchiParams, HybridParams, PiecewiseParams

    if name == "duchi":
        return DuchiParams(epsilon, -1.0, 1.0)
    return (PiecewiseParams if name == "piecewise" else HybridParams)(epsilon, -1.0, 1.0, cells=cells)


def curve_rows(epsilons: Sequence[float], cells: int) -> list[dict[str, Any]]:
    """The worst-case per-report variance of every mechanism at each ε (exact formulas)."""
    from ldp.decoders.numeric import continuous_pm_variance
    from ldp.plan.numeric import laplace_variance, worst_case_variance

    rows = []
    for eps in epsilons:
        row: dict[str, Any] = {"epsilon": eps, "laplace": laplace_variance(eps)}
        for name in MECHANISMS:
            row[name] = worst_case_variance(_params(name, eps, cells))
        row["pm_continuous"] = float(continuous_pm_variance(eps, -1.0, 1.0, np.array([1.0]))[0])
        rows.append(row)
    return rows


def measured_rows(epsilons: Sequence[float], cells: int, n: int, gen: np.random.Generator,
                  tick: Callable[[], None]) -> list[dict[str, Any]]:
    """Each mechanism's measured worst-case variance: the largest, over the inputs ``t = −1, 0, 1``, of
    the sample variance of ``n`` per-report values (every report encoded by the client law)."""
    from ldp.plan.numeric import mean_report_variance, worst_case_variance
    from ldp.simulation.numeric import simulate_mean

    rows = []
    for eps in epsilons:
        for name in MECHANISMS:
            params = _params(name, eps, cells)
            measured = {}
            for t in INPUTS:  # all reports hold t: n·SE² is the per-report values' sample variance
                est = simulate_mean(params, np.full(n, t), method="per_report", rng=gen).estimate()
                measured[t] = n * est.std_error**2
            worst_t = max(measured, key=lambda t: measured[t])
            exact = float(mean_report_variance(params, np.array([worst_t]))[0])
            rows.append({"protocol": name, "epsilon": eps, "n": n, "worst_t": worst_t,
                         "measured_variance": measured[worst_t], "exact_variance": exact,
                         "ratio": measured[worst_t] / worst_case_variance(params)})
            tick()
    return rows


def _bisect(f: Callable[[float], float], lo: float, hi: float) -> float:
    """A root of ``f`` in ``[lo, hi]`` (``f(lo)``, ``f(hi)`` of opposite signs)."""
    flo = f(lo)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if (f(mid) < 0) == (flo < 0):
            lo, flo = mid, f(mid)
        else:
            hi = mid
    return lo


def crossover_rows() -> list[dict[str, Any]]:
    """The crossovers of the continuous formulas: PM below Duchi, the Hybrid leaving Duchi, Laplace's."""
    from ldp.encoders.numeric import HYBRID_THRESHOLD, PM_CROSSOVER

    def duchi(e: float) -> float:
        return (1.0 / math.tanh(e / 2)) ** 2

    laplace_duchi = _bisect(lambda e: 8.0 / e**2 - duchi(e), 0.1, 20.0)
    return [
        {"name": "PM below Duchi", "epsilon": PM_CROSSOVER, "how": "3y² − 4y − 8 = 0, y = s + 1/s, s = e^(ε/2)"},
        {"name": "Hybrid mixes in PM", "epsilon": HYBRID_THRESHOLD, "how": "3s³ − s² + s − 7 = 0, s = e^(ε/2)"},
        {"name": "Laplace below Duchi", "epsilon": laplace_duchi, "how": "8/ε² = coth²(ε/2), by bisection"},
    ]


def plot(path: Path, curves: list[dict[str, Any]], measured: list[dict[str, Any]],
         crossovers: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.6))
    eps = [r["epsilon"] for r in curves]
    for key in CURVE_COLUMNS[1:]:
        color, style = STYLES[key]
        ax.plot(eps, [r[key] for r in curves], style, color=color, lw=WIDTHS[key], label=LABELS[key])
    for name in MECHANISMS:
        pts = [r for r in measured if r["protocol"] == name]
        ax.plot([r["epsilon"] for r in pts], [r["measured_variance"] for r in pts], "o", color=STYLES[name][0],
                mfc="none", ms=7, label=f"{LABELS[name].split(',')[0]}, measured" if name != "piecewise" else
                "PM, measured")
    for c in crossovers:
        ax.axvline(c["epsilon"], color="black", lw=0.6, ls=":")
        ax.annotate(f"{c['name']}\nε = {c['epsilon']:.3g}", (c["epsilon"], 0.03), rotation=90, fontsize=7,
                    xytext=(3, 0), textcoords="offset points", va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("worst-case variance of one report on [−1, 1]")
    ax.set_title("Means of bounded numbers: variance against ε")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    save_png(fig, path)


def summary(curves: list[dict[str, Any]], measured: list[dict[str, Any]], crossovers: list[dict[str, Any]]) -> str:
    lines = [f"{c['name']}: ε = {c['epsilon']:.4f}" for c in crossovers]
    ratios = [r["ratio"] for r in measured]
    lines.append(f"measured / exact worst-case variance over {len(ratios)} points: "
                 f"{min(ratios):.3f} to {max(ratios):.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    grid = np.logspace(-1, 1, 13 if args.quick else 61).tolist()
    gen = np.random.default_rng(args.seed)
    steps = 2 + len(args.measure) * len(MECHANISMS)
    with progress(steps, "numeric_figures", False if args.quiet else None, unit="step") as bar:
        curves = curve_rows(grid, args.cells)
        bar.update(1)
        measured = measured_rows(args.measure, args.cells, args.n, gen, lambda: bar.update(1))
        crossovers = crossover_rows()
        bar.update(1)
    write_csv(args.out / "curves.csv", CURVE_COLUMNS, curves)
    write_csv(args.out / "measured.csv", MEASURED_COLUMNS, measured)
    write_csv(args.out / "crossovers.csv", CROSSOVER_COLUMNS, crossovers)
    if not args.no_plots:
        args.img.mkdir(parents=True, exist_ok=True)
        plot(args.img / PNG, curves, measured, crossovers)
    print(summary(curves, measured, crossovers))
    where = f"{args.out}" + ("" if args.no_plots else f" and {args.img / PNG}")
    print(f"{time.perf_counter() - start:.1f} s; wrote {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
