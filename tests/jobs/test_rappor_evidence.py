"""The per-report statistics a RAPPOR fold keeps for the poisoning checks (ldp.batch.rappor_evidence): the compiled
and numpy paths agree exactly, the choice never sees a tested report, the choices follow their schedule, and
aggregate files written before the statistics existed still load."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from support.aggregate_files import rappor_file

import ldp.batch.bits as bits_mod
from ldp.batch.rappor_evidence import (
    FIRST,
    REFRESH,
    BitsTogether,
    cooccurrence_counts,
    cooccurrence_sizes,
    report_stats,
    sample_rows,
)
from ldp.decoders.base import Aggregate
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.errors import AggregateFormatError
from ldp.jobs.poisoning import poisoning_evidence

KERNELS = ["numpy"] + (["compiled"] if bits_mod._foldkernel is not None else [])
ENGINES = bits_mod.fold_engines()
compiled = pytest.mark.skipif(bits_mod._foldkernel is None, reason="the compiled fold kernel is not built")


@contextlib.contextmanager
def engine(name: str | None) -> Iterator[None]:
    """The compiled kernel's vector engine ``name`` in use meanwhile (None: no change)."""
    before = bits_mod._foldkernel.use_engine(name) if name else None
    try:
        yield
    finally:
        if before:
            bits_mod._foldkernel.use_engine(before)


@st.composite
def _stats_case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    k = draw(st.integers(1, 80))
    width, m = (k + 7) // 8, draw(st.integers(1, 5))
    n = draw(st.integers(0, 60))
    fill = draw(st.sampled_from(["random", "zeros", "ones"]))
    if fill == "random":
        rows = np.frombuffer(draw(st.binary(min_size=n * width, max_size=n * width)), np.uint8).reshape(n, width)
    else:
        rows = np.full((n, width), 0 if fill == "zeros" else 0xFF, np.uint8)  # padding bits set too
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64, np.int64]))
    cohorts = np.asarray(draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n)), dtype)
    nmasks = draw(st.integers(0, 3))
    masks = np.frombuffer(draw(st.binary(min_size=m * nmasks * width, max_size=m * nmasks * width)),
                          np.uint8).reshape(m, nmasks, width)
    masks = masks & np.where(np.arange(8 * width) < k, 1, 0).reshape(width, 8).dot(1 << np.arange(8)).astype(np.uint8)
    chosen = np.asarray(draw(st.lists(st.integers(0, 1), min_size=m, max_size=m)), np.uint8)
    tested = np.asarray(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.uint8)
    return cohorts, rows, k, tested, masks, chosen


def _reference(cohorts: np.ndarray, rows: np.ndarray, k: int, tested: np.ndarray, masks: np.ndarray,
               chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row by row, bits unpacked."""
    hist, hits = np.zeros(k + 1, np.int64), np.zeros(masks.shape[1] + 1, np.int64)
    for i, (g, row) in enumerate(zip(cohorts.tolist(), rows, strict=True)):
        bits = np.unpackbits(row, count=k, bitorder="little").astype(bool)
        hist[bits.sum()] += 1
        if tested[i] and chosen[g]:
            hits[0] += 1
            for j in range(masks.shape[1]):
                want = np.unpackbits(masks[g, j], count=k, bitorder="little").astype(bool)
                hits[1 + j] += bool(bits[want].all())
    return hist, hits


@settings(max_examples=150, deadline=None)
@given(case=_stats_case())
def test_report_stats_paths_equal_the_row_by_row_rule(case: tuple) -> None:
    cohorts, rows, k, tested, masks, chosen = case
    want = _reference(cohorts, rows, k, tested, masks, chosen)
    for kernel, name in [("numpy", None)] + [("compiled", e) for e in ENGINES]:
        hist, hits = np.zeros(k + 1, np.int64), np.zeros(masks.shape[1] + 1, np.int64)
        with engine(name):
            report_stats(cohorts, rows, k, np.packbits(tested, bitorder="little"), masks, chosen, hist, hits, kernel)
        assert hist.tolist() == want[0].tolist() and hits.tolist() == want[1].tolist(), (kernel, name)


@compiled
@pytest.mark.parametrize("name", ENGINES)
@settings(max_examples=80, deadline=None)
@given(case=_stats_case(), extra=st.integers(0, 300), seed=st.integers(0, 2**32 - 1))
def test_the_fused_pass_equals_the_fold_and_the_statistics_apart(name: str, case: tuple, extra: int,
                                                                 seed: int) -> None:
    """``fold_rows`` with everything at once (the fold, the histogram, the tests; more rows than the hypothesis case:
    past a 64-row block of tests and the 15-row lane flushes) against the row-by-row rules; the tests of every group
    apart (``hits`` of shape (G, nmasks + 1), as ``BitsTogether.fold`` asks for them) too."""
    cohorts, rows, k, tested, masks, chosen = case
    rng = np.random.default_rng(seed)
    m, width = masks.shape[0], rows.shape[1]
    cohorts = np.concatenate([cohorts, rng.integers(0, m, extra).astype(cohorts.dtype)])
    rows = np.concatenate([rows, rng.integers(0, 256, (extra, width), dtype=np.uint8)])
    tested = np.concatenate([tested, rng.integers(0, 2, extra).astype(np.uint8)])
    want_hist, want_hits = _reference(cohorts, rows, k, tested, masks, chosen)
    want_n, want_ones = np.zeros(m, np.int64), np.zeros((m, k), np.int64)
    for g, row in zip(cohorts.tolist(), rows, strict=True):
        want_n[g] += 1
        want_ones[g] += np.unpackbits(row, count=k, bitorder="little")
    fk, c = bits_mod._foldkernel, bits_mod.group_column(cohorts)
    n, ones, hist, hits = np.zeros(m, np.int64), np.zeros((m, k), np.int64), np.zeros(k + 1, np.int64), \
        np.zeros(masks.shape[1] + 1, np.int64)
    packed, apart = np.packbits(tested, bitorder="little"), np.full((m, masks.shape[1] + 1), 5, np.int64)
    with engine(name):
        fk.fold_rows(c, c.itemsize, rows, width, k, n, ones, hist, packed, masks, masks.shape[1], chosen, hits)
        fk.fold_rows(c, c.itemsize, rows, width, k, None, None, None, packed, masks, masks.shape[1], chosen, apart)
    assert (n == want_n).all() and (ones == want_ones).all()
    assert hist.tolist() == want_hist.tolist() and hits.tolist() == want_hits.tolist()
    for g in range(m):  # added to what was there
        mine = cohorts.astype(np.int64) == g
        want_g = _reference(cohorts[mine], rows[mine], k, tested[mine], masks, chosen)[1]
        assert (apart[g] - 5).tolist() == want_g.tolist()


@compiled
@pytest.mark.parametrize("name", ENGINES)
def test_the_packed_test_counters_never_overflow(name: str) -> None:
    """More tested rows than a packed counter (21 bits) holds: they are unpacked every 32767 blocks of 64 rows; every
    row tested, every mask held, both cohorts chosen (cohort 0: all rows but the last); per cohort and summed, with
    the fold."""
    n = 2 * 2**21 + 4099
    rows, cohorts = np.full((n, 2), 0xFF, np.uint8), (np.arange(n) == n - 1).astype(np.uint8)
    tested, masks = np.full((n + 7) // 8, 0xFF, np.uint8), np.full((2, 2, 2), 0x0F, np.uint8)
    chosen = np.ones(2, np.uint8)
    tested[-1] = (1 << (n % 8)) - 1
    fk = bits_mod._foldkernel
    apart, summed, hist = np.zeros((2, 3), np.int64), np.zeros(3, np.int64), np.zeros(17, np.int64)
    counts, ones = np.zeros(2, np.int64), np.zeros((2, 16), np.int64)
    with engine(name):
        fk.fold_rows(cohorts, 1, rows, 2, 16, None, None, None, tested, masks, 2, chosen, apart)
        fk.fold_rows(cohorts, 1, rows, 2, 16, counts, ones, hist, tested, masks, 2, chosen, summed)
    half = [n - 1, 1]
    assert apart.tolist() == [[h] * 3 for h in half] and summed.tolist() == [n] * 3
    assert counts.tolist() == half and (ones == np.array(half)[:, None]).all() and hist[16] == n


@compiled
@pytest.mark.parametrize("name", ENGINES)
@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 300)), min_size=1, max_size=12),
       k=st.sampled_from([128, 100, 16]), m=st.sampled_from([3, 300]), fill=st.sampled_from(["ones", "random"]),
       seed=st.integers(0, 2**32 - 1))
@example(runs=[(0, 70), (1, 122), (0, 192)], k=128, m=3, fill="ones", seed=0)  # 70 rows, then a window's 192
@example(runs=[(0, 8), (1, 184), (0, 192)], k=128, m=3, fill="ones", seed=0)  # 200 rows at the window's check
@example(runs=[(0, 255), (0, 1), (1, 3)], k=100, m=300, fill="ones", seed=0)  # a row bringing the lanes to 255
def test_the_byte_lanes_are_widened_before_they_can_overflow(name: str, runs: list[tuple[int, int]], k: int, m: int,
                                                            fill: str, seed: int) -> None:
    """Runs of one group (the worst case for a group's byte lanes: up to 300 rows in a row, every bit set), folded with
    the statistics (lanes widened at a window's check, or with more than 256 groups when a row brings them to 255)
    against the row-by-row rules."""
    rng = np.random.default_rng(seed)
    cohorts = np.concatenate([np.full(r, g, np.uint8) for g, r in runs])
    n, width = cohorts.size, (k + 7) // 8
    rows = np.full((n, width), 0xFF, np.uint8) if fill == "ones" else rng.integers(0, 256, (n, width), np.uint8)
    rows[:, -1] &= (1 << (k - 8 * (width - 1))) - 1 if k % 8 else 0xFF
    tested = rng.integers(0, 2, n).astype(np.uint8)
    masks = np.zeros((m, 2, width), np.uint8)
    masks[:, :, 0] = [[0x03, 0x0F]]
    chosen = np.ones(m, np.uint8)
    want_hist, want_hits = _reference(cohorts, rows, k, tested, masks, chosen)
    counts, ones = np.zeros(m, np.int64), np.zeros((m, k), np.int64)
    hist, hits = np.zeros(k + 1, np.int64), np.zeros(3, np.int64)
    with engine(name):
        bits_mod._foldkernel.fold_rows(cohorts, 1, rows, width, k, counts, ones, hist,
                                       np.packbits(tested, bitorder="little"), masks, 2, chosen, hits)
    bits = np.unpackbits(rows, axis=1, count=k, bitorder="little").astype(np.int64)
    assert counts.tolist() == np.bincount(cohorts, minlength=m).tolist()
    assert all((ones[g] == bits[cohorts == g].sum(axis=0)).all() for g in range(3))
    assert hist.tolist() == want_hist.tolist() and hits.tolist() == want_hits.tolist()


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 600), m=st.integers(1, 5), limit=st.integers(-1, 700), seed=st.integers(0, 2**32 - 1),
       wide=st.booleans(), data=st.data())
def test_the_latest_reports_to_choose_from_are_the_brute_forces(n: int, m: int, limit: int, seed: int, wide: bool,
                                                                data: st.DataObject) -> None:
    """``free_counts`` and ``latest_free`` (the samples ``BitsTogether`` chooses from), compiled and numpy, against a
    brute force: each cohort's latest reports with a clear coin among the last ``limit`` such of the first ``hi``."""
    from ldp.batch.rappor_evidence import free_counts, latest_free

    rng = np.random.default_rng(seed)
    cohorts = rng.integers(0, m, n).astype(np.uint16 if wide else np.uint8)
    coins = rng.integers(0, 2, n).astype(np.uint8)
    rows = rng.integers(0, 256, (n, 3)).astype(np.uint8)
    hi = data.draw(st.integers(0, n))
    want = np.array(data.draw(st.lists(st.integers(0, 40), min_size=m, max_size=m)), np.int64)
    tested = np.packbits(coins, bitorder="little")
    free = [i for i in range(hi) if coins[i] == 0]
    if limit >= 0:
        free = free[max(0, len(free) - limit):]
    for kernel in KERNELS:
        counts = free_counts(cohorts, tested, hi, m, kernel, step=64)
        assert counts.tolist() == [sum(cohorts[i] == g for i in range(hi) if coins[i] == 0) for g in range(m)]
        picked, slots, got = latest_free(cohorts, tested, hi, limit, rows, want, kernel)
        assert slots.tolist() == want.tolist() and picked.shape == (want.sum(), 3), kernel
        end = 0
        for g in range(m):
            end += int(want[g])
            latest = [i for i in free if cohorts[i] == g][max(0, sum(cohorts[i] == g for i in free) - int(want[g])):]
            assert got[g] == len(latest), kernel
            assert picked[end - len(latest):end].tolist() == rows[latest].tolist(), kernel
            assert not picked[end - int(want[g]):end - len(latest)].any(), kernel


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 70), p=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_cooccurrence_counts_paths_equal_xtx(n: int, k: int, p: float, seed: int) -> None:
    x = np.random.default_rng(seed).random((n, k)) < p
    want = x.astype(np.int64).T @ x.astype(np.int64)
    for kernel in KERNELS:
        assert (cooccurrence_counts(x, kernel) == want).all(), kernel


@compiled
def test_the_compiled_kernel_refuses_what_does_not_fit() -> None:
    fk = bits_mod._foldkernel
    hist, hits = np.zeros(17, np.int64), np.zeros(3, np.int64)
    rows, masks, chosen = np.zeros((4, 2), np.uint8), np.zeros((2, 2, 2), np.uint8), np.ones(2, np.uint8)
    tested = np.packbits(np.array([0, 1, 0, 1], np.uint8), bitorder="little")
    counts, ones = np.zeros(2, np.int64), np.zeros((2, 16), np.int64)

    def stats(groups, nbits=16, tested=tested, nmasks=2, counts=None, ones=None):  # type: ignore[no-untyped-def]
        fk.fold_rows(groups, 1, rows, 2, nbits, counts, ones, hist, tested, masks, nmasks, chosen, hits)

    with pytest.raises(ValueError, match="group out of"):
        stats(np.array([0, 2, 0, 1], np.uint8))
    with pytest.raises(ValueError, match="group out of"):  # the fold's groups are checked before the statistics
        stats(np.array([0, 1, 2, 1], np.uint8), counts=counts, ones=ones)
    with pytest.raises(ValueError, match="buffer sizes"):
        stats(np.zeros(4, np.uint8), nmasks=1)
    with pytest.raises(ValueError, match="buffer sizes"):
        stats(np.zeros(4, np.uint8), tested=np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match="nbits"):
        stats(np.zeros(4, np.uint8), nbits=17)
    with pytest.raises(ValueError, match="group out of"):  # the tests of each group apart
        fk.fold_rows(np.array([0, 2, 0, 1], np.uint8), 1, rows, 2, 16, None, None, None, tested, masks, 2, chosen,
                     np.zeros((2, 3), np.int64))
    assert not hist.any() and not hits.any() and not counts.any() and not ones.any()
    with pytest.raises(ValueError, match="buffer sizes"):
        fk.pair_counts(np.zeros((3, 2), np.uint64), 3, 2, np.zeros((3, 2), np.int64))
    two = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="group out of"):  # rows to choose from: groups checked, nothing written
        fk.free_counts(np.array([0, 2, 0, 1], np.uint8), 1, tested, 4, two)
    assert not two.any()
    with pytest.raises(ValueError, match="group out of"):
        fk.latest_free(np.array([2, 1, 0, 1], np.uint8), 1, tested, 4, -1, rows, 2, np.array([0, 4]), two,
                       np.zeros((4, 2), np.uint8))
    with pytest.raises(ValueError, match="negative"):
        fk.latest_free(np.zeros(4, np.uint8), 1, tested, 4, -1, rows, 2, np.array([-1, 1]), two,
                       np.zeros((0, 2), np.uint8))
    with pytest.raises(ValueError, match="buffer sizes"):  # out must hold every want
        fk.latest_free(np.zeros(4, np.uint8), 1, tested, 4, -1, rows, 2, np.array([1, 1]), two,
                       np.zeros((1, 2), np.uint8))
    with pytest.raises(ValueError, match="buffer sizes"):
        fk.free_counts(np.zeros(4, np.uint8), 1, tested, 5, two)


PARAMS = RapporParams(num_bloombits=24, num_hashes=2, num_cohorts=3, p=0.25, q=0.75, f=0.5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(0, 3000), max_size=6))
def test_batches_choices_and_counts_agree_across_kernels_and_ignore_tested_rows(seed: int, cuts: list[int]) -> None:
    """However the reports are cut into batches: both kernels, given the same coins, choose the same bits and
    count the same; rewriting the tested rows of every batch changes no choice."""
    gen = np.random.default_rng(seed)
    n = 3000
    cohorts = gen.integers(0, 3, n).astype(np.uint8)
    rows = gen.integers(0, 256, (n, 3), dtype=np.uint8)
    edges = [0, *sorted(set(cuts)), n]
    coins = BitsTogether(PARAMS, seed)
    tested = np.concatenate([np.unpackbits(coins.split(b - a), count=b - a, bitorder="little")
                             for a, b in zip(edges, edges[1:], strict=False)]).astype(bool)
    noisy = rows.copy()
    noisy[tested] = gen.integers(0, 256, noisy[tested].shape, dtype=np.uint8)
    runs = []
    for kernel, data in [(k, r) for k in KERNELS for r in (rows, noisy)]:
        bt = BitsTogether(PARAMS, seed)
        hist, hits = np.zeros(25, np.int64), np.zeros(1 + len(cooccurrence_sizes(PARAMS)), np.int64)
        for a, b in zip(edges, edges[1:], strict=False):
            bt.add(cohorts[a:b], data[a:b], hist, hits, kernel)
        runs.append((data is rows, bt.masks.copy(), bt.chosen_at.copy(), hist, hits))
    for same, masks, chosen_at, hist, hits in runs:
        assert (masks == runs[0][1]).all() and (chosen_at == runs[0][2]).all()
        if same:
            assert (hist == runs[0][3]).all() and (hits == runs[0][4]).all()


@compiled
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(0, 3000), max_size=6),
       k=st.sampled_from([24, 128, 200]))
def test_the_one_pass_fold_equals_the_fold_then_add(seed: int, cuts: list[int], k: int) -> None:
    """``BitsTogether.fold`` (compiled, one pass after the choices) and ``add_ones_by_group`` then ``add`` (numpy),
    given the same coins, batch after batch: the same choices, counts, ones, histogram and tests."""
    params = RapporParams(num_bloombits=k, num_hashes=2, num_cohorts=3, p=0.25, q=0.75, f=0.5)
    gen = np.random.default_rng(seed)
    n, width = 3000, (k + 7) // 8
    cohorts = gen.integers(0, 3, n).astype(np.uint8)
    rows = gen.integers(0, 256, (n, width), dtype=np.uint8) & bits_mod.row_padding_mask(k)
    edges = [0, *sorted(set(cuts)), n]
    states = []
    for fused in (True, False):
        bt = BitsTogether(params, seed)
        cohort_n, ones = np.zeros(3, np.int64), np.zeros((3, k), np.int64)
        hist, hits = np.zeros(k + 1, np.int64), np.zeros(1 + len(cooccurrence_sizes(params)), np.int64)
        for a, b in zip(edges, edges[1:], strict=False):
            if fused:
                bt.fold(cohorts[a:b], rows[a:b], cohort_n, ones, hist, hits)
            else:
                bits_mod.add_ones_by_group(cohorts[a:b], rows[a:b], cohort_n, ones, kernel="numpy")
                bt.add(cohorts[a:b], rows[a:b], hist, hits, "numpy")
        states.append((bt.masks, bt.chosen, bt.chosen_at, bt.seen, cohort_n, ones, hist, hits))
    for x, y in zip(*states, strict=True):
        assert (x == y).all()


def test_the_split_is_a_fair_coin_per_report_and_fresh_by_default() -> None:
    coins = np.unpackbits(BitsTogether(PARAMS, 1).split(200_003), bitorder="little")
    assert coins[200_003:].sum() == 0 and abs(coins.mean() * 200_008 / 200_003 - 0.5) < 0.005
    assert (BitsTogether(PARAMS).split(256) != BitsTogether(PARAMS).split(256)).any()


def test_choices_follow_their_schedule() -> None:
    """A cohort chooses once it has seen FIRST even-position reports, then each time that number has grown
    REFRESH-fold; rows are kept only near a choice, at most a sample of them."""
    bt = BitsTogether(PARAMS, 3)
    hist, hits = np.zeros(25, np.int64), np.zeros(3, np.int64)
    gen = np.random.default_rng(3)
    made, free, tested_after = [], 0, 0
    for _ in range(400):  # batches of 40 reports, cohort 0 only
        before = int(bt.chosen_at[0])
        state = bt.gen.bit_generator.state
        coins = np.unpackbits(bt.split(40), bitorder="little")
        bt.gen.bit_generator.state = state  # add() draws the same coins again
        bt.add(np.zeros(40, np.uint8), gen.integers(0, 256, (40, 3), dtype=np.uint8), hist, hits)
        free += int((coins == 0).sum())
        if bt.chosen_at[0] != before:
            made.append(free)
        if made:
            tested_after += int(coins.sum())
        assert all(len(s) <= sample_rows(PARAMS) for s in bt.samples.values())
    assert FIRST <= made[0] < FIRST + 40  # the first batch at or past 64 reports to choose from
    assert all(b >= REFRESH * a for a, b in zip(made, made[1:], strict=False)) and len(made) == 4
    assert hits[0] == tested_after  # tested once cohort 0 had a choice


def _old_file(agg: RapporAggregate) -> bytes:
    """The aggregate's file as written before the per-report statistics existed (its core arrays only)."""
    layout = agg.state_layout(agg.params)
    return rappor_file(agg, layout)


def test_files_without_the_statistics_load_and_are_tested_by_their_totals() -> None:
    gen = np.random.default_rng(9)
    agg = RapporAggregate(PARAMS)
    agg.add_bytes(_batch(gen, 2000).to_bytes())
    old = Aggregate.from_bytes(_old_file(agg))
    assert isinstance(old, RapporAggregate) and old.n == 2000 and not old.ones_hist.any()
    assert (old.ones == agg.ones).all()
    assert [c.name for c in poisoning_evidence(old).checks] == ["ones_total", "ones_cohort", "cohort_reports"]
    merged = old.copy().merge(agg)  # half the reports with statistics: their checks run on those
    assert merged.ones_hist.sum() == 2000 and len(poisoning_evidence(merged).checks) == 7
    damaged = json.loads(_old_file(agg)[9:-4 - 8 * (3 + 3 * 24)].decode())
    damaged["arrays"] = damaged["arrays"][:1]
    with pytest.raises(AggregateFormatError, match="arrays"):
        head = json.dumps(damaged, separators=(",", ":")).encode()
        blob = b"LDPA\x01" + struct.pack("<I", len(head)) + head + agg.cohort_n.astype("<i8").tobytes()
        Aggregate.from_bytes(blob + struct.pack("<I", zlib.crc32(blob)))


def _batch(gen: np.random.Generator, n: int):  # type: ignore[no-untyped-def]
    from ldp.protocols import get_protocol

    enc = get_protocol("rappor").encoder_type(PARAMS)
    return enc.encode_batch(gen.integers(0, 6, n), gen, candidates=[f"v{i}" for i in range(6)])


@pytest.mark.parametrize("damage", ["negative count", "more than n", "hits above tested", "tested above counted"])
def test_statistics_a_fold_cannot_make_are_left_out(damage: str) -> None:
    """An aggregate file's arrays are only shape-checked: per-report statistics no fold could make are not tested
    (the totals still are), and nothing fails."""
    agg = RapporAggregate(PARAMS)
    agg.add_bytes(_batch(np.random.default_rng(2), 3000).to_bytes())
    bad = agg.copy()
    if damage == "negative count":
        bad.ones_hist[3] = -5
    elif damage == "more than n":
        bad.ones_hist[3] += 10_000
    elif damage == "hits above tested":
        bad.together[1] = bad.together[0] + 1
    else:
        bad.together[0] = bad.ones_hist.sum() + 1
    assert len(poisoning_evidence(agg).checks) == 7
    assert [c.name for c in poisoning_evidence(Aggregate.from_bytes(bad.to_bytes())).checks] == [
        "ones_total", "ones_cohort", "cohort_reports", "pair_law"]
