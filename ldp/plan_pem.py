"""The planner for PEM (prefix extending method over OLH): a string's standard error and the share of
users it needs to be discovered, as functions of n, ε and the string length (``max_length``).

Every number is :mod:`ldp.decoders.pem`'s: a count is estimated from the last group, whose ``N_j`` the
planner takes as ``n/G`` (the binomial split over the ``G`` groups is ignored), with the exact variance
:func:`~ldp.decoders.pem.pem_variance`; discovery needs the string to pass the last round's test among
``C = top_k·2^(last step)`` candidates (the most that round scores), so at power 1/2 the detectable share
is :func:`~ldp.decoders.pem.pem_detectable_share`. The earlier rounds, whose prefixes are at least as
frequent and whose thresholds are of the same order, are not modelled; nor is the ``top_k`` cap per round
(at most ``top_k`` strings can be found).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ldp.decoders.pem import pem_detectable_share, pem_variance
from ldp.encoders.pem import PEMParams

__all__ = ["pem_group_n", "pem_count_variance", "pem_candidates", "pem_report_bits", "pem_notes",
           "detectable_grid"]


def pem_group_n(params: PEMParams, n: float) -> int:
    """The reports of one group the planner assumes: ``n/G``, at least 1."""
    return max(1, round(n / params.groups))


def pem_count_variance(params: PEMParams, n: float, count: float) -> float:
    """``Var[F̂]`` of a string held by ``count`` of ``n`` users, from a last group of ``n/G`` reports."""
    return float(pem_variance(params, [count], round(n), pem_group_n(params, n))[0])


def pem_candidates(params: PEMParams) -> int:
    """``top_k·2^(last step)``: the most candidates the last round scores (the Bonferroni ``C``)."""
    groups = params.groups
    last_step = params.total_bits - (params.prefix_bits(groups - 2) if groups > 1 else 0)
    return params.top_k << last_step


def pem_report_bits(params: PEMParams) -> int:
    """Bits of one report: its group, seed and hashed value (``ceil(log2)`` of each range)."""
    return sum(max(1, math.ceil(math.log2(f.size))) if f.size > 1 else 0 for f in params.schema)


def pem_notes(params: PEMParams, candidates: int) -> list[str]:
    """What the plan of a PEM collection assumes."""
    return [f"discovery: a string is tested among {candidates:,} candidates in the last of {params.groups} groups "
            f"of about n/{params.groups} users (the earlier rounds and the split over groups are not modelled)",
            f"at most top_k={params.top_k} prefixes are kept per round, so at most {params.top_k} strings are found"]


def detectable_grid(ns: Iterable[int], epsilons: Iterable[float], max_lengths: Iterable[int], *,
                    alpha: float = 0.05, **options: Any) -> list[dict[str, Any]]:
    """The share of users a string needs to be discovered (:func:`~ldp.decoders.pem.pem_detectable_share`,
    power 1/2) for every ``(n, ε, max_length)``; ``options`` are the other :class:`PEMParams` fields."""
    rows = []
    for length in max_lengths:
        for eps in epsilons:
            params = PEMParams(eps, max_length=length, **options)
            for n in ns:
                share = pem_detectable_share(params, int(n), alpha)
                rows.append({"n": int(n), "epsilon": float(eps), "max_length": int(length), "groups": params.groups,
                             "detectable_share": share})
    return rows
