"""Local hashing, server side (BLH, OLH): aggregate, estimator, exact variance, aggregate-level simulation.

A report ``(seed, y)`` *supports* item ``v`` when ``h_seed(v) = y``. Given value ``v`` that happens with
the realized GRR keep probability ``p = e^ε/(e^ε+g−1)``; given ``u != v``, ``h_seed(v)`` is uniform on
``[0, g)`` and independent of ``h_seed(u)`` and of the GRR noise (the random-hash model of Wang et al.:
the seed is uniform and the family's collisions have probability ``1/g``), so it happens with
``q' = 1/g``. Reports are independent, so this is a pure frequency oracle (:mod:`ldp.decoders.pure`):
``ĉ_v = (C_v − n/g)/(p − 1/g)`` is unbiased and, exactly,

    ``Var[ĉ_v] = n·q'(1−q')/(p−q')² + f_v·(1 − p − q')/(p − q')``,  ``q' = 1/g``

(``= (f_v·p(1−p) + (n−f_v)·q'(1−q'))/(p−q')²``). The per-user term ``q'(1−q')/(p−q')²`` is the optimum
``4e^ε/(e^ε−1)²`` when ``g = e^ε + 1`` (then ``p = 1/2``); OLH's rounded ``g`` gives slightly more, and
BLH (``g = 2``) ``(e^ε+1)²/(e^ε−1)²``.

State. The aggregate keeps the support counts ``C_v`` themselves (``d`` int64), computed when reports
are folded: each batch is hashed against every item (:func:`ldp.batch.local_hashing.support_counts`, in
blocks, never ``n × d`` at once; compiled when ``ldp/batch/_lhkernel.c`` is built, else numpy). This is
the decode's whole input, so memory is ``8d`` bytes whatever ``n`` (no per-report state at all), merging
is a sum, and ``estimate`` is O(d). The alternatives were worse: keeping the ``(seed, y)`` pairs costs 5–8
bytes per report, forever, and the same ``n × d`` hashes at decode; counts per ``(seed, y)`` are bounded
only for a small seed range, and with ``S`` seeds the family's collision rates deviate from ``1/g`` by
``~1/√(gS)``, a bias of order ``n/√(gS)`` in ``ĉ_v`` that exceeds the standard error ``~√n`` unless
``S ≫ n``. Folding costs ``d`` hash evaluations per report, paid once.

Aggregate-level simulation is exact in the same random-hash model: given the reports, support of the own
item is Bernoulli(p) and of every other item an independent Bernoulli(1/g), so
``C_v = Bin(f_v, p) + Bin(n − f_v, 1/g)``, independent over v.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.pure import pure_count_estimate, pure_count_variance
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.results import Estimates
from ldp.encoders.local_hashing import BLHParams, LocalHashingParams, OLHParams
from ldp.randomness import as_generator

__all__ = ["LocalHashingAggregate", "lh_variance", "lh_per_user_variance"]


def lh_variance(params: LocalHashingParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` of each value's count estimate given the true counts ``f_v`` (module docstring)."""
    t = _true_counts(true_counts, params.domain_size)
    return pure_count_variance(t, int(t.sum()), params.p, params.q_star)


def lh_per_user_variance(params: LocalHashingParams) -> float:
    """``q'(1−q')/(p−q')²``: the variance per report of an item nobody holds (``f_v = 0``)."""
    q = params.q_star
    return q * (1.0 - q) / (params.p - q) ** 2


class LocalHashingAggregate(Aggregate):
    """Sufficient statistics of BLH and OLH: per item, the reports that support it (module docstring)."""

    params_type: ClassVar[Any] = (BLHParams, OLHParams)
    params: Any  # a LocalHashingParams (and ProtocolParams) of one of params_type
    support: npt.NDArray[np.int64]  # (d,), created by _init_state

    @classmethod
    def state_layout(cls, params: LocalHashingParams) -> StateLayout:
        return {"support": (np.dtype(np.int64), (params.domain_size,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        from ldp.batch.local_hashing import support_counts

        pr = self.params
        self.support += support_counts(columns["seed"], columns["y"], pr.domain_size, pr.g)

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased count of users per value, with plug-in standard errors and normal CIs."""
        pr = self.params
        count, se = pure_count_estimate(self.support, self.n, pr.p, pr.q_star)
        items = [pr.label_of(i) for i in range(pr.domain_size)]
        return Estimates(pr.protocol, items, self.n, count, se, confidence, pr.privacy_cost)

    @staticmethod
    def exact_variance(params: LocalHashingParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return lh_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: Any, true_counts: Any, rng: Any = None) -> LocalHashingAggregate:
        """Draw of the aggregate in the random-hash model: ``C_v = Bin(f_v, p) + Bin(n − f_v, 1/g)``."""
        t = _true_counts(true_counts, params.domain_size)
        gen, agg = as_generator(rng), cls(params)
        n = int(t.sum())
        agg.support[:] = gen.binomial(t, params.p) + gen.binomial(n - t, params.q_star)
        agg.n = n
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The pure-oracle variance with the support probabilities ``p*`` (own hash value) and ``q* = 1/g``."""
        return float(pure_count_variance(count, n, params.p_star, params.q_star))
