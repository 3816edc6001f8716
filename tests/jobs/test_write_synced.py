"""``ldp.jobs.store.write_synced``: the compiled helper (``ldp/jobs/_synckernel.c``) and the Python path write the
same bytes, fsync, stop at the same failure, and run signal handlers while blocked, as ``os.write`` does."""

from __future__ import annotations

import errno
import os
import signal
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ldp.jobs import store
from ldp.jobs.store import write_synced

PATHS = [False, pytest.param(True, marks=pytest.mark.skipif(store._write_synced_compiled is None,
                                                           reason="the compiled helper is not built here"))]


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


@pytest.mark.parametrize("compiled", PATHS)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(chunks=st.lists(st.tuples(st.integers(0, 2), st.binary(max_size=3000)), min_size=1, max_size=6))
def test_every_byte_lands_in_its_file_in_order(tmp_path_factory: pytest.TempPathFactory, compiled: bool,
                                               chunks: list[tuple[int, bytes]]) -> None:
    folder = tmp_path_factory.mktemp("synced")
    fds = [_open(folder / f"f{i}") for i in range(3)]
    try:
        for i in range(0, len(chunks), 2):  # one or two pairs per call
            write_synced(*((fds[k], data) for k, data in chunks[i:i + 2]), compiled=compiled)
    finally:
        for fd in fds:
            os.close(fd)
    for i in range(3):
        assert (folder / f"f{i}").read_bytes() == b"".join(data for k, data in chunks if k == i)


@pytest.mark.parametrize("compiled", PATHS)
def test_the_first_failure_stops_the_call(tmp_path: Path, compiled: bool) -> None:
    """ENOSPC on /dev/full's write: the pairs after it are not written; a bad descriptor: EBADF."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    full = os.open("/dev/full", os.O_WRONLY)
    after = _open(tmp_path / "after")
    try:
        with pytest.raises(OSError) as failed:
            write_synced((full, b"x" * 10), (after, b"never"), compiled=compiled)
        assert failed.value.errno == errno.ENOSPC
        assert (tmp_path / "after").read_bytes() == b""
        write_synced((after, b"one"), compiled=compiled)
        with pytest.raises(OSError) as bad:
            write_synced((after, b"two"), (full, b"y"), compiled=compiled)
        assert bad.value.errno == errno.ENOSPC and (tmp_path / "after").read_bytes() == b"onetwo"
    finally:
        os.close(full)
        os.close(after)
    with pytest.raises(OSError) as closed:
        write_synced((after, b"z"), compiled=compiled)
    assert closed.value.errno == errno.EBADF


@pytest.mark.parametrize("compiled", PATHS)
def test_a_write_taking_part_of_the_bytes_is_continued_then_fsync_fails_on_a_pipe(compiled: bool) -> None:
    """A pipe takes at most its buffer per write: every byte arrives (read by another thread), then fsync, which a
    pipe refuses (EINVAL)."""
    r, w = os.pipe()
    data = os.urandom(1 << 20)
    got = bytearray()

    def drain() -> None:
        while chunk := os.read(r, 1 << 16):
            got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        with pytest.raises(OSError) as failed:
            write_synced((w, data), compiled=compiled)
        assert failed.value.errno == errno.EINVAL
    finally:
        os.close(w)
        reader.join()
        os.close(r)
    assert bytes(got) == data


class _Alarm(Exception):
    pass


@pytest.mark.parametrize("compiled", PATHS)
def test_a_signal_handler_runs_while_blocked_and_its_exception_is_raised(compiled: bool) -> None:
    """A write blocked on a full pipe (no reader): SIGALRM's handler runs (the GIL taken back for it) and its
    exception ends the call, as ``os.write`` does (PEP 475)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run in the main thread only")
    r, w = os.pipe()

    raised: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if not raised:  # once: a later alarm before the timer is stopped does nothing
            raised.append(signum)
            raise _Alarm

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)  # again every 50 ms until the call has ended
        with pytest.raises(_Alarm):
            write_synced((w, b"x" * (4 << 20)), compiled=compiled)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.close(w)
        os.close(r)


def test_bad_arguments_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    if store._write_synced_compiled is None:
        pytest.skip("the compiled helper is not built here")
    kernel = store._write_synced_compiled
    with pytest.raises(TypeError):
        kernel()
    with pytest.raises(TypeError):
        kernel(1)
    with pytest.raises(TypeError):
        kernel(*([1, b""] * 9))
    with pytest.raises(TypeError):
        kernel(1, "text is not bytes")
    with pytest.raises((TypeError, ValueError)):
        kernel("not a descriptor", b"")
    monkeypatch.setattr(store, "_write_synced_compiled", None)
    with pytest.raises(ValueError, match="not built"):
        write_synced((1, b""), compiled=True)
