"""Vectorized (numpy) batch encoding kernels, one module per protocol.

These are the simulation paths behind each encoder's ``encode_batch``. They live outside
:mod:`ldp.encoders` so that the client package holds no numpy code at all; an encoder imports
its kernel only when ``encode_batch`` is called.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["checked_indices"]


def checked_indices(values: Any, d: int) -> np.ndarray:
    """``values`` as a 1-D integer array of domain indices in ``[0, d)``, with clear errors otherwise."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"values must be a 1-D array of indices, got shape {arr.shape}")
    if arr.dtype == bool:
        arr = arr.astype(np.uint8)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"values must be integer indices, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= d):
        raise ValueError(f"value indices must be in [0, {d}), got range [{arr.min()}, {arr.max()}]")
    return arr
