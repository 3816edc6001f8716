"""A full disk never damages the journals (issue 56, item 5): a write that stops midway is cut back before the
next append, at every byte of a line, for the seen index and for an open segment's journal; the loaders take any
torn tail back to the last whole committed line and refuse a damaged line followed by others."""

from __future__ import annotations

import errno
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from ldp.ingest import journal as journal_module
from ldp.ingest.applog import AppLog, Batch
from ldp.ingest.config import Limits
from ldp.ingest.journal import SeenIndex, SegmentJournal, dump_lines, read_lines
from ldp.ingest.upload import BatchCounts

HORIZON, GRANULARITY = 10**9, 86400.0


@pytest.fixture(scope="module", autouse=True)
def _no_real_fsync() -> Iterator[None]:
    """``os.fsync`` does nothing here (an fsync that fails is still :class:`_FullDisk`'s to fake): these tests read
    back what a write, a cut or a load left in the file, in this process (from the page cache), and never depend on
    a flush to the device; their thousands of real fsyncs were half of their time."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", lambda fd: None)
        yield


class _FullDisk:
    """``os`` on a disk with ``space`` bytes left (``None``: room enough). A write takes what still fits and says so
    (a short write), the next one raises ``ENOSPC``, as a real full disk does; with ``raise_after_writing`` the write
    that fills it raises at once, its bytes written all the same. ``ftruncate`` needs no space (it fails only
    ``fail_truncate`` times, as on a dying disk); ``fsync`` and ``utime`` fail ``fail_fsync``/``fail_utime`` times."""

    def __init__(self) -> None:
        self.space: int | None = None
        self.raise_after_writing = False
        self.fail_truncate = self.fail_fsync = self.fail_utime = 0

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.space is None:
            return os.write(fd, data)
        if self.space == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = os.write(fd, bytes(memoryview(data)[:self.space]))
        self.space -= n
        if self.raise_after_writing and n < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return n

    def ftruncate(self, fd: int, size: int) -> None:
        if self.fail_truncate:
            self.fail_truncate -= 1
            raise OSError(errno.EIO, "Input/output error")
        os.ftruncate(fd, size)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync:
            self.fail_fsync -= 1
            raise OSError(errno.EIO, "Input/output error")
        os.fsync(fd)

    def utime(self, *args: Any, **kwargs: Any) -> None:
        if self.fail_utime:
            self.fail_utime -= 1
            raise OSError(errno.EIO, "Input/output error")
        os.utime(*args, **kwargs)


def _open_through(disk: _FullDisk) -> Callable[..., Any]:
    """``open`` whose files opened for appending write through ``disk`` (an append may go through a buffered file
    as well as through ``os``: the disk is full for both, so the tests pin the behaviour, not the calls)."""

    class Raw(io.FileIO):
        def write(self, b: Any) -> int:
            return disk.write(self.fileno(), b)

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "a" not in mode:
            return open(file, mode, *args, **kwargs)
        return io.BufferedWriter(Raw(file, "a"))

    return fake_open


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> _FullDisk:
    fake = _FullDisk()
    for where in ("ldp.ingest.journal.os", "ldp.ingest.linefile.os", "ldp.ingest.applog.os",
                  "ldp.jobs.store.os"):
        monkeypatch.setattr(where, fake)
    monkeypatch.setattr("ldp.jobs.store._write_synced_compiled", None)  # the faked os: the Python path
    monkeypatch.setattr(journal_module, "open", _open_through(fake), raising=False)
    return fake


def _entries(prefix: str, n: int, w: float = 0.0) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "end": 10 * (i + 1), "lines": 2, "accepted": 2, "rejected": {}, "bytes": 10,
             "w": w} for i in range(n)]


def _seen(path: Path) -> SeenIndex:
    seen = SeenIndex(path, HORIZON, GRANULARITY)
    assert seen.load() == 0  # nothing torn: our appends leave whole lines only
    return seen


def _group_bytes(folder: Path) -> int:
    """The bytes ``add_closed("c2", _entries("b", 3))`` appends (its lines are shuffled, their length is not)."""
    seen = _seen(folder / "measure.jsonl")
    seen.add_closed("c2", _entries("b", 3))
    return seen.path.stat().st_size


def _journal_bytes(folder: Path, body: bytes) -> int:
    """The bytes the journal lines of batches ``b`` and ``c`` take, after batch ``a``."""
    log = AppLog(folder, Limits())
    log.recover()
    log.commit([_batch("a", body)])
    assert log._journal is not None
    before = log._journal.size
    log.commit([_batch("b", body), _batch("c", body)])
    size = log._journal.size - before
    log.close()
    return size


def _batch(batch_id: str, body: bytes) -> Batch:
    lines = body.count(b"\n")
    return Batch("demo", batch_id, body, BatchCounts(lines, lines), lambda result: None)


@pytest.mark.parametrize("raise_after_writing", [False, True], ids=["short-write", "raise-after-writing"])
def test_seen_index_a_failed_append_at_every_byte_is_cut_back(tmp_path: Path, disk: _FullDisk,
                                                              raise_after_writing: bool) -> None:
    """The disk fills ``k`` bytes into a closed segment's group, for every ``k``: the file is back to its size
    before at once; the retry and the next group append after whole lines; a reload finds every group once and
    nothing torn."""
    disk.raise_after_writing = raise_after_writing
    size = _group_bytes(tmp_path)
    for k in range(size):
        path = tmp_path / f"{k}" / "seen.jsonl"
        seen = _seen(path)
        seen.add_closed("c1", _entries("a", 2))
        before = path.stat().st_size
        disk.space = k
        with pytest.raises(OSError):
            seen.add_closed("c2", _entries("b", 3))
        assert path.stat().st_size == before, f"{k} bytes of a failed append left in front of the next one"
        assert "c2" not in seen.closed and "b0" not in seen.index
        disk.space = None  # the disk frees up; the close is tried again, then the next one comes
        seen.add_closed("c2", _entries("b", 3))
        seen.add_closed("c3", _entries("c", 1))
        again = _seen(path)
        assert again.closed == {"c1", "c2", "c3"} and set(again.index) == {"a0", "a1", "b0", "b1", "b2", "c0"}
        assert again.stats.batches == 6 and again.stats.lines == 12 and again.entries == 6


@pytest.mark.parametrize("raise_after_writing", [False, True], ids=["short-write", "raise-after-writing"])
def test_segment_journal_a_failed_mark_at_every_byte_is_cut_back(tmp_path: Path, disk: _FullDisk,
                                                                 raise_after_writing: bool) -> None:
    """``mark_closed`` stopped ``k`` bytes in, for every ``k``, then tried again: the journal reloads whole, its
    batches and the closed name once."""
    disk.raise_after_writing = raise_after_writing
    line = len(dump_lines([{"closed_as": "20250101-000001.jsonl"}]))
    for k in range(line):
        path = tmp_path / f"{k}.jsonl"
        journal = SegmentJournal(path)
        journal.open()
        journal.append(_entries("a", 2))
        journal.close()
        before = path.stat().st_size
        disk.space = k
        with pytest.raises(OSError):
            journal.mark_closed("20250101-000001.jsonl")
        assert path.stat().st_size == before, f"{k} bytes of a failed append left in front of the next one"
        disk.space = None
        journal.mark_closed("20250101-000001.jsonl")
        again = SegmentJournal(path)
        assert again.load() == 0
        assert again.entries == _entries("a", 2) and again.closed_as == "20250101-000001.jsonl"


def test_segment_journal_a_failed_append_at_every_byte_is_undone(tmp_path: Path, disk: _FullDisk) -> None:
    """A group of batches whose journal lines stop ``k`` bytes in (the segment's bytes all written), for every
    ``k``: the commit is answered with the error, the retry under the same ids stores them once, and the journal
    reloads whole, each batch once."""
    body = b"one\ntwo\n"
    for k in range(_journal_bytes(tmp_path / "measure", body)):
        log = AppLog(tmp_path / f"{k}", Limits())
        log.recover()
        log.commit([_batch("a", body)])
        assert log._journal is not None
        before = log._journal.size
        disk.space = len(body) * 2 + k
        with pytest.raises(OSError):
            log.commit([_batch("b", body), _batch("c", body)])
        assert log.damaged is None and log._journal.size == before  # cut back at once (ftruncate needs no space)
        disk.space = None
        answers = log.commit([_batch("b", body), _batch("c", body)])
        assert [stored.duplicate for _, stored in answers] == [False, False]
        log.commit([_batch("d", body)])
        again = SegmentJournal(log._journal.path)
        assert again.load() == 0
        assert [e["id"] for e in again.entries] == ["a", "b", "c", "d"]
        assert (log.open_dir / log._name).read_bytes() == body * 4
        log.close()


def test_when_the_cut_fails_nothing_is_appended_until_it_works(tmp_path: Path, disk: _FullDisk) -> None:
    """The write stops midway and the cut back fails, twice: the next append is refused, the file unchanged (the
    torn bytes stay last, where a restart would cut them); once the cut works, the append follows whole lines."""
    path = tmp_path / "seen.jsonl"
    seen = _seen(path)
    seen.add_closed("c1", _entries("a", 2))
    before = path.stat().st_size
    disk.space, disk.fail_truncate = 17, 2
    with pytest.raises(OSError):
        seen.add_closed("c2", _entries("b", 3))
    disk.space = None
    assert path.stat().st_size == before + 17  # the torn bytes, last
    with pytest.raises(OSError):
        seen.add_closed("c2", _entries("b", 3))  # the cut fails again: nothing appended
    assert path.stat().st_size == before + 17
    seen.add_closed("c2", _entries("b", 3))
    assert _seen(path).closed == {"c1", "c2"} and _seen(path).stats.batches == 5


def test_compaction_cuts_a_failed_append_first(tmp_path: Path, disk: _FullDisk) -> None:
    """Compaction after a failed append whose cut failed: the rewrite starts with the cut (whole lines only), it
    never reads or copies the torn bytes."""
    path = tmp_path / "seen.jsonl"
    seen = SeenIndex(path, 100.0, 10.0)
    seen.load()
    seen.add_closed("old", _entries("a", 3, w=0.0))
    seen.add_closed("new", _entries("b", 1, w=10_000.0))
    disk.space, disk.fail_truncate = 25, 1
    with pytest.raises(OSError):
        seen.add_closed("next", _entries("c", 2, w=10_000.0))
    disk.space = None
    assert seen.compact(10_050.0, min_dead=1)
    seen.add_closed("next", _entries("c", 2, w=10_000.0))
    again = SeenIndex(path, 100.0, 10.0)
    assert again.load() == 0
    assert set(again.index) == {"b0", "c0", "c1"} and again.stats.batches == 6 and again.stats.compacted == 3


def test_a_group_durable_before_a_later_step_fails_is_not_appended_twice(tmp_path: Path, disk: _FullDisk) -> None:
    """The group is appended and fsynced, then dating the file fails: the index has taken the group (the caller's
    retry sees it closed and appends nothing), so its sums are counted once."""
    path = tmp_path / "seen.jsonl"
    seen = _seen(path)
    disk.fail_utime = 1
    with pytest.raises(OSError):
        seen.add_closed("c1", _entries("a", 2))
    assert "c1" in seen.closed and seen.stats.batches == 2
    assert _seen(path).stats.batches == 2


# -- the loaders: any torn tail is cut to the last committed line, a damaged line followed by others refused ------
_ID = st.builds(lambda i, n, w: {"id": f"b{i}", "n": n, "w": float(w)}, st.integers(0, 10**6), st.integers(0, 99),
                st.integers(0, 10**6))
_SUM = st.builds(lambda b, w: {"sum": {"batches": b, "lines": b, "accepted": b, "rejected": {}, "bytes": b,
                                       "rl": 0, "ru": 0, "rc": 0, "w": float(w)}, "w": float(w)},
                 st.integers(0, 99), st.integers(0, 10**6))
_GROUP = st.builds(lambda ids, s, name: [*ids, s, {"closed": f"s{name}.jsonl"}], st.lists(_ID, max_size=4), _SUM,
                   st.integers(0, 999))
_SEEN_DOCS = st.builds(lambda groups, tail: [d for g in groups for d in g] + tail, st.lists(_GROUP, max_size=4),
                       st.lists(_ID, max_size=3))  # ids after the last marker: a group never committed
_GARBAGE = st.lists(st.one_of(st.sampled_from([b"\r", b"{", b"}", b'"', b",", b":", b"1", b" ", b"\x00", b"\xff"]),
                              st.binary(max_size=8)), max_size=10).map(b"".join).filter(lambda b: b"\n" not in b)
"""Bytes a torn write or a dying disk may leave, with no newline: any, and the bytes of JSON and of line breaks."""


def _is_seen_commit(d: dict[str, Any]) -> bool:
    return "closed" in d or d.get("base") is True


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hypothesis examples' folder: each example writes the files it reads (whole, over the last one's)."""
    return tmp_path_factory.mktemp("examples")


def _committed(docs: list[dict[str, Any]], cut_at: int, is_commit: Callable[[dict[str, Any]], bool]
               ) -> tuple[list[dict[str, Any]], int]:
    """The docs whose lines lie whole in the first ``cut_at`` bytes, up to the last commit, and their bytes."""
    taken: list[dict[str, Any]] = []
    out: tuple[list[dict[str, Any]], int] = ([], 0)
    pos = 0
    for d in docs:
        pos += len(dump_lines([d]))
        if pos > cut_at:
            break
        taken.append(d)
        if is_commit(d):
            out = (list(taken), pos)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SEEN_DOCS, st.data(), _GARBAGE)
def test_any_torn_tail_loads_as_the_committed_prefix(scratch: Path, docs: list[dict[str, Any]], data: st.DataObject,
                                                     garbage: bytes) -> None:
    """Any prefix of a valid seen index, plus any bytes without a newline: it loads as its committed lines (the
    file cut back to them, fsynced); the same through :meth:`SeenIndex.load`, and for a segment journal (where
    every line commits)."""
    content = dump_lines(docs)
    cut_at = data.draw(st.integers(0, len(content)), label="cut_at")
    torn = content[:cut_at] + garbage
    want, size = _committed(docs, cut_at, _is_seen_commit)
    d = scratch  # each example writes every file it reads (a folder per example: a third of its time)
    path = Path(d) / "seen.jsonl"
    path.write_bytes(torn)
    assert read_lines(path, _is_seen_commit) == (want, len(torn) - size)
    assert path.read_bytes() == content[:size]
    path.write_bytes(torn)
    seen = SeenIndex(path, HORIZON, GRANULARITY)
    assert seen.load() == len(torn) - size
    assert seen.closed == {x["closed"] for x in want if "closed" in x}
    assert set(seen.index) == {x["id"] for x in want if "id" in x}
    assert path.read_bytes() == content[:size]

    entries = [{"id": x["id"], "end": i, "lines": 1, "accepted": 1, "rejected": {}, "bytes": 1, "w": 0.0}
               for i, x in enumerate(docs) if "id" in x]
    content = dump_lines(entries)
    cut_at = min(cut_at, len(content))
    want, size = _committed(entries, cut_at, lambda _: True)
    path = Path(d) / "20250101T000000Z-000001.jsonl"
    path.write_bytes(content[:cut_at] + garbage)
    journal = SegmentJournal(path)
    assert journal.load() == cut_at + len(garbage) - size
    assert journal.entries == want and path.read_bytes() == content[:size]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SEEN_DOCS, st.data(), _GARBAGE, st.lists(_GROUP, min_size=1, max_size=2))
def test_a_damaged_line_followed_by_others_is_refused(scratch: Path, docs: list[dict[str, Any]],
                                                      data: st.DataObject, garbage: bytes,
                                                      after: list[list[dict[str, Any]]]) -> None:
    """Bytes that are not a JSON object, ended by a newline and followed by good lines, wherever they stand (in a
    line or between two): refused, the file left as it is. Our appends never produce it: it is real damage."""
    content = dump_lines(docs)
    cut_at = data.draw(st.integers(0, len(content)), label="cut_at")
    line = content[:cut_at].rsplit(b"\n", 1)[-1] + garbage
    try:
        assume(not isinstance(json.loads(line), dict))
    except ValueError:
        pass
    damaged = content[:cut_at] + garbage + b"\n" + dump_lines([d for g in after for d in g])
    d = scratch  # each example writes every file it reads (a folder per example: a third of its time)
    path = Path(d) / "seen.jsonl"
    path.write_bytes(damaged)
    with pytest.raises(RuntimeError, match="is damaged"):
        read_lines(path, _is_seen_commit)
    with pytest.raises(RuntimeError, match="is damaged"):
        SeenIndex(path, HORIZON, GRANULARITY).load()
    with pytest.raises(RuntimeError, match="is damaged"):
        SegmentJournal(path).load()
    assert path.read_bytes() == damaged
