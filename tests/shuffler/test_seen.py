"""The shuffler's record of batch ids mixed (:mod:`ldp.shuffler.seen`), on a local folder and a real S3-compatible
server: digests recorded per run and partition, checked exactly (a differential test against a Python set), the
``since`` and ``exclude_run`` filters by the run's key time, pruning from the listing alone, records of the earlier
format migrated (also when killed midway), damaged objects refused, digests that end in zero bytes."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.shuffler import seen as seen_mod
from ldp.shuffler.seen import DIGEST_DTYPE, FORMAT, SeenIds, first_copies, id_digests, run_time
from ldp.storage import Store
from ldp.storage.local import LocalStore

W0 = 20000 * 86400  # 2024-10-04T00:00:00Z
PREFIX = "apps/demo/shuffler/seen/"


def rid(t: float, n: int = 0) -> str:
    """The run id of a run at ``t`` (as the stage names them)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t)) + f"-{n:08x}"


def ids(prefix: str, n: int) -> list[str]:
    return [hashlib.sha256(f"{prefix}{i}".encode()).hexdigest()[:32] for i in range(n)]


def legacy(store: Store, run_id: str, at: float, batch_ids: list[str]) -> None:
    """A record of the earlier format, as ``ldp shuffle`` wrote it."""
    store.put(f"{PREFIX}{run_id}.json", json.dumps({"run": run_id, "at": at, "ids": sorted(batch_ids)}).encode())


def partitions(batch_ids: list[str]) -> set[str]:
    """The partitions (hex) that the digests of ``batch_ids`` fall in."""
    return {f"{b >> 4:x}" for b in id_digests(batch_ids).view(np.uint8)[::16]}


def digests_of(*raw: bytes) -> np.ndarray:
    assert all(len(r) == 16 for r in raw)
    return np.frombuffer(b"".join(raw), DIGEST_DTYPE).copy()


class MemoryStore:
    """A store in a dict (the property test runs many examples)."""

    url = "mem://"

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        with self.lock:
            self.objects[key] = bytes(data)

    def create(self, key: str, data: bytes) -> bool:
        with self.lock:
            if key in self.objects:
                return False
            self.objects[key] = bytes(data)
            return True

    def get(self, key: str) -> bytes:
        try:
            return self.objects[key]
        except KeyError:
            raise FileNotFoundError(key) from None

    def exists(self, key: str) -> bool:
        return key in self.objects

    def list(self, prefix: str = "") -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))

    def delete(self, key: str) -> None:
        with self.lock:
            self.objects.pop(key, None)


class Wrapped:
    """A store that counts reads and writes, refuses reads when ``no_reads``, and dies (raises ``Killed``) at its
    ``after``-th write or delete, as a process killed there would stop."""

    def __init__(self, inner: Store, after: int | None = None, no_reads: bool = False) -> None:
        self.inner, self.after, self.no_reads, self.url = inner, after, no_reads, inner.url
        self.gets: list[str] = []
        self.lock = threading.Lock()  # writes come from several threads

    def _tick(self) -> None:
        with self.lock:
            if self.after is not None:
                self.after -= 1
                if self.after < 0:
                    raise Killed()

    def get(self, key: str) -> bytes:
        assert not self.no_reads, f"read {key}"
        with self.lock:
            self.gets.append(key)
        return self.inner.get(key)

    def put(self, key: str, data: bytes) -> None:
        self._tick()
        self.inner.put(key, data)

    def delete(self, key: str) -> None:
        self._tick()
        self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Killed(Exception):
    pass



def test_record_then_mixed_before_round_trip(store: Store) -> None:
    seen = SeenIds(store, "demo")
    a, b, new = ids("a", 300), ids("b", 200), ids("n", 100)
    r1, r2 = rid(W0 + 0.25, 1), rid(W0 + 3600.5, 2)
    seen.record(r1, W0 + 0.25, id_digests(a), fence=7)
    seen.record(r2, W0 + 3600.5, id_digests(b + a[:10]))  # an id recorded twice
    keys = store.list(PREFIX)
    assert len(keys) == 32 and all(k.startswith(PREFIX + r1) or k.startswith(PREFIX + r2) for k in keys)
    data = store.get(f"{PREFIX}{r1}/a.ids")
    head = json.loads(data.split(b"\n", 1)[0])
    assert head == {"format": FORMAT, "run": r1, "at": W0 + 0.25, "fence": 7, "partition": 10,
                    "count": (len(data) - len(json.dumps(head)) - 1) // 16}
    some = [k for k in keys if r1 in k][::5]
    before = {k: store.get(k) for k in some}
    seen.record(r1, W0 + 0.25, id_digests(a[::-1]), fence=7)  # a rerun: the same bytes
    assert store.list(PREFIX) == keys and {k: store.get(k) for k in some} == before
    cands = new[:50] + b[::7] + a[::5] + new[50:] + a[:3]
    got = seen.mixed_before(id_digests(cands), W0 - 86400)
    assert got.dtype == bool and got.tolist() == [c in set(a + b) for c in cands]
    assert seen.mixed_before(id_digests([]), W0).shape == (0,)


def test_since_and_exclude_run_select_the_runs_by_key_time(store: Store) -> None:
    seen = SeenIds(store, "demo")
    runs = {rid(W0 + 10.7, 1): W0 + 10.7, rid(W0 + 100, 2): W0 + 100.0, rid(W0 + 200.2, 3): W0 + 200.2}
    for i, (run_id, at) in enumerate(runs.items()):
        seen.record(run_id, at, id_digests([f"id{i}", "shared"]))
    cands = id_digests(["id0", "id1", "id2", "shared", "other"])

    def found(since: float, exclude: str | None = None) -> list[bool]:
        return seen.mixed_before(cands, since, exclude_run=exclude).tolist()

    assert found(W0) == [True, True, True, True, False]
    assert found(W0 + 10.5) == found(W0 + 10.99) == [True, True, True, True, False]  # key time 10 s: 10 + 1 > since
    assert found(W0 + 11) == [False, True, True, True, False]
    assert found(W0 + 100.5) == [False, True, True, True, False]
    assert found(W0 + 101) == [False, False, True, True, False]
    assert found(W0 + 201) == [False] * 5
    r3 = rid(W0 + 200.2, 3)
    assert found(W0 + 101, exclude=r3) == [False] * 5
    assert found(W0, exclude=rid(W0 + 100, 2)) == [True, False, True, True, False]


def test_only_the_partitions_holding_candidates_are_read(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path / "s")
    for n in range(3):
        SeenIds(inner, "demo").record(rid(W0 + n, n), W0 + n, id_digests(ids(f"r{n}", 200)))
    wrapped = Wrapped(inner)
    seen = SeenIds(wrapped, "demo")
    all_ids = ids("r1", 200)
    d = id_digests(all_ids)
    in_3 = d[d.view(np.uint8).reshape(-1, 16)[:, 0] >> 4 == 3]
    assert seen.mixed_before(in_3, W0).all()
    assert sorted(wrapped.gets) == [f"{PREFIX}{rid(W0 + n, n)}/3.ids" for n in range(3)]


def test_pruning_reads_nothing_and_goes_by_key_time(store: Store) -> None:
    seen = SeenIds(store, "demo")
    objects = []
    for n, at in enumerate((W0 + 0.9, W0 + 50, W0 + 99.5)):
        seen.record(rid(at, n), at, id_digests(ids(f"p{n}", 12)))
        objects.append(len(partitions(ids(f"p{n}", 12))))
    legacy(store, rid(W0 + 20.5, 9), W0 + 20.5, ids("old", 5))
    legacy(store, rid(W0 + 200, 8), W0 + 200.0, ids("young", 5))
    blind = SeenIds(Wrapped(store, no_reads=True), "demo")
    assert blind.prune(W0 + 0.5) == 0 and blind.prune(W0 + 1) == objects[0]  # key time 0: 0 + 1 <= 1
    assert blind.prune(W0 + 50.99) == 1  # the old record, by its name
    remaining = store.list(PREFIX)
    assert {k[len(PREFIX):].split("/")[0] for k in remaining} == {rid(W0 + 50, 1), rid(W0 + 99, 2),
                                                                   rid(W0 + 200, 8) + ".json"}
    assert blind.prune(W0 + 51) == objects[1] and blind.prune(W0 + 10**6) == objects[2] + 1
    assert store.list(PREFIX) == []


def test_records_of_the_earlier_format_are_migrated(store: Store) -> None:
    a, b, c = ids("a", 40), ids("b", 30), ids("c", 20)
    legacy(store, rid(W0 + 5.5, 1), W0 + 5.5, a)
    legacy(store, rid(W0 + 7200, 2), W0 + 7200, b)
    seen = SeenIds(store, "demo")
    cands = a[::3] + b[::3] + c
    assert seen.mixed_before(id_digests(cands), W0).tolist() == [x not in c for x in cands]
    keys = store.list(PREFIX)
    assert keys == sorted([f"{PREFIX}{rid(W0 + 5.5, 1)}/{p}.ids" for p in partitions(a)]
                          + [f"{PREFIX}{rid(W0 + 7200, 2)}/{p}.ids" for p in partitions(b)])
    head = json.loads(store.get(keys[0]).split(b"\n", 1)[0])
    assert head["at"] == W0 + 5.5 and head["fence"] is None and head["run"] == rid(W0 + 5.5, 1)
    assert seen.migrate() == 0
    assert seen.mixed_before(id_digests(cands), W0 + 6).tolist() == [x in b for x in cands]  # key time 5: 5 + 1 = 6


def test_a_migration_killed_after_any_write_is_finished_by_the_next(tmp_path: Path) -> None:
    records = {rid(W0 + 1.5, 1): (W0 + 1.5, ids("a", 6)), rid(W0 + 9, 2): (W0 + 9.0, ids("b", 4))}
    cands = id_digests(ids("a", 8) + ids("b", 8))
    clean = LocalStore(tmp_path / "clean")
    for run_id, (at, bs) in records.items():
        legacy(clean, run_id, at, bs)
    expected = SeenIds(clean, "demo").mixed_before(cands, W0).tolist()
    assert expected == [True] * 6 + [False] * 2 + [True] * 4 + [False] * 4
    final = {k: clean.get(k) for k in clean.list(PREFIX)}
    kill = 0
    while True:
        store = LocalStore(tmp_path / f"k{kill}")
        for run_id, (at, bs) in records.items():
            legacy(store, run_id, at, bs)
        try:
            SeenIds(Wrapped(store, after=kill), "demo").mixed_before(cands, W0)
            finished = True
        except Killed:
            finished = False
        assert SeenIds(store, "demo").mixed_before(cands, W0).tolist() == expected, f"killed after {kill} writes"
        assert {k: store.get(k) for k in store.list(PREFIX)} == final
        if finished:
            break
        kill += 1
    assert kill == len(final) + 2  # every object, then the two records deleted


def _damages(data: bytes) -> dict[str, bytes]:
    head, body = data.split(b"\n", 1)
    doc = json.loads(head)

    def with_head(**change: Any) -> bytes:
        return json.dumps({**doc, **change}).encode() + b"\n" + body

    first, rest = body[:16], body[16:]
    return {
        "no header": body, "not JSON": b"{" + head + b"\n" + body, "another format": with_head(format="ldp-seen/1"),
        "another run": with_head(run=rid(W0 + 1, 9)), "another partition": with_head(partition=doc["partition"] + 1),
        "a bool count": with_head(count=True), "a bad fence": with_head(fence="x"),
        "count too large": with_head(count=doc["count"] + 1), "truncated": data[:-1], "a byte more": data + b"\0",
        "unsorted": head + b"\n" + rest[:16] + first + rest[16:], "repeated": head + b"\n" + first + body[:-16],
        "another partition's digest": head + b"\n" + body[:-16] + b"\xff" * 16,
        "empty": b"", "header only": head,
    }


def test_damaged_objects_are_refused(store: Store) -> None:
    seen = SeenIds(store, "demo")
    run_id = rid(W0, 1)
    d = id_digests(ids("d", 200))
    cands = d[d.view(np.uint8).reshape(-1, 16)[:, 0] >> 4 == 4]  # all in partition 4: one object
    seen.record(run_id, W0, cands)
    key, = store.list(PREFIX)
    good = store.get(key)
    assert key.endswith("/4.ids") and json.loads(good.split(b"\n", 1)[0])["count"] >= 3
    for what, bad in _damages(good).items():
        store.put(key, bad)
        with pytest.raises(ValueError, match=f"{key}.*damaged"):
            seen.mixed_before(cands, W0)
            pytest.fail(what)
    store.put(key, good)
    assert seen.mixed_before(cands, W0).all()
    for stray, data in ((f"{PREFIX}{run_id}/g.ids", b""), (f"{PREFIX}notes.txt", b""),
                        (f"{PREFIX}not-a-run.json", b"{}")):
        store.put(stray, data)
        with pytest.raises(ValueError, match=stray):
            seen.mixed_before(cands, W0)
        store.delete(stray)
    old = rid(W0 + 1, 2)
    for bad in (b"[", b"[]", json.dumps({"run": rid(W0, 3), "at": W0, "ids": []}).encode(),
                json.dumps({"run": old, "at": "now", "ids": []}).encode(),
                json.dumps({"run": old, "at": W0 + 1, "ids": [1]}).encode()):
        legacy_key = f"{PREFIX}{old}.json"
        store.put(legacy_key, bad)
        with pytest.raises(ValueError, match=legacy_key):
            seen.mixed_before(cands, W0)
    assert store.exists(legacy_key)  # refused, not deleted


def test_digests_ending_in_zero_bytes_are_exact(store: Store) -> None:
    z = b"\0"
    kept = digests_of(z * 16, b"\x30" + z * 15, b"\x30" + z * 14 + b"\x01" + z * 0, b"\x3f" + b"\x00\x01" + z * 13)
    near = digests_of(z * 15 + b"\x01", b"\x30" + z * 14 + b"\x02", b"\x30" + z * 13 + b"\x01" + z, b"\x3f" + z * 15)
    assert all(len(bytes(x)) == 16 for x in kept)
    seen = SeenIds(store, "demo")
    seen.record(rid(W0), W0, kept)
    assert [k[len(PREFIX) + len(rid(W0)) + 1:] for k in store.list(PREFIX)] == ["0.ids", "3.ids"]
    both = np.concatenate([kept, near, kept[::-1]])
    assert seen.mixed_before(both, W0).tolist() == [True] * 4 + [False] * 4 + [True] * 4
    assert first_copies(both).tolist() == [True] * 8 + [False] * 4
    real = _zero_ending_id()
    d = id_digests([real, real[:-1] + "x"])
    assert len(bytes(d[0])) == 16 and bytes(d[0]).endswith(b"\0\0")
    seen.record(rid(W0 + 5), W0 + 5, d[:1])
    assert seen.mixed_before(d, W0 + 5).tolist() == [True, False]


@functools.cache
def _zero_ending_id() -> str:
    """A batch id (32 hex digits, as clients send) whose digest ends in two zero bytes."""
    return next(i for i in (f"{n:032x}" for n in range(10**7))
                if hashlib.blake2b(i.encode(), digest_size=16, person=b"ldp-batch-id").digest().endswith(b"\0\0"))


def test_id_digests_and_first_copies() -> None:
    d = id_digests(["a1", "b2", "a1", "c3", "b2", "a1"])
    assert d.dtype == DIGEST_DTYPE and d.shape == (6,) and d.flags.writeable
    assert bytes(d[0]) == hashlib.blake2b(b"a1", digest_size=16, person=b"ldp-batch-id").digest()
    assert first_copies(d).tolist() == [True, True, False, True, False, False]
    assert first_copies(d[::-1]).tolist() == [True, True, True, False, False, False]
    assert first_copies(id_digests([])).shape == (0,)
    with pytest.raises(TypeError):
        id_digests([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        id_digests("one-id")
    with pytest.raises(TypeError):
        first_copies(np.frombuffer(d.tobytes(), "S16"))
    with pytest.raises(TypeError):
        first_copies(d.view(np.uint8))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=40))
def test_first_copies_equals_a_loop(values: list[int]) -> None:
    keys = [f"k{v}" for v in values]
    assert first_copies(id_digests(keys)).tolist() == [k not in keys[:i] for i, k in enumerate(keys)]


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    seen = SeenIds(LocalStore(tmp_path), "demo")
    d = id_digests(["x"])
    for run_id, at, fence in ((rid(W0), W0 + 1, None), (rid(W0), W0 - 0.1, None), ("run1", W0, None),
                              (rid(W0), W0, True), (rid(W0), W0, 1.5), (rid(W0), float("nan"), None)):
        with pytest.raises(ValueError):
            seen.record(run_id, at, d, fence)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        run_time("20241304T000000Z-00000000")
    assert run_time(rid(W0 + 59.9)) == W0 + 59
    for bad in (float("nan"), True, "1"):
        with pytest.raises(ValueError):
            seen.mixed_before(d, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            seen.prune(bad)  # type: ignore[arg-type]
    for app in ("a/b", "..", ""):
        with pytest.raises(ValueError):
            SeenIds(LocalStore(tmp_path), app)
    assert tmp_path.exists() and list(tmp_path.iterdir()) == []


def test_reads_ahead_at_most_io_threads() -> None:
    started, done, most = [0], [0], [0]
    lock = threading.Lock()

    def load(i: int) -> int:
        with lock:
            started[0] += 1
            most[0] = max(most[0], started[0] - done[0])
        time.sleep(0.001)
        return i

    out: Iterator[int] = seen_mod._stream(load, list(range(40)), 3)
    got = []
    for x in out:
        got.append(x)
        with lock:
            done[0] += 1
    assert got == list(range(40)) and most[0] <= 3 + 1


_POOL = [f"{i:032x}" for i in range(40)]


@settings(max_examples=80, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 40), st.floats(0, 0.999), st.lists(st.sampled_from(_POOL)),
                               st.booleans()), max_size=6),
       cands=st.lists(st.sampled_from(_POOL), max_size=30), since=st.floats(-5, 45), exclude=st.integers(-1, 5))
def test_mixed_before_equals_a_set_of_the_ids(runs: list[tuple[int, float, list[str], bool]], cands: list[str],
                                              since: float, exclude: int) -> None:
    """Any runs (some recorded in the earlier format), any candidates, ``since``, ``exclude_run``: the answer is that
    of a Python set of the ids of the runs selected; pruning at ``since`` changes nothing of it."""
    store = MemoryStore()
    seen = SeenIds(store, "demo", io_threads=3)  # type: ignore[arg-type]
    reference: set[str] = set()
    exclude_run = (None if exclude < 0 else rid(W0 + runs[exclude][0], exclude) if exclude < len(runs)
                   else rid(W0, 99))
    for n, (second, frac, batch_ids, old) in enumerate(runs):
        run_id, at = rid(W0 + second, n), W0 + second + frac
        if old:
            legacy(store, run_id, at, batch_ids)  # type: ignore[arg-type]
        else:
            seen.record(run_id, at, id_digests(batch_ids))
        if run_id != exclude_run and W0 + second + 1 > W0 + since:
            reference.update(batch_ids)
    d = id_digests(cands)
    got = seen.mixed_before(d, W0 + since, exclude_run=exclude_run)
    assert got.tolist() == [c in reference for c in cands]
    assert not any(k.endswith(".json") for k in store.list(PREFIX))
    seen.prune(W0 + since)
    assert seen.mixed_before(d, W0 + since, exclude_run=exclude_run).tolist() == got.tolist()


_DIGEST = st.tuples(st.sampled_from([0x00, 0x30, 0x3F, 0xF0]), st.integers(0, 3),
                    st.lists(st.sampled_from([0, 1, 0xFF]), min_size=8, max_size=8))
"""A digest over a tiny alphabet: its partition byte, the next 7 bytes 0 to 3 (big-endian), the last 8 bytes."""


@settings(max_examples=50, deadline=None)
@given(runs=st.lists(st.lists(_DIGEST, max_size=12), max_size=3), cands=st.lists(_DIGEST, max_size=20))
def test_digests_sharing_their_first_bytes_are_told_apart(runs: list[list[tuple[int, int, list[int]]]],
                                                          cands: list[tuple[int, int, list[int]]]) -> None:
    """Digests over a tiny alphabet — many share their first 8 bytes, many end in zero bytes — recorded and checked:
    the answer is that of a set of the 16-byte strings, and first copies those of a loop."""
    def raw(d: tuple[int, int, list[int]]) -> bytes:
        return bytes([d[0]]) + d[1].to_bytes(7, "big") + bytes(d[2])

    store = MemoryStore()
    seen = SeenIds(store, "demo", io_threads=2)  # type: ignore[arg-type]
    reference: set[bytes] = set()
    for n, digests in enumerate(runs):
        seen.record(rid(W0 + n, n), W0 + n, digests_of(*map(raw, digests)))
        reference.update(map(raw, digests))
    query = [raw(d) for d in cands]
    got = seen.mixed_before(digests_of(*query), W0)
    assert got.tolist() == [q in reference for q in query]
    assert first_copies(digests_of(*query)).tolist() == [q not in query[:i] for i, q in enumerate(query)]
