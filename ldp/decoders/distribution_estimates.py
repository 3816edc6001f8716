"""The counts of a numeric histogram that also answer for the distribution: CDF, range fractions, quantiles.

:class:`HistogramEstimates` is the :class:`~ldp.decoders.results.Estimates` of a histogram protocol
(dBitFlip, bucket-GRR, bucket-OUE) with the buckets' ``edges`` and the exact covariance of the count
estimates (plug-in, :class:`~ldp.decoders.distribution.BucketCovariance`); the formulas are those of
:mod:`ldp.decoders.distribution`. ``summary_quantiles()`` is the hook the ingest service's dashboard asks every
estimate through (``getattr(est, "summary_quantiles", None)``): p50 and p95, or ``None``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ldp.decoders.distribution import (
    BucketCovariance,
    FloatArray,
    QuantileTable,
    RangeFraction,
    _quantile_table,
    edge_cdf,
    known_total,
    range_fraction,
)
from ldp.decoders.results import Estimates, normal_quantile
from ldp.decoders.tabular import ResultTable

__all__ = ["DEFAULT_QUANTILES", "SUMMARY_QUANTILES", "CdfTable", "DistributionQueries", "HistogramEstimates"]

DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99)
"""The quantiles :meth:`HistogramEstimates.quantiles` gives by default."""
SUMMARY_QUANTILES = (0.5, 0.95)
"""The quantiles the dashboard shows (:meth:`HistogramEstimates.summary_quantiles`)."""

_POSTPROCESSED = ("counts clipped", "counts projected", "Norm-Sub", "Base-Cut", "IBU")


@dataclass(frozen=True, repr=False)
class CdfTable(ResultTable):
    """The estimated CDF at each edge: the count and fraction of values below it, with SE and normal CI (count
    scale, as :class:`~ldp.decoders.results.Estimates`); the first and last edges are known (0 and n)."""

    edges: FloatArray
    fraction: FloatArray
    fraction_se: FloatArray
    n: int
    confidence: float = 0.95

    json_rows = "cdf"

    def columns(self) -> dict[str, Any]:
        z, n = normal_quantile(self.confidence), self.n
        return {"edge": self.edges, "count": self.fraction * n, "std_error": self.fraction_se * n,
                "ci_low": (self.fraction - z * self.fraction_se) * n,
                "ci_high": (self.fraction + z * self.fraction_se) * n, "fraction": self.fraction}

    def metadata(self) -> dict[str, Any]:
        return {"n": self.n, "confidence": self.confidence, "notes": []}

    def title(self) -> str:
        return f"values below each edge: n={self.n}, {self.confidence:.0%} CI"


class DistributionQueries(ABC):
    """A mixin of the estimates of a numeric distribution (histograms, hierarchical histograms), which answer
    quantiles with CIs: the dashboard's ``summary_quantiles`` hook on top of their ``quantiles``."""

    @abstractmethod
    def quantiles(self, qs: Any = DEFAULT_QUANTILES, confidence: float | None = None) -> QuantileTable:
        """Quantiles ``qs`` (in (0, 1)) with CIs, at the estimates' confidence unless given."""

    def summary_quantiles(self) -> QuantileTable | None:
        """p50 and p95 with CIs (the dashboard's hook), or ``None`` when they cannot be estimated."""
        try:
            return self.quantiles(SUMMARY_QUANTILES)
        except ValueError:
            return None


@dataclass(frozen=True, repr=False)
class HistogramEstimates(DistributionQueries, Estimates):
    """Counts per bucket of ``edges`` with the covariance of their estimates (count scale): the quantiles, range
    fractions and CDF they imply (:mod:`ldp.decoders.distribution`)."""

    edges: tuple[float, ...] = ()
    covariance: BucketCovariance | None = None

    @classmethod
    def of(cls, est: Estimates, edges: tuple[float, ...], covariance: BucketCovariance) -> HistogramEstimates:
        """``est`` with its buckets' edges and covariance."""
        return cls(**{f.name: getattr(est, f.name) for f in fields(Estimates)}, edges=tuple(edges),
                   covariance=covariance)

    def _parts(self) -> tuple[FloatArray, FloatArray, BucketCovariance, tuple[str, ...]]:
        """Edges, fractions (made to sum to 1: :func:`~ldp.decoders.distribution.known_total`), their
        covariance and notes; ``ValueError`` when the buckets were cut or there is no report."""
        e = np.asarray(self.edges, dtype=np.float64)
        k = e.size - 1
        if self.covariance is None or k < 1 or len(self.count) != k or self.covariance.d.size != k:
            raise ValueError("quantiles and ranges need every bucket's estimate (some were withheld or cut)")
        if not self.n:
            raise ValueError("no reports: there is no distribution to estimate")
        done = [note for note in self.notes if note.startswith(_POSTPROCESSED)]
        notes = (f"from post-processed counts ({done[0]}): the CIs use the raw estimate's covariance",) if done else ()
        p, cov = known_total(np.asarray(self.count, dtype=np.float64) / self.n, self.covariance.scaled(1.0 / self.n))
        return e, p, cov, notes

    def _edge_cdf(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, tuple[str, ...]]:
        e, p, cov, notes = self._parts()
        v, cn = cov.cdf_moments()
        g, v, cn = edge_cdf(np.cumsum(p), v, cn)
        return e, g, v, cn, notes

    def quantiles(self, qs: Any = DEFAULT_QUANTILES, confidence: float | None = None) -> QuantileTable:
        """Quantiles ``qs`` (in (0, 1): 0.5 is the median) with CIs by inverting the CDF's normal test at the
        edges (ends on edges: valid wherever values sit inside a bucket); at the estimates' confidence unless
        given (:mod:`ldp.decoders.distribution`)."""
        e, g, v, _, notes = self._edge_cdf()
        return _quantile_table(e, g, v, qs, self.confidence if confidence is None else confidence, notes)

    def range_fraction(self, a: float, b: float, confidence: float | None = None) -> RangeFraction:
        """The fraction of users with a value in ``[a, b]``, with its exact SE
        (:func:`~ldp.decoders.distribution.range_fraction`)."""
        e, p, cov, notes = self._parts()
        out = range_fraction(e, p, cov, a, b, n=self.n, confidence=self.confidence if confidence is None
                             else confidence, protocol=self.protocol)
        return out if not notes else replace(out, notes=out.notes + notes)

    def cdf(self, confidence: float | None = None) -> CdfTable:
        """The estimated CDF at every edge with its SE (``F(e_0) = 0``, ``F(e_k) = 1`` known)."""
        e, g, v, _, _ = self._edge_cdf()
        conf = self.confidence if confidence is None else confidence
        normal_quantile(conf)
        return CdfTable(e, g, np.sqrt(v), self.n, conf)
