"""Batch kernels for the longitudinal protocols (the client's laws, vectorized; probabilities at 2^-53).

Without a panel, each row is a fresh device (its memoized response drawn afresh). With one
(:func:`lgrr_memo`, :func:`memo_mean_devices`: what ``n`` devices memoized, drawn once), row ``i`` is
device ``i``'s report, so calling the kernel once per day with the same panel simulates repeated
collection from the same devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.numeric import checked_values
from ldp.batch.randomized_response import grr_encode_batch
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.longitudinal import LGRRParams, MemoMeanParams

__all__ = ["lgrr_memo", "lgrr_encode_batch", "MemoMeanDevices", "memo_mean_devices", "memo_mean_encode_batch",
           "memo_mean_rounding"]

Floats = npt.NDArray[np.float64]


def lgrr_memo(params: LGRRParams, n: int, rng: Any = None) -> np.ndarray:
    """The permanent responses of ``n`` devices: row i, column v = device i's memoized GRR of v."""
    k = params.domain_size
    flat = grr_encode_batch(params.permanent, np.tile(np.arange(k, dtype=np.int64), n), rng)
    return flat.reshape(n, k)


def lgrr_encode_batch(params: LGRRParams, values: Any, rng: Any = None, *, memo: Any = None) -> np.ndarray:
    """Reported indices: the permanent GRR (fresh, or device i's row of ``memo``), then the instantaneous one."""
    gen = as_generator(rng)
    x = checked_indices(values, params.domain_size)
    if memo is None:
        perm = grr_encode_batch(params.permanent, x, gen)
    else:
        table = np.asarray(memo)
        if table.shape != (x.size, params.domain_size):
            raise ValueError(f"memo must have one row of {params.domain_size} responses per value, got shape "
                             f"{table.shape} for {x.size} values")
        perm = table[np.arange(x.size), x]
    return grr_encode_batch(params.instantaneous, perm, gen)


class MemoMeanDevices(NamedTuple):
    """``n`` devices of the memoized 1BitMean: α in [0, 1) and the memoized bit of every edge (n, s + 1)."""

    alpha: Floats
    bits: npt.NDArray[np.uint8]


def _memo_bits(params: MemoMeanParams, j: np.ndarray, gen: np.random.Generator) -> npt.NDArray[np.uint8]:
    """The 1BitMean bit of edges ``j``: ``bernoulli(j/s) XOR bernoulli(q)``."""
    b0 = gen.random(j.shape) < j / params.buckets
    return (b0 ^ (gen.random(j.shape) < params.memo.q)).astype(np.uint8)


def memo_mean_devices(params: MemoMeanParams, n: int, rng: Any = None) -> MemoMeanDevices:
    """What ``n`` devices hold: their α and the memoized bits of all ``s + 1`` edges."""
    gen = as_generator(rng)
    edges = np.broadcast_to(np.arange(params.buckets + 1), (n, params.buckets + 1))
    return MemoMeanDevices(gen.random(n), _memo_bits(params, edges, gen))


def memo_mean_rounding(params: MemoMeanParams, x: Floats, alpha: Floats) -> npt.NDArray[np.int64]:
    """α-point rounding: edge ``j0 + 1`` where ``α < φ``, else ``j0`` (``s·unit(x) = j0 + φ``)."""
    s = params.buckets
    u = np.clip((x - params.low) / (params.high - params.low), 0.0, 1.0) * s
    j0 = np.minimum(np.floor(u), s).astype(np.int64)
    return j0 + (alpha < u - j0)


def memo_mean_encode_batch(params: MemoMeanParams, values: Any, rng: Any = None, *,
                           devices: MemoMeanDevices | None = None) -> npt.NDArray[np.uint8]:
    """Reported bits (uint8): the memoized bit of the rounded value (fresh devices, or ``devices``),
    flipped with probability γ."""
    gen = as_generator(rng)
    x = checked_values(params, values)
    if devices is None:
        j = memo_mean_rounding(params, x, gen.random(x.size))
        bits = _memo_bits(params, j, gen)
    else:
        if devices.alpha.shape != (x.size,):
            raise ValueError(f"devices must hold one device per value: {devices.alpha.shape[0]} for {x.size}")
        bits = devices.bits[np.arange(x.size), memo_mean_rounding(params, x, devices.alpha)]
    if params.gamma_realized > 0:
        bits = bits ^ (gen.random(x.size) < params.gamma_realized).astype(np.uint8)
    return bits
