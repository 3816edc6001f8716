"""Batch kernel for unary encoding (SUE, OUE, fresh L-OUE devices, bucketized OUE): the client's law, vectorized.

Every bit of a report is independent, 1 with ``p`` where it is the value's own and ``q`` elsewhere, so a
batch is one :func:`~ldp.batch.bits.packed_bernoulli` call over one-hot rows (at the client's 2^-64 resolution).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.bits import packed_bernoulli, row_padding_mask
from ldp.batch.histogram import onehot_rows
from ldp.encoders.unary import UnaryParams
from ldp.randomness import as_generator

__all__ = ["unary_encode_batch"]


def unary_encode_batch(params: UnaryParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint8]:
    """Packed little-endian rows ``(n, ceil(d/8))`` of reports of the value indices ``values``."""
    d = params.domain_size
    x = checked_indices(values, d).astype(np.int64)
    rows = packed_bernoulli(as_generator(rng), onehot_rows(x, d), params.q, params.p)
    rows &= row_padding_mask(d)
    return rows
