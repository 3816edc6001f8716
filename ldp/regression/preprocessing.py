"""Pre-processing for the central-DP regressions as fitted scikit-learn transformers
(seeds-regression.md §3; Kalaja 2020's pipeline, Wang's and Honkela's for contrast).

The noise of SSP/AdaSSP is calibrated to the bounds ``‖x‖ ≤ B_X`` and ``|y| ≤ B_Y``, so the data
must be mapped into those balls. The maps here learn what they need from the **training** data in
``fit`` and apply exactly those values to any later data in ``transform``:

* :class:`Standardize` — ``(x − m_X)/sd_X`` with the training column means and SDs;
* :class:`MaxNormMap` — Kalaja's Eq 3.5: divide by the largest training row norm ``x_max``, so
  every training row lies in the unit ball (test rows may not: harmless for prediction);
* :class:`RowNormMap` — Wang's Eq 3.3: every row divided by its own norm (changes the model);
* :class:`InterceptColumn` — a constant column that keeps the rows in the unit ball;
* :class:`ClipUpper` — Kalaja's Eq 3.8: raw columns clipped at ``m + c·sd`` (upper tail only);
* :class:`ClipSymmetric` — Honkela-style clipping at ``m ± ω·sd``;
* :class:`TargetScaler` — ``y / y_max`` with ``y_max = max|y_train|`` (optionally centred first).

**Public statistics.** Every statistic a transformer computes from the data (means, SDs, x_max,
y_max, clip thresholds) is used *unperturbed*: no privacy budget is spent on it, as Kalaja chose
(the curator shares them; seeds-regression.md §3.2 option 2, §6 "statistics shared
unperturbed"). Each transformer lists them in ``public_statistics_`` (a dict) and warns once per
fit with :class:`~ldp.regression.mechanisms.PrivacyLeakWarning`; ``warn=False`` silences the
warning for users who declare these statistics public (known a priori, or from public data).
Per-row maps (:class:`RowNormMap`) and data-independent ones (:class:`InterceptColumn`) use no
statistic of the data set: a neighbouring data set still differs in one (mapped) row, so they
keep the guarantee; their ``public_statistics_`` is empty and they never warn.

:class:`KalajaPipeline` (or :func:`kalaja_pipeline`) composes them with a regressor, sets the
regressor's ``bound_X``/``bound_y`` to what the maps guarantee (the regressor still enforces them
by clipping), predicts on the original scale of ``y`` and, for the max-norm map, exposes the
coefficients on the original scale (Kalaja's Eq 3.7, :func:`unstandardized_coefficients`).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ldp.regression.mechanisms import PrivacyLeakWarning

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sk_validate_data
except ImportError:  # pragma: no cover - scikit-learn 1.3-1.5
    _sk_validate_data = None

__all__ = [
    "Standardize", "MaxNormMap", "RowNormMap", "InterceptColumn", "ClipUpper", "ClipSymmetric", "TargetScaler",
]

_SQRT_HALF = 1.0 / math.sqrt(2.0)


def _validate(est: BaseEstimator, X: Any, *, reset: bool) -> np.ndarray:
    """``X`` as a finite float64 2-D array; on ``reset`` record ``n_features_in_`` (and feature
    names), otherwise check them against the fit. scikit-learn's messages (they name the rule)."""
    if _sk_validate_data is not None:
        return _sk_validate_data(est, X, reset=reset, dtype=np.float64, ensure_all_finite=True)
    return est._validate_data(X, reset=reset, dtype=np.float64, force_all_finite=True)  # pragma: no cover


def _validate_Xy(est: BaseEstimator, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (2-D) and ``y`` (1-D; a column is raveled with a warning) as finite float64 arrays."""
    if _sk_validate_data is not None:
        return _sk_validate_data(est, X, y, dtype=np.float64, ensure_all_finite=True, y_numeric=True)
    return est._validate_data(X, y, dtype=np.float64, force_all_finite=True, y_numeric=True)  # pragma: no cover


def _real(name: str, value: Any, *, minimum: float | None = None, allow_equal: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    value = float(value)
    if minimum is not None and (value < minimum or (not allow_equal and value == minimum)):
        raise ValueError(f"{name} must be {'>=' if allow_equal else '>'} {minimum}, got {value!r}")
    return value


def _column_sd(X: np.ndarray, mean: np.ndarray, ddof: int) -> np.ndarray:
    """Column SDs; 0 when there are too few rows for ``ddof``."""
    if X.shape[0] <= ddof:
        return np.zeros(X.shape[1])
    return np.sqrt(((X - mean) ** 2).sum(axis=0) / (X.shape[0] - ddof))


def _constant(sd: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Columns whose SD is zero up to rounding (a constant column's computed SD can be ~1 ulp of its value)."""
    return sd <= 10 * np.finfo(float).eps * np.abs(mean)


class _PublicStatisticsTransformer(TransformerMixin, BaseEstimator):
    """Records ``public_statistics_`` and warns once per fit unless ``warn=False``."""

    public_statistics_: dict[str, Any]

    def _publish(self, statistics: dict[str, Any]) -> None:
        self.public_statistics_ = statistics
        if statistics and getattr(self, "warn", True):
            names = ", ".join(statistics)
            warnings.warn(
                f"{type(self).__name__}: {names} computed from the data passed to fit are used unperturbed "
                "(as Kalaja 2020 chose: the curator shares them); no privacy accounting covers them. "
                "Pass warn=False if they are public (known a priori or from public data).",
                PrivacyLeakWarning, stacklevel=3)


# -- column-wise maps ------------------------------------------------------------------------------------
class Standardize(OneToOneFeatureMixin, _PublicStatisticsTransformer):
    """``(x − m_X) / sd_X`` with the training column means ``mean_`` and SDs ``scale_``.

    ``ddof`` is the SD's delta degrees of freedom: 0 (the population SD, as scikit-learn's
    ``StandardScaler``) or 1 (MATLAB's ``zscore``, which Wang's code uses). A constant training
    column (SD zero up to rounding) gets ``scale_ = 1``, so it is only centred (to 0 on the
    training data) and nothing is divided by zero; ``constant_`` marks those columns.
    ``public_statistics_``: ``mean``, ``sd`` (the divisors used).
    """

    mean_: npt.NDArray[np.float64]
    scale_: npt.NDArray[np.float64]
    constant_: npt.NDArray[np.bool_]

    def __init__(self, ddof: int = 0, *, warn: bool = True) -> None:
        self.ddof = ddof
        self.warn = warn

    def fit(self, X: Any, y: Any = None) -> Standardize:
        if isinstance(self.ddof, bool) or not isinstance(self.ddof, numbers.Integral) or self.ddof < 0:
            raise ValueError(f"ddof must be an integer >= 0, got {self.ddof!r}")
        X = _validate(self, X, reset=True)
        mean = X.mean(axis=0)
        sd = _column_sd(X, mean, int(self.ddof))
        self.constant_ = _constant(sd, mean)
        self.mean_ = mean
        self.scale_ = np.where(self.constant_, 1.0, sd)
        self._publish({"mean": self.mean_.copy(), "sd": self.scale_.copy()})
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "mean_")
        X = _validate(self, X, reset=False)
        return (X - self.mean_) / self.scale_

    def inverse_transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "mean_")
        X = _validate(self, X, reset=False)
        return X * self.scale_ + self.mean_


class ClipUpper(OneToOneFeatureMixin, _PublicStatisticsTransformer):
    """Kalaja's Eq 3.8: each raw column clipped from above at ``m_j + c·sd_j`` (``upper_``), with
    ``m``, ``sd`` (population SD) of the raw **training** columns. Only the upper tail is clipped:
    Kalaja's data had non-negative regressors with many values near 0, where a lower bound at
    ``m − c·sd`` would cut into the bulk. Kalaja found ``c`` between 1.3 and 1.6 best.

    Use it on the training data before :class:`Standardize` (which then recomputes the means, SDs
    and, through :class:`MaxNormMap`, ``x_max`` of the clipped data). Applying ``transform`` to test
    data too is Kalaja's Eq 3.9 variant, which predicted much worse in her experiments.
    ``n_clipped_`` (a diagnostic, not released) counts the clipped training entries per column.
    There is no ``inverse_transform``: clipping loses information.
    ``public_statistics_``: ``mean``, ``sd``, ``upper``.
    """

    def __init__(self, c: float = 1.5, *, warn: bool = True) -> None:
        self.c = c
        self.warn = warn

    def fit(self, X: Any, y: Any = None) -> ClipUpper:
        c = _real("c", self.c, minimum=0.0)
        X = _validate(self, X, reset=True)
        mean = X.mean(axis=0)
        sd = _column_sd(X, mean, 0)
        self.mean_, self.sd_ = mean, sd
        self.upper_ = mean + c * sd
        self.n_clipped_ = (X > self.upper_).sum(axis=0)
        self._publish({"mean": mean.copy(), "sd": sd.copy(), "upper": self.upper_.copy()})
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "upper_")
        X = _validate(self, X, reset=False)
        return np.minimum(X, self.upper_)


class ClipSymmetric(OneToOneFeatureMixin, _PublicStatisticsTransformer):
    """Honkela-style clipping (RPLR, seeds-regression.md §2.6): each column clipped to
    ``[m_j − ω·s_j, m_j + ω·s_j]`` (``lower_``, ``upper_``), ``m`` the training column means.
    ``s`` is the per-column population SD, or with ``pooled=True`` one SD of all entries of the
    centred training matrix (Honkela's σ_x). Honkela applies it to centred, row-normalised data
    and tunes ω on auxiliary synthetic data of the same n and d; the thresholds themselves come
    from the private data, unperturbed, as here.
    ``public_statistics_``: ``mean``, ``sd``, ``lower``, ``upper``.
    """

    def __init__(self, omega: float = 1.5, *, pooled: bool = False, warn: bool = True) -> None:
        self.omega = omega
        self.pooled = pooled
        self.warn = warn

    def fit(self, X: Any, y: Any = None) -> ClipSymmetric:
        omega = _real("omega", self.omega, minimum=0.0)
        X = _validate(self, X, reset=True)
        mean = X.mean(axis=0)
        if self.pooled:
            sd = np.full(X.shape[1], float(np.sqrt(((X - mean) ** 2).mean())))
        else:
            sd = _column_sd(X, mean, 0)
        self.mean_, self.sd_ = mean, sd
        self.lower_, self.upper_ = mean - omega * sd, mean + omega * sd
        self.n_clipped_ = ((X < self.lower_) | (X > self.upper_)).sum(axis=0)
        self._publish({"mean": mean.copy(), "sd": sd.copy(), "lower": self.lower_.copy(),
                       "upper": self.upper_.copy()})
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "upper_")
        X = _validate(self, X, reset=False)
        return np.clip(X, self.lower_, self.upper_)


# -- row maps --------------------------------------------------------------------------------------------
def _row_norms(X: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", X, X))


class MaxNormMap(OneToOneFeatureMixin, _PublicStatisticsTransformer):
    """Kalaja's max-norm mapping (Eq 3.5): ``x / x_max`` with ``x_max_`` the largest row L2 norm of
    the (standardised) training data, so every training row has norm ≤ 1 (``B_X = 1``). Test rows
    can exceed 1; that does not matter for prediction. One outlying row shrinks every other row
    towards 0 (clip first: :class:`ClipUpper`). All-zero training data give ``x_max_ = 1``.
    ``public_statistics_``: ``x_max``.
    """

    def __init__(self, *, warn: bool = True) -> None:
        self.warn = warn

    def fit(self, X: Any, y: Any = None) -> MaxNormMap:
        X = _validate(self, X, reset=True)
        x_max = float(_row_norms(X).max())
        self.x_max_ = x_max if x_max > 0 else 1.0
        self._publish({"x_max": self.x_max_})
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "x_max_")
        return _validate(self, X, reset=False) / self.x_max_

    def inverse_transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "x_max_")
        return _validate(self, X, reset=False) * self.x_max_


class RowNormMap(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Wang's row-norm mapping (Eq 3.3): every row divided by its own L2 norm, so ‖x‖ = 1 for every
    non-zero row; zero rows stay zero. (The same map as scikit-learn's ``Normalizer(norm="l2")``.)

    This **changes the model**: each row is rescaled by its own factor while ``y`` is not, so the
    regression is fitted to ``y ≈ (x/‖x‖)·θ`` rather than ``y ≈ x·θ`` (Kalaja §3.2; her Eq 3.4
    divides ``y`` by the same norm instead). It uses no statistic of the data set, only each row's
    own norm, so ``public_statistics_`` is empty and it never warns. Not invertible.
    """

    def fit(self, X: Any, y: Any = None) -> RowNormMap:
        _validate(self, X, reset=True)
        self.public_statistics_: dict[str, Any] = {}
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "public_statistics_")
        X = _validate(self, X, reset=False)
        norms = _row_norms(X)
        out = np.zeros_like(X)
        nz = norms > 0
        out[nz] = X[nz] / norms[nz, None]
        return out


class InterceptColumn(TransformerMixin, BaseEstimator):
    """Prepends a constant column, so a model without intercept (every :mod:`ldp.regression`
    release) can fit one.

    The norm-bound pitfall (seeds-regression.md §6): appending a 1 to a row of the unit ball gives
    norm up to √2, which breaks ``B_X = 1``. With ``scale_to_unit=True`` (default) the map is
    ``x ↦ [1/√2, x/√2]``, which sends the unit ball into the unit ball (``‖·‖² = ½ + ‖x‖²/2 ≤ 1``),
    so ``bound_X = 1`` stays valid. The fitted ``coef_ = [θ₀, θ₁, …]`` of the next model then means
    ``ŷ = θ₀/√2 + Σ_j (θ_j/√2)·x_j`` on this transformer's input scale: intercept ``θ₀·constant_``
    and slopes ``θ_j·scale_`` (:meth:`split_coef` does the conversion). Doing so trades some signal
    in the slopes for the intercept: the rows' share of the norm budget is halved.

    With ``scale_to_unit=False`` the column is ``1`` and ``x`` is unchanged; rows of the unit ball
    then have norm up to √2, and the regressor's ``bound_X`` **must be** ``√2`` (``bound_X_factor_``
    is the factor by which the bound grows: 1 or √2).

    Data-independent: ``public_statistics_`` is empty and it never warns.
    """

    def __init__(self, scale_to_unit: bool = True) -> None:
        self.scale_to_unit = scale_to_unit

    def fit(self, X: Any, y: Any = None) -> InterceptColumn:
        _validate(self, X, reset=True)
        unit = bool(self.scale_to_unit)
        self.constant_ = _SQRT_HALF if unit else 1.0
        self.scale_ = _SQRT_HALF if unit else 1.0
        self.bound_X_factor_ = 1.0 if unit else math.sqrt(2.0)
        self.public_statistics_: dict[str, Any] = {}
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "constant_")
        X = _validate(self, X, reset=False)
        return np.hstack([np.full((X.shape[0], 1), self.constant_), X * self.scale_])

    def inverse_transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "constant_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_ + 1:
            raise ValueError(f"X must have {self.n_features_in_ + 1} columns (the constant first), "
                             f"got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or infinite values")
        return X[:, 1:] / self.scale_

    def split_coef(self, coef: Any) -> tuple[float, np.ndarray]:
        """``(intercept, slopes)`` on this transformer's input scale from the next model's
        ``coef_`` (``θ₀·constant_``, ``θ_j·scale_``)."""
        check_is_fitted(self, "constant_")
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (self.n_features_in_ + 1,):
            raise ValueError(f"coef must have shape ({self.n_features_in_ + 1},), got {coef.shape}")
        return float(coef[0] * self.constant_), coef[1:] * self.scale_

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self, "constant_")
        names = _check_feature_names_in(self, input_features)
        return np.asarray(["intercept", *names], dtype=object)


# -- the target --------------------------------------------------------------------------------------------
class TargetScaler(OneToOneFeatureMixin, _PublicStatisticsTransformer):
    """``y / y_max`` with ``y_max_ = max|y_train|`` (per column), so ``|y| ≤ 1`` on the training
    data (``B_Y = 1``); with ``center=True``, ``(y − ȳ_train) / max|y_train − ȳ_train|``. All-zero
    targets give ``y_max_ = 1``.

    Accepts ``y`` as 1-D (returned 1-D) or as a 2-D column array, as scikit-learn's
    ``TransformedTargetRegressor`` passes it. ``inverse_transform`` maps predictions back.
    ``public_statistics_``: ``y_max`` (and ``y_mean`` when centred).
    """

    def __init__(self, center: bool = False, *, warn: bool = True) -> None:
        self.center = center
        self.warn = warn

    def _as_2d(self, X: Any, reset: bool) -> tuple[np.ndarray, bool]:
        """1-D input as one column (when fitting, or when fitted on one column); else scikit-learn's checks."""
        if not hasattr(X, "columns") and not issparse(X) and (reset or getattr(self, "n_features_in_", 1) == 1):
            arr = np.asarray(X)
            if arr.ndim == 1:
                return _validate(self, arr.reshape(-1, 1), reset=reset), True
        return _validate(self, X, reset=reset), False

    def fit(self, X: Any, y: Any = None) -> TargetScaler:
        """Learn ``y_max_`` (and ``y_mean_``) from the training target ``X`` (1-D or one column per
        target; the second argument is ignored, as in scikit-learn's target transformers)."""
        Y, _ = self._as_2d(X, reset=True)
        self.y_mean_ = Y.mean(axis=0) if self.center else np.zeros(Y.shape[1])
        y_max = np.abs(Y - self.y_mean_).max(axis=0)
        self.y_max_ = np.where(y_max > 0, y_max, 1.0)
        stats: dict[str, Any] = {"y_max": self.y_max_.copy()}
        if self.center:
            stats["y_mean"] = self.y_mean_.copy()
        self._publish(stats)
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "y_max_")
        Y, one_d = self._as_2d(X, reset=False)
        out = (Y - self.y_mean_) / self.y_max_
        return out[:, 0] if one_d else out

    def inverse_transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "y_max_")
        Y, one_d = self._as_2d(X, reset=False)
        out = Y * self.y_max_ + self.y_mean_
        return out[:, 0] if one_d else out
