"""Batch kernel for Subset Selection: the client's law (:mod:`ldp.encoders.subset_selection`), vectorized.

Per report: ``v ∈ S`` with probability ``p`` (``Generator.random``, 2^-53 resolution), then a uniform subset of
``ω − 1`` (or ``ω``) of the ``d − 1`` others by Floyd's algorithm, drawn straight into the packed rows around
column ``v`` (no ``n × d`` matrix); in chunks of bounded memory. Floyd's loop runs in the optional compiled
kernel (``ldp/batch/_sskernel.c``: row by row, its uniform draws by rejection from 32-bit values of the
generator's raw stream) when it is built, else vectorized over rows in numpy (one ``Generator.integers`` per
step): the same law, not the same draws. ``LDP_SS_KERNEL=numpy`` chooses the fallback.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.subset_selection import SSParams

__all__ = ["ss_encode_batch", "SS_KERNEL", "kernel_in_use", "floyd_rows_reference"]

try:  # optional compiled kernel (ldp/batch/_sskernel.c, built on install where a C compiler is found)
    import ldp.batch._sskernel as _sskernel
except ImportError:  # pragma: no cover - depends on the install
    _sskernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
SS_KERNEL = os.environ.get("LDP_SS_KERNEL") or ("compiled" if _sskernel is not None else "numpy")
"""Which Floyd loop the batch path uses: ``"compiled"`` (the C extension, when built) or ``"numpy"``; the
environment variable ``LDP_SS_KERNEL`` chooses (e.g. to benchmark the fallback)."""


def kernel_in_use() -> bool:
    """Whether :func:`ss_encode_batch` runs the compiled kernel: built, and not switched off by ``LDP_SS_KERNEL``."""
    return SS_KERNEL == "compiled" and _sskernel is not None

_CELLS = 1 << 24  # unpacked bits per chunk


def _floyd_around(gen: np.random.Generator, v: npt.NDArray[np.int64], k: int, d: int,
                  rows: npt.NDArray[np.uint8]) -> None:
    """Add to each packed row ``i`` of ``d`` bits a uniform ``k``-subset of the ``d − 1`` columns other than
    ``v[i]`` (Floyd's algorithm over their positions ``0..d−2``, vectorized over rows; position ``t`` is column
    ``t + [t >= v]``): the law of :func:`ldp.batch.histogram._sampled_rows` spread around ``v``, without an
    ``n × d`` matrix."""
    at = np.arange(v.size)
    for j in range(d - 1 - k, d - 1):
        t = gen.integers(0, j + 1, size=v.size)
        t += t >= v
        jj = j + (j >= v)
        taken = (rows[at, t >> 3] >> (t & 7)) & 1
        pick = np.where(taken.astype(bool), jj, t)
        rows[at, pick >> 3] |= np.left_shift(1, pick & 7).astype(np.uint8)


def floyd_rows_reference(halves: npt.NDArray[np.uint32], v: npt.NDArray[np.int64], own: npt.NDArray[np.uint8], w: int,
                         d: int, rows: npt.NDArray[np.uint8], start: int) -> tuple[int, int]:
    """The compiled ``floyd_rows`` in Python, draw for draw (its differential test): for each row ``i >= start``,
    Floyd's ``(w − own[i])``-subset of the positions ``0..d−2`` mapped around ``v[i]``, each ``R(j + 1)`` the
    next value of ``halves`` masked to ``bit_length(j)`` bits, rejected above ``j``, then bit ``v[i]`` if
    ``own[i]``; ``(row, used)`` where ``halves`` ran out (that row cleared), else ``(n, used)``."""
    h = 0
    for i in range(start, v.size):
        vi = int(v[i])
        for j in range(d - 1 - (w - bool(own[i])), d - 1):
            t = 0
            if j:
                while True:
                    if h == halves.size:
                        rows[i] = 0
                        return i, h
                    t, h = int(halves[h]) & ((1 << j.bit_length()) - 1), h + 1
                    if t <= j:
                        break
            c = t + (t >= vi)
            if rows[i, c >> 3] >> (c & 7) & 1:
                c = j + (j >= vi)
            rows[i, c >> 3] |= 1 << (c & 7)
        if own[i]:
            rows[i, vi >> 3] |= 1 << (vi & 7)
    return v.size, h


def _floyd_compiled(gen: np.random.Generator, v: npt.NDArray[np.int64], own: npt.NDArray[np.bool_], w: int,
                    d: int, rows: npt.NDArray[np.uint8]) -> None:
    """The compiled Floyd loop over every row, fed fresh 32-bit values until each row is done (a row that ran
    out is redrawn whole: its accepted draws are independent of its rejections, so its law is unchanged)."""
    flags = own.view(np.uint8)
    start = 0
    while start < v.size:
        need = (v.size - start) * w  # draws left, at most; ~1.5 values a draw with the rejections
        halves = gen.bit_generator.random_raw(need * 3 // 4 + 64).view(np.uint32)
        start, _ = _sskernel.floyd_rows(halves, v, flags, w, d, rows, start)


def ss_encode_batch(params: SSParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint8]:
    """Packed little-endian rows ``(n, ceil(d/8))`` of reports of the value indices ``values``."""
    d, w = params.domain_size, params.omega
    x = checked_indices(values, d).astype(np.int64)
    gen = as_generator(rng)
    out = np.zeros((x.size, (d + 7) // 8), np.uint8)
    step = max(1, _CELLS // d)
    for start in range(0, x.size, step):
        v = x[start:start + step]
        rows = out[start:start + v.size]
        own = gen.random(v.size) < params.p
        if kernel_in_use():
            _floyd_compiled(gen, np.ascontiguousarray(v), own, w, d, rows)
            continue
        for sel, k in ((own, w - 1), (~own, w)):
            if sel.any():
                part = rows[sel]
                _floyd_around(gen, v[sel], k, d, part)
                rows[sel] = part
        at = np.flatnonzero(own)
        rows[at, v[at] >> 3] |= np.left_shift(1, v[at] & 7).astype(np.uint8)
    return out
