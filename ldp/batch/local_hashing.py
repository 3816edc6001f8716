"""Local hashing (BLH, OLH) with numpy: batch encoding and the server's support counts.

Every hashed key is one 4-byte block (``uint32_LE(index)``, :mod:`ldp.encoders.local_hashing`), so
MurmurHash3 (``docs/hashing.md``) of index ``v`` under seed ``s`` is

    ``fmix32(rotl(s ^ K_v, 13)·5 + 0xe6546b64 ^ 4)``,  ``K_v = rotl(v·c1, 15)·c2``,

and ``rotl(s ^ K_v, 13) = rotl(s, 13) ^ rotl(K_v, 13)``: one rotation per report, one per item, and
twelve uint32 operations per (report, item) pair. :func:`support_counts` runs them over blocks of
:data:`BLOCK_REPORTS` reports × :data:`BLOCK_ITEMS` items (512 KiB of hash states, near L2), so memory
stays bounded whatever ``n`` and ``d``, and adds each block's per-item matches to the counts. The same
loop in C (``ldp/batch/_lhkernel.c``, optional, used when built: an AVX2 clone where the CPU has it) is
about seven to nine times faster: 0.23 ns per pair for a power-of-two ``g``, 0.32 otherwise (numpy: 2.1, 2.4).

``h mod g == y`` is decided in uint32 arithmetic: for a power of two ``g`` by a mask; otherwise
(Granlund & Montgomery's divisibility test) with ``g = 2^k·o``, ``o`` odd, ``x = h − y mod 2^32`` is a
multiple of ``g`` iff ``rotr(x·o^{-1} mod 2^32, k) <= floor((2^32−1)/g)``. When ``h < y`` the
subtraction wraps, and the wrapped ``x`` is a multiple of ``g`` only when it is the largest one,
``g·floor((2^32−1)/g)``, which happens for ``y >= 2^32 mod g`` only (then ``h = y − (2^32 mod g)``):
those reports' limit is one less. (numpy's uint32 ``%`` alone costs about 2 ns per element.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.murmur import _N1, _mix_k, _rotl
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.local_hashing import LocalHashingParams

__all__ = ["lh_hashes", "lh_encode_batch", "support_counts", "BLOCK_REPORTS", "BLOCK_ITEMS", "LH_KERNEL",
           "kernel_in_use"]

try:  # optional compiled kernel (ldp/batch/_lhkernel.c, built on install where a C compiler is found)
    import ldp.batch._lhkernel as _lhkernel
except ImportError:  # pragma: no cover - depends on the install
    _lhkernel = None  # type: ignore[assignment]  # optional: None when the extension is not built
LH_KERNEL = os.environ.get("LDP_LH_KERNEL") or ("compiled" if _lhkernel is not None else "numpy")
"""Which kernel :func:`support_counts` uses: ``"compiled"`` (the C extension, when built) or ``"numpy"``;
the environment variable ``LDP_LH_KERNEL`` chooses (e.g. to benchmark the fallback)."""


def kernel_in_use() -> bool:
    """Whether :func:`support_counts` runs the compiled kernel by default: built, and not switched off by
    ``LDP_LH_KERNEL`` (otherwise the numpy fallback runs)."""
    return LH_KERNEL == "compiled" and _lhkernel is not None


BLOCK_REPORTS = 256
BLOCK_ITEMS = 512

U32 = npt.NDArray[np.uint32]


def _item_keys(items: npt.NDArray[Any]) -> U32:
    """``rotl(K_v, 13)`` of each index: the item's half of the first block's mixing."""
    with np.errstate(over="ignore"):
        return _rotl(_mix_k(items.astype(np.uint32)), 13)


def _finish(h: U32, scratch: U32) -> U32:
    """``fmix32(h·5 + n1 ^ 4)`` in place, ``h`` holding ``rotl(s, 13) ^ rotl(K_v, 13)``; ``scratch`` as ``h``."""
    with np.errstate(over="ignore"):
        h *= np.uint32(5)
        h += _N1
        h ^= np.uint32(4)  # the key's length
        for shift, mult in ((16, 0x85EBCA6B), (13, 0xC2B2AE35)):
            np.right_shift(h, np.uint32(shift), out=scratch)
            h ^= scratch
            h *= np.uint32(mult)
        np.right_shift(h, np.uint32(16), out=scratch)
        h ^= scratch
    return h


def lh_hashes(seeds: npt.ArrayLike, items: npt.ArrayLike) -> U32:
    """``mmh3.hash(uint32_LE(item), seed, signed=False)`` elementwise (broadcast ``seeds`` against ``items``)."""
    s, v = np.asarray(seeds), np.asarray(items)
    if any(a.size and a.dtype.kind not in "iu" for a in (s, v)):
        raise TypeError("seeds and items must be integers")
    if (s.size and (s.min() < 0 or s.max() > 0xFFFFFFFF)) or (v.size and (v.min() < 0 or v.max() > 0xFFFFFFFF)):
        raise ValueError("seeds and items must be in [0, 2**32)")
    h = np.bitwise_xor(_rotl(s.astype(np.uint32), 13), _item_keys(v))
    return _finish(h, np.empty_like(h))


def _reduce(h: U32, g: int) -> U32:
    """``h mod g`` in place."""
    if g & (g - 1) == 0:
        h &= np.uint32(g - 1)
    else:
        np.remainder(h, np.uint32(g), out=h)
    return h


def lh_encode_batch(params: LocalHashingParams, values: Any, rng: Any = None) -> tuple[U32, U32]:
    """``(seeds, y)`` of reports of the value indices ``values``: the client's law (uniform seed in
    ``[0, seed_range)``, then GRR over ``[0, g)`` of ``h_seed(v)``), vectorized."""
    x = checked_indices(values, params.domain_size)
    gen, g = as_generator(rng), params.g
    seeds = gen.integers(0, params.seed_range, size=x.size, dtype=np.uint32)
    hashed = _reduce(lh_hashes(seeds, x), g)
    other = gen.integers(0, g - 1, size=x.size, dtype=np.uint32) if g > 2 else np.zeros(x.size, np.uint32)
    other += other >= hashed
    keep = gen.random(x.size) < params.p
    return seeds, np.where(keep, hashed, other)


class _Matcher:
    """``h mod g == y`` over a block of hashes, in uint32 arithmetic (module docstring)."""

    def __init__(self, g: int, ys: npt.NDArray[Any]) -> None:
        self.k = (g & -g).bit_length() - 1  # g = 2^k · odd
        odd = g >> self.k
        self.pow2 = odd == 1
        self.mask = np.uint32(g - 1) if self.pow2 else np.uint32(0)
        self.inverse = np.uint32(pow(odd, -1, 1 << 32))
        self.y = ys.astype(np.uint32)
        self.limit = self.y  # unused for a power of two (and g = 2^32 has no limit in uint32)
        if not self.pow2:
            top = 0xFFFFFFFF // g  # x < 2^32 is a multiple of g iff rotr(x·odd^-1, k) <= top
            # y − h wrapped past 0 is a multiple of g only as the largest multiple g·top, for y >= 2^32 mod g
            self.limit = np.where(self.y >= (1 << 32) % g, np.uint32(top - 1), np.uint32(top)).astype(np.uint32)

    def bounds(self, i: int, j: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
        """Reports ``i:j``: their ``y`` and their limit, as columns."""
        return self.y[i:j, None], self.limit[i:j, None]

    def match(self, h: U32, y: U32, limit: U32, scratch: U32, out: npt.NDArray[np.bool_]) -> None:
        """``out = (h mod g == y)`` for the block's hashes ``h`` (clobbered, as ``scratch``)."""
        if self.pow2:
            h &= self.mask
            np.equal(h, y, out=out)
            return
        with np.errstate(over="ignore"):
            h -= y
            h *= self.inverse
        if self.k:
            np.left_shift(h, np.uint32(32 - self.k), out=scratch)
            h >>= np.uint32(self.k)
            h |= scratch
        np.less_equal(h, limit, out=out)


def support_counts(seeds: npt.ArrayLike, ys: npt.ArrayLike, d: int, g: int,
                   kernel: str | None = None) -> npt.NDArray[np.int64]:
    """``C_v = #{i : h_{seed_i}(v) = y_i}`` for every ``v < d``, in blocks (never ``n × d`` at once), with the
    compiled kernel when built (``kernel``: ``"compiled"`` or ``"numpy"``, default :data:`LH_KERNEL`)."""
    s, y = np.asarray(seeds), np.asarray(ys)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"seeds and ys must be 1-D of one length, got shapes {s.shape} and {y.shape}")
    if not 2 <= g <= 2**32:
        raise ValueError(f"g must be in [2, 2**32], got {g}")
    counts = np.zeros(d, np.int64)
    if not s.size:
        return counts
    kernel = kernel or LH_KERNEL
    if kernel == "compiled" and _lhkernel is not None:
        s32, y32 = (np.ascontiguousarray(a, dtype=np.uint32) for a in (s, y))
        _lhkernel.support_counts(s32, y32, s32.size, g, counts, d)
        return counts
    if kernel != "numpy":
        raise ValueError(f"kernel must be 'numpy' or, when built, 'compiled'; got {kernel!r}")
    rows = _rotl(s.astype(np.uint32), 13)
    keys = _item_keys(np.arange(d, dtype=np.uint32))
    matcher = _Matcher(g, y)
    h = np.empty((BLOCK_REPORTS, BLOCK_ITEMS), np.uint32)
    scratch, hit = np.empty_like(h), np.empty(h.shape, np.bool_)
    for i in range(0, s.size, BLOCK_REPORTS):
        r = rows[i:i + BLOCK_REPORTS, None]
        a, b = matcher.bounds(i, i + BLOCK_REPORTS)
        for j in range(0, d, BLOCK_ITEMS):
            k = keys[j:j + BLOCK_ITEMS]
            hb, sb, eb = h[:r.shape[0], :k.size], scratch[:r.shape[0], :k.size], hit[:r.shape[0], :k.size]
            np.bitwise_xor(r, k, out=hb)
            matcher.match(_finish(hb, sb), a, b, sb, eb)
            counts[j:j + k.size] += eb.view(np.uint8).sum(axis=0, dtype=np.uint16)
    return counts
