"""Batch kernels for binary RR and GRR (exactly the client mechanisms, vectorized)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.batch import checked_indices
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.randomized_response import BinaryRRParams, GRRParams

__all__ = ["rr_encode_batch", "grr_encode_batch"]


def rr_encode_batch(params: BinaryRRParams, values: Any, rng: Any = None) -> np.ndarray:
    """Reported bits (uint8): 1 with probability q for a true 1 and p for a true 0."""
    x = checked_indices(values, 2)
    probs = np.array([params.p, params.q])
    return (as_generator(rng).random(x.size) < probs[x]).astype(np.uint8)


def grr_encode_batch(params: GRRParams, values: Any, rng: Any = None) -> np.ndarray:
    """Reported indices: each value kept with probability p*, else a uniform other value."""
    d = params.domain_size
    x = checked_indices(values, d)
    gen = as_generator(rng)
    dtype = np.min_scalar_type(d - 1)
    other = gen.integers(0, d - 1, size=x.size, dtype=dtype)
    other += other >= x
    keep = gen.random(x.size) < params.p
    return np.where(keep, x.astype(dtype, copy=False), other)
