"""Bit-packed Bernoulli sampling for batch encoders (RAPPOR, and any protocol that flips bits).

:func:`packed_bernoulli` draws one independent Bernoulli per bit of a packed ``uint8`` array,
with probability ``p1`` where a mask bit is 1 and ``p0`` where it is 0, at exactly the client's
resolution (``floor(p·2^64)/2^64``, :func:`ldp.randomness.bernoulli_threshold`). It is the
bit-sliced comparison of :func:`ldp.randomness.bitsliced_below` run on 64-lane words: each
plane costs one raw 64-bit draw per word, lanes drop out as soon as they differ from their
threshold, and after a few planes only the words that still hold a tied lane are processed.
With one probability for every bit (``p0 == p1``) a byte-wise comparison is faster and as exact.

The server's fold of such rows, :func:`add_ones_by_group` (reports and ones per group and bit, for
RAPPOR, CMS and SFP), and HCMS's :func:`add_signs_by_group` run the optional compiled kernel
``ldp/batch/_foldkernel.c`` when it is built and pure numpy otherwise; both are tested against a row-by-row fold
(``tests/jobs/test_fold_fast.py``). The kernel picks its vector engine at run time (AVX-512, AVX2, or 128-bit
vectors on any x86-64 and arm64): :func:`fold_engines`.
"""

from __future__ import annotations

import math
import os
from itertools import pairwise
from typing import Any

import numpy as np

from ldp.randomness import PRECISION_BITS, bernoulli_threshold

__all__ = ["packed_bernoulli", "packed_uniform", "row_padding_mask", "popcounts", "ones_by_group", "add_ones_by_group",
           "add_signs_by_group", "group_column", "FOLD_KERNEL", "kernel_in_use", "fold_engines"]

try:  # optional compiled kernel (ldp/batch/_foldkernel.c, built on install where a C compiler is found)
    import ldp.batch._foldkernel as _foldkernel
except ImportError:  # pragma: no cover - depends on the install
    _foldkernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
FOLD_KERNEL = os.environ.get("LDP_FOLD_KERNEL") or ("compiled" if _foldkernel is not None else "numpy")
"""Which kernel :func:`add_ones_by_group` uses: ``"compiled"`` (the C extension, when built) or
``"numpy"``; the environment variable ``LDP_FOLD_KERNEL`` chooses (e.g. to benchmark the fallback)."""


def kernel_in_use() -> bool:
    """Whether :func:`add_ones_by_group` runs the compiled kernel by default: built, and not switched off by
    ``LDP_FOLD_KERNEL`` (otherwise the numpy fallback runs)."""
    return FOLD_KERNEL == "compiled" and _foldkernel is not None


def fold_engines() -> list[str]:
    """The compiled kernel's vector engines this machine runs, slowest first, the last in use by default
    (``_foldkernel.use_engine`` switches, e.g. in tests); empty without the kernel."""
    return list(_foldkernel.engines()) if _foldkernel is not None else []


_MAX64 = (1 << 64) - 1
_CHUNK = 1 << 15  # words per block (256 KiB)
_UNIFORM_CHUNK = 1 << 15  # output bytes per block: its 128 KiB temporaries are reused, not page-faulted
_COMPACT_AFTER = 8  # planes on the full array before restricting work to words with tied lanes


def _words(a: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(a, dtype=np.uint8).reshape(-1)
    pad = (-flat.size) % 8
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, np.uint8)])
    return flat.view("<u8")


def packed_bernoulli(gen: np.random.Generator, mask: np.ndarray, p0: float, p1: float) -> np.ndarray:
    """``uint8`` array shaped like ``mask``: bit j is Bernoulli(p1) where ``mask`` has bit j set,
    Bernoulli(p0) where not; all bits independent. Bits are little-endian within bytes."""
    t0, t1 = bernoulli_threshold(p0), bernoulli_threshold(p1)
    if t0 == t1:
        return packed_uniform(gen, np.shape(mask), p0)
    ones = _words(mask)
    below = np.empty_like(ones)
    for start in range(0, ones.size, _CHUNK):  # cache-sized blocks, all planes each
        below[start:start + _CHUNK] = _sample_words(gen, ones[start:start + _CHUNK], t0, t1)
    return below.view(np.uint8)[: mask.size].reshape(mask.shape)


def packed_uniform(gen: np.random.Generator, shape: tuple[int, ...], p: float) -> np.ndarray:
    """``uint8`` array of ``shape`` whose every bit is an independent Bernoulli(p) (client resolution)."""
    t = bernoulli_threshold(p)
    out = np.empty(int(math.prod(shape)), np.uint8)
    step = _UNIFORM_CHUNK
    for start in range(0, out.size, step):
        stop = min(out.size, start + step)
        out[start:stop] = _uniform_bytes(gen, stop - start, t)
    return out.reshape(shape)


def _uniform_bytes(gen: np.random.Generator, size: int, t: int) -> np.ndarray:
    """``size`` bytes of independent bits, each 1 with probability ``t/2^64`` (one threshold).

    Byte-wise comparison: each lane's 64-bit uniform is drawn as a top byte and, only when that
    byte equals the threshold's (probability 1/256), the 56 bits below it. ``u < t`` iff
    ``u8 < t8`` or (``u8 == t8`` and ``u56 < t56``), so every bit is exactly Bernoulli(t/2^64).
    One random byte per lane and no per-plane passes: ~1.5x the bit-sliced rate for one threshold."""
    if t <= 0:
        return np.zeros(size, np.uint8)
    if t >= 1 << PRECISION_BITS:
        return np.full(size, 255, np.uint8)
    t8, low = t >> 56, t & ((1 << 56) - 1)
    top = gen.integers(0, _MAX64, size, dtype=np.uint64, endpoint=True).view(np.uint8)  # a byte per lane
    below = top < t8
    if low:
        tied = top == t8
        words = (tied.view(np.uint64) != 0).nonzero()[0]  # 8 lanes at a time: ties are rare
        if words.size:
            hit = np.flatnonzero(tied.reshape(-1, 8)[words])
            tie = words[hit >> 3] * 8 + (hit & 7)
            rest = gen.integers(0, _MAX64, tie.size, dtype=np.uint64, endpoint=True) >> np.uint64(8)
            below[tie] = rest < np.uint64(low)
    return np.packbits(below, bitorder="little")


def _sample_words(gen: np.random.Generator, ones: np.ndarray, t0: int, t1: int) -> np.ndarray:
    full = 1 << PRECISION_BITS
    zeros = ~ones
    below = np.zeros_like(ones)
    if t1 >= full:  # probability-1 lanes are decided without drawing
        below |= ones
    if t0 >= full:
        below |= zeros
    tied = np.zeros_like(ones)
    if 0 < t1 < full:
        tied |= ones
    if 0 < t0 < full:
        tied |= zeros
    index: np.ndarray | None = None  # positions of the working words once compacted
    w_ones, w_zeros, w_below, w_tied = ones, zeros, below, tied
    thr, tmp = np.empty_like(ones), np.empty_like(ones)
    for step, plane in enumerate(range(PRECISION_BITS - 1, -1, -1)):
        if not w_tied.any():
            break
        b1, b0 = (t1 >> plane) & 1 and t1 < full, (t0 >> plane) & 1 and t0 < full
        t = thr[: w_tied.size]
        if b1 and b0:
            t.fill(~np.uint64(0))
        elif b1:
            t[...] = w_ones
        elif b0:
            t[...] = w_zeros
        else:
            t.fill(0)
        r = gen.integers(0, _MAX64, w_tied.size, dtype=np.uint64, endpoint=True)  # uniform 64-bit words
        u = tmp[: w_tied.size]
        np.invert(r, out=u)           # u = ~r
        u &= t
        u &= w_tied
        w_below |= u                  # below where tied, threshold bit 1, random bit 0
        np.bitwise_xor(t, r, out=u)
        np.invert(u, out=u)
        w_tied &= u                   # still tied where the random bit equals the threshold bit
        low = (1 << plane) - 1
        if not (t0 & low) and not (t1 & low):
            break  # tied lanes can no longer fall below their thresholds
        if step == _COMPACT_AFTER - 1:
            keep = np.flatnonzero(w_tied)
            index, w_ones, w_zeros = keep, ones[keep], zeros[keep]
            w_below, w_tied = below[keep], w_tied[keep]
    if index is not None:
        below[index] = w_below
    return below


def row_padding_mask(nbits: int) -> np.ndarray:
    """``uint8`` mask over a row of ``ceil(nbits/8)`` packed bytes that keeps bits ``0..nbits-1``."""
    nbytes = (nbits + 7) // 8
    m = np.full(nbytes, 0xFF, dtype=np.uint8)
    if nbits % 8:
        m[-1] = (1 << (nbits % 8)) - 1
    return m


def popcounts(rows: np.ndarray, nbits: int) -> np.ndarray:
    """``int64 (n,)``: the set bits of each packed little-endian row of ``nbits`` bits (padding bits ignored)."""
    r = np.asarray(rows, dtype=np.uint8)
    if r.ndim != 2 or r.shape[1] != (nbits + 7) // 8:
        raise ValueError(f"bits must be packed rows of shape (n, {(nbits + 7) // 8}), got {r.shape}")
    out: np.ndarray = np.bitwise_count(r & row_padding_mask(nbits)).sum(axis=1, dtype=np.int64)
    return out


_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)  # (256, 8): bits of a byte


def _byte_columns(rows: np.ndarray) -> list[np.ndarray]:
    """The byte columns of a (n, nbytes) uint8 array; rows of whole 64-bit words are transposed as
    words (8x fewer elements to move) and their bytes read with stride 8."""
    nbytes = rows.shape[1]
    if nbytes % 8:
        cols = np.ascontiguousarray(rows.T)
        return [cols[j] for j in range(nbytes)]
    words = np.ascontiguousarray(np.ascontiguousarray(rows).view("<u8").T)  # (nbytes/8, n)
    return [words[w].view(np.uint8)[b::8] for w in range(nbytes // 8) for b in range(8)]


def ones_by_group(groups: np.ndarray, bits: np.ndarray, num_groups: int, nbits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(reports per group (g,), ones per group and bit (g, nbits))`` of packed little-endian rows
    (``bits[i]`` is record i's row, bit b in byte b//8 at position b%8); see :func:`add_ones_by_group`."""
    counts, ones = np.zeros(num_groups, np.int64), np.zeros((num_groups, nbits), np.int64)
    add_ones_by_group(groups, bits, counts, ones)
    return counts, ones


def add_ones_by_group(groups: np.ndarray, bits: np.ndarray, counts: np.ndarray, ones: np.ndarray,
                      kernel: str | None = None) -> None:
    """``counts[g] += #{i: groups[i] = g}`` and ``ones[g, b] += #{i: groups[i] = g, bit b of bits[i] set}``
    in place (int64 arrays of shapes (G,) and (G, nbits)); nothing is added if a group is out of range.

    ``kernel`` (default :data:`FOLD_KERNEL`): ``"compiled"``, the C extension's positional popcount
    in SWAR lanes (no loop per bit; AVX-512, AVX2 or 128-bit vectors, :func:`fold_engines`; with AVX-512 a row of
    at most 16 bytes goes straight into byte lanes, ~1.6 ns per 16-byte row);
    ``"numpy"``, :func:`_ones_by_group_numpy`."""
    num_groups, nbits = ones.shape
    if counts.shape != (num_groups,) or counts.dtype != np.int64 or ones.dtype != np.int64:
        raise ValueError("counts and ones must be int64 arrays of shapes (G,) and (G, nbits)")
    kernel = kernel or FOLD_KERNEL
    if kernel == "numpy":
        c, o = _ones_by_group_numpy(groups, bits, num_groups, nbits)
        counts += c
        ones += o
        return
    if _foldkernel is None or kernel != "compiled":
        raise ValueError(f"kernel must be 'numpy' or, when built, 'compiled'; got {kernel!r}")
    g = group_column(groups)
    rows = np.ascontiguousarray(bits, dtype=np.uint8)
    if rows.ndim != 2 or rows.shape[0] != g.size or rows.shape[1] * 8 < nbits:
        raise ValueError(f"bits must be (n, >= {(nbits + 7) // 8}) packed rows, one per group; got {rows.shape}")
    if not (counts.flags.c_contiguous and ones.flags.c_contiguous):
        raise ValueError("counts and ones must be C-contiguous (they are added to in place)")
    _foldkernel.fold_rows(g, g.itemsize, rows, rows.shape[1], nbits, counts, ones, None, None, None, 0, None, None)


def group_column(groups: Any) -> np.ndarray:
    """An integer column as the compiled kernel reads it: C-contiguous native-endian unsigned integers of its
    width, a view when it already is one (negative values become huge, out of any group's range)."""
    g = np.asarray(groups)
    if g.dtype.kind not in "uib":
        raise TypeError(f"groups must be integers, got {g.dtype}")
    if not g.dtype.isnative:
        g = g.astype(g.dtype.newbyteorder("="))
    return np.ascontiguousarray(g).reshape(-1).view(f"u{g.dtype.itemsize}")


def add_signs_by_group(groups: np.ndarray, cells: np.ndarray, signs: np.ndarray, counts: np.ndarray,
                       sums: np.ndarray, kernel: str | None = None) -> None:
    """``counts[g] += #{i: groups[i] = g}`` and ``sums[g, c] += Σ (2·signs[i] − 1)`` over ``{i: groups[i] = g,
    cells[i] = c}``, in place (int64 arrays (G,) and (G, m)): HCMS's fold (reported bits 0/1 as −1/+1).
    ``kernel`` as in :func:`add_ones_by_group` (compiled: a batch of at least a quarter as many reports as the table
    has cells, groups of one byte, goes through int16 partial sums, which stay in the L2 cache: ~1.5x faster); nothing
    is added if a group or a cell is out of range."""
    num_groups, m = sums.shape
    if counts.shape != (num_groups,) or counts.dtype != np.int64 or sums.dtype != np.int64:
        raise ValueError("counts and sums must be int64 arrays of shapes (G,) and (G, m)")
    kernel = kernel or FOLD_KERNEL
    if kernel == "compiled" and _foldkernel is not None:
        g, c, b = group_column(groups), group_column(cells), group_column(signs)
        if not (g.size == c.size == b.size and counts.flags.c_contiguous and sums.flags.c_contiguous):
            raise ValueError("groups, cells and signs must be columns of one length; counts and sums C-contiguous")
        _foldkernel.add_signs_by_group(g, g.itemsize, c, c.itemsize, b, b.itemsize, m, counts, sums)
        return
    if kernel != "numpy":
        raise ValueError(f"kernel must be 'numpy' or, when built, 'compiled'; got {kernel!r}")
    g = np.asarray(groups).astype(np.int64)
    c = np.asarray(cells).astype(np.int64)
    if g.size and (g.min() < 0 or g.max() >= num_groups or c.min() < 0 or c.max() >= m):
        raise ValueError("a group or a cell is out of range")
    cell = g * m + c
    total = np.bincount(cell, minlength=num_groups * m)
    ones = np.bincount(cell, weights=signs, minlength=num_groups * m).astype(np.int64)
    counts += np.bincount(g, minlength=num_groups)
    sums += (2 * ones - total).reshape(num_groups, m)


def _ones_by_group_numpy(groups: np.ndarray, bits: np.ndarray, num_groups: int,
                         nbits: int) -> tuple[np.ndarray, np.ndarray]:
    """Pure-numpy :func:`ones_by_group`, used when the compiled kernel is not built.

    Narrow rows (≤ 32 bytes) in ≤ 4096 groups: one ``bincount`` of ``group·256 + byte`` per byte
    column, then the (group, byte value) table times the bits of each byte value. Wider rows, or
    more groups: :func:`_ones_sorted` (rows sorted by group, unpacked and summed as byte lanes).
    Neither loops per report; the choice is the faster of the two as measured by
    ``simulations/benchmark.py`` (crossover near 32-48 bytes per row)."""
    g = np.asarray(groups)
    counts = np.bincount(g.astype(np.int64), minlength=num_groups)
    if bits.shape[1] > 32 or num_groups > 4096:
        return counts, _ones_sorted(g, bits, num_groups, nbits)
    ones = np.zeros((num_groups, nbits), dtype=np.int64)
    step = max(1 << 18, (1 << 24) // max(bits.shape[1], 1))  # >= 256K rows, ~16 MiB of narrow rows
    lane_type: type[np.integer[Any]] = np.uint16 if num_groups <= 256 else np.int64  # uint16 bincounts are fastest
    for start in range(0, g.size, step):
        chunk, rows = g[start:start + step], bits[start:start + step]
        base = chunk.astype(lane_type) << 8
        for j, col in enumerate(_byte_columns(rows)):
            table = np.bincount(base | col, minlength=num_groups * 256).reshape(num_groups, 256)
            hi = min(8 * j + 8, nbits)
            ones[:, 8 * j:hi] += (table @ _BYTE_BITS)[:, : hi - 8 * j]
    return counts, ones


_LANE_ROWS = 255  # a uint64 of eight 0/1 bytes can add 255 rows before a byte lane overflows


def _ones_sorted(groups: np.ndarray, bits: np.ndarray, num_groups: int, nbits: int) -> np.ndarray:
    """Ones per (group, bit) for wide rows: within ~8 MiB chunks, sort rows by group (a radix
    argsort and a cache-local gather), then per run of ≤ 255 same-group rows unpack the bits to
    0/1 bytes and add them as uint64 words, eight byte lanes at a time (no carry can cross a lane).
    The Python loop is per (chunk, group) run, never per report."""
    nbytes = bits.shape[1]
    ones = np.zeros((num_groups, 8 * nbytes), dtype=np.int64)
    step = max(4096, (1 << 23) // max(nbytes, 1))
    for start in range(0, groups.size, step):
        chunk = groups[start:start + step]
        order = np.argsort(chunk, kind="stable")
        sorted_groups = chunk[order]
        rows = bits[start:start + step][order]
        edges = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1], True]).tolist()
        for a, b in pairwise(edges):
            total = ones[sorted_groups[a]]
            for p in range(a, b, _LANE_ROWS):
                lanes = np.unpackbits(rows[p:min(p + _LANE_ROWS, b)], axis=1, bitorder="little").view(np.uint64)
                total += lanes.sum(axis=0).view(np.uint8)
    return ones[:, :nbits]
