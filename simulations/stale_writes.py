"""Every stale write of a shuffler run is harmless (issue 70, item 1). Prints one JSON line.

For each kind of store write a run makes — its run record (created, then ``done``, then ``closed``), a segment or a
Dask part, a seen record, a chunk delete, and with the Dask engine its staging record and window markers — a run
is paused *after* its lease check and *before* that write (a process stopped there, or a PUT still in the client's
retries when the lease expires); a second run takes the lease over and finishes; the first wakes and its write
lands. Then the shuffler runs twice more. The case passes when every report is in the segments exactly once, the
later runs succeed and leave nothing behind (no chunk, no staging, every record ``closed`` or ``void``), and the
stale run failed with :class:`~ldp.errors.LeaseLostError` naming the lease.

The pause is a thread waiting inside the store, beneath the lease check (:class:`Paused`); the stale run's
monotonic clock is moved past its lease (a stopped process's clock goes on), and the taker's wall clock past the
stale lease's expiry, so no case waits for a real lease to run out.

    python simulations/stale_writes.py                     # a folder, the local engine
    python simulations/stale_writes.py --dask              # and the Dask engine's kinds

``tests/shuffler/test_stale_writes.py`` runs these cases on a folder and on S3 (moto), ``simulations/scale_out.py``
on its S3 server (``stale_writes_harmless`` in its line).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ldp.errors import LeaseLostError
from ldp.shuffler import ChunkBatch, chunk_key, encode_chunk, shuffle_app
from ldp.storage import Store, open_store
from ldp.storage.lease import Lease

APP = "demo"
DAY = 86400
W0 = 20000 * DAY
NOW = W0 + 2 * DAY + 400
RUNS, SEGMENTS = "/shuffler/runs/", "/segments/closed/"
Kind = Callable[[str, str, bytes], bool]
"""Whether a write (``put``, ``create``, ``delete``; its key and bytes) is of the kind paused before."""


def _record_state(state: str) -> Kind:
    return lambda op, key, data: op == "put" and RUNS in key and json.loads(data)["state"] == state


KINDS: dict[str, Kind] = {
    "run record created": lambda op, key, data: op == "create" and RUNS in key,
    "run record done": _record_state("done"),
    "run record closed": _record_state("closed"),
    "segment created": lambda op, key, data: op == "create" and SEGMENTS in key,
    "seen record": lambda op, key, data: op == "put" and "/shuffler/seen/" in key,
    "chunk deleted": lambda op, key, data: op == "delete" and "/incoming/" in key,
}
"""The writes of a run of the local engine."""
DASK_KINDS: dict[str, Kind] = {
    **KINDS,
    "staging record": lambda op, key, data: op == "put" and "/shuffler/staging/" in key and key.endswith("/run.json"),
    "window marker": lambda op, key, data: op == "put" and "/shuffler/staging/" in key and "/windows/" in key,
}
"""The writes of a run of the Dask engine (its workers' staged parts are under the run's own staging prefix,
written without the lease: a stale one is removed with the run's staging)."""


class Clock:
    """A clock the case moves by hand."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Paused:
    """``inner`` whose first write of ``kind`` waits until :attr:`wake` is set, then lands; :attr:`paused` is set
    when it starts waiting. Beneath the run's lease check: the check passed, the write is late."""

    def __init__(self, inner: Store, kind: Kind) -> None:
        self.inner, self.kind, self.url = inner, kind, inner.url
        self.paused, self.wake, self.hit = threading.Event(), threading.Event(), False
        self.lock = threading.Lock()

    def _gate(self, op: str, key: str, data: bytes = b"") -> None:
        with self.lock:
            first = not self.hit and self.kind(op, key, data)
            self.hit = self.hit or first
        if first:
            self.paused.set()
            if not self.wake.wait(600):
                raise TimeoutError("the paused write was never woken")

    def put(self, key: str, data: bytes) -> None:
        self._gate("put", key, data)
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._gate("create", key, data)
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        self._gate("delete", key)
        self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _line(metric: str, i: int) -> bytes:
    return json.dumps({"spec": "89362f781a3097d3", "metric": metric, "window": 20000, "report": {
        "v": 1, "protocol": "grr", "params": "a0f04db3fd8aa4ec", "payload": {"index": i}}},
        separators=(",", ":")).encode() + b"\n"


def _batch(bid: str, n: int, window: int = W0) -> ChunkBatch:
    return ChunkBatch(bid, window, DAY, b"".join(_line("m", hash((bid, i)) % 10**6) for i in range(n)))


def scenario(store: Store) -> Counter[bytes]:
    """Two replicas' chunks over two windows, a batch stored by both; the lines a clean run publishes."""
    put = [("r1", 1, W0 + 60, [_batch("a", 3), _batch("b", 2)]), ("r2", 1, W0 + 60, [_batch("b", 2), _batch("c", 4)]),
           ("r2", 2, W0 + DAY + 1, [_batch("d", 1, W0 + DAY)])]
    for replica, seq, at, batches in put:
        store.put(chunk_key(APP, replica, at, seq), encode_chunk(batches))
    return Counter(b"".join(_batch(b, n).lines for b, n in (("a", 3), ("b", 2), ("c", 4), ("d", 1))).splitlines())


def _lease(store: Store, **clocks: Any) -> Lease:
    return Lease(store, f"apps/{APP}/shuffler/lease/", f"shuffler of {APP}", ttl=30, **clocks)


def stale_write_case(store: Store, kind: Kind, **run: Any) -> dict[str, Any]:
    """:func:`scenario` in ``store`` (empty), one run paused before its first write of ``kind`` while another takes
    over and finishes, then two more runs (``run``: :func:`~ldp.shuffler.shuffle_app`'s engine options); what
    happened: the stale run's ``error``, the ``later`` runs, the runs' ``records``, the segments' lines ``got``
    and those ``expected``, and :func:`failures` of it."""
    expected = scenario(store)
    mono = Clock(1000.0)
    paused = Paused(store, kind)
    stale: dict[str, Any] = {}

    def first() -> None:
        try:
            stale["run"] = shuffle_app(paused, APP, now=NOW, lease=_lease(store, monotonic=mono),  # type: ignore[arg-type]
                                       min_reports=1, **run)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            stale["error"] = exc

    thread = threading.Thread(target=first, name="stale-run")
    thread.start()
    if not paused.paused.wait(600):
        raise RuntimeError(f"the first run made no such write (it ended: {stale})")
    mono.t += 1000  # its process stopped far past the lease (a stopped process's clock goes on)
    taker = _lease(store, clock=lambda: time.time() + 1000)  # the stopped holder's lease expired meanwhile
    taken = shuffle_app(store, APP, now=NOW + 60, lease=taker, min_reports=1, **run)
    paused.wake.set()  # the late write lands now
    thread.join(600)
    later = [shuffle_app(store, APP, now=NOW + 120 + 60 * i, min_reports=1, **run) for i in range(2)]
    case = {"error": stale.get("error"), "taken": taken, "later": later, "expected": expected,
            "got": Counter(ln for k in store.list(f"apps/{APP}/segments/closed/") for ln in store.get(k).splitlines()),
            "records": [json.loads(store.get(k)) for k in store.list(f"apps/{APP}/shuffler/runs/")],
            "left": store.list(f"apps/{APP}/incoming/") + store.list(f"apps/{APP}/shuffler/staging/")}
    case["failures"] = failures(case)
    return case


def failures(case: dict[str, Any]) -> list[str]:
    """What went wrong in a case (empty: harmless)."""
    out = []
    error = case["error"]
    if not isinstance(error, LeaseLostError) or f"shuffler of {APP} lease" not in str(error):
        out.append(f"the stale run did not fail naming its lost lease: {error!r}")
    if case["got"] != case["expected"]:
        out.append(f"lines lost {sum((case['expected'] - case['got']).values())}, "
                   f"twice {sum((case['got'] - case['expected']).values())}")
    if case["left"]:
        out.append(f"left behind: {case['left'][:3]}")
    if bad := [r["id"] for r in case["records"] if r["state"] not in ("closed", "void")]:
        out.append(f"records not closed: {bad}")
    if case["later"][1].run_id is not None or case["later"][1].voided:
        out.append("the second later run still found work")
    return out


@contextmanager
def _cluster() -> Iterator[str]:
    import distributed

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="1GiB",
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def run(new_store: Callable[[str], Store], dask: bool = False) -> dict[str, Any]:
    """Every kind once, each on a fresh store from ``new_store(name)``, with the local engine (and ``dask``: the
    Dask engine's kinds on a local cluster): ``{"kinds": [...], "failures": {case: [...]}}``."""
    tried, failed = [], {}
    for name, kind in KINDS.items():
        tried.append(f"local: {name}")
        if f := stale_write_case(new_store(f"local-{len(tried)}"), kind)["failures"]:
            failed[f"local: {name}"] = f
    if dask:
        with _cluster() as scheduler:
            for name, kind in DASK_KINDS.items():
                tried.append(f"dask: {name}")
                if f := stale_write_case(new_store(f"dask-{len(tried)}"), kind, engine="dask",
                                         scheduler=scheduler)["failures"]:
                    failed[f"dask: {name}"] = f
    return {"kinds": tried, "failures": failed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dask", action="store_true", help="also the Dask engine's kinds, on a local cluster")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ldp-stale-") as work:
        out = run(lambda name: open_store(Path(work) / name), args.dask)
    print(json.dumps(out))
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
