"""Batch kernels of memoized dBitFlip (:mod:`ldp.encoders.dbitflip_memo`), the client's law vectorized.

Without a panel, each row is a fresh device: its sample and the memoized response of its bucket are drawn afresh,
so a report is dBitFlip with the per-report ``p0``, ``p1`` (``γ`` folded in) and :func:`ldp.batch.histogram.
dbitflip_encode_batch` draws it. With one (:func:`memo_dbitflip_devices`: what ``n`` devices memoized, drawn once),
row ``i`` is device ``i``'s report: its sample, the memoized bits of its bucket, each flipped afresh with ``γ``;
calling the kernel once per window with the same panel simulates repeated collection from the same devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ldp.batch import checked_indices
from ldp.batch.bits import packed_bernoulli, packed_uniform
from ldp.batch.histogram import _sampled_rows, dbitflip_encode_batch, onehot_rows
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.encoders.dbitflip_memo import MemoDBitFlipParams

__all__ = ["MemoDBitFlipDevices", "memo_dbitflip_devices", "memo_dbitflip_encode_batch", "MAX_PANEL_BYTES"]

MAX_PANEL_BYTES = 1 << 28
"""The largest memoized-bits table a panel may hold (``n·k·⌈k/8⌉`` bytes)."""

Rows = npt.NDArray[np.uint8]


class MemoDBitFlipDevices(NamedTuple):
    """``n`` devices: their samples (packed rows, ``(n, ⌈k/8⌉)``) and the memoized response of every value bucket
    (``(n, k, ⌈k/8⌉)``: device i, bucket v)."""

    sampled: Rows
    bits: Rows


def memo_dbitflip_devices(params: MemoDBitFlipParams, n: int, rng: Any = None) -> MemoDBitFlipDevices:
    """Draw what ``n`` devices memoize: a uniform d-subset each, and for each value bucket v a bit per sampled
    bucket j, Bernoulli(p1) at ``j = v``, Bernoulli(p0) elsewhere (the memo's probabilities)."""
    k, gen = params.num_buckets, as_generator(rng)
    nbytes = (k + 7) // 8
    if n * k * nbytes > MAX_PANEL_BYTES:
        raise ValueError(f"a panel of {n} devices over {k} buckets needs {n * k * nbytes} bytes (at most "
                         f"{MAX_PANEL_BYTES}); simulate fewer devices")
    sampled = _sampled_rows(gen, n, k, params.d)
    bits = np.empty((n, k, nbytes), dtype=np.uint8)
    for v in range(k):
        own = onehot_rows(np.full(n, v, dtype=np.int64), k)
        bits[:, v] = packed_bernoulli(gen, own, params.memo.p0, params.memo.p1) & sampled
    return MemoDBitFlipDevices(sampled, bits)


def memo_dbitflip_encode_batch(params: MemoDBitFlipParams, values: Any, rng: Any = None, *,
                               devices: MemoDBitFlipDevices | None = None) -> tuple[Rows, Rows]:
    """``(sampled, bits)`` packed rows of reports of bucket indices ``values``: fresh devices, or row i of
    ``devices`` for value i."""
    if devices is None:
        return dbitflip_encode_batch(params, values, rng)  # type: ignore[arg-type]  # p0, p1, d, num_buckets
    k = params.num_buckets
    x = checked_indices(values, k).astype(np.int64)
    if devices.sampled.shape[0] != x.size or devices.bits.shape[:2] != (x.size, k):
        raise ValueError(f"devices must hold {x.size} devices (one per value) over {k} buckets, got "
                         f"{devices.sampled.shape[0]} devices and a table of shape {devices.bits.shape}")
    bits = devices.bits[np.arange(x.size), x]
    g = params.gamma_realized
    if g > 0:
        bits = bits ^ (packed_uniform(as_generator(rng), bits.shape, g) & devices.sampled)
    return devices.sampled.copy(), bits
