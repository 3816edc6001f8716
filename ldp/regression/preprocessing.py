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
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, RegressorMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from ldp.regression.mechanisms import PrivacyLeakWarning

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sk_validate_data
except ImportError:  # pragma: no cover - scikit-learn 1.3-1.5
    _sk_validate_data = None

__all__ = [
    "Standardize", "MaxNormMap", "RowNormMap", "InterceptColumn", "ClipUpper", "ClipSymmetric", "TargetScaler",
    "unstandardized_coefficients", "KalajaPipeline", "kalaja_pipeline",
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

    def __init__(self, ddof: int = 0, *, warn: bool = True) -> None:
        self.ddof = ddof
        self.warn = warn

    def fit(self, X: Any, y: Any = None) -> "Standardize":
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

    def fit(self, X: Any, y: Any = None) -> "ClipUpper":
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

    def fit(self, X: Any, y: Any = None) -> "ClipSymmetric":
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

    def fit(self, X: Any, y: Any = None) -> "MaxNormMap":
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

    def fit(self, X: Any, y: Any = None) -> "RowNormMap":
        _validate(self, X, reset=True)
        self.public_statistics_ = {}
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

    def fit(self, X: Any, y: Any = None) -> "InterceptColumn":
        _validate(self, X, reset=True)
        unit = bool(self.scale_to_unit)
        self.constant_ = _SQRT_HALF if unit else 1.0
        self.scale_ = _SQRT_HALF if unit else 1.0
        self.bound_X_factor_ = 1.0 if unit else math.sqrt(2.0)
        self.public_statistics_ = {}
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

    def fit(self, X: Any, y: Any = None) -> "TargetScaler":
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


# -- Kalaja Eq 3.7 and the composed pipeline -----------------------------------------------------------------
def unstandardized_coefficients(coef: Any, *, mean: Any, sd: Any, x_max: float, y_max: float,
                                intercept: float = 0.0, y_mean: float = 0.0) -> tuple[float, np.ndarray]:
    """Kalaja's Eq 3.7: the coefficients of a model fitted on ``(x − x̄)/(sd·x_max)`` against
    ``(y − y_mean)/y_max`` (slopes ``coef`` = θ_j, ``intercept`` = θ₀ on that scale), rewritten
    for the original data: ``θ'_j = y_max·θ_j/(x_max·sd_j)`` and ``θ'₀ = y_mean + y_max·θ₀ −
    Σ_j θ'_j·x̄_j``, so that ``ŷ = θ'₀ + Σ_j θ'_j·x_j``. Returns ``(θ'₀, θ')``.

    After an :class:`InterceptColumn`, convert its model's ``coef_`` with
    :meth:`InterceptColumn.split_coef` first. Folding the statistics into the released
    coefficients publishes them too (unperturbed), which is why Kalaja did not adopt it by default.
    """
    coef = np.asarray(coef, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    if coef.ndim != 1 or mean.shape != coef.shape or sd.shape != coef.shape:
        raise ValueError(f"coef, mean and sd must be 1-D of one length, got shapes {coef.shape}, {mean.shape}, "
                         f"{sd.shape}")
    x_max = _real("x_max", x_max, minimum=0.0, allow_equal=False)
    y_max = _real("y_max", y_max, minimum=0.0, allow_equal=False)
    intercept, y_mean = _real("intercept", intercept), _real("y_mean", y_mean)
    if not (np.isfinite(coef).all() and np.isfinite(mean).all() and np.isfinite(sd).all() and (sd > 0).all()):
        raise ValueError("coef and mean must be finite and sd finite and > 0")
    slopes = y_max * coef / (x_max * sd)
    return float(y_mean + y_max * intercept - slopes @ mean), slopes


_MAPPINGS = ("max", "row")


class KalajaPipeline(RegressorMixin, BaseEstimator):
    """Kalaja's recommended pre-processing around a regressor (seeds-regression.md §3.3), fitted on
    the training data only:

    1. optionally :class:`ClipUpper` at ``m + clip_c·sd`` on the raw training ``X`` (Eq 3.8);
    2. :class:`Standardize` (of the clipped data);
    3. :class:`MaxNormMap` (``mapping="max"``, Eq 3.5) or :class:`RowNormMap` (``"row"``, Eq 3.3);
    4. optionally :class:`InterceptColumn` (``scale_to_unit``, so rows stay in the unit ball);
    5. :class:`TargetScaler` for ``y`` (``center_y`` centres it on the training mean first);
    6. a clone of ``estimator`` fitted on the mapped data, as ``estimator_``.

    Every step maps the training rows into the unit ball and ``y`` into ``[−1, 1]``, so the
    estimator's ``bound_X`` and ``bound_y`` (when it has them) are set to 1. If you set them
    yourself they must be 1 (or ``None``); the estimator clips to them anyway. ``predict`` maps new
    rows with the training statistics (clipping them too only with ``clip_test=True``, Kalaja's
    Eq 3.9 variant) and returns predictions on the original scale of ``y``.

    With ``mapping="max"`` the fitted model is linear in the original features: ``coef_`` and
    ``intercept_`` are its coefficients on the original scale (Eq 3.7; ``predict`` equals
    ``X @ coef_ + intercept_`` on unclipped rows, or on rows inside the clip thresholds).

    ``public_statistics_`` gathers every statistic used unperturbed (keys ``clip_mean``,
    ``clip_sd``, ``clip_upper``, ``mean``, ``sd``, ``x_max``, ``y_max``, ``y_mean``); one
    :class:`PrivacyLeakWarning` per fit lists them unless ``warn=False``. The privacy cost of the
    release is the estimator's (``privacy_cost_``); these statistics are outside it.
    """

    def __init__(self, estimator: Any = None, *, mapping: str = "max", intercept: bool = True,
                 clip_c: float | None = None, clip_test: bool = False, center_y: bool = False,
                 warn: bool = True) -> None:
        self.estimator = estimator
        self.mapping = mapping
        self.intercept = intercept
        self.clip_c = clip_c
        self.clip_test = clip_test
        self.center_y = center_y
        self.warn = warn

    # -- fitting ----------------------------------------------------------------------------------------
    def _steps(self) -> list[Any]:
        return [s for s in (self.clipper_, self.standardizer_, self.mapper_, self.intercept_column_) if s is not None]

    def fit(self, X: Any, y: Any) -> "KalajaPipeline":
        if self.estimator is None:
            raise ValueError("KalajaPipeline needs an estimator, e.g. AdaSSP(epsilon, delta)")
        if self.mapping not in _MAPPINGS:
            raise ValueError(f"mapping must be one of {_MAPPINGS}, got {self.mapping!r}")
        X, y = _validate_Xy(self, X, y)
        self.clipper_ = None if self.clip_c is None else ClipUpper(self.clip_c, warn=False)
        self.standardizer_ = Standardize(warn=False)
        self.mapper_ = MaxNormMap(warn=False) if self.mapping == "max" else RowNormMap()
        self.intercept_column_ = InterceptColumn(scale_to_unit=True) if self.intercept else None
        Xt = X
        for step in self._steps():
            Xt = step.fit_transform(Xt)
        self.target_scaler_ = TargetScaler(center=bool(self.center_y), warn=False)
        yt = self.target_scaler_.fit_transform(y)
        self.bounds_ = (1.0, 1.0)
        self.estimator_ = self._bounded_clone()
        self.estimator_.fit(Xt, yt)
        self.public_statistics_ = self._gather_statistics()
        if self.warn:
            warnings.warn(
                f"KalajaPipeline: {', '.join(self.public_statistics_)} computed from the training data are used "
                "unperturbed (as Kalaja 2020 chose: the curator shares them); the estimator's privacy cost does "
                "not cover them. Pass warn=False if they are public.", PrivacyLeakWarning, stacklevel=2)
        self._set_original_coefficients()
        return self

    def _bounded_clone(self) -> Any:
        est = clone(self.estimator)
        params = est.get_params(deep=False)
        updates = {}
        for name, value in zip(("bound_X", "bound_y"), self.bounds_):
            if name not in params:
                continue
            given = params[name]
            if given is None:
                updates[name] = value
            elif isinstance(given, bool) or not isinstance(given, numbers.Real) or float(given) != value:
                raise ValueError(f"KalajaPipeline maps the data so that {name} = {value:g}; the estimator has "
                                 f"{name}={given!r}. Leave it None (it is then set to {value:g}).")
        return est.set_params(**updates) if updates else est

    def _gather_statistics(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.clipper_ is not None:
            for key, value in self.clipper_.public_statistics_.items():
                out[f"clip_{key}"] = value
        out.update(self.standardizer_.public_statistics_)
        out.update(self.mapper_.public_statistics_)
        out["y_max"] = float(self.target_scaler_.y_max_[0])
        if self.center_y:
            out["y_mean"] = float(self.target_scaler_.y_mean_[0])
        return out

    def _set_original_coefficients(self) -> None:
        for name in ("coef_", "intercept_"):
            self.__dict__.pop(name, None)
        if self.mapping != "max" or not hasattr(self.estimator_, "coef_"):
            return
        theta = np.asarray(self.estimator_.coef_, dtype=np.float64)
        theta0 = float(getattr(self.estimator_, "intercept_", 0.0) or 0.0)
        if self.intercept_column_ is not None:
            i0, theta = self.intercept_column_.split_coef(theta)
            theta0 += i0
        self.intercept_, self.coef_ = unstandardized_coefficients(
            theta, mean=self.standardizer_.mean_, sd=self.standardizer_.scale_, x_max=self.mapper_.x_max_,
            y_max=float(self.target_scaler_.y_max_[0]), intercept=theta0, y_mean=float(self.target_scaler_.y_mean_[0]))

    # -- prediction -------------------------------------------------------------------------------------
    def preprocess(self, X: Any) -> np.ndarray:
        """New rows mapped with the training statistics, as the estimator sees them at ``predict``."""
        check_is_fitted(self, "estimator_")
        Xt = _validate(self, X, reset=False)
        for step in self._steps():
            if step is self.clipper_ and not self.clip_test:
                continue
            Xt = step.transform(Xt)
        return Xt

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        return self.target_scaler_.inverse_transform(self.estimator_.predict(self.preprocess(X)))

    @property
    def privacy_cost_(self) -> Any:
        """The estimator's privacy cost (the public statistics are outside it)."""
        check_is_fitted(self, "estimator_")
        return getattr(self.estimator_, "privacy_cost_", None)


def kalaja_pipeline(estimator: Any, *, clip_c: float | None = None, intercept: bool = True, mapping: str = "max",
                    clip_test: bool = False, center_y: bool = False, warn: bool = True) -> KalajaPipeline:
    """:class:`KalajaPipeline` around ``estimator``: Kalaja's recommended pipeline is
    ``kalaja_pipeline(AdaSSP(ε, δ, noise="kalaja"), clip_c=1.5)`` (clip the training data only,
    standardise, max-norm map, intercept column, ``y/y_max``)."""
    return KalajaPipeline(estimator, mapping=mapping, intercept=intercept, clip_c=clip_c, clip_test=clip_test,
                          center_y=center_y, warn=warn)
