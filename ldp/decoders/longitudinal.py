"""Longitudinal protocols, server side: aggregates, unbiased estimators, exact variances, simulation.

Both estimators are over the devices' randomness: their secrets (the memoized responses, α) and
the per-report coins, with one report per device per window from devices whose secrets are
independent. Within one window that is what an aggregate holds. Across windows, a device replays
its memoized responses, so successive windows' estimates are correlated (a device whose value does
not change adds the same memoized error every day): averaging windows does not shrink that part.

L-GRR (``lgrr``): the two rounds compose to one GRR channel (:func:`composed_grr`) with the realized
``p* = p1·p2 + (1 − p1)·q2`` and ``q* = (1 − p*)/(k − 1)``, ``λ* = p* − q*``, so its aggregate *is* GRR's
(:class:`~ldp.decoders.randomized_response.GRRAggregate`, which reads ``(p*, q*)`` from the params'
``support_probabilities``): ``ĉ_v = (C_v − n·q*)/(p* − q*)``,
``Var[ĉ_v] = (f_v·p*(1 − p*) + (n − f_v)·q*(1 − q*))/(p* − q*)²``, and the aggregate-level draw is GRR's
keep-or-uniform mixture.
:func:`two_path_second_round` is the second-round probability of Arcolezi et al. (2021), kept for
comparison: docs/protocols/longitudinal.md, "The second round", says why ours differs for k > 2.

Memoized 1BitMean (``memo-mean``): over α and the memoized bit, ``Pr[bit = 1 | x] = P1 = q + φ(1 − 2q)``
with ``φ = (x − low)/(high − low)`` (``E_α[j]/s = φ``) and ``q = γ + (1 − 2γ)·q_memo`` (:attr:`MemoMeanParams.q`):
1BitMean with flip probability q. Each report has the unbiased value
``v = low + (high − low)·(bit − q)/(1 − 2q)``, ``Var[v | x] = (high − low)²·P1(1 − P1)/(1 − 2q)²``; the
mean estimate ``Σ v/n`` has variance ``Σ_i Var[v | x_i]/n²``, and the aggregate-level draw is
``ones = Σ_x Bin(n_x, P1(x))``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.numeric import checked_values, unit_values
from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.numeric import mean_from_histogram
from ldp.decoders.randomized_response import GRRAggregate, grr_variance
from ldp.encoders.longitudinal import LGRRParams, MemoMeanParams
from ldp.randomness import as_generator

__all__ = ["LGRRAggregate", "MemoMeanAggregate", "lgrr_variance", "memo_mean_report_variance", "composed_grr",
           "two_path_second_round"]

Floats = npt.NDArray[np.float64]
Counts = npt.NDArray[np.int64]


def _bincount(col: np.ndarray, size: int) -> Counts:
    out = np.zeros(size, dtype=np.int64)
    for start in range(0, col.size, 1 << 20):  # bounded temporaries (bincount widens to intp)
        out += np.bincount(col[start:start + (1 << 20)], minlength=size)
    return out


def lgrr_variance(params: LGRRParams, true_counts: npt.ArrayLike) -> Floats:
    """Exact variance of each value's count estimate given the true counts (one report per device): GRR's
    (:func:`~ldp.decoders.randomized_response.grr_variance`) with the realized ``(p*, q*)``."""
    return grr_variance(params, true_counts)


def composed_grr(p1: float, p2: float, k: int) -> tuple[float, float]:
    """``(p*, q*)`` of GRR(p2) applied to GRR(p1) over ``k`` values, exactly: a report names ``v`` from ``v``
    through ``m = v`` or through any of the ``k − 1`` other ``m``; it names ``u != v`` through ``m = v``,
    ``m = u`` or any of the ``k − 2`` others::

        p* = p1·p2 + (k − 1)·q1·q2        q* = p1·q2 + q1·p2 + (k − 2)·q1·q2        (qi = (1 − pi)/(k − 1))

    so ``p* − q* = (p1 − q1)(p2 − q2)``: one GRR with ``λ* = λ1·λ2``."""
    q1, q2 = (1.0 - p1) / (k - 1), (1.0 - p2) / (k - 1)
    return p1 * p2 + (k - 1) * q1 * q2, p1 * q2 + q1 * p2 + (k - 2) * q1 * q2


def two_path_second_round(p1: float, k: int, epsilon: float) -> float:
    """The second-round keep probability of Arcolezi et al. (2021, arXiv:2111.04636, L-GRR; also
    multi-freq-ldpy's ``L_GRR_Client``): the root ``p2`` of ``e^ε = (p1·p2 + q1·q2)/(p1·q2 + q1·p2)``,

        ``p2 = (q1 − e^ε·p1) / (−e^ε·p1 + (k − 1)·e^ε·q1 − (k − 1)·p1 + q1)``.

    That ratio counts two paths per report and omits the ``(k − 2)·q1·q2`` of reports passing through a third
    value (:func:`composed_grr`): it is the exact one at ``k = 2`` only. For ``k > 2`` the true ratio is
    smaller, so a report realizes less than ε and carries more noise than ε allows; ldp's
    :attr:`LGRRParams.instantaneous` takes the largest ``λ2`` that ε allows, ``λ*(ε)/λ1``. For comparison."""
    q1, e = (1.0 - p1) / (k - 1), math.exp(epsilon)
    return (q1 - e * p1) / (-e * p1 + (k - 1) * e * q1 - (k - 1) * p1 + q1)


class LGRRAggregate(GRRAggregate):
    """Sufficient statistics of L-GRR: how many reports name each value. Within one window a report is one GRR
    channel with the realized ``(p*, q*)`` (:attr:`LGRRParams.support_probabilities`), so this is GRR's aggregate
    (:class:`~ldp.decoders.randomized_response.GRRAggregate`) over those: its fold, unbiased count of devices per
    value with plug-in standard errors, exact variance, count variance for the planner and aggregate-level draw of
    fresh devices (keep with ``λ* = p* − q*``, else uniform)."""

    params_type: ClassVar[type] = LGRRParams
    params: LGRRParams
    report_loglik_types: ClassVar[tuple[type, ...]] = ()  # no joint estimation of memoized reports


def _probability_one(params: MemoMeanParams, x: Floats) -> Floats:
    return params.q + unit_values(params, x) * (1.0 - 2.0 * params.q)


def memo_mean_report_variance(params: MemoMeanParams, x: Floats) -> Floats:
    """``Var[v | x]`` of one report of each value in ``x``, over α, the memoized bit and the flip."""
    p1 = _probability_one(params, np.asarray(x, dtype=np.float64))
    return (params.high - params.low) ** 2 * p1 * (1.0 - p1) / (1.0 - 2.0 * params.q) ** 2


class MemoMeanAggregate(Aggregate):
    """Sufficient statistics of the memoized 1BitMean: the counts of bits 0 and 1."""

    params_type: ClassVar[type] = MemoMeanParams
    params: MemoMeanParams
    counts: Counts

    @classmethod
    def state_layout(cls, params: MemoMeanParams) -> StateLayout:
        return {"counts": (np.dtype(np.int64), (2,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self.counts += _bincount(columns["bit"], 2)

    def estimate(self, confidence: float = 0.95) -> MeanEstimate:  # type: ignore[override]  # a mean, not counts
        """The unbiased mean over devices with its plug-in standard error and a normal CI."""
        pr = self.params
        units = (np.array([0.0, 1.0]) - pr.q) / (1.0 - 2.0 * pr.q)
        unit_mean, unit_se = mean_from_histogram(units, self.counts)
        notes = ("unbiased over the devices' α, memoized bits and flips (one report per device); successive "
                 "windows from the same devices are correlated",)
        return MeanEstimate(pr.protocol, self.n, pr.low + (pr.high - pr.low) * unit_mean,
                            (pr.high - pr.low) * unit_se, confidence, pr.privacy_cost, pr.low, pr.high, notes)

    @classmethod
    def report_variance(cls, params: MemoMeanParams, x: Floats) -> Floats:
        return memo_mean_report_variance(params, x)

    @classmethod
    def exact_variance(cls, params: MemoMeanParams, values: Any) -> float:
        """Exact variance of the mean estimate of devices holding ``values``: ``Σ Var[v | x_i]/n²``."""
        x = checked_values(params, values)
        return float(memo_mean_report_variance(params, x).sum()) / x.size**2 if x.size else float("nan")

    @classmethod
    def simulate(cls, params: MemoMeanParams, values: Any, rng: Any = None) -> MemoMeanAggregate:
        """Exact aggregate-level draw of fresh devices: ``ones = Σ_x Bin(n_x, P1(x))``."""
        uniq, cnt = np.unique(checked_values(params, values), return_counts=True)
        ones = int(as_generator(rng).binomial(cnt, _probability_one(params, uniq)).sum())
        agg = cls(params)
        agg.counts[:] = [int(cnt.sum()) - ones, ones]
        agg.n = int(cnt.sum())
        return agg

