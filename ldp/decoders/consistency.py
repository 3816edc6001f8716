"""Consistency post-processing of frequency estimates: Norm-Sub, Base-Cut and IBU (EM), on count vectors.

An LDP frequency oracle's raw estimate ``ĉ`` is unbiased but inconsistent: counts may be negative and need
not sum to n. Each map here returns a non-negative vector (Norm-Sub's and IBU's also sum to n) that is
*biased* but usually has a lower total squared error (Wang, Lopuhaä-Zwakenberg, Li, Škorić & Li, "Locally
Differentially Private Frequency Estimation with Consistency", NDSS 2020):

* :func:`norm_sub` — Norm-Sub: ``c̃_v = max(ĉ_v − δ, 0)`` with the one δ making ``Σ c̃_v = n``. It is
  the Euclidean projection onto ``{c ≥ 0, Σ c = n}`` (the paper's CLS equivalence), so it equals
  :func:`~ldp.decoders.results.project_to_simplex`; its own water-filling here also reports δ.
* :func:`base_cut` — Base-Cut: ``c̃_v = ĉ_v`` if ``ĉ_v > T_v``, else 0, with ``T_v = z·SE_v`` a
  significance threshold (the paper: ``z = Φ⁻¹(1 − α/d)``, Bonferroni over the d items).
* :func:`ibu` — iterative Bayesian update (Agrawal & Srikant, SIGMOD 2000; ElSalamouny & Palamidessi,
  2020), the EM algorithm for the maximum-likelihood distribution ``π`` given observation counts ``C_y`` of a
  known channel ``A[y, x] = Pr[output y | input x]``:  ``π_x ← π_x · Σ_y A[y, x]·C_y / (N·(Aπ)_y)``,
  ``N = Σ_y C_y``. The iterates stay in the simplex and the log-likelihood ``Σ_y C_y log (Aπ)_y`` never
  decreases (it is concave, so the limit is a global maximum).

:class:`SupportChannel` is ``A`` of a pure oracle with support probabilities ``p*``, ``q*``;
:func:`oracle_channel` finds them from a protocol's params (their ``support_probabilities``, else their exact
``response_matrix``), and :func:`ibu_counts` runs IBU on a raw estimate, recovering the support counts
``C_v = ĉ_v·(p*_v − q*_v) + n·q*_v`` it was computed from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["base_cut", "ibu", "ibu_counts", "norm_sub", "norm_sub_delta", "oracle_channel", "SupportChannel"]

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]


def norm_sub_delta(counts: npt.ArrayLike, n: float) -> float:
    """The δ of Norm-Sub: ``Σ_v max(ĉ_v − δ, 0) = n`` (``n > 0``; for ``n = 0``, ``max(ĉ)``).

    Water-filling: with the counts sorted decreasing, δ is ``(Σ_{i≤k} u_i − n)/k`` for the largest k with
    ``u_k > δ_k``. δ is negative when the counts sum below n (every count is then raised)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"counts must be a non-empty vector, got shape {c.shape}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    u = np.sort(c)[::-1]
    deltas = (np.cumsum(u) - n) / np.arange(1, u.size + 1)
    keep = np.flatnonzero(u > deltas)
    return float(deltas[keep[-1]]) if keep.size else float(u[0])


def norm_sub(counts: npt.ArrayLike, n: float) -> FloatArray:
    """Norm-Sub (Wang et al. 2020): ``max(ĉ_v − δ, 0)`` summing to ``n`` (:func:`norm_sub_delta`).

    Trades: a common shift of every count (the small ones most, relatively) for non-negative counts
    summing to n; lowers the total squared error, most when many items are rare."""
    c = np.asarray(counts, dtype=np.float64)
    return np.maximum(c - norm_sub_delta(c, n), 0.0)


def base_cut(counts: npt.ArrayLike, threshold: npt.ArrayLike) -> FloatArray:
    """Base-Cut (Wang et al. 2020): counts at or below ``threshold`` (scalar or per item, e.g. ``z·SE``)
    set to 0, the others kept unchanged.

    Trades: the rare items' counts are biased to 0 (and the total no longer sums to n) for removing the
    noise of every item not significantly above 0; good for finding the heavy hitters."""
    c = np.asarray(counts, dtype=np.float64)
    t = np.broadcast_to(np.asarray(threshold, dtype=np.float64), c.shape)
    return np.where(c > t, c, 0.0)


@dataclass(frozen=True)
class SupportChannel:
    """``A[y, x] = (q* + (p* − q*)·[y = x]) / (p* + (d − 1)·q*)``: which item a support is for, given the input.

    For GRR (``p* + (d−1)q* = 1``) it is the exact d×d channel and the support counts are multinomial,
    so :func:`ibu` gives the maximum-likelihood estimate. For unary encodings (per-bit channels: bit v is 1
    with probability p* if v is the input, else q*) the support counts of the n reports have expected shares
    ``(Aπ)_v``; IBU then maximizes the multinomial quasi-likelihood of those shares (the column sums are all
    the aggregate keeps, so the full likelihood of the reports is not available). ``A`` is never built:
    ``Aπ = (q*·Σπ + (p* − q*)·π)/(p* + (d − 1)q*)``, O(d) per IBU step, and ``A`` is symmetric."""

    p_star: float
    q_star: float
    d: int

    def __post_init__(self) -> None:
        if self.d < 2:
            raise ValueError(f"a channel needs d >= 2 items, got {self.d}")
        if not 0.0 <= self.q_star < self.p_star <= 1.0:
            raise ValueError(f"need 0 <= q* < p* <= 1, got p*={self.p_star}, q*={self.q_star}")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.d, self.d)

    def dot(self, x: FloatArray) -> FloatArray:
        """``A @ x`` (also ``A.T @ x``: A is symmetric)."""
        p, q = self.p_star, self.q_star
        return (q * x.sum() + (p - q) * x) / (p + (self.d - 1) * q)

    @property
    def matrix(self) -> FloatArray:
        """``A`` as a dense d×d array."""
        a = np.full((self.d, self.d), self.q_star)
        np.fill_diagonal(a, self.p_star)
        return a / (self.p_star + (self.d - 1) * self.q_star)


def ibu(observed: npt.ArrayLike, channel: npt.ArrayLike | SupportChannel, tol: float = 1e-8,
        max_iter: int = 10_000, start: npt.ArrayLike | None = None) -> FloatArray:
    """The maximum-likelihood input distribution ``π`` by EM (module docstring) from observation counts.

    ``observed``: counts ``C_y`` of each output (m,); ``channel``: ``A`` (m × d), columns summing to 1, or a
    :class:`SupportChannel`;
    ``start``: the first iterate (default uniform; it must be positive where π may be). Stops when the
    largest change of ``π`` is below ``tol`` or after ``max_iter`` iterations (logged at DEBUG; running out
    of iterations is a WARNING). Returns π (sums to 1).

    Trades: bias towards the channel's fixed point (small items pulled up or down) for a consistent,
    non-negative distribution with the lower error of maximum likelihood."""
    c = np.asarray(observed, dtype=np.float64)
    if isinstance(channel, SupportChannel):
        shape, dot, tdot = channel.shape, channel.dot, channel.dot
    else:  # a dense matrix
        a = np.asarray(channel, dtype=np.float64)
        if a.ndim != 2 or (a < 0).any() or not np.allclose(a.sum(axis=0), 1.0):
            raise ValueError("the channel must be a matrix (outputs × inputs) whose columns are distributions")
        shape = a.shape

        def dot(x: FloatArray) -> FloatArray:
            return a @ x

        def tdot(x: FloatArray) -> FloatArray:
            return a.T @ x
    if c.shape != (shape[0],):
        raise ValueError(f"observed counts {c.shape} do not fit a channel of shape {shape} (outputs × inputs)")
    if (c < 0).any() or c.sum() <= 0:
        raise ValueError("observed counts must be non-negative and not all zero")
    if tol <= 0 or max_iter < 1:
        raise ValueError(f"need tol > 0 and max_iter >= 1, got tol={tol}, max_iter={max_iter}")
    share = c / c.sum()
    d = shape[1]
    pi = np.full(d, 1.0 / d) if start is None else np.asarray(start, dtype=np.float64) / np.sum(start)
    for it in range(1, max_iter + 1):
        out = dot(pi)
        ratio = np.divide(share, out, out=np.zeros_like(share), where=out > 0)
        new = pi * tdot(ratio)
        new /= new.sum()
        change = float(np.max(np.abs(new - pi)))
        pi = new
        if change < tol:
            log.debug("IBU converged after %d iterations (change %.3g < tol %.3g)", it, change, tol)
            return pi
    log.warning("IBU stopped at max_iter=%d before converging (last change %.3g, tol %.3g)", max_iter, change, tol)
    return pi


def oracle_channel(params: Any) -> tuple[FloatArray | SupportChannel, FloatArray, FloatArray]:
    """``(A, p*, q*)`` of a protocol's ``params``: the IBU channel and per-item support probabilities.

    Params with ``support_probabilities`` ``(p*, q*)`` (GRR, bucketized GRR, L-GRR: each report names one
    item; SUE, OUE, L-OUE, bucketized OUE: per-bit law): :class:`SupportChannel` of the d items (exact for
    the GRR family). Else params with an exact ``response_matrix`` ``A`` whose output ``y`` supports item ``y``
    (binary RR: ``[[1−p, 1−q], [p, q]]``): ``p*_y = A[y, y]``, ``q*_y = A[y, x]`` for ``x ≠ y`` (the next
    column; one value per row in a pure oracle). ``ValueError`` for params with neither."""
    law = getattr(params, "support_probabilities", None)
    if law is not None:
        p_star, q_star = law
        d = params.domain_size
        return SupportChannel(p_star, q_star, d), np.full(d, p_star), np.full(d, q_star)
    matrix = getattr(params, "response_matrix", None)
    if matrix is None:
        raise ValueError(f"IBU needs the channel of the protocol: {getattr(params, 'protocol', None)!r} gives "
                         "none (no support probabilities or response matrix; use norm_sub, projected or base_cut "
                         "instead)")
    a = np.array(matrix, dtype=np.float64)
    items = np.arange(a.shape[1])
    return a, a[items, items], a[items, (items + 1) % items.size]


def ibu_counts(counts: npt.ArrayLike, n: int, params: Any, tol: float = 1e-8, max_iter: int = 10_000
               ) -> FloatArray:
    """IBU count estimates ``n·π`` from the *raw* unbiased estimate ``counts`` of ``n`` reports under ``params``.

    The support counts are recovered exactly (up to rounding) by inverting the estimator; ``ValueError`` when
    the protocol's channel is unknown (:func:`oracle_channel`) or the counts do not fit it."""
    a, p_star, q_star = oracle_channel(params)
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != p_star.shape:
        raise ValueError(f"{c.size} counts do not fit {params.protocol}'s {p_star.size} items")
    support = np.rint(c * (p_star - q_star) + n * q_star)
    if (support < 0).any() or (support > n).any():
        raise ValueError("the counts are not a raw unbiased estimate of these params (support counts outside [0, n])")
    return n * ibu(support, a, tol, max_iter)
