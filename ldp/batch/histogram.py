"""Batch kernels for the histogram protocols: bucketing numbers, and dBitFlip (exactly the client's law).

dBitFlip's sampled sets are drawn by Floyd's algorithm on all rows at once (``d`` vectorized steps of
exact uniform integers, as the client's ``randbelow``), its bits by :func:`ldp.batch.bits.packed_bernoulli`
at the client's 2^-64 resolution. Bucketized GRR needs no kernel of its own: it is GRR's
(:func:`ldp.batch.randomized_response.grr_encode_batch`) on bucket indices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.bits import packed_bernoulli, row_padding_mask
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams, DBitFlipParams

__all__ = ["bucketize", "dbitflip_encode_batch", "onehot_rows", "row_popcount"]

_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)


def bucketize(params: DBitFlipParams | BucketGRRParams | BucketOUEParams, values: Any) -> npt.NDArray[np.int64]:
    """The bucket index of each number, as the client's ``prepare`` gives it (non-finite values refused;
    values outside the edges refused, or clipped when ``params.clip``)."""
    x = np.asarray(values)
    if x.ndim != 1:
        raise ValueError(f"values must be a 1-D array of numbers, got shape {x.shape}")
    if x.size and (x.dtype == bool or x.dtype.kind not in "iuf"):
        raise TypeError(f"histogram values must be real numbers, got dtype {x.dtype}")
    if x.size and x.dtype.kind == "f" and not np.isfinite(x).all():
        raise ValueError("histogram values must be finite (the array holds NaN or inf)")
    edges = np.asarray(params.edges)
    k = edges.size - 1
    outside = (x < edges[0]) | (x > edges[k])
    if outside.any() and not params.clip:
        bad = x[outside][0]
        raise ValueError(f"{int(outside.sum())} values are outside the histogram's range [{edges[0]!r}, "
                         f"{edges[k]!r}], e.g. {bad!r} (pass clip=True in the params to clip them)")
    idx = np.searchsorted(edges, x, side="right").astype(np.int64) - 1
    return np.clip(idx, 0, k - 1)


def onehot_rows(index: npt.NDArray[np.integer[Any]], nbits: int) -> npt.NDArray[np.uint8]:
    """Packed little-endian rows with only bit ``index[i]`` set in row ``i``."""
    rows = np.zeros((index.size, (nbits + 7) // 8), dtype=np.uint8)
    rows[np.arange(index.size), index >> 3] = np.left_shift(1, index & 7).astype(np.uint8)
    return rows


def row_popcount(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """Set bits per row of a packed ``(n, nbytes)`` array."""
    return _POPCOUNT[rows].sum(axis=1, dtype=np.int64)


def _sampled_rows(gen: np.random.Generator, n: int, k: int, d: int) -> npt.NDArray[np.uint8]:
    """``n`` uniform d-subsets of ``k`` buckets as packed rows (Floyd's algorithm, vectorized over rows)."""
    nbytes = (k + 7) // 8
    if d == k:
        return np.broadcast_to(row_padding_mask(k), (n, nbytes)).copy()
    rows = np.zeros((n, nbytes), dtype=np.uint8)
    at = np.arange(n)
    for j in range(k - d, k):
        t = gen.integers(0, j + 1, size=n)
        taken = (rows[at, t >> 3] >> (t & 7)) & 1
        pick = np.where(taken.astype(bool), j, t)
        rows[at, pick >> 3] |= np.left_shift(1, pick & 7).astype(np.uint8)
    return rows


def dbitflip_encode_batch(params: DBitFlipParams, values: Any, rng: Any = None
                          ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """``(sampled, bits)`` packed rows of dBitFlip reports of bucket indices ``values``."""
    k = params.num_buckets
    x = checked_indices(values, k).astype(np.int64)
    gen = as_generator(rng)
    sampled = _sampled_rows(gen, x.size, k, params.d)
    bits = packed_bernoulli(gen, onehot_rows(x, k), params.p0, params.p1) & sampled
    return sampled, bits
