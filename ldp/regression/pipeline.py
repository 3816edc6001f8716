"""Kalaja's pre-processing pipeline around a private regressor (seeds-regression.md §3.2–§3.3):
the transformers of :mod:`ldp.regression.preprocessing` composed with the estimator, predictions on
the original scale, and Eq 3.7's unstandardised coefficients.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from ldp.regression.mechanisms import PrivacyLeakWarning
from ldp.regression.preprocessing import (
    ClipUpper,
    InterceptColumn,
    MaxNormMap,
    RowNormMap,
    Standardize,
    TargetScaler,
    _real,
    _validate,
    _validate_Xy,
)

__all__ = ["unstandardized_coefficients", "KalajaPipeline", "kalaja_pipeline"]


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
    6. a clone of ``estimator`` (required, as for scikit-learn's meta-estimators such as ``RFE``)
       fitted on the mapped data, as ``estimator_``.

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

    def __init__(self, estimator: Any, *, mapping: str = "max", intercept: bool = True,
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

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if self.estimator is not None:  # a noisy estimator scores poorly inside the pipeline too
            inner = get_tags(self.estimator)
            if inner.regressor_tags is not None:
                tags.regressor_tags.poor_score = inner.regressor_tags.poor_score
        return tags

    def fit(self, X: Any, y: Any) -> KalajaPipeline:
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
        for name, value in zip(("bound_X", "bound_y"), self.bounds_, strict=True):
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
