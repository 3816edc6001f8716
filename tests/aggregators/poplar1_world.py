"""What the Poplar1 prune and fault tests share: a 2-bit Poplar1 task over the in-process harness
(:func:`two_aggregators.world`), its devices' values, the walk's two levels, and what each aggregator's store holds of
a window's jobs and reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from two_aggregators import T0, WINDOW, world

BITS = 2
VALUES = [0, 1, 1, 2, 3, 3, 3]
"""The devices' strings (2 bits each): 7 reports, two jobs a level at ``job_size`` 4."""
PREFIXES = ([0, 1], [0, 1, 2, 3])
"""The walk's candidates at level 0 and at level 1 (the last: ``bits − 1``), every prefix of each level."""


def poplar1_world(root: Path, *, levels: int | None = None, **options: Any) -> Any:
    """A world whose task is Poplar1 over ``BITS`` bits, ``levels`` levels at most (default ``BITS``)."""
    params = {"bits": BITS, "max_candidates": 4, **({"levels": levels} if levels else {})}
    options = {"min_batch_size": 1, "job_size": 4, **options}
    return world(root, vdaf="Poplar1", params=params, **options)


def bodies(w: Any, values: list[int] = VALUES, time: int = T0 + 5) -> list[bytes]:
    """Each value's report, sealed to ``w``'s aggregators."""
    from ldp.prio.poplar1 import bits_of

    return [bytes(w.report(bits_of(v, BITS), time=time)) for v in values]


def param(level: int) -> bytes:
    """The walk's parameter at ``level`` (:data:`PREFIXES`), encoded."""
    from ldp.prio.poplar1 import agg_param

    return bytes(agg_param(level, PREFIXES[level]).to_bytes())


def collect(w: Any, level: int, window: int = T0) -> dict[str, Any]:
    """The leader's answer for ``level`` of ``window`` (the clock past the window's end)."""
    w.now = max(w.now, window + WINDOW + 1)
    return dict(w.leader.collect(w.task.task_id, window, param(level)))


def counts(w: Any, level: int, doc: dict[str, Any]) -> list[int]:
    """The collector's counts of ``level``'s prefixes from an answer."""
    from ldp.aggregators.heavy_hitters import open_level
    from ldp.aggregators.poplar1_records import decode_param

    return list(open_level(w.task, w.collector_key, decode_param(param(level)), doc))


def expected(level: int, values: list[int] = VALUES) -> list[int]:
    """The true counts of ``level``'s prefixes."""
    return [sum(v >> (BITS - 1 - level) == p for v in values) for p in PREFIXES[level]]


def held(side: Any, w: Any) -> dict[str, list[str]]:
    """What ``side`` (an aggregator) holds of its Poplar1 task: keys by kind (``chunk``, ``plan``, ``init``, ``job``,
    ``level``, ``release``)."""
    levels = side.task_state(w.task.task_id).poplar1
    out: dict[str, list[str]] = {k: [] for k in ("chunk", "plan", "init", "job", "level", "release")}
    out["chunk"] = side.store.list(f"{levels.records.prefix}reports/")
    for key in side.store.list(levels.prefix):
        name = key.rsplit("/", 1)[1]
        folder = key[len(levels.prefix):].split("/", 1)[0]
        kind = {"levels": "level", "releases": "release"}.get(folder)
        if folder == "jobs":
            kind = "plan" if name.endswith(".plan.json") else "init" if name.endswith(".init.json") else "job"
        if kind is not None:
            out[kind].append(key)
    return out
