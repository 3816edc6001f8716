#!/usr/bin/env python3
"""The planner's figures for the documentation: accuracy, detection limits and privacy from ``ldp.plan.frequency``.

    python simulations/planner_figures.py                    # CSVs, and PNGs into docs/img (a few seconds)
    python simulations/planner_figures.py --quick --no-plots # coarse grids, CSVs only (about a second)

Nothing here is simulated: every number is the planner's, that is the exact variance formula of
the protocol's decoder (see ``docs/planner.md``; ``tests/plan/test_plan.py`` checks the planner against
simulated collections). Protocols named without parameters get the planner's defaults for their ε
(:func:`ldp.plan.default_params`).

Tables (CSV in ``--out``, default ``simulations/results/planner_figures``) and figures (PNG in
``--img``, default ``docs/img``, or the ``--out`` folder with ``--quick``):

* ``se_vs_n.csv``, ``plan-se-vs-n.png``: the standard error of a fraction against the number of
  users ``n``, for GRR, RAPPOR, CMS, HCMS and SFP at ``--epsilon`` over ``--d`` values, for an item
  held by ``1/d`` of the users;
* ``detectable_vs_epsilon.csv``, ``plan-detectable-vs-epsilon.png``: the minimum detectable
  fraction (α = 0.05, Bonferroni over the candidates, power 0.5) against ε at ``--n`` users;
* ``grr_vs_d.csv``, ``plan-grr-vs-d.png``: GRR against CMS as the domain grows, at ``--n`` users
  and ε in ``--grr-epsilons`` (for docs/protocols/randomized-response.md);
* ``rappor_horizon.csv``, ``plan-rappor-horizon.png``: the privacy spent in all against the
  number of reports, with and without RAPPOR's memoization (for docs/protocols/rappor.md);
* ``sketch_floor.csv``, ``plan-sketch-floor.png``: the standard error of a CMS fraction against
  ``n`` for several numbers of hash functions ``k``, and the floor set by hash collisions (for
  docs/protocols/sketches.md);
* ``oracles.csv``, ``plan-oracles.png``: every frequency oracle's exact variance of a rare item's
  count divided by the optimum ``4e^ε/(e^ε−1)²``, against ``d`` at ε ∈ {0.5, 1, 2, 4}, and its
  bytes per report in a binary frame (:mod:`ldp.plan.oracles`; for docs/planner.md);
* ``sfp_split.csv``, ``plan-sfp-split.png``: SFP with a total ε of ``--sfp-total``, split between
  the word and the fragment sketches: the smallest discoverable word against the error of a found
  word's count (for docs/protocols/sfp.md).

``--quick`` uses coarse grids (the test suite runs it), and ``--figures`` makes only the named
tables and figures (``--figures sketch_floor,sfp_split``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, save_png, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "planner_figures"
DEFAULT_IMG = ROOT / "docs" / "img"
PROTOCOLS = ("grr", "rappor", "cms", "hcms", "sfp")
COLORS = {"grr": "tab:green", "rappor": "tab:purple", "cms": "tab:blue", "hcms": "tab:orange", "sfp": "tab:red"}
DPI = 100
FIGURE_NAMES = ("se_vs_n", "detectable_vs_epsilon", "grr_vs_d", "rappor_horizon", "sketch_floor", "sfp_split",
                "oracles")
ORACLES = ("grr", "sue", "oue", "blh", "olh", "hr", "ss", "cms", "hcms")  # rr is GRR at d = 2
ORACLE_EPSILONS = (0.5, 1.0, 2.0, 4.0)
ORACLE_STYLES = {"grr": ("tab:green", "-"), "sue": ("tab:gray", "-"), "oue": ("tab:blue", "-"),
                 "blh": ("tab:pink", "--"), "olh": ("tab:red", "--"), "hr": ("tab:brown", "-."),
                 "ss": ("black", ":"), "cms": ("tab:cyan", "-"), "hcms": ("tab:orange", "-.")}

SE_COLUMNS = ("protocol", "epsilon", "d", "n", "frequency", "std_error_count", "std_error_fraction", "report_bits")
DETECT_COLUMNS = ("protocol", "epsilon", "d", "n", "candidates", "alpha", "power", "min_detectable_count",
                  "min_detectable_fraction")
GRR_COLUMNS = ("protocol", "epsilon", "d", "n", "frequency", "std_error_fraction")
HORIZON_COLUMNS = ("series", "protocol", "reports", "distinct_values", "epsilon_per_report", "epsilon_per_value",
                   "epsilon_total")
FLOOR_COLUMNS = ("k", "m", "epsilon", "d", "n", "frequency", "std_error_fraction", "floor")
ORACLE_COLUMNS = ("protocol", "epsilon", "d", "n", "variance_per_user", "optimum", "variance_ratio", "report_bytes")
SPLIT_COLUMNS = ("total_epsilon", "word_epsilon", "fragment_epsilon", "d", "n", "frequency", "std_error_fraction",
                 "min_detectable_fraction")


def _users(text: str) -> int:
    """A number of users, ``1e6`` accepted."""
    (n,) = comma_list(int)(text)
    if n < 1:
        raise ValueError(text)
    return n


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"CSV folder (default {DEFAULT_OUT})")
    ap.add_argument("--img", type=Path, default=None,
                    help=f"PNG folder (default {DEFAULT_IMG}; with --quick, the --out folder)")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--quick", action="store_true", help="coarse grids (a second or so)")
    ap.add_argument("--figures", type=comma_list(str), default=None,
                    help="comma list of tables/figures to make (default all): " + ", ".join(FIGURE_NAMES))
    ap.add_argument("--epsilon", type=float, default=1.0, help="ε of the SE-vs-n figure (default 1)")
    ap.add_argument("--d", type=int, default=100, help="domain size of the SE and detection figures (default 100)")
    ap.add_argument("--n", type=_users, default=10**6, help="users of the ε, d and SFP figures (default 1e6)")
    ap.add_argument("--epsilons", type=comma_list(float), default=None,
                    help="ε grid of the detection figure (default 0.25 to 8)")
    ap.add_argument("--grr-epsilons", type=comma_list(float), default=[1.0, 2.0, 4.0],
                    help="ε of the GRR-vs-d figure (default 1,2,4)")
    ap.add_argument("--ks", type=comma_list(int), default=[1, 4, 16, 256], help="k of the sketch-floor figure")
    ap.add_argument("--sfp-total", type=float, default=8.0, help="total ε of the SFP split figure (default 8)")
    args = ap.parse_args(argv)
    if args.img is None:  # coarse --quick figures never replace the documentation's
        args.img = args.out if args.quick else DEFAULT_IMG
    if args.d < 2 or args.epsilon <= 0 or args.sfp_total <= 0:
        ap.error("need --d >= 2, --epsilon > 0 and --sfp-total > 0")
    if args.figures is None:
        args.figures = list(FIGURE_NAMES)
    bad = sorted(set(args.figures) - set(FIGURE_NAMES))
    if bad or not args.figures:
        ap.error(f"unknown figure(s) {bad}; choose from {', '.join(FIGURE_NAMES)}")
    if args.epsilons is None:
        args.epsilons = [0.5, 1.0, 2.0, 4.0, 8.0] if args.quick else [0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8]
    if not args.epsilons or min(args.epsilons) <= 0 or not args.grr_epsilons or min(args.grr_epsilons) <= 0:
        ap.error("ε values must be > 0")
    if not args.ks or min(args.ks) < 1:
        ap.error("--ks must be >= 1")
    return args


def n_grid(lo: float, hi: float, quick: bool) -> list[int]:
    """Powers of ten from ``lo`` to ``hi``, with two points per decade unless ``quick``."""
    step = 1.0 if quick else 0.5
    out, e = [], math.log10(lo)
    while e <= math.log10(hi) + 1e-9:
        out.append(int(round(10**e)))
        e += step
    return out


# -- tables ------------------------------------------------------------------------------------------
def se_vs_n(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ldp.plan.frequency import plan

    rows = []
    for protocol in PROTOCOLS:
        for n in n_grid(1e3, 1e9, args.quick):
            pl = plan(protocol, n=n, domain_size=args.d, epsilon=args.epsilon)
            rows.append({"protocol": protocol, "epsilon": args.epsilon, "d": args.d, "n": n, "frequency": pl.frequency,
                         "std_error_count": pl.std_error_count, "std_error_fraction": pl.std_error_fraction,
                         "report_bits": pl.report_bits})
    return rows


def detectable_vs_epsilon(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ldp.plan.frequency import plan

    rows = []
    for protocol in PROTOCOLS:
        for eps in args.epsilons:
            pl = plan(protocol, n=args.n, domain_size=args.d, epsilon=eps)
            rows.append({"protocol": protocol, "epsilon": eps, "d": args.d, "n": args.n, "candidates": pl.candidates,
                         "alpha": pl.alpha, "power": pl.power, "min_detectable_count": pl.min_detectable_count,
                         "min_detectable_fraction": pl.min_detectable_fraction})
    return rows


def grr_vs_d(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ldp.plan.frequency import plan

    ds = [2, 4, 16, 64, 256, 1024, 4096] if args.quick else [2 ** i for i in range(1, 15)]
    rows = []
    for eps in args.grr_epsilons:
        for protocol in ("grr", "cms"):
            for d in ds:
                pl = plan(protocol, n=args.n, domain_size=d, epsilon=eps)
                rows.append({"protocol": protocol, "epsilon": eps, "d": d, "n": args.n, "frequency": pl.frequency,
                             "std_error_fraction": pl.std_error_fraction})
    return rows


def horizon_series() -> list[tuple[str, Any, int]]:
    """(label, params, distinct values) of the privacy-horizon figure."""
    from ldp.encoders import GRRParams, RapporParams
    from ldp.plan.frequency import default_params

    chrome = RapporParams(128, 2, 128, 0.25, 0.75, 0.5)  # Chrome's NORMAL_NOISE: ε₁ = 2.04, ε∞ = 4.39
    return [
        (f"GRR at ε = {chrome.epsilon_one:.2f}, no memoization", GRRParams(chrome.epsilon_one, 8), 1),
        ("RAPPOR (Chrome's p, q, f), 3 distinct values", chrome, 3),
        ("RAPPOR (Chrome's p, q, f), 1 value", chrome, 1),
        ("RAPPOR, planner's default at ε = 2, 1 value", default_params("rappor", 2.0, 8), 1),
    ]


def rappor_horizon(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ldp.plan.frequency import plan

    reports = [1, 3, 10, 30, 100, 365] if args.quick else [1, 2, 3, 5, 7, 10, 14, 20, 30, 50, 100, 200, 365]
    rows = []
    for label, params, distinct in horizon_series():
        for r in reports:
            pl = plan(params, n=1000, domain_size=8, reports=r, distinct_values=distinct)
            rows.append({"series": label, "protocol": pl.protocol, "reports": r, "distinct_values": distinct,
                         "epsilon_per_report": pl.epsilon_per_report.epsilon,
                         "epsilon_per_value": pl.epsilon_per_value.epsilon, "epsilon_total": pl.epsilon_total.epsilon})
    return rows


def sketch_floor(args: argparse.Namespace, epsilon: float = 4.0, m: int = 1024) -> list[dict[str, Any]]:
    """CMS at ε = 4, m = 1024. ``floor`` is the collision floor of a fraction's standard error:
    with the other users spread evenly over ``d − 1`` values, ``F2 = (n − f)²/(d − 1)``, so the
    collision variance of a fraction tends to ``(1 − φ)²/((d − 1)·k·(m − 1))`` as ``n`` grows."""
    from ldp.encoders import CmsParams
    from ldp.plan.frequency import plan

    rows = []
    for k in args.ks:
        params = CmsParams(epsilon, k, m, 0)
        for n in n_grid(1e3, 1e9, args.quick):
            pl = plan(params, n=n, domain_size=args.d)
            floor = (1 - pl.frequency) / math.sqrt((args.d - 1) * k * (m - 1))
            rows.append({"k": k, "m": m, "epsilon": epsilon, "d": args.d, "n": n, "frequency": pl.frequency,
                         "std_error_fraction": pl.std_error_fraction, "floor": floor})
    return rows


def sfp_split(args: argparse.Namespace, d: int = 1000, frequency: float = 0.01) -> list[dict[str, Any]]:
    from ldp.encoders.sfp import SfpParams
    from ldp.plan.frequency import plan

    total = args.sfp_total
    shares = [1 / 8, 1 / 4, 1 / 2, 3 / 4, 7 / 8] if args.quick else [i / 16 for i in range(1, 16)]
    rows = []
    for share in shares:
        params = SfpParams(total * (1 - share), total * share)
        pl = plan(params, n=args.n, domain_size=d, frequency=frequency)
        rows.append({"total_epsilon": total, "word_epsilon": params.word_epsilon,
                     "fragment_epsilon": params.fragment_epsilon, "d": d, "n": args.n, "frequency": frequency,
                     "std_error_fraction": pl.std_error_fraction,
                     "min_detectable_fraction": pl.min_detectable_fraction})
    return rows


def oracles(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The numbers :func:`ldp.plan.recommend` ranks by, for every oracle over a grid of ``d``."""
    from ldp.plan.frequency import plan
    from ldp.plan.oracles import optimal_variance, score

    ds = [2, 4, 16, 64, 256, 1024, 4096] if args.quick else [2**i for i in range(1, 17)]
    rows = []
    for eps in ORACLE_EPSILONS:
        for protocol in ORACLES:
            for d in ds:
                s = score(plan(protocol, n=args.n, domain_size=d, epsilon=eps), eps)
                rows.append({"protocol": protocol, "epsilon": eps, "d": d, "n": args.n,
                             "variance_per_user": s.variance_per_user, "optimum": optimal_variance(eps),
                             "variance_ratio": s.variance_ratio, "report_bytes": s.report_bytes})
    return rows


# -- figures -----------------------------------------------------------------------------------------
def _figure() -> tuple[Any, Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    return plt, fig, ax


def _save(plt: Any, fig: Any, ax: Any, path: Path, legend_loc: str = "best") -> None:
    """Grid, legend, and a PNG at 100 dpi; with Pillow (a matplotlib dependency) as a 256-colour
    palette PNG, as ``ldp.compare`` does, which keeps the figures committed to docs/img small."""
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(fontsize=8, loc=legend_loc)
    fig.tight_layout()
    save_png(fig, path, DPI)


def _percent_axis(ax: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{100 * y:.3g}%"))


def _plain_ticks(ax: Any, ticks: Sequence[float]) -> None:
    """x ticks at ``ticks``, labelled as plain numbers (not 2^i)."""
    from matplotlib.ticker import NullLocator

    ax.set_xticks(list(ticks))
    ax.set_xticklabels([f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())


def plot_se_vs_n(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    for protocol in PROTOCOLS:
        rs = [r for r in rows if r["protocol"] == protocol]
        ax.plot([r["n"] for r in rs], [r["std_error_fraction"] for r in rs], "-o", ms=3, color=COLORS[protocol],
                label=f"{protocol} ({rs[0]['report_bits']} bits a report)")
    r0 = rows[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    _percent_axis(ax)
    ax.set_xlabel("users n")
    ax.set_ylabel("standard error of a fraction")
    ax.set_title(f"Planned standard error, ε = {r0['epsilon']:g}, d = {r0['d']}, "
                 f"item held by {100 * r0['frequency']:g}%", fontsize=10)
    _save(plt, fig, ax, path)


def plot_detectable(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    for protocol in PROTOCOLS:
        rs = [r for r in rows if r["protocol"] == protocol and math.isfinite(r["min_detectable_fraction"])]
        label = protocol if protocol != "sfp" else "sfp (discovery, ε split evenly)"
        ax.plot([r["epsilon"] for r in rs], [r["min_detectable_fraction"] for r in rs], "-o", ms=3,
                color=COLORS[protocol], label=label)
    r0 = rows[0]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _percent_axis(ax)
    _plain_ticks(ax, [e for e in (0.25, 0.5, 1, 2, 4, 8, 16) if min(r["epsilon"] for r in rows) <= e
                      <= max(r["epsilon"] for r in rows)])
    ax.set_xlabel("ε per report")
    ax.set_ylabel("minimum detectable fraction")
    ax.set_title(f"Detection limit, n = {r0['n']:,}, d = {r0['d']} (α = {r0['alpha']:g}, Bonferroni, "
                 f"power {r0['power']:g})", fontsize=10)
    _save(plt, fig, ax, path)


def plot_grr_vs_d(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    epsilons = sorted({r["epsilon"] for r in rows})
    shades = ["tab:green", "tab:blue", "tab:purple", "tab:red", "tab:brown"]
    for i, eps in enumerate(epsilons):
        for protocol, style in (("grr", "-o"), ("cms", "--")):
            rs = [r for r in rows if r["protocol"] == protocol and r["epsilon"] == eps]
            ax.plot([r["d"] for r in rs], [r["std_error_fraction"] for r in rs], style, ms=3,
                    color=shades[i % len(shades)], label=f"{protocol.upper()}, ε = {eps:g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _percent_axis(ax)
    ax.set_xlabel("domain size d")
    ax.set_ylabel("standard error of a fraction")
    ax.set_title(f"GRR against CMS as the domain grows, n = {rows[0]['n']:,}, item held by 1/d", fontsize=10)
    _save(plt, fig, ax, path)


def plot_horizon(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    styles = ["-", "-o", "-s", "-^"]
    colors = ["tab:green", "tab:purple", "tab:blue", "tab:red"]
    for i, (label, _, _) in enumerate(horizon_series()):
        rs = [r for r in rows if r["series"] == label]
        ax.plot([r["reports"] for r in rs], [r["epsilon_total"] for r in rs], styles[i], ms=3, color=colors[i],
                label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reports per user over the horizon")
    ax.set_ylabel("ε spent in all")
    ax.set_title("Privacy over a horizon: memoization caps RAPPOR", fontsize=10)
    _save(plt, fig, ax, path, legend_loc="upper left")


def plot_floor(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    ks = sorted({r["k"] for r in rows})
    colors = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown"]
    for i, k in enumerate(ks):
        rs = [r for r in rows if r["k"] == k]
        c = colors[i % len(colors)]
        ax.plot([r["n"] for r in rs], [r["std_error_fraction"] for r in rs], "-o", ms=3, color=c, label=f"k = {k}")
        ax.axhline(rs[0]["floor"], ls=":", color=c, lw=1)
    r0 = rows[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    _percent_axis(ax)
    ax.set_xlabel("users n")
    ax.set_ylabel("standard error of a fraction")
    ax.set_title(f"CMS, ε = {r0['epsilon']:g}, m = {r0['m']}, d = {r0['d']}: dotted lines are the collision floors",
                 fontsize=10)
    _save(plt, fig, ax, path)


def plot_split(path: Path, rows: list[dict[str, Any]]) -> None:
    plt, fig, ax = _figure()
    xs = [r["fragment_epsilon"] for r in rows]
    ax.plot(xs, [r["min_detectable_fraction"] for r in rows], "-o", ms=3, color="tab:red",
            label="smallest word discovered (fragment sketch)")
    ax.plot(xs, [r["std_error_fraction"] for r in rows], "-s", ms=3, color="tab:blue",
            label=f"standard error of a word held by {100 * rows[0]['frequency']:g}% (word sketch)")
    ax.set_yscale("log")
    _percent_axis(ax)
    r0 = rows[0]
    ax.set_xlabel(f"ε_fragment (ε_word = {r0['total_epsilon']:g} − ε_fragment)")
    ax.set_ylabel("fraction of users")
    ax.set_title(f"SFP, ε_word + ε_fragment = {r0['total_epsilon']:g}, n = {r0['n']:,}, default sketches",
                 fontsize=10)
    _save(plt, fig, ax, path, legend_loc="upper center")


def plot_oracles(path: Path, rows: list[dict[str, Any]]) -> None:
    """Four panels of variance / optimum against d (one per ε) and one of bytes per report (the same at
    every ε of the grid: OLH's ``y`` needs a second byte only for ``g > 256``, ε > 5.5)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13.0, 7.6))
    for ax, eps in zip(axes.flat[:4], ORACLE_EPSILONS, strict=True):
        for protocol in ORACLES:
            rs = [r for r in rows if r["protocol"] == protocol and r["epsilon"] == eps]
            color, ls = ORACLE_STYLES[protocol]
            ax.plot([r["d"] for r in rs], [r["variance_ratio"] for r in rs], ls, color=color, lw=1.4, label=protocol)
        ax.axhline(1.0, color="0.6", lw=3, alpha=0.4, zorder=0)
        ax.axvline(3 * math.exp(eps) + 2, color="tab:green", lw=0.8, ls=":")
        ax.set(xscale="log", yscale="log", ylim=(0.2, 50), xlabel="domain size d", ylabel="variance / optimum",
               title=f"ε = {eps:g} (dotted: d = 3e^ε + 2)")
        ax.grid(True, which="major", alpha=0.35)
    ax = axes.flat[4]
    for protocol in ORACLES:
        rs = [r for r in rows if r["protocol"] == protocol and r["epsilon"] == 1.0]
        color, ls = ORACLE_STYLES[protocol]
        ax.plot([r["d"] for r in rs], [r["report_bytes"] for r in rs], ls, color=color, lw=1.4, label=protocol)
    ax.set(xscale="log", yscale="log", xlabel="domain size d", ylabel="bytes per report (binary frame)",
           title="report size (the same at each ε above)")
    ax.grid(True, which="major", alpha=0.35)
    axes.flat[5].axis("off")
    axes.flat[5].legend(*axes.flat[0].get_legend_handles_labels(), loc="center", fontsize=10,
                        title="exact variance of a rare item's count, per user")
    fig.tight_layout()
    save_png(fig, path, DPI)


FIGURES = {  # name: (CSV columns, table, figure, PNG file)
    "se_vs_n": (SE_COLUMNS, se_vs_n, plot_se_vs_n, "plan-se-vs-n.png"),
    "detectable_vs_epsilon": (DETECT_COLUMNS, detectable_vs_epsilon, plot_detectable, "plan-detectable-vs-epsilon.png"),
    "grr_vs_d": (GRR_COLUMNS, grr_vs_d, plot_grr_vs_d, "plan-grr-vs-d.png"),
    "rappor_horizon": (HORIZON_COLUMNS, rappor_horizon, plot_horizon, "plan-rappor-horizon.png"),
    "sketch_floor": (FLOOR_COLUMNS, sketch_floor, plot_floor, "plan-sketch-floor.png"),
    "sfp_split": (SPLIT_COLUMNS, sfp_split, plot_split, "plan-sfp-split.png"),
    "oracles": (ORACLE_COLUMNS, oracles, plot_oracles, "plan-oracles.png"),
}


# -- main --------------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.4g}%" if math.isfinite(x) else "never"


def summary(tables: dict[str, list[dict[str, Any]]]) -> str:
    """A few numbers of each table, for the terminal."""
    lines = []
    if se := tables.get("se_vs_n"):
        n_mid = min({r["n"] for r in se}, key=lambda n: abs(math.log10(n) - 6))
        lines.append(f"SE of a fraction at n = {n_mid:,}: " + ", ".join(
            f"{r['protocol']} {_pct(r['std_error_fraction'])}" for r in se if r["n"] == n_mid))
    if det := tables.get("detectable_vs_epsilon"):
        for eps in sorted({r["epsilon"] for r in det}):
            lines.append(f"min detectable fraction at ε = {eps:g}: " + ", ".join(
                f"{r['protocol']} {_pct(r['min_detectable_fraction'])}" for r in det if r["epsilon"] == eps))
    if gd := tables.get("grr_vs_d"):
        for eps in sorted({r["epsilon"] for r in gd}):
            worse = [r["d"] for r in gd if r["protocol"] == "grr" and r["epsilon"] == eps and r["std_error_fraction"]
                     > next(c["std_error_fraction"] for c in gd if c["protocol"] == "cms" and c["epsilon"] == eps
                            and c["d"] == r["d"])]
            lines.append(f"ε = {eps:g}: GRR's SE above CMS's from d = {min(worse) if worse else 'never'}")
    if hz := tables.get("rappor_horizon"):
        last = max(r["reports"] for r in hz)
        lines.append(f"ε in all after {last} reports: " + "; ".join(
            f"{r['series']}: {r['epsilon_total']:.3g}" for r in hz if r["reports"] == last))
    if fl := tables.get("sketch_floor"):
        lines.append("CMS collision floors: " + ", ".join(
            f"k = {k}: {_pct(next(r['floor'] for r in fl if r['k'] == k))}" for k in sorted({r["k"] for r in fl})))
    if sp := tables.get("sfp_split"):
        lines.append("SFP split (ε_fragment: smallest word found / SE of a word at 1%): " + ", ".join(
            f"{r['fragment_epsilon']:g}: {_pct(r['min_detectable_fraction'])} / {_pct(r['std_error_fraction'])}"
            for r in sp))
    if orc := tables.get("oracles"):
        d_max = max(r["d"] for r in orc)
        for eps in ORACLE_EPSILONS:
            at = sorted((r for r in orc if r["epsilon"] == eps and r["d"] == d_max), key=lambda r: r["variance_ratio"])
            lines.append(f"ε = {eps:g}, d = {d_max:,}, variance / optimum: " + ", ".join(
                f"{r['protocol']} {r['variance_ratio']:.3g} ({r['report_bytes']} B)" for r in at))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    tables = {}
    with progress(len(args.figures), "planner_figures", False if args.quiet else None, unit="figure") as bar:
        for name in args.figures:
            bar.set_postfix_str(name)
            columns, make, plot, png = FIGURES[name]
            tables[name] = rows = make(args)
            write_csv(args.out / f"{name}.csv", columns, rows)
            if not args.no_plots:
                args.img.mkdir(parents=True, exist_ok=True)
                plot(args.img / png, rows)
            bar.update(1)
    print(summary(tables))
    where = f"{args.out}" + ("" if args.no_plots else f" and {len(tables)} figure(s) in {args.img}")
    print(f"{time.perf_counter() - start:.1f} s; wrote {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
