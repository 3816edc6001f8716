"""Projective Geometry Response and its hybrid, server side: aggregate (histogram of ``j``), the estimator from every
hyperplane's count at once, exact variance, exact aggregate-level simulation.

For value ``x`` (block ``B``, point ``v``), let ``A_x`` be the reports in its own set (block ``B``, hyperplane
``S_v``) and ``T_B`` the reports in its block (all ``n`` for PGR). Per user, a report lands in the own set with
probability ``γs/K + (1 − γ)`` for a user of ``x``, ``γs/K + (1 − γ)c/s`` for a user of another value of block
``B`` (two hyperplanes share ``c`` of their ``s`` points), ``γs/K`` for a user of another block; and in block
``B`` with probability ``γ/h + (1 − γ)`` for a user of that block, ``γ/h`` otherwise. So, with ``F_B`` the users
of block ``B``, ``E[T_B] = nγ/h + (1 − γ)F_B`` and (Feldman, Nelson, Nguyen, Talwar 2022, §3–4)

    ``ĉ_x = (A_x − (T_B − nγ/h)·c/s − nγ·s/K) / ((1 − γ)(1 − c/s))``   (unbiased),

    ``Var[ĉ_x] = f_x·V₁ + (F_B − f_x)·V₂ + (n − F_B)·V₃``,

``V_i`` the variance of one user's term ``α·[in A] + β·[in T]`` (``α = 1/((1−γ)(1−c/s))``, ``β = −α c/s``) in
each of the three classes (:func:`ldp.encoders.projective_layout.class_variances`). For PGR ``h = 1``,
``T_B = F_B = n``, and this is the paper's ``α·A_x + β·n`` with ``V₃`` unused. Every ``A_x`` comes from one
pass over each block's histogram (:func:`ldp.batch.projective_geometry.hyperplane_counts`, ``O(K·q·t)``).

Aggregate-level simulation is exact: ``Bin(f_x, 1 − γ)`` users of each ``x`` report uniformly on its own set
(the client's bijection applied to uniform ``r``), the rest uniformly on ``[0, K)``: ``Multinomial(rest, 1/K)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.projective_geometry import hyperplane_counts, own_points
from ldp.decoders.hadamard_response import HRAggregate
from ldp.decoders.randomized_response import _true_counts
from ldp.decoders.results import Estimates
from ldp.encoders.projective_geometry import HPGParams, PGRParams
from ldp.encoders.projective_layout import class_variances
from ldp.randomness import as_generator

__all__ = ["PGAggregate", "pg_counts", "pg_variance", "block_totals", "own_set_counts"]


def block_totals(params: Any, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``F_B`` of each value's block: the sum of ``counts`` over the values of that block (``⌊x/b⌋``)."""
    c = np.asarray(counts, dtype=np.float64)
    blk = np.arange(params.domain_size) // params.block_points
    return np.bincount(blk, weights=c, minlength=params.nblocks)[blk]


def own_set_counts(params: Any, histogram: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """``(A_x, T_B)`` for every value: the reports in its own set and in its block, from the histogram of ``j``
    (integers; or floats, e.g. an expected histogram)."""
    h = np.asarray(histogram)
    h = h.astype(np.int64 if np.issubdtype(h.dtype, np.integer) else np.float64).reshape(params.nblocks,
                                                                                       params.block_points)
    own = np.concatenate([hyperplane_counts(row, params.field, params.dimension) for row in h])
    block = h.sum(axis=1)
    x = np.arange(params.domain_size)
    return own[:params.domain_size], block[x // params.block_points]


def pg_counts(params: Any, histogram: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Unbiased counts ``ĉ_x`` from the histogram of reported ``j`` (module docstring)."""
    a, t = own_set_counts(params, histogram)
    n = float(np.asarray(histogram).sum())
    g, s, c, k, h = params.gamma, params.set_size, params.overlap, params.order, params.nblocks
    return (a - (t - n * g / h) * (c / s) - n * g * s / k) / ((1.0 - g) * (1.0 - c / s))


def _variance(params: Any, f: Any, big: Any, n: float) -> Any:
    v1, v2, v3 = class_variances(params.gamma, params.set_size, params.overlap, params.order, params.nblocks)
    return f * v1 + (big - f) * v2 + (n - big) * v3


def pg_variance(params: Any, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_x] = f_x V₁ + (F_B − f_x) V₂ + (n − F_B) V₃`` of each value's count estimate."""
    t = _true_counts(true_counts, params.domain_size).astype(np.float64)
    return np.asarray(_variance(params, t, block_totals(params, t), float(t.sum())), dtype=np.float64)


class PGAggregate(HRAggregate):
    """Sufficient statistics of PGR and HPG: how many reports name each ``j`` in ``[0, K)`` (HR's state and fold,
    :class:`~ldp.decoders.hadamard_response.HRAggregate`; its own estimator)."""

    params_type: ClassVar[Any] = (PGRParams, HPGParams)
    params: Any  # PGRParams | HPGParams: what HR's state and fold read of it (order)

    def estimate(self, confidence: float = 0.95) -> Estimates:
        """Unbiased count of users per value (every hyperplane counted at once), with plug-in standard errors and
        normal CIs: ``clip(ĉ_x, 0, n)`` for ``f_x`` and, for ``F_B``, the block's sum of the unclipped ``ĉ`` (unbiased;
        the sum of clipped ones would add every small value's positive noise) clipped to ``[f_x, n]``. At d = 1024,
        n = 20,000 Zipf users, the 95 % intervals cover 95.1–95.2 % (tests/protocols/test_projective_geometry.py)."""
        pr = self.params
        count = pg_counts(pr, self.counts)
        f = np.clip(count, 0.0, self.n)
        big = np.clip(block_totals(pr, count), 0.0, self.n) if pr.nblocks > 1 else np.full_like(f, float(self.n))
        var = np.maximum(_variance(pr, f, np.maximum(big, f), float(self.n)), 0.0)
        items = [pr.label_of(i) for i in range(pr.domain_size)]
        return Estimates(pr.protocol, items, self.n, count, np.sqrt(var), confidence, pr.privacy_cost)

    @staticmethod
    def exact_variance(params: Any, true_counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return pg_variance(params, true_counts)

    @classmethod
    def simulate(cls, params: Any, true_counts: Any, rng: Any = None) -> PGAggregate:
        """Exact aggregate-level draw of the uniform-or-own-set mixture (module docstring)."""
        t = _true_counts(true_counts, params.domain_size)
        gen, agg, k = as_generator(rng), cls(params), params.order
        own = gen.binomial(t, 1.0 - params.gamma)
        ends = np.cumsum(own)
        start = 0
        while start < t.size:  # values in groups of about 2^20 own-set reports: bounded temporaries
            stop = max(int(np.searchsorted(ends, ends[start] - own[start] + (1 << 20), "right")), start + 1)
            x = np.repeat(np.arange(start, stop, dtype=np.int64), own[start:stop])
            r = gen.integers(0, params.set_size, size=x.size, dtype=np.int64)
            agg.counts += np.bincount(own_points(params, x, r), minlength=k)
            start = stop
        agg.counts += gen.multinomial(int(t.sum() - own.sum()), np.full(k, 1.0 / k))
        agg.n = int(t.sum())
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The exact variance of a value in a full block, the other ``n − count`` users spread evenly over the
        other ``d − 1`` values: ``F_B = count + (n − count)(m − 1)/(d − 1)``, ``m = min(b, d)``."""
        d = params.domain_size
        m = min(params.block_points, d)
        big = count + (n - count) * (m - 1) / max(d - 1, 1)
        return float(_variance(params, np.float64(count), np.float64(big), float(n)))
