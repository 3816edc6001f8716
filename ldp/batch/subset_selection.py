"""Batch kernel for Subset Selection: the client's law (:mod:`ldp.encoders.subset_selection`), vectorized.

Per report: ``v ∈ S`` with probability ``p`` (``Generator.random``, 2^-53 resolution), then a uniform subset of
``ω − 1`` (or ``ω``) of the ``d − 1`` others, drawn straight into the packed rows around column ``v`` (no
``n × d`` matrix); in chunks of bounded memory. The optional compiled kernel (``ldp/batch/_sskernel.c``, its
draws from xoshiro256** seeded from the generator) draws that subset one of two ways, whichever its cost model
(:func:`subset_method`) finds cheaper for ``(d, ω)``: Floyd's algorithm (``ω`` exact uniform draws, for small
subsets), or independent Bernoulli columns at a dyadic probability near ``ω/(d − 1)`` (64 columns per bit-sliced
word) corrected to the exact size by uniform additions or removals (large subsets: at d = 1024, ω = 275 about a
third of Floyd's time). Both are exactly uniform. Without the kernel, Floyd's loop runs vectorized over rows in
numpy (one ``Generator.integers`` per step): the same law, not the same draws. ``LDP_SS_KERNEL=numpy`` chooses
the fallback.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.randomness import as_generator, bitsliced_below

if TYPE_CHECKING:
    from ldp.encoders.subset_selection import SSParams

__all__ = ["ss_encode_batch", "SS_KERNEL", "kernel_in_use", "floyd_rows_reference", "fixup_rows_reference",
           "subset_method"]

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


def fixup_rows_reference(seed: npt.NDArray[np.uint64], v: npt.NDArray[np.int64], own: npt.NDArray[np.uint8], w: int,
                         d: int, threshold: int, planes: int, rows: npt.NDArray[np.uint8]) -> None:
    """The compiled ``fixup_rows`` in Python, draw for draw (its differential test): for each row ``i``, every
    column set with probability ``threshold / 2**planes`` (bit-sliced, 64 columns per word, one xoshiro256** output
    per plane from the most significant, stopping once no column is tied or the threshold's lower bits are zero),
    column ``v[i]`` and those ``>= d`` cleared; then uniform columns other than ``v[i]`` (an output's low
    ``bit_length(d − 2)`` bits, rejected at ``>= d − 1``, mapped around ``v[i]``) added while fewer than
    ``w − own[i]`` are set, removed while more; then bit ``v[i]`` if ``own[i]``. Rows are overwritten."""
    state, nw = [int(x) for x in seed], (d + 63) // 64
    bits = (d - 2).bit_length()
    for i in range(v.size):
        vi, k, row = int(v[i]), w - bool(own[i]), 0
        for b in range(nw):  # one bit plane of 64 columns per output
            row |= bitsliced_below(threshold, planes, 64, lambda _: _xoshiro(state)) << (64 * b)
        row &= ((1 << d) - 1) ^ (1 << vi)
        m = row.bit_count()
        while m != k:
            t = _xoshiro(state) & ((1 << bits) - 1) if bits else 0
            if t >= d - 1:
                continue
            c = t + (t >= vi)
            if m < k and not row >> c & 1:
                row, m = row | 1 << c, m + 1
            elif m > k and row >> c & 1:
                row, m = row ^ 1 << c, m - 1
        row |= bool(own[i]) << vi
        rows[i] = np.frombuffer(row.to_bytes(rows.shape[1], "little"), np.uint8)


def _mean_abs_normal(mu: float, sd: float) -> float:
    """``E|X|`` for ``X ~ N(mu, sd²)`` (folded normal)."""
    if sd <= 0:
        return abs(mu)
    z = mu / sd
    return sd * math.sqrt(2 / math.pi) * math.exp(-z * z / 2) + mu * math.erf(z / math.sqrt(2))


@lru_cache(maxsize=256)
def subset_method(d: int, w: int, p: float) -> tuple[int, int] | None:
    """How the compiled kernel draws the subsets of ``(d, ω)`` (own bit with probability ``p``): ``None`` for
    Floyd's algorithm, else ``(threshold, planes)`` of the Bernoulli columns, the candidate of least modelled
    cost (ns per row, fitted on x86-64: a bit-sliced plane of 64 columns 1.5, a word's count and write 3, a
    correction 6 per attempt; Floyd ``k(2 + 4k/d)``). Any choice gives the same law; only the time differs."""
    k, others = w - p, d - 1
    best, cost = None, k * (2.0 + 4.0 * k / d)
    nw, reject = (d + 63) // 64, (1 << (d - 2).bit_length()) / others if d > 2 else 1.0
    for planes in range(1, 9):
        scaled = k / others * (1 << planes)
        for threshold in {math.floor(scaled), math.ceil(scaled)}:
            if not 0 < threshold < 1 << planes:
                continue
            q = threshold / (1 << planes)
            used = min(planes - ((threshold & -threshold).bit_length() - 1), 7.3)
            accept = (1 - q) if q * others < k else q
            fixes = _mean_abs_normal(q * others - k, math.sqrt(others * q * (1 - q)))
            c = nw * (1.5 * used + 3.0) + 6.0 * fixes * reject / accept
            if c < cost:
                best, cost = (threshold, planes), c
    return best


def _subsets_compiled(gen: np.random.Generator, v: npt.NDArray[np.int64], own: npt.NDArray[np.bool_], w: int,
                      d: int, p: float, rows: npt.NDArray[np.uint8]) -> None:
    """The compiled kernel over every row (:func:`subset_method` chooses Floyd or the corrected Bernoulli columns),
    its xoshiro256** seeded from ``gen`` (four words, not all zero)."""
    seed = gen.bit_generator.random_raw(4)
    while not seed.any():  # pragma: no cover - probability 2^-256
        seed = gen.bit_generator.random_raw(4)
    method = subset_method(d, w, p)
    if method is None:
        _sskernel.floyd_rows(seed, v, own.view(np.uint8), w, d, rows)
    else:
        _sskernel.fixup_rows(seed, v, own.view(np.uint8), w, d, method[0], method[1], rows)


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
            _subsets_compiled(gen, np.ascontiguousarray(v), own, w, d, params.p, rows)
            continue
        for sel, k in ((own, w - 1), (~own, w)):
            if sel.any():
                part = rows[sel]
                _floyd_around(gen, v[sel], k, d, part)
                rows[sel] = part
        at = np.flatnonzero(own)
        rows[at, v[at] >> 3] |= np.left_shift(1, v[at] & 7).astype(np.uint8)
    return out
