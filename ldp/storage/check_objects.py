"""The store contract's checks of the object operations (:mod:`ldp.storage.checks` lists and runs them): what every
:class:`~ldp.storage.Store` does itself — its interface, reads and writes, listings, stats, exclusive creates (one
winner of a race), versions, streaming and pinned reads, the keys it refuses, and its failures while its service is
down — each declared capability checked, never assumed; and the helpers every check is written with. Library code:
the standard library and :mod:`ldp.storage` only, no ``pytest``.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, BinaryIO

from ldp.errors import StorageError
from ldp.storage.base import READ_BLOCK, Capabilities, ObjectStat, Store, StoreSpec

__all__ = ["BAD_READ_KEYS", "BAD_WRITE_KEYS", "GOOD_KEYS", "RACERS", "Outage", "check_create_exclusive",
           "check_create_race", "check_interface", "check_keys", "check_list", "check_outage", "check_overwrite",
           "check_pinned_read", "check_round_trip", "check_stat", "check_streaming_read", "check_versions", "expect",
           "raises", "read_all"]

RACERS = 8
"""Threads creating one key at once in ``create_race`` and its repeats."""

Outage = Callable[[], AbstractContextManager[Any]]
"""Returns a context manager inside which the stores of ``make_store`` cannot reach their service."""


def expect(condition: bool, message: str) -> None:
    """``AssertionError(message)`` unless ``condition``."""
    if not condition:
        raise AssertionError(message)


@contextlib.contextmanager
def raises(kind: type[BaseException] | tuple[type[BaseException], ...], what: str) -> Iterator[None]:
    """The block must raise ``kind``: anything else (or nothing) fails naming ``what``."""
    try:
        yield
    except kind:
        return
    except Exception as exc:
        raise AssertionError(f"{what}: raised {type(exc).__name__} ({exc}), not {_names(kind)}") from exc
    raise AssertionError(f"{what}: no {_names(kind)} raised")


def _names(kind: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    return " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))


def read_all(stream: BinaryIO) -> bytes:
    """Everything ``stream`` holds, closing it."""
    with stream as fh:
        return fh.read()


# -- the object operations ---------------------------------------------------------------------------------------
def check_interface(store: Store) -> None:
    expect(isinstance(store, Store), f"{store!r} lacks members of the Store protocol: "
            f"{sorted(m for m in _MEMBERS if not hasattr(store, m))}")
    caps = store.capabilities
    expect(isinstance(caps, Capabilities), f"capabilities is {caps!r}, not a Capabilities")
    spec = store.spec()
    expect(isinstance(spec, StoreSpec) and spec.url == store.url and isinstance(spec.options, dict),
            f"spec() is {spec!r}: a StoreSpec of the store's own url {store.url!r} and a dict of options")
    expect(isinstance(store.options, dict), f"options is {store.options!r}, not a dict")
    inner = store.unwrap()
    expect(isinstance(inner, Store) and inner.unwrap() is inner, "unwrap() is not an innermost Store")
    warning = store.retention_warning("apps/demo/incoming/")
    expect(warning is None or isinstance(warning, str), f"retention_warning() is {warning!r}: a str or None")
    fence, lease = store.fence, store.lease
    expect(fence is None or isinstance(fence, int), f"fence is {fence!r}: an int or None")
    expect(fence is None or lease is not None, f"a fence ({fence}) without a lease")
    store.put("interface/x", b"1")
    expect(store.root_exists(), "root_exists() is False though an object was just written")


_MEMBERS = ("url", "capabilities", "options", "spec", "fence", "lease", "unwrap", "retention_warning", "put",
            "create", "get", "stat", "open", "exists", "list", "delete", "root_exists")


def check_round_trip(store: Store) -> None:
    blobs = {"rt/a.json": b'{"a": 1}\n', "rt/b/c.bin": bytes(range(256)) * 40, "rt/empty": b""}
    for key, data in blobs.items():
        expect(not store.exists(key), f"exists({key!r}) before it was written")
        store.put(key, data)
    for key, data in blobs.items():
        got = store.get(key)
        expect(got == data, f"get({key!r}) returned {len(got)} bytes, not the {len(data)} put")
        expect(store.exists(key), f"exists({key!r}) is False after put")
    store.delete("rt/a.json")
    store.delete("rt/a.json")  # nothing there: no error
    expect(not store.exists("rt/a.json"), "exists() after delete")
    with raises(FileNotFoundError, "get() of a deleted key"):
        store.get("rt/a.json")
    with raises(FileNotFoundError, "get() of a key never written"):
        store.get("rt/never")
    expect(not store.exists("rt/b"), "exists() of a prefix (no object there)")


def check_list(store: Store) -> None:
    keys = ["l/a-b", "l/a.b", "l/a/b", "l/a0", "l/A", "l/ab", "l/a/c/d", "l/b", "m/x", "l2/y"]
    for key in reversed(keys):
        store.put(key, b"x")
    everything = store.list()
    expect(everything == sorted(keys), f"list() is {everything}, not the sorted keys {sorted(keys)}")
    under = sorted(k for k in keys if k.startswith("l/"))
    for prefix in ("l/", "l"):
        got = store.list(prefix)
        expect(got == under, f"list({prefix!r}) is {got}, not {under}")
    got = store.list("l/a/")
    expect(got == ["l/a/b", "l/a/c/d"], f"list('l/a/') is {got}: a prefix is whole parts (not l/ab, l/a-b)")
    expect(store.list("nothing/") == [], "list() of an unknown prefix is not empty")
    store.delete("l/a/c/d")
    got = store.list("l/a/")
    expect(got == ["l/a/b"], f"list('l/a/') after a delete is {got}")


def check_stat(store: Store) -> None:
    store.put("st/obj", b"12345")
    info = store.stat("st/obj")
    expect(isinstance(info, ObjectStat), f"stat() returned {info!r}, not an ObjectStat")
    expect(info.size == 5 and info.mtime_ns > 0 and bool(info.version),
            f"stat() of a 5-byte object is {info!r}: its size, a modification time and a version")
    if store.capabilities.etags:
        expect(bool(info.etag), f"etags declared, but stat()'s etag is {info.etag!r}")
    expect(store.stat("st/obj") == info, "stat() changed though nothing was written")
    with raises(FileNotFoundError, "stat() of a missing key"):
        store.stat("st/none")
    with raises(FileNotFoundError, "stat() of a prefix (not an object)"):
        store.stat("st")


def check_create_exclusive(store: Store) -> None:
    expect(store.create("cx/k", b"first") is True, "create() of a new key did not return True")
    expect(store.create("cx/k", b"second") is False, "a second create() of one key did not return False")
    expect(store.get("cx/k") == b"first", "a refused create() replaced the object")
    store.delete("cx/k")
    expect(store.create("cx/k", b"third") is True, "create() after delete did not return True")
    expect(store.get("cx/k") == b"third", "create() after delete did not write")


def check_create_race(store: Store) -> None:
    if not store.capabilities.conditional_create:
        return
    for round_ in range(3):
        key = f"race/{round_}"
        wins: list[int] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(RACERS)

        def race(i: int, key: str = key, wins: list[int] = wins, errors: list[BaseException] = errors,
                 barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait(30)
                if store.create(key, f"winner {i}".encode()):
                    wins.append(i)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=race, args=(i,), daemon=True) for i in range(RACERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        expect(not errors, f"create() raced raised {errors[:1]!r}")
        expect(len(wins) == 1, f"{RACERS} threads created {key} at once: {len(wins)} won ({sorted(wins)}), not one")
        got = store.get(key)
        expect(got == f"winner {wins[0]}".encode(), f"the object is {got!r}, not the winner's (thread {wins[0]})")


def check_overwrite(store: Store) -> None:
    store.put("ow/k", b"old content")
    store.put("ow/k", b"new")
    expect(store.get("ow/k") == b"new", "put() did not replace the object")
    expect(store.stat("ow/k").size == 3, "stat() after a replacement gives the old size")


def check_versions(store: Store) -> None:
    caps = store.capabilities
    if not caps.versions:
        return
    seen: dict[str, bytes] = {}
    for data in (b"a", b"b", b"ab", b"ba", b"", b"a"):
        store.put("v/k", data)
        info = store.stat("v/k")
        for version, old in seen.items():
            expect(old == data or info.version != version,
                    f"the version {version!r} stayed though {old!r} was replaced by {data!r}")
        if caps.etags:
            expect(bool(info.etag), f"etags declared, but the etag is {info.etag!r}")
        seen[info.version] = data


def check_streaming_read(store: Store) -> None:
    size = READ_BLOCK + READ_BLOCK // 2 + 7
    data = bytes(i % 251 for i in range(size))
    store.put("sr/big", data)
    with store.open("sr/big") as fh:
        head = fh.read(3)
        middle = fh.read(READ_BLOCK)
        rest = fh.read()
    expect(fh.closed, "the stream is not closed after its with block")
    expect(head + middle + rest == data, f"open() read {len(head + middle + rest)} bytes, not the {size} put")
    store.put("sr/small", b"{}\n")
    expect(read_all(store.open("sr/small")) == b"{}\n", "open() of a small object")
    store.put("sr/empty", b"")
    expect(read_all(store.open("sr/empty")) == b"", "open() of an empty object")
    with raises(FileNotFoundError, "open() of a missing key"):
        store.open("sr/none").close()
    with raises(FileNotFoundError, "open() of a prefix"):
        store.open("sr").close()


def check_pinned_read(store: Store) -> None:
    size = 2 * READ_BLOCK + READ_BLOCK // 2
    old, new = b"o" * size, b"n" * size
    store.put("pin/k", old)
    fh = store.open("pin/k")
    try:
        first = fh.read(1)
        store.put("pin/k", new)
        try:
            got = first + fh.read()
        except StorageError:
            return  # refused: the version it started with is gone
    finally:
        fh.close()
    expect(not store.capabilities.pinned_reads,
            "pinned_reads declared, but a read of an object replaced meanwhile ended without a StorageError")
    expect(got in (old, new), f"a read of an object replaced meanwhile mixed two versions ({got.count(b'o')} bytes "
            f"of the old, {got.count(b'n')} of the new)")


BAD_WRITE_KEYS = ("", "/a", "a/", "a//b", "../a", "a/../b", "a/..", ".hidden", "a/.b", "a\x00b", "a b", "a\\b",
                  "/".join(["a"] * 17), "a" * 201)
BAD_READ_KEYS = ("", "/a", "a//b", "../a", "a/../b", "a/./b", "a/..", ".", "a\x00b", "é" * 600)
GOOD_KEYS = ("k/A-z_0.9=1+2", "k/x.chunk", "k/2024-01-01T00=00", "k/" + "/".join("abcdefghijklmno"))


def check_keys(store: Store) -> None:
    writes: dict[str, Callable[[str], object]] = {"put": lambda k: store.put(k, b"x"),
                                                  "create": lambda k: store.create(k, b"x"), "delete": store.delete}
    reads: dict[str, Callable[[str], object]] = {"get": store.get, "stat": store.stat, "exists": store.exists,
                                                 "open": lambda k: store.open(k).close()}
    for key in BAD_WRITE_KEYS:
        for name, call in writes.items():
            with raises(ValueError, f"{name}({key!r}): an invalid key to write"):
                call(key)
    for key in BAD_READ_KEYS:
        for name, call in reads.items():
            with raises(ValueError, f"{name}({key!r}): an invalid key to read"):
                call(key)
    for prefix in ("../", "a/../", "a//b/", "a\x00/"):
        with raises(ValueError, f"list({prefix!r}): an invalid prefix"):
            store.list(prefix)
    expect(store.list() == [], f"refused keys wrote {store.list()[:5]}")
    for key in GOOD_KEYS:
        store.put(key, key.encode())
        expect(store.get(key) == key.encode() and store.exists(key), f"the valid key {key!r} does not round trip")
    expect(store.list("k/") == sorted(GOOD_KEYS), f"list('k/') is {store.list('k/')}")


def check_outage(store: Store, outage: Outage) -> None:
    store.put("down/there", b"x")
    ops: dict[str, Callable[[], object]] = {
        "put": lambda: store.put("down/new", b"x"), "create": lambda: store.create("down/new2", b"x"),
        "get": lambda: store.get("down/there"), "stat": lambda: store.stat("down/there"),
        "open": lambda: read_all(store.open("down/there")), "exists": lambda: store.exists("down/there"),
        "list": lambda: store.list("down/"), "delete": lambda: store.delete("down/there")}
    with outage():
        for name, op in ops.items():
            try:
                answer = op()
            except StorageError:
                continue
            except Exception as exc:
                raise AssertionError(f"{name}() with the service down raised {type(exc).__name__} ({exc}), not "
                                     f"StorageError:\n{traceback.format_exc(limit=-3)}") from exc
            raise AssertionError(f"{name}() with the service down answered {answer!r}, not StorageError")
    store.put("down/back", b"y")
    expect(store.get("down/back") == b"y", "the store does not work again after the outage")
