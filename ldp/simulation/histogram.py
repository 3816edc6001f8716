"""Simulated collections of the histogram protocols (dBitFlip, bucket-GRR, bucket-OUE): the counts' accuracy as for
every counting protocol, plus the quantiles' — each collection's estimates and CIs
(:meth:`~ldp.decoders.distribution_estimates.HistogramEstimates.quantiles`) against the quantile of the true
counts' CDF interpolated linearly within the buckets (what the CI covers: :mod:`ldp.decoders.distribution`).
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ldp.decoders.base import Aggregate
from ldp.decoders.distribution import quantile_labels
from ldp.decoders.distribution_estimates import DEFAULT_QUANTILES, HistogramEstimates
from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams, DBitFlipParams
from ldp.simulation.base import Simulation
from ldp.simulation.result import AccuracyResult

__all__ = ["HistogramAccuracyResult", "HistogramSimulation", "interpolated_quantiles"]


def interpolated_quantiles(edges: Sequence[float], counts: Any, qs: Any) -> np.ndarray:
    """The quantiles of the CDF of ``counts`` per bucket, linear within each bucket (the first x reaching q)."""
    e = np.asarray(edges, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    f = np.concatenate(([0.0], np.cumsum(c) / c.sum()))
    q = np.asarray(qs, dtype=np.float64)
    i = np.clip(np.searchsorted(f, q, side="left"), 1, e.size - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(f[i] > f[i - 1], (q - f[i - 1]) / (f[i] - f[i - 1]), 1.0)
    return np.asarray(e[i - 1] + t * (e[i] - e[i - 1]), dtype=np.float64)


@dataclass(frozen=True, repr=False)
class HistogramAccuracyResult(AccuracyResult):
    """:class:`~ldp.simulation.result.AccuracyResult` with the quantiles' accuracy: per quantile, the truth (the
    interpolated CDF's), the mean estimate, its RMSE, the mean CI width and the CI's coverage."""

    quantiles: tuple[dict[str, Any], ...] = ()

    def quantile_rows(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.quantiles]

    def summary(self) -> dict[str, float]:
        out = super().summary()
        if self.quantiles:
            out["quantile_coverage"] = float(np.mean([r["coverage"] for r in self.quantiles]))
        return out

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "quantiles": self.quantile_rows()}


def _histogram(est: Any) -> HistogramEstimates:
    assert isinstance(est, HistogramEstimates)  # the histogram aggregates' estimate
    return est


class _Recording(Simulation):
    """The default simulation, keeping every simulated aggregate."""

    def __init__(self, kept: list[Aggregate]) -> None:
        self.kept = kept

    def simulate(self, params: Any, truth: Any, **options: Any) -> Aggregate:
        agg = super().simulate(params, truth, **options)
        self.kept.append(agg)
        return agg


class HistogramSimulation(Simulation):
    """The histogram protocols: the counts as the defaults, and the quantiles :data:`quantiles`."""

    params_type: ClassVar[tuple[type, ...]] = (DBitFlipParams, BucketGRRParams, BucketOUEParams)
    quantiles: ClassVar[tuple[float, ...]] = DEFAULT_QUANTILES

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> HistogramAccuracyResult:
        """The counts' accuracy (:meth:`Simulation.accuracy`), then each quantile's over the same collections."""
        kept: list[Aggregate] = []
        base = _Recording(kept).accuracy(params, population, n, trials=trials, method=method, rng=rng,
                                         confidence=confidence, candidates=candidates, progress=progress)
        qs = np.asarray(self.quantiles)
        truth = interpolated_quantiles(params.edges, base.true_count, qs)
        tables = [_histogram(agg.estimate(confidence)).quantiles(qs, confidence) for agg in kept]
        est = np.array([t.estimate for t in tables])
        covered = np.array([(t.low <= truth) & (truth <= t.high) for t in tables])
        width = np.array([t.high - t.low for t in tables])
        rows = tuple({"quantile": label, "true_value": float(truth[i]), "mean_estimate": float(est[:, i].mean()),
                      "rmse": float(np.sqrt(((est[:, i] - truth[i]) ** 2).mean())),
                      "mean_ci_width": float(width[:, i].mean()), "coverage": float(covered[:, i].mean())}
                     for i, label in enumerate(quantile_labels(qs)))
        note = ("quantiles: the truth is the true counts' CDF interpolated within buckets; CIs by inverting the CDF's "
                "normal CI")
        fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
        return replace(HistogramAccuracyResult(**fields), quantiles=rows, notes=(*base.notes, note))
