"""The close worker (``ldp.ingest.closer``): the shuffled copy of a closing segment, written in slices in another
process, holds the same lines as the close before it (the same bytes for the same keys); a worker that dies
mid-close, a failed file operation and a worker left running by a killed server change nothing that is stored; the
worker ends with the server."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.ingest import closer
from ldp.ingest.applog import AppLog, Batch
from ldp.ingest.closer import PartWriter, write_part
from ldp.ingest.config import Limits
from ldp.ingest.journal import SEEN
from ldp.ingest.segments import SegmentWriter
from ldp.ingest.upload import BatchCounts
from ldp.pipeline import shuffle
from ldp.pipeline.shuffle import shuffle_lines

pytestmark = pytest.mark.skipif(PartWriter().in_process, reason="no descriptor passing on this platform")

DAY = 86400.0
T0 = 20000 * DAY + 3 * 3600 + 17.25


@pytest.fixture(scope="module")
def parts() -> Iterator[PartWriter]:
    writer = PartWriter()
    yield writer
    writer.stop()


def lines(data: bytes | bytearray) -> Counter[bytes]:
    return Counter(bytes(data).splitlines(keepends=True))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:  # a zombie is gone for our purpose
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between the two looks
        return False


def wait_for(cond, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@settings(max_examples=40, deadline=None)
@given(body=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=80),
       extra=st.binary(max_size=20))
def test_the_worker_writes_the_lines_the_old_close_wrote(parts: PartWriter, tmp_path_factory: pytest.TempPathFactory,
                                                         body: list[bytes], extra: bytes) -> None:
    """Differential: the worker's part, the in-process part and the close before the worker (``shuffle_lines`` of
    the acknowledged bytes, written whole) hold the same multiset of lines: the acknowledged ones, never the bytes
    a failed write left after them."""
    tmp = tmp_path_factory.mktemp("diff")
    acked = b"".join(x + b"\n" for x in body)
    src = tmp / "seg.jsonl"
    src.write_bytes(acked + extra)
    parts(src, len(acked), tmp / ".w.part")
    write_part(src, len(acked), tmp / ".p.part")
    old = shuffle_lines(src.read_bytes()[:len(acked)])
    assert lines((tmp / ".w.part").read_bytes()) == lines((tmp / ".p.part").read_bytes()) == lines(old) \
        == lines(acked)


def test_the_worker_permutes_with_fresh_randomness(parts: PartWriter, tmp_path: Path) -> None:
    """400 lines: two closes of the same segment give different orders (equal with probability 1/400!), neither
    the arrival order."""
    src = tmp_path / "seg.jsonl"
    data = b"".join(b"%d\n" % i for i in range(400))
    src.write_bytes(data)
    parts(src, len(data), tmp_path / ".a.part")
    parts(src, len(data), tmp_path / ".b.part")
    a, b = (tmp_path / ".a.part").read_bytes(), (tmp_path / ".b.part").read_bytes()
    assert lines(a) == lines(b) == lines(data) and len({a, b, data}) == 3


def test_a_file_error_in_the_worker_is_raised_as_in_process(parts: PartWriter, tmp_path: Path) -> None:
    before = parts.fallbacks
    with pytest.raises(OSError) as info:
        parts(tmp_path / "missing.jsonl", 10, tmp_path / ".m.part")
    assert info.value.errno == errno.ENOENT
    (tmp_path / "torn.jsonl").write_bytes(b"a\nb")
    with pytest.raises(ValueError, match="newline"):
        parts(tmp_path / "torn.jsonl", 3, tmp_path / ".t.part")
    pid = parts.pid
    (tmp_path / "ok.jsonl").write_bytes(b"x\ny\n")
    parts(tmp_path / "ok.jsonl", 4, tmp_path / ".ok.part")  # the same worker goes on
    assert parts.pid == pid and parts.fallbacks == before
    assert lines((tmp_path / ".ok.part").read_bytes()) == lines(b"x\ny\n")


def test_a_worker_killed_mid_close_leaves_the_part_to_the_server(tmp_path: Path) -> None:
    """The worker is held in the middle of a job (its segment is a FIFO no one writes yet) and SIGKILLed: the
    server writes the part itself, into a new file, and the next close starts a new worker."""
    data = b"".join(b"line %d\n" % i for i in range(1000))
    fifo = tmp_path / "seg.fifo"
    os.mkfifo(fifo)
    part = tmp_path / ".s.part"
    writer = PartWriter()
    errors: list[BaseException] = []

    def close() -> None:
        try:
            writer(fifo, len(data), part)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=close, daemon=True)
    t.start()
    wait_for(lambda: writer.pid is not None and part.exists())
    first = os.open(part, os.O_RDONLY)  # held open: its inode number cannot be given to the new part
    pid = writer.pid
    assert pid is not None
    time.sleep(0.3)  # let it reach the open() of the FIFO (killed before it, the outcome is the same)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid))  # its end of the FIFO closed: the next reader is the server's
    with open(fifo, "wb") as fh:  # blocks until the server's own reader opens it
        fh.write(data)
    t.join(30)
    assert not t.is_alive() and not errors
    assert writer.fallbacks == 1 and writer.jobs == 0 and writer.pid is None
    assert os.fstat(first).st_nlink == 0 and part.stat().st_ino != os.fstat(first).st_ino
    os.close(first)
    assert lines(part.read_bytes()) == lines(data)
    src = tmp_path / "seg.jsonl"
    src.write_bytes(data)
    writer(src, len(data), tmp_path / ".n.part")
    assert writer.jobs == 1 and writer.pid not in (None, pid)
    writer.stop()


def test_a_worker_of_a_killed_server_cannot_touch_the_restarted_close(tmp_path: Path) -> None:
    """A server killed while its worker writes a part; the restarted server writes the part again (in-process, on
    recovery) while that orphan still runs: the orphan writes into the file it was given, no longer in
    ``closed/``, and the new part keeps exactly the segment's lines."""
    data = b"".join(b'{"n":%d}\n' % i for i in range(2000))
    fifo, part = tmp_path / "seg.fifo", tmp_path / ".s.part"
    os.mkfifo(fifo)
    orphan = PartWriter()
    t = threading.Thread(target=orphan, args=(fifo, len(data), part), daemon=True)
    t.start()
    wait_for(lambda: orphan.pid is not None and part.exists())
    src = tmp_path / "seg.jsonl"
    src.write_bytes(data)
    write_part(src, len(data), part)  # the restarted server's close
    with open(fifo, "wb") as fh:  # now the orphan reads other bytes and writes them to its file
        fh.write(b"X" * (len(data) - 1) + b"\n")
    t.join(30)
    assert orphan.jobs == 1 and lines(part.read_bytes()) == lines(data)
    orphan.stop()


def test_the_worker_ends_when_its_server_dies(tmp_path: Path) -> None:
    """A server SIGKILLed with its worker idle: the worker reads the end of its socket and exits."""
    code = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from ldp.ingest.closer import PartWriter
        src = Path({str(tmp_path / "seg.jsonl")!r})
        src.write_bytes(b"a\\nb\\n")
        w = PartWriter()
        w(src, 4, src.with_name(".seg.part"))
        print(w.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == -signal.SIGKILL, out.stderr
    pid = int(out.stdout)
    wait_for(lambda: not alive(pid), timeout=10)


def test_a_collector_closes_through_the_worker_and_stops_it(tmp_path: Path) -> None:
    """An AppLog closing through the worker (as under ``ldp serve``), the worker killed between closes: every
    acknowledged line stored once, the seen index as with in-process closes; the worker ends with ``stop``."""
    now = [T0]
    logs = {}
    for name in ("worker", "inproc"):
        log = AppLog(tmp_path / name, Limits(), clock=lambda: now[0])
        log.recover()
        logs[name] = log
    writer = PartWriter()
    logs["worker"].write_part = writer
    killed = None
    try:
        for k in range(6):
            for log in logs.values():
                for b in range(5):
                    body = b"".join(b'{"k":%d,"b":%d,"j":%d}\n' % (k, b, j) for j in range(7))
                    log.commit([Batch("demo", f"{k}-{b}", body, BatchCounts(7, 7), lambda r: None)])
                close = log.detach(force=True)
                assert close is not None
                close()
            if k == 2:
                killed = pid = writer.pid
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                # gone for the writer: reaped, not only a zombie (a process's threads may still be exiting then,
                # and until they are the kernel does not let it be waited for)
                wait_for(lambda: writer.pid is None)
            now[0] += 1.0
        assert writer.jobs == 6 and writer.fallbacks == 0 and writer.pid not in (None, killed)
        pid = writer.pid
    finally:  # a failure above must not leave a worker running into the next test
        writer.stop()
    assert pid is not None and not alive(pid)
    got = {}
    for name, log in logs.items():
        closed = sorted(log.closed_dir.glob("*.jsonl"))
        assert len(closed) == 6 and not list(log.closed_dir.glob(".*")) and not list(log.open_dir.iterdir())
        docs = [json.loads(x) for x in (log.journal_dir / SEEN).read_text().splitlines()]
        got[name] = (Counter(line for p in closed for line in p.read_bytes().splitlines()),
                     sorted(d["id"] for d in docs if "id" in d), [d["sum"] for d in docs if "sum" in d],
                     log.stats.to_dict())
        log.close()
    assert got["worker"] == got["inproc"]
    assert sum(got["worker"][0].values()) == 6 * 5 * 7 and max(got["worker"][0].values()) == 1


def test_a_worker_that_cannot_run_is_given_up_after_three_tries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A worker that exits at once (its ``ldp`` cannot be imported, say): each part is written in-process, and after
    three failures in a row no worker is started any more."""
    monkeypatch.setattr(closer, "_BOOT", "import sys; sys.exit(3)")
    src = tmp_path / "seg.jsonl"
    src.write_bytes(b"a\nb\nc\n")
    writer = PartWriter()
    for i in range(5):
        writer(src, 6, tmp_path / f".{i}.part")
        assert lines((tmp_path / f".{i}.part").read_bytes()) == lines(b"a\nb\nc\n")
        assert writer.in_process == (i >= 2) and writer.fallbacks == min(i + 1, 3) and writer.pid is None
    assert writer.jobs == 0


def test_the_collector_closes_rotated_segments_in_its_worker(tmp_path: Path) -> None:
    """Under ``SegmentWriter`` (``ldp serve``'s storage) a segment rotated by size is closed by the worker, on start
    and at shutdown in-process; ``close`` ends the worker; every line is stored once."""
    from test_ingest_segments import Results, config_for, submit_all

    config = config_for(tmp_path, segment_max_bytes=64)
    w = SegmentWriter(config)
    w.start()
    res = Results()
    bodies = [b"".join(b'{"b":%d,"j":%d}\n' % (b, j) for j in range(5)) for b in range(12)]
    submit_all(w, [res.batch(f"b{b}", body, 5) for b, body in enumerate(bodies)], res)
    wait_for(lambda: w.parts.jobs >= 1 and w.jobs.unfinished_tasks == 0)
    pid = w.parts.pid
    assert pid is not None and w.parts.fallbacks == 0
    w.close()
    assert not alive(pid) and w.parts.pid is None
    closed = (config.app_dir("demo") / "segments" / "closed").glob("*.jsonl")
    assert lines(b"".join(p.read_bytes() for p in closed)) == lines(b"".join(bodies))


class KeyStream:
    """A stand-in for ``os.urandom``: the bytes of one seeded stream, however they are asked for."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, n: int) -> bytes:
        return self.rng.bytes(n)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 2**64 - 1) | st.sampled_from([0, 2**63, 2**64 - 1, 2**56 - 1, 2**56]),
                     max_size=300),
       slice_bytes=st.sampled_from([8, 64, 256, 2**18]))
def test_the_key_order_in_steps_is_the_stable_argsort(keys: list[int], slice_bytes: int) -> None:
    """Grouping by the top byte and sorting each group gives ``np.argsort(kind="stable")`` exactly, ties and all."""
    arr = np.array(keys, dtype=np.uint64)
    with mock.patch.object(shuffle, "SLICE_BYTES", slice_bytes):
        assert shuffle.key_order(arr).tolist() == np.argsort(arr, kind="stable").tolist()


def test_the_key_order_of_many_keys_in_few_groups() -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**64 - 1, 100_000, dtype=np.uint64) >> np.uint64(4)  # top byte < 16: 16 groups
    keys[::7] = keys[0]
    pauses = []
    order = shuffle.key_order(keys, lambda: pauses.append(1))
    assert (order == np.argsort(keys, kind="stable")).all() and len(pauses) >= 3


@settings(max_examples=60, deadline=None)
@given(body=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=120),
       slice_bytes=st.sampled_from([8, 50, 2**18]), sync_bytes=st.sampled_from([1, 100, 2**20]),
       compiled=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_the_sliced_copy_is_byte_for_byte_the_old_one(tmp_path_factory: pytest.TempPathFactory, body: list[bytes],
                                                      slice_bytes: int, sync_bytes: int, compiled: bool,
                                                      seed: int) -> None:
    """Differential: with the same key stream, the part :func:`fill_part` writes (read, shuffled and written in
    slices, synced on the way) is the very bytes of ``shuffle_lines`` (the close before the worker)."""
    if compiled and shuffle.jsonl._linekernel is None:
        return
    tmp = tmp_path_factory.mktemp("sliced")
    data = b"".join(x + b"\n" for x in body)
    (tmp / "seg").write_bytes(data + b"torn")
    with mock.patch.object(shuffle.os, "urandom", KeyStream(seed)):
        want = bytes(shuffle_lines(data))
    pauses: list[int] = []
    with mock.patch.object(shuffle, "SLICE_BYTES", slice_bytes), mock.patch.object(shuffle, "SYNC_BYTES", sync_bytes), \
            mock.patch.object(closer, "SLICE_BYTES", slice_bytes), \
            mock.patch.object(shuffle.jsonl, "kernel_in_use", lambda: compiled), \
            mock.patch.object(shuffle.os, "urandom", KeyStream(seed)):
        fd = closer.create_part(tmp / ".p.part")
        try:
            closer.fill_part(tmp / "seg", len(data), fd, lambda: pauses.append(1))
        finally:
            os.close(fd)
    assert (tmp / ".p.part").read_bytes() == want
    assert len(pauses) >= len(data) // slice_bytes  # at least once per slice read


def test_an_empty_or_torn_segment_is_refused_or_empty_as_before(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    write_part(tmp_path / "empty", 0, tmp_path / ".e.part")
    assert (tmp_path / ".e.part").read_bytes() == b""
    (tmp_path / "short").write_bytes(b"a\nb\n")  # fewer bytes than journaled: what is there, as fh.read() gave
    write_part(tmp_path / "short", 10, tmp_path / ".s.part")
    assert lines((tmp_path / ".s.part").read_bytes()) == lines(b"a\nb\n")
    with pytest.raises(ValueError, match="newline"):
        write_part(tmp_path / "short", 3, tmp_path / ".t.part")
