"""HH_B's planner answers (:mod:`ldp.encoders.range_tree`): what a plan says of range queries, and the exact average
variance over every range that :func:`~ldp.encoders.range_tree.shape_cost` was fitted to.

The count planner (:func:`ldp.plan.plan`) gives one bucket's standard error (the consistent count's exact
variance, :meth:`~ldp.decoders.range_tree.HHAggregate.count_variance`); :class:`HHPlanner` adds, in the plan's
notes, the standard error of a range's *fraction* at 10^6 users (it scales as ``1/√n``), the root of the mean variance
over every range of buckets, for a population spread evenly over the buckets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp.encoders.range_tree import HHParams, shape_cost, tree_shapes
from ldp.plan.planners import CountPlanner

__all__ = ["HHPlanner", "average_range_variance", "best_shape"]

_NOTE_USERS = 1_000_000


def average_range_variance(params: HHParams, true_counts: Any) -> float:
    """Exact mean over every range ``[a, b]`` of buckets of the variance of its consistent count, given the true
    counts: ``((D + 1)·tr C − 1ᵀC1)/(D(D + 1)/2)`` over the prefix sums' covariance ``C`` (with ``P_{−1} = 0``)."""
    from ldp.decoders.range_tree_queries import exact_cdf_covariance

    cov = exact_cdf_covariance(params, true_counts)
    D = cov.shape[0]
    c = np.zeros((D + 1, D + 1))
    c[1:, 1:] = cov
    return float(((D + 1) * np.trace(c) - c.sum()) / (D * (D + 1) / 2))


def best_shape(epsilon: float, leaves: int, n: int = _NOTE_USERS) -> tuple[int, int]:
    """The ``(branching, depth)`` of smallest exact :func:`average_range_variance` among the shapes ``B^h = leaves``
    (users spread evenly; ``oracle="auto"``): what :meth:`~ldp.encoders.range_tree.HHParams.for_epsilon`'s
    :func:`~ldp.encoders.range_tree.shape_cost` approximates with the standard library."""
    t = np.full(leaves, n / leaves)
    return min(tree_shapes(leaves), key=lambda s: average_range_variance(
        HHParams(epsilon, 0.0, float(leaves), s[0], s[1]), t))


class HHPlanner(CountPlanner):
    """HH_B's answers (:class:`~ldp.plan.planners.CountPlanner`): one bucket's count is planned as a frequency
    oracle's item; the notes give the range queries' error."""

    params_type = HHParams

    def notes(self, params: Any, candidates: int) -> list[str]:
        D = params.num_buckets
        out = [f"a bucket's count is its consistent estimate (constrained inference over the {params.branching}-ary "
               f"tree of depth {params.depth}, oracles per level: {', '.join(params.oracle_kinds)})"]
        if D <= 1024:
            n = _NOTE_USERS
            avg = average_range_variance(params, np.full(D, n / D))
            score = shape_cost(params.epsilon, params.branching, params.depth)
            out.append(f"range queries (users spread evenly): SE of a range's fraction {math.sqrt(avg) / n:.3g} at "
                       f"n = {n:,} (∝ 1/√n), root mean over every range of buckets (shape score {score:.3g})")
        return out
