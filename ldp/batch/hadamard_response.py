"""Batch kernel for Hadamard Response: the client's law (:mod:`ldp.encoders.hadamard_response`), vectorized.

Per report: in ``C_v`` with probability ``p`` (``Generator.random`` at 2^-53 resolution), ``j`` uniform in
``[0, K)``, then flipped at the lowest set bit of ``v + 1`` when the parity of ``j & (v+1)`` is not the one
wanted — the client's bijection between the halves, so ``j`` is uniform on the chosen half.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.hadamard_response import HRParams

__all__ = ["hr_encode_batch", "own_half", "parity"]

_CHUNK = 1 << 20  # reports per step: bounded temporaries


def parity(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8]:
    """``popcount(x) & 1`` of each element."""
    return np.bitwise_count(x) & np.uint8(1)


def own_half(gen: np.random.Generator, row: npt.NDArray[np.uint32], order: int,
             outside: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.uint32]:
    """``j`` uniform on ``C_v`` (row ``v + 1``), or on its complement where ``outside``: uniform on ``[0, K)``,
    flipped at the lowest set bit of the row where the parity of ``j & row`` is not the one wanted."""
    j = gen.integers(0, order, size=row.size, dtype=np.uint32)
    wrong = parity(j & row) != (False if outside is None else outside)
    j ^= (row & (~row + np.uint32(1))) * wrong
    return j


def hr_encode_batch(params: HRParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint32]:
    """Reported ``j`` (uint32) of the value indices ``values``."""
    x = checked_indices(values, params.domain_size)
    gen = as_generator(rng)
    out = np.empty(x.size, np.uint32)
    for start in range(0, x.size, _CHUNK):
        row = x[start:start + _CHUNK].astype(np.uint32) + np.uint32(1)
        outside = gen.random(row.size) >= params.p
        out[start:start + row.size] = own_half(gen, row, params.order, outside)
    return out
