"""Non-private references on the same sufficient statistics (seeds-regression.md §2.1): ordinary
least squares ``(XᵀX)⁻¹Xᵀy`` (minimum-norm when singular), ridge ``(XᵀX + αI)⁻¹Xᵀy`` (α = 1 is
the "non-private" curve of Wang's code) and the trivial predictor θ = 0. They release nothing
private: ``privacy_cost_`` is ``None``."""

from __future__ import annotations

import math

import numpy as np

from ldp.regression.base import LinearModelBase, solve_ridge
from ldp.regression.stats import SufficientStatistics

__all__ = ["OLS", "Ridge", "TrivialPredictor"]


class OLS(LinearModelBase):
    """Ordinary least squares from the sufficient statistics (no privacy)."""

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        self.coef_, self.solver_ = np.linalg.lstsq(stats.xtx, stats.xty, rcond=None)[0], "lstsq"


class Ridge(LinearModelBase):
    """Ridge regression with penalty ``alpha`` (no privacy)."""

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        if isinstance(self.alpha, bool) or not (float(self.alpha) >= 0 and math.isfinite(float(self.alpha))):
            raise ValueError(f"alpha must be finite and >= 0, got {self.alpha!r}")
        self.coef_, self.solver_ = solve_ridge(stats.xtx, stats.xty, float(self.alpha))


class TrivialPredictor(LinearModelBase):
    """θ = 0: predicts 0 for every row (the mean, for centred y)."""

    def _release_statistics(self, stats: SufficientStatistics, bounds: tuple[float, float],
                            rng: np.random.Generator) -> None:
        self.coef_, self.solver_ = np.zeros(stats.d), "none"
