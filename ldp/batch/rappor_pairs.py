"""What a RAPPOR fold keeps for the promoted-pair test (:mod:`ldp.jobs.rappor_poisoning`): per cohort, the reports
tested against its most suspicious pairs of bits, by cell.

One additive statistic, so an aggregate carries it, merges it by sum and serves the test where the reports are
gone (the ingest service's dashboard, ``ldp decode``):

* ``pair_cells`` (``m, J, 4(k − 1)``): for cohort ``g`` and slot ``j`` (its ``j``-th chosen pair ``(a, b)``,
  :data:`PAIR_SLOTS` of them), the tested reports by cell ``(x_a, x_b, R)``, ``R`` the report's other 1 bits
  (its number of 1s minus ``x_a + x_b``, ``0..k − 2``): cell ``(2·x_a + x_b)·(k − 1) + R`` (:func:`cell_of`).

**The split and the choice.** The fold splits each batch by a fair coin of its own per report (OS entropy unless a
seed is given: a sender cannot choose its side), independent of the coins of
:mod:`ldp.batch.rappor_evidence`: reports to choose from and reports to test. Per cohort, the fold keeps the
moments of every pair of bits over all its reports to choose from (:func:`grid_moments`: three ``(k + 1)²`` integer
matrices per cohort, the working state, never serialized), and chooses, after each batch's reports to choose from
are taken in and once a cohort has :data:`FIRST` of them, its :data:`PAIR_SLOTS` pairs of largest score
(:func:`pair_scores`); then each of the batch's reports to test is counted, per slot, in the cell of its cohort's
pair. A tested report never enters a choice.

**The score** that chooses the pairs is :mod:`ldp.batch.rappor_pair_score`'s (:func:`pair_scores`). The score only
decides which pairs are tested; the test (:func:`ldp.jobs.rappor_pair_law.pair_law_check`) needs no property of it.

**Every pair, below a size budget.** Where ``m·(k + 1)³ <=`` :data:`GRID_LIMIT` (``k = 16, m = 4``: 19,652
counters), the fold also keeps ``pair_grid`` (``m, k + 1, k + 1, k + 1``): for cohort ``g`` and each number of 1s
``L``, ``Aᵀ·A`` over its reports with ``L`` ones, ``A = [1 | x]`` (:func:`add_pair_grid`): the reports, each bit's
1s and each pair's 1s together. Every pair's cells follow from it exactly (:func:`grid_cells`: ``x_a = x_b = 1``
with ``R = L − 2`` is ``G[g, L, a, b]``, and so on), so the test of a candidate string's own pairs
(:func:`ldp.jobs.rappor_candidate_test.candidate_pair_check`) needs no choice: every report counts, nothing is chosen at
fold time (the first fold does no more per report than any other). Cost: ``(k + 1)²`` float32 multiply-adds per
report, one product per (cohort, number of 1s) group of a batch. Above the budget the chosen-pair cells alone are
kept.

Cost: the moments take ``24·m·(k + 1)²`` bytes while folding and come from the reports to choose from's grids
(:func:`split_grids`, whose cost is above); for ``k >`` :data:`MAX_BITS`, or above :data:`MOMENT_LIMIT`
entries, the fold keeps no pair cells (the test is then not run).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import popcounts
from ldp.batch.rappor_pair_score import pair_scores, score_coefficients

__all__ = ["FIRST", "GRID_LIMIT", "MOMENT_LIMIT", "PAIR_SLOTS", "PairChoice", "add_pair_grid", "cell_of",
           "cohort_grids", "grid_cells", "grid_enabled", "grid_moments", "histogram_fits", "pair_cells_shape",
           "pair_grid_shape", "pair_scores", "pairs_enabled", "score_coefficients", "split_grids"]

PAIR_SLOTS = 2
"""Pairs of bits tested per cohort (two: an attack alternating two targets promotes two pairs per cohort)."""
FIRST = 64
"""Reports to choose from a cohort needs before its pairs are first chosen."""
REFRESH = 1.25
"""A cohort chooses again once its reports to choose from have grown this many times since its last choice."""
MOMENT_LIMIT = 1 << 22
"""The most entries ``3·m·(k + 1)²`` of the fold's moment matrices (32 MiB); above it no pair cells are kept."""
MAX_BITS = 64
"""Filters of more bits keep no pair cells: the moments cost ``O(k²)`` per report to choose from."""
GRID_LIMIT = 1 << 17
"""The most counters ``m·(k + 1)³`` of ``pair_grid`` (1 MiB of int64); above it the fold keeps none."""
GRID_CHUNK = 1 << 20
"""Rows per product in :func:`add_pair_grid` (each float32 sum a count of rows, exact below 2²⁴)."""


def slots(params: Any) -> int:
    """The pairs tested per cohort: :data:`PAIR_SLOTS`, or fewer when ``k`` has fewer pairs."""
    k = params.num_bloombits
    return int(min(PAIR_SLOTS, k * (k - 1) // 2))


def pairs_enabled(params: Any) -> bool:
    """Whether the fold keeps pair cells: ``2 <= k <=`` :data:`MAX_BITS` and the moments within
    :data:`MOMENT_LIMIT`."""
    k, m = params.num_bloombits, params.num_cohorts
    return 2 <= k <= MAX_BITS and 3 * m * (k + 1) ** 2 <= MOMENT_LIMIT


def pair_cells_shape(params: Any) -> tuple[int, int, int]:
    """``(m, J, 4(k − 1))``: the cells of the tested reports per cohort and slot; ``(0, 0, 0)`` where the fold keeps
    none (:func:`pairs_enabled`), so an aggregate file carries no zeros for them."""
    k = params.num_bloombits
    if not pairs_enabled(params):
        return 0, 0, 0
    return params.num_cohorts, max(slots(params), 1), 4 * max(k - 1, 1)


def grid_enabled(params: Any) -> bool:
    """Whether the fold keeps every pair's cells (``pair_grid``): ``2 <= k`` and ``m·(k + 1)³ <=``
    :data:`GRID_LIMIT`."""
    k, m = params.num_bloombits, params.num_cohorts
    return 2 <= k and m * (k + 1) ** 3 <= GRID_LIMIT


def pair_grid_shape(params: Any) -> tuple[int, int, int, int]:
    """``(m, k + 1, k + 1, k + 1)``, or ``(0, 0, 0, 0)`` where the fold keeps no grid (:func:`grid_enabled`)."""
    k = params.num_bloombits
    return (params.num_cohorts, k + 1, k + 1, k + 1) if grid_enabled(params) else (0, 0, 0, 0)


def add_pair_grid(cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], grid: npt.NDArray[np.int64],
                  k: int) -> None:
    """Add the batch to ``grid`` (``(m, k + 1, k + 1, k + 1)``, in place): ``grid[g, L] += Aᵀ·A`` over the reports
    of cohort ``g`` with ``L`` ones, ``A = [1 | x]`` (:func:`cohort_grids`)."""
    if grid.size == 0 or np.asarray(cohorts).size == 0:
        return
    grid += cohort_grids(cohorts, rows, k, grid.shape[0])  # (PairChoice.add does it from its own counts)


HISTOGRAM_BINS = 1 << 22
"""The most (cohort, filter value) counters :func:`cohort_grids` histograms into (32 MiB); beyond, it multiplies."""


def cohort_grids(cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], k: int, m: int,
                 keep: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.int64]:
    """``(m, k + 1, k + 1, k + 1)``: per cohort ``g`` and number of ones ``L``, ``Aᵀ·A`` over the reports (those
    ``keep`` marks, or all) of cohort ``g`` with ``L`` ones, ``A = [1 | x]``: every count, ``Σ x_a`` and
    ``Σ x_a·x_b`` (:func:`split_grids` with one part)."""
    g = np.asarray(cohorts).reshape(-1)
    part = np.zeros(g.size, np.int8) if keep is None else np.where(keep, 0, 1).astype(np.int8)
    return split_grids(g, rows, k, m, part, 2 if keep is not None else 1)[0]


VALUES_PER_REPORT = 1.0
"""Counting by value is chosen while its products' rows are at most this many per report."""
HISTOGRAM_BITS = 16
"""The widest filter :func:`split_grids` counts by value (its bases: 2¹⁶ rows of ``k + 1``, 9 MiB)."""


def histogram_fits(k: int, m: int, parts: int = 2, n: int | None = None) -> bool:
    """Whether :func:`split_grids` counts ``n`` reports by filter value: ``k <=`` :data:`HISTOGRAM_BITS`, one
    cohort's ``parts·2^k`` counters within :data:`HISTOGRAM_BINS` (cohorts are taken in blocks that fit), and, given
    ``n``, the values' products (``parts·m·2^k`` rows of ``(k + 1)²``) no more than the reports' (``n`` rows)."""
    fits = k <= HISTOGRAM_BITS and parts << k <= HISTOGRAM_BINS
    return fits and (n is None or parts * (m << k) <= n * VALUES_PER_REPORT)


def split_grids(cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], k: int, m: int, part: npt.NDArray[Any],
                parts: int) -> npt.NDArray[np.int64]:
    """``(parts, m, k + 1, k + 1, k + 1)``: :func:`cohort_grids` of each part (``part[i]`` in ``0..parts − 1``) of
    the reports. Where :func:`histogram_fits`, the reports are counted by (part, cohort, filter value) in one
    ``bincount`` and each value's ``B_v·B_vᵀ`` weighted by its count, per popcount (float64 products of integers
    below 2⁵³: exact); otherwise each part's reports are sorted by (cohort, ``L``) and each group multiplied out
    (float32 chunks of :data:`GRID_CHUNK` rows, exact). No step per report either way."""
    k1 = k + 1
    out = np.zeros((parts, m, k1, k1, k1), np.int64)
    g = np.asarray(cohorts).reshape(-1).astype(np.int64)
    r = np.ascontiguousarray(rows, dtype=np.uint8)
    if g.size == 0:
        return out
    if histogram_fits(k, m, parts, g.size):
        value = np.zeros(g.size, np.int64)
        for byte in range(r.shape[1]):
            value |= r[:, byte].astype(np.int64) << (8 * byte)
        value &= (1 << k) - 1  # padding bits ignored
        block = max(1, HISTOGRAM_BINS // (parts << k))  # cohorts counted together
        p = np.asarray(part, np.int64)
        order = np.argsort(g, kind="stable") if block < m else None
        bounds = np.searchsorted(g[order], np.arange(0, m + block, block)) if order is not None else None
        for i, first in enumerate(range(0, m, block)):
            width = min(block, m - first)
            at = slice(None) if order is None or bounds is None else order[bounds[i]:bounds[i + 1]]
            key = (p[at] * width + (g[at] - first)) << k
            key |= value[at]
            counts = np.bincount(key, minlength=(parts * width) << k).reshape(parts, width, 1 << k)
            hist = counts.reshape(parts * width, 1 << k).astype(np.float64)
            for ones, (values, basis) in enumerate(_value_bases(k)):
                if values.size:  # Σ_v h(v)·B_v·B_vᵀ over the values with `ones` ones, each (part, cohort) at once
                    weighted = hist[:, values, None] * basis[None]  # (parts·width, values, k + 1)
                    product = np.rint(np.matmul(weighted.transpose(0, 2, 1), basis)).astype(np.int64)
                    out[:, first:first + width, ones] = product.reshape(parts, width, k1, k1)
        return out
    from ldp.batch.threads import threads_for

    p = np.asarray(part, np.int64)
    key = (p * m + g) * k1 + popcounts(r, k)
    order = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(parts * m * k1 + 1))
    flat = out.reshape(-1, k1, k1)
    with threads_for(0.0):  # many small products: one BLAS thread
        for key_at in np.flatnonzero(np.diff(bounds)).tolist():
            take = order[bounds[key_at]:bounds[key_at + 1]]
            for start in range(0, take.size, GRID_CHUNK):
                sel = take[start:start + GRID_CHUNK]
                a = np.empty((sel.size, k1), np.float32)
                a[:, 0] = 1.0
                a[:, 1:] = np.unpackbits(r[sel], axis=1, count=k, bitorder="little")
                flat[key_at] += np.rint(a.T @ a).astype(np.int64)
    return out


@functools.lru_cache(maxsize=8)
def _value_bases(k: int) -> tuple[tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]], ...]:
    """Per number of ones ``L``: the filter values with ``L`` ones and their rows ``[1 | bits]``."""
    values = np.arange(1 << k)
    bits = ((values[:, None] >> np.arange(k)) & 1).astype(np.float64)
    ones = bits.sum(axis=1).astype(np.intp)
    out = []
    for count in range(k + 1):
        at = np.flatnonzero(ones == count)
        out.append((at, np.concatenate([np.ones((at.size, 1)), bits[at]], axis=1)))
    return tuple(out)


def grid_cells(grid: npt.NDArray[np.int64], a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``(P, 4(k − 1))``: the cells (:func:`cell_of`) of pairs ``(a[i], b[i])`` (``a != b``) over the reports of one
    cohort's ``grid`` (``(k + 1, k + 1, k + 1)``, :func:`add_pair_grid`): by ``L``, ``n11 = G[L, a, b]``,
    ``n10 = G[L, 0, a] − n11``, ``n01 = G[L, 0, b] − n11``, ``n00 = G[L, 0, 0] − n10 − n01 − n11``, at
    ``R = L − x_a − x_b``."""
    k = grid.shape[1] - 1
    ia, ib = np.asarray(a, np.intp) + 1, np.asarray(b, np.intp) + 1
    n = grid[:, 0, 0][:, None]
    both = grid[:, ia, ib]
    sa, sb = grid[:, 0, ia], grid[:, 0, ib]
    n10, n01 = sa - both, sb - both
    n00 = n - n10 - n01 - both
    out = np.concatenate([n00[:k - 1], n01[1:k], n10[1:k], both[2:]], axis=0)  # (4(k − 1), P)
    return np.ascontiguousarray(out.T)


def cell_of(x_a: npt.NDArray[Any], x_b: npt.NDArray[Any], rest: npt.NDArray[Any], k: int) -> npt.NDArray[np.int64]:
    """The cell ``(2·x_a + x_b)·(k − 1) + R`` of reports with bits ``x_a``, ``x_b`` and ``R = rest`` other 1s."""
    out: npt.NDArray[np.int64] = (2 * np.asarray(x_a, np.int64) + np.asarray(x_b, np.int64)) * (k - 1) + rest
    return out


def grid_moments(grids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``(m, 3, k + 1, k + 1)``: per cohort, ``Aᵀ·diag(L^j)·A = Σ_L L^j·G_L`` for ``j = 0, 1, 2`` from its grid
    (``(m, k + 1, k + 1, k + 1)``, :func:`cohort_grids`; ``A = [1 | x]``, ``L`` the reports' numbers of 1s): every
    sum ``Σ L^j``, ``Σ x_a·L^j``, ``Σ x_a·x_b·L^j`` — the moments a cohort's pairs are scored on."""
    k1 = grids.shape[1]
    powers = np.arange(k1, dtype=np.int64)[None, :] ** np.arange(3)[:, None]  # L^j
    out: npt.NDArray[np.int64] = np.einsum("jl,mlab->mjab", powers, grids)
    return out


class PairChoice:
    """The per-cohort moments of the reports to choose from and the chosen pairs (module docstring): the fold's
    working state, never serialized (an aggregate read back or merged chooses again from the reports it folds
    next). :meth:`add` folds one batch into the aggregate's ``pair_cells``."""

    def __init__(self, params: Any, rng: Any = None) -> None:
        self.k, m = params.num_bloombits, params.num_cohorts
        self.params = params
        self.enabled = pairs_enabled(params)
        self.slots = slots(params)
        self.moments = np.zeros((m, 3, self.k + 1, self.k + 1), np.int64) if self.enabled else None
        self.pairs = np.zeros((m, max(self.slots, 1), 2), np.intp)
        self.chosen = np.zeros(m, bool)
        self.chosen_at = np.zeros(m, np.int64)  # the reports to choose from at each cohort's last choice
        self.gen = np.random.default_rng(rng)  # the split: fresh OS entropy unless a seed is given (tests)

    def split(self, n: int) -> npt.NDArray[np.bool_]:
        """``(n,)``: true to test the report, false to choose from it; a fair coin of the server's each."""
        out: npt.NDArray[np.bool_] = np.unpackbits(np.frombuffer(self.gen.bytes((n + 7) // 8), np.uint8),
                                                   count=n).astype(bool)
        return out

    def add(self, cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], cells: npt.NDArray[np.int64],
            grid: npt.NDArray[np.int64] | None = None) -> None:
        """Split the batch, take in its reports to choose from (choosing again for every cohort they reach), then
        count its reports to test into ``cells`` (``(m, J, 4(k − 1))``, in place) and, given, every report into
        ``grid`` (``pair_grid``, :func:`add_pair_grid`). The two parts' grids (:func:`split_grids`) give the
        moments (``Aᵀ·diag(L^j)·A = Σ_L L^j·G_L``), the grid, and — where they are counted by filter value — the
        tested reports' cells of each cohort's pairs (:func:`grid_cells`); otherwise those cells are counted report
        by report, vectorised. One loop step per cohort."""
        if not self.enabled or self.moments is None:  # nothing to count (no copy of the batch either); no grid
            return  # either: grid_enabled implies pairs_enabled (m·(k + 1)³ <= 2¹⁷ puts k below 50)
        g = np.asarray(cohorts).reshape(-1).astype(np.intp)
        if g.size == 0:
            return
        r = np.asarray(rows, dtype=np.uint8)
        m = self.moments.shape[0]
        tested = self.split(g.size)
        by_value = histogram_fits(self.k, m, 2, g.size)
        if by_value or (grid is not None and grid.size):
            grids = split_grids(g, r, self.k, m, tested, 2)  # [0]: reports to choose from, [1]: to test
        else:  # the tested reports' grid would not be used: the choosing part's alone
            grids = cohort_grids(g, r, self.k, m, keep=~tested)[None]
        self.moments += grid_moments(grids[0])
        if grid is not None and grid.size:
            grid += grids[0] + grids[1]
        for c in np.flatnonzero(grids[0, :, :, 0, 0].sum(axis=1)).tolist():
            seen = int(self.moments[c, 0, 0, 0])
            if seen >= max(FIRST, REFRESH * self.chosen_at[c]):
                self._choose(c)
                self.chosen_at[c] = seen
        if by_value:  # the cells of each chosen pair, from the tested reports' grid
            for c in np.flatnonzero(self.chosen).tolist():
                j = self.slots
                cells[c, :j] += grid_cells(grids[1, c], self.pairs[c, :j, 0], self.pairs[c, :j, 1])
            return
        test = np.flatnonzero(tested & self.chosen[g])
        if test.size == 0:
            return
        gt, rt = g[test], r[test]
        lt = popcounts(rt, self.k)
        width = 4 * (self.k - 1)
        flat = cells.reshape(-1)
        for j in range(self.slots):
            a, b = self.pairs[gt, j, 0], self.pairs[gt, j, 1]
            idx = np.arange(test.size)
            xa = (rt[idx, a >> 3] >> (a & 7)) & 1
            xb = (rt[idx, b >> 3] >> (b & 7)) & 1
            cell = cell_of(xa, xb, lt - xa - xb, self.k)
            flat += np.bincount((gt * self.pairs.shape[1] + j) * width + cell, minlength=flat.size)

    def _choose(self, c: int) -> None:
        assert self.moments is not None
        z = pair_scores(self.moments[c], self.params)
        iu = np.triu_indices(self.k, 1)
        best = np.argsort(-z[iu], kind="stable")[:self.slots]  # -inf last: shortlisted pairs first
        self.pairs[c, :self.slots, 0] = iu[0][best]
        self.pairs[c, :self.slots, 1] = iu[1][best]
        self.chosen[c] = True
