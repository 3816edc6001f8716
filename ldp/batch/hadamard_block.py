"""Batch kernel for blocked Hadamard Response: the client's law (:mod:`ldp.encoders.hadamard_block`), vectorized.

Per report: the uniform branch with probability ``γ`` (``Generator.random`` at 2^-53 resolution) and one uniform
``j`` in ``[0, K)``. Where the branch is not taken, ``j mod b`` (uniform on ``[0, b)``, independent of the branch,
since ``b`` divides ``K``) is the position, flipped at the lowest set bit of the row where ``popcount(pos & row)``
is odd — the client's bijection between the halves — and put in the value's block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.hadamard_response import parity
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.hadamard_block import HRBlockParams

__all__ = ["hrb_encode_batch", "own_set"]

_CHUNK = 1 << 20  # reports per step: bounded temporaries


def own_set(x: npt.NDArray[np.uint32], j: npt.NDArray[np.uint32], blocks: int, b: int) -> npt.NDArray[np.uint32]:
    """The output in ``C_x`` whose position is ``j mod b``, or its image under the flip (the position uniform on
    the row's ``+1`` half when ``j mod b`` is uniform)."""
    row = x // np.uint32(blocks) + np.uint32(1)
    pos = j & np.uint32(b - 1)
    pos ^= (row & (~row + np.uint32(1))) * parity(pos & row)
    return (x % np.uint32(blocks)) * np.uint32(b) + pos


def hrb_encode_batch(params: HRBlockParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint32]:
    """Reported ``j`` (uint32) of the value indices ``values``."""
    x = checked_indices(values, params.domain_size)
    gen = as_generator(rng)
    blocks, b, k = params.nblocks, params.block_order, params.order
    out = np.empty(x.size, np.uint32)
    for start in range(0, x.size, _CHUNK):
        xs = x[start:start + _CHUNK].astype(np.uint32)
        uniform = gen.random(xs.size) < params.gamma
        j = gen.integers(0, k, size=xs.size, dtype=np.uint32)
        out[start:start + xs.size] = np.where(uniform, j, own_set(xs, j, blocks, b))
    return out
