"""Robust private linear regression: the auxiliary-data searches of Honkela et al. (001 §3.4;
seeds-regression.md §2.6) for the clipping thresholds and the budget split, and the model-(3.11)
data and Spearman scoring they (and ``simulations/rplr_experiment.py``) use. The estimator
itself is in :mod:`ldp.regression.rplr`.

The searches run on synthetic auxiliary data and release nothing; the thousands of Laplace draws
they score are simulation noise (numpy floating point), not the exact samplers of a release
(:mod:`ldp.regression.noise`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from scipy.stats import rankdata

from ldp.regression.base import as_numpy_generator
from ldp.regression.rplr import DEFAULT_OMEGA_GRID, DEFAULT_SPLIT, _check_split, _positive
from ldp.regression.stats import check_Xy

__all__ = [
    "preprocess", "model_311", "auxiliary_data", "spearman", "spearman_columns", "ClippingChoice", "SplitChoice",
    "choose_clipping", "choose_split", "split_grid", "QUICK_SPLIT_SEARCH",
]

_MAX_BLOCK = 1 << 22  # prediction entries ranked at once by the search (≈ 32 MB of float64)


# -- auxiliary data and scoring ---------------------------------------------------------------------
def preprocess(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """The thesis's normalisation (001 §3.5): centre each column of X, scale every row to unit L2
    norm (rows that are all zero stay zero), centre y. It uses the data's own means (no privacy).
    The thesis's code applies it separately to the test, private and public parts."""
    X, y = check_Xy(X, y)
    X = X - X.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    X = X / np.where(norms > 0, norms, 1.0)[:, None]
    return X, y - y.mean()


def model_311(n: int, d: int, random_state: Any = None, precision: float = 1.0,
              prior_precision: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One raw data set from model (3.11): ``β ~ N(0, I/λ₀)``, ``x_i ~ N(0, I_d)`` and
    ``y_i ~ N(x_iᵀβ, 1/λ)``. Returns ``(X, y, β)``. Draw order: β, X (row by row), the y noise."""
    rng = as_numpy_generator(random_state)
    beta = rng.normal(0.0, 1.0 / math.sqrt(prior_precision), d)
    X = rng.normal(size=(n, d))
    y = X @ beta + rng.normal(0.0, 1.0 / math.sqrt(precision), n)
    return X, y, beta


def auxiliary_data(n: int, d: int, n_datasets: int, random_state: Any = None, precision: float = 1.0,
                   prior_precision: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``n_datasets`` auxiliary data sets from model (3.11), each with its own β and pre-processed
    like real data (:func:`preprocess`): arrays of shape (n_datasets, n, d) and (n_datasets, n)."""
    rng = as_numpy_generator(random_state)
    Xs, ys = np.empty((n_datasets, n, d)), np.empty((n_datasets, n))
    for k in range(n_datasets):
        X, y, _ = model_311(n, d, rng, precision, prior_precision)
        Xs[k], ys[k] = preprocess(X, y)
    return Xs, ys


def _centred_ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks of each column minus their mean. The fast path is one argsort. Columns that
    contain ties are re-ranked with scipy's ``rankdata`` (average method), so the result equals
    the ranks ``spearmanr`` uses."""
    n = values.shape[0]
    order = np.argsort(values, axis=0, kind="stable")
    ranks = np.empty(values.shape)
    np.put_along_axis(ranks, order, np.arange(1.0, n + 1.0)[:, None], axis=0)
    tied = (np.diff(np.take_along_axis(values, order, axis=0), axis=0) == 0).any(axis=0)
    if tied.any():
        ranks[:, tied] = rankdata(values[:, tied], axis=0)
    return ranks - (n + 1) / 2.0  # average ranks always sum to n(n+1)/2


def spearman_columns(pred: Any, y: Any) -> np.ndarray:
    """Spearman's ρ between every column of ``pred`` (n, m) and ``y`` (n,). It equals
    ``scipy.stats.spearmanr`` column by column (Pearson on average ranks, ties included). The
    thesis's code maps an undefined ρ to 0: a constant column, a constant y, or a column with a
    non-finite value."""
    pred = np.asarray(pred, dtype=np.float64)
    if pred.ndim == 1:
        pred = pred[:, None]
    y = np.asarray(y, dtype=np.float64)
    out = np.zeros(pred.shape[1])
    finite = np.isfinite(pred).all(axis=0)
    if pred.shape[0] < 2 or not np.isfinite(y).all() or not finite.any():
        return out
    ry = rankdata(y) - (y.size + 1) / 2.0
    rp = _centred_ranks(pred[:, finite])
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ry @ rp) / np.sqrt((rp**2).sum(axis=0) * (ry @ ry))
    out[finite] = np.clip(np.nan_to_num(rho, nan=0.0, posinf=0.0, neginf=0.0), -1.0, 1.0)
    return out


def spearman(pred: Any, y: Any) -> float:
    """Spearman's ρ of predictions against the truth (``scipy.stats.spearmanr``), NaN → 0."""
    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input warns and returns NaN
        rho = float(spearmanr(np.asarray(pred, dtype=np.float64), np.asarray(y, dtype=np.float64))[0])
    return rho if math.isfinite(rho) else 0.0


# -- the auxiliary-data searches (001 §3.4) --------------------------------------------------------------------
def _check_grid(grid: Sequence[float], name: str) -> np.ndarray:
    g = np.asarray([_positive(w, name) for w in grid], dtype=np.float64)
    if g.size == 0:
        raise ValueError(f"{name} must not be empty")
    return g


def _check_count(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


class _AuxProblem:
    """Auxiliary data sets, their clipped statistics for every ω on the grids, and standard Laplace
    noise. Everything that does not depend on ε or the split is computed once. Every grid cell and
    every split sees the same data and the same standard draws (common random numbers), so their
    comparison is not blurred by independent noise."""

    def __init__(self, n: int, d: int, n_datasets: int, n_noise: int, grid_x: np.ndarray, grid_y: np.ndarray,
                 rng: np.random.Generator, precision: float, prior_precision: float) -> None:
        self.n, self.d, self.gx, self.gy = n, d, grid_x, grid_y
        self.precision, self.prior_precision = precision, prior_precision
        self.X, y = auxiliary_data(n, d, n_datasets, rng, precision, prior_precision)
        sx = self.X.reshape(n_datasets, -1).std(axis=1, ddof=1)  # SD of all entries (eq 3.12)
        sy = y.std(axis=1, ddof=1)
        self.bx = grid_x[None, :] * sx[:, None]  # (D, Gx)
        self.by = grid_y[None, :] * sy[:, None]  # (D, Gy)
        self.ry = np.stack([rankdata(row) - (n + 1) / 2.0 for row in y])  # centred ranks of y
        U = np.clip(y[:, :, None], -self.by[:, None, :], self.by[:, None, :])  # (D, n, Gy)
        self.ztz = np.empty((n_datasets, grid_x.size, d, d))
        self.ztu = np.empty((n_datasets, grid_x.size, d, grid_y.size))
        for i in range(grid_x.size):
            b = self.bx[:, i, None, None]
            Z = np.clip(self.X, -b, b)
            self.ztz[:, i] = np.einsum("knd,kne->kde", Z, Z)
            self.ztu[:, i] = np.einsum("knd,kng->kdg", Z, U)
        iu = np.triu_indices(d)
        P = np.zeros((n_datasets, n_noise, d, d))
        P[:, :, iu[0], iu[1]] = rng.laplace(0.0, 1.0, (n_datasets, n_noise, iu[0].size))
        self.P = P + np.triu(P, 1).swapaxes(-1, -2)  # standard symmetric Laplace matrices
        self.Q = rng.laplace(0.0, 1.0, (n_datasets, n_noise, d))  # yᵀy noise is not drawn: µ* ignores it

    def scores(self, epsilon: float, split: Sequence[float], ix: np.ndarray | None = None,
               iy: np.ndarray | None = None) -> np.ndarray:
        """Spearman ρ of every (data set, ω_x, noise draw, ω_y) cell, shape (D, Gx', K, Gy'), for
        the grid indices ``ix``, ``iy`` (default all). Predictions use the unclipped x."""
        ix = np.arange(self.gx.size) if ix is None else np.asarray(ix)
        iy = np.arange(self.gy.size) if iy is None else np.asarray(iy)
        p1, p2, _ = _check_split(split)
        D, K, d, n = self.X.shape[0], self.P.shape[1], self.d, self.n
        lam, lam0 = self.precision, self.prior_precision
        out = np.empty((D, ix.size, K, iy.size))
        step = max(1, _MAX_BLOCK // (n * K * iy.size))
        for k in range(D):
            for start in range(0, ix.size, step):
                sel = ix[start:start + step]
                bx, by = self.bx[k, sel], self.by[k, iy]
                b_xx = d * (d + 1) * bx**2 / (p1 * epsilon)  # (g,)
                b_xy = 2 * d * bx[:, None] * by[None, :] / (p2 * epsilon)  # (g, Gy')
                sxx = self.ztz[k, sel][:, None] + b_xx[:, None, None, None] * self.P[k][None]  # (g, K, d, d)
                sxy = (self.ztu[k, sel][:, :, iy][:, None]
                       + self.Q[k][None, :, :, None] * b_xy[:, None, None, :])  # (g, K, d, Gy')
                a = lam0 * np.eye(d) + lam * sxx
                try:
                    mu = np.linalg.solve(a, lam * sxy)
                except np.linalg.LinAlgError:  # a singular draw (probability 0): minimum-norm solution
                    mu = np.linalg.pinv(a) @ (lam * sxy)
                pred = (mu.swapaxes(-1, -2) @ self.X[k].T).reshape(-1, n)  # one row per cell
                rho = _rho_fast(pred, self.ry[k])
                out[k, start:start + sel.size] = rho.reshape(sel.size, K, iy.size)
        return out


def _rho_fast(pred: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Spearman ρ of every row of ``pred`` (m, n) against y (centred ranks ``ry``). This is the
    search's fast path: ordinal ranks from one argsort along contiguous rows. Exact ties within a
    row of continuous predictions have probability 0, so it equals ``spearmanr`` except there
    (tested). Constant or non-finite rows score 0, as in the thesis's code."""
    m, n = pred.shape
    # Σ_i rank(pred_i)·ry_i = Σ_j (j − (n−1)/2)·ry[order_j]: gather y's ranks in sorted order
    gathered = ry[np.argsort(pred, axis=1)]
    denom = math.sqrt(n * (n * n - 1) / 12.0 * float(ry @ ry))
    rho = gathered @ (np.arange(n) - (n - 1) / 2.0) / denom if denom > 0 else np.zeros(m)
    bad = ~np.isfinite(pred).all(axis=1) | (pred.max(axis=1) == pred.min(axis=1))
    rho[bad] = 0.0
    return np.clip(rho, -1.0, 1.0)


@dataclass
class ClippingChoice:
    """The result of :func:`choose_clipping`: the best ``(omega_x, omega_y)``, its mean score and
    the whole table. ``scores[i, j]`` is the mean Spearman ρ at ``(grid_x[i], grid_y[j])`` over
    every data set and noise draw. ``scores_se`` is its standard error across the data sets
    (from the per-data-set means: draws within one data set are not independent)."""

    omega_x: float
    omega_y: float
    score: float
    grid_x: np.ndarray
    grid_y: np.ndarray
    scores: np.ndarray
    scores_se: np.ndarray
    n: int
    d: int
    epsilon: float
    split: tuple[float, float, float]

    def table(self) -> list[dict[str, float]]:
        """One row per grid cell: omega_x, omega_y, score, score_se."""
        return [{"omega_x": float(wx), "omega_y": float(wy), "score": float(self.scores[i, j]),
                 "score_se": float(self.scores_se[i, j])}
                for i, wx in enumerate(self.grid_x) for j, wy in enumerate(self.grid_y)]


def _summarise(per_cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over (data sets, draws) and its standard error across the data sets."""
    per_dataset = per_cell.mean(axis=2)  # (D, Gx, Gy)
    D = per_dataset.shape[0]
    se = per_dataset.std(axis=0, ddof=1) / math.sqrt(D) if D > 1 else np.full(per_dataset.shape[1:], np.nan)
    return per_dataset.mean(axis=0), se


def _argmax(scores: np.ndarray) -> tuple[int, int]:
    i, j = np.unravel_index(int(np.argmax(scores)), scores.shape)  # the first (smallest ω) on ties
    return int(i), int(j)


def choose_clipping(n: int, d: int, epsilon: float, split: Sequence[float] = DEFAULT_SPLIT, *,
                    grid: Sequence[float] = DEFAULT_OMEGA_GRID, grid_y: Sequence[float] | None = None,
                    n_datasets: int = 20, n_noise: int = 20, precision: float = 1.0, prior_precision: float = 1.0,
                    random_state: Any = None) -> ClippingChoice:
    """Choose ``(ω_x, ω_y)`` for :class:`RobustPrivateLR` by the auxiliary-data search (001 §3.4.2).

    Draw ``n_datasets`` data sets of this ``n`` and ``d`` from model (3.11), pre-processed like real
    data. For every ``(ω_x, ω_y)`` in ``grid × grid_y`` (default ``grid`` for both), clip each data
    set at ``ω·SD`` (its own SDs), add ``n_noise`` Laplace draws at the noise scales of
    ``(ε, split)``, predict on the data set's unclipped x with the analytic posterior mean
    ``(λ₀I + λ·Sxx)⁻¹λ·Sxy``, and score Spearman's ρ against its y (in-sample, as the thesis's
    code does; NaN → 0). The table is the mean over data sets × draws, and the argmax is returned.
    The thesis uses 20 × 20. No yᵀy noise is drawn: µ* does not use yᵀy, and the split still sets
    the other two scales. Only n, d, ε and the split are used, not the real data, so the search
    itself costs no privacy. Cost: about ``n_datasets·n_noise·|grid|·|grid_y|`` predictions of
    length n, ranked. At the defaults with n = 500, d = 10 it takes about 3 s on an idle 2-core machine.
    """
    n, d = _check_count(n, "n", 2), _check_count(d, "d", 1)
    eps = _positive(epsilon, "epsilon")
    parts = _check_split(split)
    gx = _check_grid(grid, "grid")
    gy = gx if grid_y is None else _check_grid(grid_y, "grid_y")
    problem = _AuxProblem(n, d, _check_count(n_datasets, "n_datasets", 1), _check_count(n_noise, "n_noise", 1),
                          gx, gy, as_numpy_generator(random_state), _positive(precision, "precision"),
                          _positive(prior_precision, "prior_precision"))
    scores, se = _summarise(problem.scores(eps, parts))
    i, j = _argmax(scores)
    return ClippingChoice(float(gx[i]), float(gy[j]), float(scores[i, j]), gx, gy, scores, se, n, d, eps, parts)


def split_grid(step: float = 0.05, low: float = 0.05, high: float = 0.90) -> list[tuple[float, float, float]]:
    """Every ``(p1, p2, p3)`` with each ``p ∈ {low, low + step, …, high}`` and ``p1 + p2 + p3 = 1``
    (the thesis: step = low = 0.05, high = 0.90; 171 splits). The values are multiples of
    ``step``, and ``1/step`` must be an integer."""
    units = 1.0 / _positive(step, "step")
    m = round(units)
    if abs(units - m) > 1e-9:
        raise ValueError(f"1/step must be an integer, got step={step}")
    lo, hi = math.ceil(round(low * m, 9)), math.floor(round(high * m, 9))
    if lo < 1:
        raise ValueError(f"low must be > 0 (every statistic needs some budget), got {low}")
    out = []
    for a in range(lo, hi + 1):
        for b in range(lo, hi + 1):
            c = m - a - b
            if lo <= c <= hi:
                out.append((a / m, b / m, 1.0 - a / m - b / m))
    return out


@dataclass
class SplitChoice:
    """The result of :func:`choose_split`. ``table`` has one row per split: p1, p2, p3, the chosen
    omega_x and omega_y, ``search_score`` (the best cell's mean on the search data) and
    ``score`` (the chosen cell on independent evaluation data: the ranking criterion)."""

    split: tuple[float, float, float]
    omega_x: float
    omega_y: float
    score: float
    table: list[dict[str, float]] = field(default_factory=list)


class _SplitSearch(TypedDict):
    """The settings of :func:`choose_split`'s search that ``quick`` picks."""

    step: float
    grid: Sequence[float]
    n_datasets: int
    n_noise: int


QUICK_SPLIT_SEARCH: _SplitSearch = {"step": 0.1, "grid": (0.005, 0.02, 0.1, 0.5, 1.0), "n_datasets": 3,
                                    "n_noise": 3}
"""The cheaper settings that ``choose_split(quick=True)`` uses (36 splits, 5 × 5 cells, 3 × 3)."""


def choose_split(n: int = 500, d: int = 10, epsilon: float = 2.0, *, quick: bool = False, step: float | None = None,
                 low: float = 0.05, high: float = 0.90, grid: Sequence[float] | None = None,
                 n_datasets: int | None = None, n_noise: int | None = None, n_eval_datasets: int | None = None,
                 n_eval_noise: int | None = None, precision: float = 1.0, prior_precision: float = 1.0,
                 random_state: Any = None) -> SplitChoice:
    """Choose the budget split (001 §3.4.1) on auxiliary data (thesis: n = 500, d = 10, ε = 2,
    5 data sets × 5 noise draws, splits on the 0.05 grid of :func:`split_grid`).

    For every split: run the threshold search of :func:`choose_clipping` on one shared set of
    auxiliary data. Then score the chosen ``(ω_x, ω_y)`` on a second, independent set of
    ``n_eval_datasets × n_eval_noise`` (default: the same sizes). The split with the best
    evaluation score wins. The evaluation data and draws are shared by all splits (common random
    numbers). The thesis fits the prior-based model by ADVI at this step; here the
    fixed-precision posterior mean is used (module docstring). That model ignores yᵀy, so p3 only
    takes budget away, and the search puts it at ``low``.

    Defaults for ``step``, ``grid``, ``n_datasets`` and ``n_noise``: the thesis's 0.05 step and
    5 × 5, on :data:`DEFAULT_OMEGA_GRID`. That search (171 splits, 24² cells) takes about 30 s on
    an idle 2-core machine. ``quick=True`` uses :data:`QUICK_SPLIT_SEARCH` instead, which takes
    well under a second at n = 500, d = 10. Arguments given explicitly override either. For the results
    at the thesis's setting, see the module docstring.
    """
    preset: _SplitSearch = QUICK_SPLIT_SEARCH if quick else {"step": 0.05, "grid": DEFAULT_OMEGA_GRID,
                                                             "n_datasets": 5, "n_noise": 5}
    step = preset["step"] if step is None else step
    grid = preset["grid"] if grid is None else grid
    n_datasets = preset["n_datasets"] if n_datasets is None else n_datasets
    n_noise = preset["n_noise"] if n_noise is None else n_noise
    n, d = _check_count(n, "n", 2), _check_count(d, "d", 1)
    eps = _positive(epsilon, "epsilon")
    g = _check_grid(grid, "grid")
    splits = split_grid(step, low, high)
    if not splits:
        raise ValueError(f"no split with every fraction in [{low}, {high}] on the {step} grid sums to 1")
    rng = as_numpy_generator(random_state)
    lam, lam0 = _positive(precision, "precision"), _positive(prior_precision, "prior_precision")
    D, K = _check_count(n_datasets, "n_datasets", 1), _check_count(n_noise, "n_noise", 1)
    De = D if n_eval_datasets is None else _check_count(n_eval_datasets, "n_eval_datasets", 1)
    Ke = K if n_eval_noise is None else _check_count(n_eval_noise, "n_eval_noise", 1)
    search = _AuxProblem(n, d, D, K, g, g, rng, lam, lam0)
    evaluation = _AuxProblem(n, d, De, Ke, g, g, rng, lam, lam0)
    table = []
    for split in splits:
        scores, _ = _summarise(search.scores(eps, split))
        i, j = _argmax(scores)
        held_out = float(evaluation.scores(eps, split, np.array([i]), np.array([j])).mean())
        table.append({"p1": split[0], "p2": split[1], "p3": split[2], "omega_x": float(g[i]),
                      "omega_y": float(g[j]), "search_score": float(scores[i, j]), "score": held_out})
    best = max(table, key=lambda r: r["score"])
    return SplitChoice((best["p1"], best["p2"], best["p3"]), best["omega_x"], best["omega_y"], best["score"], table)
