"""Batch kernel for Subset Selection: the client's law (:mod:`ldp.encoders.subset_selection`), vectorized.

Per report: ``v ∈ S`` with probability ``p`` (``Generator.random``, 2^-53 resolution), then a uniform subset of
``ω − 1`` (or ``ω``) of the ``d − 1`` others by Floyd's algorithm vectorized over rows, drawn straight into
the packed rows around column ``v`` (no ``n × d`` matrix); in chunks of bounded memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.subset_selection import SSParams

__all__ = ["ss_encode_batch"]

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
        for sel, k in ((own, w - 1), (~own, w)):
            if sel.any():
                part = rows[sel]
                _floyd_around(gen, v[sel], k, d, part)
                rows[sel] = part
        at = np.flatnonzero(own)
        rows[at, v[at] >> 3] |= np.left_shift(1, v[at] & 7).astype(np.uint8)
    return out
