"""The estimate of a mean: a small result object that prints as a table and converts to dicts, CSV, JSON,
pandas and HTML (:class:`~ldp.decoders.tabular.ResultTable`, one row)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ldp.decoders.results import normal_quantile
from ldp.decoders.tabular import OneRowResult
from ldp.display.tables import Column, render
from ldp.privacy.accountant import PrivacyCost

__all__ = ["MeanEstimate"]


@dataclass(frozen=True, repr=False)
class MeanEstimate(OneRowResult):
    """An unbiased estimate of the mean of ``n`` users' values in ``[low, high]``, with its standard error
    and a normal confidence interval (the raw estimate: it may fall outside the bounds)."""

    protocol: str
    n: int
    mean: float
    std_error: float
    confidence: float = 0.95
    privacy: PrivacyCost | None = None
    low: float = float("-inf")
    high: float = float("inf")
    notes: tuple[str, ...] = ()
    true_mean: float | None = None

    @property
    def z(self) -> float:
        return normal_quantile(self.confidence)

    @property
    def ci_low(self) -> float:
        return self.mean - self.z * self.std_error

    @property
    def ci_high(self) -> float:
        return self.mean + self.z * self.std_error

    @property
    def covered(self) -> bool | None:
        """Whether the CI holds :attr:`true_mean` (``None`` without one)."""
        return None if self.true_mean is None else bool(self.ci_low <= self.true_mean <= self.ci_high)

    def with_truth(self, mean: float) -> MeanEstimate:
        """The estimate with the true mean attached (``error`` and ``covered`` in the row)."""
        return replace(self, true_mean=float(mean))

    def row(self) -> dict[str, Any]:
        """The estimate's numbers as one row (with ``true_mean``, ``error``, ``covered`` when known)."""
        out: dict[str, Any] = {"mean": self.mean, "std_error": self.std_error, "ci_low": self.ci_low,
                               "ci_high": self.ci_high}
        if self.true_mean is not None:
            out.update(true_mean=self.true_mean, error=self.mean - self.true_mean, covered=self.covered)
        return out

    def metadata(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "n": self.n, "confidence": self.confidence, "low": self.low,
                "high": self.high, "privacy": self.privacy.to_dict() if self.privacy else None,
                "notes": list(self.notes)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.metadata(), **self.row()}

    def title(self) -> str:
        """``protocol: n=…, values in [low, high], 95% CI, ε=…``."""
        return (f"{self.protocol}: n={self.n}, values in [{self.low:g}, {self.high:g}], {self.confidence:.0%} CI"
                + (f", {self.privacy}" if self.privacy else ""))

    def table(self, max_rows: int | None = 40) -> str:
        """The title, the one row, then the notes (``max_rows`` is taken for the views' common signature)."""
        row = self.row()
        cols = [Column(k, "" if isinstance(v, bool) else ".4g") for k, v in row.items()]
        text = render(cols, [list(row.values())], title=self.title())
        return "\n".join([text] + [f"note: {n}" for n in self.notes])
