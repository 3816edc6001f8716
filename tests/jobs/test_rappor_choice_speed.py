"""The fast choice of bits (ldp.batch.rappor_evidence.chosen_sets_of: bit sets, every sample and candidate at once)
against the rule written row by row (the exact oracle below, the implementation it replaced), and a fresh
aggregate's first choices made from the head of its first batch (issue 72, item 7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings, strategies as st

import ldp.batch.bits as bits_mod
from ldp.batch.rappor_bit_sets import _stack_words
from ldp.batch.rappor_evidence import HEAD, BitsTogether, chosen_sets, chosen_sets_of, cooccurrence_sizes
from ldp.encoders.rappor import RapporParams

KERNELS = ["numpy"] + (["compiled"] if bits_mod._foldkernel is not None else [])


def _oracle_grown(x: npt.NDArray[np.bool_], seed: tuple[int, ...], s: int, lift: bool) -> list[int]:
    chosen = list(seed)[:s]
    overall = x.mean(axis=0)
    base = np.maximum(overall, 1.0 / x.shape[0])
    while len(chosen) < s:
        rows = x[:, chosen].all(axis=1)
        score = x[rows].mean(axis=0) / (base if lift else 1.0) if rows.any() else overall.copy()
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen


def oracle_chosen_sets(x: npt.NDArray[np.bool_], sizes: tuple[int, ...]) -> list[npt.NDArray[np.intp]]:
    """The choice row by row: seeds from xᵀx (largest covariance, most often together), each grown by lift and by
    frequency, for each size the grown set most rows have all set (the first such)."""
    n, k = x.shape
    f = x.astype(np.float64)
    both = f.T @ f
    mu = np.diag(both) / n
    cov = both / n - np.outer(mu, mu)
    seeds: list[tuple[int, ...]] = [(0,)]
    if k > 1:
        np.fill_diagonal(cov, -np.inf)
        np.fill_diagonal(both, -np.inf)
        seeds = [tuple(int(i) for i in np.unravel_index(int(np.argmax(a)), a.shape)) for a in (cov, both)]
    grown = [_oracle_grown(x, seed, max(sizes), lift) for seed in dict.fromkeys(seeds) for lift in (True, False)]
    return [np.asarray(max(grown, key=lambda g: int(x[:, g[:s]].all(axis=1).sum()))[:s], dtype=np.intp)
            for s in sizes]


@st.composite
def _sample(draw: st.DrawFn) -> tuple[npt.NDArray[np.bool_], tuple[int, ...]]:
    n, k = draw(st.integers(1, 150)), draw(st.integers(1, 70))
    seed = draw(st.integers(0, 2**32 - 1))
    gen = np.random.default_rng(seed)
    fill = draw(st.sampled_from(["random", "planted", "zeros", "ones", "sparse"]))
    p = {"zeros": 0.0, "ones": 1.0, "sparse": 0.02}.get(fill, gen.random())
    x = gen.random((n, k)) < p
    if fill == "planted":
        x[np.ix_(gen.random(n) < 0.2, gen.choice(k, min(k, 6), replace=False))] = True
    sizes = tuple(sorted(draw(st.sets(st.integers(1, k), min_size=1, max_size=3))))
    return x, sizes


@settings(max_examples=300, deadline=None)
@given(case=_sample(), kernel=st.sampled_from(KERNELS))
def test_chosen_sets_equal_the_row_by_row_rule(case: tuple, kernel: str) -> None:
    x, sizes = case
    got, want = chosen_sets(x, sizes, kernel), oracle_chosen_sets(x, sizes)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 130), m=st.integers(1, 5))
def test_samples_chosen_together_equal_each_alone(seed: int, k: int, m: int) -> None:
    """Samples of different lengths stacked (padded with empty rows) choose as each alone."""
    gen = np.random.default_rng(seed)
    samples = [np.packbits(gen.random((int(gen.integers(1, 200)), k)) < gen.random(), axis=1, bitorder="little")
               for _ in range(m)]
    sizes = (2, 4) if k >= 4 else (1,)
    together = chosen_sets_of(samples, k, sizes)
    for sample, got in zip(samples, together, strict=True):
        alone = chosen_sets_of([sample], k, sizes)[0]
        assert [a.tolist() for a in alone] == [g.tolist() for g in got]


@st.composite
def _adversarial(draw: st.DrawFn) -> npt.NDArray[np.bool_]:
    """A sample made for ties: columns copied (equal pair counts, covariances, scores), rows copied or emptied (no
    row with a grown set), constant columns, k and n small or off a multiple of 64."""
    n = draw(st.one_of(st.integers(1, 4), st.integers(1, 200), st.sampled_from([63, 64, 65, 127, 128, 129])))
    k = draw(st.one_of(st.integers(1, 3), st.integers(1, 140), st.sampled_from([63, 64, 65, 128])))
    gen = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    fill = draw(st.sampled_from(["random", "zeros", "ones", "sparse", "dense", "planted"]))
    p = {"zeros": 0.0, "ones": 1.0, "sparse": 0.03, "dense": 0.97}.get(fill, gen.random())
    x = gen.random((n, k)) < p
    if fill == "planted":
        x[np.ix_(gen.random(n) < 0.3, gen.choice(k, min(k, 8), replace=False))] = True
    for _ in range(draw(st.integers(0, 4))):  # copies of columns
        x[:, gen.integers(0, k)] = x[:, gen.integers(0, k)]
    if draw(st.booleans()):  # copies of rows
        x[gen.random(n) < 0.5] = x[gen.integers(0, n)]
    if draw(st.booleans()):  # empty rows
        x[gen.random(n) < draw(st.sampled_from([0.3, 0.9, 1.0]))] = False
    if draw(st.booleans()):  # constant columns
        x[:, gen.random(k) < 0.2] = draw(st.booleans())
    return x


@pytest.mark.skipif(bits_mod._foldkernel is None, reason="the compiled fold kernel is not built")
@settings(max_examples=400, deadline=None)
@given(xs=st.lists(_adversarial(), min_size=1, max_size=4), data=st.data())
def test_the_compiled_choice_equals_the_numpy_choice(xs: list[npt.NDArray[np.bool_]], data: st.DataObject) -> None:
    """``_foldkernel.choose_sets`` (every sample's whole choice in C) against the numpy path, exactly, on every
    engine: samples of one width stacked, sizes up to and past ``k``."""
    k = xs[0].shape[1]
    xs = [np.resize(x, (x.shape[0], k)) for x in xs]
    sizes = tuple(sorted(data.draw(st.sets(st.integers(1, k + 2), min_size=1, max_size=3))))
    samples = [np.packbits(x, axis=1, bitorder="little") for x in xs]
    want = [[w.tolist() for w in sets] for sets in chosen_sets_of(samples, k, sizes, "numpy")]
    fk = bits_mod._foldkernel
    before = fk.use_engine()
    try:
        for engine in fk.engines():
            fk.use_engine(engine)
            got = chosen_sets_of(samples, k, sizes, "compiled")
            assert [[g.tolist() for g in sets] for sets in got] == want, engine
            assert all(g.dtype == np.intp for sets in got for g in sets)
    finally:
        fk.use_engine(before)


def test_the_compiled_choice_is_the_same_on_any_number_of_threads() -> None:
    """``choose_sets`` splits the samples between threads (8 a thread at least, up to the cores): 1, 2, 3 and 8
    threads choose exactly alike, and a number out of range is refused."""
    if bits_mod._foldkernel is None:
        pytest.skip("the compiled fold kernel is not built")
    gen = np.random.default_rng(11)
    k, m, nmax, sizes = 40, 27, 300, np.array([4, 10], np.int64)
    n = gen.integers(1, nmax + 1, m).astype(np.int64)
    stack = np.zeros((m, nmax, 5), np.uint8)
    for g in range(m):
        stack[g, :n[g]] = np.packbits(gen.random((n[g], k)) < gen.uniform(0.1, 0.6), axis=1, bitorder="little")
    outs = []
    for threads in (1, 2, 3, 8):
        out = np.full((m, 2, 10), -7, np.int64)
        bits_mod._foldkernel.choose_sets(stack, nmax, k, n, sizes, out, threads)
        outs.append(out)
    assert all((o == outs[0]).all() for o in outs) and (outs[0][:, 0, 4:] == -1).all()
    for bad in (-1, 9):
        with pytest.raises(ValueError, match="threads"):
            bits_mod._foldkernel.choose_sets(stack, nmax, k, n, sizes, outs[0], bad)


def test_the_compiled_choice_sees_only_each_samples_rows() -> None:
    """Rows past a sample's count in the stack (garbage here) and bits past ``k`` in a row's last byte are never
    read: the choice equals that of the clean stack."""
    if bits_mod._foldkernel is None:
        pytest.skip("the compiled fold kernel is not built")
    gen = np.random.default_rng(3)
    k, sizes = 13, np.array([2, 4], np.int64)
    n = np.array([5, 70, 1], np.int64)
    clean = np.zeros((3, 70, 2), np.uint8)
    for g, rows in enumerate(n):
        clean[g, :rows] = np.packbits(gen.random((rows, k)) < 0.4, axis=1, bitorder="little")
    dirty = clean.copy()
    for g, rows in enumerate(n):
        dirty[g, rows:] = 0xFF
    dirty[:, :, 1] |= 0xE0  # bits 13..15
    outs = []
    for stack in (clean, dirty):
        out = np.empty((3, 2, 4), np.int64)
        bits_mod._foldkernel.choose_sets(stack, 70, k, n, sizes, out)
        outs.append(out)
    assert (outs[0] == outs[1]).all()
    want = chosen_sets_of([clean[g, :rows] for g, rows in enumerate(n)], k, (2, 4), "numpy")
    assert [[o[t, :s].tolist() for t, s in enumerate((2, 4))] for o in outs[0]] == \
        [[w.tolist() for w in sets] for sets in want]
    assert (outs[0][:, 0, 2:] == -1).all()


@pytest.mark.parametrize("bad, match", [
    ({"n": [0]}, "rows, not in"), ({"n": [9]}, "rows, not in"), ({"sizes": [0]}, "sizes must be"),
    ({"sizes": []}, "sizes do not match"), ({"out": (1, 1, 3)}, "sizes do not match"), ({"k": 0}, "need 1 <= k"),
    ({"k": 17}, "sizes do not match"), ({"nmax": 4}, "sizes do not match")])
def test_the_compiled_choice_refuses_what_does_not_fit(bad: dict[str, Any], match: str) -> None:
    if bits_mod._foldkernel is None:
        pytest.skip("the compiled fold kernel is not built")
    args: dict[str, Any] = {"nmax": 8, "k": 16, "n": [8], "sizes": [2], "out": (1, 1, 2)}
    args.update(bad)
    stack = np.zeros((1, 8, 2), np.uint8)
    with pytest.raises(ValueError, match=match):
        bits_mod._foldkernel.choose_sets(stack, args["nmax"], args["k"], np.array(args["n"], np.int64),
                                         np.array(args["sizes"], np.int64), np.empty(args["out"], np.int64))


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 140), n=st.integers(1, 300))
def test_column_words_are_the_columns_bit_sets(seed: int, k: int, n: int) -> None:
    x = np.random.default_rng(seed).random((2, n, k)) < 0.5
    words = _stack_words(np.packbits(x, axis=2, bitorder="little"), k)
    for g in range(2):
        want = np.zeros((k, 8 * ((n + 63) // 64)), np.uint8)
        cols = np.packbits(x[g].T, axis=1, bitorder="little")
        want[:, :cols.shape[1]] = cols
        assert (words[g] == want.view(np.uint64)).all()


def test_a_sample_without_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one row"):
        chosen_sets_of([np.zeros((0, 2), np.uint8)], 16, (2,))
    assert chosen_sets_of([], 16, (2,)) == []


PARAMS = RapporParams(num_bloombits=24, num_hashes=2, num_cohorts=3, p=0.25, q=0.75, f=0.5)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(0, 3000), max_size=5),
       kernel=st.sampled_from(["fold", *KERNELS]), skew=st.booleans())
def test_first_choices_from_the_head_equal_the_old_choices_after_the_batch(seed: int, cuts: list[int], kernel: str,
                                                                          skew: bool) -> None:
    """Where a batch is within its head (here every batch: 3,000 reports against 4 × 1,024 × 3), choosing first
    from the head before the tests (``head`` on) and choosing after the batch then testing its reports again
    (``head=0``, the path before issue 72) give the same choices, dates, samples and counts, batch after batch."""
    if kernel == "fold" and bits_mod._foldkernel is None:
        pytest.skip("the compiled fold kernel is not built")
    gen = np.random.default_rng(seed)
    n = 3000
    cohorts = (gen.integers(0, 3, n) if not skew else np.minimum(gen.geometric(0.02, n) - 1, 2)).astype(np.uint8)
    rows = gen.integers(0, 256, (n, 3), dtype=np.uint8)
    edges = [0, *sorted(set(cuts)), n]
    states = []
    for head in (0, HEAD):
        bt = BitsTogether(PARAMS, seed, head=head)
        cohort_n, ones = np.zeros(3, np.int64), np.zeros((3, 24), np.int64)
        hist, hits = np.zeros(25, np.int64), np.zeros(1 + len(cooccurrence_sizes(PARAMS)), np.int64)
        for a, b in zip(edges, edges[1:], strict=False):
            if kernel == "fold":
                bt.fold(cohorts[a:b], rows[a:b], cohort_n, ones, hist, hits)
            else:
                bt.add(cohorts[a:b], rows[a:b], hist, hits, kernel)
        states.append((bt.masks, bt.chosen, bt.chosen_at, bt.seen, hist, hits,
                       {g: s.tobytes() for g, s in bt.samples.items()}))
    for x, y in zip(*states, strict=True):
        assert x == y if isinstance(x, dict) else (x == y).all()


def test_a_fresh_aggregate_tests_its_first_batch_against_choices_from_its_head() -> None:
    """A batch far longer than its head: every cohort chooses from the head, before the batch's tests, the choice
    dated at the batch's end; the tests of the whole batch count (its tested reports, ~half)."""
    gen = np.random.default_rng(5)
    n = 60_000
    bt = BitsTogether(PARAMS, 5)
    hist, hits = np.zeros(25, np.int64), np.zeros(3, np.int64)
    cohorts, rows = gen.integers(0, 3, n).astype(np.uint8), gen.integers(0, 256, (n, 3), dtype=np.uint8)
    bt.add(cohorts, rows, hist, hits)
    assert bt.chosen.all() and not bt.samples
    assert (bt.chosen_at == bt.seen).all() and abs(bt.seen.sum() - n / 2) < 4 * np.sqrt(n)
    assert hits[0] == n - bt.seen.sum()  # every tested report of the batch, all cohorts having chosen
