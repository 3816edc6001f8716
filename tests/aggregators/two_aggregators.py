"""What the two-aggregator tests share: a task, keys, a leader and a helper in-process over folder stores, and
simulated devices making DAP reports (``ldp.prio.seal_report``). Without the Prio3 binding the tests skip (or fail
under ``LDP_REQUIRE_PRIO=1``, as tests/prio's)."""

from __future__ import annotations

import os
import random
import secrets
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ldp.aggregators.task import Noise, Task

WINDOW = 3600
T0 = 1_800_000_000 - 1_800_000_000 % WINDOW


def prio() -> Any:
    """``ldp.prio`` with its binding (else skipped, or failed under ``LDP_REQUIRE_PRIO=1``)."""
    from ldp import prio as module

    if not module.available() or not hasattr(module, "seal_report"):
        why = "the Prio3 binding (with DAP reports) is not built"
        if os.environ.get("LDP_REQUIRE_PRIO") == "1":
            pytest.fail(f"LDP_REQUIRE_PRIO=1 but {why}", pytrace=False)
        pytest.skip(why)
    return module


@dataclass
class World:
    """A task, the three parties' keys, and the two aggregators."""

    task: Task
    leader: Any
    helper: Any
    collector_key: Any
    leader_key: Any
    helper_key: Any
    verify_key: bytes
    root: Path
    now: int = T0 + 10
    """Both aggregators' clock (uploads happen while it is in the window; collecting moves it past its end)."""
    leader_options: dict[str, Any] | None = None

    def report(self, measurement: Any, time: int = T0 + 5, **kw: Any) -> bytes:
        p = prio()
        return p.seal_report(self.task.prio3(), measurement, task_id=self.task.task_id, time=time,
                             leader=self.leader_key.config, helper=self.helper_key.config, **kw)

    def restart_helper(self, **options: Any) -> Any:
        from ldp.aggregators.helper import Helper

        options.setdefault("clock", lambda: self.now)
        self.helper = Helper([self.task], self.helper_store(), self.helper_key, {self.task.task_id: self.verify_key},
                             **options)
        if self.leader is not None:
            self.leader.helper = self.helper
        return self.helper

    def restart_leader(self, helper: Any = None, **options: Any) -> Any:
        from ldp.aggregators.leader import Leader

        options = {**(self.leader_options or {}), **options}
        options.setdefault("clock", lambda: self.now)
        self.leader = Leader([self.task], self.leader_store(), self.leader_key, {self.task.task_id: self.verify_key},
                             helper or self.helper, **options)
        return self.leader

    def leader_store(self) -> Any:
        from ldp.storage import open_store

        return open_store(self.root / "leader-store")

    def helper_store(self) -> Any:
        from ldp.storage import open_store

        return open_store(self.root / "helper-store")

    def collect(self, window: int = T0) -> Any:
        from ldp.aggregators.collect import open_collection

        self.now = max(self.now, window + WINDOW + 1)  # a window is collected after its end
        return open_collection(self.task, self.collector_key, self.leader.collect(self.task.task_id, window))


def world(root: Path, *, vdaf: str = "Prio3Histogram", params: dict[str, int] | None = None,
          noise: Noise | None = None, min_batch_size: int = 10, local: dict[str, Any] | None = None,
          central: Any = None, job_size: int = 1000, seed: int | None = None, time_precision: int = 1,
          draft: int = 18) -> World:
    p = prio()
    collector, leader_key, helper_key = (p.HpkeKeypair.generate(i) for i in (7, 1, 2))
    task = Task(task_id=secrets.token_bytes(32), app="app", metric="m", vdaf=vdaf,
                vdaf_params=params if params is not None else {"length": 4}, window_seconds=WINDOW,
                min_batch_size=min_batch_size, noise=noise or Noise(), leader_url="http://127.0.0.1:1",
                helper_url="http://127.0.0.1:2", collector_hpke_config=collector.config.to_bytes(), local=local,
                central=central, time_precision=time_precision, vdaf_draft=draft)
    verify_key = secrets.token_bytes(task.prio3().verify_key_size)
    w = World(task, None, None, collector, leader_key, helper_key, verify_key, root)
    source = None if seed is None else random.Random(seed)
    w.restart_helper(noise_source=source)
    w.leader_options = {"job_size": job_size, "report_expiry": 10 ** 8}
    w.restart_leader(noise_source=None if seed is None else random.Random(seed + 1))
    return w


# -- a malicious device: shares of another VDAF, sealed as DAP-09 says (written here from the draft, independently
# of the binding's report builder, which this also checks) --------------------------------------------------------

def _opaque(n: int, data: bytes) -> bytes:
    return len(data).to_bytes(n, "big") + data


def handmade_report(w: Any, public_share: bytes, leader_share: bytes, helper_share: bytes,
                    report_id: bytes | None = None, time: int = T0 + 5) -> bytes:
    """A DAP-09 report of the given VDAF shares, sealed to the world's aggregators."""
    p = prio()
    rid = report_id or secrets.token_bytes(16)
    metadata = rid + struct.pack(">Q", time)
    aad = w.task.task_id + metadata + _opaque(4, public_share)
    sealed = []
    for role, key, share in ((2, w.leader_key, leader_share), (3, w.helper_key, helper_share)):
        info = b"dap-09 input share" + bytes([1, role])
        sealed.append(p.hpke_seal(key.config, info, aad, _opaque(2, b"") + _opaque(4, share)))
    return metadata + _opaque(4, public_share) + sealed[0] + sealed[1]


def forged(w: Any, vdaf: Any, measurement: Any, report_id: bytes | None = None, time: int = T0 + 5) -> bytes:
    """A report whose shares are ``vdaf``'s sharding of ``measurement`` (another VDAF than the task's: a two-hot
    vector, an out-of-range value), with the task's context."""
    rid = report_id or secrets.token_bytes(16)
    _, public, (leader, helper) = vdaf.shard(measurement, nonce=rid)
    return handmade_report(w, public, leader, helper, rid, time)
