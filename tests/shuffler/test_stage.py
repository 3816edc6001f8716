"""The shuffler stage over a store (a local folder and a real S3-compatible server): replicas' chunks mixed per
window, each batch once across replicas and runs, nothing that links a report to its batch written, the anonymity
set recorded, windows not ready held, and a run killed after any store operation finished by the next run with the
same result."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ldp.shuffler import ChunkBatch, chunk_key, decode_chunk, encode_chunk, shuffle_app
from ldp.shuffler.stage import shuffler_lease
from ldp.spec import CollectionSpec
from ldp.storage import Store
from ldp.storage.local import LocalStore

DAY = 86400
W0 = 20000 * DAY  # a UTC day


SPEC = CollectionSpec.from_dict({
    "spec_version": 1, "name": "shuffler_tests", "window_seconds": DAY,
    "budget": {"per_window": 4.0, "lifetime": 400.0},
    "metrics": {m: {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 10**6},
                    "budget": {"per_report": 1.0, "per_window": 1.0, "lifetime": 100.0}} for m in "mn"}})
"""The spec of these tests' lines: two metrics of one report per device and window (so devices = reports). Runs
are given it only where they say so (``SPECS``): without it, lines are checked for their shape only."""
S1 = SPEC.fingerprint
SPECS = {S1: SPEC}


def line(spec: str, metric: str, i: int) -> bytes:
    """A canonical envelope line (the shuffler checks every line's bytes)."""
    return json.dumps({"spec": spec, "metric": metric, "window": 20000, "report": {
        "v": 1, "protocol": "grr", "params": "a0f04db3fd8aa4ec", "payload": {"index": i}}}, separators=(",", ":")
        ).encode() + b"\n"


def batch(bid: str, n: int, window: int = W0, metric: str = "m") -> ChunkBatch:
    return ChunkBatch(bid, window, DAY, b"".join(line(S1, metric, hash((bid, i)) % 10**6) for i in range(n)))


def write(store: Store, replica: str, seq: int, *batches: ChunkBatch, at: float = W0 + 60) -> str:
    key = chunk_key("demo", replica, at, seq)
    store.put(key, encode_chunk(batches))
    return key


def outputs(store: Store) -> dict[str, bytes]:
    return {k: store.get(k) for k in store.list("apps/demo/segments/closed/")}



def test_replicas_are_mixed_per_window_each_batch_once(store: Store) -> None:
    a1, a2, b1 = batch("a1", 3), batch("a2", 5), batch("b1", 4, metric="n")
    write(store, "r1", 1, a1, a2)
    write(store, "r2", 1, b1, batch("a2", 5))  # a2 retried against r2 after a lost answer
    write(store, "r3", 7, batch("a1", 3))  # and a1 twice too
    run = shuffle_app(store, "demo", now=W0 + DAY + 400, min_reports=1)
    (name, data), = outputs(store).items()
    assert Counter(data.splitlines()) == Counter((a1.lines + a2.lines + b1.lines).splitlines())
    assert data != a1.lines + a2.lines + b1.lines or len(data.splitlines()) < 3  # reordered (12 lines)
    assert b"batch" not in data and b"r1" not in data  # nothing of the batch or the replica
    assert name.startswith("apps/demo/segments/closed/20241004T000000Z-") and name.endswith(".jsonl")
    assert run.duplicates == 2 and len(run.chunks) == 3
    (w,) = run.windows.values()
    assert w == {"segment": name, "reports": 12, "by_metric": {f"{S1}/m": 8, f"{S1}/n": 4}, "batches": 3,
                 "replicas": 2, "lines": {"unverified": 12}}
    assert store.list("apps/demo/incoming/") == []
    rec = json.loads(store.get(f"apps/demo/shuffler/runs/{run.run_id}.json"))
    assert rec["state"] == "closed" and rec["anonymity"] == run.windows and rec["duplicates"] == 2


def test_a_window_is_held_until_ready_and_mixed_whole(store: Store) -> None:
    write(store, "r1", 1, batch("x", 2))
    write(store, "r1", 2, batch("y", 2), batch("z", 1, window=W0 + DAY), at=W0 + DAY - 1)  # spans two windows
    write(store, "r2", 1, batch("v", 2, window=W0 + DAY), at=W0 + DAY + 10)
    first = shuffle_app(store, "demo", now=W0 + DAY + 400, min_reports=1)  # day 0 ready, but a chunk also holds day 1
    assert first.run_id is None and outputs(store) == {} and first.held == {str(W0): 2, str(W0 + DAY): 2}
    second = shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, min_reports=1)
    assert sorted(w["reports"] for w in second.windows.values()) == [3, 4]
    assert store.list("apps/demo/incoming/") == []


def test_a_retry_after_its_batch_was_mixed_is_dropped(store: Store) -> None:
    write(store, "r1", 1, batch("a", 3))
    shuffle_app(store, "demo", now=W0 + DAY + 400, min_reports=1)
    write(store, "r2", 1, batch("a", 3), batch("b", 2, window=W0 + DAY), at=W0 + DAY + 5)  # a, late, elsewhere
    run = shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, min_reports=1)
    assert run.duplicates == 1 and sorted(w["reports"] for w in run.windows.values()) == [0, 2]  # day 0: nothing new
    assert sum(len(d.splitlines()) for d in outputs(store).values()) == 5


def test_keep_originals_moves_the_chunks(store: Store) -> None:
    key = write(store, "r1", 1, batch("a", 1))
    shuffle_app(store, "demo", now=W0 + DAY + 400, keep_originals=True, min_reports=1)
    assert store.list("apps/demo/incoming/") == []
    assert store.list("apps/demo/shuffler/consumed/") == ["apps/demo/shuffler/consumed/"
                                                          + key.split("/incoming/")[1]]
    assert store.list("apps/demo/consumed/") == []  # never beside the segments (what analysts read)


class Killed(Exception):
    pass


class Dying:
    """A store that dies (raises) at its ``after``-th write or delete, as a process killed there would stop."""

    def __init__(self, inner: Store, after: int) -> None:
        import threading

        self.inner, self.after, self.url = inner, after, inner.url
        self.lock = threading.Lock()  # the shuffler deletes from several threads

    def _tick(self) -> None:
        with self.lock:
            self.after -= 1
            dead = self.after < 0
        if dead:
            raise Killed()

    def put(self, key: str, data: bytes) -> None:
        self._tick()
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._tick()
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        self._tick()
        self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def scenario(store: Store) -> Counter[bytes]:
    write(store, "r1", 1, batch("a", 3), batch("b", 2))
    write(store, "r2", 1, batch("b", 2), batch("c", 4))
    write(store, "r2", 2, batch("d", 1, window=W0 + DAY), at=W0 + DAY + 1)
    return Counter((batch("a", 3).lines + batch("b", 2).lines + batch("c", 4).lines + batch("d", 1).lines)
                   .splitlines())


def test_killed_after_any_store_operation_the_next_run_finishes_the_same(tmp_path: Path) -> None:
    """Every kill point of a run over two windows: the next run leaves exactly the clean run's reports, once each,
    no chunk, and one anonymity set per window."""
    kill = 0
    while True:
        store = LocalStore(tmp_path / f"k{kill}")
        expected = scenario(store)
        try:
            shuffle_app(Dying(store, kill), "demo", now=W0 + 2 * DAY + 400,  # type: ignore[arg-type]
                        lease=shuffler_lease(store, "demo"), min_reports=1)  # the run's operations die, not the lease's
            finished = True
        except Killed:
            finished = False
        again = shuffle_app(store, "demo", now=W0 + 2 * DAY + 500, min_reports=1)
        got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
        assert got == expected, f"killed after {kill} operations"
        assert store.list("apps/demo/incoming/") == []
        runs = [json.loads(store.get(k)) for k in store.list("apps/demo/shuffler/runs/")]
        assert [r["state"] for r in runs] == ["closed"] and len(runs[0]["anonymity"]) == 2
        assert sum(w["reports"] for w in runs[0]["anonymity"].values()) == sum(expected.values())
        assert runs[0]["duplicates"] == 1 and again.resumed == ([] if finished or kill == 0 else [runs[0]["id"]])
        if finished:
            break
        kill += 1
    # the record, two segments, the ids (one object per hash partition of the 4 ids), the record done, three
    # deletions, the record closed
    assert kill == 12


_LINE = st.text(st.characters(exclude_characters="\n", exclude_categories=["Cs"]), max_size=20)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.from_regex(r"[A-Za-z0-9._~-]{1,20}", fullmatch=True), st.integers(0, 10**11),
                          st.integers(1, 10**8), st.lists(_LINE, max_size=5)), max_size=5))
def test_chunks_round_trip(items: list[tuple[str, int, int, list[str]]]) -> None:
    """Any lines (a '#' at the start, '\r', any text but a newline) come back as written."""
    batches = [ChunkBatch(i, w, n, "".join(x + "\n" for x in lines).encode()) for i, w, n, lines in items]
    assert decode_chunk(encode_chunk(batches)) == batches


@pytest.mark.parametrize("data", [b"x\n", b"#batch a 1 1 2\n{}\n", b"#batch a 1 1 1\n{}\n#batch b 1 1 1\n",
                                  b"#batch a b 1 1\n{}\n", b"#batch a 1 1 1\n{}", b"#batch a 1 1 0\n{}\n"])
def test_damaged_chunks_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="chunk"):
        decode_chunk(data, "chunk")


def test_a_window_below_min_reports_is_held_then_released_or_withheld(store: Store) -> None:
    """Too few reports: held (chunks kept) while late chunks may come; enough later: released whole; still too few
    past the hold: withheld for good — chunks removed, nothing written, the reason recorded."""
    write(store, "r1", 1, batch("a", 2), batch("b", 1))
    write(store, "r2", 1, batch("a", 2))  # a retry: counted once
    first = shuffle_app(store, "demo", now=W0 + DAY + 400, min_reports=5, specs=SPECS)
    assert first.run_id is None and first.held == {str(W0): 3} and outputs(store) == {}
    write(store, "r2", 2, batch("c", 2), at=W0 + DAY + 100)  # late, within the window's arrival time
    second = shuffle_app(store, "demo", now=W0 + DAY + 500, min_reports=5, specs=SPECS)
    assert [w["reports"] for w in second.windows.values()] == [5] and len(outputs(store)) == 1
    write(store, "r1", 2, batch("d", 1, window=W0 + DAY), at=W0 + 2 * DAY - 5)
    held = shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, min_reports=5, hold_seconds=DAY, specs=SPECS)
    assert held.run_id is None and held.held == {str(W0 + DAY): 1}
    gone = shuffle_app(store, "demo", now=W0 + 3 * DAY + 400, min_reports=5, hold_seconds=DAY, specs=SPECS)
    (w,) = gone.windows.values()
    assert w["segment"] is None and w["reports"] == 1 and "min_reports = 5" in w["withheld"]
    assert len(outputs(store)) == 1 and store.list("apps/demo/incoming/") == []


def test_old_id_records_are_pruned(store: Store) -> None:
    write(store, "r1", 1, batch("a", 1))
    shuffle_app(store, "demo", now=W0 + DAY + 400, dedup_seconds=DAY, min_reports=1)
    assert len(store.list("apps/demo/shuffler/seen/")) == 1
    shuffle_app(store, "demo", now=W0 + 2 * DAY + 401, dedup_seconds=DAY,
                min_reports=1)  # still within twice the horizon
    assert len(store.list("apps/demo/shuffler/seen/")) == 1
    shuffle_app(store, "demo", now=W0 + 4 * DAY, dedup_seconds=DAY, min_reports=1)
    assert store.list("apps/demo/shuffler/seen/") == []


def test_bad_parameters_are_refused(store: Store) -> None:
    for kwargs in ({"grace_seconds": -1}, {"dedup_seconds": 0}, {"hold_seconds": -1}, {"min_reports": -1},
                   {"min_reports": True}, {"min_reports": 2.5}):
        with pytest.raises(ValueError):
            shuffle_app(store, "demo", now=W0, **kwargs)  # type: ignore[arg-type]


class Writing:
    """A store on which a replica writes one more chunk at every step of a shuffler's run (its commits go on while
    the shuffler runs, and a replica killed mid-write leaves no object: a chunk is one PUT)."""

    def __init__(self, inner: Store) -> None:
        import threading

        self.inner, self.written = inner, Counter[bytes]()
        self.seq, self.lock = 100, threading.Lock()  # the shuffler deletes from several threads

    def _replica_commits(self) -> None:
        with self.lock:
            self.seq += 1
            late = batch(f"late{self.seq}", 2, window=W0 + 5 * DAY)  # a window not ended at the run's time
            write(self.inner, "r3", self.seq, late, at=W0 + 5 * DAY + 1)
            self.written.update(late.lines.splitlines())

    def create(self, key: str, data: bytes) -> bool:
        self._replica_commits()
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        self._replica_commits()
        self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_chunks_written_during_a_run_are_left_for_the_next(tmp_path: Path) -> None:
    """A replica committing while the shuffler runs: the run consumes only the chunks it planned; the new ones stay
    and the next run (their window ended) mixes them, each report once."""
    store = LocalStore(tmp_path / "s")
    expected = scenario(store)
    writing = Writing(store)
    shuffle_app(writing, "demo", now=W0 + 2 * DAY + 400, min_reports=1)  # type: ignore[arg-type]
    assert writing.written and len(store.list("apps/demo/incoming/")) == writing.seq - 100
    shuffle_app(store, "demo", now=W0 + 7 * DAY, min_reports=1)
    got = Counter(ln for data in outputs(store).values() for ln in data.splitlines())
    assert got == expected + writing.written and store.list("apps/demo/incoming/") == []
