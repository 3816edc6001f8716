"""Robust private linear regression (RPLR; Honkela, Das, Dikmen & Kaski 2016, new version Honkela
et al. 2017/2018), as described in seeds-regression.md §2.6 (source: the 001 thesis, chapter 3).

**Release** (001 Algorithm 2). Clip every entry of X to ``[−B_x, B_x]`` and y to ``[−B_y, B_y]``
(per-coordinate, symmetric: the data are assumed centred), then release

* ``Sxx = ZᵀZ + P``: the upper triangle of P (diagonal included, d(d+1)/2 draws) i.i.d.
  ``Lap(d(d+1)·B_x²/(p1·ε))``, mirrored, so P is exactly symmetric;
* ``Sxy = Zᵀu + Q``: Q i.i.d. ``Lap(2d·B_x·B_y/(p2·ε))`` (d draws);
* ``Syy = uᵀu + R``: ``R ~ Lap(B_y²/(p3·ε))`` (one draw),

with ``p1 + p2 + p3 = 1`` (default ``(0.35, 0.60, 0.05)``, the thesis's optimised split). Draw
order for reproducing a stream: the d(d+1)/2 entries of P in ``numpy.triu_indices`` order, then
Q, then R, all from one generator (``random_state``).

**Guarantee and neighbouring relation.** The numerators are the replace-one L1 sensitivities of
the clipped statistics (seeds-regression.md §1.5): two data sets of the *same* size n that
differ in one row. This is **bounded DP**, as in the thesis (Theorem 3.9): n is public and is
released with the statistics. The SSP family (:mod:`ldp.regression.ssp`) uses add/remove-one
instead, with other sensitivities. Under add/remove the change of each statistic is at most
``d(d+1)/2·B_x²``, ``d·B_x·B_y`` and ``B_y²``, so the same noise still protects
``Sxx, Sxy, Syy``, but n is then private and ``released_statistics_.n`` must not be published.
The ε-DP claim holds only when the thresholds are fixed a priori (``clip_X``, ``clip_y``).
Thresholds set as ``omega·SD`` of the data (``omega_x``, ``omega_y``; eq 3.12) read the private
data without accounting, as the thesis and its code do. This raises a
:class:`~ldp.regression.mechanisms.PrivacyLeakWarning`.

**Model and prediction.** Bayesian linear regression with fixed precisions (001 eqs 3.1–3.5):
``y | x ~ N(xᵀβ, 1/λ)``, ``β ~ N(0, I/λ₀)``. The posterior mean is
``µ* = (λ₀I + λ·Sxx)⁻¹(λ·Sxy)``, and the prediction is ``ŷ = xᵀµ*``. With ``λ = λ₀ = 1`` (the
defaults) this is ridge(1) on the noisy statistics. A noisy Sxx may be indefinite. The solve
follows the library's one policy (:func:`~ldp.regression.base.solve_ridge`: ``solve``, or
minimum-norm least squares when singular); no eigenvalue fix is applied.

**Public data.** Statistics are additive over data sets, so exact statistics of a small public
data set (``public_X``, ``public_y``) are added to the noisy private ones before the posterior
mean. The public rows are clipped with the same thresholds, as in the thesis's code.

**Out of scope: the prior-based model.** The 2017 version puts Gamma(2, 2) priors on λ and λ₀.
Its likelihood then needs n and yᵀy, and it is fitted with PyMC3's ADVI. This module
implements only the fixed-precision model (analytic posterior mean). Three reasons: the thesis
itself uses this model for its threshold search; it is the 2016 method; and variational
inference would add a probabilistic-programming dependency and a stochastic fit. yᵀy is still
released (Algorithm 2), so a prior-based fit could use ``released_statistics_``. The
fixed-precision prediction ignores it, so the budget spent on it (p3) buys nothing here.

**Choosing the thresholds and the split** (001 §3.4). :func:`choose_clipping` scores every
``(ω_x, ω_y)`` on auxiliary data from model (3.11) of the same n and d (pre-processed like real
data; :func:`auxiliary_data`). Each cell is clipped at ``ω·SD``, perturbed with the split,
predicted with the analytic posterior mean, and scored by Spearman against y. Scores are averaged
over data sets and noise draws, and the argmax is returned. :func:`choose_split` repeats this for
every ``(p1, p2, p3)`` on a simplex grid.
The default ω grid adds 0.005, 0.01, 0.02 and 0.05 below the thesis's ``{0.1, …, 2.0}``, because
the thesis code's choices sat on the floor 0.1 (seeds-regression.md §6).

**What the searches find** (measured with this module; not in the thesis):

* **The ω_x → 0 plateau.** Model-(3.11) features are isotropic (E XᵀX ∝ I), so XᵀX adds little to
  the prior, and the best ω_x is small. As ω_x → 0, Sxx (∝ B_x²) vanishes against λ₀I, and µ*
  tends to ``λ·Sxy = λ(Zᵀu + Q)``. Both terms are ∝ B_x, and Spearman ignores scale, so the
  scores flatten out. This would explain why the thesis code chose ω_x = 0.1, the grid floor,
  everywhere. At small ε the plateau starts far below 0.1. At n = 500, d = 10, ε = 0.1 (10 × 10
  draws, best ω_y) the mean score is 0.17 at ω_x = 0.001 and 0.04 at ω_x = 0.1. At ε = 10 the
  best ω_x is interior (≈ 0.05). For
  y the same happens more weakly (u → B_y·sign(y)), so the lower end of the ω_y curve is flat.
* **Consequence.** Thresholds tuned on isotropic auxiliary data in effect throw XᵀX away. On real
  data with correlated features, that can cost accuracy the search cannot see.
* **The split.** :func:`choose_split` at the thesis's setting (n = 500, d = 10, ε = 2, 5 × 5,
  step 0.05, seed 0) gives (0.05, 0.90, 0.05) on the default grid, where XᵀX is nearly unused.
  On the thesis's own grid (floor 0.1) it gives (0.55, 0.40, 0.05): mean ρ 0.807 against 0.895
  on the default grid. The thesis reports (0.35, 0.60, 0.05), which came from the prior-based
  model fitted by ADVI. The fixed-precision search agrees with it only on yᵀy (the floor).
  ``DEFAULT_SPLIT`` stays the thesis's value.

The pre-processing of the thesis (centre the columns, scale each row to unit L2 norm, centre y) is
:func:`preprocess`. It uses the data's own means, so it is not private either.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.stats import rankdata

from ldp.accountant import PrivacyCost
from ldp.regression.base import LinearModelBase, PrivateLinearModel, as_numpy_generator, solve_ridge
from ldp.regression.mechanisms import PrivacyLeakWarning, laplace_scale, split_budget, symmetric_noise
from ldp.regression.stats import SufficientStatistics, check_Xy

__all__ = [
    "RobustPrivateLR", "NonPrivateRobustLR", "DEFAULT_SPLIT", "DEFAULT_OMEGA_GRID", "THESIS_OMEGA_GRID",
    "clip_data", "rplr_sensitivities", "rplr_noise_scales", "posterior_mean", "preprocess", "model_311",
    "auxiliary_data", "spearman", "spearman_columns", "ClippingChoice", "SplitChoice", "choose_clipping",
    "choose_split", "split_grid", "QUICK_SPLIT_SEARCH",
]

DEFAULT_SPLIT = (0.35, 0.60, 0.05)
"""(p1, p2, p3) for (XᵀX, Xᵀy, yᵀy): the thesis's optimum on n = 500, d = 10, ε = 2 [H:2429]."""

THESIS_OMEGA_GRID = tuple(round(0.1 * k, 10) for k in range(1, 21))
"""The thesis's ω grid ``{0.1, 0.2, …, 2.0}`` (eq 3.13)."""

DEFAULT_OMEGA_GRID = (0.005, 0.01, 0.02, 0.05) + THESIS_OMEGA_GRID
"""The thesis's grid extended downwards. Its lower edge 0.1 was chosen for ω_x in every setting,
and at small ε the best ω_x is far below 0.1 (module docstring: the ω_x → 0 limit)."""

_MAX_BLOCK = 1 << 22  # prediction entries ranked at once by the search (≈ 32 MB of float64)


# -- building blocks -------------------------------------------------------------------------------------
def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _check_split(split: Sequence[float]) -> tuple[float, float, float]:
    try:
        parts = tuple(float(p) for p in split)
    except (TypeError, ValueError):
        raise ValueError(f"split must be three budget fractions (XᵀX, Xᵀy, yᵀy), got {split!r}") from None
    if len(parts) != 3:
        raise ValueError(f"split must be three budget fractions (XᵀX, Xᵀy, yᵀy), got {split!r}")
    if any(not (math.isfinite(p) and p > 0) for p in parts) or abs(math.fsum(parts) - 1) > 1e-12:
        raise ValueError(f"split fractions must each be > 0 and sum to 1, got {list(parts)}")
    return parts  # type: ignore[return-value]


def clip_data(X: np.ndarray, y: np.ndarray, clip_X: float, clip_y: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-coordinate symmetric clipping (001 Algorithm 2, lines 1–6): ``Z = clip(X, ±B_x)``,
    ``u = clip(y, ±B_y)``, and the number of rows in which anything was clipped."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    changed = (np.abs(X) > clip_X).any(axis=1) | (np.abs(y) > clip_y)
    return np.clip(X, -clip_X, clip_X), np.clip(y, -clip_y, clip_y), int(changed.sum())


def rplr_sensitivities(d: int, clip_X: float, clip_y: float) -> tuple[float, float, float]:
    """Replace-one L1 sensitivities of the clipped statistics (upper bounds, seeds-regression.md
    §1.5): ``d(d+1)·B_x²`` for the d(d+1)/2 distinct entries of ZᵀZ, ``2d·B_x·B_y`` for Zᵀu
    (attained) and ``B_y²`` for uᵀu (attained)."""
    return d * (d + 1) * clip_X**2, 2 * d * clip_X * clip_y, clip_y**2


def rplr_noise_scales(d: int, epsilon: float, split: Sequence[float], clip_X: float,
                      clip_y: float) -> tuple[float, float, float]:
    """Laplace scales ``(b_xx, b_xy, b_yy)`` of Algorithm 2: each sensitivity over its share of ε.
    For example, d = 10, ε = 2, B_x = B_y = 1 and the default split give 157.1, 16.7 and 10.0."""
    parts = split_budget(PrivacyCost(_positive(epsilon, "epsilon")), _check_split(split))
    sens = rplr_sensitivities(d, clip_X, clip_y)
    return tuple(laplace_scale(s, p.epsilon) for s, p in zip(sens, parts))  # type: ignore[return-value]


def posterior_mean(xtx: np.ndarray, xty: np.ndarray, precision: float = 1.0,
                   prior_precision: float = 1.0) -> tuple[np.ndarray, str]:
    """``µ* = (λ₀I + λ·Sxx)⁻¹(λ·Sxy)`` (001 eq 3.2) and how it was solved. It is solved as
    ``(Sxx + (λ₀/λ)·I)⁻¹Sxy`` by :func:`~ldp.regression.base.solve_ridge`."""
    return solve_ridge(np.asarray(xtx, dtype=np.float64), np.asarray(xty, dtype=np.float64),
                       prior_precision / precision)


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


# -- the estimators -----------------------------------------------------------------------------------------
class _RobustLinearModel(LinearModelBase):
    """Shared by :class:`RobustPrivateLR` and :class:`NonPrivateRobustLR`: thresholds, clipping,
    public statistics and the posterior mean."""

    _private = False

    def _settings(self) -> None:
        """Validate every parameter before anything is accumulated or spent."""
        owner = type(self).__name__
        for clip_name, omega_name in (("clip_X", "omega_x"), ("clip_y", "omega_y")):
            clip, omega = getattr(self, clip_name), getattr(self, omega_name)
            if clip is not None and omega is not None:
                raise ValueError(f"{owner}: give {clip_name} or {omega_name}, not both")
            if clip is not None:
                _positive(clip, clip_name)
            elif omega is not None:
                _positive(omega, omega_name)
            elif self._private:
                raise ValueError(f"{owner} needs {clip_name} (a clipping threshold fixed a priori) or {omega_name} "
                                 f"(a multiple of the data's SD, which leaks)")
        _positive(self.precision, "precision")
        _positive(self.prior_precision, "prior_precision")
        self._cost()  # epsilon and delta (private only)
        if self._private:
            _check_split(self.split)

    def _thresholds(self, X: np.ndarray, y: np.ndarray, streaming: bool) -> tuple[float, float]:
        owner = type(self).__name__
        out = []
        for clip_name, omega_name, data in (("clip_X", "omega_x", X), ("clip_y", "omega_y", y)):
            clip, omega = getattr(self, clip_name), getattr(self, omega_name)
            if clip is not None:
                out.append(float(clip))
                continue
            if omega is None:
                out.append(math.inf)  # no clipping (non-private reference only)
                continue
            if streaming:
                raise ValueError(f"{owner}.partial_fit needs clip_X and clip_y: thresholds cannot be taken from "
                                 f"data that arrives in chunks ({omega_name} was given)")
            if data.size < 2:
                raise ValueError(f"{owner}: {omega_name} needs at least 2 values to take the data's SD")
            sd = float(np.std(data, ddof=1))  # of all entries of X pooled (eq 3.12), or of y
            value = max(float(omega) * sd, np.finfo(float).tiny)
            if self._private:
                warnings.warn(f"{owner}: {clip_name} = {omega_name}·SD = {value:.6g} is taken from the private "
                              "data, and no privacy guarantee covers that. Pass clip_X and clip_y fixed a priori.",
                              PrivacyLeakWarning, stacklevel=4)
            out.append(value)
        return out[0], out[1]

    def _accumulate(self, X: np.ndarray, y: np.ndarray, owner: str, streaming: bool = False) -> None:
        if not hasattr(self, "_bounds_"):
            self._bounds_ = self._thresholds(X, y, streaming)
            self.statistics_ = SufficientStatistics(X.shape[1])
            self.n_bounded_ = 0
        Z, u, changed = clip_data(X, y, *self._bounds_)
        self.n_bounded_ += changed
        self.statistics_.update(Z, u)

    def _public(self, public_X: Any, public_y: Any) -> SufficientStatistics | None:
        if public_X is None and public_y is None:
            return None
        if public_X is None or public_y is None:
            raise ValueError("give both public_X and public_y, or neither")
        d = self.statistics_.d
        pX, py = check_Xy(public_X, public_y, n_features=d)
        Z, u, _ = clip_data(pX, py, *self._bounds_)  # the same thresholds as the private rows
        return SufficientStatistics.from_data(Z, u)

    # -- fitting -------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, public_X: Any = None, public_y: Any = None) -> "_RobustLinearModel":
        """Clip, accumulate and release once. ``public_X``, ``public_y``: a public data set whose
        exact (clipped) statistics are added to the released ones."""
        self._settings()
        X, y = self._check(X, y, reset=True)
        self._reset()
        self._accumulate(X, y, owner=type(self).__name__)
        return self.release(public_X, public_y)

    def partial_fit(self, X: Any, y: Any) -> "_RobustLinearModel":
        """Accumulate a chunk (clipped; needs ``clip_X`` and ``clip_y``). Nothing is released
        until :meth:`release`."""
        self._settings()
        first = not hasattr(self, "statistics_")
        X, y = self._check(X, y, reset=first)
        if first:
            self._reset()
        self._accumulate(X, y, owner=type(self).__name__, streaming=True)
        return self

    def merge_statistics(self, stats: SufficientStatistics) -> "_RobustLinearModel":
        """Add statistics accumulated elsewhere from rows that were already clipped at this model's
        ``clip_X`` and ``clip_y``. This cannot be checked: the caller must make sure of it."""
        if not hasattr(self, "_bounds_"):
            self._settings()
            if self.omega_x is not None or self.omega_y is not None:
                raise ValueError(f"{type(self).__name__}.merge_statistics needs clip_X and clip_y fixed a priori")
            self._reset()
            self._bounds_ = (math.inf if self.clip_X is None else float(self.clip_X),
                             math.inf if self.clip_y is None else float(self.clip_y))
            self.statistics_ = SufficientStatistics(stats.d)
            self.n_bounded_ = 0
            self.n_features_in_ = stats.d
        return super().merge_statistics(stats)  # type: ignore[return-value]

    def release(self, public_X: Any = None, public_y: Any = None) -> "_RobustLinearModel":
        """Release the statistics (private: spends ε once), add the public ones, fit µ*. Every
        parameter and the public rows are checked before anything is charged."""
        if not hasattr(self, "statistics_") or self.statistics_.n == 0:
            raise ValueError("nothing to release: fit or partial_fit some rows first")
        self.public_statistics_ = self._public(public_X, public_y)
        return super().release()  # type: ignore[return-value]

    def _check_release(self, d: int, bounds: tuple[float, float]) -> None:
        self._settings()

    def _noisy(self, stats: SufficientStatistics, bounds: tuple[float, float],
               rng: np.random.Generator) -> SufficientStatistics:
        return stats.copy()

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        released = self._noisy(stats, bounds, rng)
        public = getattr(self, "public_statistics_", None)
        total = released if public is None else released + public
        self.released_statistics_ = released
        self.clip_X_, self.clip_y_ = bounds
        self.coef_, self.solver_ = posterior_mean(total.xtx, total.xty, float(self.precision),
                                                  float(self.prior_precision))
        self.posterior_precision_ = (float(self.prior_precision) * np.eye(stats.d)
                                     + float(self.precision) * (total.xtx + total.xtx.T) / 2)


class RobustPrivateLR(_RobustLinearModel, PrivateLinearModel):
    """Robust private linear regression: pure ε-DP under bounded DP (replace one row, n public).
    See the module docstring for the full description.

    Parameters
    ----------
    epsilon : total budget ε > 0. delta must be 0 or None (Laplace noise: pure ε-DP).
    clip_X, clip_y : clipping thresholds B_x (every entry of X) and B_y (y), fixed a priori.
    omega_x, omega_y : instead of clip_X / clip_y, thresholds ``ω·SD`` of the data (eq 3.12), with
        a PrivacyLeakWarning. Choose ω with :func:`choose_clipping`.
    split : budget fractions ``(p1, p2, p3)`` for (XᵀX, Xᵀy, yᵀy), each > 0, summing to 1.
    precision, prior_precision : the fixed λ (noise precision) and λ₀ (prior precision of β).
    random_state, accountant : as everywhere in :mod:`ldp.regression`.

    Attributes
    ----------
    coef_ : the posterior mean µ*. released_statistics_ : the noisy ``Sxx, Sxy, Syy`` (and the
    public n). public_statistics_ : the exact public statistics, or None. noise_scales_ :
    ``(b_xx, b_xy, b_yy)``. budget_split_ : the three PrivacyCosts. clip_X_, clip_y_ : the
    thresholds used. n_bounded_ : the number of private rows changed by clipping.
    posterior_precision_ : ``Λ* = λ₀I + λ·(Sxx + public XᵀX)``. privacy_cost_ : ``PrivacyCost(ε)``.
    """

    _gaussian = False
    _private = True

    def __init__(self, epsilon: float = 1.0, delta: float | None = None, *, clip_X: float | None = None,
                 clip_y: float | None = None, omega_x: float | None = None, omega_y: float | None = None,
                 split: Sequence[float] = DEFAULT_SPLIT, precision: float = 1.0, prior_precision: float = 1.0,
                 random_state: Any = None, accountant: Any = None) -> None:
        self.epsilon, self.delta = epsilon, delta
        self.clip_X, self.clip_y, self.omega_x, self.omega_y = clip_X, clip_y, omega_x, omega_y
        self.split, self.precision, self.prior_precision = split, precision, prior_precision
        self.random_state, self.accountant = random_state, accountant

    def _noisy(self, stats: SufficientStatistics, bounds: tuple[float, float],
               rng: np.random.Generator) -> SufficientStatistics:
        d = stats.d
        parts = split_budget(self._cost(), _check_split(self.split))
        scales = tuple(laplace_scale(s, p.epsilon) for s, p in zip(rplr_sensitivities(d, *bounds), parts))
        P = symmetric_noise(rng, d, scales[0], "upper", "laplace")
        Q = rng.laplace(0.0, scales[1], d)
        R = float(rng.laplace(0.0, scales[2]))
        self.noise_scales_, self.budget_split_ = scales, parts
        return SufficientStatistics(d, stats.n, stats.xtx + P, stats.xty + Q, stats.yty + R)


class NonPrivateRobustLR(_RobustLinearModel):
    """The thesis's non-private references: the same pipeline without noise. With thresholds
    (``clip_X``/``omega_x``, ``clip_y``/``omega_y``) it is "non-private with clipping". Without
    them it is "non-private without clipping" (ridge ``(XᵀX + (λ₀/λ)I)⁻¹Xᵀy``). Nothing is
    private: ``privacy_cost_`` is None and ``released_statistics_`` are the exact statistics."""

    def __init__(self, *, clip_X: float | None = None, clip_y: float | None = None, omega_x: float | None = None,
                 omega_y: float | None = None, precision: float = 1.0, prior_precision: float = 1.0) -> None:
        self.clip_X, self.clip_y, self.omega_x, self.omega_y = clip_X, clip_y, omega_x, omega_y
        self.precision, self.prior_precision = precision, prior_precision


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


QUICK_SPLIT_SEARCH = {"step": 0.1, "grid": (0.005, 0.02, 0.1, 0.5, 1.0), "n_datasets": 3, "n_noise": 3}
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
    preset = QUICK_SPLIT_SEARCH if quick else {"step": 0.05, "grid": DEFAULT_OMEGA_GRID, "n_datasets": 5,
                                               "n_noise": 5}
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
