"""PEM's scaled estimator: its exact variance, the null standard error and threshold, the detectable share.

Group ``j`` holds ``N_j`` reports. In an OLH group a report supports a ``b_j``-bit prefix ``c``
when ``lh_hash(key(c), seed, g) = y`` (:func:`ldp.batch.pem.key_support`); in a GRR group when ``y = c``.
Each oracle supports the true prefix with probability ``p`` and any other given prefix with ``q'`` (OLH:
``q' = 1/g``; GRR over ``d = 2^b_j``: ``q' = (1−p)/(d−1)``; :meth:`~ldp.encoders.pem.PEMParams.group_pq`).
With ``C`` supports, ``ĉ_j = (C − N_j·q')/(p − q')`` is the oracle's unbiased count of the group's users
holding ``c``, and

    ``F̂ = (n/N_j)·ĉ_j``

estimates the count ``F`` among all ``n`` users (:meth:`~ldp.decoders.pem.PEMAggregate.score`). Given
``N_j``, the group is a uniformly random subset of the users (each client draws its group uniformly and
independently), so its holders ``f_j`` are hypergeometric: mean ``N_j·φ`` (``φ = F/n``), variance
``N_j·φ(1−φ)(n−N_j)/(n−1)``; the oracle adds, given ``f_j``, ``N_j·V0 + f_j·a`` with
``V0 = q'(1−q')/(p−q')²``, ``a = (1−p−q')/(p−q')`` (the supports are independent Bernoullis, ``p`` for
holders and ``q'`` for the others; :mod:`ldp.decoders.local_hashing`). Hence ``E[F̂ | N_j] = F`` and, exactly,

    ``Var[F̂ | N_j] = (n²/N_j)·(V0 + φ·a + φ(1−φ)·(n−N_j)/(n−1))``:

the oracle's variance of the group scaled by ``(n/N_j)²``, plus the sampling of the group. Standard errors
plug in ``φ̂ = clip(F̂/n, 0, 1)``; the null standard error (``φ = 0``) is ``n·√(V0/N_j)``. Prefixes over
32 bits are hashed to a 32-bit key: a candidate also gets the users of another prefix with its key
(probability 2^-32 per pair), which the variance leaves out.

Every function taking ``group`` uses that group's oracle; ``group=None`` is the last group (the estimates').
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ldp.encoders.pem import PEMParams, null_variance

__all__ = ["pem_variance", "pem_group_n", "pem_null_se", "pem_detectable_share", "null_threshold"]


def pem_group_n(params: PEMParams, n: float) -> int:
    """The reports of one group the planner assumes: ``n/G``, at least 1."""
    return max(1, round(n / params.groups))


def _group(params: PEMParams, group: int | None) -> int:
    return params.groups - 1 if group is None else group


def _terms(params: PEMParams, group: int | None) -> tuple[float, float]:
    """``(V0, a)``: the group's oracle's per-report variance of an absent prefix and its per-holder term."""
    p, q = params.group_pq(_group(params, group))
    return null_variance(p, q), (1.0 - p - q) / (p - q)


def pem_variance(params: PEMParams, true_counts: npt.ArrayLike, n: int, group_n: int,
                 group: int | None = None) -> npt.NDArray[np.float64]:
    """Exact ``Var[F̂ | N_j]`` of the counts ``F`` among ``n`` users from group ``group`` (default the last)
    of ``group_n`` reports."""
    v0, a = _terms(params, group)
    phi = np.asarray(true_counts, dtype=np.float64) / n
    return n * n / group_n * (v0 + phi * a + phi * (1.0 - phi) * (n - group_n) / max(n - 1, 1))


def pem_expected_variance(params: PEMParams, true_counts: npt.ArrayLike, n: int) -> npt.NDArray[np.float64]:
    """``E[Var[F̂ | N]]`` over the last group's size ``N ~ Bin(n, 1/G)`` given ``N ≥ 1``: the exact variance of
    the estimates of ``n`` users (each picks its group at random). :func:`pem_variance` is ``A/N + B`` in ``N``,
    so the average is ``A·E[1/N | N ≥ 1] + B``; the expectation sums the binomial's probabilities over
    ``mean ± 40 sd`` (all of them for small ``n``), beyond which they vanish in double precision."""
    from scipy import stats

    if n < 2:
        raise ValueError(f"PEM's variance over the group's size needs n >= 2 users, got {n}")
    at_one, at_n = pem_variance(params, true_counts, n, 1), pem_variance(params, true_counts, n, n)
    slope = (at_one - at_n) / (1.0 - 1.0 / n)  # A, with Var = A/N + B
    share = 1.0 / params.groups
    mean, sd = n * share, math.sqrt(n * share * (1.0 - share))
    sizes = np.arange(max(1, math.floor(mean - 40 * sd)), min(n, math.ceil(mean + 40 * sd)) + 1)
    pmf = stats.binom.pmf(sizes, n, share)
    inv_mean = float(np.sum(pmf / sizes) / np.sum(pmf))
    return np.asarray(slope * inv_mean + (at_one - slope), dtype=np.float64)


def pem_null_se(params: PEMParams, n: int, group_n: int, group: int | None = None) -> float:
    """``n·√(V0/N_j)``: the standard error of a prefix nobody holds."""
    return n * math.sqrt(_terms(params, group)[0] / group_n)


def null_threshold(params: PEMParams, n: int, group_n: int, level: float, group: int | None = None) -> float:
    """The count an absent prefix exceeds with probability at most ``level``: its support among the
    group's ``N_j`` reports is exactly ``Binomial(N_j, q')`` (OLH: each report's hash of it is uniform and
    independent of the value, ``q' = 1/g``; GRR: each report is it with ``q' = (1−p)/(d−1)``, every user
    holding another prefix), so the cutoff is that law's upper quantile ``c`` (``P(C > c) ≤ level``)
    mapped to a count, ``n/N_j·(c − N_j·q')/(p − q')``: exact, where the normal approximation
    ``z·`` :func:`pem_null_se` is anti-conservative in the binomial's right tail for small groups."""
    from scipy.stats import binom

    p, q = params.group_pq(_group(params, group))
    c = float(binom.isf(level, group_n, q))
    return n / group_n * (c - group_n * q) / (p - q)


def pem_detectable_share(params: PEMParams, n: int, alpha: float = 0.05, candidates: int | None = None) -> float:
    """The share of users a string needs to pass the last round's test, with groups of ``n/G`` reports:
    :func:`null_threshold` at level ``α/C`` over ``n`` (about ``z_{1−α/C}·√(G·V0/n)``); ``C`` defaults to
    ``top_k·2^(last step)``, the most the last round scores. (For the planner: the string must also survive
    every earlier round, whose prefixes are at least as frequent and whose thresholds are of the same order.)"""
    G = params.groups
    last = params.total_bits - (params.prefix_bits(G - 2) if G > 1 else 0)
    c = params.top_k << last if candidates is None else candidates
    group_n = max(round(n / G), 1)
    return null_threshold(params, n, group_n, min(alpha / max(c, 1), 0.5), G - 1) / n
