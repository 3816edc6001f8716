"""Poisoning laws of local hashing (BLH, OLH): the support of the reports.

A report ``(s, y)`` supports item ``u`` when ``h_s(u) = y``. For an honest user holding ``v``, in the random-hash
model the aggregate already assumes (``ldp.decoders.local_hashing``: the seed is uniform, the family's hashes of
distinct items are independent and uniform on ``[0, g)``):

* ``P(y = h_s(v)) = p = e^ε/(e^ε + g − 1)`` (the GRR keep probability over ``[0, g)``);
* for ``u ≠ v``: ``P(h_s(u) = y) = p·(1/g) + (1 − p)·(1 − 1/g)/(g − 1) = 1/g``, and given ``y`` the events
  ``h_s(u) = y`` are independent over the ``d − 1`` other items (their hashes are independent of ``h_s(v)``).

So a report's support size is ``Bernoulli(p) + Binomial(d − 1, 1/g)``: mean ``p + (d − 1)/g``, variance
``p(1 − p) + (d − 1)(1/g)(1 − 1/g)``, and the total support ``Σ_v C_v`` of ``n`` reports has ``n`` times these.
The per-report test hashes every report against every item (``n·d`` hashes, what folding already pays).

An MGA report names a seed that hashes many targets to its ``y``: its support size is at least that many.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.encoders.local_hashing import BLHParams, OLHParams
from ldp.jobs.poisoning import LawCheck, ReportLaw, bernoulli_binomial_pmf, chi_square_check, z_check

__all__ = ["LocalHashingLaw", "support_moments", "support_sizes"]

BLOCK = 4096  # reports hashed at once (BLOCK × d uint32)


def support_moments(params: Any) -> tuple[float, float]:
    """Mean and variance of the support size of one honest report (module docstring)."""
    p, g, d = params.p, params.g, params.domain_size
    return p + (d - 1) / g, p * (1 - p) + (d - 1) * (1 / g) * (1 - 1 / g)


def support_sizes(params: Any, seeds: npt.ArrayLike, ys: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The number of items each report ``(seed, y)`` supports, in blocks of :data:`BLOCK` reports."""
    from ldp.batch.local_hashing import lh_hashes

    s = np.asarray(seeds)
    y = np.asarray(ys)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"seeds and y must be 1-D of one length, got {s.shape} and {y.shape}")
    items = np.arange(params.domain_size, dtype=np.uint32)
    g = np.uint32(params.g)
    out = np.empty(s.size, np.int64)
    for a in range(0, s.size, BLOCK):
        h = lh_hashes(s[a:a + BLOCK, None].astype(np.int64), items[None, :])
        out[a:a + BLOCK] = (h % g == y[a:a + BLOCK, None].astype(np.uint32)).sum(axis=1)
    return out


class LocalHashingLaw(ReportLaw):
    """BLH and OLH: the total support (aggregate) and the support size per report (reports)."""

    params_type = (BLHParams, OLHParams)

    def aggregate_checks(self, aggregate: Any, alpha: float) -> list[LawCheck]:
        n = int(aggregate.n)
        mean, var = support_moments(aggregate.params)
        total = int(aggregate.support.sum())
        return [z_check("support_total", aggregate.params.protocol, n, total, n * mean, n * var, alpha,
                        "total support")]

    def report_checks(self, params: Any, columns: Mapping[str, Any], alpha: float) -> list[LawCheck]:
        sizes = support_sizes(params, columns["seed"], columns["y"])
        pmf = bernoulli_binomial_pmf(params.p, 1.0 / params.g, params.domain_size)
        return [chi_square_check("support_per_report", params.protocol, sizes, pmf, alpha, "support per report")]
