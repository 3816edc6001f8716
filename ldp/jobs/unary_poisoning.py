"""Poisoning laws of unary encoding (SUE, OUE): the number of 1s in the reports.

An honest report has bit ``v`` (its value's) 1 with probability ``p`` and each of the ``d − 1`` others 1 with
probability ``q``, independently, whatever ``v``: its number of 1s is ``Bernoulli(p) + Binomial(d − 1, q)``,
with mean ``p + (d − 1)q`` and variance ``p(1 − p) + (d − 1)q(1 − q)``. So, for ``n`` reports,

* the total of 1s, ``Σ_v O_v`` (the aggregate alone), has mean ``n(p + (d − 1)q)`` and variance
  ``n(p(1 − p) + (d − 1)q(1 − q))`` (normal test);
* the histogram of 1s per report follows that law exactly (chi-square test). Cao, Jia and Gong's MGA sends reports
  with exactly ``l = round(p + (d − 1)q)`` ones: the total matches, the histogram does not.

L-OUE (memoized permanent responses) is not tested: a device's reports are not independent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ldp.encoders.unary import OUEParams, SUEParams
from ldp.jobs.poisoning import LawCheck, ReportLaw, bernoulli_binomial_pmf, chi_square_check, popcounts, z_check

__all__ = ["UnaryLaw", "unary_ones_moments"]


def unary_ones_moments(params: Any) -> tuple[float, float]:
    """Mean and variance of the number of 1s in one honest report."""
    p, q, d = params.p, params.q, params.domain_size
    return p + (d - 1) * q, p * (1 - p) + (d - 1) * q * (1 - q)


class UnaryLaw(ReportLaw):
    """SUE and OUE: the total of 1s (aggregate) and the 1s per report (reports)."""

    params_type = (SUEParams, OUEParams)

    def aggregate_checks(self, aggregate: Any, alpha: float) -> list[LawCheck]:
        n = int(aggregate.n)
        mean, var = unary_ones_moments(aggregate.params)
        total = int(aggregate.ones.sum())
        return [z_check("ones_total", aggregate.params.protocol, n, total, n * mean, n * var, alpha,
                        "total of 1 bits")]

    def report_checks(self, params: Any, columns: Mapping[str, Any], alpha: float) -> list[LawCheck]:
        d = params.domain_size
        ones = popcounts(columns["bits"], d)
        pmf = bernoulli_binomial_pmf(params.p, params.q, d)
        return [chi_square_check("ones_per_report", params.protocol, ones, pmf, alpha, "1 bits per report")]
