"""The collector's heavy-hitter walk over a Poplar1 task (``ldp collect --heavy-hitters``; issue 89, item 2).

:func:`collect_heavy_hitters` runs :func:`ldp.prio.heavy_hitters.walk` with a ``counts_at(level, prefixes)`` that
asks the leader for one level of the window with the aggregation parameter of that level and those prefixes
(:func:`ldp.prio.poplar1.agg_param`), opens both sealed shares (:func:`open_level`: HPKE with the collector's key,
the batch and the parameter as associated data) and reads each prefix's noised count,

    count = signed(leader + helper mod p) = true count + Z_leader + Z_helper

(:func:`ldp.prio.poplar1.signed_counts`). The walk keeps the prefixes whose noised count is at least the threshold
``T`` (default: the task's ``threshold``, else :func:`~ldp.prio.heavy_hitters.recommended_threshold` of its noise).
The walk's (ε, δ) is the composition of the levels released (the leader's ``walk_epsilon``), at most the task's
noise (its calibration splits it over the task's ``levels``, :func:`ldp.prio.heavy_hitters.calibrate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ldp.aggregators.codec import Interval
from ldp.aggregators.collection_messages import aggregate_share_aad
from ldp.aggregators.prepare import aggregate_share_info
from ldp.aggregators.task import Task
from ldp.errors import AggregatorError, PrioError

__all__ = ["open_level", "collect_heavy_hitters", "default_threshold", "dap_level", "collector_walk_cost"]

Ask = Callable[[int, bytes], dict[str, Any]]
"""``ask(window, agg_param)``: the leader's answer for one level (:meth:`ldp.aggregators.leader.Leader.collect`)."""


def open_level(task: Task, keypair: Any, param: Any, doc: dict[str, Any]) -> list[int]:
    """Each candidate's noised count from the leader's answer ``doc`` for ``param`` (module docstring)."""
    from ldp import prio
    from ldp.prio.poplar1 import signed_counts

    vdaf = task.prio3()
    aad = aggregate_share_aad(task.task_id, Interval(int(doc["window"]), task.window_seconds), param.to_bytes())
    shares = []
    for role in ("leader", "helper"):
        try:
            payload = prio.hpke_open(keypair, aggregate_share_info(role), aad, bytes.fromhex(doc[f"{role}_share"]))
            shares.append(vdaf.aggregate_share_from_bytes(param, bytes(payload)))
        except (PrioError, ValueError, KeyError) as exc:
            raise AggregatorError(f"the {role}'s share of level {param.level} does not open for this batch and "
                                  f"parameter: {exc}", "hpke_decrypt_error", 502) from None
    return signed_counts(shares)


def dap_level(task: Task, collection: bytes) -> dict[str, Any]:
    """What :func:`open_level` reads, from one level's DAP-09 ``Collection`` (a collection job with the level's
    aggregation parameter: :meth:`ldp.aggregators.http.LeaderClient.collect`): the window, the report count and
    both sealed shares. A leader of another implementation states no figures: :func:`collector_walk_cost` computes
    the walk's from the task."""
    from ldp.aggregators.collect import shares_document

    return shares_document(task, collection)


def collector_walk_cost(task: Task, levels: int) -> dict[str, Any] | None:
    """The walk's (ε, δ) after ``levels`` levels released, from the task alone (its noise, calibrated over its
    :attr:`~ldp.aggregators.task.Task.levels`, each level released once with that level's noise): the leader's
    ``walk_epsilon`` (:func:`ldp.aggregators.poplar1_leader.walk_cost`) recomputed by the collector; ``None``
    without noise or levels."""
    from ldp.aggregators.poplar1_leader import walk_cost

    walk = task.walk_calibration()
    if walk is None or levels == 0:
        return None
    cost = walk_cost(task, [{"noise": walk.level_record()}] * levels)
    return None if cost is None else cost.to_dict()


def default_threshold(task: Task, max_candidates: int) -> int:
    """The task's ``threshold``, else the recommended one for its noise (1 without noise)."""
    from ldp.prio.heavy_hitters import recommended_threshold

    if "threshold" in task.vdaf_params:
        return int(task.vdaf_params["threshold"])
    walk = task.walk_calibration()
    return 1 if walk is None else recommended_threshold(walk, max_candidates)


def collect_heavy_hitters(task: Task, keypair: Any, ask: Ask, window: int, *, threshold: float | None = None,
                          max_candidates: int | None = None, levels: list[int] | None = None) -> dict[str, Any]:
    """The walk over ``window`` (module docstring): a JSON-ready dict with the strings found (hex of their bits,
    first bit first, and as text when they are UTF-8), each one's noised count, every level's trace and the walk's
    (ε, δ). ``max_candidates`` at most the task's (its default)."""
    from ldp.prio.heavy_hitters import walk
    from ldp.prio.poplar1 import agg_param, bits_to_bytes, prefix_of

    if not task.is_poplar1:
        raise ValueError(f"task {task.id_text} is a {task.vdaf} task: heavy hitters need a Poplar1 task")
    bits, most = task.vdaf_params["bits"], task.vdaf_params["max_candidates"]
    cap = most if max_candidates is None else max_candidates
    if not 2 <= cap <= most:
        raise ValueError(f"--max-candidates must be in [2, {most}] (the task's bound), got {cap}")
    t = default_threshold(task, cap) if threshold is None else threshold
    answers: list[dict[str, Any]] = []

    def counts_at(level: int, prefixes: list[int]) -> list[int]:
        param = agg_param(level, prefixes)
        doc = ask(window, param.to_bytes())
        answers.append(doc)
        return open_level(task, keypair, param, doc)

    result = walk(counts_at, bits, t, cap, levels=levels)
    found = []
    for value, count in result.strings.items():
        raw = bits_to_bytes(prefix_of(value, result.level))
        try:
            text: str | None = raw.rstrip(b"\x00").decode("utf-8")
        except UnicodeDecodeError:
            text = None
        found.append({"bits": raw.hex(), "text": text, "count": count})
    last = answers[-1] if answers else {}
    if answers and "walk_epsilon" not in last:  # a DAP-09 Collection: the figures from the task (dap_level)
        last = {**last, "levels_released": len(answers), "walk_epsilon": collector_walk_cost(task, len(answers))}
    return {"task_id": task.id_text, "window": window, "threshold": t, "max_candidates": cap, "bits": bits,
            "strings": found, "capped": result.capped,
            "trace": [{"level": tr.level, "candidates": tr.candidates, "passed": tr.passed, "kept": tr.kept}
                      for tr in result.trace],
            "levels_released": last.get("levels_released", 0), "walk_epsilon": last.get("walk_epsilon"),
            "noise": task.noise.to_dict(), "report_count": last.get("report_count")}
