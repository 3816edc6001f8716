"""The heavy half of a segment close — read the acknowledged bytes, permute the lines, write the copy, fsync it —
in a long-lived worker process, in short slices, out of the server's GIL and out of its way on the CPU and disk.

Closing an 8 MiB segment is 25–70 ms of work, three times a second at 200,000 reports/s, and with it p99 of an
upload went from ~6 to 12–22 ms (``simulations/bench_serve.py --mode latency`` on 2 cores). Three things held
the uploads back, each measured on its own: on the chores thread its numpy steps (the ``os.urandom`` keys, the
sort, the copy's buffer) held the GIL 1–5 ms at a time; any 30 ms burst of CPU in *another* process, three times
a second, costs the same (the scheduler lets it finish its slice before a woken server thread runs); and the 8 MiB
written and fsynced at once made the group commits' fsyncs wait behind it. So :class:`PartWriter` sends the job to
a worker process — the segment's path, how many bytes of it are acknowledged, the part file's descriptor — and
the chores thread waits on a socket, without the GIL; the worker reads, shuffles and writes a slice of about
256 KiB at a time with ``sched_yield`` between two (:func:`fill_part`), and ``fdatasync`` every MiB
(:func:`~ldp.pipeline.shuffle.write_shuffled`). Its priority is not lowered: a close is never starved.

**The close's guarantees stay the caller's** (:meth:`~ldp.ingest.applog.AppLog.finish_close`): the worker only
fills the part file, with the bytes :func:`write_part` writes in-process (the lines in a uniformly random order from
the OS CSPRNG: for the same keys, the order of :func:`~ldp.pipeline.shuffle.shuffle_lines`, byte for byte); the
journal's ``closed_as``, the rename, the seen index and the removals happen in the server, after the worker answered
that the part is fsynced, in the same order as before. The part is always a new file (:func:`create_part` removes a
previous one first) whose descriptor the server opens and passes: a worker left running by a server killed
mid-close can only write into a file no longer in ``closed/``, never into the copy a restarted server writes. The
worker exits when the server's end of the socket closes (its exit or :meth:`PartWriter.stop`). When the worker
cannot be started or dies during a job, that part is written again in-process (a new file again), so a close never
waits for a worker; the next close starts a new one, and after three failures in a row none is started any more.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ldp.pipeline.shuffle import SLICE_BYTES, write_shuffled

__all__ = ["write_part", "create_part", "fill_part", "PartWriter", "serve"]

logger = logging.getLogger(__name__)

_BOOT = ("import sys; sys.path[:] = __import__('json').loads(sys.argv[1]); "
         "from ldp.ingest.closer import serve; serve(int(sys.argv[2]))")
"""The worker's program: the server's ``sys.path`` (so it imports the same ``ldp``), then :func:`serve`."""

_RECV_BYTES = 1 << 16
_GIVE_UP = 3
"""Worker failures in a row (no part written by one between them) after which every part is written in-process."""


def create_part(part: Path) -> int:
    """A new, empty part file at ``part`` (a previous one removed first), opened for writing: its descriptor."""
    part.unlink(missing_ok=True)
    return os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)


def _yield() -> None:
    """Let a waiting thread of another process run first (where the platform can)."""
    if hasattr(os, "sched_yield"):
        os.sched_yield()


def fill_part(src: Path, end: int, fd: int, pause: Callable[[], None] = _yield) -> None:
    """Write the first ``end`` bytes of ``src`` (the acknowledged ones: a failed write may have left more), their
    lines shuffled (:func:`~ldp.pipeline.shuffle.write_shuffled`), to the empty file ``fd`` and fsync it; read,
    shuffled and written a slice at a time, ``pause`` (``sched_yield``) between two."""
    data = np.empty(end, dtype=np.uint8)
    got = 0
    with open(src, "rb", buffering=0) as fh:
        while got < end:
            n = fh.readinto(data.data[got:got + SLICE_BYTES])
            if not n:
                break
            got += n
            pause()
    write_shuffled(fd, data[:got], pause)
    os.fsync(fd)


def write_part(src: Path, end: int, part: Path) -> None:
    """In-process: the shuffled copy of the first ``end`` bytes of ``src`` at ``part``, fsynced."""
    fd = create_part(part)
    try:
        fill_part(src, end, fd)
    finally:
        os.close(fd)


def _error(reply: dict[str, Any]) -> Exception:
    """The exception the worker reported, as the in-process close would have raised it."""
    message = str(reply.get("message", "the close worker failed"))
    if reply.get("kind") == "OSError":
        errno = reply.get("errno")
        return OSError(errno, reply.get("strerror") or message) if errno is not None else OSError(message)
    if reply.get("kind") == "ValueError":
        return ValueError(message)
    return RuntimeError(f"the close worker failed: {reply.get('kind')}: {message}")


class PartWriter:
    """Writes part files (:func:`write_part`'s signature) in a worker process started on first use; thread-safe
    (one job at a time). ``in_process``: never start a worker (the platform has no descriptor passing, say)."""

    def __init__(self, in_process: bool = False) -> None:
        self.in_process = in_process or not hasattr(socket, "send_fds") or not sys.executable
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self.jobs = 0
        """Parts written by a worker."""
        self.fallbacks = 0
        """Parts written in-process because the worker could not start or died."""
        self._failures = 0

    @property
    def pid(self) -> int | None:
        """The worker's process id while one runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def __call__(self, src: Path, end: int, part: Path) -> None:
        """The shuffled copy of the first ``end`` bytes of ``src`` at ``part``, fsynced: by the worker, or
        in-process when it cannot be (an ``OSError`` of the file work is raised as the in-process close raises it)."""
        if self.in_process:
            write_part(src, end, part)
            return
        with self._lock:
            fd = create_part(part)
            try:
                died = self._job(src, end, fd)
            finally:
                os.close(fd)
            if died is None:
                self.jobs += 1
                self._failures = 0
                return
            logger.warning("the close worker failed (%s); writing %s in the server process", died, part.name)
            self._stop(kill=True)
            self.fallbacks += 1
            self._failures += 1
            if self._failures >= _GIVE_UP:
                logger.error("the close worker failed %d times in a row: segments are closed in the server process "
                             "from now on (uploads may wait behind each close)", self._failures)
                self.in_process = True
            write_part(src, end, part)  # a new file: whatever the worker wrote is in the one removed

    def _job(self, src: Path, end: int, fd: int) -> str | None:
        """Have the worker fill ``fd``: ``None`` when it did, why not when it could not be started or died (the
        error of its file work is raised)."""
        sock = self._start()
        if isinstance(sock, str):
            return sock
        msg = json.dumps({"src": os.fspath(src), "end": end}).encode() + b"\n"
        try:
            socket.send_fds(sock, [msg], [fd])
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = sock.recv(_RECV_BYTES)
                if not chunk:
                    return "its socket closed before it answered"
                buf += chunk
        except OSError as exc:  # EPIPE, ECONNRESET: it is gone
            return f"its socket failed: {exc.strerror or exc}"
        reply = json.loads(buf)
        if not reply.get("ok"):
            raise _error(reply)
        return None

    def _start(self) -> socket.socket | str:
        """The running worker's socket (a worker started when none runs), or why it cannot be started."""
        if self._sock is not None and self._proc is not None and self._proc.poll() is None:
            return self._sock
        self._stop(kill=True)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # -I: neither the current folder nor PYTHON* variables decide what it imports; sys.path is ours
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path), str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        except OSError as exc:
            ours.close()
            return f"it cannot be started: {exc.strerror or exc}"
        finally:
            theirs.close()
        self._sock = ours
        logger.info("close worker started (pid %d)", self._proc.pid)
        return ours

    def _stop(self, kill: bool = False, timeout: float = 10.0) -> None:
        if self._sock is not None:
            self._sock.close()  # the worker reads the end of its socket and exits
            self._sock = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self) -> None:
        """End the worker (after the job in progress, if any)."""
        with self._lock:
            self._stop()


def _read_job(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next job and its descriptors; ``None`` at the end of the socket."""
    buf, fds = b"", []
    while not buf.endswith(b"\n"):
        data, got, _, _ = socket.recv_fds(sock, _RECV_BYTES, 4)
        fds += got
        if not data:
            for fd in fds:
                os.close(fd)
            return None
        buf += data
    return json.loads(buf), fds


def serve(fd: int) -> None:
    """The worker's loop: fill the part file of each job from the socket ``fd`` and answer, until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the server's to handle; its close ends this loop
    sock = socket.socket(fileno=fd)
    while True:
        try:
            got = _read_job(sock)
        except OSError:
            return
        if got is None:
            return
        job, fds = got
        try:
            if len(fds) != 1:
                raise RuntimeError(f"a job comes with one descriptor, not {len(fds)}")
            fill_part(Path(job["src"]), int(job["end"]), fds[0])
            reply: dict[str, Any] = {"ok": True}
        except OSError as exc:
            reply = {"kind": "OSError", "errno": exc.errno, "strerror": exc.strerror, "message": str(exc)}
        except Exception as exc:  # noqa: BLE001  # reported to the server, which raises it there
            reply = {"kind": type(exc).__name__, "message": str(exc)}
        finally:
            for f in fds:
                os.close(f)
        try:
            sock.sendall(json.dumps(reply).encode() + b"\n")
        except OSError:
            return
