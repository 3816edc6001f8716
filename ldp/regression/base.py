"""What every linear regression of :mod:`ldp.regression` shares (scikit-learn conventions).

``fit(X, y)`` validates, enforces the data bounds, accumulates the sufficient statistics in one
pass and releases the model once. For data larger than memory or spread over machines,
``partial_fit(X, y)`` only accumulates (no budget is spent), statistics from elsewhere can be
added with ``merge_statistics``, and ``release()`` then spends the budget once. Every release is
recorded as a :class:`~ldp.privacy.accountant.PrivacyCost` in ``privacy_cost_`` and, when given, in the
``accountant`` (a :class:`~ldp.privacy.accountant.PrivacyAccountant`), which refuses a release over its cap
before any noise is drawn.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def _validate_data(estimator: Any, X: Any, y: Any = "no_validation", **kwargs: Any) -> Any:
        return estimator._validate_data(X, y, **kwargs)

from ldp.privacy.accountant import PrivacyCost
from ldp.privacy.central_noise import NoiseSource
from ldp.regression.mechanisms import check_budget
from ldp.regression.noise import ReleaseNoise, release_source, resolve_noise
from ldp.regression.stats import SufficientStatistics, check_finite_release, enforce_bounds, resolve_bounds

__all__ = ["LinearModelBase", "PrivateLinearModel", "as_numpy_generator", "solve_ridge"]


def as_numpy_generator(random_state: Any) -> np.random.Generator:
    """scikit-learn's ``random_state`` (None, int, RandomState or Generator) as a numpy Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}")


def _can_stream(model: LinearModelBase) -> bool:
    """``partial_fit`` exists only on a model whose parameters let it take rows in chunks (bounds
    fixed a priori): scikit-learn's ``available_if`` convention, as for ``MLPRegressor.partial_fit``.
    Otherwise ``AttributeError`` says what is missing."""
    reason = model._streaming_refusal()
    if reason is not None:
        raise AttributeError(reason)
    return True


def solve_ridge(xtx: np.ndarray, xty: np.ndarray, ridge: float = 0.0,
                symmetrize: bool = True) -> tuple[np.ndarray, str]:
    """``(XᵀX + ridge·I)⁻¹ Xᵀy`` (symmetrized unless ``symmetrize=False``) and how it was solved:
    ``"solve"``, or ``"lstsq"`` (minimum-norm least squares) when the matrix is singular — the one
    policy for every release."""
    a = ((xtx + xtx.T) / 2 if symmetrize else xtx) + ridge * np.eye(xtx.shape[0])
    try:
        return np.linalg.solve(a, xty), "solve"
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(a, xty, rcond=None)[0], "lstsq"


class LinearModelBase(RegressorMixin, BaseEstimator, metaclass=ABCMeta):
    """Sufficient-statistics linear model ``ŷ = X·coef_`` (no intercept: add a column with
    :class:`~ldp.regression.preprocessing.InterceptColumn`)."""

    _fixed_bounds: tuple[float, float] | None = None  # mechanisms defined on a fixed domain (e.g. [-1, 1])
    _private = False  # releases with noise need bounds
    _bound_names = ("bound_X", "bound_y")  # the parameters that fix the bounds a priori

    @abstractmethod
    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        """Set ``coef_`` (and the model's own attributes) from the bounded statistics."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if self._cost() is not None or type(self).__name__ == "TrivialPredictor":
            tags.regressor_tags.poor_score = True  # noise (or θ = 0) by design
        return tags

    def _check(self, X: Any, y: Any = None, *, reset: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """scikit-learn's validation (shapes, sparse/complex refused, finite values, n_features_in_)."""
        if y is None and not reset:
            return _validate_data(self, X, reset=False, dtype=np.float64), None
        X, y = _validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)
        return X, np.asarray(y, dtype=np.float64)

    # -- fitting -------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> LinearModelBase:
        X, y = self._check(X, y, reset=True)
        self._reset()
        self._accumulate(X, y, owner=type(self).__name__)
        return self.release()

    def _streaming_refusal(self, method: str = "partial_fit") -> str | None:
        """Why rows cannot be streamed into a fresh model (``None``: they can)."""
        if not self._private or self._fixed_bounds is not None:
            return None
        if all(getattr(self, name, None) is not None for name in self._bound_names):
            return None
        return (f"{type(self).__name__}.{method} needs {' and '.join(self._bound_names)}: bounds cannot be taken "
                "from data that arrives in chunks (fit takes them from the data, with a PrivacyLeakWarning)")

    @available_if(_can_stream)
    def partial_fit(self, X: Any, y: Any) -> LinearModelBase:
        """Accumulate a chunk (bounds enforced); nothing is released until :meth:`release`. Only
        on a model whose bounds are fixed a priori."""
        first = not hasattr(self, "statistics_")
        X, y = self._check(X, y, reset=first)
        if first:
            self._reset()
        self._accumulate(X, y, owner=type(self).__name__, streaming=True)
        return self

    def merge_statistics(self, stats: SufficientStatistics) -> LinearModelBase:
        """Add statistics accumulated elsewhere (rows already inside this model's bounds, which
        must then be given: ``bound_X`` and ``bound_y``)."""
        if not hasattr(self, "statistics_"):
            self._reset()
            bx, by = getattr(self, "bound_X", None), getattr(self, "bound_y", None)
            if self._fixed_bounds is not None:
                bx, by = self._fixed_bounds
            if self._cost() is not None and (bx is None or by is None):
                raise ValueError(f"{type(self).__name__}.merge_statistics needs bound_X and bound_y: the merged rows "
                                 "must have been bounded by them")
            self._bounds_ = resolve_bounds(np.zeros((1, stats.d)), np.zeros(1), bx, by, type(self).__name__) \
                if self._cost() is not None else (np.inf, np.inf)
            self.statistics_ = SufficientStatistics(stats.d)
            self.n_bounded_ = 0
            self.n_features_in_ = stats.d
        self.statistics_.merge(stats)
        return self

    def forget_statistics(self) -> LinearModelBase:
        """Drop the exact sufficient statistics (and the counts of bounded rows) kept for streaming.

        They are the curator's private data: a fitted model holds them until this is called, so
        call it before pickling or sharing the model object (``coef_`` is what was released)."""
        for name in ("statistics_", "n_bounded_"):
            self.__dict__.pop(name, None)
        return self

    def release(self) -> LinearModelBase:
        """Release the model from the accumulated statistics (spends the budget once)."""
        if not hasattr(self, "statistics_") or self.statistics_.n == 0:
            raise ValueError("nothing to release: fit or partial_fit some rows first")
        bounds = self._bounds_
        cost = self._cost()
        if self._private:
            check_finite_release(self.statistics_, bounds, type(self).__name__)
        self._check_release(self.statistics_.d, bounds)  # every parameter error before anything is charged
        source = getattr(self, "noise_source", None)
        random_state = getattr(self, "random_state", None)
        if source is not None:  # refused or warned about before anything is charged
            source = release_source(source, random_state, type(self).__name__)
        if cost is not None and getattr(self, "accountant", None) is not None:
            self.accountant.spend(cost, type(self).__name__)
        rng = as_numpy_generator(random_state)
        if source is not None:  # the models with noise: where it comes from (ldp.regression.noise)
            noise = resolve_noise(source, rng)
            self._release_noise = noise
            self.noise_source_, self.noise_label_ = noise.source.value, noise.label
        try:
            self._release_statistics(self.statistics_, bounds, rng)
        finally:
            self.__dict__.pop("_release_noise", None)
        self.privacy_cost_ = cost
        self.n_features_in_ = self.statistics_.d
        self.intercept_ = 0.0
        return self

    def _reset(self) -> None:
        for name in ("statistics_", "_bounds_", "n_bounded_"):
            self.__dict__.pop(name, None)

    def _accumulate(self, X: np.ndarray, y: np.ndarray, owner: str, streaming: bool = False) -> None:
        bx, by = getattr(self, "bound_X", None), getattr(self, "bound_y", None)
        if not hasattr(self, "_bounds_"):
            reason = self._streaming_refusal() if streaming else None
            if reason is not None:
                raise ValueError(reason)
            self._bounds_ = resolve_bounds(X, y, bx, by, owner) if self._cost() is not None else (np.inf, np.inf)
            self.statistics_ = SufficientStatistics(X.shape[1])
            self.n_bounded_ = 0
        if self._cost() is not None:
            X, y, changed = enforce_bounds(X, y, *self._bounds_)
            self.n_bounded_ += changed
        self.statistics_.update(X, y)

    def _cost(self) -> PrivacyCost | None:
        return None

    def _noise(self) -> ReleaseNoise:
        """The noise of the release under way (set by :meth:`release`)."""
        noise = self.__dict__.get("_release_noise")
        return noise if noise is not None else ReleaseNoise(NoiseSource.NUMPY)

    def _check_release(self, d: int, bounds: tuple[float, float]) -> None:
        """Raise ``ValueError`` for parameters the release would refuse (no randomness, no charge)."""

    # -- prediction ----------------------------------------------------------------------------------
    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X, _ = self._check(X, reset=False)
        return X @ self.coef_ + self.intercept_


class PrivateLinearModel(LinearModelBase):
    """A private release: ``epsilon``, ``delta`` (Gaussian mechanisms) and the data bounds
    ``bound_X`` (max row L2 norm) and ``bound_y`` (max |y|), enforced by scaling/clipping.
    ``noise_source``: ``"secure"`` (the default), ``"seeded"`` (needs ``random_state``; simulations) or
    ``"numpy"`` (simulations), see :mod:`ldp.regression.noise`; the default with a ``random_state``
    releases as ``"seeded"`` with a :class:`~ldp.errors.SeededNoiseWarning`."""

    _gaussian = True
    _private = True

    def _cost(self) -> PrivacyCost:
        return check_budget(self.epsilon, self.delta, need_delta=self._gaussian)
