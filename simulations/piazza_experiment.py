#!/usr/bin/env python3
"""Piazza (2021)'s experiments on the SSP family: how much does the hyperparameter's budget γ cost?

    python simulations/piazza_experiment.py              # 32 splits, n up to 327,680 (about 10 s)
    python simulations/piazza_experiment.py --quick      # 12 splits, n ∈ {1280, 20480} (a few seconds)
    python simulations/piazza_experiment.py --noises piazza,analytic --designs toeplitz --no-plots

Data (seeds-regression.md §4.3). ``d = 10``; ``θ₀ ~ N(0, I)`` rescaled to unit norm, drawn once per
``--seed`` and shared by every design and n. For every n in ``--ns`` (default 1280, 20480, 327680 =
20·2⁶, 20·2¹⁰, 20·2¹⁴) one data set per design:

* ``isotropic`` — Piazza's generator: rows i.i.d. ``N(0, I)`` rescaled to unit L2 norm, so
  ``E[xxᵀ] = I/d`` and ``λ_min(XᵀX) ≈ n/d``; ``y = Xθ₀ + N(0, 0.1²)``;
* ``toeplitz`` — the same with rows ``N(0, Σ)``, ``Σ_ij = ρ^|i−j|`` (``--toeplitz-rho``, 0.9) before
  the rescaling: an ill-conditioned design (κ(Σ) ≈ 135; after the rescaling κ(E[xxᵀ]) ≈ 42 and
  ``λ_min(XᵀX) ≈ 0.013·n``) standing in for the correlated UCI data on which Piazza found that
  ridge wins (§5 items 18, 22).

``B_X = 1`` holds by construction. ``|Xθ₀| ≤ 1``, but y is Gaussian and unbounded (§6 pitfall):
the estimators are given ``B_Y = --bound-y`` (1.5) and clip y to ``[−B_Y, B_Y]`` before the release;
the share of clipped training responses is reported (``clip_frac``; a 5-sd event here, so ≈ 0).

Protocol. ``--trials`` (32) random 90/10 train/test splits of each data set (one data set per
design and n, as in the thesis), fresh privacy noise each time; ``ε ∈ {0.001, 0.01, 0.1, 1}``,
``δ = 1/n^{1.1}`` (n = the data set size), ``ρ = 0.05``. Per split and ε the algorithms are

* ``adassp_budget`` — Piazza's Algorithm 3, :class:`ldp.regression.ssp.AdaSSP` with ``gamma`` from
  ``--gammas`` (γ = 1/3 is AdaSSP);
* ``ssp`` (Algorithm 1: ridge offset 1 on the noisy statistics) and ``const_ssp_full`` (Algorithm
  4: the fixed ridge ``√(2d·log(4/δ)·log(2d²/ρ))·B_X²/(ε/2)``), which do not depend on γ;
* ``ols`` (θ*, the denominator of the relative efficiency), ``ridge1`` (ridge with λ = 1, Wang's
  "non-private" reference) and ``trivial`` (θ = 0), none private.

``--noises`` picks the Gaussian constants: ``piazza`` (Lemma 7, ``σ = √(2 log(2/δ'))·Δ/ε'``; valid
since every release has ε' ≤ ε ≤ 1 here) reproduces the thesis; ``analytic`` (Balle & Wang) is the
library's default and is smaller, so every private curve moves towards OLS. The noise of one split
and ε is drawn from one seed shared by the algorithms (common random numbers): SSP and
constSSPfull see the same noisy statistics, and adaSSPbudget at different γ the same standard
normals (scaled differently), so differences between them are less noisy than each curve.
(AdaSSP draws its eigenvalue noise first, so its stream is not aligned with SSP's.)

Speed. The sufficient statistics of each data set are computed once; a split's training
statistics are the total minus the test rows' (O(n_test·d²) per split), and the test MSE comes
from the test rows' statistics. Every estimator is released from them through the public
streaming API (``partial_fit`` of the first training row, ``merge_statistics`` of the rest,
``release``), which equals ``fit`` on the training rows (checked by the test) without an
O(n·d²) pass per estimator and ε (``fit`` at n = 295k takes ≈ 90 ms, a release ≈ 1 ms).

Metrics per (design, noise, n, ε, algorithm, γ):

* ``rel_eff`` — relative efficiency ``E‖θ̂ − θ₀‖² / E‖θ* − θ₀‖²`` (both means over the splits,
  θ* = OLS on the same training split), with a delta-method standard error; ``rel_eff_median`` is
  the median of the per-split ratios and ``rel_eff_ridge1`` the ratio with Wang's denominator
  (ridge λ = 1). Gaussian SSP-type errors are heavy-tailed (the noisy matrix can be nearly
  singular), so the means at small ε are dominated by the worst split: read the medians too.
  The denominator is nearly fixed by the one data set (the 32 splits overlap by 90%): it is about
  ``0.01·d²/n_train·χ²_10/10``, so rel_eff carries that one draw's luck (a factor 0.3–2);
* ``excess_err2`` — mean ``‖θ̂ − θ*‖²``, the privacy cost alone; for SSP and for λ = 0 it is
  ``≈ tr((XᵀX)⁻²)·(σ_Xy² + σ_XX²·‖θ*‖²) ≈ d·(d/n_train)²·(σ_Xy² + σ_XX²)`` on isotropic data;
* ``mse`` — test MSE ``mean((X_test·θ̂ − y_test)²)`` (mean, SD and median over splits) and
  ``mse_ratio_trivial`` (to the MSE of θ = 0, ``E[y²]``: ``‖θ₀‖²/d + 0.01 ≈ 0.11`` on isotropic
  data, ≈ 0.29 on the toeplitz one for seed 0 — not 1: Piazza's "MSE = 1 means predicting the
  mean" does not hold for this generator, §6);
* ``lzp`` — the Lambda Zero Proportion, the share of splits whose ridge ``lambda_`` is 0 (step 5
  of Algorithm 3), with SE ``√(p(1−p)/trials)``; adaSSPbudget only. Also ``lambda_mean``, the
  ceiling (the largest possible λ), ``coef_norm2`` (mean and median of ``‖θ̂‖²``) and ``signal``
  (mean ``θ̂·θ₀``, how much of the truth θ̂ carries).

What to expect (§4.3, §5 items 14–22). On isotropic data ``λ_min(XᵀX) ≈ 0.9n/d`` is large: at
large n and ε adaSSPbudget's λ is 0 (LZP = 1), so it is SSP with a budget ``(1−γ)ε/2`` per release,
and no γ beats SSP; constSSPfull's fixed ridge (≈ 100 at ε = 1) is then pure bias. At ε = 0.001 the
ceiling (∝ 1/ε) dwarfs λ_min, LZP = 0 for every γ, and the heavily damped adaSSPbudget and
constSSPfull beat SSP by orders of magnitude; SSP's error is huge and heavy-tailed. As γ → 0 the
eigenvalue release drowns in its own shift and λ jumps back to the ceiling (worse again, e.g.
n = 20480, ε = 1, γ = 0.01). On the toeplitz design ridge wins up to larger n·ε.

As γ → 1 (and whenever λ sits at its ceiling, e.g. every γ at ε = 0.001) the "necessary" releases
get ``ε_n = (1−γ)ε/2`` each and λ → the ceiling ∝ 1/ε_n. The signal in θ̂ vanishes (``signal`` → 0),
but the noise in X̂ᵀy and X̂ᵀX grows exactly as fast as the ridge, so θ̂ does **not** tend to 0: it
tends to a fixed noise law that depends on neither ε, δ nor n (:func:`gamma_one_limit`; the
median ``‖θ̂‖²`` is ≈ 0.37 for B_Y = 1.5, 0.16 for B_Y = 1). The test MSE then tends to about
``E[y²] + ‖θ̂‖²/d``, ≈ 1.3× the trivial predictor's on isotropic data.

Relative efficiency is not monotone in n: where θ̂ is mostly noise (small ε) the numerator stays
put while the OLS denominator falls like 1/n, so rel_eff grows with n; it falls with n only once
n·ε is large. At n = 327680 and ε = 1, SSP's rel_eff is ``1 + excess/OLS error`` ≈ 1 + 1.36/(χ²_10/10) with
Piazza's constants and B_Y = 1.5: typically 2–3 (1.7–4.2 over 20 seeds), not ≈ 1.

Outputs in ``--out``:

* ``results.csv``: one row per (design, noise, n, ε, algorithm, γ) with the columns above;
* per design and noise: ``rel_eff_<design>_<noise>.png`` (relative efficiency vs γ, one panel per
  ε, n as colours, SSP dashed and constSSPfull dotted as horizontal lines, a red line at γ = 1/3),
  ``lzp_<design>_<noise>.png`` and ``mse_<design>_<noise>.png`` (trivial MSE in grey), unless
  ``--no-plots``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
    sys.path.insert(0, str(ROOT))
from ldp.cli.support import matplotlib_missing  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.simulation.collect import comma_list, write_rows_csv as write_csv  # noqa: E402

DEFAULT_OUT = ROOT / "simulations" / "results" / "piazza"
DESIGNS = ("isotropic", "toeplitz")
NOISES = ("piazza", "analytic")
DEFAULT_NS = (1280, 20480, 327680)
QUICK_NS = (1280, 20480)
DEFAULT_TRIALS = 32
QUICK_TRIALS = 12
DEFAULT_EPSILONS = (0.001, 0.01, 0.1, 1.0)
DEFAULT_GAMMAS = (0.01, 0.05, 0.1, 0.2, 1 / 3, 0.5, 0.7, 0.9, 0.99)
D = 10
NOISE_SD = 0.1
TEST_SHARE = 0.1
PRIVATE = ("adassp_budget", "ssp", "const_ssp_full")
REFERENCES = ("ols", "ridge1", "trivial")
ALGORITHMS = PRIVATE + REFERENCES
DESIGN_IDS = {"isotropic": 1, "toeplitz": 2}
NOISE_IDS = {"piazza": 1, "analytic": 2}

COLUMNS = (
    "design", "noise", "n", "n_train", "epsilon", "delta", "algorithm", "gamma", "trials", "bound_y", "clip_frac",
    "rel_eff", "rel_eff_se", "rel_eff_median", "rel_eff_ridge1", "err2_mean", "err2_sd", "ols_err2_mean",
    "excess_err2",
    "mse", "mse_sd", "mse_median", "mse_ratio_trivial", "trivial_mse", "ols_mse",
    "coef_norm2", "coef_norm2_median", "signal",
    "lzp", "lzp_se", "lambda_mean", "lambda_ceiling", "lstsq_solves", "noise_sd_xty", "seconds",
)


# -- arguments ---------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_TRIALS} splits and n in {','.join(map(str, QUICK_NS))} (unless given)")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=0, help="master seed (θ₀, data, splits, noise)")
    ap.add_argument("--trials", type=int, default=None,
                    help=f"random 90/10 splits per setting (default {DEFAULT_TRIALS}; {QUICK_TRIALS} with --quick)")
    ap.add_argument("--ns", type=comma_list(int), default=None,
                    help=f"comma list of data set sizes (default {','.join(map(str, DEFAULT_NS))})")
    ap.add_argument("--epsilons", type=comma_list(float), default=list(DEFAULT_EPSILONS), help="comma list of total ε")
    ap.add_argument("--gammas", type=comma_list(float), default=list(DEFAULT_GAMMAS),
                    help="comma list of adaSSPbudget's eigenvalue share γ in (0, 1) (1/3 accepted)")
    ap.add_argument("--designs", type=comma_list(str), default=list(DESIGNS), help="comma list of isotropic,toeplitz")
    ap.add_argument("--noises", type=comma_list(str), default=["piazza"],
                    help="comma list of Gaussian constants: piazza (default), analytic")
    ap.add_argument("--toeplitz-rho", type=float, default=0.9, help="correlation ρ of the toeplitz design (0.9)")
    ap.add_argument("--bound-y", type=float, default=1.5, help="B_Y given to the estimators; y is clipped (1.5)")
    ap.add_argument("--rho", type=float, default=0.05, help="AdaSSP's failure probability ρ (0.05)")
    ap.add_argument("--delta-exponent", type=float, default=1.1, help="δ = 1/n^this (1.1)")
    args = ap.parse_args(argv)
    if args.trials is None:
        args.trials = QUICK_TRIALS if args.quick else DEFAULT_TRIALS
    if args.ns is None:
        args.ns = list(QUICK_NS if args.quick else DEFAULT_NS)
    if args.trials < 2:
        ap.error("--trials must be >= 2 (standard errors)")
    if not args.ns or min(args.ns) < 20:
        ap.error("--ns needs data set sizes >= 20 (the test share is 10%)")
    if not args.epsilons or min(args.epsilons) <= 0:
        ap.error("--epsilons must be > 0")
    if not args.gammas or not all(0 < g < 1 for g in args.gammas):
        ap.error("--gammas must be in (0, 1)")
    if bad := set(args.designs) - set(DESIGNS):
        ap.error(f"unknown design(s) {sorted(bad)}; choose from {DESIGNS}")
    if bad := set(args.noises) - set(NOISES):
        ap.error(f"unknown noise(s) {sorted(bad)}; choose from {NOISES}")
    if not args.designs or not args.noises:
        ap.error("need at least one design and one noise")
    if not -1 < args.toeplitz_rho < 1:
        ap.error("--toeplitz-rho must be in (-1, 1)")
    if not (args.bound_y > 0 and 0 < args.rho < 1 and args.delta_exponent > 1):
        ap.error("--bound-y must be > 0, --rho in (0, 1), --delta-exponent > 1")
    return args


# -- data ---------------------------------------------------------------------------------------------
def make_theta(seed: int, d: int = D) -> Any:
    """θ₀ ~ N(0, I_d) rescaled to unit norm (one per seed)."""
    import numpy as np

    theta = np.random.default_rng([seed, 0x7E7A]).normal(size=d)
    return theta / np.linalg.norm(theta)


def toeplitz_cov(d: int, rho: float) -> Any:
    import numpy as np

    idx = np.arange(d)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def make_data(design: str, n: int, theta: Any, seed: int, toeplitz_rho: float = 0.9) -> tuple[Any, Any]:
    """Piazza's generator (rows rescaled to unit norm, ``y = Xθ₀ + N(0, 0.1²)``); ``toeplitz`` draws
    the rows from ``N(0, Σ)``, ``Σ_ij = ρ^|i−j|``, before the rescaling."""
    import numpy as np

    d = theta.shape[0]
    rng = np.random.default_rng([seed, DESIGN_IDS[design], n, 0xDA7A])
    X = rng.normal(size=(n, d))
    if design == "toeplitz":
        X = X @ np.linalg.cholesky(toeplitz_cov(d, toeplitz_rho)).T
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ theta + rng.normal(0.0, NOISE_SD, n)
    return X, y


# -- estimators ---------------------------------------------------------------------------------------
def make_estimator(algorithm: str, epsilon: float, delta: float, gamma: float | None, noise: str, bound_y: float,
                   rho: float, random_state: Any) -> Any:
    from ldp.regression.baselines import OLS, Ridge, TrivialPredictor
    from ldp.regression.ssp import SSP, AdaSSP, ConstSSPFull

    common = dict(bound_X=1.0, bound_y=bound_y, noise=noise, random_state=random_state, noise_source="numpy")
    if algorithm == "adassp_budget":
        return AdaSSP(epsilon, delta, gamma=gamma, rho=rho, **common)
    if algorithm == "ssp":
        return SSP(epsilon, delta, **common)
    if algorithm == "const_ssp_full":
        return ConstSSPFull(epsilon, delta, rho=rho, **common)
    if algorithm == "ols":
        return OLS()
    if algorithm == "ridge1":
        return Ridge(alpha=1.0)
    if algorithm == "trivial":
        return TrivialPredictor()
    raise ValueError(f"unknown algorithm {algorithm!r}")


@dataclass
class SplitStats:
    """A training split as (first row, statistics of the other rows): what :func:`release_from` needs."""

    head_X: Any
    head_y: Any
    rest: Any  # SufficientStatistics


def split_stats(X: Any, y: Any) -> SplitStats:
    from ldp.regression.stats import SufficientStatistics

    return SplitStats(X[:1], y[:1], SufficientStatistics.from_data(X[1:], y[1:]))


def minus(a: Any, b: Any) -> Any:
    """Statistics of ``a``'s rows without ``b``'s (a subset): sums, so differences."""
    from ldp.regression.stats import SufficientStatistics

    return SufficientStatistics(a.d, a.n - b.n, a.xtx - b.xtx, a.xty - b.xty, a.yty - b.yty)


def train_stats(total: Any, X: Any, y: Any, test: Any, head: int) -> tuple[SplitStats, Any]:
    """:func:`split_stats` of the training rows (all but ``test``; ``head`` is the first of them) as
    ``total − stats(test rows) − stats(head)``: O(n_test·d²) per split instead of O(n·d²); and the
    test rows' statistics."""
    from ldp.regression.stats import SufficientStatistics

    hx, hy = X[head:head + 1], y[head:head + 1]
    test_stats = SufficientStatistics.from_data(X[test], y[test])
    return SplitStats(hx, hy, minus(minus(total, test_stats), SufficientStatistics.from_data(hx, hy))), test_stats


def mse_from_stats(coef: Any, test_stats: Any) -> float:
    """``mean((X_test·θ − y_test)²) = (θᵀX̃ᵀX̃θ − 2θᵀX̃ᵀỹ + ỹᵀỹ)/n_test`` from the test statistics."""
    s = test_stats
    return max(float(coef @ s.xtx @ coef - 2 * coef @ s.xty + s.yty), 0.0) / s.n


def release_from(est: Any, s: SplitStats) -> Any:
    """``est`` released from precomputed statistics through the public streaming API; equal to
    ``est.fit(X, y)``. The first row goes through ``partial_fit`` so the model sets its bounds
    (``merge_statistics`` on a fresh model leaves them unset and ``release`` then fails)."""
    return est.partial_fit(s.head_X, s.head_y).merge_statistics(s.rest).release()


def gamma_one_limit(d: int = D, rho: float = 0.05, bound_X: float = 1.0, bound_y: float = 1.5, draws: int = 20000,
                    seed: int = 0) -> tuple[float, float]:
    """Median and 90% quantile of ``‖θ̂‖²`` in adaSSPbudget's γ → 1 limit (λ at its ceiling ≫ λ_min).

    With ``ε_n = (1−γ)ε/2`` the ceiling is ``√(d·L·log(2d²/ρ))·B_X²/ε_n`` and the noise SDs are
    ``√L·B_X²/ε_n`` (X̂ᵀX) and ``√L·B_X·B_Y/ε_n`` (X̂ᵀy): all three ∝ 1/ε_n, so dividing by the ceiling,
    ``θ̂ → (I + W)⁻¹u`` with W symmetric, entries N(0, s²), ``s = 1/√(d·log(2d²/ρ))``, and
    ``u ~ N(0, (s·B_Y/B_X)²·I)``; the data term ``(XᵀX + I)/λ → 0``. The limit depends on neither
    ε, δ, n nor the noise constant. It is heavy-tailed (``λ_min(I + W)`` has a positive density at 0,
    so the mean is infinite), hence quantiles."""
    import numpy as np

    s = 1.0 / math.sqrt(d * math.log(2 * d * d / rho))
    rng = np.random.default_rng([seed, 0x11A1])
    w = np.triu(rng.normal(0.0, s, (draws, d, d)))
    a = w + np.transpose(np.triu(w, 1), (0, 2, 1)) + np.eye(d)
    u = rng.normal(0.0, s * bound_y / bound_X, (draws, d, 1))
    norm2 = (np.linalg.solve(a, u)[..., 0] ** 2).sum(axis=1)
    return float(np.median(norm2)), float(np.quantile(norm2, 0.9))


# -- simulation ---------------------------------------------------------------------------------------
@dataclass
class Trace:
    """Per-split values of one (design, noise, n, ε, algorithm, γ)."""

    err2: list[float] = field(default_factory=list)
    mse: list[float] = field(default_factory=list)
    norm2: list[float] = field(default_factory=list)
    dot: list[float] = field(default_factory=list)
    excess: list[float] = field(default_factory=list)
    lam: list[float] = field(default_factory=list)
    ceiling: float = math.nan
    lstsq: int = 0
    noise_sd_xty: float = math.nan
    seconds: float = 0.0


def configurations(args: argparse.Namespace) -> list[tuple[str, float | None]]:
    return [("adassp_budget", g) for g in args.gammas] + [(a, None) for a in ALGORITHMS[1:]]


def check_settings(args: argparse.Namespace) -> None:
    """Fit every private configuration once on a tiny data set: a ValueError (e.g. ε' > 1 under
    the classical constants) surfaces before any work."""
    import numpy as np

    X, y = make_data("isotropic", 40, make_theta(0), 0)
    s = split_stats(X, y)
    for noise in args.noises:
        for eps in args.epsilons:
            for alg, gamma in configurations(args):
                if alg in PRIVATE:
                    release_from(make_estimator(alg, eps, 1e-6, gamma, noise, args.bound_y, args.rho,
                                                np.random.default_rng(0)), s)


def run_dataset(design: str, n: int, theta: Any, args: argparse.Namespace, bar: Any = None) -> tuple[dict, dict]:
    """All splits of one data set: per-(noise, ε, algorithm, γ) traces and the references' per-split values.
    ``bar`` (an :func:`ldp.display.progress.progress` bar) advances by one per split."""
    import numpy as np

    from ldp.regression.stats import SufficientStatistics, enforce_bounds

    X, y = make_data(design, n, theta, args.seed, args.toeplitz_rho)
    # Clipping is row by row, so clipping the whole data set once = clipping each training split.
    Xc, yc, _ = enforce_bounds(X, y, 1.0, args.bound_y)  # what every private estimator does to its input
    over = np.abs(y) > args.bound_y
    total_raw = SufficientStatistics.from_data(X, y)
    total_clipped = SufficientStatistics.from_data(Xc, yc) if over.any() else total_raw  # X: rounding only
    n_test = max(1, int(round(TEST_SHARE * n)))
    delta = 1.0 / n ** args.delta_exponent
    traces: dict[tuple, Trace] = {}
    ref: dict[str, list[float]] = {"ols_err2": [], "ridge1_err2": [], "trivial_mse": [], "ols_mse": [],
                                   "clip_frac": []}
    configs = configurations(args)
    for trial in range(args.trials):
        perm = np.random.default_rng([args.seed, DESIGN_IDS[design], n, trial, 0x5B17]).permutation(n)
        te, tr = perm[:n_test], perm[n_test:]
        ref["clip_frac"].append(float((over.sum() - over[te].sum()) / tr.size))
        raw, test = train_stats(total_raw, X, y, te, tr[0])  # the test rows are never clipped
        clipped = train_stats(total_clipped, Xc, yc, te, tr[0])[0] if over.any() else raw
        nonprivate = {}
        for alg in REFERENCES:
            start = time.perf_counter()
            coef = release_from(make_estimator(alg, 1.0, delta, None, "piazza", args.bound_y, args.rho, None),
                                raw).coef_
            nonprivate[alg] = (coef, time.perf_counter() - start)
        ols_err2 = float(np.sum((nonprivate["ols"][0] - theta) ** 2))
        ref["ols_err2"].append(ols_err2)
        ref["ridge1_err2"].append(float(np.sum((nonprivate["ridge1"][0] - theta) ** 2)))
        ref["trivial_mse"].append(test.yty / test.n)
        ref["ols_mse"].append(mse_from_stats(nonprivate["ols"][0], test))
        for noise in args.noises:
            for eps in args.epsilons:
                noise_seed = [args.seed, DESIGN_IDS[design], n, NOISE_IDS[noise], round(eps * 1e6), trial]
                for alg, gamma in configs:
                    start = time.perf_counter()
                    if alg in PRIVATE:
                        est = release_from(make_estimator(alg, eps, delta, gamma, noise, args.bound_y, args.rho,
                                                          np.random.default_rng(noise_seed)), clipped)
                        coef, secs = est.coef_, time.perf_counter() - start
                    else:
                        est, (coef, secs) = None, nonprivate[alg]
                    t = traces.setdefault((noise, eps, alg, gamma), Trace())
                    t.err2.append(float(np.sum((coef - theta) ** 2)))
                    t.mse.append(mse_from_stats(coef, test))
                    t.norm2.append(float(coef @ coef))
                    t.dot.append(float(coef @ theta))
                    t.excess.append(float(np.sum((coef - nonprivate["ols"][0]) ** 2)))
                    t.seconds += secs
                    if est is not None:
                        t.lam.append(float(est.lambda_))
                        t.ceiling = float(getattr(est, "lambda_ceiling_", est.lambda_))  # SSP: 0
                        t.lstsq += est.solver_ == "lstsq"
                        t.noise_sd_xty = float(est.noise_sd_[-1])
        if bar is not None:
            bar.update(1)
    return traces, ref


def summarize(design: str, n: int, args: argparse.Namespace, traces: dict, ref: dict) -> list[dict[str, Any]]:
    import numpy as np

    ols = np.asarray(ref["ols_err2"])
    ridge1 = np.asarray(ref["ridge1_err2"])
    trivial_mse = float(np.mean(ref["trivial_mse"]))
    rows = []
    for (noise, eps, alg, gamma), t in traces.items():
        e = np.asarray(t.err2)
        T = len(e)
        rel = e.mean() / ols.mean()
        # delta method for a ratio of means over the same (paired) splits
        rel_se = float(np.std(e - rel * ols, ddof=1) / math.sqrt(T) / ols.mean())
        lzp = float(np.mean(np.asarray(t.lam) == 0.0)) if alg == "adassp_budget" else math.nan
        rows.append({
            "design": design, "noise": noise, "n": n, "n_train": n - max(1, int(round(TEST_SHARE * n))),
            "epsilon": eps, "delta": 1.0 / n ** args.delta_exponent, "algorithm": alg,
            "gamma": math.nan if gamma is None else gamma, "trials": T, "bound_y": args.bound_y,
            "clip_frac": float(np.mean(ref["clip_frac"])),
            "rel_eff": rel, "rel_eff_se": rel_se, "rel_eff_median": float(np.median(e / ols)),
            "rel_eff_ridge1": e.mean() / ridge1.mean(),
            "err2_mean": e.mean(), "err2_sd": float(np.std(e, ddof=1)), "ols_err2_mean": ols.mean(),
            "excess_err2": float(np.mean(t.excess)),
            "mse": float(np.mean(t.mse)), "mse_sd": float(np.std(t.mse, ddof=1)),
            "mse_ratio_trivial": float(np.mean(t.mse)) / trivial_mse, "trivial_mse": trivial_mse,
            "mse_median": float(np.median(t.mse)), "ols_mse": float(np.mean(ref["ols_mse"])),
            "coef_norm2": float(np.mean(t.norm2)), "coef_norm2_median": float(np.median(t.norm2)),
            "signal": float(np.mean(t.dot)),
            "lzp": lzp, "lzp_se": math.sqrt(lzp * (1 - lzp) / T) if alg == "adassp_budget" else math.nan,
            "lambda_mean": float(np.mean(t.lam)) if t.lam else math.nan,
            "lambda_ceiling": t.ceiling, "lstsq_solves": t.lstsq, "noise_sd_xty": t.noise_sd_xty,
            "seconds": t.seconds,
        })
    order = {a: i for i, a in enumerate(ALGORITHMS)}
    rows.sort(key=lambda r: (NOISE_IDS[r["noise"]], r["epsilon"], order[r["algorithm"]],
                             0.0 if math.isnan(r["gamma"]) else r["gamma"]))
    return rows


# -- output -------------------------------------------------------------------------------------------
def _pick(rows: list[dict[str, Any]], **kw: Any) -> dict[str, Any] | None:
    for r in rows:
        if all((math.isnan(r[k]) and math.isnan(v)) if isinstance(v, float) and math.isnan(v) else
               (abs(r[k] - v) < 1e-9 if isinstance(v, float) else r[k] == v) for k, v in kw.items()):
            return r
    return None


def format_table(rows: list[dict[str, Any]], design: str, noise: str, gammas: Sequence[float]) -> str:
    """Relative efficiency (mean ratio) of SSP, constSSPfull, AdaSSP (γ = 1/3 or the grid value
    closest to it) and the best γ; LZP at that γ; MSE over the trivial predictor's."""
    g3 = min(gammas, key=lambda g: abs(g - 1 / 3))
    head = (f"{'n':>7} {'eps':>6}  {'SSP':>10} {'constSSP':>10} {'ada γ=' + format(g3, '.3g'):>10} "
            f"{'best γ':>7} {'ada best':>10}  {'LZP':>5}  {'MSE/triv SSP':>12} {'const':>6} {'ada':>6}  "
            f"{'clip':>6}")
    lines = [f"== {design} design, noise={noise}: relative efficiency E‖θ̂−θ₀‖²/E‖θ*−θ₀‖² (OLS = 1) ==", head]
    sel = [r for r in rows if r["design"] == design and r["noise"] == noise]
    for n in sorted({r["n"] for r in sel}):
        for eps in sorted({r["epsilon"] for r in sel}):
            rs = [r for r in sel if r["n"] == n and r["epsilon"] == eps]
            ssp, const = _pick(rs, algorithm="ssp"), _pick(rs, algorithm="const_ssp_full")
            ada = _pick(rs, algorithm="adassp_budget", gamma=g3)
            best = min((r for r in rs if r["algorithm"] == "adassp_budget"), key=lambda r: r["rel_eff"])
            lines.append(
                f"{n:7d} {eps:6g}  {ssp['rel_eff']:10.4g} {const['rel_eff']:10.4g} {ada['rel_eff']:10.4g} "
                f"{best['gamma']:7.3g} {best['rel_eff']:10.4g}  {ada['lzp']:5.2f}  {ssp['mse_ratio_trivial']:12.4g} "
                f"{const['mse_ratio_trivial']:6.3g} {ada['mse_ratio_trivial']:6.3g}  {ssp['clip_frac']:6.2g}")
    return "\n".join(lines)


def _panels(rows: list[dict[str, Any]], design: str, noise: str, path: Path, metric: str, title: str,
            ylabel: str, log: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sel = [r for r in rows if r["design"] == design and r["noise"] == noise]
    epsilons = sorted({r["epsilon"] for r in sel})
    ns = sorted({r["n"] for r in sel})
    colors = plt.get_cmap("viridis")([0.1 + 0.75 * i / max(1, len(ns) - 1) for i in range(len(ns))])
    fig, axes = plt.subplots(1, len(epsilons), figsize=(4.2 * len(epsilons), 4.2), squeeze=False)
    for ax, eps in zip(axes[0], epsilons, strict=True):
        for n, color in zip(ns, colors, strict=True):
            rs = sorted((r for r in sel if r["n"] == n and r["epsilon"] == eps and r["algorithm"] == "adassp_budget"),
                        key=lambda r: r["gamma"])
            gs = [r["gamma"] for r in rs]
            if metric == "lzp":
                ax.errorbar(gs, [r["lzp"] for r in rs], yerr=[r["lzp_se"] for r in rs], fmt="-o", ms=3,
                            color=color, capsize=2)
                continue
            ax.plot(gs, [r[metric] for r in rs], "-o", ms=3, color=color)
            for alg, style in (("ssp", "--"), ("const_ssp_full", ":")):
                ax.axhline(_pick(sel, n=n, epsilon=eps, algorithm=alg)[metric], ls=style, color=color, lw=1.2)
            if metric == "mse":
                ax.axhline(_pick(sel, n=n, epsilon=eps, algorithm="trivial")["mse"], ls="-", color="gray", lw=0.8,
                           alpha=0.7)
        ax.axvline(1 / 3, color="red", lw=0.8)
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("γ (eigenvalue's share of ε)")
        ax.set_title(f"ε = {eps:g}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ms=3, label=f"n={n}") for n, c in zip(ns, colors, strict=True)]
    if metric != "lzp":
        handles += [Line2D([], [], color="black", ls=ls, label=lab) for ls, lab in
                    (("-", "adaSSPbudget"), ("--", "SSP"), (":", "constSSPfull"))]
        if metric == "mse":
            handles.append(Line2D([], [], color="gray", label="trivial θ=0"))
    axes[0][-1].legend(handles=handles, fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(out: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    for design in args.designs:
        for noise in args.noises:
            common = f"{design} design, noise={noise}, {args.trials} splits, B_Y={args.bound_y:g}"
            _panels(rows, design, noise, out / f"rel_eff_{design}_{noise}.png", "rel_eff",
                    f"Relative efficiency vs γ ({common}); SSP dashed, constSSPfull dotted, γ=1/3 red",
                    "E‖θ̂−θ₀‖² / E‖θ_OLS−θ₀‖²", True)
            _panels(rows, design, noise, out / f"lzp_{design}_{noise}.png", "lzp",
                    f"Lambda Zero Proportion of adaSSPbudget ({common})", "share of splits with λ = 0", False)
            _panels(rows, design, noise, out / f"mse_{design}_{noise}.png", "mse",
                    f"Test MSE vs γ ({common}); trivial θ=0 grey", "test MSE", True)


# -- main ---------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if matplotlib_missing(args.no_plots):
        return 2
    try:
        check_settings(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    theta = make_theta(args.seed)
    rows: list[dict[str, Any]] = []
    from ldp.regression.mechanisms import PrivacyLeakWarning, ReproductionOnlyWarning

    with warnings.catch_warnings():  # no data-derived bounds or unverified constants in the measured runs
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("error", ReproductionOnlyWarning)
        splits = len(args.designs) * len(args.ns) * args.trials
        with progress(splits, "piazza_experiment", False if args.quiet else None, unit="split") as bar:
            for design in args.designs:
                for n in args.ns:
                    t0 = time.perf_counter()
                    traces, ref = run_dataset(design, n, theta, args, bar)
                    rows.extend(summarize(design, n, args, traces, ref))
                    note = f"  {design} n={n}: {time.perf_counter() - t0:.1f} s"
                    (bar.write if bar else print)(note, file=sys.stderr)  # above the bar, or a plain line
    write_csv(args.out / "results.csv", COLUMNS, rows)
    if not args.no_plots:
        plot_all(args.out, rows, args)

    elapsed = time.perf_counter() - start
    print(f"d={D}, unit-norm θ₀ (seed {args.seed}), unit-norm rows, y noise N(0, {NOISE_SD}²), B_X=1, "
          f"B_Y={args.bound_y:g} (y clipped), δ=1/n^{args.delta_exponent:g}, ρ={args.rho:g}; "
          f"{args.trials} random 90/10 splits per setting; γ grid {', '.join(f'{g:.3g}' for g in args.gammas)}; "
          "simulation noise (numpy floating point)")
    print("columns: relative efficiency (mean over splits / OLS's; lower is better) of SSP, constSSPfull, "
          "adaSSPbudget at γ≈1/3 and at its best γ;\nLZP = Lambda Zero Proportion at γ≈1/3; test MSE over the "
          "trivial predictor's; clip = share of training y clipped to ±B_Y\n")
    print("\n\n".join(format_table(rows, design, noise, args.gammas)
                      for design in args.designs for noise in args.noises))
    print(f"\n{len(args.designs)} designs x {len(args.ns)} n x {args.trials} splits: {elapsed:.1f} s; "
          f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
