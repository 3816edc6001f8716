"""The lease in the store (:mod:`ldp.storage.lease`), on a folder and on a real S3-compatible server: one holder
at a time, the others refused naming it; taken over after expiry, not before; a holder paused past its lease writes
nothing more; a taken-over holder's renewal fails; a store without an exclusive create refused at start; a holder
SIGKILLed taken over once its lease expires."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ldp.errors import ConditionalWriteError, LeaseHeldError, LeaseLostError, StorageError
from ldp.storage import Store, open_store
from ldp.storage.lease import FencedStore, Lease

PREFIX = "apps/demo/shuffler/lease/"


class Clock:
    """A settable clock (wall or monotonic)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t



def lease(store: Store, wall: Clock, mono: Clock, ttl: float = 30.0) -> Lease:
    return Lease(store, PREFIX, "shuffler of demo", ttl=ttl, clock=wall, monotonic=mono)


def test_one_holder_the_other_refused_naming_it_then_released(store: Store) -> None:
    wall, mono = Clock(1_000_000.0), Clock(50.0)
    a, b = lease(store, wall, mono), lease(store, wall, mono)
    assert a.acquire() == 1
    with pytest.raises(LeaseHeldError) as err:
        b.acquire()
    text = str(err.value)
    assert a.holder in text and f"host {a.host}" in text and f"pid {os.getpid()}" in text
    assert "1970-01-12T13:47:10Z" in text and "(in 30 s)" in text  # when it expires, by the holder's renewal
    assert err.value.holder == a.holder and err.value.expires == 1_000_030.0
    a.release()
    assert b.acquire() == 2  # released: at once, the next generation
    assert [k.rsplit("/", 1)[1] for k in store.list(PREFIX)] == ["g000000000002-r0000000000.json"]


def test_taken_over_after_expiry_not_before_and_the_old_holder_stops(store: Store) -> None:
    wall, mono_a, mono_b = Clock(1_000_000.0), Clock(50.0), Clock(7.0)
    a, b = lease(store, wall, mono_a), lease(store, wall, mono_b)
    a.acquire()
    wall.t += 29.9
    with pytest.raises(LeaseHeldError):
        b.acquire()
    wall.t += 0.2  # past a's expiry (a stopped renewing: paused, or dead)
    assert b.acquire() == 2
    fenced = FencedStore(store, a)
    mono_a.t += 20.0  # a wakes up past its own deadline (ttl·2/3): it knows it may have lost the lease
    with pytest.raises(LeaseLostError, match="not renewed within 20 s"):
        fenced.put("apps/demo/x", b"stale")
    with pytest.raises(LeaseLostError):
        a.renew()
    assert not store.exists("apps/demo/x")
    b.renew()  # b holds on
    assert store.list(PREFIX)[-1].endswith("g000000000002-r0000000001.json")


def test_a_renewal_that_finds_a_newer_generation_loses_the_lease(store: Store) -> None:
    """Clocks that disagree beyond the margin: b takes over while a thinks it holds; a's next renewal sees b's
    generation and a writes nothing more."""
    wall_a, wall_b, mono = Clock(1_000_000.0), Clock(1_000_100.0), Clock(50.0)
    a, b = lease(store, wall_a, mono), lease(store, wall_b, mono)
    a.acquire()
    assert b.acquire() == 2  # b's clock is 100 s ahead: a's lease looks expired to it
    with pytest.raises(LeaseLostError, match="taken over by"):
        a.renew()
    with pytest.raises(LeaseLostError):
        FencedStore(store, a).create("apps/demo/y", b"stale")
    assert not store.exists("apps/demo/y")


def test_renewals_keep_it_and_a_lost_holder_can_take_it_again(store: Store) -> None:
    wall, mono = Clock(1_000_000.0), Clock(50.0)
    a, b = lease(store, wall, mono), lease(store, wall, mono)
    a.acquire()
    for _ in range(5):
        wall.t += 10
        mono.t += 10
        a.renew()
        a.ensure()
    with pytest.raises(LeaseHeldError):
        b.acquire()
    assert len(store.list(PREFIX)) == 1  # each renewal removes the one before
    mono.t += 25  # a paused: lost on its own clock, though nobody took it
    with pytest.raises(LeaseLostError):
        a.ensure()
    assert a.acquire() == 2  # its own lease, lost: taken again under a new token, no wait


class Overwriting:
    """A store whose create overwrites (an S3-compatible server that ignores If-None-Match)."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.url = inner, inner.url

    def create(self, key: str, data: bytes) -> bool:
        self.inner.put(key, data)
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Refusing(Overwriting):
    """A store that rejects conditional writes (501 Not Implemented)."""

    def create(self, key: str, data: bytes) -> bool:
        raise StorageError(95, f"{self.url}: cannot create {key}: NotImplemented: If-None-Match")


@pytest.mark.parametrize("wrapper", [Overwriting, Refusing])
def test_a_store_without_an_exclusive_create_is_refused_at_start(tmp_path: Path, wrapper: type) -> None:
    (tmp_path / "s").mkdir()  # the store is there (were it not, the error would say to create it first)
    store = wrapper(open_store(tmp_path / "s"))
    with pytest.raises(ConditionalWriteError, match="second create|refused a conditional write"):
        Lease(store, PREFIX, "shuffler of demo").acquire()
    assert open_store(tmp_path / "s").list(PREFIX) == []  # nothing left: the probe removed


@pytest.mark.parametrize("k", [2, 4])
def test_k_at_once_exactly_one_holds(store: Store, k: int) -> None:
    barrier = threading.Barrier(k)
    got: list[Any] = [None] * k

    def take(i: int) -> None:
        mine = Lease(open_store(store.url) if store.url.startswith("file://") else store, PREFIX, f"t{i}")
        barrier.wait()
        try:
            got[i] = mine.acquire()
        except LeaseHeldError as exc:
            got[i] = exc

    threads = [threading.Thread(target=take, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(isinstance(g, int) for g in got) == 1 and sum(isinstance(g, LeaseHeldError) for g in got) == k - 1


def test_bad_ttl_is_refused(tmp_path: Path) -> None:
    for ttl in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="ttl"):
            Lease(open_store(tmp_path), PREFIX, "x", ttl=ttl)


HOLDER = textwrap.dedent("""
    import sys, time
    from ldp.storage import open_store
    from ldp.storage.lease import Lease
    lease = Lease(open_store(sys.argv[1]), sys.argv[2], "shuffler of demo", ttl=float(sys.argv[3]))
    lease.start()
    print("held", lease.token, flush=True)
    time.sleep(600)
""")


def test_a_holder_sigkilled_is_taken_over_once_its_lease_expires(tmp_path: Path) -> None:
    root = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), PREFIX, "2"], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().split() == ["held", "1"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    mine = Lease(open_store(root), PREFIX, "shuffler of demo", ttl=2)
    top = mine.state()
    assert top is not None and top.pid == proc.pid
    if time.time() < top.expires - 0.05:  # a loaded machine may have taken longer than the ttl to get here
        with pytest.raises(LeaseHeldError, match=f"pid {proc.pid}"):
            mine.acquire()
    deadline = time.monotonic() + 60
    while True:
        try:
            assert mine.acquire() == 2
            break
        except LeaseHeldError:
            assert time.monotonic() < deadline, "the dead holder's lease never expired"
            time.sleep(0.1)
    mine.release()


class Renewing:
    """A store on which, between the challenger's listing and its read, the holder renews: the greatest object
    listed is gone when read."""

    def __init__(self, inner: Store, holder: Lease) -> None:
        self.inner, self.url, self.holder, self.armed = inner, inner.url, holder, True

    def get(self, key: str) -> bytes:
        if self.armed and "/lease/g" in key:
            self.armed = False
            self.holder.renew()  # writes r1, removes r0: the key being read
        return self.inner.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_renewal_between_listing_and_reading_is_seen_not_taken_for_no_lease(store: Store) -> None:
    wall, mono = Clock(1_000_000.0), Clock(50.0)
    holder = lease(store, wall, mono)
    holder.acquire()
    challenger = Lease(Renewing(store, holder), PREFIX, "shuffler of demo", clock=wall)  # type: ignore[arg-type]
    with pytest.raises(LeaseHeldError, match=holder.holder):
        challenger.acquire()
    top = challenger.state()
    assert top is not None and top.token == 1 and top.renewal == 1


def test_a_damaged_lease_object_is_an_error_never_a_free_lease(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s")
    store.put(PREFIX + "g000000000003-r0000000000.json", b'{"format": "ldp-lease/1"}')
    with pytest.raises(StorageError, match="not a lease object"):
        Lease(store, PREFIX, "x").acquire()
