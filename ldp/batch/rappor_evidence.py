"""What a RAPPOR fold keeps of each report for the poisoning checks (:mod:`ldp.jobs.rappor_poisoning`).

Two additive statistics, so an aggregate carries them, merges them by sum and serves the per-report checks where
the reports are gone (the ingest service's dashboard, ``ldp decode``):

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

**First choices from the batch's head** (issue 72, item 7). A cohort without a choice that reaches :data:`FIRST`
reports to choose from within the head of a batch (its first :data:`HEAD` samples' worth of reports per cohort)
chooses from its kept rows and the head's latest *before* the batch is tested, so a fresh aggregate's first batch
takes one pass over its rows, as a long-lived one's does; the choice is dated, as before, at the batch's end (the
next one is due when that count has grown :data:`REFRESH`-fold). Only which reports to choose from make the sample
changes (the head's latest rather than the batch's), never the split: the sample still holds reports to choose
from only, so the argument below holds as it stands; a batch within its head chooses exactly as before
(``tests/jobs/test_rappor_choice_speed.py``). A cohort that reaches :data:`FIRST` only past the head chooses
after the pass, from the batch's tail, and its tested reports are tested once more. The choices of all the cohorts
due together are computed at once, on their samples' columns as bit sets (:func:`chosen_sets_of`,
:mod:`ldp.batch.rappor_bit_sets`): in one call of the compiled fold kernel when it is built
(``_foldkernel.choose_sets``, the samples split between the cores; tested equal to the numpy path exactly, and on
any number of threads, ``tests/jobs/test_rappor_choice_speed.py``), in numpy otherwise. The rows to choose from are
counted and each cohort's latest copied out (:func:`free_counts`, :func:`latest_free`) by the kernel too, in one
scan each, no sort.

**Why the counts are honest-law binomials.** A tested report is never in the sample its cohort's choice comes from,
the coins are the server's, and honest reports are independent, so given the choice, an honest tested report has
all ``s`` chosen bits set with probability at most ``π(s)``
(:func:`~ldp.jobs.rappor_poisoning.cooccurrence_bound`). Summed over reports, batches and merged aggregates,
``X_s`` is dominated by ``Binomial(N, π(s))``. The sampling only decides which bits are tested, never whether
the bound holds. (The counts of a fold are not reproducible, as the coins are fresh; the aggregate's other
statistics are.)

The per-row work (the histogram, the tests) runs in the compiled fold kernel when it is built, in the same pass over
the rows as the aggregate's fold (:meth:`BitsTogether.fold`, ``_foldkernel.fold_rows``: the tests counted per cohort,
which also gives the reports to choose from, then the choices; a cohort that chose again has its tested reports
tested again, against its new bits), and in numpy otherwise (:meth:`BitsTogether.add`, after the fold), with
identical results (``tests/jobs/test_rappor_evidence.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.batch import bits
from ldp.batch.bits import popcounts
from ldp.batch.rappor_bit_sets import chosen_sets, chosen_sets_of, column_words, cooccurrence_counts

__all__ = ["FIRST", "REFRESH", "BitsTogether", "chosen_sets", "chosen_sets_of", "column_words", "cooccurrence_counts",
           "cooccurrence_sizes", "free_counts", "latest_free", "ones_histogram", "report_stats", "sample_rows"]

FIRST = 64
"""Reports to choose from a cohort needs before its bits are first chosen."""
REFRESH = 4
"""A cohort's bits are chosen again each time its reports to choose from have grown this many times."""
HEAD = 4
"""A cohort without a choice chooses before its batch is tested when it has :data:`FIRST` reports to choose from
among the batch's first ``HEAD * sample_rows * num_cohorts`` reports (:meth:`BitsTogether._first_choices`)."""
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


_Counts = npt.NDArray[np.int64]


def free_counts(cohorts: npt.NDArray[Any], tested: npt.NDArray[np.uint8], hi: int, m: int,
                kernel: str | None = None, step: int = 1 << 13) -> npt.NDArray[np.int64]:
    """``(m,)``: per cohort, the reports to choose from (bit of ``tested`` clear, :meth:`BitsTogether.split`) among
    the first ``hi``. Compiled (``_foldkernel.free_counts``) or numpy, equal exactly."""
    out = np.zeros(m, np.int64)
    if _compiled(kernel):
        c = bits.group_column(cohorts)
        bits._foldkernel.free_counts(c, c.itemsize, np.ascontiguousarray(tested, np.uint8), hi, out)
        return out
    g = np.asarray(cohorts)
    for i in range(0, hi, step):  # a block at a time: bincount widens its input to intp
        free = np.unpackbits(tested[i // 8:(i + step) // 8], bitorder="little")[:min(step, hi - i)] == 0
        out += np.bincount(g[i:min(i + step, hi)][free].astype(np.intp), minlength=m)
    return out


def latest_free(cohorts: npt.NDArray[Any], tested: npt.NDArray[np.uint8], hi: int, limit: int,
                rows: npt.NDArray[np.uint8], want: npt.NDArray[np.int64],
                kernel: str | None = None) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], _Counts]:
    """``(picked, want, got)``: per cohort ``g``, its latest ``want[g]`` reports to choose from among the last
    ``limit`` of the first ``hi`` (``limit < 0``: all of them), ``got[g]`` of them (fewer when there are fewer), at the
    end of ``g``'s slot of ``want[g]`` rows in ``picked`` (the slots in cohort order), oldest first. Compiled
    (``_foldkernel.latest_free``: one scan back from ``hi``, stopped once every want is met) or numpy (a stable
    sort of the free reports by cohort), equal exactly."""
    want = np.ascontiguousarray(want, np.int64)
    r = np.ascontiguousarray(rows, dtype=np.uint8)
    width = r.shape[1]
    if _compiled(kernel):
        c = bits.group_column(cohorts)
        got = np.zeros(want.size, np.int64)
        picked = np.zeros((int(want.sum()), width), np.uint8)
        bits._foldkernel.latest_free(c, c.itemsize, np.ascontiguousarray(tested, np.uint8), hi, limit, r, width,
                                     want, got, picked)
        return picked, want, got
    free = np.flatnonzero(np.unpackbits(tested[:(hi + 7) // 8], count=hi, bitorder="little") == 0)
    if limit >= 0:
        free = free[max(0, free.size - limit):]
    g = np.asarray(cohorts)[free].astype(np.intp)
    order = free[np.argsort(g, kind="stable")]
    counts = np.bincount(g, minlength=want.size)[:want.size]
    got = np.minimum(counts, want)
    ends, slot_ends = np.cumsum(counts), np.cumsum(want)
    within = np.arange(int(got.sum())) - np.repeat(np.cumsum(got) - got, got)
    picked = np.zeros((int(want.sum()), width), np.uint8)
    picked[np.repeat(slot_ends - got, got) + within] = r[order[np.repeat(ends - got, got) + within]]
    return picked, want, got


def _compiled(kernel: str | None) -> bool:
    return (kernel or bits.FOLD_KERNEL) == "compiled" and bits._foldkernel is not None


class BitsTogether:
    """The per-cohort choices of one aggregate and the samples they come from (module docstring): the fold's
    working state, never serialized (an aggregate read back or merged chooses again from the reports it folds
    next). :meth:`add` folds one batch into ``hist`` and ``hits``."""

    def __init__(self, params: Any, rng: Any = None, head: int = HEAD) -> None:
        self.k = params.num_bloombits
        self.head = head  # first choices from the batch's head: this many samples' worth per cohort (0: none)
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
        first = self._first_choices(c, rows, tested, kernel)
        self._take_in(c, rows, tested, free_counts(c, tested, c.size, self.seen.size, kernel), kernel, first)
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
        first = self._first_choices(c, r, tested, None)
        before, apart = cohort_n.copy(), np.zeros((m, sizes + 1), np.int64)
        fk.fold_rows(c, c.itemsize, r, r.shape[1], self.k, cohort_n, ones, hist, tested, self.masks, sizes,
                     self.every, apart)
        again = self._take_in(c, r, tested, cohort_n - before - apart[:, 0], None, first)
        kept = self.chosen.astype(bool)
        kept[again] = False
        hits += apart[kept].sum(axis=0)
        if again:  # against the bits chosen now
            only = np.zeros(m, np.uint8)
            only[again] = 1
            fk.fold_rows(c, c.itemsize, r, r.shape[1], self.k, None, None, None, tested, self.masks, sizes, only, hits)

    def _first_choices(self, c: npt.NDArray[Any], rows: npt.NDArray[np.uint8], tested: npt.NDArray[np.uint8],
                       kernel: str | None) -> npt.NDArray[np.bool_]:
        """Before a batch is tested: each cohort without a choice that has :data:`FIRST` reports to choose from
        counting those of the batch's head (its first ``head`` samples' worth of reports per cohort) chooses from
        its kept rows and the head's latest (module docstring); return which did."""
        m = self.seen.size
        first = np.zeros(m, bool)
        if self.head <= 0 or self.chosen.all():
            return first
        n = min(c.size, self.head * self.rows * m)
        in_head = free_counts(c, tested, n, m, kernel)
        first = (self.chosen == 0) & (in_head > 0) & (self.seen + in_head >= FIRST)
        if first.any():
            want = np.where(first, np.minimum(in_head, self.rows), 0)
            self._keep_latest(*latest_free(c, tested, n, -1, rows, want, kernel))
            self._choose(np.flatnonzero(first).tolist(), kernel)
        return first

    def _keep_latest(self, picked: npt.NDArray[np.uint8], want: npt.NDArray[np.int64],
                     got: npt.NDArray[np.int64]) -> None:
        """Add to each cohort's sample its latest reports to choose from, as :func:`latest_free` gave them
        (``picked``: a slot of ``want[g]`` rows per cohort, ``got[g]`` of them at its end); a sample keeps its
        latest :func:`sample_rows`."""
        ends = np.cumsum(want)
        for g in np.flatnonzero(got).tolist():
            newest = picked[ends[g] - got[g]:ends[g]]
            kept = self.samples.get(g)
            self.samples[g] = newest if kept is None else np.concatenate((kept, newest))[-self.rows:]

    def _take_in(self, c: npt.NDArray[Any], rows: npt.NDArray[np.uint8], tested: npt.NDArray[np.uint8],
                 counts: npt.NDArray[np.int64], kernel: str | None,
                 first: npt.NDArray[np.bool_] | None = None) -> list[int]:
        """Take in a batch's reports to choose from (``counts`` per cohort), choosing again where due; return the
        cohorts that chose. ``first``: the cohorts that chose from this batch's head (:meth:`_first_choices`),
        whose choice is dated, as any other, at the batch's end, and which keep none of its rows."""
        after = self.seen + counts
        if first is not None:
            self.chosen_at[first] = after[first]
        due = np.maximum(FIRST, REFRESH * self.chosen_at)
        # rows a cohort's next choice can use: its latest, once it is within a sample of being due
        near = (counts > 0) & (after > due - self.rows)
        keep = near if first is None else near & ~first
        if keep.any():
            window = min(int(counts.sum()), 4 * self.rows * int(keep.sum()))  # the tail: 4 samples' worth per cohort
            want = np.where(keep, self.rows, 0)
            self._keep_latest(*latest_free(c, tested, c.size, window, rows, want, kernel))
        self.seen = after
        chose = [g for g in np.flatnonzero(after >= due).tolist() if len(self.samples.get(g, ()))]
        self._choose(chose, kernel)
        self.chosen_at[chose] = after[chose]
        return chose

    def _choose(self, cohorts: list[int], kernel: str | None) -> None:
        """Choose the bits of ``cohorts`` from their samples, all at once (:func:`chosen_sets_of`); the samples are
        dropped (the next choice uses later rows only). The caller dates the choice (``chosen_at``)."""
        if not cohorts:
            return
        sets = chosen_sets_of([self.samples.pop(g) for g in cohorts], self.k, self.sizes, kernel)
        at = np.arange(len(cohorts))[:, None]
        for j in range(len(self.sizes)):
            mask = np.zeros((len(cohorts), self.k), bool)
            mask[at, np.stack([chosen[j] for chosen in sets])] = True
            self.masks[cohorts, j] = np.packbits(mask, axis=1, bitorder="little")
        self.chosen[cohorts] = 1
