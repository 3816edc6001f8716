#!/usr/bin/env python3
"""Robust private linear regression (RPLR) on model-(3.11) synthetic data: Spearman ρ against ε and n_pv.

    python simulations/rplr_experiment.py                # 50 splits, 20 × 20 threshold searches (a few minutes)
    python simulations/rplr_experiment.py --quick        # 10 splits, 4 × 4 searches on a coarse grid (seconds)
    python simulations/rplr_experiment.py --sweeps epsilon --epsilons 0.5,2,10 --splits 20 --no-plots

This reproduces the synthetic experiments of the 001 thesis (Figs 4.2 and 4.3; seeds-regression.md
§4.2) with :mod:`ldp.regression.rplr`. One data set of ``--n-total`` = 1000 rows and d = ``--d`` = 10
is drawn from model (3.11) (``x ~ N(0, I)``, ``β ~ N(0, I)``, ``y ~ N(xᵀβ, 1)``; ``--seed``). Monte
Carlo cross-validation with ``--splits`` splits (the thesis uses 50): each split shuffles the rows;
the first ``--n-test`` = 100 are the validation set, the next ``--n-npv`` = 10 the public training
set, and the next n_pv the private one. As in the thesis's code, each part is pre-processed on its
own (:func:`~ldp.regression.rplr_search.preprocess`: centre the columns, unit-norm rows, centre y; this
uses each part's own means). Split s uses the same shuffle in every setting.

Sweeps (``--sweeps``, default both):

* ``epsilon``: ε in ``--epsilons`` (default 0.1, 0.2, 0.5, 1, 2, 5, 10) at n_pv = ``--n-pv`` (500);
* ``npv``: n_pv in ``--n-pvs`` (default 0, 100, …, 800) at ε = ``--epsilon`` (2).

Methods, all scored by Spearman's ρ between the predictions and the validation y (scipy, NaN → 0):

* ``rplr``: :class:`~ldp.regression.rplr.RobustPrivateLR` on the private part (budget split
  ``--split``, default (0.35, 0.60, 0.05)), plus the public part's exact statistics. The thresholds
  are ``ω·SD`` of the private part, as in the thesis. They read the private data, and the
  resulting PrivacyLeakWarning is silenced here. The ω come from
  :func:`~ldp.regression.rplr_search.choose_clipping`, run once per (ε, n_pv) with n = n_pv and d: 20
  auxiliary data sets × 20 noise draws (``--aux-datasets``, ``--aux-noise``) on the library's
  default ω grid (``--omega-grid``);
* ``nonprivate_clip``: the same pipeline without noise, with the same thresholds. It varies a
  little with ε because the ω do (thesis Fig 4.2);
* ``nonprivate_noclip``: no noise, no clipping: ridge(1) on private + public data;
* ``public_only``: the baseline, the fixed-precision fit on the ``--n-npv`` public rows alone.

At n_pv = 0 nothing is private: no release is made, no budget is spent, and every method is the
public-only fit (RPLR's curve starts at the baseline).

What to expect (thesis): RPLR approaches the non-private curves as ε grows. As ε shrinks it
degrades and its spread grows. Against n_pv at ε = 2 it can dip below the public-only baseline at
n_pv = 100, then recover and nearly reach the non-private level at 800.

Measured (the default run, seed 0, about 100 s on a shared 2-core machine):

* against ε, RPLR's ρ is 0.16, 0.34, 0.62, 0.77, 0.85, 0.87 and 0.87 at ε = 0.1 … 10. Non-private
  with clipping gives 0.87–0.88, without clipping 0.89, and public-only 0.64;
* against n_pv, RPLR's ρ is 0.54 ± 0.03 at n_pv = 100, below the baseline as in the thesis. It
  is 0.71 at 200 and 0.87 at 800;
* the chosen ω_x is 0.005–0.02, except 0.1 at ε = 10. At ε ≤ 0.5 both ω sit on the grid's floor
  (0.005). This is the plateau described in :mod:`ldp.regression.rplr`. At ε = 0.1 RPLR falls far
  below the public-only fit: the public rows are clipped at the same tiny thresholds, and the
  private noise swamps their exact statistics. The thesis suggests separate precisions for
  private and public data as future work.

Outputs in ``--out`` (default simulations/results/rplr):

* ``results.csv``: one row per sweep, setting, split and method;
* ``summary.csv``: per sweep, setting and method, the mean ρ, its SD and standard error over the
  splits, and the chosen ω with its auxiliary score;
* ``spearman_vs_epsilon.png`` and ``spearman_vs_npv.png`` (mean ± 1 s.e.), unless ``--no-plots``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "rplr"
SWEEPS = ("epsilon", "npv")
METHODS = ("rplr", "nonprivate_clip", "nonprivate_noclip", "public_only")
DEFAULT_SPLITS, QUICK_SPLITS = 50, 10
DEFAULT_AUX, QUICK_AUX = 20, 4
QUICK_GRID = (0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)

RESULT_COLUMNS = ("sweep", "epsilon", "n_pv", "n_npv", "n_test", "split", "method", "spearman", "clip_X", "clip_y")
SUMMARY_COLUMNS = ("sweep", "epsilon", "n_pv", "method", "splits", "spearman_mean", "spearman_sd", "spearman_se",
                   "omega_x", "omega_y", "aux_score", "search_seconds")


# -- arguments ---------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_SPLITS} splits, {QUICK_AUX} × {QUICK_AUX} searches on a coarse ω grid")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (data, splits, searches, noise)")
    ap.add_argument("--splits", type=int, default=None,
                    help=f"Monte Carlo CV splits (default {DEFAULT_SPLITS}; {QUICK_SPLITS} with --quick)")
    ap.add_argument("--sweeps", type=comma_list(str), default=list(SWEEPS), help="comma list of epsilon,npv")
    ap.add_argument("--epsilons", type=comma_list(float), default=[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
                    help="ε of the ε sweep")
    ap.add_argument("--n-pvs", type=comma_list(int), default=list(range(0, 801, 100)), help="n_pv of the n_pv sweep")
    ap.add_argument("--epsilon", type=float, default=2.0, help="ε of the n_pv sweep (default 2)")
    ap.add_argument("--n-pv", type=int, default=500, help="n_pv of the ε sweep (default 500)")
    ap.add_argument("--n-npv", type=int, default=10, help="public training rows (default 10)")
    ap.add_argument("--n-test", type=int, default=100, help="validation rows (default 100)")
    ap.add_argument("--n-total", type=int, default=1000, help="rows of the synthetic data set (default 1000)")
    ap.add_argument("--d", type=int, default=10, help="dimension (default 10)")
    ap.add_argument("--split", type=comma_list(float), default=None,
                    help="budget split p1,p2,p3 (default 0.35,0.6,0.05)")
    ap.add_argument("--aux-datasets", type=int, default=None,
                    help=f"auxiliary data sets per threshold search (default {DEFAULT_AUX}; {QUICK_AUX} with --quick)")
    ap.add_argument("--aux-noise", type=int, default=None,
                    help=f"noise draws per auxiliary data set (default {DEFAULT_AUX}; {QUICK_AUX} with --quick)")
    ap.add_argument("--omega-grid", type=comma_list(float), default=None,
                    help="ω grid of the searches (default: the library's; a coarse one with --quick)")
    args = ap.parse_args(argv)
    if args.splits is None:
        args.splits = QUICK_SPLITS if args.quick else DEFAULT_SPLITS
    for name in ("aux_datasets", "aux_noise"):
        if getattr(args, name) is None:
            setattr(args, name, QUICK_AUX if args.quick else DEFAULT_AUX)
    if args.splits < 2:
        ap.error("--splits must be >= 2 (standard errors)")
    if args.aux_datasets < 1 or args.aux_noise < 1:
        ap.error("--aux-datasets and --aux-noise must be >= 1")
    if bad := set(args.sweeps) - set(SWEEPS):
        ap.error(f"unknown sweep(s) {sorted(bad)}; choose from {SWEEPS}")
    if not args.sweeps:
        ap.error("need at least one sweep")
    if args.d < 1 or args.n_test < 2 or args.n_npv < 0 or min([args.n_pv, *args.n_pvs]) < 0:
        ap.error("--d must be >= 1, --n-test >= 2, --n-npv, --n-pv and --n-pvs >= 0")
    if 1 in (args.n_pv, *args.n_pvs):
        ap.error("a private part needs at least 2 rows (n_pv = 0 or >= 2): its SDs set the thresholds")
    largest = args.n_test + args.n_npv + max(args.n_pv if "epsilon" in args.sweeps else 0,
                                             *(args.n_pvs if "npv" in args.sweeps else [0]))
    if largest > args.n_total:
        ap.error(f"--n-total {args.n_total} is smaller than n_test + n_npv + n_pv = {largest}")
    return args


# -- one setting ---------------------------------------------------------------------------------------
def make_split(X: np.ndarray, y: np.ndarray, n_test: int, n_npv: int, n_pv: int, split: int, seed: int,
               preprocess: Any) -> dict[str, tuple[np.ndarray, np.ndarray] | None]:
    """Split ``split``'s shuffle (the same in every setting), each part pre-processed on its own."""
    order = np.random.default_rng([seed, 1, split]).permutation(X.shape[0])
    parts = {"test": order[:n_test], "public": order[n_test:n_test + n_npv],
             "private": order[n_test + n_npv:n_test + n_npv + n_pv]}
    return {name: preprocess(X[idx], y[idx]) if idx.size else None for name, idx in parts.items()}


def run_setting(X: np.ndarray, y: np.ndarray, epsilon: float, n_pv: int, args: argparse.Namespace,
                rplr: Any, split_p: tuple[float, float, float],
                search: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Threshold search for (ε, n_pv), then every method on every split."""
    choice, seconds = None, 0.0
    if n_pv >= 2:
        start = time.perf_counter()
        grid = args.omega_grid or (QUICK_GRID if args.quick else rplr.DEFAULT_OMEGA_GRID)
        choice = search.choose_clipping(n_pv, args.d, epsilon, split_p, grid=grid, n_datasets=args.aux_datasets,
                                      n_noise=args.aux_noise,
                                      random_state=np.random.default_rng([args.seed, 2, n_pv, int(epsilon * 1e6)]))
        seconds = time.perf_counter() - start
    rows = []
    for s in range(args.splits):
        parts = make_split(X, y, args.n_test, args.n_npv, n_pv, s, args.seed, search.preprocess)
        Xt, yt = parts["test"]
        pub = parts["public"]
        scores: dict[str, tuple[float, float, float]] = {}
        base = rplr.NonPrivateRobustLR().fit(*pub) if pub is not None else None
        base_rho = search.spearman(base.predict(Xt), yt) if base is not None else 0.0
        scores["public_only"] = (base_rho, math.inf, math.inf)
        if choice is None:  # nothing private: every method is the public-only fit
            for method in ("rplr", "nonprivate_clip", "nonprivate_noclip"):
                scores[method] = scores["public_only"]
        else:
            Xp, yp = parts["private"]
            extra = pub if pub is not None else (None, None)
            omegas = dict(omega_x=choice.omega_x, omega_y=choice.omega_y)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", rplr.PrivacyLeakWarning)  # ω·SD of the private part (docstring)
                private = rplr.RobustPrivateLR(epsilon, split=split_p, noise_source="numpy",
                                               random_state=np.random.default_rng(
                                                   [args.seed, 3, s, n_pv, int(epsilon * 1e6)]),
                                               **omegas).fit(Xp, yp, *extra)
            clipped = rplr.NonPrivateRobustLR(**omegas).fit(Xp, yp, *extra)
            plain = rplr.NonPrivateRobustLR().fit(Xp, yp, *extra)
            for method, model in (("rplr", private), ("nonprivate_clip", clipped), ("nonprivate_noclip", plain)):
                scores[method] = (search.spearman(model.predict(Xt), yt), model.clip_X_, model.clip_y_)
        for method in METHODS:
            rho, cx, cy = scores[method]
            rows.append({"epsilon": epsilon, "n_pv": n_pv, "n_npv": args.n_npv, "n_test": args.n_test, "split": s,
                         "method": method, "spearman": rho, "clip_X": cx, "clip_y": cy})
    info = {"omega_x": choice.omega_x if choice else math.nan, "omega_y": choice.omega_y if choice else math.nan,
            "aux_score": choice.score if choice else math.nan, "search_seconds": seconds}
    return rows, info


def summarise(sweep: str, rows: list[dict[str, Any]], info: dict[tuple[float, int], dict[str, Any]]) -> list[dict]:
    out = []
    keys = sorted({(r["epsilon"], r["n_pv"]) for r in rows})
    for eps, n_pv in keys:
        for method in METHODS:
            v = np.array([r["spearman"] for r in rows if (r["epsilon"], r["n_pv"], r["method"]) == (eps, n_pv, method)])
            sd = float(v.std(ddof=1)) if v.size > 1 else math.nan
            out.append({"sweep": sweep, "epsilon": eps, "n_pv": n_pv, "method": method, "splits": v.size,
                        "spearman_mean": float(v.mean()), "spearman_sd": sd, "spearman_se": sd / math.sqrt(v.size),
                        **info[(eps, n_pv)]})
    return out


# -- output ---------------------------------------------------------------------------------------------
def format_table(sweep: str, summary: list[dict[str, Any]]) -> str:
    x = "epsilon" if sweep == "epsilon" else "n_pv"
    head = f"{'ε' if x == 'epsilon' else 'n_pv':>6} " + " ".join(f"{m:>18}" for m in METHODS) + "   ω_x    ω_y"
    lines = [f"Spearman ρ vs {'ε' if x == 'epsilon' else 'n_pv'} (mean ± s.e. over splits)", head]
    for key in sorted({r[x] for r in summary}):
        cells = {r["method"]: r for r in summary if r[x] == key}
        first = cells[METHODS[0]]
        lines.append(f"{key:>6g} " + " ".join(f"{cells[m]['spearman_mean']:>10.3f} ± {cells[m]['spearman_se']:.3f}"
                                              for m in METHODS)
                     + f"  {first['omega_x']:>5.3g}  {first['omega_y']:>5.3g}")
    return "\n".join(lines)


def plot_sweep(path: Path, summary: list[dict[str, Any]], sweep: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = "epsilon" if sweep == "epsilon" else "n_pv"
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = {"rplr": dict(color="tab:green", marker="o"),
              "nonprivate_clip": dict(color="tab:purple", linestyle="--"),
              "nonprivate_noclip": dict(color="tab:orange", linestyle="--"),
              "public_only": dict(color="black", linestyle=":")}
    for method in METHODS:
        rows = sorted((r for r in summary if r["method"] == method), key=lambda r: r[x])
        xs = [r[x] for r in rows]
        ax.errorbar(xs, [r["spearman_mean"] for r in rows], yerr=[r["spearman_se"] for r in rows], label=method,
                    capsize=3, **styles[method])
    if sweep == "epsilon":
        ax.set_xscale("log")
        ax.set_xlabel("ε")
    else:
        ax.set_xlabel("private training rows n_pv")
    ax.set_ylabel("Spearman ρ on the validation set")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    from ldp.regression import rplr, rplr_search

    split_p = tuple(args.split) if args.split is not None else rplr.DEFAULT_SPLIT
    try:
        for eps in [*args.epsilons, args.epsilon]:
            rplr.rplr_noise_scales(args.d, eps, split_p, 1.0, 1.0)  # checks ε and the split, naming the rule
        if args.omega_grid is not None and not all(math.isfinite(w) and w > 0 for w in args.omega_grid):
            raise ValueError(f"--omega-grid values must be finite and > 0, got {args.omega_grid}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    X, y, _ = rplr_search.model_311(args.n_total, args.d, np.random.default_rng([args.seed, 0]))
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"epsilon": [(e, args.n_pv) for e in args.epsilons], "npv": [(args.epsilon, n) for n in args.n_pvs]}
    cache: dict[tuple[float, int], tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    all_rows: list[dict[str, Any]] = []
    summaries: dict[str, list[dict[str, Any]]] = {}
    todo = dict.fromkeys(s for sweep in args.sweeps for s in settings[sweep])
    with progress(len(todo), "rplr_experiment", False if args.quiet else None, unit="setting") as bar:
        for eps, n_pv in todo:
            cache[(eps, n_pv)] = run_setting(X, y, eps, n_pv, args, rplr, split_p, rplr_search)
            note = f"  ε={eps:g} n_pv={n_pv}: search {cache[(eps, n_pv)][1]['search_seconds']:.1f} s"
            (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
            bar.update(1)
    for sweep in args.sweeps:
        rows: list[dict[str, Any]] = []
        for eps, n_pv in settings[sweep]:
            rows += [{"sweep": sweep, **r} for r in cache[(eps, n_pv)][0]]
        summaries[sweep] = summarise(sweep, rows, {k: v[1] for k, v in cache.items()})
        all_rows += rows
    write_csv(args.out / "results.csv", RESULT_COLUMNS, all_rows)
    write_csv(args.out / "summary.csv", SUMMARY_COLUMNS, [r for s in summaries.values() for r in s])
    if not args.no_plots:
        common = (f"d={args.d}, n_test={args.n_test}, n_npv={args.n_npv}, {args.splits} splits, "
                  f"split={tuple(round(p, 3) for p in split_p)}")
        if "epsilon" in summaries:
            plot_sweep(args.out / "spearman_vs_epsilon.png", summaries["epsilon"], "epsilon",
                       f"RPLR vs ε (n_pv={args.n_pv}; {common})")
        if "npv" in summaries:
            plot_sweep(args.out / "spearman_vs_npv.png", summaries["npv"], "npv",
                       f"RPLR vs n_pv (ε={args.epsilon:g}; {common})")
    print(f"model (3.11): n_total={args.n_total}, d={args.d}; {args.splits} Monte Carlo splits; threshold search "
          f"{args.aux_datasets} × {args.aux_noise} per setting; simulation noise (numpy floating point)\n")
    print("\n\n".join(format_table(s, summaries[s]) for s in args.sweeps))
    print(f"\n{len(cache)} settings: {time.perf_counter() - start:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
