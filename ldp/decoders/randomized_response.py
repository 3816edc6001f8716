"""Randomized response, server side: aggregates, estimators, exact variances, exact simulation.

Both protocols are pure frequency oracles (:mod:`ldp.decoders.pure`):

* binary RR with ``Pr[1|0] = p``, ``Pr[1|1] = q``: item 1 has ``p* = q, q* = p``; item 0 has
  ``p* = 1-p, q* = 1-q``. ``ĉ_1 = (C_1 − n·p)/(q − p)``, ``ĉ_0 = n − ĉ_1`` (seed 004, eq. 3.7 for
  fair coins), ``Var[ĉ_1] = (n_1·q(1−q) + n_0·p(1−p))/(q − p)²``;
* GRR: ``p* = e^ε/(e^ε+d−1)``, ``q* = 1/(e^ε+d−1)``;
  ``Var[ĉ_v] = (f_v·p*(1−p*) + (n−f_v)·q*(1−q*))/(p*−q*)²``.

Aggregate-level simulation draws the aggregate's exact distribution: for RR,
``C_1 = Bin(n_1, q) + Bin(n_0, p)``; for GRR, each user reports its own value with probability
``λ = p* − q*`` and otherwise a uniform value of the whole domain (this mixture *is* GRR, since
``λ + (1−λ)/d = p*`` and ``(1−λ)/d = q*``), so ``C = (Bin(f_v, λ))_v + Mult(n − Σ kept, 1/d)``.

:class:`GRRAggregate` reads the channel from its params' ``support_probabilities`` (``(p*, q*)``), so a protocol
whose one report is a GRR channel with other probabilities (L-GRR's two composed rounds,
:mod:`ldp.decoders.longitudinal`) subclasses it and names only its params type (:class:`GRRChannel`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol, Self

import numpy as np
import numpy.typing as npt

from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.pure import pure_count_estimate, pure_count_variance
from ldp.decoders.results import Estimates
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import as_generator, realized_probability

__all__ = ["RRAggregate", "GRRAggregate", "GRRBackedAggregate", "GRRChannel", "RR_ITEMS", "rr_variance",
           "grr_variance"]

RR_ITEMS = ("no", "yes")  # the item labels of binary RR's values 0 and 1


def _true_counts(true_counts: Any, d: int) -> npt.NDArray[np.int64]:
    t = np.asarray(true_counts)
    if t.shape != (d,) or (t.size and (t.min() < 0 or not np.issubdtype(t.dtype, np.integer))):
        raise ValueError(f"true counts must be {d} non-negative integers, got shape {t.shape}, dtype {t.dtype}")
    return t.astype(np.int64)


def rr_variance(params: BinaryRRParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact variance of the count estimates of items [0, 1] given true counts ``[n_0, n_1]``."""
    t = _true_counts(true_counts, 2)
    v1 = pure_count_variance(t[1], int(t.sum()), params.q, params.p)
    return np.array([v1, v1])  # ĉ_0 = n − ĉ_1 has the same variance


class GRRChannel(Protocol):
    """What :class:`GRRAggregate` reads of its params: one report names the user's value with probability ``p*``
    and each other of the ``domain_size`` values with ``q*`` (``support_probabilities``); GRR's params, and any
    protocol whose report is such a channel."""

    protocol: ClassVar[str]

    @property
    def domain_size(self) -> int: ...

    @property
    def support_probabilities(self) -> tuple[float, float]: ...

    @property
    def privacy_cost(self) -> PrivacyCost: ...

    def label_of(self, index: int) -> str: ...


def grr_variance(params: GRRChannel, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact variance of each item's count estimate given the true counts ``f_v``, with the channel's
    ``(p*, q*)``."""
    t = _true_counts(true_counts, params.domain_size)
    p, q = params.support_probabilities
    return pure_count_variance(t, int(t.sum()), p, q)


class RRAggregate(Aggregate):
    """Sufficient statistics of binary RR: the number of reports and of reported ones."""

    params_type: ClassVar[type] = BinaryRRParams
    params: BinaryRRParams
    ones: npt.NDArray[np.int64]  # (1,), created by _init_state

    @classmethod
    def state_layout(cls, params: BinaryRRParams) -> StateLayout:
        return {"ones": (np.dtype(np.int64), (1,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self.ones[0] += int(np.count_nonzero(columns["bit"]))

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased counts of users holding 0 and 1 (items ``no``, ``yes``), with plug-in standard errors
        and normal CIs."""
        p, q = self.params.p, self.params.q
        c1, se = pure_count_estimate(self.ones.astype(np.float64), self.n, q, p)
        count = np.array([self.n - c1[0], c1[0]])
        return Estimates("rr", list(RR_ITEMS), self.n, count, np.repeat(se, 2), confidence, self.params.privacy_cost)

    @staticmethod
    def exact_variance(params: BinaryRRParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return rr_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: BinaryRRParams, true_counts: Any, rng: Any = None) -> RRAggregate:
        """Exact aggregate-level draw: ``ones = Bin(n_1, q) + Bin(n_0, p)``."""
        t = _true_counts(true_counts, 2)
        gen = as_generator(rng)
        agg = cls(params)
        agg.ones[0] = gen.binomial(t[1], params.q) + gen.binomial(t[0], params.p)
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The pure-oracle variance with the probabilities of reporting 1 (Wang et al. 2017, Thm 2)."""
        return float(pure_count_variance(count, n, params.q, params.p))

    count_variance_item: ClassVar[int] = 1  # the "yes" count: with p ≠ 1 − q the two items' variances differ

    report_loglik_types: ClassVar[tuple[type, ...]] = (BinaryRRParams,)

    @classmethod
    def report_loglik(cls, params: BinaryRRParams, columns: dict[str, np.ndarray], candidates: Any = (),
                      other: bool = False) -> npt.NDArray[np.float64]:
        """``q^r(1−q)^{1−r}`` for value 1, ``p^r(1−p)^{1−r}`` for 0 (realized probabilities)."""
        p, q = realized_probability(params.p), realized_probability(params.q)
        r = np.asarray(columns["bit"], dtype=np.float64)[:, None]
        probs = np.array([p, q])[None, :]
        out: npt.NDArray[np.float64] = r * np.log(probs) + (1.0 - r) * np.log1p(-probs)
        return out


class GRRAggregate(Aggregate):
    """Sufficient statistics of GRR: how many reports name each value. The estimator, exact variance and
    aggregate-level draw use the params' ``support_probabilities`` (:class:`GRRChannel`): GRR's ``(p, q)``, or
    the composed ``(p*, q*)`` of a subclass's protocol."""

    params_type: ClassVar[type] = GRRParams
    params: Any  # a GRRChannel: GRRParams, or a subclass's params type
    counts: npt.NDArray[np.int64]  # (d,), created by _init_state

    @classmethod
    def state_layout(cls, params: GRRChannel) -> StateLayout:
        return {"counts": (np.dtype(np.int64), (params.domain_size,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        index, d = columns["index"], self.params.domain_size
        for start in range(0, index.size, 1 << 20):  # bounded temporaries (bincount widens to intp)
            self.counts += np.bincount(index[start:start + (1 << 20)], minlength=d)

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased count of users per value, with plug-in standard errors and normal CIs."""
        pr: GRRChannel = self.params
        p, q = pr.support_probabilities
        count, se = pure_count_estimate(self.counts, self.n, p, q)
        items = [pr.label_of(i) for i in range(pr.domain_size)]
        return Estimates(pr.protocol, items, self.n, count, se, confidence, pr.privacy_cost)

    @staticmethod
    def exact_variance(params: GRRChannel, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return grr_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: Any, true_counts: Any, rng: Any = None) -> Self:
        """Exact aggregate-level draw via the keep-or-uniform mixture (module docstring), ``λ = p* − q*`` of the
        params (a :class:`GRRChannel` of this aggregate's params type)."""
        d = params.domain_size
        t = _true_counts(true_counts, d)
        gen = as_generator(rng)
        p, q = params.support_probabilities
        kept = gen.binomial(t, p - q)
        agg = cls(params)
        agg.counts[:] = kept + gen.multinomial(int(t.sum() - kept.sum()), np.full(d, 1.0 / d))
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The pure-oracle variance with the channel's ``(p*, q*)`` (Wang et al. 2017, Thm 2)."""
        return float(pure_count_variance(count, n, *params.support_probabilities))

    report_loglik_types: ClassVar[tuple[type, ...]] = (GRRParams,)

    @classmethod
    def report_loglik(cls, params: GRRParams, columns: dict[str, np.ndarray], candidates: Any = (),
                      other: bool = False) -> npt.NDArray[np.float64]:
        """``log p`` where the report names the value, ``log q`` elsewhere."""
        idx = np.asarray(columns["index"], dtype=np.int64)
        out = np.full((idx.size, params.domain_size), math.log(params.q))
        out[np.arange(idx.size), idx] = math.log(params.p)
        return out


class GRRBackedAggregate(Aggregate):
    """GRR's sufficient statistics for a protocol whose reports are GRR's over ``params.grr`` (bucketized GRR,
    charge on change): the state and fold of :class:`GRRAggregate`, shared through :meth:`_as_grr`."""

    params: Any  # a params with ``grr`` (its GRRParams)
    counts: npt.NDArray[np.int64]  # (k,), created by _init_state

    @classmethod
    def state_layout(cls, params: Any) -> StateLayout:
        return GRRAggregate.state_layout(params.grr)

    def _as_grr(self) -> GRRAggregate:
        """This aggregate as GRR's, sharing its counts."""
        agg = GRRAggregate(self.params.grr)
        agg.counts, agg.n = self.counts, self.n
        return agg

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self._as_grr()._fold(columns)

    @classmethod
    def simulate(cls, params: Any, true_counts: Any, rng: Any = None) -> Self:
        """GRR's exact aggregate-level draw over ``params.grr`` (one report per device)."""
        grr = GRRAggregate.simulate(params.grr, true_counts, rng)
        agg = cls(params)
        agg.counts[:], agg.n = grr.counts, grr.n
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """GRR's pure-oracle variance (of ``params.grr``)."""
        return float(pure_count_variance(count, n, params.grr.p, params.grr.q))
