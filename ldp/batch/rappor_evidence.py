"""What a RAPPOR fold keeps of each report for the poisoning checks (:mod:`ldp.server.rappor_poisoning`).

Two additive statistics, so an aggregate carries them, merges them by sum and serves the per-report checks where
the reports are gone (the collector's dashboard, ``ldp decode``):

* ``ones_hist`` (``k + 1``): the reports by their number of 1 bits.
* ``together`` (``1 + len(sizes)``): ``N``, the reports tested for bits set together, then ``X_s`` for each size
  ``s`` of :func:`cooccurrence_sizes`: those of them that have every one of the ``s`` bits chosen for their cohort
  set.

**The choice.** The fold splits each batch by a fair coin of its own per report (OS entropy: a sender cannot
choose its side): reports to choose from, and reports to test. Per cohort, ``s`` bits that its reports to choose
from set together (:func:`chosen_sets`), from a sample of them: the latest :func:`sample_rows` since its previous
choice. A cohort's bits are chosen once it has :data:`FIRST` reports to choose from, and chosen again each time
that number has grown :data:`REFRESH`-fold, so a cohort's choice is made about ``log_4(n)`` times whatever the
batches, and rows are kept for it only while it is within a sample of being due. Each batch's reports to choose
from are taken in before its reports to test are tested, and only reports of a cohort with a choice are tested
(``N``).

**Why the counts are honest-law binomials.** A tested report is never in the sample its cohort's choice comes from,
the coins are the server's, and honest reports are independent, so given the choice, an honest tested report has
all ``s`` chosen bits set with probability at most ``π(s)``
(:func:`~ldp.server.rappor_poisoning.cooccurrence_bound`). Summed over reports, batches and merged aggregates,
``X_s`` is dominated by ``Binomial(N, π(s))``. The sampling only decides which bits are tested, never whether
the bound holds. (The counts of a fold are not reproducible, as the coins are fresh; the aggregate's other
statistics are.)

The per-row work (the histogram, the tests) runs in the compiled fold kernel when it is built, in the same pass over
the rows as the aggregate's fold (:meth:`BitsTogether.fold`, ``_foldkernel.fold_rows``: the tests counted per cohort,
which also gives the reports to choose from, then the choices; a cohort that chose again has its tested reports
tested again, against its new bits), and in numpy otherwise (:meth:`BitsTogether.add`, after the fold), with
identical results (``tests/server/test_rappor_evidence.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch import bits
from ldp.batch.bits import popcounts

__all__ = ["FIRST", "REFRESH", "BitsTogether", "chosen_sets", "cooccurrence_counts", "cooccurrence_sizes",
           "ones_histogram", "report_stats", "sample_rows"]

FIRST = 64
"""Reports to choose from a cohort needs before its bits are first chosen."""
REFRESH = 4
"""A cohort's bits are chosen again each time its reports to choose from have grown this many times."""
SAMPLE_BYTES = 1 << 20
"""The memory all cohorts' samples may take together (:func:`sample_rows`)."""


def cooccurrence_sizes(params: Any) -> tuple[int, ...]:
    """The sizes ``s`` of the bit sets tested for being set together: the bits of two targets and of four (``2h``
    and ``4h``), each at most a quarter of the filter but more than ``h``, and at most ``k``. The smaller catches
    attacks on few targets; the larger, whose honest bound is far smaller, catches fewer fake reports."""
    k, h = params.num_bloombits, params.num_hashes
    return tuple(sorted({min(k, max(h + 1, min(k // 4, j * h))) for j in (2, 4)}))


def sample_rows(params: Any) -> int:
    """Reports to choose from kept per cohort to choose its bits from: 1,024, or fewer so that every cohort's
    sample fits in :data:`SAMPLE_BYTES`, and at least :data:`FIRST`."""
    per_cohort = SAMPLE_BYTES // (params.num_cohorts * ((params.num_bloombits + 7) // 8))
    return int(min(1024, max(FIRST, per_cohort)))


def ones_histogram(rows: npt.NDArray[np.uint8], nbits: int) -> npt.NDArray[np.int64]:
    """``(nbits + 1,)``: how many rows have each number of 1 bits."""
    out: npt.NDArray[np.int64] = np.bincount(popcounts(rows, nbits), minlength=nbits + 1).astype(np.int64)
    return out


def cooccurrence_counts(x: npt.NDArray[np.bool_], kernel: str | None = None) -> npt.NDArray[np.int64]:
    """``(k, k)``: ``[i, j]`` the rows of ``x`` (0/1, ``(n, k)``) that have bits ``i`` and ``j`` both set
    (``xᵀx``). Compiled: the bits' columns packed as bit sets and ANDed, a popcount per word; numpy: a float
    product, exact below 2⁵³ rows."""
    n, k = x.shape
    if (kernel or bits.FOLD_KERNEL) == "compiled" and bits._foldkernel is not None:
        cols = np.packbits(x.T, axis=1, bitorder="little")
        words = (cols.shape[1] + 7) // 8
        packed = np.zeros((k, 8 * words), np.uint8)
        packed[:, :cols.shape[1]] = cols
        out = np.empty((k, k), np.int64)
        bits._foldkernel.pair_counts(packed, k, words, out)
        return out
    f = x.astype(np.float64)
    return (f.T @ f).astype(np.int64)


def _grown(x: npt.NDArray[np.bool_], seed: tuple[int, ...], s: int, lift: bool) -> list[int]:
    """``seed`` grown to ``s`` bits, one at a time: among the rows that have every bit chosen so far set, the bit
    most often set (``lift`` false) or most over-represented, its frequency there over its frequency in all rows
    (``lift`` true); when no row has them all, the bit most often set."""
    chosen = list(seed)[:s]
    overall = x.mean(axis=0)
    base = np.maximum(overall, 1.0 / x.shape[0])
    while len(chosen) < s:
        rows = x[:, chosen].all(axis=1)
        score = x[rows].mean(axis=0) / (base if lift else 1.0) if rows.any() else overall.copy()
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen


def chosen_sets(x: npt.NDArray[np.bool_], sizes: tuple[int, ...],
                kernel: str | None = None) -> list[npt.NDArray[np.intp]]:
    """For each ``s`` of ``sizes``, ``s`` bits that many rows of ``x`` (0/1, ``(n, k)``, ``n >= 1``) have all set.
    Two seeds: the pair of bits of largest covariance (bits a minority of the rows sets together) and the pair set
    together most often (bits most rows set, as in a sample of fake reports alone); each grown greedily by lift
    (bits over-represented where the set is, as when fake reports are few among honest ones) and by frequency
    (:func:`_grown`). Of these, for each size, the set the most rows have all set."""
    n, k = x.shape
    both = cooccurrence_counts(x, kernel).astype(np.float64)
    mu = np.diag(both) / n
    cov = both / n - np.outer(mu, mu)
    seeds: list[tuple[int, ...]] = [(0,)]
    if k > 1:
        np.fill_diagonal(cov, -np.inf)
        np.fill_diagonal(both, -np.inf)
        seeds = [tuple(int(i) for i in np.unravel_index(int(np.argmax(a)), a.shape)) for a in (cov, both)]
    grown = [_grown(x, seed, max(sizes), lift) for seed in dict.fromkeys(seeds) for lift in (True, False)]
    return [np.asarray(max(grown, key=lambda g: int(x[:, g[:s]].all(axis=1).sum()))[:s], dtype=np.intp)
            for s in sizes]


def report_stats(cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], nbits: int, tested: npt.NDArray[np.uint8],
                 masks: npt.NDArray[np.uint8], chosen: npt.NDArray[np.uint8], hist: npt.NDArray[np.int64],
                 hits: npt.NDArray[np.int64], kernel: str | None = None) -> None:
    """In place: ``hist[ones of row i] += 1`` for every row; for each row ``i`` with bit ``i`` of ``tested`` set
    (packed little-endian, :meth:`BitsTogether.split`) whose cohort
    ``g`` has ``chosen[g]``: ``hits[0] += 1`` and ``hits[1 + j] += 1`` when it has every bit of ``masks[g, j]`` set.
    ``kernel``: ``"compiled"`` or ``"numpy"`` (default :data:`~ldp.batch.bits.FOLD_KERNEL`)."""
    kernel = kernel or bits.FOLD_KERNEL
    g = np.asarray(cohorts)
    if kernel == "compiled" and bits._foldkernel is not None:
        g = bits.group_column(g)
        r = np.ascontiguousarray(rows, dtype=np.uint8)
        bits._foldkernel.fold_rows(g, g.itemsize, r, r.shape[1], nbits, None, None, hist,
                                   np.ascontiguousarray(tested, np.uint8), np.ascontiguousarray(masks), masks.shape[1],
                                   np.ascontiguousarray(chosen), hits)
        return
    if kernel not in ("numpy", "compiled"):
        raise ValueError(f"kernel must be 'numpy' or, when built, 'compiled'; got {kernel!r}")
    hist += ones_histogram(rows, nbits)
    sel = np.unpackbits(np.asarray(tested, np.uint8), count=g.size, bitorder="little").astype(bool)
    test_g = g[sel].astype(np.intp)
    on = chosen[test_g].astype(bool)
    shown, want = rows[sel][on], masks[test_g[on]]  # (t, nbytes), (t, sizes, nbytes)
    hits[0] += int(on.sum())
    hits[1:] += ((shown[:, None, :] & want) == want).all(axis=2).sum(axis=0)


def _last_free(tested: npt.NDArray[np.uint8], n: int, count: int) -> npt.NDArray[np.intp]:
    """The last ``count`` of the ``n`` reports whose bit of ``tested`` is clear (there are that many), ascending:
    only the batch's tail is unpacked, longer until it holds them."""
    span = 2 * count + 1024
    while True:
        lo = max(0, n - span) // 8 * 8
        free = lo + np.flatnonzero(np.unpackbits(tested[lo // 8:], count=n - lo, bitorder="little") == 0)
        if free.size >= count or lo == 0:
            return free[free.size - count:]
        span *= 2


class BitsTogether:
    """The per-cohort choices of one aggregate and the samples they come from (module docstring): the fold's
    working state, never serialized (an aggregate read back or merged chooses again from the reports it folds
    next). :meth:`add` folds one batch into ``hist`` and ``hits``."""

    def __init__(self, params: Any, rng: Any = None) -> None:
        self.k = params.num_bloombits
        self.sizes = cooccurrence_sizes(params)
        self.rows = sample_rows(params)
        m, width = params.num_cohorts, (self.k + 7) // 8
        self.samples: dict[int, npt.NDArray[np.uint8]] = {}
        self.seen = np.zeros(m, np.int64)
        self.chosen_at = np.zeros(m, np.int64)
        self.masks = np.zeros((m, len(self.sizes), width), np.uint8)
        self.chosen = np.zeros(m, np.uint8)
        self.every = np.ones(m, np.uint8)  # the kernel's tests per cohort: of every cohort
        self.cohort_type = np.min_scalar_type(m - 1)
        self.gen = np.random.default_rng(rng)  # the split: fresh OS entropy unless a seed is given (tests)

    def split(self, n: int) -> npt.NDArray[np.uint8]:
        """``uint8 ((n + 7) // 8,)``, bit ``i`` (little-endian) of report ``i``: 1 to test it, 0 to choose from it,
        a fair coin of the server's (the padding bits of the last byte are 0)."""
        coins = np.frombuffer(self.gen.bytes((n + 7) // 8), np.uint8).copy()
        if n % 8:
            coins[-1] &= (1 << (n % 8)) - 1
        return coins

    def add(self, cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], hist: npt.NDArray[np.int64],
            hits: npt.NDArray[np.int64], kernel: str | None = None) -> None:
        """Split the batch (:meth:`split`), take in its reports to choose from (choosing again where due), then
        count every report into ``hist`` and test the others into ``hits``. One loop step per cohort."""
        c = np.asarray(cohorts)
        tested = self.split(c.size)
        self._take_in(c, rows, tested, self._free_counts(c, tested), kernel)
        report_stats(c, rows, self.k, tested, self.masks, self.chosen, hist, hits, kernel)

    def fold(self, cohorts: npt.NDArray[Any], rows: npt.NDArray[np.uint8], cohort_n: npt.NDArray[np.int64],
             ones: npt.NDArray[np.int64], hist: npt.NDArray[np.int64], hits: npt.NDArray[np.int64]) -> None:
        """:func:`~ldp.batch.bits.add_ones_by_group` into ``cohort_n`` and ``ones``, then :meth:`add`, as its result
        (with the compiled kernel): the split, then the fold, the histogram and the tests of every cohort's tested
        reports against its bits in one pass over the rows (counted per cohort: the rest are the reports to choose
        from), then the choices; only the tested reports of a cohort that chose (again) are tested once more."""
        fk, c = bits._foldkernel, bits.group_column(cohorts)
        r = np.ascontiguousarray(rows, dtype=np.uint8)
        m, sizes = self.seen.size, len(self.sizes)
        tested = self.split(c.size)
        before, apart = cohort_n.copy(), np.zeros((m, sizes + 1), np.int64)
        fk.fold_rows(c, c.itemsize, r, r.shape[1], self.k, cohort_n, ones, hist, tested, self.masks, sizes,
                     self.every, apart)
        again = self._take_in(c, r, tested, cohort_n - before - apart[:, 0], None)
        kept = self.chosen.astype(bool)
        kept[again] = False
        hits += apart[kept].sum(axis=0)
        if again:  # against the bits chosen now
            only = np.zeros(m, np.uint8)
            only[again] = 1
            fk.fold_rows(c, c.itemsize, r, r.shape[1], self.k, None, None, None, tested, self.masks, sizes, only, hits)

    def _take_in(self, c: npt.NDArray[Any], rows: npt.NDArray[np.uint8], tested: npt.NDArray[np.uint8],
                 counts: npt.NDArray[np.int64], kernel: str | None) -> list[int]:
        """Take in a batch's reports to choose from (``counts`` per cohort), choosing again where due; return the
        cohorts that chose."""
        after = self.seen + counts
        due = np.maximum(FIRST, REFRESH * self.chosen_at)
        # rows a cohort's next choice can use: its latest, once it is within a sample of being due
        keep = np.flatnonzero((counts > 0) & (after > due - self.rows))
        if keep.size:
            window = min(int(counts.sum()), 4 * self.rows * keep.size)  # the tail: 4 samples' worth per cohort
            at = _last_free(tested, c.size, window)
            tail = c[at].astype(self.cohort_type)  # small unsigned: bincount, radix argsort
            order = at[np.argsort(tail, kind="stable")]
            in_tail = np.bincount(tail, minlength=self.seen.size)
            ends = np.cumsum(in_tail)
            for g in keep.tolist():
                newest = rows[order[ends[g] - min(in_tail[g], self.rows):ends[g]]]
                kept = self.samples.get(g)
                self.samples[g] = newest if kept is None else np.concatenate((kept, newest))[-self.rows:]
        self.seen = after
        chose = [g for g in np.flatnonzero(after >= due).tolist() if len(self.samples.get(g, ()))]
        for g in chose:
            self._choose(g, kernel)
        return chose

    def _free_counts(self, cohorts: npt.NDArray[Any], tested: npt.NDArray[np.uint8],
                     step: int = 1 << 13) -> npt.NDArray[np.int64]:
        """The reports to choose from per cohort, a block (a multiple of 8) at a time: ``bincount`` widens its
        input to ``intp``."""
        out = np.zeros(self.seen.size, np.int64)
        for i in range(0, cohorts.size, step):
            free = np.unpackbits(tested[i // 8:(i + step) // 8], bitorder="little")[:min(step, cohorts.size - i)]
            out += np.bincount(cohorts[i:i + step][free == 0].astype(self.cohort_type), minlength=out.size)
        return out

    def _choose(self, g: int, kernel: str | None) -> None:
        x = np.unpackbits(self.samples[g], axis=1, count=self.k, bitorder="little").astype(bool)
        for j, chosen in enumerate(chosen_sets(x, self.sizes, kernel)):
            mask = np.zeros(self.k, bool)
            mask[chosen] = True
            self.masks[g, j] = np.packbits(mask, bitorder="little")
        self.chosen[g], self.chosen_at[g] = 1, self.seen[g]
        del self.samples[g]  # the next choice uses later rows only
