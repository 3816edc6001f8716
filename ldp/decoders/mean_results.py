"""The estimate of a mean: a small result object that prints as a table and converts to dicts, JSON, pandas."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ldp.accountant import PrivacyCost
from ldp.decoders.results import normal_quantile, to_frame
from ldp.tables import Column, render

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MeanEstimate"]


@dataclass(frozen=True)
class MeanEstimate:
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

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def to_pandas(self) -> pd.DataFrame:
        """One row (typed columns, :func:`~ldp.decoders.results.to_frame`); :meth:`metadata` in ``attrs``."""
        return to_frame({k: [v] for k, v in self.row().items()}, self.metadata())

    def table(self) -> str:
        """A header line (protocol, n, bounds, confidence, privacy), one row, then the notes."""
        row = self.row()
        head = (f"{self.protocol}: n={self.n}, values in [{self.low:g}, {self.high:g}], {self.confidence:.0%} CI"
                + (f", {self.privacy}" if self.privacy else ""))
        cols = [Column(k, "" if isinstance(v, bool) else ".4g") for k, v in row.items()]
        text = render(cols, [list(row.values())], title=head)
        return "\n".join([text] + [f"note: {n}" for n in self.notes])

    def __str__(self) -> str:
        return self.table()
