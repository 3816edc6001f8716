"""An aggregator's status as a page (``GET /`` with the peer's or the collector's token; issue 71, items 3–4): per
task, each window's valid reports, its refusals by code (on this side: the same codes on both), whether it was
released, and each release's central (ε, δ) with the task's over every release so far. The numbers are
:meth:`~ldp.aggregators.helper.Aggregator.status`'s (``GET /status`` gives them as JSON); every text is escaped."""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

__all__ = ["render"]


def _when(window: int | str) -> str:
    return dt.datetime.fromtimestamp(int(window), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _eps(cost: dict[str, float] | None) -> str:
    if not cost:
        return "none (no noise: exact sums)"
    return f"ε = {cost['epsilon']:.4g}" + (f", δ = {cost['delta']:.3g}" if cost.get("delta") else "")


def _codes(counts: dict[str, int]) -> str:
    return ", ".join(f"{escape(k)} {v:,}" for k, v in sorted(counts.items())) or "none"


def render(status: dict[str, Any]) -> str:
    """The page of ``status``."""
    role = escape(str(status.get("role", "")))
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ldp {role}</title>",
             "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}th{text-align:left}</style>",
             f"</head><body><h1>ldp two-aggregator mode: the {role}</h1>"]
    for task in status.get("tasks", []):
        parts.append(f"<h2>{escape(str(task.get('app')))}/{escape(str(task.get('metric')))}</h2>"
                     f"<p>task {escape(str(task.get('task_id')))}; refused in preparation: "
                     f"{_codes(task.get('refused', {}))}")
        if "refused_at_upload" in task:
            parts.append(f"; refused at upload: {_codes(task['refused_at_upload'])}; "
                         f"stored, not yet in a job: {int(task.get('pending', 0)):,}")
        parts.append("</p><table><tr><th>window</th><th>valid reports</th><th>refused</th><th>released</th></tr>")
        for window, w in task.get("windows", {}).items():
            parts.append(f"<tr><th>{_when(window)}</th><td>{int(w['valid']):,}</td><td>{_codes(w['refused'])}</td>"
                         f"<td>{'yes' if w['collected'] else 'no'}</td></tr>")
        parts.append("</table>")
        if "releases" in task:
            parts.append("<h3>Releases (central guarantee against the collector, one aggregator honest)</h3><ul>")
            for r in task["releases"]:
                parts.append(f"<li>{_when(r['window'])}: {int(r['count']):,} reports, {_eps(r['epsilon'])}</li>")
            parts.append(f"</ul><p>over every release: {_eps(task.get('cumulative_epsilon'))}</p>")
    parts.append("</body></html>")
    return "".join(parts)
