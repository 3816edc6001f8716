"""Range queries, the CDF and quantiles from an HH_B aggregate (:mod:`ldp.decoders.range_tree`).

A range ``[a, b]`` of buckets (inclusive, ``0 ≤ a ≤ b < D``) is answered two ways, each unbiased with its exact
variance (:func:`~ldp.decoders.range_tree_linear.node_covariance`, plugging the consistent counts, clipped to
``[0, n]``, in for the true ones, given the level sizes):

* consistent (default): the sum of the consistent buckets' counts, a linear function of the node estimates whose
  coefficients the adjoint of constrained inference gives;
* raw: the canonical decomposition into at most ``2(B − 1)`` nodes per level (CKS 2019, §4.1), bottom up: the
  unaligned nodes at each end of the range, then their parents; the whole domain is the root, ``n`` exactly.

The CDF at the buckets' upper edges, ``F(e_{i+1}) = (x_0 + … + x_i)/n``, comes with its covariance (``D × D``, or
its diagonal above :data:`FULL_COVARIANCE_MAX` buckets), the input of
``ldp.decoders.distribution.quantiles_from_cdf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.distribution import QuantileTable, quantiles_from_cdf
from ldp.decoders.distribution_estimates import DEFAULT_QUANTILES, DistributionQueries
from ldp.decoders.range_tree_linear import (
    LevelNoise,
    adjoint,
    alphas,
    consistent,
    fit_weights,
    level_noise,
    node_counts,
    node_covariance,
    unconditional_rho,
)
from ldp.decoders.results import Estimates, normal_quantile
from ldp.decoders.tabular import ResultTable

if TYPE_CHECKING:
    from ldp.encoders.range_tree import HHParams

__all__ = ["HHTree", "HHEstimates", "RangeAnswers", "decompose", "check_range",
           "range_coefficients", "exact_range_variance", "exact_cdf_covariance", "FULL_COVARIANCE_MAX"]

Floats = npt.NDArray[np.float64]
FULL_COVARIANCE_MAX = 2048
"""Most buckets whose CDF comes with its full covariance matrix (above, its diagonal)."""


def decompose(a: int, b: int, branching: int, depth: int) -> tuple[list[tuple[int, int]], bool]:
    """The canonical nodes ``(level, index)`` of buckets ``[a, b]``, and whether the range is the whole domain (the
    root)."""
    nodes: list[tuple[int, int]] = []
    level = depth
    while a <= b:
        if level == 0:
            return nodes, True
        while a <= b and a % branching:
            nodes.append((level, a))
            a += 1
        while a <= b and (b + 1) % branching:
            nodes.append((level, b))
            b -= 1
        if a > b:
            break
        a, b, level = a // branching, (b + 1) // branching - 1, level - 1
    return nodes, False


def check_range(params: HHParams, a: Any, b: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``a``, ``b`` as bucket-index arrays with ``0 ≤ a ≤ b < D`` (``ValueError`` naming the bad query)."""
    aa, bb = np.atleast_1d(np.asarray(a)), np.atleast_1d(np.asarray(b))
    for name, x in (("a", aa), ("b", bb)):
        if x.dtype == bool or x.dtype.kind not in "iu":
            raise TypeError(f"range bounds are bucket indices (integers), got {name} of dtype {x.dtype}")
    aa, bb = np.broadcast_arrays(aa.astype(np.int64), bb.astype(np.int64))
    D = params.num_buckets
    if aa.ndim != 1:
        raise ValueError("range bounds must be scalars or 1-D arrays")
    bad = (aa < 0) | (bb >= D) | (aa > bb)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        inside = 0 <= aa[i] < D and 0 <= bb[i] < D
        why = "a > b" if inside else f"outside the buckets [0, {D - 1}]"
        raise ValueError(f"range [{aa[i]}, {bb[i]}] is not a range of buckets: {why}")
    return aa, bb


def range_coefficients(params: HHParams, a: Any, b: Any, consistent: bool = True,
                       alpha: Floats | None = None) -> tuple[list[Floats], Floats]:
    """``(node coefficients by level, root coefficient)`` of the estimates of buckets ``[a, b]``: ``Σ_l ⟨coef_l, ŷ_l⟩
    + root·n`` (consistent: the adjoint of constrained inference with ``alpha``, default the fit's; raw: the canonical
    nodes)."""
    aa, bb = check_range(params, a, b)
    D, q = params.num_buckets, aa.size
    if consistent:
        idx = np.arange(D)[:, None]
        w = ((idx >= aa[None, :]) & (idx <= bb[None, :])).astype(np.float64)
        alpha = alphas(fit_weights(params), params.branching) if alpha is None else alpha
        return adjoint(w, alpha, params.branching, params.depth)
    coef = [np.zeros((params.level_size(lv), q)) for lv in range(1, params.depth + 1)]
    root = np.zeros(q)
    for j in range(q):
        nodes, whole = decompose(int(aa[j]), int(bb[j]), params.branching, params.depth)
        for level, node in nodes:
            coef[level - 1][node, j] = 1.0
        root[j] = float(whole)
    return coef, root


def exact_range_variance(params: HHParams, true_counts: Any, a: Any, b: Any, consistent: bool = True) -> Floats:
    """Exact ``Var`` of the count of users in buckets ``[a, b]`` given the buckets' true counts, over the level
    sizes too (``ρ_l = E[n/n_l | n_l ≥ 1]``): consistent or raw (module docstring)."""
    t = np.asarray(true_counts, dtype=np.float64)
    n = float(t.sum())
    coef, _ = range_coefficients(params, a, b, consistent)
    return node_covariance(coef, coef, node_counts(params, t), n, unconditional_rho(params, int(round(n))),
                           level_noise(params), diagonal=True)


def exact_cdf_covariance(params: HHParams, true_counts: Any) -> Floats:
    """Exact ``D × D`` covariance of the consistent prefix counts ``x_0 + … + x_i`` given the buckets' true counts,
    over the level sizes too: every range's variance is ``C[b, b] + C[a−1, a−1] − 2·C[a−1, b]``."""
    t = np.asarray(true_counts, dtype=np.float64)
    n, D = float(t.sum()), params.num_buckets
    coef, _ = adjoint(np.tril(np.ones((D, D))).T, alphas(fit_weights(params), params.branching), params.branching,
                      params.depth)
    cov = node_covariance(coef, coef, node_counts(params, t), n, unconditional_rho(params, int(round(n))),
                          level_noise(params))
    return (cov + cov.T) / 2


@dataclass(frozen=True, repr=False)
class RangeAnswers(ResultTable):
    """Counts of users in ranges of buckets ``[a, b]`` (values ``[lower, upper]``), with exact standard errors."""

    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    lower: Floats
    upper: Floats
    count: Floats
    std_error: Floats
    n: int
    confidence: float

    json_rows = "ranges"

    @property
    def fraction(self) -> Floats:
        return self.count / self.n if self.n else np.full_like(self.count, np.nan)

    @property
    def ci_low(self) -> Floats:
        return self.count - normal_quantile(self.confidence) * self.std_error

    @property
    def ci_high(self) -> Floats:
        return self.count + normal_quantile(self.confidence) * self.std_error

    def columns(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "lower": self.lower, "upper": self.upper, "count": self.count,
                "std_error": self.std_error, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "fraction": self.fraction}

    def metadata(self) -> dict[str, Any]:
        return {"n": self.n, "confidence": self.confidence}

    def title(self) -> str:
        return f"ranges of buckets, {self.confidence:.0%} CI"

    def rows(self) -> list[dict[str, Any]]:
        """One dict per range (plain Python values)."""
        return self.to_dicts()

    def to_dict(self) -> dict[str, Any]:
        """The metadata with the rows under ``ranges`` (what :meth:`to_json` writes)."""
        return {**self.metadata(), "ranges": self.rows()}


class HHTree:
    """The consistent tree of one HH_B aggregate: bucket counts, ranges, CDF and quantiles, each with its exact
    standard errors (plug-in, given the level sizes)."""

    def __init__(self, params: HHParams, n: int, level_sizes: npt.NDArray[np.int64], raw: list[Floats],
                 confidence: float = 0.95) -> None:
        self.params, self.n, self.confidence = params, int(n), confidence
        self.level_sizes = np.asarray(level_sizes, dtype=np.int64)
        self.raw = raw
        self.alpha = alphas(fit_weights(params, self.level_sizes), params.branching)
        self.noise: list[LevelNoise] = level_noise(params)
        self.rho = [self.n / s if s > 0 else math.inf for s in self.level_sizes.tolist()]
        self.levels = consistent(raw, float(self.n), self.alpha, params.branching)
        self.leaves: Floats = self.levels[-1]
        self.plugin = node_counts(params, np.clip(self.leaves, 0.0, float(self.n)))

    @classmethod
    def from_aggregate(cls, agg: Any, confidence: float = 0.95) -> HHTree:
        """The tree of an :class:`~ldp.decoders.range_tree.HHAggregate`."""
        return cls(agg.params, agg.n, agg.reports.copy(), agg.level_estimates(), confidence)

    def _variance(self, coef: list[Floats]) -> Floats:
        coef = [c if r < math.inf else np.zeros_like(c) for c, r in zip(coef, self.rho, strict=True)]
        return node_covariance(coef, coef, self.plugin, float(self.n), self.rho, self.noise, diagonal=True)

    def _consistent_coef(self, w: Floats) -> list[Floats]:
        return adjoint(w, self.alpha, self.params.branching, self.params.depth)[0]

    def leaf_std_errors(self) -> Floats:
        """Standard errors of the consistent bucket counts."""
        D = self.params.num_buckets
        out = []
        step = max(1, (1 << 22) // (D * self.params.depth))
        for start in range(0, D, step):
            k = min(step, D - start)
            w = np.zeros((D, k))
            w[np.arange(start, start + k), np.arange(k)] = 1.0
            out.append(self._variance(self._consistent_coef(w)))
        return np.sqrt(np.maximum(np.concatenate(out), 0.0))

    def ranges(self, a: Any, b: Any, consistent: bool = True) -> RangeAnswers:
        """Users in buckets ``[a, b]`` (inclusive bucket indices, scalars or arrays): consistent (default) or from
        the raw canonical nodes (module docstring)."""
        pr = self.params
        aa, bb = check_range(pr, a, b)
        coef, root = range_coefficients(pr, aa, bb, consistent, self.alpha)
        if consistent:
            count = np.array([self.leaves[x:y + 1].sum() for x, y in zip(aa.tolist(), bb.tolist(), strict=True)])
        else:
            count = sum(c.T @ y for c, y in zip(coef, self.raw, strict=True)) + root * self.n
        var = self._variance(coef)
        e = np.asarray(pr.edges)
        return RangeAnswers(aa, bb, e[aa], e[bb + 1], count, np.sqrt(np.maximum(var, 0.0)), self.n, self.confidence)

    def value_range(self, lower: float, upper: float, consistent: bool = True) -> RangeAnswers:
        """Users with values in ``[lower, upper]``, both bucket edges (``ValueError`` otherwise: the tree answers
        bucket-aligned ranges exactly)."""
        e = self.params.edges
        found = []
        for name, x in (("lower", lower), ("upper", upper)):
            i = int(np.searchsorted(e, x))
            if i > len(e) - 1 or not math.isclose(e[i], x, rel_tol=1e-12, abs_tol=1e-12 * (e[-1] - e[0])):
                j = min(max(i, 1), len(e) - 1)
                raise ValueError(f"{name}={x!r} is not a bucket edge (nearest: {e[j - 1]!r}, {e[j]!r}); range "
                                 "queries are bucket-aligned")
            found.append(i)
        if found[0] >= found[1]:
            raise ValueError(f"need lower < upper, got [{lower!r}, {upper!r}]")
        return self.ranges(found[0], found[1] - 1, consistent)

    def cdf_table(self) -> tuple[Floats, Floats, Floats]:
        """``(edges, cdf, cdf_cov)``: ``cdf[i]`` estimates ``F(edges[i+1])`` (a fraction; the last is 1 exactly),
        ``cdf_cov`` its ``D × D`` covariance (its diagonal above :data:`FULL_COVARIANCE_MAX` buckets)."""
        pr = self.params
        D = pr.num_buckets
        cdf = np.cumsum(self.leaves) / self.n if self.n else np.full(D, np.nan)
        w = np.tril(np.ones((D, D))).T if D <= FULL_COVARIANCE_MAX else None
        if w is not None:
            coef = self._consistent_coef(w)
            coef = [c if r < math.inf else np.zeros_like(c) for c, r in zip(coef, self.rho, strict=True)]
            cov = node_covariance(coef, coef, self.plugin, float(self.n), self.rho, self.noise)
            cov = (cov + cov.T) / 2
        else:
            cov = np.concatenate([self.ranges(0, np.arange(s, min(s + 256, D))).std_error ** 2
                                  for s in range(0, D, 256)])
        return np.asarray(pr.edges), cdf, cov / max(self.n, 1) ** 2

    def quantiles(self, qs: Any, confidence: float | None = None) -> QuantileTable:
        """Quantiles with confidence intervals from the CDF and its covariance
        (``ldp.decoders.distribution.quantiles_from_cdf``)."""
        edges, cdf, cov = self.cdf_table()
        return quantiles_from_cdf(edges, cdf, cov, qs, self.confidence if confidence is None else confidence)


@dataclass(frozen=True, repr=False)
class HHEstimates(DistributionQueries, Estimates):
    """The consistent bucket counts of an HH_B aggregate (:class:`~ldp.decoders.results.Estimates`), which also answer
    ranges, the CDF and quantiles through their :class:`HHTree`."""

    tree: HHTree | None = field(default=None, compare=False)

    def _tree(self) -> HHTree:
        if self.tree is None:
            raise ValueError("these estimates carry no tree")
        return self.tree

    def ranges(self, a: Any, b: Any, consistent: bool = True) -> RangeAnswers:
        """Users in buckets ``[a, b]`` (:meth:`HHTree.ranges`)."""
        return self._tree().ranges(a, b, consistent)

    def quantiles(self, qs: Any = DEFAULT_QUANTILES, confidence: float | None = None) -> QuantileTable:
        """Quantiles with CIs (:meth:`HHTree.quantiles`), at the estimates' confidence unless given."""
        return self._tree().quantiles(qs, self.confidence if confidence is None else confidence)
