"""Batch kernel for Subset Selection: the client's law (:mod:`ldp.encoders.subset_selection`), vectorized.

Per report: ``v ∈ S`` with probability ``p`` (``Generator.random``, 2^-53 resolution), then a uniform subset of
``ω − 1`` (or ``ω``) of the ``d − 1`` others by Floyd's algorithm vectorized over rows
(:func:`ldp.batch.histogram._sampled_rows`), spread around column ``v``; in chunks of bounded memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.histogram import _sampled_rows
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.subset_selection import SSParams

__all__ = ["ss_encode_batch"]

_CELLS = 1 << 24  # unpacked bits per chunk


def ss_encode_batch(params: SSParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint8]:
    """Packed little-endian rows ``(n, ceil(d/8))`` of reports of the value indices ``values``."""
    d, w = params.domain_size, params.omega
    x = checked_indices(values, d).astype(np.int64)
    gen = as_generator(rng)
    out = np.empty((x.size, (d + 7) // 8), np.uint8)
    step = max(1, _CELLS // d)
    cols = np.arange(d)
    for start in range(0, x.size, step):
        v = x[start:start + step]
        own = gen.random(v.size) < params.p
        others = np.empty((v.size, d - 1), bool)  # the d − 1 others, in order, v removed
        for sel, k in ((own, w - 1), (~own, w)):
            if sel.any():
                rows = _sampled_rows(gen, int(sel.sum()), d - 1, k)
                others[sel] = np.unpackbits(rows, axis=1, count=d - 1, bitorder="little").astype(bool)
        src = cols - (cols > v[:, None])  # column c of the report is column c − [c > v] of `others`
        bits = np.take_along_axis(others, np.minimum(src, d - 2), axis=1)
        bits[np.arange(v.size), v] = own
        out[start:start + v.size] = np.packbits(bits, axis=1, bitorder="little")
    return out
