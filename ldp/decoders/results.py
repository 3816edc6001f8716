"""Estimates as a small result object: prints as a table, converts to dicts, CSV, JSON, pandas and HTML
(the views of :class:`~ldp.decoders.tabular.ResultTable`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from ldp.decoders import consistency
from ldp.decoders.tabular import ResultTable, column_format, column_rows, require_pandas, to_frame
from ldp.privacy.accountant import PrivacyCost

__all__ = ["CONSISTENCY_METHODS", "Estimates", "column_format", "column_rows", "normal_quantile", "project_to_simplex",
           "require_pandas", "to_frame"]


def normal_quantile(confidence: float) -> float:
    """Two-sided normal critical value z with ``Pr[|Z| <= z] = confidence``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def project_to_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection onto ``{x >= 0, sum x = total}`` (Duchi, Shalev-Shwartz, Singer & Chandra 2008)."""
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, v.size + 1)
    rho = np.flatnonzero(u - css / k > 0)[-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


@dataclass(frozen=True, repr=False)
class Estimates(ResultTable):
    """Per-item count estimates with standard errors and normal confidence intervals.

    ``count`` is an unbiased estimate of each item's number of users (raw, possibly negative,
    unless :meth:`clipped` or :meth:`projected` was applied); fractions are counts / ``n``.
    """

    protocol: str
    items: list[str]
    n: int
    count: np.ndarray
    std_error: np.ndarray
    confidence: float = 0.95
    privacy: PrivacyCost | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def z(self) -> float:
        return normal_quantile(self.confidence)

    @property
    def ci_low(self) -> np.ndarray:
        return self.count - self.z * self.std_error

    @property
    def ci_high(self) -> np.ndarray:
        return self.count + self.z * self.std_error

    @property
    def fraction(self) -> np.ndarray:
        return self.count / self.n if self.n else np.full_like(self.count, np.nan)

    @property
    def fraction_std_error(self) -> np.ndarray:
        return self.std_error / self.n if self.n else np.full_like(self.std_error, np.nan)

    def columns(self) -> dict[str, Any]:
        cols: dict[str, Any] = {
            "item": self.items, "count": self.count, "std_error": self.std_error,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "fraction": self.fraction,
        }
        cols.update(self.extra)
        return cols

    def with_truth(self, true_counts: Sequence[float]) -> Estimates:
        """Add ``true_count``, ``error`` and ``covered`` (truth inside the CI) columns."""
        t = np.asarray(true_counts, dtype=np.float64)
        if t.shape != self.count.shape:
            raise ValueError(f"true counts have shape {t.shape}, estimates {self.count.shape}")
        extra = dict(self.extra, true_count=t, error=self.count - t, covered=(self.ci_low <= t) & (t <= self.ci_high))
        return replace(self, extra=extra)

    def clipped(self) -> Estimates:
        """Counts clipped to [0, n] (biased; the standard errors are those of the raw estimate)."""
        return replace(self, count=np.clip(self.count, 0, self.n), notes=self.notes + ("counts clipped to [0, n]",))

    def projected(self) -> Estimates:
        """Counts projected onto the simplex (non-negative, summing to n); biased."""
        return replace(self, count=project_to_simplex(self.count, self.n),
                       notes=self.notes + ("counts projected onto the simplex",))

    def norm_sub(self) -> Estimates:
        """Norm-Sub (Wang et al., NDSS 2020): ``max(ĉ_v − δ, 0)`` with the δ that makes the counts sum to n.

        Biased, usually a lower total squared error; the standard errors are those of the raw estimate
        (:func:`ldp.decoders.consistency.norm_sub`)."""
        delta = consistency.norm_sub_delta(self.count, self.n)
        return replace(self, count=np.maximum(self.count - delta, 0.0),
                       notes=self.notes + (f"Norm-Sub: counts shifted by {-delta:+.1f} and clipped at 0 to sum to n",))

    def base_cut(self, z: float | None = None) -> Estimates:
        """Base-Cut (Wang et al., NDSS 2020): counts not above ``z·std_error`` set to 0, the others kept.

        ``z`` defaults to ``Φ⁻¹(1 − α/d)`` with ``α = 1 − confidence`` (one-sided, Bonferroni over the d
        items). Biased (rare items to 0, no longer summing to n) (:func:`ldp.decoders.consistency.base_cut`)."""
        if z is None:
            z = NormalDist().inv_cdf(1.0 - (1.0 - self.confidence) / max(len(self.items), 1))
        return replace(self, count=consistency.base_cut(self.count, z * self.std_error),
                       notes=self.notes + (f"Base-Cut: counts not above {z:.2f} standard errors set to 0",))

    def ibu(self, params: Any, tol: float = 1e-8, max_iter: int = 10_000) -> Estimates:
        """Maximum-likelihood counts by IBU / EM from this *raw* estimate under the protocol's ``params``.

        For the protocols whose params state their channel (``support_probabilities`` or ``response_matrix``;
        ``ValueError`` otherwise, or after another post-processing); non-negative, summing to n, biased.
        Convergence: ``tol`` on the largest change of a fraction, at most ``max_iter`` iterations
        (:func:`ldp.decoders.consistency.ibu`)."""
        if getattr(params, "protocol", None) != self.protocol:
            raise ValueError(f"params are for {getattr(params, 'protocol', None)!r}, the estimates for "
                             f"{self.protocol!r}")
        done = [note for note in self.notes if note.startswith(_POSTPROCESSED)]
        if done:
            raise ValueError(f"IBU needs the raw estimate; these were post-processed ({done[0]})")
        count = consistency.ibu_counts(self.count, self.n, params, tol, max_iter)
        return replace(self, count=count, notes=self.notes + ("IBU: maximum-likelihood counts by EM",))

    def consistent(self, method: str = "none", params: Any = None, **options: Any) -> Estimates:
        """The estimate post-processed by ``method``, one of :data:`CONSISTENCY_METHODS` (``none``: unchanged).

        ``params`` is needed by ``ibu`` only; ``options`` go to the method (``z`` for ``base-cut``,
        ``tol`` and ``max_iter`` for ``ibu``)."""
        if method == "none":
            return self
        if method == "ibu":
            if params is None:
                raise ValueError("consistency 'ibu' needs the protocol's params")
            return self.ibu(params, **options)
        maps = {"clip": self.clipped, "project": self.projected, "norm-sub": self.norm_sub, "base-cut": self.base_cut}
        if method not in maps:
            raise ValueError(f"unknown consistency method {method!r}; known: {', '.join(CONSISTENCY_METHODS)}")
        return maps[method](**options)

    def metadata(self) -> dict[str, Any]:
        """What the rows do not say, as plain values: protocol, n, confidence, privacy and notes."""
        return {"protocol": self.protocol, "n": self.n, "confidence": self.confidence,
                "privacy": self.privacy.to_dict() if self.privacy else None, "notes": list(self.notes)}

    json_rows = "estimates"

    def title(self) -> str:
        """``protocol: n=…, 95% CI, ε=…``."""
        return f"{self.protocol}: n={self.n}, {self.confidence:.0%} CI" + (f", {self.privacy}" if self.privacy else "")

    def row_count(self) -> int:
        return len(self.items)


CONSISTENCY_METHODS = ("none", "clip", "project", "norm-sub", "base-cut", "ibu")
"""The names :meth:`Estimates.consistent` takes (``none``, the default: the raw unbiased estimate)."""
_POSTPROCESSED = ("counts clipped", "counts projected", "Norm-Sub", "Base-Cut", "IBU")  # notes of the maps above
