"""Hierarchical histograms (HH_B, :mod:`ldp.encoders.range_tree`), server side: aggregate, estimator, exact variance,
aggregate-level simulation.

State: per level ``l`` the reports ``n_l`` and ``O_l[v]``, the reports of node ``v`` (GRR: naming it; OUE: its bit
set). Node estimates, the ratio estimator of each level's oracle scaled to all ``n`` users:

    ``ŷ_l[v] = (n/n_l)·(O_l[v] − n_l·q_l)/(p_l − q_l)``.

Given the level sizes, level ``l``'s users are a uniformly random ``n_l``-subset (the levels partition the users),
so ``E[ŷ_l[v] | n_1..n_h] = c_v``, the node's count: unbiased conditionally on every level having a report (a
level with none is left out of the fit). Its exact covariance is
:func:`~ldp.decoders.range_tree_linear.node_covariance`: the oracle's noise scaled by ``ρ_l = n/n_l`` plus the
sampling of users into levels. Over the level sizes (multinomial), ``ρ_l`` becomes ``E[n/n_l | n_l ≥ 1]``
(:func:`inverse_moment`, exact from the binomial law), ignoring the event that a level gets no report (probability
``≤ Σ_l (1 − π_l)^n``, below 1e-30 for ``n ≥ 70/min π_l``).

The counts of the buckets, and every range, are the constrained-inference (consistent) estimates
(:func:`~ldp.decoders.range_tree_linear.consistent`, weights ``w_l = π_l/V0_l``, ``V0_l`` the level oracle's null
variance per report): linear in the ``ŷ``, unbiased, with the exact variance of a quadratic form in the adjoint's
coefficients. :meth:`HHAggregate.tree` answers range queries, the CDF and quantiles
(:mod:`ldp.decoders.range_tree_queries`).

Aggregate-level simulation is exact: each bucket's users split among the levels multinomially (``π``), and each
level's oracle is drawn as its own aggregate (OUE: ``O = Bin(f, p) + Bin(n_l − f, q)``; GRR: GRR's draw).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import add_ones_by_group, row_padding_mask
from ldp.decoders.base import Aggregate, RejectHandler, StateLayout
from ldp.decoders.randomized_response import GRRAggregate, _true_counts
from ldp.decoders.range_tree_linear import (
    adjoint,
    alphas,
    fit_weights,
    inverse_moment,
    level_noise,
    node_counts,
    node_covariance,
    unconditional_rho,
)
from ldp.decoders.range_tree_queries import HHEstimates, HHTree
from ldp.encoders.range_tree import HHParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["HHAggregate", "inverse_moment", "level_noise", "fit_weights", "node_counts", "unconditional_rho",
           "hh_leaf_variance"]

Floats = npt.NDArray[np.float64]


def hh_leaf_variance(params: HHParams, true_counts: Any, queries: Floats | None = None) -> Floats:
    """Exact variance of the consistent estimate of each query column (leaf weights, ``D × Q``; default the buckets
    one by one) given the buckets' true counts, over the level sizes too (``ρ_l = E[n/n_l]``)."""
    t = np.asarray(true_counts, dtype=np.float64)
    n = float(t.sum())
    D, h, B = params.num_buckets, params.depth, params.branching
    alpha = alphas(fit_weights(params), B)
    rho, noise, counts = unconditional_rho(params, int(round(n))), level_noise(params), node_counts(params, t)
    out = []
    step = max(1, (1 << 22) // (D * h))  # columns per block: bounded memory
    total = D if queries is None else queries.shape[1]
    for start in range(0, total, step):
        if queries is None:
            w = np.zeros((D, min(step, D - start)))
            w[np.arange(start, start + w.shape[1]), np.arange(w.shape[1])] = 1.0
        else:
            w = queries[:, start:start + step]
        coef, _ = adjoint(w, alpha, B, h)
        out.append(node_covariance(coef, coef, counts, n, rho, noise, diagonal=True))
    return np.concatenate(out) if out else np.zeros(0)


class HHAggregate(Aggregate):
    """Sufficient statistics of HH_B: per level, its reports and each node's supporting reports."""

    params_type: ClassVar[type] = HHParams
    params: HHParams
    reports: npt.NDArray[np.int64]  # (h,), created by _init_state
    counts: npt.NDArray[np.int64]  # (h, D)

    @classmethod
    def state_layout(cls, params: HHParams) -> StateLayout:
        h, D = params.depth, params.num_buckets
        return {"reports": (np.dtype(np.int64), (h,)), "counts": (np.dtype(np.int64), (h, D))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        pr = self.params
        level = np.asarray(columns["level"])
        if "bits" in columns:
            add_ones_by_group(level, columns["bits"], self.reports, self.counts)
        else:
            self.reports += np.bincount(level.astype(np.int64), minlength=pr.depth)
        if "y" in columns:
            grr = np.array([k == "grr" for k in pr.oracle_kinds])[level.astype(np.int64)]
            cell = level[grr].astype(np.int64) * pr.num_buckets + np.asarray(columns["y"])[grr].astype(np.int64)
            self.counts += np.bincount(cell, minlength=self.counts.size).reshape(self.counts.shape)

    def _rule_breakers(self, batch: ReportBatch) -> np.ndarray | None:
        """Rows that fit the schema but not their level's rule (``None``: the base rejects or accepts it whole)."""
        p = self.params
        got = {f.name: f for f in batch.schema}
        if (batch.protocol, batch.fingerprint) != (p.protocol, p.fingerprint) or set(got) != {f.name for f in p.schema}:
            return None
        level = np.asarray(batch.columns["level"]).astype(np.int64)
        if level.size and (level.min() < 0 or level.max() >= p.depth):
            return None  # out of range: the base's check
        bad = np.zeros(level.size, bool)
        sizes = np.array([p.level_size(lv) for lv in range(1, p.depth + 1)])
        grr = np.array([k == "grr" for k in p.oracle_kinds])
        if "y" in batch.columns:
            y = np.asarray(batch.columns["y"]).astype(np.int64)
            bad |= y >= np.where(grr, sizes, 1)[level]
        if "bits" in batch.columns:
            if got["bits"].kind != "bits" or got["bits"].size != p.num_buckets:
                return None
            nbytes = (p.num_buckets + 7) // 8
            allowed = np.zeros((p.depth, nbytes), np.uint8)
            for lv in range(p.depth):
                if not grr[lv]:
                    allowed[lv, :] = _prefix_mask(int(sizes[lv]), nbytes)
            bits = np.asarray(batch.columns["bits"]) & row_padding_mask(p.num_buckets)
            bad |= (bits & ~allowed[level]).any(axis=1)
        return bad

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """The base's checks, after rejecting (``bad_value``) the rows that break their level's rule."""
        bad = self._rule_breakers(batch)
        if bad is None or not bad.any():
            return super()._add_batch(batch, on_reject)
        return self._add_batch_without(batch, bad, "bad_value", "a node or bit outside its level's oracle",
                                       on_reject, super()._add_batch)

    # -- estimation ----------------------------------------------------------------------------------------------
    def level_estimates(self) -> list[Floats]:
        """``ŷ_l``: each level's unbiased node counts, scaled to the ``n`` reports (zeros at a level without any)."""
        pr, out = self.params, []
        for lv, nz in enumerate(level_noise(pr)):
            m, nl = pr.level_size(lv + 1), int(self.reports[lv])
            if nl == 0:
                out.append(np.zeros(m))
                continue
            o = self.counts[lv, :m].astype(np.float64)
            out.append((self.n / nl) * (o - nl * nz.q) / (nz.p - nz.q))
        return out

    def tree(self, confidence: float = 0.95) -> HHTree:
        """The consistent tree: range queries, the CDF and quantiles with exact standard errors
        (:class:`~ldp.decoders.range_tree_queries.HHTree`)."""
        return HHTree.from_aggregate(self, confidence)

    def estimate(self, confidence: float = 0.95) -> HHEstimates:
        """Consistent count of users per bucket, with plug-in exact standard errors (given the level sizes) and
        normal CIs; they also answer ranges and quantiles (:class:`~ldp.decoders.range_tree_queries.HHEstimates`)."""
        t = self.tree(confidence)
        pr = self.params
        return HHEstimates(pr.protocol, list(pr.labels), self.n, t.leaves, t.leaf_std_errors(), confidence,
                           pr.privacy_cost, notes=("consistent (constrained inference over the tree)",), tree=t)

    @staticmethod
    def exact_variance(params: HHParams, true_counts: npt.ArrayLike) -> Floats:
        """Exact ``Var`` of each bucket's consistent count (:func:`hh_leaf_variance`)."""
        return hh_leaf_variance(params, _true_counts(true_counts, params.num_buckets))

    @classmethod
    def simulate(cls, params: HHParams, true_counts: Any, rng: Any = None) -> HHAggregate:
        """An exact draw of the aggregate of users with ``true_counts`` per bucket (module docstring)."""
        t = _true_counts(true_counts, params.num_buckets)
        gen, agg = as_generator(rng), cls(params)
        pi = np.asarray(params.level_probabilities)
        split = gen.multinomial(t, pi) if t.size else np.zeros((0, params.depth), np.int64)  # (D, h)
        for lv in range(params.depth):
            f = node_counts(params, split[:, lv])[lv].astype(np.int64)
            nl = int(f.sum())
            agg.reports[lv] = nl
            oracle, m = params.level_oracle(lv + 1), f.size
            if params.oracle_kinds[lv] == "grr":
                agg.counts[lv, :m] = GRRAggregate.simulate(oracle, f, gen).counts
            else:
                agg.counts[lv, :m] = gen.binomial(f, oracle.p) + gen.binomial(nl - f, oracle.q)
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """Exact variance of one bucket's consistent count when it holds ``count`` of ``n`` users and the others
        share the rest evenly."""
        D = params.num_buckets
        t = np.full(D, (n - count) / max(D - 1, 1))
        t[0] = count
        w = np.zeros((D, 1))
        w[0, 0] = 1.0
        return float(hh_leaf_variance(params, t, w)[0])


def _prefix_mask(m: int, nbytes: int) -> npt.NDArray[np.uint8]:
    """Packed little-endian row with bits ``0..m−1`` set."""
    bits = np.zeros(nbytes * 8, np.uint8)
    bits[:m] = 1
    return np.packbits(bits, bitorder="little")
