"""What the count planner (:func:`ldp.plan.plan`) asks of a protocol beyond its count variance, with the answer
most protocols give: how many candidates its decoder tests, the smallest count it detects, what the plan
assumes (notes) and the ε per value under each way of charging.

The answers of a protocol whose collection is planned otherwise live in its planner module in :mod:`ldp.plan`
(:mod:`ldp.plan.pem`, :mod:`ldp.plan.sfp`, :mod:`ldp.plan.rappor_ngrams`, :mod:`ldp.plan.longitudinal`): a
:class:`CountPlanner` subclass naming the params types it serves, found by scanning the package (the way the
registry finds the encoders and aggregates), so the planner names no protocol.

Detection follows the decoders: an item is detected when its estimate exceeds ``z_{1−α/M}·SE₀`` (``SE₀`` its
standard error at ``f = 0``, Bonferroni over ``M`` candidates); the minimum detectable count is the ``f``
detected with probability ``power``: ``f = z_{1−α/M}·SE₀ + z_power·SE(f)`` (:func:`min_detectable`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from statistics import NormalDist
from typing import Any, ClassVar, Protocol

from ldp.encoders.base import ProtocolParams
from ldp.lazy import subclasses_in
from ldp.privacy.cost import PrivacyCost

__all__ = ["CountPlanner", "CountVariance", "min_detectable", "planner_for", "planners"]


class CountVariance(Protocol):
    """:func:`ldp.plan.count_variance`: ``Var`` of one item's count estimate (``params, n, count, domain_size,
    f2``), the protocol's own formula read through the registry."""

    def __call__(self, params: ProtocolParams, n: float, count: float, domain_size: int,
                 f2: float | None = None) -> float: ...


def min_detectable(var: Callable[[float], float], n: float, alpha: float, candidates: int, power: float) -> float:
    """Smallest count ``f`` with ``Pr[f̂ > z_{1−α/M}·SE₀] = power`` (normal approximation).

    Solves ``f = z_{1−α/M}·SE₀ + z_power·SE(f)`` by fixed-point iteration (a contraction: ``SE``
    grows like ``√f`` at most); ``inf`` when even ``f = n`` is not enough."""
    threshold = NormalDist().inv_cdf(1 - alpha / candidates) * math.sqrt(var(0.0))
    zp = NormalDist().inv_cdf(power)
    f = threshold
    for _ in range(200):
        if f > n:
            return math.inf
        nxt = max(threshold + zp * math.sqrt(var(max(f, 0.0))), 0.0)
        if abs(nxt - f) <= 1e-10 * max(f, 1.0):
            return nxt if nxt <= n else math.inf
        f = nxt
    raise ArithmeticError("the minimum detectable count did not converge")


class CountPlanner:
    """The planner's questions to a protocol, answered as for a frequency oracle: its decoder tests the
    ``domain_size`` values, an item is detected when its own count estimate passes the test, one way of charging.

    A protocol planned otherwise subclasses this in its planner module in :mod:`ldp.plan` and sets
    :attr:`params_type`; the methods take the protocol's params."""

    params_type: ClassVar[type[ProtocolParams] | tuple[type[ProtocolParams], ...]] = ()
    """The params types these answers are for (none here: the answers for every other protocol)."""

    def candidates(self, params: Any, domain_size: int) -> int:
        """How many candidates the decoder tests when the plan names none (the Bonferroni ``M``): the
        ``domain_size`` values."""
        return domain_size

    def min_detectable_count(self, params: Any, n: float, domain_size: int, candidates: int, *, alpha: float,
                             power: float, f2: float | None, variance: CountVariance) -> tuple[float, int]:
        """``(f, M)``: the smallest count detected with probability ``power`` at level ``alpha`` among ``n``
        users, and the candidates ``M`` the test is among: :func:`min_detectable` on the item's count
        estimate, over the ``candidates`` given."""
        return min_detectable(lambda f: variance(params, n, f, domain_size, f2), n, alpha, candidates,
                              power), candidates

    def notes(self, params: Any, candidates: int) -> list[str]:
        """What the plan assumes beyond the module docstring of :mod:`ldp.plan.frequency`, given the ``candidates``
        the detection test is among: nothing."""
        return []

    def per_value_by_charging(self, params: Any, reports: int) -> dict[str, PrivacyCost]:
        """ε per distinct value over ``reports`` reports under each way the encoder can charge (``{}``: the
        one way, :meth:`~ldp.encoders.base.ProtocolParams.horizon_cost`)."""
        return {}


@cache
def planners() -> dict[type[ProtocolParams], CountPlanner]:
    """The :class:`CountPlanner` of every params type planned otherwise, found in the modules of :mod:`ldp.plan`."""
    found: dict[type[ProtocolParams], CountPlanner] = {}
    for cls in subclasses_in(__name__.rpartition(".")[0], CountPlanner):
        planner = cls()
        for params_type in cls.params_type if isinstance(cls.params_type, tuple) else (cls.params_type,):
            if params_type in found:
                raise RuntimeError(f"two count planners serve {params_type.__name__}")
            found[params_type] = planner
    return found


def planner_for(params: ProtocolParams) -> CountPlanner:
    """The answers for ``params``: its protocol's :class:`CountPlanner`, or the frequency oracles' default."""
    return planners().get(type(params)) or CountPlanner()
