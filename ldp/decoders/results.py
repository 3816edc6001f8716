"""Estimates as a small result object: prints as a table, converts to dicts, CSV, JSON and pandas."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.accountant import PrivacyCost
from ldp.decoders import consistency
from ldp.extras import install_hint
from ldp.tables import Column, render

if TYPE_CHECKING:
    import pandas as pd

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


@dataclass(frozen=True)
class Estimates:
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

        For the protocols of :data:`ldp.decoders.consistency.IBU_PROTOCOLS` (``ValueError`` otherwise, or
        after another post-processing); non-negative, summing to n, biased. Convergence: ``tol`` on the
        largest change of a fraction, at most ``max_iter`` iterations (:func:`ldp.decoders.consistency.ibu`)."""
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

    def to_dicts(self) -> list[dict[str, Any]]:
        return column_rows(self.columns(), len(self.items))

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(self.columns()), lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.to_dicts())
        return buf.getvalue()

    def to_json(self) -> str:
        return json.dumps({**self.metadata(), "estimates": self.to_dicts()})

    def to_pandas(self) -> pd.DataFrame:
        """One row per item with typed columns (:func:`to_frame`); :meth:`metadata` in ``attrs``.

        Needs pandas (``pip install 'ldp-telemetry[pandas]'``)."""
        return to_frame(self.columns(), self.metadata())

    def table(self, max_rows: int = 40) -> str:
        """A header line (protocol, n, confidence, privacy), one row per item, then the notes.

        A column with no value in any row (all None or NaN, e.g. ``duplicate_of`` without duplicates)
        is left out; p-values print as :func:`~ldp.tables.format_p_value` (scientific below 1e-4)."""
        cols = {k: v for k, v in self.columns().items() if not self.items or not _all_missing(v)}
        head = f"{self.protocol}: n={self.n}, {self.confidence:.0%} CI" + (f", {self.privacy}" if self.privacy else "")
        rows = zip(*cols.values(), strict=True)
        text = render([Column(k, column_format(k, cols[k])) for k in cols], rows, title=head, max_rows=max_rows)
        return "\n".join([text] + [f"note: {n}" for n in self.notes])

    def __str__(self) -> str:
        return self.table()


CONSISTENCY_METHODS = ("none", "clip", "project", "norm-sub", "base-cut", "ibu")
"""The names :meth:`Estimates.consistent` takes (``none``, the default: the raw unbiased estimate)."""
_POSTPROCESSED = ("counts clipped", "counts projected", "Norm-Sub", "Base-Cut", "IBU")  # notes of the maps above


def column_rows(columns: Mapping[str, Sequence[Any]], n: int) -> list[dict[str, Any]]:
    """The ``n`` rows of equal-length ``columns`` as dicts of plain Python values."""
    return [{k: _plain(v[i]) for k, v in columns.items()} for i in range(n)]


def require_pandas(feature: str = "to_pandas()") -> Any:
    """The pandas module, or an ImportError naming the extra that installs it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{feature} needs pandas: {install_hint('pandas', 'pandas')}") from None
    return pandas


def to_frame(columns: Mapping[str, Sequence[Any]], attrs: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """A DataFrame of equal-length ``columns`` with typed columns, ``attrs`` attached.

    Strings become ``string``, booleans ``bool``, integers ``int64``, floats ``float64``. An
    object column with missing values (``None``) becomes the nullable ``string``, ``boolean``,
    ``Int64`` or ``float64`` (NaN) column of its other values; an empty or all-missing one, ``string``."""
    pd = require_pandas()
    frame = pd.DataFrame({name: _typed(pd, values) for name, values in columns.items()})
    frame.attrs.update(attrs or {})
    return frame


def _typed(pd: Any, values: Sequence[Any]) -> Any:
    """``values`` as a pandas array of the dtype :func:`to_frame` documents."""
    a = values if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    if a.ndim != 1:
        raise ValueError(f"a data frame column must be one-dimensional, got shape {a.shape}")
    kind = a.dtype.kind
    if kind == "b":
        return pd.array(a, dtype="bool")
    if kind in "iu":
        return pd.array(a, dtype="uint64" if kind == "u" and a.dtype.itemsize == 8 else "int64")
    if kind == "f":
        return pd.array(a, dtype="float64")
    if kind in "US":
        return pd.array(a.astype(str), dtype="string")
    if kind != "O":
        return pd.array(a)
    present = [_plain(v) for v in a.tolist() if v is not None]
    if all(isinstance(v, str) for v in present):
        return pd.array(a.tolist(), dtype="string")
    if all(isinstance(v, bool) for v in present):
        return pd.array(a.tolist(), dtype="boolean")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.array([_plain(v) for v in a.tolist()], dtype="Int64")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.array([np.nan if v is None else float(v) for v in a.tolist()], dtype="float64")
    return pd.array(a, dtype=object)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _all_missing(values: Sequence[Any]) -> bool:
    """Whether every value is None or a float NaN (a column a table leaves out)."""
    return all(v is None or (isinstance(v, float) and math.isnan(v)) for v in map(_plain, values))


COUNT_COLUMNS = frozenset({"count", "std_error", "ci_low", "ci_high", "true_count", "error", "threshold"})
COLUMN_FORMATS = {"fraction": ".4f", "z": ".2f", "p_value": "p"}


def column_format(name: str, values: Sequence[Any]) -> str:
    """The one number format of a table column: counts 1 decimal, fractions 4, z 2, p-values
    :func:`~ldp.tables.format_p_value`; another float column 4 decimals if every value is below 1,
    else 1; a column without floats ``str``."""
    if name in COUNT_COLUMNS:
        return ".1f"
    if name in COLUMN_FORMATS:
        return COLUMN_FORMATS[name]
    floats = [abs(v) for v in map(_plain, values) if isinstance(v, float) and math.isfinite(v)]
    if not floats:
        return ""
    return ".4f" if max(floats) < 1 else ".1f"
