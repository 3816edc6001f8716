"""Plain-text tables: headers, rows, per-column alignment and number formats.

Standard library only (clients may use it). Every table the package prints goes through
:func:`render`; a :class:`Column` says how its cells are formatted and aligned::

    >>> print(render([Column("item", align="left"), Column("count", ".1f"), Column("p", "p")],
    ...              [["a", 12.0, 0.5], ["b", 3.25, 1e-20]]))
    item  count       p
    ----  -----  ------
    a      12.0  0.5000
    b       3.2  <1e-16

Formats: a format spec (``".1f"``, ``",.0f"``, ``".2e"``) applied to every number of the column;
``"p"`` for p-values (:func:`format_p_value`); ``""`` (the default): ``str`` of the value; or a
callable returning the cell's text. Booleans print ``yes``/``no`` (unless the format is a
callable); ``None`` and NaN print the column's ``missing`` text (empty by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Column", "Format", "format_p_value", "format_value", "key_values", "render"]

Format = str | Callable[[Any], str]
ALIGNS = ("left", "right")
P_TINY = 1e-16  # below this a p-value prints as "<1e-16" (double precision cannot resolve it)
P_SCIENTIFIC = 1e-4  # below this, scientific notation


@dataclass(frozen=True)
class Column:
    """One column: its header, cell format, alignment, text for missing values, minimum width."""

    header: str
    format: Format = ""
    align: Literal["left", "right"] = "right"
    missing: str = ""
    width: int = 0

    def __post_init__(self) -> None:
        if self.align not in ALIGNS:
            raise ValueError(f"align must be one of {ALIGNS}, got {self.align!r}")
        if self.width < 0:
            raise ValueError(f"a column's minimum width must be >= 0, got {self.width}")

    def cell(self, value: Any) -> str:
        """The text of ``value`` in this column."""
        return format_value(value, self.format, self.missing)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (duck-typed: no numpy import)."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (str, bytes)) and getattr(value, "ndim", None) == 0:
        return item()
    return value


def format_p_value(p: float) -> str:
    """``0.0312`` at or above 1e-4, ``3.2e-07`` below it, ``<1e-16`` below double precision's resolution."""
    if p < P_TINY:
        return f"<{P_TINY:.0e}"
    if p < P_SCIENTIFIC:
        return f"{p:.1e}"
    return f"{p:.4f}"


def format_value(value: Any, fmt: Format = "", missing: str = "") -> str:
    """One cell's text (module docstring): ``missing`` for None/NaN, else a callable ``fmt``'s text,
    yes/no for booleans, the text of a string, or the number formatted by ``fmt``."""
    value = _plain(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if callable(fmt):
        return fmt(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not fmt or isinstance(value, str):
        return str(value)
    if fmt == "p":
        return format_p_value(float(value))
    return format(value, fmt)


def _line(cells: Sequence[str], columns: Sequence[Column], widths: Sequence[int], sep: str) -> str:
    return sep.join(c.ljust(w) if col.align == "left" else c.rjust(w)
                    for c, col, w in zip(cells, columns, widths, strict=True)).rstrip()


def render(columns: Sequence[Column | str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
           rule: bool = True, max_rows: int | None = None, more: str = "... {} more rows", indent: str = "",
           sep: str = "  ") -> str:
    """The table as text: optional ``title`` line, header, a dashed ``rule``, one line per row.

    Rows past ``max_rows`` are left out and ``more`` (with ``{}`` the number left out) says so;
    every line starts with ``indent``; trailing blanks are stripped."""
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    body = [list(r) for r in rows]
    for i, r in enumerate(body):
        if len(r) != len(cols):
            raise ValueError(f"every row needs one value per column ({len(cols)}); row {i} has {len(r)}")
    shown = body if max_rows is None else body[:max(max_rows, 0)]
    cells = [[col.cell(v) for col, v in zip(cols, r, strict=True)] for r in shown]
    widths = [max([c.width, len(c.header)] + [len(r[j]) for r in cells]) for j, c in enumerate(cols)]
    lines = [_line([c.header for c in cols], cols, widths, sep)]
    if rule:
        lines.append(_line(["-" * w for w in widths], cols, widths, sep))
    lines += [_line(r, cols, widths, sep) for r in cells]
    lines = [indent + ln for ln in lines]
    if len(body) > len(shown):
        lines.append(indent + more.format(len(body) - len(shown)))
    return "\n".join(([title] if title is not None else []) + lines)


def key_values(pairs: Iterable[tuple[str, Any]], sep: str = "  ") -> str:
    """``name  value`` lines with the names padded to a common width."""
    items = [(str(k), str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k:<{width}}{sep}{v}".rstrip() for k, v in items)
