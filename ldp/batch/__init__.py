"""Vectorized (numpy) batch encoding kernels, one module per protocol.

These are the simulation paths behind each encoder's ``encode_batch``. They live outside
:mod:`ldp.encoders` so that the client package holds no numpy code at all; an encoder imports
its kernel only when ``encode_batch`` is called.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.hashing import value_bytes

__all__ = ["checked_indices", "check_candidates", "values_and_candidates"]


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


def check_candidates(candidates: Any) -> list[str | bytes]:
    """The candidate strings as a list (``TypeError`` for anything but str/bytes, ``ValueError`` for repeats)."""
    if isinstance(candidates, (str, bytes)):
        raise TypeError("candidates must be a sequence of strings, not a single string")
    out = list(candidates)
    for c in out:
        if not isinstance(c, (str, bytes)):
            raise TypeError(f"candidates must be str or bytes, got {type(c).__name__} ({c!r})")
    keys = [value_bytes(c) for c in out]
    if len(set(keys)) != len(keys):
        seen: set[bytes] = set()
        dup = next(c for c, key in zip(out, keys, strict=True) if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValueError(f"candidate {dup!r} appears more than once")
    return out


def values_and_candidates(values: Any, candidates: Sequence[str | bytes] | None) -> tuple[np.ndarray, list]:
    """``(indices, candidate list)`` from indices into ``candidates`` or from the strings themselves."""
    if isinstance(values, np.ndarray):
        arr = values
    else:  # strings stay Python objects: numpy's fixed-width str/bytes would drop trailing NULs
        values = list(values)
        arr = np.array(values, dtype=object) if values and isinstance(values[0], (str, bytes)) else np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {arr.shape}")
    if arr.size and (arr.dtype.kind in "iu"):
        if candidates is None:
            raise ValueError("integer values index into `candidates`; pass the candidate strings")
        cands = check_candidates(candidates)
        if arr.min() < 0 or arr.max() >= len(cands):
            raise ValueError(f"value indices must be in [0, {len(cands)}), got [{arr.min()}, {arr.max()}]")
        return arr, cands
    if arr.size == 0:
        return np.zeros(0, np.int64), check_candidates(candidates or [])
    if arr.dtype.kind not in "USO":
        raise TypeError(f"values must be candidate indices or strings, got dtype {arr.dtype}")
    uniq, inverse = np.unique(arr, return_inverse=True)
    return inverse.reshape(-1), check_candidates(uniq.tolist())
