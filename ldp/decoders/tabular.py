"""One shape for every result object: rows of named columns, plus what the rows do not say.

:class:`ResultTable` is the mixin the estimates, plans, simulation results and discoveries share. A
result gives :meth:`~ResultTable.columns` (equal-length columns: the rows), :meth:`~ResultTable.metadata`
(plain values: protocol, n, privacy, notes...) and a :meth:`~ResultTable.title`; every view is made from
those, so they agree: :meth:`~ResultTable.to_dicts`, :meth:`~ResultTable.to_csv`,
:meth:`~ResultTable.to_json` (the metadata with the rows under :attr:`~ResultTable.json_rows`),
:meth:`~ResultTable.to_pandas` (typed columns, the metadata in ``attrs``), :meth:`~ResultTable.table`
(plain text, at most ``max_rows`` rows), ``_repr_html_`` (a notebook's table) and a short ``repr``.
A one-row result (a plan, a mean) shows as ``name  value`` lines and an HTML table of two columns.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ldp.display.tables import Column, key_values, render
from ldp.extras import install_hint

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OneRowResult", "ResultTable", "column_format", "column_rows", "columns_of", "cost_fields", "jsonable",
           "require_pandas", "to_frame"]

HTML_MAX_ROWS = 40
"""Rows a notebook shows (:meth:`ResultTable._repr_html_`); the others are counted, and all are in
:meth:`ResultTable.to_pandas`."""


class ResultTable:
    """The views of a result made from its columns and metadata (module docstring)."""

    json_rows: ClassVar[str | None] = "rows"
    """The key of the rows in :meth:`to_json`; ``None`` for a one-row result, whose JSON is the metadata
    and the row's fields side by side."""

    def columns(self) -> Mapping[str, Sequence[Any]]:
        """The rows, as equal-length columns (``{name: values}``)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, Any]:
        """What the rows do not say, as plain values (JSON-ready)."""
        return {"notes": list(self.result_notes())}

    def title(self) -> str:
        """One line saying what the result is (the table's first line)."""
        return type(self).__name__

    def result_notes(self) -> Sequence[str]:
        """The notes printed under the table."""
        return tuple(getattr(self, "notes", ()))

    def row_count(self) -> int:
        return len(next(iter(self.columns().values()), ()))

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per row, of plain Python values."""
        return column_rows(self.columns(), self.row_count())

    def to_csv(self) -> str:
        """The rows as CSV with a header line (``\\n`` line ends; a missing value is an empty cell)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(self.columns()), lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.to_dicts())
        return buf.getvalue()

    def to_json(self) -> str:
        """The metadata with the rows under :attr:`json_rows` (a one-row result: its fields beside it)."""
        rows = self.to_dicts()
        if self.json_rows is None:
            return json.dumps({**self.metadata(), **(rows[0] if rows else {})})
        return json.dumps({**self.metadata(), self.json_rows: rows})

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a DataFrame with typed columns (:func:`to_frame`), the metadata in ``attrs``.

        Needs pandas (``pip install 'ldp-telemetry[pandas]'``)."""
        return to_frame(self.columns(), self.metadata())

    def table(self, max_rows: int | None = 40) -> str:
        """The title, the rows (at most ``max_rows``; ``None``: all), then the notes. A one-row result
        prints ``name  value`` lines."""
        cols = self.columns()
        if self.json_rows is None and self.row_count() == 1:
            text = "\n".join([self.title(), key_values((k, _cell(k, v)) for k, v in self.to_dicts()[0].items())])
        else:
            shown = {k: v for k, v in cols.items() if not self.row_count() or not _all_missing(v)}
            text = render([Column(k, column_format(k, shown[k])) for k in shown], zip(*shown.values(), strict=True),
                          title=self.title(), max_rows=max_rows)
        return "\n".join([text] + [f"note: {n}" for n in self.result_notes()])

    def _repr_html_(self) -> str:
        """The result as an HTML table for notebooks (escaped; at most :data:`HTML_MAX_ROWS` rows)."""
        rows = self.to_dicts()
        esc = html.escape
        parts = [f'<div class="ldp-result"><p><strong>{esc(self.title())}</strong></p><table>']
        if self.json_rows is None and len(rows) == 1:
            parts.append("<thead><tr><th>name</th><th>value</th></tr></thead><tbody>")
            parts += [f"<tr><th>{esc(k)}</th><td>{esc(_cell(k, v))}</td></tr>" for k, v in rows[0].items()]
        else:
            cols = list(self.columns())
            parts.append("<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr></thead><tbody>")
            fmt = {c: column_format(c, [r[c] for r in rows]) for c in cols}
            for r in rows[:HTML_MAX_ROWS]:
                cells = "".join(f"<td>{esc(Column(c, fmt[c]).cell(r[c]))}</td>" for c in cols)
                parts.append(f"<tr>{cells}</tr>")
        parts.append("</tbody></table>")
        if len(rows) > HTML_MAX_ROWS and self.json_rows is not None:
            parts.append(f"<p>… {len(rows) - HTML_MAX_ROWS} more rows (all in <code>to_pandas()</code>)</p>")
        parts += [f"<p>note: {esc(n)}</p>" for n in self.result_notes()]
        return "".join(parts) + "</div>"

    def __repr__(self) -> str:
        n = self.row_count()
        return f"<{type(self).__name__}: {self.title()}; {n} row{'s' * (n != 1)}>"

    def __str__(self) -> str:
        return self.table()


def jsonable(obj: Any, strict: bool = False) -> Any:
    """``obj`` as plain JSON values: numpy scalars and arrays as Python numbers and lists, tuples as lists,
    mapping keys as strings; with ``strict``, NaN and infinities as ``None`` (strict JSON)."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v, strict) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [jsonable(v, strict) for v in obj]
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    value = obj.item() if isinstance(obj, np.generic) else obj
    if strict and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def columns_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Rows of dicts as columns: every key that any row has, in first-seen order (``None`` where a row
    lacks it)."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    return {k: [r.get(k) for r in rows] for k in names}


class OneRowResult(ResultTable):
    """A result that is one row (a plan, a mean): :meth:`row` gives it; its JSON is the metadata and the
    row's fields side by side."""

    json_rows = None

    def row(self) -> dict[str, Any]:
        raise NotImplementedError

    def columns(self) -> dict[str, list[Any]]:
        return {k: [v] for k, v in self.row().items()}


def cost_fields(obj: Any, names: Sequence[str]) -> dict[str, float]:
    """Each :class:`~ldp.privacy.accountant.PrivacyCost` attribute ``epsilon_X`` of ``obj`` as two numbers,
    ``epsilon_X`` and ``delta_X``."""
    out: dict[str, float] = {}
    for name in names:
        cost = getattr(obj, name)
        out[name], out[name.replace("epsilon", "delta", 1)] = cost.epsilon, cost.delta
    return out


def _cell(name: str, value: Any) -> str:
    """A one-row result's value as text: a float to 6 significant digits, the rest as a table cell."""
    value = _plain(value)
    return f"{value:.6g}" if isinstance(value, float) else Column(name).cell(value)


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
COLUMN_FORMATS = {"fraction": ".4f", "z": ".2f", "p_value": "p", "variance_ratio": ".3f", "coverage": ".3f"}


def column_format(name: str, values: Sequence[Any]) -> str:
    """The one number format of a table column: counts 1 decimal, fractions 4, z 2, p-values
    :func:`~ldp.display.tables.format_p_value`; another float column 4 decimals if every value is below 1,
    else 1; a column without floats ``str``."""
    if name in COUNT_COLUMNS:
        return ".1f"
    if name in COLUMN_FORMATS:
        return COLUMN_FORMATS[name]
    floats = [abs(v) for v in map(_plain, values) if isinstance(v, float) and math.isfinite(v)]
    if not floats:
        return ""
    return ".4f" if max(floats) < 1 else ".1f"
