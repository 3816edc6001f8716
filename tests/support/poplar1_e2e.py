"""What the clients' ``poplar1`` end-to-end tests share (issue 89, item 3): yesterday's window, the spec of 16-bit
strings at T = 3 and its holders, both loopback aggregators of its task, and the collector's walk over them (``ldp
collect --heavy-hitters``, no ``--threshold``: the spec's, carried by the task) read back as text."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.loopback_aggregators import LoopbackAggregators, TaskSpec, ldp_command

WINDOW = 86400
NOW = int(time.time())
T0 = NOW - NOW % WINDOW - WINDOW
"""Yesterday's window: ended, so it can be collected, and younger than the leader's report expiry (7 days)."""
THRESHOLD = 3
HOLDERS = {"hi": 4, "é": 3, "no": 2, "z": 1}
"""10 devices: "hi" and "é" (2 bytes of UTF-8) at or above T = 3, "no" and "z" below."""
SPEC = {"spec_version": 1, "name": "words", "budget": {"per_window": 4, "lifetime": 100},
        "metrics": {"new_words": {"protocol": "poplar1", "params": {"bits": 16, "threshold": THRESHOLD,
                                                                    "max_candidates": 16},
                                  "budget": {"per_report": 2.0, "per_window": 2.0}, "trust": "two-aggregator"}}}


def walk_found(deploy: Path, task_file: Path, out: Path) -> tuple[dict[str, int], dict[str, Any]]:
    """``ldp collect --heavy-hitters`` of yesterday's window with the collector's files under ``deploy``: the strings
    found (text, zero padding dropped) with their counts, and the ``--out`` document."""
    root = deploy / "collector"
    ldp_command("collect", "--task", str(task_file), "--key", str(root / "hpke.json"), "--token-file",
                str(root / "leader.token"), "--window", str(T0), "--heavy-hitters", "--out", str(out))
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return {bytes.fromhex(s["bits"]).rstrip(b"\0").decode("utf-8"): s["count"] for s in doc["strings"]}, doc


@contextmanager
def poplar1_aggregators(deploy: Path, spec: dict[str, Any] = SPEC) -> Iterator[tuple[LoopbackAggregators, Path]]:
    """Both loopback aggregators of the spec's ``new_words`` (:data:`SPEC`'s by default: a Poplar1 task of VDAF draft
    18 with its bits, candidates and threshold) under ``deploy``, running: ``(aggregators, the task file devices
    read)``; stopped on the way out."""
    from ldp.spec import CollectionSpec

    deploy.mkdir()
    agg = LoopbackAggregators(deploy, {"new_words": TaskSpec("Poplar1", draft=18)},
                              collection=CollectionSpec.from_dict(spec))
    task = agg.tasks["new_words"]
    assert (task.vdaf, task.vdaf_params) == ("Poplar1", spec["metrics"]["new_words"]["params"])
    agg.start_both()
    try:
        yield agg, deploy / "collector" / "new_words.task.json"
    finally:
        agg.stop()
