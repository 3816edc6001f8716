"""RAPPOR reports' likelihood given a candidate string, or any other string: what the association EM
(:mod:`ldp.decoders.association`) multiplies for a RAPPOR variable (:meth:`RapporAggregate.report_loglik
<ldp.decoders.rappor.RapporAggregate.report_loglik>`).

A first report's bits are independent given the Bloom filter ``B`` of the value in the report's cohort:
``Pr[s | B] = Π_{i∈B} q*^{s_i}(1−q*)^{1−s_i} · Π_{i∉B} p*^{s_i}(1−p*)^{1−s_i}``. The **other** value stands
for any string not among the candidates: its Bloom bits are ``h`` uniform hash positions (the random-oracle
model), so its likelihood is that average, computed exactly over the positions' distinct-set distribution
(no data-driven estimate, unlike Google's ``GetOtherProbs``: the model stays a true likelihood).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch.association import bernoulli_logs, unpack_bits
from ldp.batch.rappor import bloom_table
from ldp.encoders.rappor import RapporParams

__all__ = ["rappor_loglik", "other_loglik"]

Float = npt.NDArray[np.float64]
Int = npt.NDArray[np.int64]


def other_loglik(params: RapporParams, ones: Int) -> Float:
    """Log-factor of "other" per report with ``ones`` set bits: ``log E[Π_{i∈S} ratio_i]``, ``S`` the distinct
    positions of ``h`` uniform hashes (a DP over (ones hit, zeros hit))."""
    k, h = params.k, params.h
    a1, a0 = bernoulli_logs(params.p_star, params.q_star)
    out = np.empty(k + 1)
    for w in range(k + 1):
        prob = np.zeros((h + 1, h + 1))
        prob[0, 0] = 1.0
        for _ in range(h):
            nxt = np.zeros_like(prob)
            for a in range(h + 1):
                for b in range(h + 1 - a):
                    if prob[a, b]:
                        nxt[a, b] += prob[a, b] * (a + b) / k
                        if a < h:
                            nxt[a + 1, b] += prob[a, b] * (w - a) / k
                        if b < h:
                            nxt[a, b + 1] += prob[a, b] * (k - w - b) / k
            prob = nxt
        hit1, hit0 = np.nonzero(prob)
        terms = np.log(prob[hit1, hit0]) + hit1 * a1 + hit0 * a0
        out[w] = terms.max() + np.log(np.exp(terms - terms.max()).sum())
    return out[ones]


def rappor_loglik(params: RapporParams, columns: dict[str, Any], candidates: Sequence[str | bytes],
                  other: bool) -> Float:
    """``log Pr[report | value]`` (reports × (candidates + other)) given each report's cohort (module docstring)."""
    cands = list(candidates)
    s = unpack_bits(columns["bits"], params.k)
    cohort = np.asarray(columns["cohort"], dtype=np.int64)
    ones = s.sum(axis=1)
    ps, qs = params.p_star, params.q_star
    base = ones * math.log(ps) + (params.k - ones) * math.log1p(-ps)
    a1, a0 = bernoulli_logs(ps, qs)
    out = np.empty((s.shape[0], len(cands) + other))
    if cands:
        bloom = unpack_bits(bloom_table(params, cands).reshape(-1, (params.k + 7) // 8), params.k
                            ).reshape(len(cands), params.m, params.k)
        x = s * a1 + (1.0 - s) * a0
        for c in np.unique(cohort):
            sel = np.flatnonzero(cohort == c)
            out[sel, :len(cands)] = x[sel] @ bloom[:, c, :].T
    if other:
        out[:, -1] = other_loglik(params, ones.astype(np.int64))
    result: Float = out + base[:, None]
    return result
