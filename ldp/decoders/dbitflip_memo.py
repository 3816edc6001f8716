"""Memoized dBitFlip, server side: dBitFlip's aggregate, estimator and exact variance with the per-report
probabilities (:mod:`ldp.decoders.histogram`).

Over the devices' secrets (sample and memoized bits) and flips, one report of a device in bucket v is dBitFlip with
``p1' = γ + (1 − 2γ)·p1`` and ``p0' = γ + (1 − 2γ)·p0`` (:attr:`~ldp.encoders.dbitflip_memo.MemoDBitFlipParams.p1`,
``p0``), independently of the other devices. So with one report per device per window, ``ĉ_v = (O_v − p0'·N_v)/(r·Δ')``
is unbiased with dBitFlip's exact variance (``r = d/k``, ``Δ' = p1' − p0'``):

    ``Var[ĉ_v] = (n − f_v)·p0'(1−p0')/(r·Δ'²) + f_v·((p1'(1−p1') + Δ'²)/(r·Δ'²) − 1)``.

Across windows the same devices replay their memoized bits: two windows' estimates are correlated (identical up to
the flips for devices whose bucket did not change), so averaging windows does not reduce the memoized noise.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.histogram import DBitFlipAggregate, _true_counts, dbitflip_variance
from ldp.encoders.dbitflip_memo import MemoDBitFlipParams

__all__ = ["MemoDBitFlipAggregate", "memo_dbitflip_variance"]


def memo_dbitflip_variance(params: MemoDBitFlipParams, true_counts: npt.ArrayLike, n: float | None = None
                           ) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` of one window (module docstring): dBitFlip's with the per-report ``p0'``, ``p1'``."""
    return dbitflip_variance(params, true_counts, n)  # type: ignore[arg-type]  # reads p0, p1, d, num_buckets


class MemoDBitFlipAggregate(DBitFlipAggregate):
    """dBitFlip's sufficient statistics (per bucket, reports that sampled it and the ones among them) and estimator,
    with the per-report probabilities of memoized dBitFlip."""

    params_type: ClassVar[type] = MemoDBitFlipParams
    params: Any  # MemoDBitFlipParams: what DBitFlipAggregate reads of it (p0, p1, d, num_buckets, labels)

    @staticmethod
    def exact_variance(params: MemoDBitFlipParams,  # type: ignore[override]  # its own params type
                       true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return memo_dbitflip_variance(params, _true_counts(true_counts, params.num_buckets))

