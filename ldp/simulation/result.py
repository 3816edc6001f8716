"""The accuracy of a protocol's counts over repeated simulated collections (:func:`ldp.simulation.accuracy`)."""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldp.decoders.tabular import ResultTable, columns_of

__all__ = ["AccuracyResult"]


@dataclass(frozen=True, repr=False)
class AccuracyResult(ResultTable):
    """Accuracy of a protocol over repeated simulated collections, beside its exact theory: one row per
    item (:meth:`rows`), the :meth:`summary` in the metadata."""

    json_rows = "items"

    items: list[str]
    true_count: np.ndarray
    mean_estimate: np.ndarray
    empirical_sd: np.ndarray
    theoretical_sd: np.ndarray
    coverage: np.ndarray
    trials: int
    n: int
    confidence: float
    notes: tuple[str, ...] = ()
    mse: np.ndarray | None = None  # per item, the mean over trials of (estimate − truth)²
    estimates: np.ndarray | None = field(default=None, repr=False, compare=False)
    """Every trial's estimates, one row per trial (what the conformance battery's pooled variance test reads);
    not part of the table or its JSON."""

    @classmethod
    def from_trials(cls, items: list[str], truth: np.ndarray, est: np.ndarray, covered: np.ndarray,
                    theoretical_sd: np.ndarray, confidence: float, notes: tuple[str, ...] = ()) -> AccuracyResult:
        """The result of ``est``, one row of estimates per trial, against ``truth``: the mean, the sample
        SD (``ddof = 1``; NaN for one trial, where it is undefined), the MSE over trials and the coverage
        from ``covered``, the number of trials whose CI held the truth."""
        trials = est.shape[0]
        truth = np.asarray(truth)
        sd = est.std(axis=0, ddof=1) if trials > 1 else np.full(truth.size, np.nan)
        mse = ((est - truth) ** 2).mean(axis=0)
        return cls(items, truth, est.mean(axis=0), sd, theoretical_sd, covered / trials, trials, int(truth.sum()),
                   confidence, notes, mse, est)

    def summary(self) -> dict[str, float]:
        """``rmse_count``: √ of the MSE over trials and items (defined for one trial too; without a
        recorded MSE, from the sample SD and the bias)."""
        err2 = self.mse if self.mse is not None else self.empirical_sd**2 + (self.mean_estimate - self.true_count) ** 2
        return {
            "n": self.n, "trials": self.trials, "items": len(self.items),
            "rmse_count": float(np.sqrt(err2.mean())),
            "theoretical_rmse_count": float(np.sqrt((self.theoretical_sd**2).mean())),
            "rmse_fraction": float(np.sqrt(err2.mean())) / self.n,
            "coverage": float(self.coverage.mean()), "nominal_coverage": self.confidence,
        }

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"item": it, "true_count": int(t), "mean_estimate": float(m), "empirical_sd": float(e),
             "theoretical_sd": float(s), "coverage": float(c)}
            for it, t, m, e, s, c in zip(self.items, self.true_count, self.mean_estimate, self.empirical_sd,
                                          self.theoretical_sd, self.coverage, strict=True)
        ]

    def columns(self) -> dict[str, list[Any]]:
        rows = self.rows()
        return columns_of(rows) if rows else {k: [] for k in _ACCURACY_COLUMNS}

    def metadata(self) -> dict[str, Any]:
        return {"summary": self.summary(), "notes": list(self.notes)}

    def title(self) -> str:
        s = self.summary()
        return (f"{s['trials']} simulated collection{'s' * (s['trials'] != 1)} of n={s['n']:,}: RMSE (counts) "
                f"{s['rmse_count']:.4g} vs theory {s['theoretical_rmse_count']:.4g}, CI coverage "
                f"{s['coverage']:.3f} (nominal {s['nominal_coverage']})")


_ACCURACY_COLUMNS = ("item", "true_count", "mean_estimate", "empirical_sd", "theoretical_sd", "coverage")
