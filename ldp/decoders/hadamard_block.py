"""Blocked Hadamard Response, server side: aggregate (histogram of ``j``), per-block FWHT decoder, exact variance.

With ``h_i`` the histogram of block ``i`` (``b`` outputs) and ``H_b`` its Hadamard matrix, the coefficient of
value ``x`` (row ``r``, block ``i``) is ``c_x = (H_b h_i)[r] = 2S_x − T_i``: ``S_x`` the reports in ``C_x``, ``T_i``
those in block ``i`` (Acharya, Sun, Zhang 2019, §5: the estimator ``(S_x − T_i/2)``, scaled). Per user, a report
adds ``H_b[r, pos]`` when it falls in block ``i`` and 0 elsewhere; its mean is ``1 − γ`` for a user of ``x`` (the
own-set branch lands in ``C_x``; the uniform branch averages to 0) and 0 for every other user (another row's
``+1`` half meets ``C_x`` in half its outputs; another block adds nothing). So, with ``F_i`` the users whose
value is in block ``i`` and ``f_x`` those of ``x``,

    ``ĉ_x = (H_b h_i)[r]/(1 − γ)``  (unbiased; one FWHT per block, O(K log b)),

    ``Var[ĉ_x] = (E[T_i] − f_x(1−γ)²)/(1−γ)² = (n·γ/B + (1 − γ)·F_i)/(1 − γ)² − f_x``

(the square of a report's term is 1 exactly when it falls in block ``i``: ``E[T_i] = nγ/B + (1−γ)F_i``). At
``B = 1``, ``1 − γ = 2p − 1`` and this is HR's ``n/(2p−1)² − f_x``. For a rare value with ``F_i ≈ n/B``, per
user ``(2B + e^ε − 1)²/(B(e^ε − 1)²)``, least near ``B = (e^ε − 1)/2`` where it is ``2(1 − e^−ε)`` times the
optimum ``4e^ε/(e^ε − 1)²``.

Aggregate-level simulation is exact: ``Bin(f_x, 1 − γ)`` users of each ``x`` report uniformly on ``C_x``, and
the rest of the ``n`` uniformly on ``[0, K)``: ``Multinomial(rest, 1/K)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.hadamard_block import own_set
from ldp.decoders.hadamard_response import HRAggregate
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.results import Estimates
from ldp.decoders.sketch import fwht
from ldp.encoders.hadamard_block import HRBlockParams, block_layout
from ldp.randomness import as_generator

__all__ = ["HRBlockAggregate", "hrb_variance", "hrb_counts", "block_totals"]


def block_totals(params: HRBlockParams, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``F_i`` of each value's block: the sum of ``counts`` over the values of that block (``x mod B``)."""
    c = np.asarray(counts, dtype=np.float64)
    blocks = params.nblocks
    blk = np.arange(params.domain_size) % blocks
    totals = np.bincount(blk, weights=c, minlength=blocks).astype(np.float64)
    return totals[blk]


def _variance(params: HRBlockParams, f: npt.NDArray[np.float64], n: float) -> npt.NDArray[np.float64]:
    g = params.gamma
    return (n * g / params.nblocks + (1.0 - g) * block_totals(params, f)) / (1.0 - g) ** 2 - f


def hrb_variance(params: HRBlockParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_x] = (nγ/B + (1−γ)F_i)/(1−γ)² − f_x`` of each value's count estimate given the true counts."""
    t = _true_counts(true_counts, params.domain_size).astype(np.float64)
    return _variance(params, t, float(t.sum()))


def hrb_counts(params: HRBlockParams, histogram: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unbiased counts ``ĉ_x = (H_b h_i)[r]/(1 − γ)`` from the histogram of reported ``j`` (a FWHT per block)."""
    blocks, b = params.nblocks, params.block_order
    coef = fwht(np.asarray(histogram, dtype=np.float64).reshape(blocks, b))
    x = np.arange(params.domain_size)
    return coef[x % blocks, x // blocks + 1] / (1.0 - params.gamma)


class HRBlockAggregate(HRAggregate):
    """Sufficient statistics of blocked Hadamard Response: how many reports name each ``j`` in ``[0, K)`` (HR's
    state and fold, :class:`~ldp.decoders.hadamard_response.HRAggregate`; its own estimator)."""

    params_type: ClassVar[type] = HRBlockParams
    params: Any  # HRBlockParams: what HR's state and fold read of it (order)

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased count of users per value (a FWHT per block), with plug-in standard errors (``clip(ĉ, 0, n)``
        for ``f_x`` and its block's sum, capped at ``n``, for ``F_i``) and normal CIs."""
        pr = self.params
        count = hrb_counts(pr, self.counts)
        f = np.clip(count, 0.0, self.n)
        g = pr.gamma
        big = np.minimum(block_totals(pr, f), self.n)
        var = np.maximum((self.n * g / pr.nblocks + (1.0 - g) * big) / (1.0 - g) ** 2 - f, 0.0)
        items = [pr.label_of(i) for i in range(pr.domain_size)]
        return Estimates(pr.protocol, items, self.n, count, np.sqrt(var), confidence, pr.privacy_cost)

    @staticmethod
    def exact_variance(params: HRBlockParams,  # type: ignore[override]  # its own params type
                       true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return hrb_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: HRBlockParams,  # type: ignore[override]  # its own params type
                 true_counts: Any, rng: Any = None) -> HRBlockAggregate:
        """Exact aggregate-level draw of the uniform-or-own-set mixture (module docstring)."""
        t = _true_counts(true_counts, params.domain_size)
        gen, agg, k = as_generator(rng), cls(params), params.order
        blocks, b = params.nblocks, params.block_order
        own = gen.binomial(t, 1.0 - params.gamma)
        ends = np.cumsum(own)
        start = 0
        while start < t.size:  # values in groups of about 2^22 own-set reports: bounded temporaries
            stop = max(int(np.searchsorted(ends, ends[start] - own[start] + (1 << 22), "right")), start + 1)
            x = np.repeat(np.arange(start, stop, dtype=np.uint32), own[start:stop])
            j = gen.integers(0, b, size=x.size, dtype=np.uint32)
            agg.counts += np.bincount(own_set(x, j, blocks, b), minlength=k)
            start = stop
        agg.counts += gen.multinomial(int(t.sum() - own.sum()), np.full(k, 1.0 / k))
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The exact variance of a value in a fullest block (``m = ⌈d/B⌉`` values), the other ``n − count`` users
        spread evenly over the other ``d − 1`` values: ``F_i = count + (n − count)(m − 1)/(d − 1)``."""
        d = params.domain_size
        m, _ = block_layout(d, params.nblocks)
        g = params.gamma
        big = count + (n - count) * (m - 1) / max(d - 1, 1)
        return float((n * g / params.nblocks + (1.0 - g) * big) / (1.0 - g) ** 2 - count)
