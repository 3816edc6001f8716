"""Hadamard Response, server side: aggregate (histogram of ``j``), FWHT decoder, exact variance.

HR is a pure frequency oracle (:mod:`ldp.decoders.pure`): a report supports ``v`` when ``j ∈ C_v``, with
``p* = p = e^ε/(e^ε+1)`` (realized) and ``q* = 1/2`` exactly (a user of ``u ≠ v`` reports uniformly on a half
of ``[0, K)`` that meets ``C_v`` in exactly ``K/4`` columns). With ``S_v`` the reports in ``C_v`` and ``h`` the
histogram of ``j``, the Hadamard transform gives every ``S_v`` at once: ``(H_K h)[v+1] = S_v − (n − S_v)``, so

    ``ĉ_v = (S_v − n/2)/(p − 1/2) = (H_K h)[v+1]/(2p − 1)``   (unbiased; one FWHT, O(K log K)),

    ``Var[ĉ_v] = (f_v·p(1−p) + (n − f_v)/4)/(p − 1/2)² = n/(2p−1)² − f_v``
    (``4p(1−p) − 1 = −(2p−1)²``): per user ``(e^ε+1)²/(e^ε−1)²`` at ``f_v ≪ n``,
    ``(e^ε+1)²/(4e^ε)`` times the optimum ``4e^ε/(e^ε−1)²``.

Aggregate-level simulation is exact: each user reports inside its own set w.p. ``p``; given that, ``j`` is
uniform on a half. A uniform ``j`` on ``[0, K)`` is in ``C_v`` w.p. 1/2, so the law is the mixture "own half
w.p. ``2p − 1``, else uniform on ``[0, K)``": ``h = Σ_v Mult(Bin(f_v, 2p−1), uniform on C_v) + Mult(rest, 1/K)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.hadamard_response import own_half
from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.pure import pure_count_variance
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.results import Estimates
from ldp.decoders.sketch import fwht
from ldp.encoders.hadamard_response import HRParams
from ldp.randomness import as_generator

__all__ = ["HRAggregate", "hr_variance", "hr_counts"]


def hr_variance(params: HRParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v] = n/(2p−1)² − f_v`` of each value's count estimate given the true counts ``f_v``."""
    t = _true_counts(true_counts, params.domain_size)
    return pure_count_variance(t, int(t.sum()), params.p, params.q)


def hr_counts(params: HRParams, histogram: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unbiased counts ``ĉ_v = (H_K h)[v+1]/(2p − 1)`` from the histogram ``h`` of reported ``j`` (one FWHT)."""
    h = np.asarray(histogram, dtype=np.float64).reshape(1, -1)
    return fwht(h)[0, 1:params.domain_size + 1] / (2.0 * params.p - 1.0)


class HRAggregate(Aggregate):
    """Sufficient statistics of Hadamard Response: how many reports name each ``j`` in ``[0, K)``."""

    params_type: ClassVar[type] = HRParams
    params: HRParams
    counts: npt.NDArray[np.int64]  # (K,), created by _init_state

    @classmethod
    def state_layout(cls, params: HRParams) -> StateLayout:
        return {"counts": (np.dtype(np.int64), (params.order,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        j, k = columns["j"], self.params.order
        for start in range(0, j.size, 1 << 20):  # bounded temporaries (bincount widens to intp)
            self.counts += np.bincount(j[start:start + (1 << 20)], minlength=k)

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased count of users per value (one FWHT), with plug-in standard errors and normal CIs."""
        pr = self.params
        count = hr_counts(pr, self.counts)
        var = pure_count_variance(np.clip(count, 0.0, self.n), self.n, pr.p, pr.q)
        items = [pr.label_of(i) for i in range(pr.domain_size)]
        return Estimates(pr.protocol, items, self.n, count, np.sqrt(var), confidence, pr.privacy_cost)

    @staticmethod
    def exact_variance(params: HRParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return hr_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: HRParams, true_counts: Any, rng: Any = None) -> HRAggregate:
        """Exact aggregate-level draw via the own-half-or-uniform mixture (module docstring)."""
        t = _true_counts(true_counts, params.domain_size)
        gen, agg, k = as_generator(rng), cls(params), params.order
        own = gen.binomial(t, 2.0 * params.p - 1.0)
        ends = np.cumsum(own)
        start = 0
        while start < t.size:  # values in groups of about 2^22 own-half reports: bounded temporaries
            stop = max(int(np.searchsorted(ends, ends[start] - own[start] + (1 << 22), "right")), start + 1)
            rows = np.repeat(np.arange(start + 1, stop + 1, dtype=np.uint32), own[start:stop])
            agg.counts += np.bincount(own_half(gen, rows, k), minlength=k)
            start = stop
        agg.counts += gen.multinomial(int(t.sum() - own.sum()), np.full(k, 1.0 / k))
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The pure-oracle variance with the realized ``p``, ``q``."""
        return float(pure_count_variance(count, n, params.p, params.q))
