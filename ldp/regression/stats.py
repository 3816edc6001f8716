"""Sufficient statistics of linear regression: ``n``, ``XᵀX``, ``Xᵀy``, ``yᵀy`` — one pass, in
chunks, mergeable across files and machines (statistics of a union are sums: Honkela et al.,
seeds-regression.md §2.6), plus the input checks and the bound enforcement every release uses.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from ldp.regression.mechanisms import PrivacyLeakWarning

__all__ = ["SufficientStatistics", "check_Xy", "enforce_bounds", "resolve_bounds", "MIN_DERIVED_BOUND",
           "check_finite_release"]

MIN_DERIVED_BOUND = float(np.sqrt(np.finfo(float).tiny))
"""Floor of a bound taken from the data (all-zero data): its square, the sensitivity of XᵀX, is
still a positive normal float."""


@overload
def check_Xy(X: Any, y: None = None, *, n_features: int | None = None) -> tuple[np.ndarray, None]: ...
@overload
def check_Xy(X: Any, y: Any, *, n_features: int | None = None) -> tuple[np.ndarray, np.ndarray]: ...
def check_Xy(X: Any, y: Any = None, *, n_features: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` as a finite float (n, d) array (and ``y`` as finite (n,)), ``ValueError`` naming the rule."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if X.shape[1] == 0:
        raise ValueError("X must have at least one feature")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but this model was fitted with {n_features}")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values; impute or drop them before fitting")
    if y is None:
        return X, None
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values; impute or drop them before fitting")
    return X, y


def resolve_bounds(X: np.ndarray, y: np.ndarray, bound_X: float | None, bound_y: float | None,
                   owner: str) -> tuple[float, float]:
    """The data bounds ``B_X`` (max row L2 norm) and ``B_Y`` (max |y|): the given ones, or — with
    a loud :class:`PrivacyLeakWarning` — the data's own maxima (which no DP guarantee covers)."""
    out = []
    for name, given, data in (("bound_X", bound_X, X), ("bound_y", bound_y, y)):
        if given is None:
            with np.errstate(over="ignore"):
                value = float(np.sqrt((data**2).sum(axis=1)).max()) if data.ndim == 2 else float(np.abs(data).max())
            if not np.isfinite(value):
                raise ValueError(f"{owner}: {name} taken from the data overflowed float64 (the data are too large); "
                                 "rescale X and y")
            warnings.warn(f"{owner}: {name} not given, so it is taken from the data ({value:.6g}); that leaks "
                          "information no privacy guarantee covers. Pass bounds known a priori.",
                          PrivacyLeakWarning, stacklevel=4)
            out.append(max(value, MIN_DERIVED_BOUND))
        else:
            if isinstance(given, bool) or not (float(given) > 0 and np.isfinite(float(given))):
                raise ValueError(f"{name} must be finite and > 0, got {given!r}")
            out.append(float(given))
    return out[0], out[1]


def check_finite_release(stats: SufficientStatistics, bounds: tuple[float, float], owner: str) -> None:
    """``ValueError`` when the statistics overflowed float64, or when the squared bounds times
    ``d(d+1)`` (the largest sensitivity any release here uses) do: the noise would be infinite."""
    if not (np.isfinite(stats.xtx).all() and np.isfinite(stats.xty).all() and np.isfinite(stats.yty)):
        raise ValueError(f"{owner}: XᵀX, Xᵀy or yᵀy overflowed float64 (the data are too large); rescale X and y")
    with np.errstate(over="ignore"):
        scale = np.float64(stats.d) * (stats.d + 1) * np.float64(max(bounds)) ** 2
    if not np.isfinite(scale):
        raise ValueError(f"{owner}: bounds {bounds[0]:.6g} and {bounds[1]:.6g} are too large: the noise they call "
                         "for overflows float64; rescale X and y")


def enforce_bounds(X: np.ndarray, y: np.ndarray, bound_X: float, bound_y: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows scaled into the ball ``‖x‖ ≤ B_X`` and ``y`` clipped to ``[−B_Y, B_Y]``, even when a
    pre-processing map "should" already guarantee it; also the number of rows changed."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > bound_X
    changed = over | (np.abs(y) > bound_y)
    if over.any():
        X = X.copy()
        X[over] *= (bound_X / norms[over])[:, None]
    return X, np.clip(y, -bound_y, bound_y), int(changed.sum())


@dataclass
class SufficientStatistics:
    """``n``, ``xtx`` = XᵀX (d×d), ``xty`` = Xᵀy (d,), ``yty`` = yᵀy, accumulated chunk by chunk."""

    d: int
    n: int = 0
    xtx: np.ndarray = field(default=None)  # type: ignore[arg-type]  # None: zeros made in __post_init__
    xty: np.ndarray = field(default=None)  # type: ignore[arg-type]  # None: zeros made in __post_init__
    yty: float = 0.0

    def __post_init__(self) -> None:
        if self.xtx is None:
            self.xtx = np.zeros((self.d, self.d))
        if self.xty is None:
            self.xty = np.zeros(self.d)

    @classmethod
    def from_data(cls, X: np.ndarray, y: np.ndarray, chunk_rows: int = 1 << 16) -> SufficientStatistics:
        stats = cls(X.shape[1])
        return stats.update(X, y, chunk_rows)

    def update(self, X: np.ndarray, y: np.ndarray, chunk_rows: int = 1 << 16) -> SufficientStatistics:
        """Add the rows of ``X``, ``y`` (one pass; BLAS products per chunk)."""
        if X.shape[1] != self.d:
            raise ValueError(f"X has {X.shape[1]} features, these statistics have {self.d}")
        for start in range(0, X.shape[0], chunk_rows):
            xc, yc = X[start:start + chunk_rows], y[start:start + chunk_rows]
            self.xtx += xc.T @ xc
            self.xty += xc.T @ yc
            self.yty += float(yc @ yc)
        self.n += X.shape[0]
        return self

    def merge(self, other: SufficientStatistics) -> SufficientStatistics:
        """Fold in another part of the data (statistics of a union are sums)."""
        if other.d != self.d:
            raise ValueError(f"cannot merge statistics of {other.d} features into {self.d}")
        self.xtx += other.xtx
        self.xty += other.xty
        self.yty += other.yty
        self.n += other.n
        return self

    def __add__(self, other: SufficientStatistics) -> SufficientStatistics:
        return self.copy().merge(other)

    def copy(self) -> SufficientStatistics:
        return SufficientStatistics(self.d, self.n, self.xtx.copy(), self.xty.copy(), self.yty)
