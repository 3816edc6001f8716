"""The planner for PEM (prefix extending method): a string's standard error and the share of users it
needs to be discovered, as functions of n, ε, the string length (``max_length``) and the oracle choice.

Every number is :mod:`ldp.decoders.pem`'s: a count is estimated from the last group, whose ``N_j`` the
planner takes as ``n/G`` (the binomial split over the ``G`` groups is ignored), with the exact variance
:func:`~ldp.decoders.pem.pem_variance`; discovery needs the string to pass the last round's test among
``C = top_k·2^(last step)`` candidates (the most that round scores), so at power 1/2 the detectable share
is :func:`~ldp.decoders.pem.pem_detectable_share`. The earlier rounds, whose prefixes are at least as
frequent and whose thresholds are of the same order, are not modelled by the plan; nor is the ``top_k`` cap
per round (at most ``top_k`` strings can be found). Every number uses each group's own oracle (OLH, or GRR
for the short prefixes with ``oracle="auto"``/``"grr"``); :func:`pem_round_shares` gives the share every
round's cutoff needs, where GRR's smaller variance shows in the first rounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ldp.decoders.pem import PEMAggregate, null_threshold, pem_detectable_share, pem_group_n
from ldp.encoders.pem import PEMParams
from ldp.plan.planners import CountPlanner

__all__ = ["pem_group_n", "pem_count_variance", "pem_candidates", "pem_notes",
           "pem_round_shares", "detectable_grid", "PEMPlanner"]


def pem_count_variance(params: PEMParams, n: float, count: float) -> float:
    """``Var[F̂]`` of a string held by ``count`` of ``n`` users (:meth:`PEMAggregate.count_variance`)."""
    return PEMAggregate.count_variance(params, n, count, 0)


def pem_candidates(params: PEMParams) -> int:
    """``top_k·2^(last step)``: the most candidates the last round scores (the Bonferroni ``C``)."""
    groups = params.groups
    last_step = params.total_bits - (params.prefix_bits(groups - 2) if groups > 1 else 0)
    return params.top_k << last_step


def pem_notes(params: PEMParams, candidates: int) -> list[str]:
    """What the plan of a PEM collection assumes."""
    return [f"discovery: a string is tested among {candidates:,} candidates in the last of {params.groups} groups "
            f"of about n/{params.groups} users (the earlier rounds and the split over groups are not modelled)",
            f"at most top_k={params.top_k} prefixes are kept per round, so at most {params.top_k} strings are found",
            f"oracles by group: {params.oracle_summary} (oracle={params.oracle!r})"]


class PEMPlanner(CountPlanner):
    """PEM's answers to :func:`ldp.plan.plan`: the last round's candidates (:func:`pem_candidates`) and what the
    plan assumes (:func:`pem_notes`); the detection test is the count's (its variance already the last group's)."""

    params_type: ClassVar[type[PEMParams]] = PEMParams

    def candidates(self, params: PEMParams, domain_size: int) -> int:
        return pem_candidates(params)

    def notes(self, params: PEMParams, candidates: int) -> list[str]:
        return pem_notes(params, candidates)


def pem_round_shares(params: PEMParams, n: float, alpha: float = 0.05,
                     false_prefixes: float = 5.0) -> list[dict[str, Any]]:
    """Per round: its bits, oracle, the candidates it scores at most (``2^start_bits``, then
    ``top_k·2^step``) and the share of users a prefix needs to pass its exact cutoff with a group of
    ``n/G`` reports (level ``false_prefixes/C``, the last round ``alpha/C``; at most 1/2), as
    :meth:`~ldp.decoders.pem.PEMAggregate.discover` tests it."""
    rows, m, prev = [], pem_group_n(params, n), 0
    for j in range(params.groups):
        bits = params.prefix_bits(j)
        cands = 1 << bits if j == 0 else params.top_k << (bits - prev)
        level = min((alpha if j == params.groups - 1 else false_prefixes) / cands, 0.5)
        rows.append({"group": j, "bits": bits, "oracle": params.oracle_of(j), "candidates": cands,
                     "share": null_threshold(params, round(n), m, level, j) / round(n)})
        prev = bits
    return rows


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
                             "oracles": params.oracle_summary, "detectable_share": share})
    return rows
