"""Batch kernel for unary encoding (SUE, OUE, fresh L-OUE devices, bucketized OUE): the client's law, vectorized.

Every bit of a report is independent, 1 with ``p`` where it is the value's own and ``q`` elsewhere, so a
batch is one :func:`~ldp.batch.bits.packed_bernoulli` call over one-hot rows (at the client's 2^-64 resolution).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.bits import packed_uniform, row_padding_mask
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.unary import UnaryParams

__all__ = ["unary_encode_batch"]


def unary_encode_batch(params: UnaryParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint8]:
    """Packed little-endian rows ``(n, ceil(d/8))`` of reports of the value indices ``values``.

    Every bit is drawn Bernoulli(q) by :func:`~ldp.batch.bits.packed_uniform` (one random byte per bit, the
    fast path of a single threshold), then each row's own bit is replaced by an independent Bernoulli(p):
    the bits stay independent, Bernoulli(p) at the value and Bernoulli(q) elsewhere."""
    d = params.domain_size
    x = checked_indices(values, d).astype(np.int64)
    gen = as_generator(rng)
    rows = packed_uniform(gen, (x.size, (d + 7) // 8), params.q)
    rows &= row_padding_mask(d)
    own = packed_uniform(gen, ((x.size + 7) // 8,), params.p)  # one Bernoulli(p) bit per row
    own_bits = np.unpackbits(own, bitorder="little")[: x.size]
    col, shift = x >> 3, (x & 7).astype(np.uint8)
    r = np.arange(x.size)
    rows[r, col] = (rows[r, col] & ~(np.uint8(1) << shift)) | (own_bits << shift)
    return rows
