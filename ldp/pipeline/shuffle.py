"""The shuffler's two tools: a uniformly random order of a segment's lines from the OS CSPRNG, and the name and
time a closed segment shows (its arrival window, never finer).

Apple's ingestion (thesis 004, §5.2.1; Prochlo's Encode–Shuffle–Analyze) strips what ties a report to its sender
and permutes the records before anyone analyses them: then an analyst cannot link one device's reports to each
other by their order, and amplification by shuffling applies (:mod:`ldp.privacy.shuffle`)."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable

import numpy as np

from ldp.jobs import jsonl
from ldp.jobs.store import write_all

__all__ = ["shuffle_lines", "in_order", "closed_name", "KEY_BYTES", "SLICE_BYTES", "SYNC_BYTES", "random_keys",
           "key_order", "line_ends", "write_shuffled"]

KEY_BYTES = 8
"""Random bytes per line: lines are sorted by independent uniform 64-bit keys from ``os.urandom``. The order is
uniform among all n! orders but for ties, which have probability below n²/2⁶⁵ (3·10⁻⁹ for 500,000 lines)."""


def shuffle_lines(data: bytes) -> bytes | bytearray:
    """The lines of ``data`` (each ending in ``\\n``) in a uniformly random order, from the OS CSPRNG; the lines
    are copied in that order by the compiled kernel (``ldp/batch/_linekernel.c``, without the GIL) when it is
    built, else joined in Python."""
    if not data:
        return data
    if not data.endswith(b"\n"):
        raise ValueError("a segment ends with a newline")
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1  # exclusive, the newline included
    n = len(ends)
    keys = np.frombuffer(os.urandom(KEY_BYTES * n), dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    return in_order(data, np.concatenate(([0], ends[:-1])).astype(np.int64), ends, order)


def in_order(data: bytes | bytearray | np.ndarray, starts: np.ndarray, ends: np.ndarray, order: np.ndarray,
             compiled: bool | None = None) -> bytes | bytearray:
    """The lines ``data[starts[i]:ends[i]]`` for ``i`` in ``order``, one after the other (``compiled``: the
    kernel's copy into a new ``bytearray``, or Python's join; default: the kernel when in use)."""
    if jsonl.kernel_in_use() if compiled is None else compiled:
        out = bytearray(int((ends - starts).sum()))
        jsonl._linekernel.permute(data, starts.astype(np.int64), ends.astype(np.int64), order.astype(np.int64),
                                  len(order), out)
        return out  # not copied to bytes: 8 MiB would hold the GIL ~2 ms, the event loop waiting
    view = data.data if isinstance(data, np.ndarray) else memoryview(data)
    return b"".join([view[a:b] for a, b in zip(starts[order].tolist(), ends[order].tolist(), strict=True)])


SLICE_BYTES = 256 * 2**10
"""Bytes of a segment (or of its keys) one step of :func:`write_shuffled` handles before it pauses: a fraction of
a millisecond of work."""
SYNC_BYTES = 2**20
"""Bytes :func:`write_shuffled` writes between two ``fdatasync``: the disk gets the copy a slice at a time, and an
upload's fsync waits behind one slice, not behind 8 MiB."""


def _no_pause() -> None:
    return None


_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def random_keys(n: int, pause: Callable[[], None] = _no_pause) -> np.ndarray:
    """``n`` independent uniform 64-bit keys from ``os.urandom``, drawn :data:`SLICE_BYTES` at a time."""
    keys = np.empty(n, dtype=np.uint64)
    step = SLICE_BYTES // KEY_BYTES
    for i in range(0, n, step):
        m = min(step, n - i)
        keys[i:i + m] = np.frombuffer(os.urandom(KEY_BYTES * m), dtype=np.uint64)
        pause()
    return keys


def key_order(keys: np.ndarray, pause: Callable[[], None] = _no_pause) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, computed in short steps: the indices grouped by the keys' top byte (a
    counting sort), then each group sorted by the whole key."""
    if len(keys) <= SLICE_BYTES // KEY_BYTES:
        return np.argsort(keys, kind="stable")
    top = (keys >> np.uint64(56)).astype(np.uint8)
    grouped = np.argsort(top, kind="stable")  # a radix sort for 8-bit keys; within a group, in index order
    pause()
    bounds = np.concatenate(([0], np.cumsum(np.bincount(top, minlength=256))))
    order = np.empty(len(keys), dtype=np.int64)
    done = 0
    for b in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        idx = grouped[lo:hi]
        order[lo:hi] = idx[np.argsort(keys[idx], kind="stable")]
        done += hi - lo
        if done >= SLICE_BYTES // KEY_BYTES:
            pause()
            done = 0
    return order


def line_ends(data: np.ndarray, pause: Callable[[], None] = _no_pause) -> np.ndarray:
    """The end (exclusive, after its ``\\n``) of each line of ``data`` (``uint8``), found a slice at a time."""
    parts = []
    for i in range(0, len(data), SLICE_BYTES):
        parts.append(np.flatnonzero(data[i:i + SLICE_BYTES] == 10) + (i + 1))
        pause()
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def write_shuffled(fd: int, data: np.ndarray, pause: Callable[[], None] = _no_pause) -> None:
    """Write the lines of ``data`` (``uint8``, each line ending in ``\\n``) to ``fd`` in a uniformly random order from
    the OS CSPRNG — :func:`shuffle_lines`'s order for the same keys — in slices of about :data:`SLICE_BYTES`, calling
    ``pause`` between two (the close worker yields its CPU there) and ``fdatasync`` every :data:`SYNC_BYTES`. The
    caller fsyncs."""
    if not len(data):
        return
    if data[-1] != 10:
        raise ValueError("a segment ends with a newline")
    ends = line_ends(data, pause).astype(np.int64)
    starts = np.concatenate(([0], ends[:-1])).astype(np.int64)
    order = key_order(random_keys(len(ends), pause), pause)
    sizes = (ends - starts)[order]
    cuts = np.searchsorted(np.cumsum(sizes), np.arange(SLICE_BYTES, int(sizes.sum()), SLICE_BYTES), side="right")
    unsynced, lo = 0, 0
    for hi in [*np.unique(cuts).tolist(), len(order)]:
        if hi <= lo:
            continue
        idx = order[lo:hi]
        write_all(fd, in_order(data, starts[idx], ends[idx], np.arange(hi - lo, dtype=np.int64)))
        unsynced += int(sizes[lo:hi].sum())
        lo = hi
        if unsynced >= SYNC_BYTES:
            _datasync(fd)
            unsynced = 0
        pause()


def closed_name(window_start: float, fence: int | None = None) -> str:
    """``<UTC window start>-<16 random hex digits>.jsonl``: the window, and nothing of when in it or in which
    order the segment closed. With ``fence`` (the shuffler's lease token, :mod:`ldp.storage.lease`),
    ``<UTC window start>-<16 random hex digits>-f<fence>.jsonl``: which lease holder planned it."""
    tail = "" if fence is None else f"-f{int(fence)}"
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(window_start)) + f"-{secrets.token_hex(8)}{tail}.jsonl"
