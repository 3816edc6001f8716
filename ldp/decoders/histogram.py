"""Histograms of numbers, server side: dBitFlip's aggregate and estimator, and bucketized GRR's and OUE's
(GRR's and OUE's: :mod:`ldp.decoders.unary`).

dBitFlip (Ding, Kulkarni, Yekhanin 2017). Per bucket v the aggregate keeps ``N_v``, the reports that
sampled v, and ``O_v``, the ones among them. With ``r = d/k`` and ``Δ = p1 − p0`` (realized
probabilities), the count estimate is

    ``ĉ_v = (O_v − p0·N_v) / (r·Δ)``,

a sum over users of ``Y_i = s_i·(b_i − p0)/(r·Δ)``, where ``s_i ~ Bernoulli(r)`` says whether user i
sampled v and ``b_i`` is its bit there: Bernoulli(p1) if v is its bucket, else Bernoulli(p0). So
``E[Y_i] = [x_i = v]`` (unbiased), and since ``E[(b − p0)²]`` is ``p0(1−p0)`` for ``b ~ B(p0)`` and
``p1(1−p1) + Δ²`` for ``b ~ B(p1)``, with ``f_v`` of the n users in bucket v:

    ``Var[ĉ_v] = (n − f_v)·p0(1−p0)/(r·Δ²) + f_v·((p1(1−p1) + Δ²)/(r·Δ²) − 1)``.

With ``d = k`` (r = 1) it is the pure-protocol variance of symmetric unary encoding. The standard
error reported plugs ``clip(ĉ_v, 0, n)`` into it.

Aggregate-level simulation is exact: users are followed in groups by (own bucket, picks left) while
the buckets are visited in order; a user with ``j`` of its d picks left among ``K`` unvisited buckets
includes the next one with probability ``j/K`` (its set is a uniform j-subset of them), so each group's
takers are binomial. That gives ``N_v`` and ``M_v`` (users of bucket v that sampled v), and then
``O_v = Bin(M_v, p1) + Bin(N_v − M_v, p0)``. It costs ``O(k²·d)`` binomials; when that exceeds a
per-report draw (``O(n·(d + k/8))``), the vectorized encoder is run instead (exact too).

Covariance of the bucket estimates (what the CDF, range fractions and quantiles need:
:mod:`ldp.decoders.distribution`), given the users' values (their counts ``f``):

* dBitFlip: ``Cov(ĉ_u, ĉ_v) = 0`` for ``u ≠ v``. Per user, ``Y_u·Y_v = s_u·s_v·(b_u − p0)(b_v − p0)/(rΔ)²``
  and, given the sampled set, the bits are independent with ``E[b_w − p0] = Δ·[x = w]``: at most one of
  ``u``, ``v`` is the user's bucket, so ``E[Y_u·Y_v] = 0 = E[Y_u]·E[Y_v]``.
* bucket-OUE: 0 (the bits of a report are independent given the value).
* bucket-GRR: one reported bucket ``y`` per user, so ``Cov([y = u], [y = v]) = −P(y = u)·P(y = v)`` and, over
  users, ``Cov(ĉ_u, ĉ_v) = −(q²·n + q(p − q)(f_u + f_v))/(p − q)²`` (each row of the covariance sums to 0:
  the estimates always sum to n). Kept as ``diag + c·11ᵀ + a1ᵀ + 1aᵀ`` with ``c = −q²n/(p − q)²``,
  ``a_v = −q·f_v/(p − q)`` (:class:`~ldp.decoders.distribution.BucketCovariance`, O(k)).

The estimates (:class:`~ldp.decoders.distribution_estimates.HistogramEstimates`) carry that covariance with
the counts plugged in (``clip(ĉ_v, 0, n)``, as the standard errors).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import add_ones_by_group, row_padding_mask
from ldp.batch.histogram import dbitflip_encode_batch, row_popcount
from ldp.decoders.base import Aggregate, RejectHandler, StateLayout
from ldp.decoders.distribution import BucketCovariance
from ldp.decoders.distribution_estimates import HistogramEstimates
from ldp.decoders.pure import pure_count_variance
from ldp.decoders.randomized_response import GRRBackedAggregate, grr_variance
from ldp.decoders.results import Estimates
from ldp.decoders.unary import UnaryAggregate
from ldp.encoders.histogram import BucketGRRParams, BucketOUEParams, DBitFlipParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["DBitFlipAggregate", "BucketGRRAggregate", "BucketOUEAggregate", "dbitflip_variance",
           "histogram_covariance"]

_SIM_CHUNK = 1 << 18


def _true_counts(true_counts: Any, k: int) -> npt.NDArray[np.int64]:
    t = np.asarray(true_counts)
    if t.shape != (k,) or (t.size and (not np.issubdtype(t.dtype, np.integer) or t.min() < 0)):
        raise ValueError(f"true counts must be {k} non-negative integers, got shape {t.shape}, dtype {t.dtype}")
    return t.astype(np.int64)


def dbitflip_variance(params: DBitFlipParams, true_counts: npt.ArrayLike, n: float | None = None
                      ) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` (module docstring) given the counts ``f_v`` of ``n`` users (default: their sum;
    both may be fractional, e.g. expected counts)."""
    f = np.asarray(true_counts, dtype=np.float64)
    n = float(f.sum()) if n is None else n
    p0, p1 = params.p0, params.p1
    r, delta2 = params.d / params.num_buckets, (p1 - p0) ** 2
    return (n - f) * p0 * (1.0 - p0) / (r * delta2) + f * ((p1 * (1.0 - p1) + delta2) / (r * delta2) - 1.0)


def histogram_covariance(params: DBitFlipParams | BucketGRRParams | BucketOUEParams, counts: npt.ArrayLike,
                         n: float | None = None) -> BucketCovariance:
    """The exact covariance of the count estimates (module docstring) given the counts ``f_v`` of ``n`` users
    (default: their sum; fractional counts allowed: the plug-in ``clip(ĉ, 0, n)``)."""
    f = np.asarray(counts, dtype=np.float64)
    n = float(f.sum()) if n is None else float(n)
    if isinstance(params, DBitFlipParams):
        return BucketCovariance.diagonal(dbitflip_variance(params, f, n))
    if not isinstance(params, (BucketGRRParams, BucketOUEParams)):
        raise TypeError(f"no bucket covariance for {type(params).__name__}")
    pq = params.grr if isinstance(params, BucketGRRParams) else params.oue
    var = pure_count_variance(f, n, pq.p, pq.q)
    if isinstance(params, BucketOUEParams):
        return BucketCovariance.diagonal(var)
    p, q = pq.p, pq.q
    c, a = -q * q * n / (p - q) ** 2, -q * f / (p - q)
    return BucketCovariance(var - c - 2.0 * a, c, a)


def _with_distribution(est: Estimates, params: DBitFlipParams | BucketGRRParams | BucketOUEParams,
                       n: int) -> HistogramEstimates:
    """``est`` with the edges and the plug-in covariance (counts ``clip(ĉ, 0, n)``)."""
    return HistogramEstimates.of(est, params.edges, histogram_covariance(params, np.clip(est.count, 0.0, n), n))


class DBitFlipAggregate(Aggregate):
    """Sufficient statistics of dBitFlip: per bucket, the reports that sampled it and the ones among them."""

    params_type: ClassVar[type] = DBitFlipParams
    params: DBitFlipParams
    sampled: npt.NDArray[np.int64]  # (k,), created by _init_state
    ones: npt.NDArray[np.int64]  # (k,)

    @classmethod
    def state_layout(cls, params: DBitFlipParams) -> StateLayout:
        k = params.num_buckets
        return {"sampled": (np.dtype(np.int64), (k,)), "ones": (np.dtype(np.int64), (k,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        k, n = self.params.num_buckets, len(columns["sampled"])
        groups, reports = np.zeros(n, np.uint8), np.zeros(1, np.int64)
        add_ones_by_group(groups, columns["sampled"], reports, self.sampled.reshape(1, k))
        add_ones_by_group(groups, columns["bits"], reports, self.ones.reshape(1, k))

    def _rule_breakers(self, batch: ReportBatch) -> np.ndarray | None:
        """Rows of a batch that fit the schema but not dBitFlip's rule (``None``: the base rejects it whole)."""
        p, k = self.params, self.params.num_buckets
        got = {f.name: f for f in batch.schema}
        if (batch.protocol, batch.fingerprint) != (p.protocol, p.fingerprint) or set(got) != {"sampled", "bits"}:
            return None
        if any(got[name].kind != "bits" or got[name].size != k for name in got):
            return None
        mask = row_padding_mask(k)
        sampled, bits = batch.columns["sampled"] & mask, batch.columns["bits"] & mask
        return (row_popcount(sampled) != p.d) | (bits & ~sampled).any(axis=1)

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """The base's checks, after rejecting (``bad_value``) the rows that break dBitFlip's rule."""
        bad = self._rule_breakers(batch)
        if bad is None or not bad.any():
            return super()._add_batch(batch, on_reject)
        return self._add_batch_without(batch, bad, "bad_value",
                                       f"not exactly d={self.params.d} sampled buckets, or a 1 outside them",
                                       on_reject, super()._add_batch)

    def estimate(self, confidence: float = 0.95) -> HistogramEstimates:
        """Unbiased count of users per bucket, with plug-in standard errors and normal CIs (and the quantiles,
        ranges and CDF they imply)."""
        pr = self.params
        r, delta = pr.d / pr.num_buckets, pr.p1 - pr.p0
        count = (self.ones - pr.p0 * self.sampled) / (r * delta)
        var = dbitflip_variance(pr, np.clip(count, 0.0, self.n), float(self.n))  # the covariance is diagonal
        est = Estimates(pr.protocol, list(pr.labels), self.n, count, np.sqrt(var), confidence, pr.privacy_cost)
        return HistogramEstimates.of(est, pr.edges, BucketCovariance.diagonal(var))

    @staticmethod
    def exact_variance(params: DBitFlipParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return dbitflip_variance(params, _true_counts(true_counts, params.num_buckets))

    @classmethod
    def simulate(cls, params: DBitFlipParams, true_counts: Any, rng: Any = None) -> DBitFlipAggregate:
        """An exact draw of the aggregate of users with ``true_counts`` per bucket (module docstring)."""
        k, d = params.num_buckets, params.d
        t = _true_counts(true_counts, k)
        gen, agg = as_generator(rng), cls(params)
        n = int(t.sum())
        if k * k * (d + 1) > 4 * n * (d + k // 8 + 1):  # per report is cheaper
            values = np.repeat(np.arange(k), t)
            for start in range(0, n, _SIM_CHUNK):
                sampled, bits = dbitflip_encode_batch(params, values[start:start + _SIM_CHUNK], gen)
                agg._fold({"sampled": sampled, "bits": bits})
            agg.n = n
            return agg
        left = np.zeros((k, d + 1), np.int64)  # users by (own bucket, picks left)
        left[:, d] = t
        picks = np.arange(d + 1)
        own = np.zeros(k, np.int64)  # M_v
        for b in range(k):
            take = gen.binomial(left, np.minimum(picks / (k - b), 1.0))
            agg.sampled[b], own[b] = take.sum(), take[b].sum()
            left -= take
            left[:, :-1] += take[:, 1:]
        agg.ones[:] = gen.binomial(own, params.p1) + gen.binomial(agg.sampled - own, params.p0)
        agg.n = n
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """:func:`dbitflip_variance` of the item's bucket."""
        return float(dbitflip_variance(params, np.array([count]), n)[0])


class BucketGRRAggregate(GRRBackedAggregate):
    """Bucketized GRR: GRR's aggregate (:class:`~ldp.decoders.randomized_response.GRRAggregate`) over the buckets."""

    params_type: ClassVar[type] = BucketGRRParams
    params: BucketGRRParams

    def estimate(self, confidence: float = 0.95) -> HistogramEstimates:
        """GRR's unbiased counts per bucket, with plug-in standard errors and normal CIs (and the quantiles,
        ranges and CDF they imply)."""
        est = replace(self._as_grr().estimate(confidence), protocol=self.params.protocol)
        return _with_distribution(est, self.params, self.n)

    @staticmethod
    def exact_variance(params: BucketGRRParams, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return grr_variance(params.grr, true_counts)


class BucketOUEAggregate(UnaryAggregate):
    """Bucketized OUE: OUE's aggregate (:class:`~ldp.decoders.unary.UnaryAggregate`) over the buckets."""

    params_type: ClassVar[Any] = BucketOUEParams

    def estimate(self, confidence: float = 0.95) -> HistogramEstimates:
        """OUE's unbiased counts per bucket, with plug-in standard errors and normal CIs (and the quantiles,
        ranges and CDF they imply)."""
        return _with_distribution(super().estimate(confidence), self.params, self.n)
