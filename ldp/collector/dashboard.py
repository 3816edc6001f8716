"""The dashboard: one server-rendered HTML page of every app's estimates, and the same data as JSON.

It reads ``DATA/apps/<app>/estimates.json`` (written by :func:`ldp.collector.watch.fold_app`) and
``DATA/ingest.json`` (the collector's counters); no JavaScript. Every string from a spec or a report
(candidate and discovered items are chosen by clients) is HTML-escaped. The rendering functions need
nothing but the standard library; :func:`dashboard_routes` imports Starlette.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ldp.collector.charts import format_number, interval_chart
from ldp.collector.watch import load_estimates

if TYPE_CHECKING:
    from starlette.routing import Route

__all__ = ["CHART_ROWS", "dashboard_routes", "load_ingest", "load_state", "render_dashboard", "render_page",
           "shown_rows"]

CHART_ROWS = 30
"""Items shown per metric (chart and table): all of them up to this many, else the largest estimates."""
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

STYLE = """
:root{color-scheme:light;--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#f6f8fa;--accent:#2f5f98}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--ink);background:#fff}
header,main{max-width:72rem;margin:0 auto;padding:0 1rem}
header{border-bottom:1px solid var(--line);padding-bottom:.5rem}
h1{font-size:1.6rem;margin:1rem 0 .25rem}
h2{font-size:1.35rem;margin:2rem 0 .5rem;border-bottom:2px solid var(--accent)}
h3{font-size:1.1rem;margin:1.5rem 0 .25rem}
.muted{color:var(--muted)}
.metric{border:1px solid var(--line);border-radius:6px;padding:0 1rem 1rem;margin:1rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0}
dt{font-weight:600}dd{margin:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:right}
th[scope=row]{text-align:left;min-width:5rem;max-width:24rem;overflow-wrap:anywhere}
thead th:first-child{text-align:left}
thead th{background:var(--bg)}
figure{margin:.5rem 0}
figure svg{min-width:26rem}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}
a{color:var(--accent)}
.warn{border-left:4px solid #9a6700;padding-left:.5rem}
@media (max-width:40rem){dl{grid-template-columns:1fr}dd{margin-bottom:.25rem}body{font-size:15px}
.metric{padding:0 .5rem .5rem}header,main{padding:0 .5rem}}
"""


def load_ingest(data_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``DATA/ingest.json`` (``None`` when missing or being replaced)."""
    try:
        doc = json.loads((Path(data_dir) / "ingest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def load_state(data_dir: str | os.PathLike[str], apps: Iterable[str]
               ) -> tuple[dict[str, dict[str, Any] | None], dict[str, Any] | None]:
    """Every app's estimates (``None`` before its first fold) and the ingest counters."""
    return {app: load_estimates(data_dir, app) for app in apps}, load_ingest(data_dir)


def render_dashboard(data_dir: str | os.PathLike[str], apps: Iterable[str], refresh_seconds: int = 30) -> str:
    """The page for the data directory as it is now."""
    estimates, ingest = load_state(data_dir, apps)
    return render_page(estimates, ingest, refresh_seconds=refresh_seconds)


def render_page(estimates: Mapping[str, Mapping[str, Any] | None], ingest: Mapping[str, Any] | None = None, *,
                refresh_seconds: int = 30, now: datetime | None = None) -> str:
    """The whole HTML page: a section per app, in it a section per metric (chart and table)."""
    if isinstance(refresh_seconds, bool) or not isinstance(refresh_seconds, int) or refresh_seconds < 1:
        raise ValueError(f"refresh_seconds must be an int >= 1, got {refresh_seconds!r}")
    now = now or datetime.now(UTC)
    ingest_apps = ingest.get("apps") if isinstance(ingest, Mapping) else None
    nav = "".join(f'<li><a href="#app{i}">{escape(app)}</a></li>' for i, app in enumerate(estimates))
    body = [_app_section(i, app, doc, ingest_apps.get(app) if isinstance(ingest_apps, Mapping) else None, now)
            for i, (app, doc) in enumerate(estimates.items())]
    if not estimates:
        body.append("<p>No app is configured.</p>")
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no icon: the browser would otherwise ask for /favicon.ico
        f'<meta http-equiv="refresh" content="{refresh_seconds}">', "<title>LDP estimates</title>",
        f"<style>{STYLE}</style>", "</head>", "<body>",
        "<header>", "<h1>LDP estimates</h1>",
        f'<p class="muted">Page made at {_time(now)}; it reloads every {refresh_seconds} s. Estimates are '
        "differentially private counts (or means) with confidence intervals; the data as JSON: "
        '<a href="v1/estimates">v1/estimates</a>.</p>',
        f'<nav aria-label="Apps"><ul>{nav}</ul></nav>' if len(estimates) > 1 else "", "</header>",
        "<main>", *body, "</main>", "</body>", "</html>", ""])


def _time(t: datetime) -> str:
    iso = t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'<time datetime="{iso}">{iso.replace("T", " ").replace("Z", " UTC")}</time>'


def _parse_time(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def _ago(t: datetime, now: datetime) -> str:
    s = max(0, int((now - t).total_seconds()))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago" if s < 7200 else f"{s // 3600} h ago"


def _count(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else escape(str(n))


def _app_section(i: int, app: str, doc: Mapping[str, Any] | None, ingest: Any, now: datetime) -> str:
    head = f'<section id="app{i}" aria-labelledby="app{i}-h"><h2 id="app{i}-h">App {escape(app)}</h2>'
    parts = [head]
    if doc is None:
        parts.append("<p>Not folded yet: no estimates so far (the first fold writes them).</p>")
    else:
        folded, checked = _parse_time(doc.get("folded_at")), _parse_time(doc.get("checked_at"))
        when = f"{_time(folded)} ({_ago(folded, now)})" if folded else "unknown"
        seen = f"; segments last checked at {_time(checked)}" if checked else ""
        parts.append(f"<p>Last folded at {when}{seen}.</p>")
        for spec in doc.get("specs", []):
            if spec.get("description"):
                parts.append(f"<p>{escape(str(spec['name']))}: {escape(str(spec['description']))}</p>")
        parts.append(_dl([("Segments folded", _count(doc.get("segments", 0))),
                          ("Reports read", _count(doc.get("records", 0))),
                          ("Reports aggregated", _count(doc.get("accepted", 0))),
                          ("Reports rejected", _count(sum((doc.get("rejected") or {}).values())))]))
        parts.append(_reasons_table(doc.get("rejected") or {}, f"Rejected reports of {app} by reason"))
        parts += [f'<p class="warn">{escape(str(w))}</p>' for w in doc.get("warnings", [])]
    if isinstance(ingest, Mapping):
        parts.append(_ingest_table(app, ingest))
    for j, m in enumerate(doc.get("metrics", []) if doc else []):
        parts.append(_metric_section(f"app{i}-m{j}", m))
    parts.append("</section>")
    return "\n".join(parts)


def _dl(pairs: Sequence[tuple[str, str]]) -> str:
    """A definition list; the values are HTML already."""
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def _reasons_table(reasons: Mapping[str, Any], caption: str) -> str:
    if not reasons:
        return ""
    rows = "".join(f'<tr><th scope="row">{escape(str(k))}</th><td>{_count(v)}</td></tr>'
                   for k, v in sorted(reasons.items(), key=lambda kv: str(kv[0])))
    return _table(caption, ["Reason", "Reports"], rows)


def _table(caption: str, head: Sequence[str], body: str) -> str:
    """A captioned table in a scrollable (and focusable, for the keyboard) box; ``body`` is HTML already."""
    cols = "".join(f'<th scope="col">{escape(h)}</th>' for h in head)
    return (f'<div class="scroll" tabindex="0"><table><caption>{escape(caption)}</caption><thead><tr>{cols}</tr>'
            f"</thead><tbody>{body}</tbody></table></div>")


def _ingest_table(app: str, counters: Mapping[str, Any]) -> str:
    """The collector's counters for the app (whatever ``ingest.json`` holds: numbers, one level nested)."""
    rows = []
    for k, v in counters.items():
        if isinstance(v, Mapping):
            rows += [(f"{k}: {k2}", v2) for k2, v2 in v.items() if not isinstance(v2, (Mapping, list))]
        elif not isinstance(v, list):
            rows.append((str(k), v))
    if not rows:
        return ""
    body = "".join(f'<tr><th scope="row">{escape(k)}</th><td>{_counter(k, v)}</td></tr>' for k, v in rows)
    return _table(f"Uploads received for {app} (collector counters)", ["Counter", "Value"], body)


def _counter(name: str, value: Any) -> str:
    """A counter's cell: times (``*_at``, Unix seconds) as dates, everything else as a count."""
    if name.endswith("_at") and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return _time(datetime.fromtimestamp(value, UTC))
        except (OverflowError, OSError, ValueError):
            pass
    return _count(value)


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
        return escape(str(c["text"])) if isinstance(c, Mapping) and "text" in c else "no cap"

    metric, total = p.get("metric") or {}, p.get("collection") or {}
    cap = f" (cap {text(p.get('per_report_cap'))})" if p.get("per_report_cap") else ""
    return [("Privacy cost per report", text(p.get("per_report")) + cap),
            (f"Per device per window ({_count(p.get('window_seconds'))} s)",
             f"this metric: {text(metric.get('per_window'))}; all metrics: {text(total.get('per_window'))}"),
            ("Per device, lifetime", f"this metric: {text(metric.get('lifetime'))}; all metrics: "
                                     f"{text(total.get('lifetime'))}")]


def _metric_section(sid: str, m: Mapping[str, Any]) -> str:
    name = str(m.get("metric", ""))
    parts = [f'<section class="metric" id="{sid}" aria-labelledby="{sid}-h"><h3 id="{sid}-h">{escape(name)}</h3>']
    if m.get("description"):
        parts.append(f"<p>{escape(str(m['description']))}</p>")
    detected = m.get("detected")
    pairs = [("Protocol", escape(str(m.get("protocol", "")))), ("Reports", _count(m.get("n", 0)))]
    if isinstance(detected, list):
        pairs.append(("Detected items", f"{len(detected):,}"))
    parts.append(_dl(pairs + _privacy(m.get("privacy"))))
    parts.append(_reasons_table(m.get("rejected") or {}, f"Rejected reports of {name} by reason"))
    rows = m.get("rows") or []
    if m.get("error"):
        parts.append(f'<p class="warn">Not decoded: {escape(str(m["error"]))}</p>')
    elif not m.get("n"):
        parts.append("<p>No reports yet.</p>")
    elif not rows:
        parts.append("<p>Nothing to show: no item was found in the reports so far.</p>")
    else:
        parts.append(_estimates_view(sid, name, m, rows))
    parts.append("</section>")
    return "\n".join(parts)


def _estimates_view(sid: str, name: str, m: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    shown = shown_rows(rows)
    conf = m.get("confidence")
    level = f"{conf:.0%}" if isinstance(conf, float) else "95%"
    what = "estimated mean" if m.get("kind") == "mean" else "estimated number of clients"
    more = (f" The {len(shown)} largest of {len(rows):,} items are shown; every item is in the JSON."
            if len(shown) < len(rows) else "")
    desc = (f"Bar chart of the {what} for each item of {name} with {level} confidence intervals as whiskers, "
            f"from {_count(m.get('n', 0))} reports. The table below gives the same numbers.")
    chart = interval_chart(shown, title=f"{name}: {what} with {level} confidence intervals", desc=desc,
                           chart_id=f"{sid}-chart", axis_label=f"{what} ({level} confidence interval)", width=560)
    has_detected = any("detected" in r for r in shown)
    head = ["Item", "Estimate", "Standard error", f"{level} CI low", f"{level} CI high"] + \
        (["Detected"] if has_detected else [])
    body = []
    for r in shown:
        cells = "".join(f"<td>{escape(format_number(r.get(k)))}</td>" for k in ("estimate", "std_error", "ci_low",
                                                                              "ci_high"))
        if has_detected:
            cells += f"<td>{'yes' if r.get('detected') else 'no'}</td>"
        body.append(f'<tr><th scope="row">{escape(str(r.get("item", "")))}</th>{cells}</tr>')
    notes = "".join(f'<p class="muted">Note: {escape(str(n))}</p>' for n in m.get("notes") or [])
    figure = (f'<figure><div class="scroll" tabindex="0">{chart}</div><figcaption class="muted">'
              f"{escape(what.capitalize())} with {level} confidence intervals.{escape(more)}</figcaption></figure>")
    return figure + _table(f"Estimates of {name}", head, "".join(body)) + notes


def dashboard_routes(data_dir: str | os.PathLike[str], apps: Iterable[str], refresh_seconds: int = 30
                     ) -> list[Route]:
    """Starlette routes: ``GET /`` the page, ``GET /v1/estimates`` every app's ``estimates.json`` (and the
    ingest counters) as one JSON document. ``apps``: the app names (a mapping's keys will do)."""
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    names = list(apps)
    render_page({}, None, refresh_seconds=refresh_seconds)  # refuses a bad refresh period now, not per request

    def page(request: Request) -> HTMLResponse:  # sync: Starlette runs it in its thread pool (file reads)
        return HTMLResponse(render_dashboard(data_dir, names, refresh_seconds), headers=SECURITY_HEADERS)

    def estimates(request: Request) -> JSONResponse:
        docs, ingest = load_state(data_dir, names)
        return JSONResponse({"apps": docs, "ingest": ingest}, headers=SECURITY_HEADERS)

    return [Route("/", page, methods=["GET"]), Route("/v1/estimates", estimates, methods=["GET"])]
