"""What the dashboard shows, as plain data for its template: an app's state and each metric's time series.

:func:`app_view` turns an app's ``estimates.json`` and its ingest service counters into the values the template
(``templates/dashboard.html``) prints: numbers formatted, times as ISO and human text, charts as SVG
(:mod:`ldp.ingest.charts`, which escapes every text). The template escapes everything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ldp.ingest.charts import format_number, interval_chart, series_chart

__all__ = ["CHART_ROWS", "SERIES_ITEMS", "app_view", "count", "poisoning_view", "pooled_facts", "quantile_cells",
           "release_view", "shown_rows", "time_view", "window_label"]

CHART_ROWS = 30
"""Items shown per metric (chart and table): all of them up to this many, else the largest estimates."""
SERIES_ITEMS = 5
"""Items drawn in a metric's time series: the largest estimates of its latest window."""
SHOWN_LEFT_OUT = 5
"""Windows left out of the pooled estimate named on the page (as :data:`ldp.jobs.release.SHOWN_LEFT_OUT`)."""


def count(n: Any) -> str:
    """A count with thousands separators (anything else as text)."""
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)


def time_view(t: datetime | str | None) -> dict[str, str] | None:
    """A time as ``{"iso": ..., "text": ...}`` (``None`` when unknown)."""
    if isinstance(t, str):
        try:
            t = datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
    if t is None:
        return None
    iso = t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"iso": iso, "text": iso.replace("T", " ").replace("Z", " UTC")}


def _ago(iso: str, now: datetime) -> str:
    t = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    s = max(0, int((now - t).total_seconds()))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago" if s < 7200 else f"{s // 3600} h ago"


def length_text(seconds: Any) -> str:
    """A window's length for people: ``1 day``, ``7 days``, ``6 h``, ``15 min``, else seconds."""
    if not isinstance(seconds, int) or seconds <= 0:
        return "unknown"
    for unit, name in ((86400, "day"), (3600, "h"), (60, "min")):
        if seconds % unit == 0:
            k = seconds // unit
            return f"{k} {name}{'s' if name == 'day' and k != 1 else ''}"
    return f"{seconds:,} s"


def window_label(window: int, seconds: int, short: bool = False) -> str:
    """A window by its start (UTC): the date for whole days, else the date and time."""
    start = datetime.fromtimestamp(window * seconds, UTC)
    if seconds % 86400 == 0:
        return start.strftime("%m-%d" if short else "%Y-%m-%d")
    if seconds % 60 == 0:
        return start.strftime("%m-%d %H:%M" if short else "%Y-%m-%d %H:%M UTC")
    return start.strftime("%H:%M:%S" if short else "%Y-%m-%d %H:%M:%S UTC")


def shown_rows(rows: Sequence[Mapping[str, Any]], limit: int = CHART_ROWS) -> list[Mapping[str, Any]]:
    """All rows in their order when there are at most ``limit``, else the ``limit`` largest estimates."""
    if len(rows) <= limit:
        return list(rows)

    def key(r: Mapping[str, Any]) -> float:
        v = r.get("estimate")
        return -float(v) if isinstance(v, (int, float)) and v == v else float("inf")

    return sorted(rows, key=key)[:limit]


def _privacy(p: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if not p:
        return []

    def text(c: Any) -> str:
        return str(c["text"]) if isinstance(c, Mapping) and "text" in c else "no cap"

    metric, total = p.get("metric") or {}, p.get("collection") or {}
    cap = f" (cap {text(p.get('per_report_cap'))})" if p.get("per_report_cap") else ""
    return [("Privacy cost per report", text(p.get("per_report")) + cap),
            (f"Per device per window ({count(p.get('window_seconds'))} s)",
             f"this metric: {text(metric.get('per_window'))}; all metrics: {text(total.get('per_window'))}"),
            ("Per device, lifetime", f"this metric: {text(metric.get('lifetime'))}; all metrics: "
                                     f"{text(total.get('lifetime'))}")]


def _central(sh: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The central guarantee the shuffle buys (``shuffle`` of a metric entry, :mod:`ldp.pipeline.amplification`)."""
    if not isinstance(sh, Mapping):
        return []
    out = []
    g = sh.get("central")
    if isinstance(g, Mapping) and sh.get("smallest"):
        head = (f"ε={g.get('epsilon'):.4g}, δ={sh.get('delta'):g}" if g.get("amplified") else
                "none proven at this size (the local guarantee stands)")
        k = sh.get("reports_per_window") or 1  # an entry written before it was kept: one report
        whose = "a device's one report" if k == 1 else f"a device's {count(k)} reports (its most a window)"
        out.append(("Central guarantee against the analyst (shuffled), one window",
                    f"{head}: {whose} among the {count(sh['smallest'])} of its window in the smallest of "
                    f"{count(sh.get('segments'))} shuffled segments; only if whoever runs the ingest is not the "
                    "analyst"))
    if sh.get("unshuffled_segments"):
        out.append(("Segments stored before shuffling", f"{count(sh['unshuffled_segments'])}: their reports have the "
                                                        "local guarantee only"))
    return out


def cumulative_facts(c: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """A metric's guarantee over the windows released (``central`` of a metric entry, :mod:`ldp.ingest.central`):
    the cumulative central (ε, δ) beside the local ε those windows cost a device, and the target."""
    if not isinstance(c, Mapping):
        return []
    n = count(c.get("windows"))
    eps, local = c.get("epsilon"), c.get("local")
    central = (f"ε={eps:.4g}, δ={c.get('delta'):g} over the {n} window(s) released" if isinstance(eps, int | float)
               else f"none proven ({c.get('reason') or 'reports stored unshuffled'})")
    out = [("Cumulative central guarantee against the analyst", central),
           ("Local guarantee of those windows, per device", f"ε={local:.4g} ({c.get('reports_per_window')} report(s) "
                                                            "a window at most)" if isinstance(local, int | float)
            else "not bounded")]
    t = c.get("target")
    if isinstance(t, Mapping):
        held = c.get("withheld") or {}
        out.append(("Central target", f"ε={t.get('epsilon'):g}, δ={t.get('delta'):g}"
                    + (f", planned over {count(t['windows'])} windows" if t.get("windows") else "")
                    + f"; {count(len(held))} window(s) withheld: central target"))
    return out


def _counters(counters: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str] | None]]:
    """The ingest service's counters for an app (numbers, one level nested): name, value, or a time for ``*_at``."""
    rows = []
    for k, v in counters.items():
        pairs = [(f"{k}: {k2}", v2) for k2, v2 in v.items() if not isinstance(v2, (Mapping, list))] \
            if isinstance(v, Mapping) else [] if isinstance(v, list) else [(str(k), v)]
        for name, value in pairs:
            when = None
            if name.endswith("_at") and isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    when = time_view(datetime.fromtimestamp(value, UTC))
                except (OverflowError, OSError, ValueError):
                    pass
            rows.append((name, count(value), when))
    return rows


def _reasons(folded: Mapping[str, Any], uploaded: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """Rejected reports by reason: as the ingest service counted them at upload (exact) and in the folded segments."""
    names = sorted(set(map(str, folded)) | set(map(str, uploaded or {})))
    return [(k, count((uploaded or {}).get(k, 0)) if uploaded is not None else "", count(folded.get(k, 0)))
            for k in names]


def app_view(i: int, app: str, doc: Mapping[str, Any] | None, ingest: Any, waiting: Mapping[str, Any] | None,
             now: datetime) -> dict[str, Any]:
    """Everything the template shows of one app."""
    ingest = ingest if isinstance(ingest, Mapping) else None
    view: dict[str, Any] = {"id": f"app{i}", "name": app, "folded": doc is not None, "waiting": waiting,
                            "counters": _counters(ingest) if ingest else [], "metrics": []}
    if doc is None:
        return view
    folded = time_view(doc.get("folded_at"))
    uploaded = ingest.get("rejected") if ingest and isinstance(ingest.get("rejected"), Mapping) else None
    rejected = doc.get("rejected") or {}
    facts = [("Segments folded", count(doc.get("segments", 0))), ("Reports read", count(doc.get("records", 0))),
             ("Reports aggregated", count(doc.get("accepted", 0))),
             ("Reports rejected", count(sum(uploaded.values()) if uploaded is not None else sum(rejected.values())))]
    if ingest and isinstance(ingest.get("accepted"), int):
        facts.insert(0, ("Reports accepted by the ingest service", count(ingest["accepted"])))
    view.update(folded_at=folded, ago=_ago(folded["iso"], now) if folded else None,
                checked_at=time_view(doc.get("checked_at")), facts=facts,
                specs=[(str(s.get("name", "")), str(s["description"])) for s in doc.get("specs", [])
                       if s.get("description")],
                reasons=_reasons(rejected, uploaded), warnings=[str(w) for w in doc.get("warnings", [])],
                metrics=[_metric_view(f"app{i}-m{j}", m, now) for j, m in enumerate(doc.get("metrics", []))])
    return view


def _level(m: Mapping[str, Any]) -> str:
    conf = m.get("confidence")
    return f"{conf:.0%}" if isinstance(conf, float) else "95%"


def _metric_view(sid: str, m: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    name = str(m.get("metric", ""))
    windows = [w for w in m.get("windows") or [] if isinstance(w, Mapping) and isinstance(w.get("window"), int)]
    latest = windows[-1] if windows else None
    seconds = m.get("window_seconds") or (m.get("privacy") or {}).get("window_seconds")
    window_n = m.get("window_n") or {}
    total = sum(v for v in window_n.values() if isinstance(v, int)) if window_n else m.get("n") or 0
    facts = [("Protocol", str(m.get("protocol", ""))), ("Reports in all windows", count(total)),
             ("Windows with reports", count(len(window_n))),
             ("Window length", f"{length_text(seconds)} ({count(seconds)} s), UTC")]
    if m.get("future_reports"):
        facts.append(("Reports in windows not started yet (in the pooled count only)", count(m["future_reports"])))
    facts += pooled_facts(m.get("release"), seconds)
    if latest is not None:
        facts.insert(2, ("Reports in the latest window", count(latest.get("n", 0))))
        if isinstance(latest.get("detected"), list):
            facts.append(("Detected items (latest window)", f"{len(latest['detected']):,}"))
    view: dict[str, Any] = {"id": sid, "name": name, "description": str(m.get("description") or ""),
                            "facts": facts + _privacy(m.get("privacy")) + _central(m.get("shuffle"))
                            + cumulative_facts(m.get("central")),
                            "reasons": _reasons(m.get("rejected") or {}, None), "n": total,
                            "error": None, "series": None, "latest": None}
    if latest is None or not isinstance(seconds, int):
        view["error"] = str(m["error"]) if m.get("error") else None
        return view
    view["series"] = _series_view(sid, name, m, windows, seconds)
    view["latest"] = _latest_view(sid, name, latest, seconds, now)
    return view


def pooled_facts(rel: Any, seconds: Any) -> list[tuple[str, str]]:
    """The windows the pooled estimate (all windows) leaves out, from its ``release`` (``left_out``,
    :func:`ldp.jobs.release.pool_windows`): each by its start and why (``not enough reports yet — 30 of 100``), the
    first :data:`SHOWN_LEFT_OUT` (all are in ``/v1/estimates``); none when nothing is left out."""
    left = rel.get("left_out") if isinstance(rel, Mapping) else None
    if not isinstance(left, list) or not left:
        return []

    def label(w: Any) -> str:
        return window_label(w, seconds) if isinstance(w, int) and isinstance(seconds, int) and seconds > 0 else str(w)

    named = [f"{label(e.get('window'))} ({e.get('reason')})" for e in left[:SHOWN_LEFT_OUT] if isinstance(e, Mapping)]
    more = len(left) - len(named)
    pooled = (f"{count(rel.get('n'))} reports of the {count(rel.get('pooled_windows'))} window(s) released"
              if rel.get("pooled_windows") else "nothing: no window released yet")
    shown = "; ".join(named) + (f"; and {more:,} more" if more > 0 else "")
    return [("Pooled estimate (all windows)", pooled), ("Windows left out of the pooled estimate", shown)]


def release_view(w: Mapping[str, Any] | None) -> dict[str, str | None]:
    """A window's release state for people (its ``release`` entry, :mod:`ldp.jobs.release`): ``held``, the
    reason it is not released (``not enough reports yet — 37 of 100``), or ``withheld``, the count line of items
    withheld (``12 items below 2 SE withheld``); ``None`` each when it does not apply."""
    rel = (w or {}).get("release")
    if not isinstance(rel, Mapping):
        return {"held": None, "withheld": None}
    held = str(rel.get("reason")) if rel.get("released") is False and rel.get("reason") else None
    withheld = str(rel.get("text")) if held is None and rel.get("withheld_items") else None
    return {"held": held, "withheld": withheld}


def poisoning_view(w: Mapping[str, Any] | None) -> str | None:
    """The warning line of a window whose reports leave the honest law (:mod:`ldp.jobs.poisoning`), else
    ``None``."""
    ev = (w or {}).get("poisoning")
    if not isinstance(ev, Mapping) or ev.get("verdict") != "suspicious":
        return None
    return (f"Possible poisoning: the reports of this window do not follow the law honest reports follow "
            f"({ev.get('message')}). A test never proves an attack; see docs/poisoning.md.")


def _what(kind: Any) -> str:
    return "estimated mean of the reported values" if kind == "mean" else "estimated reports in the window"


def quantile_cells(q: Any) -> list[tuple[str, str]]:
    """A window's summary quantiles (its ``quantiles`` entry: p50 and p95 of a histogram metric, with CIs) as
    ``(name, "estimate (low to high)")`` pairs; none when the metric has none."""
    rows = q.get("quantiles") if isinstance(q, Mapping) else None
    if not isinstance(rows, list):
        return []
    return [(str(r.get("quantile", "")), f"{format_number(r.get('estimate'))} ({format_number(r.get('ci_low'))} to "
                                         f"{format_number(r.get('ci_high'))})") for r in rows if isinstance(r, Mapping)]


def _series_view(sid: str, name: str, m: Mapping[str, Any], windows: Sequence[Mapping[str, Any]],
                 seconds: int) -> dict[str, Any]:
    """The time series of the windows kept: a chart of the top items (or the mean) with CI bands, and its table."""
    latest = windows[-1]
    kind = latest.get("kind") or next((w.get("kind") for w in windows if w.get("kind")), None)
    first, last = windows[0]["window"], latest["window"]
    slots = list(range(first, last + 1))
    by_window = {w["window"]: w for w in windows}
    newest = next((w for w in reversed(windows) if w.get("rows")), latest)  # the latest may be withheld
    items = [str(r.get("item")) for r in shown_rows(newest.get("rows") or [], SERIES_ITEMS)]
    lines = []
    for item in items:
        points = []
        for s in slots:
            row = next((r for r in (by_window.get(s) or {}).get("rows") or [] if str(r.get("item")) == item), None)
            points.append(row)
        lines.append((item, points))
    level, what = _level(latest), _what(kind)
    span = f"{window_label(first, seconds)} to {window_label(last, seconds)}"
    desc = (f"Line chart of the {what} of {name} in each window of {length_text(seconds)} from {span} "
            f"({len(slots)} windows), with {level} confidence intervals as shaded bands"
            + ("" if kind == "mean" else f"; the {len(items)} items largest in the latest window") + ". "
            "The table below gives the same numbers.")
    chart = None
    if lines:
        chart = series_chart([window_label(s, seconds, short=True) for s in slots], lines,
                             title=f"{name}: {what}, window by window ({length_text(seconds)}), with {level} "
                                   "confidence bands", desc=desc, chart_id=f"{sid}-series",
                             axis_label=f"window start (UTC); y: {what} ({level} CI)", zero=kind != "mean",
                             width=640)
    qnames = [name for name, _ in quantile_cells(next((w.get("quantiles") for w in reversed(windows)
                                                        if w.get("quantiles")), None))]
    rows = []
    for s in slots:
        w = by_window.get(s)
        cells = []
        for _, points in lines:
            p = points[slots.index(s)]
            cells.append("" if p is None else f"{format_number(p.get('estimate'))} ({format_number(p.get('ci_low'))}"
                                               f" to {format_number(p.get('ci_high'))})")
        if qnames:  # a histogram metric: its quantiles over time, after the items
            have = dict(quantile_cells((w or {}).get("quantiles")))
            cells += [have.get(name, "") for name in qnames]
        rows.append({"label": window_label(s, seconds), "n": count((w or {}).get("n", 0)),
                     "open": bool((w or {}).get("open")), "cells": cells, "suspicious": poisoning_view(w) is not None,
                     **release_view(w)})
    return {"chart": chart, "what": what, "level": level, "names": items, "qnames": qnames, "rows": rows,
            "span": span, "length": length_text(seconds), "count": len(slots)}


def _latest_view(sid: str, name: str, w: Mapping[str, Any], seconds: int, now: datetime) -> dict[str, Any]:
    """The latest window's detail: a bar chart with CI whiskers and the table of every shown item."""
    rows = w.get("rows") or []
    label = window_label(w["window"], seconds)
    view: dict[str, Any] = {"label": label, "length": length_text(seconds), "open": bool(w.get("open")),
                            "start": time_view(w.get("start")), "end": time_view(w.get("end")),
                            "n": count(w.get("n", 0)), "error": str(w["error"]) if w.get("error") else None,
                            "rows": [], "chart": None, "notes": [str(n) for n in w.get("notes") or []],
                            "poisoning": poisoning_view(w), "quantiles": quantile_cells(w.get("quantiles")),
                            "level": _level(w), **release_view(w)}
    if view["error"] or not rows:
        return view
    shown = shown_rows(rows)
    level, what = _level(w), _what(w.get("kind"))
    view["more"] = (f"The {len(shown)} largest of {len(rows):,} items are shown; every item is in the JSON."
                    if len(shown) < len(rows) else "")
    desc = (f"Bar chart of the {what} for each item of {name} in the window of {label} with {level} confidence "
            f"intervals as whiskers, from {count(w.get('n', 0))} reports. The table below gives the same numbers.")
    view["chart"] = interval_chart(shown, title=f"{name}: {what} of {label} with {level} confidence intervals",
                                   desc=desc, chart_id=f"{sid}-chart", axis_label=f"{what} ({level} CI)", width=560)
    view["what"], view["level"] = what, level
    view["detected"] = any("detected" in r for r in shown)
    view["rows"] = [{"item": str(r.get("item", "")),
                     "cells": [format_number(r.get(k)) for k in ("estimate", "std_error", "ci_low", "ci_high")],
                     "detected": "yes" if r.get("detected") else "no"} for r in shown]
    return view

