"""The store contract's checks of what runs on top of a store (:mod:`ldp.storage.checks` lists and runs them): the
lease (:class:`~ldp.storage.lease.Lease`: one holder at a time, taken over once expired, the old holder's writes
fenced) and the roles (:class:`~ldp.storage.roles.RoleStore`: each refused what is not its own before anything
reaches the store). Library code: the standard library and :mod:`ldp.storage` only, no ``pytest``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import BinaryIO

from ldp.errors import LeaseHeldError, LeaseLostError
from ldp.storage.base import ObjectStat, Store, StoreWrapper
from ldp.storage.check_objects import expect, raises

__all__ = ["check_lease", "check_roles"]


class _Clock:
    """A settable clock (wall or monotonic)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def check_lease(store: Store) -> None:
    from ldp.storage.lease import FencedStore, Lease

    prefix, wall = "lease/", _Clock(1_000_000.0)
    mono_a, mono_b = _Clock(10.0), _Clock(500.0)
    a = Lease(store, prefix, "check", ttl=30.0, clock=wall, monotonic=mono_a)
    b = Lease(store, prefix, "check", ttl=30.0, clock=wall, monotonic=mono_b)
    a.check_exclusive()
    expect(a.acquire() == 1, "the first holder's token is not 1")
    try:
        b.acquire()
    except LeaseHeldError as exc:
        expect(a.holder in str(exc), f"the refusal does not name the holder: {exc}")
    else:
        raise AssertionError("a second holder acquired a live lease")
    wall.t += 29.0
    with raises(LeaseHeldError, "acquire() before the lease expired"):
        b.acquire()
    wall.t += 2.0
    mono_a.t += 31.0  # a paused past its lease
    expect(b.acquire() == 2, "the lease was not taken over (token 2) once expired")
    with raises(LeaseLostError, "a write of the old holder after the takeover"):
        FencedStore(store, a).put("lease-stale", b"x")
    expect(not store.exists("lease-stale"), "the old holder's write reached the store")
    b.release()
    if not store.capabilities.conditional_create:
        return
    wins: list[int] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def take(i: int) -> None:
        try:
            barrier.wait(30)
            with contextlib.suppress(LeaseHeldError):
                Lease(store, "lease-race/", "check", ttl=30.0, clock=wall, monotonic=mono_a).acquire()
                wins.append(i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    expect(not errors, f"acquiring one lease at once raised {errors[:1]!r}")
    expect(len(wins) == 1, f"four holders acquired one lease at once: {len(wins)} hold it")


class _Recorder(StoreWrapper):
    """A store that records every operation that reaches it."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.calls: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.calls.append(f"put {key}")
        super().put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self.calls.append(f"create {key}")
        return super().create(key, data)

    def get(self, key: str) -> bytes:
        self.calls.append(f"get {key}")
        return super().get(key)

    def stat(self, key: str) -> ObjectStat:
        self.calls.append(f"stat {key}")
        return super().stat(key)

    def open(self, key: str) -> BinaryIO:
        self.calls.append(f"open {key}")
        return super().open(key)

    def list(self, prefix: str = "") -> list[str]:
        self.calls.append(f"list {prefix}")
        return super().list(prefix)

    def delete(self, key: str) -> None:
        self.calls.append(f"delete {key}")
        super().delete(key)


def check_roles(store: Store) -> None:
    from ldp.storage.roles import RoleStore, analyst_role, replica_role, shuffler_role

    recorder = _Recorder(store)
    replica = RoleStore(recorder, replica_role("r1"))
    shuffler = RoleStore(recorder, shuffler_role("demo"))
    analyst = RoleStore(recorder, analyst_role("demo"))
    chunk, segment = "apps/demo/incoming/r1/a.chunk", "apps/demo/segments/closed/s.jsonl"
    expect(replica.create(chunk, b"chunk") is True, "the replica could not create its chunk")
    expect(shuffler.list("apps/demo/incoming/") == [chunk], "the shuffler does not list the replica's chunk")
    expect(shuffler.get(chunk) == b"chunk", "the shuffler does not read the chunk")
    expect(shuffler.create(segment, b"lines") is True, "the shuffler could not create a segment")
    shuffler.delete(chunk)
    expect(analyst.list("apps/demo/segments/") == [segment] and analyst.get(segment) == b"lines",
            "the analyst does not read the segment")
    recorder.calls.clear()
    refused: list[tuple[str, Callable[[], object]]] = [
        ("replica get of its chunk", lambda: replica.get(chunk)),
        ("replica put of a segment", lambda: replica.put(segment, b"x")),
        ("replica create under another replica", lambda: replica.create("apps/demo/incoming/r2/b.chunk", b"x")),
        ("shuffler get of a segment", lambda: shuffler.get(segment)),
        ("shuffler put beside the segments", lambda: shuffler.put("apps/demo/consumed/a.chunk", b"x")),
        ("shuffler of demo listing another app", lambda: shuffler.list("apps/other/incoming/")),
        ("analyst list of incoming", lambda: analyst.list("apps/demo/incoming/")),
        ("analyst get of the shuffler's records", lambda: analyst.get("apps/demo/shuffler/runs/x.json")),
        ("analyst stat of a chunk", lambda: analyst.stat(chunk)),
        ("analyst open of a chunk", lambda: analyst.open(chunk).close()),
        ("analyst delete of a segment", lambda: analyst.delete(segment)),
        ("analyst create of a segment", lambda: analyst.create("apps/demo/segments/closed/f.jsonl", b"x"))]
    for what, call in refused:
        with raises(PermissionError, what):
            call()
    expect(recorder.calls == [], f"refused operations reached the store: {recorder.calls}")
