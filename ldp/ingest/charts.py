"""Server-rendered SVG charts for the dashboard: estimates as bars with confidence-interval whiskers.

Plain strings, no dependency: every text is escaped, the figure is ``role="img"`` with a ``<title>`` and
a ``<desc>`` (the page shows the same numbers in a table for screen readers), colours have a contrast of
at least 4.5:1 on white except the light bars, whose meaning is also said in text, and the figure
scales to the width of its container.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

__all__ = ["BAR", "BAR_MUTED", "SERIES_COLOURS", "format_number", "interval_chart", "nice_ticks", "series_chart"]

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


SERIES_COLOURS = ("#2f5f98", "#b3261e", "#1a7f37", "#8250df", "#9a6700")  # each >= 4.5:1 on white
SERIES_DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2")  # the lines differ by more than their colour
Point = Mapping[str, Any] | None


def _runs(points: Sequence[Point]) -> list[list[int]]:
    """The slots of each stretch of consecutive points that have an estimate."""
    runs: list[list[int]] = []
    for i, p in enumerate(points):
        if p is not None and _num(p, "estimate") is not None:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    return runs


def series_chart(slots: Sequence[str], lines: Sequence[tuple[str, Sequence[Point]]], *, title: str, desc: str,
                 chart_id: str, axis_label: str, zero: bool = True, width: int = 640) -> str:
    """An SVG time series: ``slots`` are the x positions' labels (one per window, oldest first); each line is
    ``(name, points)``, a point per slot (``estimate``, ``ci_low``, ``ci_high``; ``None`` where the window has
    no estimate). Each line is drawn with its confidence interval as a shaded band (``class="ci-band"``, one
    per stretch of consecutive windows), its estimates as points (``class="point"``, each with a ``<title>``)
    and a legend. ``zero``: the y axis includes 0 (counts)."""
    if not slots or not lines:
        raise ValueError("a time series needs at least one window and one line")
    if any(len(points) != len(slots) for _, points in lines):
        raise ValueError("every line needs one point (or None) per window")
    values = [v for _, points in lines for p in points if p is not None
              for k in ("estimate", "ci_low", "ci_high") if (v := _num(p, k)) is not None]
    ticks = nice_ticks(min([0.0] * zero + values or [0.0]), max([0.0] * zero + values or [1.0]))
    left, right, legend_rows = 64, 16, math.ceil(len(lines) / 2)
    top = 10 + 20 * legend_rows
    plot_w, plot_h = max(width - left - right, 160), 220
    width, height = left + plot_w + right, top + plot_h + 64
    frame = _Frame(left, top, plot_w, plot_h, plot_w / len(slots), ticks[0], ticks[-1])
    tid, did = f"{chart_id}-title", f"{chart_id}-desc"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
           f'style="max-width:{width}px;height:auto" role="img" aria-labelledby="{tid} {did}" id="{escape(chart_id)}">',
           f'<title id="{tid}">{escape(title)}</title>', f'<desc id="{did}">{escape(desc)}</desc>',
           f'<g style="{FONT}" fill="{INK}">']
    out += _series_legend(frame, [name for name, _ in lines])
    out += _series_axes(frame, ticks, slots)
    for j, (name, points) in enumerate(lines):
        out += _series_line(frame, j, name, points, slots)
    out += [f'<text x="{left + plot_w / 2}" y="{top + plot_h + 40}" text-anchor="middle">{escape(axis_label)}</text>',
            "</g></svg>"]
    return "\n".join(out)


@dataclass(frozen=True)
class _Frame:
    """A time series' plot: its left and top edges, width and height, the width of one slot, and the y axis's
    range ``[lo, hi]``."""

    left: int
    top: int
    plot_w: int
    plot_h: int
    step: float
    lo: float
    hi: float

    def x(self, i: int) -> float:
        """The centre of slot ``i``."""
        return round(self.left + self.step * (i + 0.5), 2)

    def y(self, v: float) -> float:
        """The height of value ``v``."""
        return round(self.top + self.plot_h - (v - self.lo) / (self.hi - self.lo) * self.plot_h, 2)


def _series_legend(frame: _Frame, names: list[str]) -> list[str]:
    """The legend above the plot, two lines a row: each line's colour and dash beside its name."""
    out = []
    for j, name in enumerate(names):
        lx, ly = frame.left + (j % 2) * (frame.plot_w / 2), 10 + 20 * (j // 2)
        colour, dash = SERIES_COLOURS[j % len(SERIES_COLOURS)], SERIES_DASHES[j % len(SERIES_DASHES)]
        out += [f'<line x1="{lx}" y1="{ly + 6}" x2="{lx + 24}" y2="{ly + 6}" stroke="{colour}" stroke-width="2.5"'
                + (f' stroke-dasharray="{dash}"' if dash else "") + "/>",
                f'<text x="{lx + 30}" y="{ly + 10}">{escape(_label(name))}</text>']
    return out


def _series_axes(frame: _Frame, ticks: list[float], slots: Sequence[str]) -> list[str]:
    """The y axis's grid lines and tick labels (and 0, when inside), and at most about 7 slot labels below."""
    left, top, plot_w, plot_h, x, y = frame.left, frame.top, frame.plot_w, frame.plot_h, frame.x, frame.y
    out = []
    for t in ticks:
        out += [f'<line x1="{left}" y1="{y(t)}" x2="{left + plot_w}" y2="{y(t)}" stroke="{GRID}" stroke-width="1"/>',
                f'<text x="{left - 6}" y="{y(t) + 4}" text-anchor="end">{t:,.10g}</text>']
    if frame.lo < 0 < frame.hi:
        out.append(f'<line x1="{left}" y1="{y(0.0)}" x2="{left + plot_w}" y2="{y(0.0)}" stroke="{INK}"/>')
    every = max(1, math.ceil(len(slots) / 7))
    for i, label in enumerate(slots):
        if i % every == 0 or i == len(slots) - 1:
            out += [f'<line x1="{x(i)}" y1="{top + plot_h}" x2="{x(i)}" y2="{top + plot_h + 4}" stroke="{INK}"/>',
                    f'<text x="{x(i)}" y="{top + plot_h + 18}" text-anchor="middle">{escape(label)}</text>']
    return out


def _series_line(frame: _Frame, j: int, name: str, points: Sequence[Point], slots: Sequence[str]) -> list[str]:
    """Line ``j``: per stretch of consecutive estimates, its interval's band (a narrow box for one window), the
    line through them, and a point with a tooltip for each."""
    x, y = frame.x, frame.y
    colour, dash = SERIES_COLOURS[j % len(SERIES_COLOURS)], SERIES_DASHES[j % len(SERIES_DASHES)]
    out = []
    for run in _runs(points):
        band = [i for i in run if _num(points[i] or {}, "ci_low") is not None
                and _num(points[i] or {}, "ci_high") is not None]
        if band:
            half = 0.0 if len(band) > 1 else min(frame.step / 4, 8)
            upper = [f"{x(i) - half},{y(_num(points[i] or {}, 'ci_high') or 0.0)}" for i in band]
            lower = [f"{x(i) + half},{y(_num(points[i] or {}, 'ci_low') or 0.0)}" for i in reversed(band)]
            if half:
                upper.append(f"{x(band[0]) + half},{y(_num(points[band[0]] or {}, 'ci_high') or 0.0)}")
                lower.append(f"{x(band[0]) - half},{y(_num(points[band[0]] or {}, 'ci_low') or 0.0)}")
            out.append(f'<polygon class="ci-band" data-series="{j}" points="{" ".join(upper + lower)}" '
                       f'fill="{colour}" fill-opacity="0.18" stroke="none"/>')
        if len(run) > 1:
            path = " ".join(f"{x(i)},{y(_num(points[i] or {}, 'estimate') or 0.0)}" for i in run)
            out.append(f'<polyline class="series" data-series="{j}" points="{path}" fill="none" '
                       f'stroke="{colour}" stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "")
                       + "/>")
        for i in run:
            p = points[i] or {}
            tip = (f"{name}, {slots[i]}: {format_number(_num(p, 'estimate'))} "
                   f"[{format_number(_num(p, 'ci_low'))}, {format_number(_num(p, 'ci_high'))}]")
            out.append(f'<circle class="point" data-series="{j}" data-slot="{i}" cx="{x(i)}" '
                       f'cy="{y(_num(p, "estimate") or 0.0)}" r="3.5" fill="{colour}">'
                       f"<title>{escape(tip)}</title></circle>")
    return out
