"""Batch kernels for the mean mechanisms (exactly the client's laws, vectorized; probabilities at 2^-53).

``values`` are the numbers themselves (a 1-D array), checked as the client's ``prepare`` checks one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.numeric import DuchiParams, HybridParams, NumericParams, PiecewiseParams

__all__ = ["checked_values", "unit_values", "grid_values", "duchi_encode_batch", "piecewise_encode_batch",
           "hybrid_encode_batch"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def checked_values(params: NumericParams, values: Any) -> Floats:
    """``values`` as a 1-D float64 array in ``[low, high]``; refuses what the client's ``prepare`` refuses
    (non-numbers, booleans, NaN, ±inf, out-of-range unless ``clip``), naming the rule."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"values must be a 1-D array of numbers, got shape {arr.shape}")
    if arr.size and (arr.dtype == bool or arr.dtype.kind not in "iuf"):
        raise TypeError(f"{params.protocol} values must be int or float, got dtype {arr.dtype}")
    x = arr.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"{params.protocol} values must be finite (found NaN or inf)")
    if x.size and (x.min() < params.low or x.max() > params.high):
        if not params.clip:
            raise ValueError(f"{params.protocol} values must be in [low, high] = [{params.low}, {params.high}], "
                             f"got range [{x.min()}, {x.max()}] (pass clip=True in the params to clip instead)")
        x = np.clip(x, params.low, params.high)
    return x


def unit_values(params: NumericParams, x: Floats) -> Floats:
    """``(x − low)/(high − low)`` clamped to [0, 1], as :meth:`NumericParams.unit`."""
    return np.clip((x - params.low) / (params.high - params.low), 0.0, 1.0)


def grid_values(params: PiecewiseParams, x: Floats) -> tuple[Ints, Floats]:
    """``(k, φ)`` of :meth:`PiecewiseParams.grid` for each value (``x`` in ``[low, high]``, as checked)."""
    m = params.steps
    u = np.subtract(x, params.low)
    u /= params.high - params.low
    u *= m
    np.clip(u, 0.0, m, out=u)
    k = u.astype(np.int64)  # truncation = floor for u >= 0
    u -= k  # φ; 0 where k = M
    return k, u


def _duchi_bits(params: DuchiParams, x: Floats, gen: np.random.Generator) -> npt.NDArray[np.uint8]:
    b0 = gen.random(x.size) < unit_values(params, x)
    return (b0 ^ (gen.random(x.size) < params.q)).astype(np.uint8)


def _piecewise_cells(params: PiecewiseParams, x: Floats, gen: np.random.Generator) -> npt.NDArray[np.uint32]:
    k, frac = grid_values(params, x)
    k += gen.random(x.size) < frac
    w, g = params.window, params.cells
    inside = gen.random(x.size) < params.p_in
    r = gen.integers(0, g - w, size=x.size)  # outside: r < k stays, else r + w
    r += w * (r >= k)
    offset = gen.integers(0, w, size=x.size)
    offset += k  # inside: k + uniform offset
    return np.where(inside, offset, r).astype(np.uint32)


def duchi_encode_batch(params: DuchiParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint8]:
    """Duchi's bits (uint8) for an array of numbers."""
    return _duchi_bits(params, checked_values(params, values), as_generator(rng))


def piecewise_encode_batch(params: PiecewiseParams, values: Any, rng: Any = None) -> npt.NDArray[np.uint32]:
    """The discrete PM's cells (uint32) for an array of numbers."""
    return _piecewise_cells(params, checked_values(params, values), as_generator(rng))


def hybrid_encode_batch(params: HybridParams, values: Any,
                        rng: Any = None) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint32]]:
    """``(pm, out)`` of the Hybrid Mechanism for an array of numbers."""
    x, gen = checked_values(params, values), as_generator(rng)
    pm = gen.random(x.size) < params.alpha
    out = np.empty(x.size, dtype=np.uint32)
    if pm.any():
        out[pm] = _piecewise_cells(params.piecewise, x[pm], gen)
    out[~pm] = _duchi_bits(params.duchi, x[~pm], gen)
    return pm.astype(np.uint8), out
