"""Server-rendered SVG charts for the dashboard: estimates as bars with confidence-interval whiskers.

Plain strings, no dependency: every text is escaped, the figure is ``role="img"`` with a ``<title>`` and
a ``<desc>`` (the page shows the same numbers in a table for screen readers), colours have a contrast of
at least 4.5:1 on white except the light bars, whose meaning is also said in text, and the figure
scales to the width of its container.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["BAR", "BAR_MUTED", "format_number", "interval_chart", "nice_ticks"]

BAR = "#2f5f98"        # 6.6:1 on white
BAR_MUTED = "#b3c2d3"  # items not detected (the legend and the table say so too)
INK = "#1b1f24"
GRID = "#d0d7de"
ROW = 26
LABEL_CHARS = 28
FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:12px"


def format_number(v: Any) -> str:
    """A short, readable number: thousands separated, 3 significant digits below 10; ``n/a`` if missing."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "n/a"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:,.1f}"
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]`` (about ``count`` of them, steps of 1, 2 or 5 × 10^k)."""
    if not hi > lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step), math.ceil(hi / step)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _num(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def interval_chart(rows: Sequence[Mapping[str, Any]], *, title: str, desc: str, chart_id: str,
                   axis_label: str = "estimate", width: int = 640) -> str:
    """An SVG of one horizontal bar per row (``item``, ``estimate``) from zero, with a whisker from
    ``ci_low`` to ``ci_high`` and the estimate written at the right. A row with ``detected`` false is
    drawn light (when any row has ``detected``, a legend says so). ``chart_id`` makes the ids unique."""
    if not rows:
        raise ValueError("a chart needs at least one row")
    values = [v for r in rows for k in ("estimate", "ci_low", "ci_high") if (v := _num(r, k)) is not None]
    ticks = nice_ticks(min([0.0, *values]), max([0.0, *values]))
    lo, hi = ticks[0], ticks[-1]
    detection = any("detected" in r for r in rows)
    label_w = 12 + 7 * max(len(_label(str(r.get("item", "")))) for r in rows)
    value_w, top = 84, 28 if detection else 8
    plot_w = max(width - label_w - value_w - 16, 120)
    width = label_w + plot_w + value_w + 16
    height = top + ROW * len(rows) + 40

    def x(v: float) -> float:
        return round(label_w + (v - lo) / (hi - lo) * plot_w, 2)

    tid, did = f"{chart_id}-title", f"{chart_id}-desc"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
           f'style="max-width:{width}px;height:auto" role="img" aria-labelledby="{tid} {did}" id="{escape(chart_id)}">',
           f'<title id="{tid}">{escape(title)}</title>', f'<desc id="{did}">{escape(desc)}</desc>',
           f'<g style="{FONT}" fill="{INK}">']
    if detection:
        out += [f'<rect x="{label_w}" y="6" width="12" height="12" fill="{BAR}"/>',
                f'<text x="{label_w + 16}" y="16">detected</text>',
                f'<rect x="{label_w + 90}" y="6" width="12" height="12" fill="{BAR_MUTED}"/>',
                f'<text x="{label_w + 106}" y="16">not detected</text>']
    bottom = top + ROW * len(rows)
    for t in ticks:
        out += [f'<line x1="{x(t)}" y1="{top}" x2="{x(t)}" y2="{bottom}" stroke="{GRID}" stroke-width="1"/>',
                f'<text x="{x(t)}" y="{bottom + 14}" text-anchor="middle">{t:,.10g}</text>']
    out.append(f'<line x1="{x(0.0)}" y1="{top}" x2="{x(0.0)}" y2="{bottom}" stroke="{INK}" stroke-width="1"/>')
    for i, r in enumerate(rows):
        y = top + i * ROW
        mid = y + ROW / 2
        item = str(r.get("item", ""))
        est, low, high = _num(r, "estimate"), _num(r, "ci_low"), _num(r, "ci_high")
        out.append(f'<text x="{label_w - 8}" y="{mid + 4}" text-anchor="end">{escape(_label(item))}</text>')
        if est is not None:
            colour = BAR_MUTED if r.get("detected") is False else BAR
            x0, x1 = sorted((x(0.0), x(est)))
            out.append(f'<rect x="{x0}" y="{y + 5}" width="{round(x1 - x0, 2)}" height="{ROW - 10}" fill="{colour}"/>')
        if low is not None and high is not None:
            a, b = x(low), x(high)
            out += [f'<line x1="{a}" y1="{mid}" x2="{b}" y2="{mid}" stroke="{INK}" stroke-width="1.5"/>',
                    f'<line x1="{a}" y1="{mid - 5}" x2="{a}" y2="{mid + 5}" stroke="{INK}" stroke-width="1.5"/>',
                    f'<line x1="{b}" y1="{mid - 5}" x2="{b}" y2="{mid + 5}" stroke="{INK}" stroke-width="1.5"/>']
        out.append(f'<text x="{label_w + plot_w + 10}" y="{mid + 4}">{escape(format_number(est))}</text>')
    out += [f'<text x="{label_w + plot_w / 2}" y="{bottom + 32}" text-anchor="middle">{escape(axis_label)}</text>',
            "</g></svg>"]
    return "\n".join(out)
