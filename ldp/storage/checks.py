"""The store contract (issue 70, item 5): the checks every :class:`~ldp.storage.Store` passes, in the spirit of
scikit-learn's ``check_estimator``. A new backend (or a new S3-compatible server, a new emulator) runs::

    from ldp.storage.checks import check_store
    check_store(lambda: open_store(f"az://container/t{uuid4().hex}", options))            # a fresh empty store each
    check_store(make_store, outage=relay.down_for_a_while)                               # and with the service down

:func:`check_store` runs every check, each on a fresh store from ``make_store()``, and raises one
``AssertionError`` naming every check that failed (the first failure chained). :func:`store_checks` lists them, for
a test suite to parametrize over (``@pytest.mark.parametrize("check", store_checks(), ids=str)`` then
``check(make_store)``). Library code: the standard library and :mod:`ldp.storage` only, no ``pytest``.

**The checks** (:data:`CHECKS`, in order; what the store declares in :attr:`Store.capabilities` is checked, never
assumed):

* ``interface``: every member of :class:`~ldp.storage.Store` is there; :attr:`~Store.capabilities`,
  :meth:`~Store.spec` (its URL), :meth:`~Store.unwrap`, :meth:`~Store.retention_warning`, ``fence``/``lease``;
  the store starts empty; :meth:`~Store.root_exists` once an object is written.
* ``round_trip``: put, get (empty and binary objects), exists, delete (twice: nothing there is no error), a missing
  key ``FileNotFoundError``.
* ``list``: keys sorted (code-point order, as S3 and Azure list), by prefix — with or without its ``/``, a prefix is
  whole parts (``a/`` does not list ``ab``), an unknown one lists nothing.
* ``stat``: size and time of an object; a missing key and a prefix are ``FileNotFoundError``; an ETag where
  declared.
* ``create_exclusive``: create, then create again refused (``False``, the first bytes kept); again after delete.
* ``create_race``: :data:`RACERS` threads create one key at once, three times over: exactly one wins each time and
  the object holds the winner's bytes.
* ``overwrite``: put replaces (content and size).
* ``versions``: where declared, the version changes whenever other content is put; etags likewise.
* ``streaming_read``: ``open`` reads an object over several :data:`~ldp.storage.READ_BLOCK` blocks, in pieces, the
  same bytes; the stream closes with ``with``; a missing key or a prefix is ``FileNotFoundError``.
* ``pinned_read``: an object of two and a half blocks replaced after the first byte is read: on a store declaring
  ``pinned_reads`` the read fails with :class:`~ldp.errors.StorageError`; on any store it never returns a mixture of
  the two versions.
* ``keys``: :func:`~ldp.storage.check_key` refusals on every write (``..``, empty parts, hidden names, NUL, …),
  :func:`~ldp.storage.check_read_key` refusals on every read and listing, as ``ValueError`` and before anything is
  written; valid keys of every allowed character round trip.
* ``outage`` (only given ``outage``: a callable returning a context manager inside which the service is
  unreachable): every operation raises :class:`~ldp.errors.StorageError` — not ``FileNotFoundError``, not a bug's
  exception, not an answer — and the store works again afterwards.
* ``lease``: :class:`~ldp.storage.lease.Lease` on the store, with fake clocks: acquire; a second holder refused
  naming the first; taken over once expired (the old holder's writes through a
  :class:`~ldp.storage.lease.FencedStore` then refused); :meth:`~ldp.storage.lease.Lease.check_exclusive`; four
  holders at once, exactly one wins.
* ``roles``: :class:`~ldp.storage.roles.RoleStore` refuses each role what is not its own before anything reaches
  the store, and lets each do its job (a replica creates a chunk, the shuffler reads it and creates a segment, an
  analyst reads the segment).
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, BinaryIO

from ldp.errors import LeaseHeldError, LeaseLostError, StorageError
from ldp.storage.base import READ_BLOCK, Capabilities, ObjectStat, Store, StoreSpec, StoreWrapper

__all__ = ["CHECKS", "RACERS", "Outage", "StoreCheck", "check_store", "store_checks"]

RACERS = 8
"""Threads creating one key at once in ``create_race`` and its repeats."""

MakeStore = Callable[[], Store]
"""Returns a fresh, empty store (a new prefix of a bucket, a new folder) at each call."""
Outage = Callable[[], AbstractContextManager[Any]]
"""Returns a context manager inside which the stores of ``make_store`` cannot reach their service."""


@dataclass(frozen=True)
class StoreCheck:
    """One check of the contract: ``check(make_store, outage=None)`` runs it on a fresh store (``AssertionError``
    naming the check on failure); ``str`` is its name."""

    name: str
    function: Callable[..., None]
    needs_outage: bool = False

    def __call__(self, make_store: MakeStore, outage: Outage | None = None) -> None:
        if self.needs_outage and outage is None:
            raise ValueError(f"the {self.name} check needs a way to make the service unavailable (outage=...)")
        store = make_store()
        try:
            _expect(store.list() == [], "make_store() must return an empty store, got one holding "
                    f"{store.list()[:5]}")
            if self.needs_outage:
                self.function(store, outage)
            else:
                self.function(store)
        except AssertionError as exc:
            raise AssertionError(f"store check {self.name} failed on {store.url}: {exc}") from exc
        except Exception as exc:
            raise AssertionError(f"store check {self.name} failed on {store.url}: {type(exc).__name__}: {exc}"
                                 ) from exc

    def __str__(self) -> str:
        return self.name


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


@contextlib.contextmanager
def _raises(kind: type[BaseException] | tuple[type[BaseException], ...], what: str) -> Iterator[None]:
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


def _read(stream: BinaryIO) -> bytes:
    with stream as fh:
        return fh.read()


# -- the object operations ---------------------------------------------------------------------------------------
def check_interface(store: Store) -> None:
    _expect(isinstance(store, Store), f"{store!r} lacks members of the Store protocol: "
            f"{sorted(m for m in _MEMBERS if not hasattr(store, m))}")
    caps = store.capabilities
    _expect(isinstance(caps, Capabilities), f"capabilities is {caps!r}, not a Capabilities")
    spec = store.spec()
    _expect(isinstance(spec, StoreSpec) and spec.url == store.url and isinstance(spec.options, dict),
            f"spec() is {spec!r}: a StoreSpec of the store's own url {store.url!r} and a dict of options")
    _expect(isinstance(store.options, dict), f"options is {store.options!r}, not a dict")
    inner = store.unwrap()
    _expect(isinstance(inner, Store) and inner.unwrap() is inner, "unwrap() is not an innermost Store")
    warning = store.retention_warning("apps/demo/incoming/")
    _expect(warning is None or isinstance(warning, str), f"retention_warning() is {warning!r}: a str or None")
    fence, lease = store.fence, store.lease
    _expect(fence is None or isinstance(fence, int), f"fence is {fence!r}: an int or None")
    _expect(fence is None or lease is not None, f"a fence ({fence}) without a lease")
    store.put("interface/x", b"1")
    _expect(store.root_exists(), "root_exists() is False though an object was just written")


_MEMBERS = ("url", "capabilities", "options", "spec", "fence", "lease", "unwrap", "retention_warning", "put",
            "create", "get", "stat", "open", "exists", "list", "delete", "root_exists")


def check_round_trip(store: Store) -> None:
    blobs = {"rt/a.json": b'{"a": 1}\n', "rt/b/c.bin": bytes(range(256)) * 40, "rt/empty": b""}
    for key, data in blobs.items():
        _expect(not store.exists(key), f"exists({key!r}) before it was written")
        store.put(key, data)
    for key, data in blobs.items():
        got = store.get(key)
        _expect(got == data, f"get({key!r}) returned {len(got)} bytes, not the {len(data)} put")
        _expect(store.exists(key), f"exists({key!r}) is False after put")
    store.delete("rt/a.json")
    store.delete("rt/a.json")  # nothing there: no error
    _expect(not store.exists("rt/a.json"), "exists() after delete")
    with _raises(FileNotFoundError, "get() of a deleted key"):
        store.get("rt/a.json")
    with _raises(FileNotFoundError, "get() of a key never written"):
        store.get("rt/never")
    _expect(not store.exists("rt/b"), "exists() of a prefix (no object there)")


def check_list(store: Store) -> None:
    keys = ["l/a-b", "l/a.b", "l/a/b", "l/a0", "l/A", "l/ab", "l/a/c/d", "l/b", "m/x", "l2/y"]
    for key in reversed(keys):
        store.put(key, b"x")
    everything = store.list()
    _expect(everything == sorted(keys), f"list() is {everything}, not the sorted keys {sorted(keys)}")
    under = sorted(k for k in keys if k.startswith("l/"))
    for prefix in ("l/", "l"):
        got = store.list(prefix)
        _expect(got == under, f"list({prefix!r}) is {got}, not {under}")
    got = store.list("l/a/")
    _expect(got == ["l/a/b", "l/a/c/d"], f"list('l/a/') is {got}: a prefix is whole parts (not l/ab, l/a-b)")
    _expect(store.list("nothing/") == [], "list() of an unknown prefix is not empty")
    store.delete("l/a/c/d")
    got = store.list("l/a/")
    _expect(got == ["l/a/b"], f"list('l/a/') after a delete is {got}")


def check_stat(store: Store) -> None:
    store.put("st/obj", b"12345")
    info = store.stat("st/obj")
    _expect(isinstance(info, ObjectStat), f"stat() returned {info!r}, not an ObjectStat")
    _expect(info.size == 5 and info.mtime_ns > 0 and bool(info.version),
            f"stat() of a 5-byte object is {info!r}: its size, a modification time and a version")
    if store.capabilities.etags:
        _expect(bool(info.etag), f"etags declared, but stat()'s etag is {info.etag!r}")
    _expect(store.stat("st/obj") == info, "stat() changed though nothing was written")
    with _raises(FileNotFoundError, "stat() of a missing key"):
        store.stat("st/none")
    with _raises(FileNotFoundError, "stat() of a prefix (not an object)"):
        store.stat("st")


def check_create_exclusive(store: Store) -> None:
    _expect(store.create("cx/k", b"first") is True, "create() of a new key did not return True")
    _expect(store.create("cx/k", b"second") is False, "a second create() of one key did not return False")
    _expect(store.get("cx/k") == b"first", "a refused create() replaced the object")
    store.delete("cx/k")
    _expect(store.create("cx/k", b"third") is True, "create() after delete did not return True")
    _expect(store.get("cx/k") == b"third", "create() after delete did not write")


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
        _expect(not errors, f"create() raced raised {errors[:1]!r}")
        _expect(len(wins) == 1, f"{RACERS} threads created {key} at once: {len(wins)} won ({sorted(wins)}), not one")
        got = store.get(key)
        _expect(got == f"winner {wins[0]}".encode(), f"the object is {got!r}, not the winner's (thread {wins[0]})")


def check_overwrite(store: Store) -> None:
    store.put("ow/k", b"old content")
    store.put("ow/k", b"new")
    _expect(store.get("ow/k") == b"new", "put() did not replace the object")
    _expect(store.stat("ow/k").size == 3, "stat() after a replacement gives the old size")


def check_versions(store: Store) -> None:
    caps = store.capabilities
    if not caps.versions:
        return
    seen: dict[str, bytes] = {}
    for data in (b"a", b"b", b"ab", b"ba", b"", b"a"):
        store.put("v/k", data)
        info = store.stat("v/k")
        for version, old in seen.items():
            _expect(old == data or info.version != version,
                    f"the version {version!r} stayed though {old!r} was replaced by {data!r}")
        if caps.etags:
            _expect(bool(info.etag), f"etags declared, but the etag is {info.etag!r}")
        seen[info.version] = data


def check_streaming_read(store: Store) -> None:
    size = READ_BLOCK + READ_BLOCK // 2 + 7
    data = bytes(i % 251 for i in range(size))
    store.put("sr/big", data)
    with store.open("sr/big") as fh:
        head = fh.read(3)
        middle = fh.read(READ_BLOCK)
        rest = fh.read()
    _expect(fh.closed, "the stream is not closed after its with block")
    _expect(head + middle + rest == data, f"open() read {len(head + middle + rest)} bytes, not the {size} put")
    store.put("sr/small", b"{}\n")
    _expect(_read(store.open("sr/small")) == b"{}\n", "open() of a small object")
    store.put("sr/empty", b"")
    _expect(_read(store.open("sr/empty")) == b"", "open() of an empty object")
    with _raises(FileNotFoundError, "open() of a missing key"):
        store.open("sr/none").close()
    with _raises(FileNotFoundError, "open() of a prefix"):
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
    _expect(not store.capabilities.pinned_reads,
            "pinned_reads declared, but a read of an object replaced meanwhile ended without a StorageError")
    _expect(got in (old, new), f"a read of an object replaced meanwhile mixed two versions ({got.count(b'o')} bytes "
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
            with _raises(ValueError, f"{name}({key!r}): an invalid key to write"):
                call(key)
    for key in BAD_READ_KEYS:
        for name, call in reads.items():
            with _raises(ValueError, f"{name}({key!r}): an invalid key to read"):
                call(key)
    for prefix in ("../", "a/../", "a//b/", "a\x00/"):
        with _raises(ValueError, f"list({prefix!r}): an invalid prefix"):
            store.list(prefix)
    _expect(store.list() == [], f"refused keys wrote {store.list()[:5]}")
    for key in GOOD_KEYS:
        store.put(key, key.encode())
        _expect(store.get(key) == key.encode() and store.exists(key), f"the valid key {key!r} does not round trip")
    _expect(store.list("k/") == sorted(GOOD_KEYS), f"list('k/') is {store.list('k/')}")


def check_outage(store: Store, outage: Outage) -> None:
    store.put("down/there", b"x")
    ops: dict[str, Callable[[], object]] = {
        "put": lambda: store.put("down/new", b"x"), "create": lambda: store.create("down/new2", b"x"),
        "get": lambda: store.get("down/there"), "stat": lambda: store.stat("down/there"),
        "open": lambda: _read(store.open("down/there")), "exists": lambda: store.exists("down/there"),
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
    _expect(store.get("down/back") == b"y", "the store does not work again after the outage")


# -- on top: the lease and the roles -------------------------------------------------------------------------------
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
    _expect(a.acquire() == 1, "the first holder's token is not 1")
    try:
        b.acquire()
    except LeaseHeldError as exc:
        _expect(a.holder in str(exc), f"the refusal does not name the holder: {exc}")
    else:
        raise AssertionError("a second holder acquired a live lease")
    wall.t += 29.0
    with _raises(LeaseHeldError, "acquire() before the lease expired"):
        b.acquire()
    wall.t += 2.0
    mono_a.t += 31.0  # a paused past its lease
    _expect(b.acquire() == 2, "the lease was not taken over (token 2) once expired")
    with _raises(LeaseLostError, "a write of the old holder after the takeover"):
        FencedStore(store, a).put("lease-stale", b"x")
    _expect(not store.exists("lease-stale"), "the old holder's write reached the store")
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
    _expect(not errors, f"acquiring one lease at once raised {errors[:1]!r}")
    _expect(len(wins) == 1, f"four holders acquired one lease at once: {len(wins)} hold it")


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
    _expect(replica.create(chunk, b"chunk") is True, "the replica could not create its chunk")
    _expect(shuffler.list("apps/demo/incoming/") == [chunk], "the shuffler does not list the replica's chunk")
    _expect(shuffler.get(chunk) == b"chunk", "the shuffler does not read the chunk")
    _expect(shuffler.create(segment, b"lines") is True, "the shuffler could not create a segment")
    shuffler.delete(chunk)
    _expect(analyst.list("apps/demo/segments/") == [segment] and analyst.get(segment) == b"lines",
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
        with _raises(PermissionError, what):
            call()
    _expect(recorder.calls == [], f"refused operations reached the store: {recorder.calls}")


CHECKS: tuple[StoreCheck, ...] = (
    StoreCheck("interface", check_interface), StoreCheck("round_trip", check_round_trip),
    StoreCheck("list", check_list), StoreCheck("stat", check_stat),
    StoreCheck("create_exclusive", check_create_exclusive), StoreCheck("create_race", check_create_race),
    StoreCheck("overwrite", check_overwrite), StoreCheck("versions", check_versions),
    StoreCheck("streaming_read", check_streaming_read), StoreCheck("pinned_read", check_pinned_read),
    StoreCheck("keys", check_keys), StoreCheck("outage", check_outage, needs_outage=True),
    StoreCheck("lease", check_lease), StoreCheck("roles", check_roles))
"""Every check, in the order :func:`check_store` runs them."""


def store_checks(*, outage: bool = True) -> list[StoreCheck]:
    """The checks, for a test suite's parametrization (``ids=str``); without ``outage``, those that need no way to
    make the service unavailable."""
    return [c for c in CHECKS if outage or not c.needs_outage]


def check_store(make_store: MakeStore, *, outage: Outage | None = None) -> list[str]:
    """Run every check (:data:`CHECKS`; ``outage`` only when given), each on a fresh empty store from
    ``make_store()``; the names of the checks run. ``AssertionError`` naming every check that failed, with its
    message (the first failure chained)."""
    failures: list[tuple[str, AssertionError]] = []
    ran = []
    for check in store_checks(outage=outage is not None):
        ran.append(check.name)
        try:
            check(make_store, outage)
        except AssertionError as exc:
            failures.append((check.name, exc))
    if failures:
        names = ", ".join(name for name, _ in failures)
        lines = "\n".join(f"  {exc}" for _, exc in failures)
        raise AssertionError(f"{len(failures)} of {len(ran)} store checks failed ({names}):\n{lines}"
                             ) from failures[0][1]
    return ran
