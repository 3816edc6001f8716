"""An aggregator's status as a page (``GET /`` with the peer's or the collector's token; issue 71, items 3–4): per
task, each window's valid reports, its refusals by code (on this side: the same codes on both), whether it was
released, and each release's central (ε, δ) with the task's over every release so far; the windows the two sides
disagree on and the leader's jobs set aside (issue 84, items 2 and 4); and what the task promises,
before its first release too: its noise, each release's (ε, δ) per report and per device (a device's
``reports_per_window`` reports of a window all in the release: :func:`ldp.aggregators.release.device_cost`), and its
minimum batch size; for a Poplar1 task, each window's levels (issue 89): the level, its valid reports and refusals,
whether it was released. The numbers are
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


def _per_device(task: dict[str, Any], cost: dict[str, float] | None) -> str:
    """``; per device …`` when a device may send k > 1 reports a window (else its figure is the report's)."""
    k = task.get("reports_per_window")
    if not k or k == 1 or not cost:
        return ""
    return f"; per device (up to {k} reports a window) {_eps(cost)}"


def _terms(task: dict[str, Any]) -> str | None:
    """The task's noise, each release's guarantee and its minimum batch size (``None``: the status has none)."""
    noise = task.get("noise")
    if not isinstance(noise, dict):
        return None
    k = task.get("reports_per_window")
    per_device = _per_device(task, task.get("device_epsilon"))
    release = _eps(task.get("release_epsilon"))
    what = ("none: the collector sees the exact sums (no central guarantee)" if noise.get("mechanism") == "none"
            else f"{noise.get('mechanism')} on each aggregator's share; each release {release} per report{per_device}")
    cap = ("" if per_device else "; one report a device a window assumed (the spec caps none)" if not k
           else f"; up to {k} report(s) a device a window (the spec's cap)")
    return f"noise: {what}; minimum batch {int(task.get('min_batch_size', 0)):,} valid reports{cap}"


def _cumulative(task: dict[str, Any]) -> str:
    if not any(w.get("collected") for w in task.get("windows", {}).values()) and not task.get("releases"):
        return "no release yet"
    text = _eps(task.get("cumulative_epsilon"))
    return text + _per_device(task, task.get("cumulative_device_epsilon"))


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
        "terms": _terms(task),
        "releases": ([f"{_when(r['window'])}: {int(r['count']):,} reports, {_eps(r['epsilon'])}"
                      f"{_per_device(task, r.get('device_epsilon'))}"
                      for r in task["releases"]] if "releases" in task else None),
        "cumulative": _cumulative(task),
        "disagreements": [f"{_when(d['window'])}: this side counted {int(d['count']):,} reports; the other: "
                          f"{d.get('peer', '')}" for d in task.get("disagreements", [])],
        "set_aside": [f"job {a.get('job')} of {_when(a['window'])}: {a.get('reason')}"
                      for a in task.get("set_aside", []) if a.get("window") is not None],
        "levels": ([{"when": _when(lv["window"]), "level": int(lv["level"]), "valid": f"{int(lv['valid']):,}",
                     "refused": _codes(lv.get("refused", {})), "released": "yes" if lv.get("released") else "no"}
                    for lv in task["levels"]] if "levels" in task else None)}


def view(status: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of ``status``: the role, and each task's texts."""
    return {"role": str(status.get("role", "")), "tasks": [_task_view(t) for t in status.get("tasks", [])]}


def render(status: dict[str, Any]) -> str:
    """The page of ``status``."""
    return render_template("ldp.aggregators", "status.html", **view(status))
