"""Which bits a RAPPOR cohort's sample sets together: the choice of :mod:`ldp.batch.rappor_evidence`
(:func:`chosen_sets_of`), every sample at once, on its columns as bit sets.

Two seeds per sample: the pair of bits of largest covariance and the pair set together most often
(:func:`cooccurrence_counts`), each grown greedily by lift and by frequency (:func:`_grown`); for each size, the set
the most rows have all set. In one call of the compiled fold kernel when it is built (``_foldkernel.choose_sets``:
the same float formulas in the same order, the same ties), in numpy otherwise (:func:`_chosen_sets_numpy`, the
reference), equal exactly (``tests/jobs/test_rappor_choice_speed.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ldp.batch import bits

__all__ = ["chosen_sets", "chosen_sets_of", "column_words", "cooccurrence_counts"]


def column_words(x: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
    """``uint64 (k, ⌈n/64⌉)``: column ``j`` of ``x`` (0/1, ``(n, k)``) as a bit set over the rows (row ``i`` is bit
    ``i % 64`` of word ``i // 64``; the padding bits are 0)."""
    return _stack_words(np.packbits(x, axis=1, bitorder="little")[None], x.shape[1])[0]


_DELTAS = tuple((np.uint64(d), np.uint64(mask)) for d, mask in
                ((7, 0x00AA00AA00AA00AA), (14, 0x0000CCCC0000CCCC), (28, 0x00000000F0F0F0F0)))


def _stack_words(rows: npt.NDArray[np.uint8], k: int) -> npt.NDArray[np.uint64]:
    """``uint64 (m, k, ⌈n/64⌉)``: :func:`column_words` of each of ``m`` packed samples (``(m, n, ⌈k/8⌉)``, bits
    little-endian), without unpacking them: each 8×8 block of bits (8 rows, one byte of columns) read as a
    ``uint64`` is transposed by three delta swaps (Warren, *Hacker's Delight*, 2nd ed., §7-3), its bytes then
    being the block's columns; the blocks are then laid out by column. A transposed copy of the unpacked bits is
    several times slower."""
    m, n, width = rows.shape
    n64 = (n + 63) // 64 * 64
    padded = np.zeros((m, n64, width), np.uint8)
    padded[:, :n] = rows
    x = np.ascontiguousarray(padded.reshape(m, n64 // 8, 8, width).transpose(0, 1, 3, 2)).view(np.uint64)[..., 0]
    for d, mask in _DELTAS:
        t = (x ^ (x >> d)) & mask
        x ^= t ^ (t << d)
    cols = x[..., None].view(np.uint8).transpose(0, 2, 3, 1).reshape(m, 8 * width, n64 // 8)[:, :k]
    return np.ascontiguousarray(cols).view(np.uint64)


def cooccurrence_counts(x: npt.NDArray[np.bool_], kernel: str | None = None,
                        words: npt.NDArray[np.uint64] | None = None) -> npt.NDArray[np.int64]:
    """``(k, k)``: ``[i, j]`` the rows of ``x`` (0/1, ``(n, k)``) that have bits ``i`` and ``j`` both set
    (``xᵀx``). Compiled: the bits' columns packed as bit sets (:func:`column_words`, or ``words`` when given) and
    ANDed, a popcount per word; numpy: a float product, exact below 2⁵³ rows."""
    n, k = x.shape
    if (kernel or bits.FOLD_KERNEL) == "compiled" and bits._foldkernel is not None:
        cols = np.ascontiguousarray(column_words(x) if words is None else words)
        out = np.empty((k, k), np.int64)
        bits._foldkernel.pair_counts(cols, k, cols.shape[1], out)
        return out
    f = x.astype(np.float64)
    return (f.T @ f).astype(np.int64)


def _having(words: npt.NDArray[np.uint64], sets: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
    """``(m, c, W)``: for each sample ``g`` and each row of ``sets[g]`` (``(m, c, s)`` bit indices, ``s >= 1``), the
    rows that have all its bits set, as a bit set: the AND of those columns of ``words`` (``(m, k, W)``)."""
    out: npt.NDArray[np.uint64] = np.bitwise_and.reduce(words[np.arange(len(words))[:, None, None], sets], axis=2)
    return out


def _grown(words: npt.NDArray[np.uint64], ones: npt.NDArray[np.int64], n: npt.NDArray[np.int64],
           starts: npt.NDArray[np.intp], s: int) -> npt.NDArray[np.intp]:
    """``(m, 4, s)``: for each of ``m`` samples (its columns as bit sets ``words[g]``, its bits' counts ``ones[g]``
    over ``n[g]`` rows), its four starts ``starts[g]`` (two seeds, each by lift then by frequency) grown to ``s``
    bits, one at a time, all at once: among the rows that have every bit chosen so far set, the bit most
    over-represented, its frequency there over its frequency in all rows (lift, even ``c``), or most often set
    (frequency, odd ``c``); when no row has them all, the bit most often set. The scores are the floats
    ``x[rows].mean(axis=0) / base`` of the rule written row by row (the exact oracle in
    ``tests/jobs/test_rappor_evidence.py``), so ties break alike: to the lowest bit."""
    m, k = ones.shape
    g = np.arange(m)[:, None]
    overall = ones.astype(np.float64) / n[:, None]  # (m, k)
    base = np.ones((m, 4, k))
    base[:, 0::2] = np.maximum(overall, 1.0 / n[:, None])[:, None, :]
    chosen = starts[:, :, :s]
    rows = _having(words, chosen)  # (m, 4, W)
    while chosen.shape[2] < s:
        have = np.bitwise_count(rows).sum(axis=2, dtype=np.int64)  # (m, 4)
        cnt = np.bitwise_count(words[:, None, :, :] & rows[:, :, None, :]).sum(axis=3, dtype=np.int64)
        score = cnt.astype(np.float64) / np.maximum(have, 1)[:, :, None] / base
        empty = have == 0
        score[empty] = np.broadcast_to(overall[:, None, :], score.shape)[empty]
        np.put_along_axis(score, chosen, -np.inf, axis=2)
        new = np.argmax(score, axis=2)  # (m, 4)
        chosen = np.concatenate((chosen, new[:, :, None]), axis=2)
        rows &= words[g, new]
    return chosen


def chosen_sets(x: npt.NDArray[np.bool_], sizes: tuple[int, ...],
                kernel: str | None = None) -> list[npt.NDArray[np.intp]]:
    """For each ``s`` of ``sizes``, ``s`` bits that many rows of ``x`` (0/1, ``(n, k)``, ``n >= 1``) have all set
    (:func:`chosen_sets_of`, for one sample)."""
    return chosen_sets_of([np.packbits(x, axis=1, bitorder="little")], x.shape[1], sizes, kernel)[0]


def chosen_sets_of(samples: list[npt.NDArray[np.uint8]], k: int, sizes: tuple[int, ...],
                   kernel: str | None = None) -> list[list[npt.NDArray[np.intp]]]:
    """For each sample (packed rows of ``k`` bits, ``(n, ⌈k/8⌉)``, ``n >= 1``) and each ``s`` of ``sizes``, ``s``
    bits that many of its rows have all set. Two seeds: the pair of bits of largest covariance (bits a minority of
    the rows sets together) and the pair set together most often (bits most rows set, as in a sample of fake reports
    alone); each grown greedily by lift (bits over-represented where the set is, as when fake reports are few among
    honest ones) and by frequency (:func:`_grown`). Of these, for each size, the set the most rows have all set (the
    first such, in that order). Compiled: every sample's whole choice in one call of the fold kernel
    (``_foldkernel.choose_sets``: the same float formulas in the same order, the same ties); numpy (the reference,
    :func:`_chosen_sets_numpy`): all samples at once, on their columns as bit sets."""
    m = len(samples)
    if m == 0:
        return []
    n = np.array([len(x) for x in samples], np.int64)
    if (n < 1).any():
        raise ValueError("every sample needs at least one row")
    stack = np.zeros((m, int(n.max()), (k + 7) // 8), np.uint8)
    for g, x in enumerate(samples):
        stack[g, :len(x)] = x
    compiled = (kernel or bits.FOLD_KERNEL) == "compiled" and bits._foldkernel is not None
    if not compiled:
        return _chosen_sets_numpy(stack, n, k, sizes, kernel)
    out = np.empty((m, len(sizes), max(sizes)), np.int64)
    bits._foldkernel.choose_sets(stack, stack.shape[1], k, n, np.asarray(sizes, np.int64), out)
    chosen = out.astype(np.intp)
    return [[chosen[g, t, :s] for t, s in enumerate(sizes)] for g in range(m)]


def _chosen_sets_numpy(stack: npt.NDArray[np.uint8], n: npt.NDArray[np.int64], k: int, sizes: tuple[int, ...],
                       kernel: str | None = None) -> list[list[npt.NDArray[np.intp]]]:
    """:func:`chosen_sets_of` in numpy, from the samples stacked (``(m, max n, ⌈k/8⌉)``, sample ``g``'s first
    ``n[g]`` rows, zeros past them): their columns as bit sets (:func:`_stack_words`), the pair counts per sample (a
    float product, or the compiled ``pair_counts`` when ``kernel`` says so), the growth and the final counts by
    popcounts of ANDs. The reference the compiled choice is tested equal to."""
    m = len(stack)
    words = _stack_words(stack, k)
    compiled = kernel == "compiled" and bits._foldkernel is not None
    starts = np.zeros((m, 4, 2 if k > 1 else 1), np.intp)
    ones = np.empty((m, k), np.int64)
    for g in range(m):
        if compiled:
            both = np.empty((k, k), np.int64)
            bits._foldkernel.pair_counts(words[g], k, words.shape[2], both)
        else:
            f = np.unpackbits(stack[g, :n[g]], axis=1, count=k, bitorder="little").astype(np.float64)
            both = (f.T @ f).astype(np.int64)
        ones[g] = np.diag(both)
        if k == 1:
            continue
        pairs = both.astype(np.float64)
        mu = np.diag(pairs) / n[g]
        cov = pairs / n[g] - np.outer(mu, mu)
        np.fill_diagonal(cov, -np.inf)
        np.fill_diagonal(pairs, -np.inf)
        for j, a in enumerate((cov, cov, pairs, pairs)):
            starts[g, j] = np.unravel_index(int(np.argmax(a)), a.shape)
    grown = _grown(words, ones, n, starts, max(sizes))
    best = [np.argmax(np.bitwise_count(_having(words, grown[:, :, :s])).sum(axis=2, dtype=np.int64), axis=1)
            for s in sizes]
    return [[np.asarray(grown[g, b[g], :s], dtype=np.intp) for s, b in zip(sizes, best, strict=True)]
            for g in range(m)]
