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
:class:`~ldp.regression.mechanisms.PrivacyLeakWarning`. So does leaving both out (the default):
the threshold is then the data's largest |value| (nothing is clipped), like the SSP family's
bounds taken from the data. ``partial_fit`` and ``merge_statistics`` need ``clip_X`` and ``clip_y``.

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
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if

from ldp.privacy.accountant import PrivacyCost
from ldp.regression.base import LinearModelBase, PrivateLinearModel, _can_stream, solve_ridge
from ldp.regression.mechanisms import PrivacyLeakWarning, laplace_scale, split_budget, symmetric_noise
from ldp.regression.stats import MIN_DERIVED_BOUND, SufficientStatistics, check_Xy

__all__ = [
    "RobustPrivateLR", "NonPrivateRobustLR", "DEFAULT_SPLIT", "DEFAULT_OMEGA_GRID", "THESIS_OMEGA_GRID",
    "clip_data", "rplr_sensitivities", "rplr_noise_scales", "posterior_mean",
]

DEFAULT_SPLIT = (0.35, 0.60, 0.05)
"""(p1, p2, p3) for (XᵀX, Xᵀy, yᵀy): the thesis's optimum on n = 500, d = 10, ε = 2 [H:2429]."""

THESIS_OMEGA_GRID = tuple(round(0.1 * k, 10) for k in range(1, 21))
"""The thesis's ω grid ``{0.1, 0.2, …, 2.0}`` (eq 3.13)."""

DEFAULT_OMEGA_GRID = (0.005, 0.01, 0.02, 0.05) + THESIS_OMEGA_GRID
"""The thesis's grid extended downwards. Its lower edge 0.1 was chosen for ω_x in every setting,
and at small ε the best ω_x is far below 0.1 (module docstring: the ω_x → 0 limit)."""



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
    return parts


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
    b_xx, b_xy, b_yy = (laplace_scale(s, p.epsilon) for s, p in zip(sens, parts, strict=True))
    return b_xx, b_xy, b_yy


def posterior_mean(xtx: np.ndarray, xty: np.ndarray, precision: float = 1.0,
                   prior_precision: float = 1.0) -> tuple[np.ndarray, str]:
    """``µ* = (λ₀I + λ·Sxx)⁻¹(λ·Sxy)`` (001 eq 3.2) and how it was solved. It is solved as
    ``(Sxx + (λ₀/λ)·I)⁻¹Sxy`` by :func:`~ldp.regression.base.solve_ridge`."""
    return solve_ridge(np.asarray(xtx, dtype=np.float64), np.asarray(xty, dtype=np.float64),
                       prior_precision / precision)


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
        _positive(self.precision, "precision")
        _positive(self.prior_precision, "prior_precision")
        self._cost()  # epsilon and delta (private only)
        if self._private:
            _check_split(self.split)

    def _streaming_refusal(self, method: str = "partial_fit") -> str | None:
        """Streaming and merging need every threshold fixed a priori (``clip_*``); the non-private
        reference may also leave one out (no clipping)."""
        owner = type(self).__name__
        for clip_name, omega_name in (("clip_X", "omega_x"), ("clip_y", "omega_y")):
            if getattr(self, clip_name) is not None:
                continue
            if getattr(self, omega_name) is not None:
                return (f"{owner}.{method} needs clip_X and clip_y: thresholds cannot be taken from data that "
                        f"arrives in chunks ({omega_name} was given)")
            if self._private:
                return (f"{owner}.{method} needs clip_X and clip_y: thresholds cannot be taken from data that "
                        f"arrives in chunks (fit takes {clip_name} from the data, with a PrivacyLeakWarning)")
        return None

    def _thresholds(self, X: np.ndarray, y: np.ndarray, streaming: bool) -> tuple[float, float]:
        owner = type(self).__name__
        reason = self._streaming_refusal() if streaming else None
        if reason is not None:
            raise ValueError(reason)
        out = []
        for clip_name, omega_name, data in (("clip_X", "omega_x", X), ("clip_y", "omega_y", y)):
            clip, omega = getattr(self, clip_name), getattr(self, omega_name)
            if clip is not None:
                out.append(float(clip))
                continue
            if omega is None and not self._private:
                out.append(math.inf)  # no clipping (the non-private reference)
                continue
            if omega is None:  # the default: nothing clipped, the noise scaled to the data's largest |value|
                value = max(float(np.abs(data).max()), MIN_DERIVED_BOUND)
                warnings.warn(f"{owner}: {clip_name} not given, so it is taken from the data (max |value| = "
                              f"{value:.6g}, nothing clipped); that leaks information no privacy guarantee covers. "
                              f"Pass {clip_name} fixed a priori.", PrivacyLeakWarning, stacklevel=4)
                out.append(value)
                continue
            if data.size < 2:
                raise ValueError(f"{owner}: {omega_name} needs at least 2 values to take the data's SD, got "
                                 f"n_samples = {X.shape[0]}")
            sd = float(np.std(data, ddof=1))  # of all entries of X pooled (eq 3.12), or of y
            value = max(float(omega) * sd, MIN_DERIVED_BOUND)
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
    def fit(self, X: Any, y: Any, public_X: Any = None, public_y: Any = None) -> _RobustLinearModel:
        """Clip, accumulate and release once. ``public_X``, ``public_y``: a public data set whose
        exact (clipped) statistics are added to the released ones."""
        self._settings()
        X, y = self._check(X, y, reset=True)
        self._reset()
        self._accumulate(X, y, owner=type(self).__name__)
        return self.release(public_X, public_y)

    @available_if(_can_stream)
    def partial_fit(self, X: Any, y: Any) -> _RobustLinearModel:
        """Accumulate a chunk (clipped; only with ``clip_X`` and ``clip_y`` fixed a priori). Nothing
        is released until :meth:`release`."""
        self._settings()
        first = not hasattr(self, "statistics_")
        X, y = self._check(X, y, reset=first)
        if first:
            self._reset()
        self._accumulate(X, y, owner=type(self).__name__, streaming=True)
        return self

    def merge_statistics(self, stats: SufficientStatistics) -> _RobustLinearModel:
        """Add statistics accumulated elsewhere from rows that were already clipped at this model's
        ``clip_X`` and ``clip_y``. This cannot be checked: the caller must make sure of it."""
        if not hasattr(self, "_bounds_"):
            self._settings()
            reason = self._streaming_refusal("merge_statistics")
            if reason is not None:
                raise ValueError(reason)
            self._reset()
            self._bounds_ = (math.inf if self.clip_X is None else float(self.clip_X),
                             math.inf if self.clip_y is None else float(self.clip_y))
            self.statistics_ = SufficientStatistics(stats.d)
            self.n_bounded_ = 0
            self.n_features_in_ = stats.d
        return super().merge_statistics(stats)

    def release(self, public_X: Any = None, public_y: Any = None) -> _RobustLinearModel:
        """Release the statistics (private: spends ε once), add the public ones, fit µ*. Every
        parameter and the public rows are checked before anything is charged."""
        if not hasattr(self, "statistics_") or self.statistics_.n == 0:
            raise ValueError("nothing to release: fit or partial_fit some rows first")
        self.public_statistics_ = self._public(public_X, public_y)
        return super().release()

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
        a PrivacyLeakWarning. Choose ω with :func:`choose_clipping`. With neither, the threshold is
        the data's max |value| (nothing clipped), with a PrivacyLeakWarning.
    split : budget fractions ``(p1, p2, p3)`` for (XᵀX, Xᵀy, yᵀy), each > 0, summing to 1.
    precision, prior_precision : the fixed λ (noise precision) and λ₀ (prior precision of β).
    random_state, accountant, noise_source : as everywhere in :mod:`ldp.regression` (``noise_source``
        ``"secure"``, ``"seeded"`` with a random_state, or ``"numpy"``: :mod:`ldp.regression.noise`).

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
                 random_state: Any = None, accountant: Any = None, noise_source: str = "secure") -> None:
        self.epsilon, self.delta, self.noise_source = epsilon, delta, noise_source
        self.clip_X, self.clip_y, self.omega_x, self.omega_y = clip_X, clip_y, omega_x, omega_y
        self.split, self.precision, self.prior_precision = split, precision, prior_precision
        self.random_state, self.accountant = random_state, accountant

    def _noisy(self, stats: SufficientStatistics, bounds: tuple[float, float],
               rng: np.random.Generator) -> SufficientStatistics:
        d = stats.d
        parts = split_budget(self._cost(), _check_split(self.split))
        sens = rplr_sensitivities(d, *bounds)
        scales = tuple(laplace_scale(s, p.epsilon) for s, p in zip(sens, parts, strict=True))
        noise = self._noise()
        if noise.is_numpy:
            P = symmetric_noise(rng, d, scales[0], "upper", "laplace")
            Q = rng.laplace(0.0, scales[1], d)
            R = float(rng.laplace(0.0, scales[2]))
            self.noise_scales_, self.budget_split_ = scales, parts
            return SufficientStatistics(d, stats.n, stats.xtx + P, stats.xty + Q, stats.yty + R)
        # exact discrete Laplace on a grid per statistic, L1 sensitivities inflated for the rounding
        xtx, b_xx = noise.symmetric(stats.xtx, "laplace", sens[0], parts[0].epsilon)
        xty, b_xy = noise.laplace(stats.xty, sens[1], parts[1].epsilon)
        yty, b_yy = noise.laplace([stats.yty], sens[2], parts[2].epsilon)
        self.noise_scales_, self.budget_split_ = (b_xx, b_xy, b_yy), parts
        return SufficientStatistics(d, stats.n, xtx, xty, float(yty[0]))


class NonPrivateRobustLR(_RobustLinearModel):
    """The thesis's non-private references: the same pipeline without noise. With thresholds
    (``clip_X``/``omega_x``, ``clip_y``/``omega_y``) it is "non-private with clipping". Without
    them it is "non-private without clipping" (ridge ``(XᵀX + (λ₀/λ)I)⁻¹Xᵀy``). Nothing is
    private: ``privacy_cost_`` is None and ``released_statistics_`` are the exact statistics."""

    def __init__(self, *, clip_X: float | None = None, clip_y: float | None = None, omega_x: float | None = None,
                 omega_y: float | None = None, precision: float = 1.0, prior_precision: float = 1.0) -> None:
        self.clip_X, self.clip_y, self.omega_x, self.omega_y = clip_X, clip_y, omega_x, omega_y
        self.precision, self.prior_precision = precision, prior_precision
