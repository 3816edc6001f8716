"""An aggregator's status as a page (``GET /`` with the peer's or the collector's token; issue 71, items 3–4): per
task, each window's valid reports, its refusals by code (on this side: the same codes on both), whether it was
released, and each release's central (ε, δ) with the task's over every release so far. The numbers are
:meth:`~ldp.aggregators.helper.Aggregator.status`'s (``GET /status`` gives them as JSON); the page is the template
``templates/status.html`` in the services' page shell (:mod:`ldp.web.pages`: Jinja2, autoescape on, so every text
is escaped)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ldp.web.pages import render as render_template

__all__ = ["render", "view"]


def _when(window: int | str) -> str:
    return dt.datetime.fromtimestamp(int(window), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _eps(cost: dict[str, float] | None) -> str:
    if not cost:
        return "none (no noise: exact sums)"
    return f"ε = {cost['epsilon']:.4g}" + (f", δ = {cost['delta']:.3g}" if cost.get("delta") else "")


def _codes(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items())) or "none"


def _task_view(task: dict[str, Any]) -> dict[str, Any]:
    """One task's texts, as the page shows them."""
    upload = "refused_at_upload" in task
    return {
        "name": f"{task.get('app')}/{task.get('metric')}", "task_id": str(task.get("task_id")),
        "refused": _codes(task.get("refused", {})),
        "at_upload": _codes(task["refused_at_upload"]) if upload else None,
        "pending": f"{int(task.get('pending', 0)):,}",
        "windows": [{"when": _when(window), "valid": f"{int(w['valid']):,}", "refused": _codes(w["refused"]),
                     "released": "yes" if w["collected"] else "no"} for window, w in task.get("windows", {}).items()],
        "releases": ([f"{_when(r['window'])}: {int(r['count']):,} reports, {_eps(r['epsilon'])}"
                      for r in task["releases"]] if "releases" in task else None),
        "cumulative": _eps(task.get("cumulative_epsilon"))}


def view(status: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of ``status``: the role, and each task's texts."""
    return {"role": str(status.get("role", "")), "tasks": [_task_view(t) for t in status.get("tasks", [])]}


def render(status: dict[str, Any]) -> str:
    """The page of ``status``."""
    return render_template("ldp.aggregators", "status.html", **view(status))
