"""Batch kernel for hierarchical histograms (HH_B, :mod:`ldp.encoders.range_tree`): the client's law, vectorized.

Each row draws its level exactly (a uniform integer below ``depth``, or below ``Σw`` mapped through the cumulative
weights), then the rows of each level (a loop over the ``depth`` levels, not over reports) are reported by that
level's oracle with the existing kernels: GRR's (:func:`~ldp.batch.randomized_response.grr_encode_batch`) or OUE's
(:func:`~ldp.batch.unary.unary_encode_batch`, whose ``B^l``-bit rows are widened to ``D`` bits with zeros).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.randomized_response import grr_encode_batch
from ldp.batch.unary import unary_encode_batch
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.range_tree import HHParams

__all__ = ["hh_encode_batch", "draw_levels"]


def draw_levels(params: HHParams, n: int, gen: np.random.Generator) -> npt.NDArray[np.int64]:
    """``n`` 0-based levels with the client's law: uniform below ``depth``, or ``r`` uniform below ``Σw`` and the
    first level whose cumulative weight exceeds it."""
    if not params.level_weights:
        return gen.integers(0, params.depth, size=n, dtype=np.int64)
    cum = np.cumsum(np.asarray(params.weights, dtype=np.int64))
    r = gen.integers(0, int(cum[-1]), size=n, dtype=np.int64)
    return np.searchsorted(cum, r, side="right").astype(np.int64)


def hh_encode_batch(params: HHParams, values: Any, rng: Any = None, *,
                    levels: Any = None) -> dict[str, npt.NDArray[Any]]:
    """Columns ``level`` (and ``y``, ``bits`` as the schema has them) of reports of the bucket indices ``values``;
    ``levels`` (0-based, one per value) fixes the levels instead of drawing them (simulation only)."""
    D, h = params.num_buckets, params.depth
    x = checked_indices(values, D).astype(np.int64)
    gen = as_generator(rng)
    if levels is None:
        lev = draw_levels(params, x.size, gen)
    else:
        lev = checked_indices(levels, h).astype(np.int64)
        if lev.shape != x.shape:
            raise ValueError(f"levels must be one level per value, got {lev.size} for {x.size}")
    kinds = params.oracle_kinds
    y = np.zeros(x.size, np.min_scalar_type(max(D - 1, 1))) if "grr" in kinds else None
    bits = np.zeros((x.size, (D + 7) // 8), np.uint8) if "oue" in kinds else None
    for level in range(h):
        rows = np.flatnonzero(lev == level)
        if not rows.size:
            continue
        m = params.level_size(level + 1)
        node = x[rows] // (D // m)
        oracle = params.level_oracle(level + 1)
        if kinds[level] == "grr":
            assert y is not None
            y[rows] = grr_encode_batch(oracle, node, gen)  # type: ignore[arg-type]
        else:
            assert bits is not None
            bits[rows, : (m + 7) // 8] = unary_encode_batch(oracle, node, gen)  # type: ignore[arg-type]
    columns: dict[str, npt.NDArray[Any]] = {"level": lev.astype(np.min_scalar_type(max(h - 1, 1)))}
    if y is not None:
        columns["y"] = y
    if bits is not None:
        columns["bits"] = bits
    return columns
