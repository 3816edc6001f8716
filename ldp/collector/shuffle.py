"""The shuffler's two tools: a uniformly random order of a segment's lines from the OS CSPRNG, and the name and
time a closed segment shows (its arrival window, never finer).

Apple's ingestion (thesis 004, §5.2.1; Prochlo's Encode–Shuffle–Analyze) strips what ties a report to its sender
and permutes the records before anyone analyses them: then an analyst cannot link one device's reports to each
other by their order, and amplification by shuffling applies (:mod:`ldp.privacy.shuffle`)."""

from __future__ import annotations

import os
import secrets
import time

import numpy as np

from ldp.server import jsonl

__all__ = ["shuffle_lines", "in_order", "closed_name", "KEY_BYTES"]

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


def in_order(data: bytes, starts: np.ndarray, ends: np.ndarray, order: np.ndarray,
             compiled: bool | None = None) -> bytes | bytearray:
    """The lines ``data[starts[i]:ends[i]]`` for ``i`` in ``order``, one after the other (``compiled``: the
    kernel's copy into a new ``bytearray``, or Python's join; default: the kernel when in use)."""
    if jsonl.kernel_in_use() if compiled is None else compiled:
        out = bytearray(int((ends - starts).sum()))
        jsonl._linekernel.permute(data, starts.astype(np.int64), ends.astype(np.int64), order.astype(np.int64),
                                  len(order), out)
        return out  # not copied to bytes: 8 MiB would hold the GIL ~2 ms, the event loop waiting
    return b"".join([data[a:b] for a, b in zip(starts[order].tolist(), ends[order].tolist(), strict=True)])


def closed_name(window_start: float) -> str:
    """``<UTC window start>-<16 random hex digits>.jsonl``: the window, and nothing of when in it or in which
    order the segment closed."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(window_start)) + f"-{secrets.token_hex(8)}.jsonl"
