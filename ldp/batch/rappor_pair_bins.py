"""Every pair of bits' cells with the number of 1s binned (issue 88, item 4): ``pair_bins``, the bounded,
additive replacement of ``pair_grid`` (:mod:`ldp.batch.rappor_pairs`) for the test of the candidates' own pairs
(:func:`ldp.jobs.rappor_candidate_test.candidate_pair_check`).

**What is kept.** Per cohort ``g`` and bin ``ℓ`` of the number of 1s ``L`` of a report (:func:`ones_bins`):
``Aᵀ·A`` over the reports of cohort ``g`` whose ``L`` is in bin ``ℓ``, ``A = [1 | x]``, its upper triangle only
(``Aᵀ·A`` is symmetric): ``(m, B, (k + 1)(k + 2)/2)`` counters (:func:`pair_bins_shape`). From it every pair
``(a, b)`` has its cells ``(x_a, x_b, ℓ)`` exactly (:func:`bins_cells`: ``n11 = G[a, b]``, ``n10 = G[0, a] −
n11``, ``n01 = G[0, b] − n11``, ``n00 = G[0, 0] − n10 − n01 − n11``). Sums of counts: additive over batches,
merges and files.

**Sized to a budget.** ``B = min(k + 1, ⌊BIN_BUDGET / (m·(k + 1)(k + 2)/2)⌋)``, at least 1 (:func:`bin_count`):
:data:`BIN_BUDGET` is ``2²⁰`` counters (8 MiB), exceeded only where one bin alone is more (``k = 128, m = 64``:
536,640 counters, 4.3 MB). ``B = k + 1`` is one bin per ``L``: the cells are exact, as ``pair_grid``'s. The bins
are fixed by the parameters alone (equal shares of the law of ``L`` for a full filter, :func:`ones_bins`), never
by the data, so a window's statistic and its honest law are fixed before any report is seen.

**Why the test stays exact in law.** Given its filter an honest report's cell ``(x_a, x_b, R)`` follows one of the
type laws (:func:`ldp.jobs.rappor_pair_law.pair_type_laws`); ``L = x_a + x_b + R``, so the binned cell
``(x_a, x_b, bin(L))`` follows that law summed over the ``R`` of each bin (:func:`bin_matrix`: a fixed 0/1 matrix
applied to the exact law): every honest report's binned cell follows one of the binned type laws, whatever its
value, and the likelihood ratio with the honest mixture free is computed against those, as against the exact ones.

**Cost.** ``(k + 1)²`` float32 multiply-adds per report, in one product per (cohort, bin) group of a batch
(:func:`add_pair_bins`; sums of 0/1 in float32 are exact below 2²⁴ rows: chunks of :data:`CHUNK`). The fold keeps
it for every batch while ``k <=`` :data:`FREE_BITS` (the pair choice, :mod:`ldp.batch.rappor_pairs`, already
spends ``O(k²)`` per report there), and above only when it is told the candidates will be tested
(``RapporAggregate.keep_pairs``: a spec with candidates, in ``ldp fold`` and the ingest service), so a fold of
``k = 128`` bits without candidates does nothing more than before. A fold that skips it leaves its counts at what
they were: the test then sees only the reports counted (its own ``n`` per cohort and bin), which the fold chose by
when they came, never by their content.

**Two halves beyond** :data:`RATIO_COHORTS` **cohorts** (``pair_halves``, same shape): the same counts over the
reports a fair coin of the fold's own put in half A (:func:`add_pair_bins`'s ``halves``: the coin of
:class:`ldp.batch.rappor_pairs.PairChoice`, drawn per report, never from its content); half B is ``pair_bins −
pair_halves``. Both are sums of counts, additive over batches, merges and files, and the memory is twice
``pair_bins``'s (8.6 MB at ``k = 128, m = 64``). Where the bins are too few for the likelihood ratio (fewer
than 8: ``k >= 64`` at ``m = 64``), the candidates' test fits its weights on one half and sums them over the other
(:func:`ldp.jobs.rappor_cross_fit.cross_fit_scores`); with more, it reads their sum, ``pair_bins``. Any partition
that does not look at the reports' bits keeps that test's level, so an aggregate whose halves count only part of
its reports (merged with a file written before the halves existed: its reports all in half B) is tested as well;
one with no half A at all (:func:`halves_source`) is tested on ``pair_bins`` alone.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import popcounts

__all__ = ["BIN_BUDGET", "CHUNK", "FREE_BITS", "RATIO_COHORTS", "add_pair_bins", "bin_count", "bin_matrix",
           "bins_cells", "halves_source", "ones_bins", "pair_bins_shape", "pair_halves_shape", "triangle_index"]

BIN_BUDGET = 1 << 20
"""The counters ``pair_bins`` may take (``m·B·(k + 1)(k + 2)/2``); one bin is kept even above it."""
FREE_BITS = 64
"""Filters of at most this many bits keep ``pair_bins`` on every fold; wider ones when told (module docstring)."""
CHUNK = 1 << 15
"""Rows per product in :func:`add_pair_bins`."""
RATIO_COHORTS = 16
"""The most honest mixtures the candidates' likelihood ratio fits
(:func:`ldp.jobs.rappor_candidate_test.candidate_pair_check`): beyond, the cohorts' boundary gains add up (honest
windows of ``m = 64``, ``n = 10⁵``: Bonferroni ``p <= 0.1`` in 11 of 20 at ``k = 32`` and 17 of 20 at ``k = 64``),
so more cohorts are summed in this many runs (:func:`ldp.jobs.rappor_shared_share.pooled_cohorts`); and the fold
keeps two halves (``pair_halves``) for the cross-fitted test of cells with too few bins for the ratio."""


def _triangle(k: int) -> int:
    return (k + 1) * (k + 2) // 2


def bin_count(params: Any) -> int:
    """``B``: the bins of ``L`` (module docstring); 0 where no ``pair_bins`` is kept: ``k < 2``, or where the
    fold keeps the exact ``pair_grid`` (:func:`ldp.batch.rappor_pairs.grid_enabled`)."""
    from ldp.batch.rappor_pairs import grid_enabled

    k, m = params.num_bloombits, params.num_cohorts
    if k < 2 or grid_enabled(params):
        return 0
    return int(max(1, min(k + 1, BIN_BUDGET // (m * _triangle(k)))))


def pair_bins_shape(params: Any) -> tuple[int, int, int]:
    """``(m, B, (k + 1)(k + 2)/2)``, or ``(0, 0, 0)`` where none is kept (:func:`bin_count`)."""
    b = bin_count(params)
    return (params.num_cohorts, b, _triangle(params.num_bloombits)) if b else (0, 0, 0)


def pair_halves_shape(params: Any) -> tuple[int, int, int]:
    """``pair_halves``' shape: :func:`pair_bins_shape` beyond :data:`RATIO_COHORTS` cohorts, else ``(0, 0, 0)``."""
    return pair_bins_shape(params) if params.num_cohorts > RATIO_COHORTS else (0, 0, 0)


def halves_source(aggregate: Any) -> npt.NDArray[np.int64]:
    """What the candidates' test reads from a fold's binned cells: ``(2, m, B, T)``, half A (``pair_halves``) and
    half B (``pair_bins − pair_halves``), where the aggregate kept halves, some report is in half A and both are
    counts (none negative); ``pair_bins`` itself otherwise (module docstring)."""
    stat = np.asarray(aggregate.pair_bins, np.int64)
    half = getattr(aggregate, "pair_halves", None)
    if half is None or half.shape != stat.shape or not half.any():
        return stat
    other = stat - half
    if half.min() < 0 or other.min() < 0:
        return stat
    return np.stack([np.asarray(half, np.int64), other])


def ones_bins(params: Any) -> npt.NDArray[np.intp]:
    """``(k + 1,)``: the bin of each number of 1s ``L``: ``L`` itself when ``B = k + 1``, otherwise
    ``min(B − 1, ⌊B·F(L)⌋)`` with ``F(L) = P(L' < L) + P(L' = L)/2`` under the law of ``L'`` for a full filter
    (``Binomial(h, q*) + Binomial(k − h, p*)``): bins of about equal honest mass, nondecreasing in ``L``."""
    return _ones_bins(params.num_bloombits, params.num_hashes, float(params.p_star), float(params.q_star),
                      bin_count(params)).copy()


@functools.lru_cache(maxsize=32)
def _ones_bins(k: int, h: int, ps: float, qs: float, b: int) -> npt.NDArray[np.intp]:
    from scipy import stats

    if b >= k + 1:
        return np.arange(k + 1, dtype=np.intp)
    law = np.convolve(stats.binom.pmf(np.arange(h + 1), h, qs), stats.binom.pmf(np.arange(k - h + 1), k - h, ps))
    mid = np.cumsum(law) - law / 2
    out: npt.NDArray[np.intp] = np.minimum(b - 1, np.floor(b * mid)).astype(np.intp)
    return out


def bin_matrix(params: Any, bins: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
    """``(4(k − 1), 4B)``: 1 where cell ``(x_a, x_b, R)`` (:func:`ldp.batch.rappor_pairs.cell_of`) falls in the
    binned cell ``(x_a, x_b, bin(R + x_a + x_b))`` (index ``(2·x_a + x_b)·B + ℓ``): a law over the cells times it is
    the law over the binned cells (module docstring). ``bins``: the bin of each ``L`` (default
    :func:`ones_bins`)."""
    k = params.num_bloombits
    if bins is None:
        bins, b = ones_bins(params), bin_count(params)
        if b == 0:
            raise ValueError("these parameters keep no pair_bins (bin_count is 0)")
    else:
        bins = np.asarray(bins, np.intp)
        b = int(bins.max()) + 1
    out = np.zeros((4 * (k - 1), 4 * b))
    for group in range(4):
        shift = (group >> 1) + (group & 1)
        r = np.arange(k - 1)
        out[group * (k - 1) + r, group * b + bins[r + shift]] = 1.0
    return out


@functools.lru_cache(maxsize=16)
def triangle_index(k: int) -> npt.NDArray[np.intp]:
    """``(k + 1, k + 1)``: the position of entry ``(i, j)`` of ``Aᵀ·A`` in its upper triangle as stored
    (``np.triu_indices`` order), the same for ``(j, i)``."""
    iu = np.triu_indices(k + 1)
    out = np.zeros((k + 1, k + 1), np.intp)
    out[iu] = np.arange(iu[0].size)
    out[iu[1], iu[0]] = np.arange(iu[0].size)
    out.flags.writeable = False
    return out


def add_pair_bins(cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], k: int, bins: npt.NDArray[np.intp],
                  out: npt.NDArray[np.int64], halves: npt.NDArray[np.bool_] | None = None,
                  half_out: npt.NDArray[np.int64] | None = None) -> None:
    """Add a batch to ``out`` (``(m, B, (k + 1)(k + 2)/2)``, in place): per (cohort, bin of ``L``) group the upper
    triangle of ``Aᵀ·A``, ``A = [1 | x]``, over its reports (``bins``: :func:`ones_bins`). The reports are sorted by
    group and each group multiplied out in float32 chunks of :data:`CHUNK` rows (exact). With ``halves`` (a coin
    per report, true for half A) and ``half_out`` (``pair_halves``): the groups split by the coin too, each product
    added to ``out`` and, for half A, to ``half_out`` (one pass: the same products, over half the rows each)."""
    g = np.asarray(cohorts).reshape(-1).astype(np.int64)
    if g.size == 0 or out.size == 0:
        return
    from ldp.batch.threads import threads_for

    r = np.ascontiguousarray(rows, dtype=np.uint8)
    nb = out.shape[1]
    split = halves is not None and half_out is not None and half_out.size > 0
    key = g * nb + np.asarray(bins, np.int64)[popcounts(r, k)]
    if split:
        key = 2 * key + (~np.asarray(halves, bool).reshape(-1)).astype(np.int64)  # even: half A
    width = 2 if split else 1
    order = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(out.shape[0] * nb * width + 1))
    flat = out.reshape(-1, out.shape[2])
    flat_half = half_out.reshape(-1, out.shape[2]) if split and half_out is not None else None
    iu = np.triu_indices(k + 1)
    with threads_for(0.0):  # many small products: one BLAS thread
        for at in np.flatnonzero(np.diff(bounds)).tolist():
            take = order[bounds[at]:bounds[at + 1]]
            for start in range(0, take.size, CHUNK):
                sel = take[start:start + CHUNK]
                a = np.empty((sel.size, k + 1), np.float32)
                a[:, 0] = 1.0
                a[:, 1:] = np.unpackbits(r[sel], axis=1, count=k, bitorder="little")
                prod = np.rint((a.T @ a)[iu]).astype(np.int64)
                flat[at // width] += prod
                if flat_half is not None and at % 2 == 0:
                    flat_half[at // 2] += prod


def bins_cells(stat: npt.NDArray[np.int64], a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``(P, 4B)``: the binned cells of pairs ``(a[i], b[i])`` (``a != b``) over one cohort's ``pair_bins``
    (``(B, (k + 1)(k + 2)/2)``), cell ``(2·x_a + x_b)·B + ℓ``: per bin, ``n11 = G[a, b]``, ``n10 = G[0, a] − n11``,
    ``n01 = G[0, b] − n11``, ``n00 = G[0, 0] − n10 − n01 − n11``."""
    nb, t = stat.shape
    k = int(round((np.sqrt(8 * t + 1) - 3) / 2))
    at = triangle_index(k)
    ia, ib = np.asarray(a, np.intp) + 1, np.asarray(b, np.intp) + 1
    both = stat[:, at[ia, ib]]  # (B, P)
    sa, sb = stat[:, at[0, ia]], stat[:, at[0, ib]]
    n = stat[:, 0][:, None]
    n10, n01 = sa - both, sb - both
    n00 = n - n10 - n01 - both
    return np.ascontiguousarray(np.concatenate([n00, n01, n10, both], axis=0).T)
