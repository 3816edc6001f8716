"""Poisoning laws of RAPPOR (both modes): the 1 bits per report, per cohort and in total.

A client's Bloom filter has ``B`` set bits, ``1 <= B <= h`` (``h`` hash functions over ``k`` bits; fewer than ``h``
when two hashes collide; the same in ``ldp`` and Google mode). A fresh client's report has each set bit 1 with
probability ``q*`` and each unset bit 1 with ``p*`` (the PRR and IRR coins combined), independently, so its number
of 1s is ``Binomial(B, q*) + Binomial(k − B, p*)``: mean ``k·p* + B(q* − p*)``, variance
``B·q*(1 − q*) + (k − B)·p*(1 − p*)``. ``B`` depends on the value, which the server does not know; both moments
are linear in ``B``, so for ``N`` reports the total of 1s has mean in ``[N·μ(1), N·μ(h)]`` and variance at most
``N·max(σ²(1), σ²(h))``. The tests check the total against that range (:func:`~ldp.server.poisoning.range_check`,
false alarms at most ``alpha``), per cohort (the most extreme cohort, Bonferroni over the ``m`` cohorts) and over
all cohorts.

The law is that of one report per client: a client's repeated reports share its PRR, so their total varies more
than the bound says (count a client once per window, or expect more false alarms).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.encoders.rappor import RapporParams
from ldp.server.poisoning import LawCheck, ReportLaw, range_check

__all__ = ["RapporLaw", "rappor_ones_bounds"]


def rappor_ones_bounds(params: Any) -> tuple[float, float, float]:
    """``(lowest mean, highest mean, highest variance)`` of the number of 1s in one honest report, over the
    possible ``B`` in ``[1, h]``."""
    k, h, ps, qs = params.num_bloombits, params.num_hashes, params.p_star, params.q_star
    means = [k * ps + b * (qs - ps) for b in (1, h)]
    variances = [b * qs * (1 - qs) + (k - b) * ps * (1 - ps) for b in (1, h)]
    return min(means), max(means), max(variances)


class RapporLaw(ReportLaw):
    """RAPPOR: the total of 1s, over every cohort and in the most extreme cohort, against its honest range."""

    params_type = RapporParams

    def aggregate_check_count(self, params: Any) -> int:
        return 2

    def aggregate_checks(self, aggregate: Any, alpha: float) -> list[LawCheck]:
        pr = aggregate.params
        lo, hi, var = rappor_ones_bounds(pr)
        n_c = aggregate.cohort_n.astype(np.float64)
        t_c = aggregate.ones.sum(axis=1).astype(np.float64)
        n = int(aggregate.n)
        total = range_check("ones_total", pr.protocol, n, float(t_c.sum()), n * lo, n * hi, n * var, alpha,
                            "total of 1 bits")
        used = np.flatnonzero(n_c > 0)
        if used.size == 0:
            return [total]
        m = used.size
        each = [range_check("ones_cohort", pr.protocol, int(n_c[c]), float(t_c[c]), n_c[c] * lo, n_c[c] * hi,
                            n_c[c] * var, alpha / m, f"cohort {c}'s total of 1 bits") for c in used]
        worst = min(each, key=lambda c: c.p_value)
        if m > 1:  # restate the worst cohort at the stated alpha (Bonferroni over the m cohorts)
            p = min(1.0, worst.p_value * m)
            verdict = "suspicious" if p < alpha else "ok"
            worst = LawCheck(worst.name, worst.protocol, worst.reports, worst.statistic, worst.expected, worst.std,
                             worst.z, p, alpha, verdict,
                             f"{worst.message.rsplit(' (', 1)[0]} (most extreme of {m} cohorts; Bonferroni "
                             f"p <= {p:.2g}, {verdict} at {alpha:g})")
        return [total, worst]
