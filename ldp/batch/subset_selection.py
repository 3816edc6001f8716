"""Batch kernel for Subset Selection: the client's law (:mod:`ldp.encoders.subset_selection`), vectorized.

Per report: ``v ∈ S`` with probability ``p`` (``Generator.random``, 2^-53 resolution), then a uniform subset of
``ω − 1`` (or ``ω``) of the ``d − 1`` others by Floyd's algorithm, drawn straight into the packed rows around
column ``v`` (no ``n × d`` matrix); in chunks of bounded memory. Floyd's loop runs in the optional compiled
kernel (``ldp/batch/_sskernel.c``: row by row, each uniform draw by rejection from ``bit_length(j)`` bits of
xoshiro256** seeded from the generator) when it is built, else vectorized over rows in numpy (one
``Generator.integers`` per step): the same law, not the same draws. ``LDP_SS_KERNEL=numpy`` chooses the fallback.
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


_M64 = (1 << 64) - 1


def _xoshiro(state: list[int]) -> int:
    """One output of xoshiro256** (Blackman & Vigna 2018), advancing ``state`` (four 64-bit ints) in place."""
    s0, s1, s2, s3 = state
    result = ((((s1 * 5) & _M64) << 7 | (s1 * 5 & _M64) >> 57) & _M64) * 9 & _M64
    t = s1 << 17 & _M64
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << 45 | s3 >> 19) & _M64
    state[:] = [s0, s1, s2, s3]
    return result


def floyd_rows_reference(seed: npt.NDArray[np.uint64], v: npt.NDArray[np.int64], own: npt.NDArray[np.uint8], w: int,
                         d: int, rows: npt.NDArray[np.uint8]) -> None:
    """The compiled ``floyd_rows`` in Python, draw for draw (its differential test): for each row ``i``, Floyd's
    ``(w − own[i])``-subset of the positions ``0..d−2`` mapped around ``v[i]``, each ``R(j + 1)`` the next
    ``bit_length(j)`` bits of xoshiro256**'s outputs (low bits first; a word's leftover bits dropped when too few
    remain), rejected above ``j``; then bit ``v[i]`` if ``own[i]``."""
    state, word, left = [int(x) for x in seed], 0, 0
    for i in range(v.size):
        vi = int(v[i])
        for j in range(d - 1 - (w - bool(own[i])), d - 1):
            t = 0
            if j:
                bits = j.bit_length()
                while True:
                    if left < bits:
                        word, left = _xoshiro(state), 64
                    t, word, left = word & ((1 << bits) - 1), word >> bits, left - bits
                    if t <= j:
                        break
            c = t + (t >= vi)
            if rows[i, c >> 3] >> (c & 7) & 1:
                c = j + (j >= vi)
            rows[i, c >> 3] |= 1 << (c & 7)
        if own[i]:
            rows[i, vi >> 3] |= 1 << (vi & 7)


def _floyd_compiled(gen: np.random.Generator, v: npt.NDArray[np.int64], own: npt.NDArray[np.bool_], w: int,
                    d: int, rows: npt.NDArray[np.uint8]) -> None:
    """The compiled Floyd loop over every row, its xoshiro256** seeded from ``gen`` (four words, not all zero)."""
    seed = gen.bit_generator.random_raw(4)
    while not seed.any():  # pragma: no cover - probability 2^-256
        seed = gen.bit_generator.random_raw(4)
    _sskernel.floyd_rows(seed, v, own.view(np.uint8), w, d, rows)


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
