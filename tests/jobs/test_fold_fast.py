"""The fast folds agree exactly with the straightforward ones (issue 16, item 6; issue 61, item 1).

* :func:`ldp.batch.bits.add_ones_by_group`, compiled (when built: on every vector engine this machine runs) and pure
  numpy, against a loop that unpacks every row: random batches, 0/1/flush-boundary sizes, bit widths not multiples of
  8, one group and many, every group dtype, all-ones rows (the SWAR lanes at their capacity, past the 15-, 255- and
  65535-row flushes); rows read at the very end of the buffer (the copied tail); batches of several chunks of the
  fold that sorts a chunk's rows by group;
* :func:`ldp.batch.bits.add_signs_by_group` (HCMS), compiled on every engine and numpy, against a loop: small batches
  (straight into the tables) and large ones (int16 partial sums, each block checked after it is added: a bad report in
  any block adds nothing; a crowded cell's row moved to int32 ones before an int16 sum could wrap);
* every aggregate that folds packed bits (RAPPOR, CMS, HCMS, SFP), fed binary frames through
  ``add_bytes``, against per-report ``add`` of :class:`~ldp.reports.Report` objects folded by that loop;
* the batch validation's reduction fast path against the elementwise rule (rejects and their order);
* frame parsing copies nothing: columns are views of the input bytes, the CRC-32 is taken over a view.
"""

from __future__ import annotations

import contextlib
import functools
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ldp.batch.bits as bits_mod
import ldp.decoders.rappor as rappor_mod
import ldp.decoders.sketch as sketch_mod
from ldp.batch.bits import add_ones_by_group, add_signs_by_group, ones_by_group
from ldp.decoders.base import frame_to_batch
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.sfp import SfpAggregate
from ldp.decoders.sketch import SketchAggregate
from ldp.encoders.cms import CmsParams
from ldp.encoders.hcms import HcmsParams
from ldp.encoders.rappor import RapporParams
from ldp.encoders.sfp import SfpParams
from ldp.reports import ReportBatch, scan_frames

ENGINES = bits_mod.fold_engines()
KERNELS = ["numpy"] + [f"compiled-{e}" for e in ENGINES]
"""The numpy fold, and the compiled one on each vector engine this machine runs (``generic`` everywhere)."""
DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int64, np.dtype(">u2")]
compiled = pytest.mark.skipif(bits_mod._foldkernel is None, reason="the compiled fold kernel is not built")


@contextlib.contextmanager
def kernel_of(name: str) -> Iterator[str]:
    """The ``kernel`` argument for a name of :data:`KERNELS`, its engine in use meanwhile."""
    if name == "numpy":
        yield "numpy"
        return
    before = bits_mod._foldkernel.use_engine(name.removeprefix("compiled-"))
    try:
        yield "compiled"
    finally:
        bits_mod._foldkernel.use_engine(before)


def reference_add(groups: np.ndarray, rows: np.ndarray, counts: np.ndarray, ones: np.ndarray, kernel=None) -> None:
    """The straightforward fold: one row at a time, its bits unpacked."""
    nbits = ones.shape[1]
    for g, row in zip(np.asarray(groups).tolist(), np.asarray(rows, np.uint8), strict=True):
        counts[g] += 1
        ones[g] += np.unpackbits(row, bitorder="little")[:nbits]


def packed_rows(rng: np.random.Generator, n: int, nbits: int, density: float) -> np.ndarray:
    """(n, ceil(nbits/8)) packed rows, each bit 1 with probability ``density``, padding bits zero."""
    unpacked = rng.random((n, nbits)) < density
    return np.packbits(unpacked, axis=1, bitorder="little").reshape(n, (nbits + 7) // 8)


@st.composite
def fold_cases(draw):
    n = draw(st.one_of(st.sampled_from([0, 1, 14, 15, 16, 254, 255, 256, 257, 4081]), st.integers(0, 1200)))
    num_groups = draw(st.one_of(st.just(1), st.integers(1, 300)))
    nbits = draw(st.one_of(st.sampled_from([1, 7, 8, 9, 63, 64, 65, 128, 300]), st.integers(1, 320)))
    dtype = draw(st.sampled_from([d for d in DTYPES if num_groups <= 256 or np.dtype(d).itemsize > 1]))
    density = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    skew = draw(st.booleans())  # most rows in group 0: runs far past the 15- and 255-row lane flushes
    groups = rng.integers(0, num_groups, n)
    if skew:
        groups = np.where(rng.random(n) < 0.9, 0, groups)
    return groups.astype(dtype), packed_rows(rng, n, nbits, density), num_groups, nbits, seed


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=fold_cases())
def test_add_ones_by_group_equals_the_row_by_row_fold(kernel, case):
    groups, rows, num_groups, nbits, seed = case
    rng = np.random.default_rng(seed + 1)
    start_counts = rng.integers(0, 1000, num_groups)
    start_ones = rng.integers(0, 1000, (num_groups, nbits))
    want_counts, want_ones = start_counts.copy(), start_ones.copy()
    reference_add(groups, rows, want_counts, want_ones)
    counts, ones = start_counts.copy(), start_ones.copy()  # added to in place
    with kernel_of(kernel) as k:
        add_ones_by_group(groups, rows, counts, ones, kernel=k)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(ones, want_ones)


@functools.lru_cache(maxsize=4)
def all_ones(n: int, nbits: int) -> np.ndarray:
    """:func:`packed_rows` at density 1 (every bit set, padding zero) without drawing n·nbits uniforms; read-only,
    shared by the kernels."""
    rows = np.packbits(np.ones((n, nbits), bool), axis=1, bitorder="little").reshape(n, (nbits + 7) // 8)
    rows.flags.writeable = False
    return rows


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("nbits", [5, 128, 200, 1024])
@pytest.mark.parametrize("num_groups", [1, 2])
def test_lanes_never_overflow(kernel, nbits, num_groups):
    """All-ones rows, all in group 0 (the only one: its rows summed in registers; or one of two: in memory): every
    lane receives its maximum between flushes, past the 16-bit lanes' 65535 rows too."""
    n = 65535 + 255 * 17 + 300
    rows = all_ones(n, nbits)
    counts, ones = np.zeros(num_groups, np.int64), np.zeros((num_groups, nbits), np.int64)
    with kernel_of(kernel) as k:
        add_ones_by_group(np.zeros(n, np.uint8), rows, counts, ones, kernel=k)
    assert counts.tolist() == [n] + [0] * (num_groups - 1)
    assert (ones[0] == n).all() and (ones[1:] == 0).all()


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(nbits=st.integers(1, 600), n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_rows_at_the_end_of_the_buffer_are_read_exactly(kernel, nbits, n, seed):
    """The last rows of a batch, read from a copy (the vector loads would pass the buffer's end), and a view whose
    buffer ends where the rows do: bits past each row's own are never counted."""
    rng = np.random.default_rng(seed)
    nbytes = (nbits + 7) // 8
    buf = np.frombuffer(rng.bytes(n * nbytes), np.uint8).reshape(n, nbytes)  # padding bits set too
    rows = buf & bits_mod.row_padding_mask(nbits)
    groups = rng.integers(0, 3, n).astype(np.uint8)
    want_counts, want_ones = np.zeros(3, np.int64), np.zeros((3, nbits), np.int64)
    reference_add(groups, rows, want_counts, want_ones)
    counts, ones = np.zeros(3, np.int64), np.zeros((3, nbits), np.int64)
    with kernel_of(kernel) as k:
        add_ones_by_group(groups, buf, counts, ones, kernel=k)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(ones, want_ones)


def numpy_fold(groups: np.ndarray, rows: np.ndarray, counts: np.ndarray, ones: np.ndarray) -> None:
    """:func:`reference_add` in bulk (large batches): the unpacked rows sorted by group, each group's run summed."""
    order = np.argsort(groups, kind="stable")
    present, starts = np.unique(groups[order], return_index=True)
    unpacked = np.unpackbits(rows[order], axis=1, bitorder="little")[:, :ones.shape[1]]
    counts[present.astype(np.int64)] += np.diff(np.append(starts, groups.size))
    ones[present.astype(np.int64)] += np.add.reduceat(unpacked, starts, axis=0, dtype=np.int64)


@compiled
@pytest.mark.parametrize("kernel", KERNELS[1:])
@settings(max_examples=10, deadline=None, derandomize=True)
@given(nbits=st.sampled_from([136, 1024, 2000]), num_groups=st.sampled_from([2, 5, 256, 300]),
       extra=st.sampled_from([0, 1, 777]), skew=st.sampled_from([0.0, 0.5, 1.0]), full=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_rows_sorted_by_group_chunk_by_chunk_fold_exactly(kernel, nbits, num_groups, extra, skew, full, seed):
    """The compiled fold without statistics, rows of > 16 bytes and >= 2 a group: chunks of 256 KiB of rows, each
    sorted by group and summed per group in registers. Several chunks and a tail (read from a copy); all rows or
    half of them in one group (runs past the 255 rows a byte lane holds, and past the 15-row nibble flushes of the
    tail), every group in each chunk or one, random or all-ones rows; every engine against the numpy fold."""
    rng = np.random.default_rng(seed)
    nbytes = (nbits + 7) // 8
    n = 3 * (262144 // nbytes) + extra
    groups = np.where(rng.random(n) < skew, num_groups - 1, rng.integers(0, num_groups, n)).astype(np.uint16)
    rows = np.frombuffer(rng.bytes(n * nbytes), np.uint8).reshape(n, nbytes) & bits_mod.row_padding_mask(nbits)
    if full:  # every lane at its capacity between flushes
        rows = np.full_like(rows, 255) & bits_mod.row_padding_mask(nbits)
    start = rng.integers(0, 1000, num_groups), rng.integers(0, 1000, (num_groups, nbits))
    want_counts, want_ones = start[0].copy(), start[1].copy()
    numpy_fold(groups, rows, want_counts, want_ones)
    counts, ones = start[0].copy(), start[1].copy()
    with kernel_of(kernel) as k:
        add_ones_by_group(groups, rows, counts, ones, kernel=k)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(ones, want_ones)


@st.composite
def sign_cases(draw):
    n = draw(st.one_of(st.sampled_from([0, 1, 64, 65]), st.integers(0, 700)))
    num_groups, m = draw(st.integers(1, 300)), draw(st.integers(1, 1100))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    gtype = draw(st.sampled_from([d for d in DTYPES if num_groups <= 256 or np.dtype(d).itemsize > 1]))
    ctype = draw(st.sampled_from([d for d in DTYPES if m <= 256 or np.dtype(d).itemsize > 1]))
    groups = rng.integers(0, num_groups, n).astype(gtype)
    cells = np.where(rng.random(n) < 0.5, m - 1, rng.integers(0, m, n)).astype(ctype)
    signs = rng.integers(0, 2, n).astype(draw(st.sampled_from([np.uint8, np.uint16, np.int64])))
    return groups, cells, signs, num_groups, m


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(case=sign_cases())
def test_add_signs_by_group_equals_the_report_by_report_fold(kernel, case):
    groups, cells, signs, num_groups, m = case
    counts, sums = np.full(num_groups, 7, np.int64), np.full((num_groups, m), -3, np.int64)
    want_counts, want_sums = counts.copy(), sums.copy()
    for g, c, b in zip(groups.tolist(), cells.tolist(), signs.tolist(), strict=True):
        want_counts[g] += 1
        want_sums[g, c] += 2 * b - 1
    with kernel_of(kernel) as k:
        add_signs_by_group(groups, cells, signs, counts, sums, kernel=k)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(sums, want_sums)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_group_or_cell_out_of_range_adds_no_sign(kernel):
    groups, cells = np.arange(50, dtype=np.int64) % 4, np.arange(50, dtype=np.uint16) % 8
    counts, sums = np.zeros(4, np.int64), np.zeros((4, 8), np.int64)
    for bad_groups, bad_cells in ((np.where(groups == 3, 4, groups), cells), (groups, np.where(cells == 7, 8, cells)),
                                  (np.where(groups == 3, -1, groups), cells)):
        with kernel_of(kernel) as k, pytest.raises((ValueError, IndexError)):
            add_signs_by_group(bad_groups, bad_cells, np.ones(50, np.uint8), counts, sums, kernel=k)
        assert not counts.any() and not sums.any()


def reference_signs(groups, cells, signs, counts, sums) -> None:
    """HCMS's fold, report by report (numpy's unbuffered ``add.at``)."""
    g, c = np.asarray(groups).astype(np.int64), np.asarray(cells).astype(np.int64)
    np.add.at(counts, g, 1)
    np.add.at(sums, (g, c), 2 * np.asarray(signs).astype(np.int64) - 1)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(n=st.one_of(st.sampled_from([4095, 4096, 4097, 3 * 4096 + 5]), st.integers(1, 20_000)),
       num_groups=st.sampled_from([1, 3, 200, 256, 300]), m=st.sampled_from([1, 16, 64]),
       ctype=st.sampled_from([np.uint8, np.uint16, np.uint32]), skew=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_signs_through_the_partial_sums_equal_the_report_by_report_fold(kernel, n, num_groups, m, ctype, skew, seed):
    """Batches large enough for the int16 partial sums (n >= G*m/4, groups of 1 byte, cells of 1 or 2): blocks of
    4096 reports and what is left over, more groups than a byte holds (300: those of 256 and up have no report), one
    cell taking nearly every report (skew); and the same batches straight into the tables (groups of 2 bytes, cells
    of 4)."""
    rng = np.random.default_rng(seed)
    gtype = np.uint8 if seed % 2 else np.uint16
    groups = rng.integers(0, min(num_groups, 256) if gtype == np.uint8 else num_groups, n).astype(gtype)
    cells = rng.integers(0, m, n).astype(ctype if m <= 256 or ctype != np.uint8 else np.uint16)
    if skew:
        groups[rng.random(n) < 0.95], cells[rng.random(n) < 0.95] = 0, m - 1
    signs = rng.integers(0, 2, n).astype(np.uint8)
    counts, sums = np.full(num_groups, 7, np.int64), np.full((num_groups, m), -3, np.int64)
    want_counts, want_sums = counts.copy(), sums.copy()
    reference_signs(groups, cells, signs, want_counts, want_sums)
    with kernel_of(kernel) as k:
        add_signs_by_group(groups, cells, signs, counts, sums, kernel=k)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(sums, want_sums)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("where", [0, 4095, 4096, 40_000, 69_999])
@pytest.mark.parametrize("what", ["group", "cell", "group -1", "sign 2"])
def test_a_bad_report_in_any_block_of_the_partial_sums(kernel, where, what):
    """HCMS's shape (256 x 1024 cells, 70,000 reports: partial sums, 18 blocks): a group or a cell out of range in any
    block adds nothing (its block was already added to the partial sums: they are dropped); a bit of 2 (2*2-1 = 3) is
    still added exactly, as by the report-by-report fold."""
    rng = np.random.default_rng(where)
    n, num_groups, m = 70_000, 256 if what != "group" else 200, 1024
    groups = rng.integers(0, num_groups, n).astype(np.uint8 if what != "group -1" else np.int16)
    cells, signs = rng.integers(0, m, n).astype(np.uint16), rng.integers(0, 2, n).astype(np.uint8)
    if what == "group":
        groups[where] = 255
    elif what == "cell":
        cells[where] = 65535
    elif what == "group -1":
        groups[where] = -1
    else:
        signs[where] = 2
    fold_signs_into_zeros(kernel, groups, cells, signs, num_groups, m, refused=what != "sign 2")


def fold_signs_into_zeros(kernel, groups, cells, signs, num_groups, m, refused):
    """Fold the reports into zero tables of ``num_groups × m``: refused (ValueError or IndexError) with nothing added
    when ``refused``, else equal to :func:`reference_signs`; the reference's sums (None when refused)."""
    counts, sums = np.zeros(num_groups, np.int64), np.zeros((num_groups, m), np.int64)
    with kernel_of(kernel) as k:
        if refused:
            with pytest.raises((ValueError, IndexError)):
                add_signs_by_group(groups, cells, signs, counts, sums, kernel=k)
            assert not counts.any() and not sums.any()
            return None
        add_signs_by_group(groups, cells, signs, counts, sums, kernel=k)
    want_counts, want_sums = np.zeros_like(counts), np.zeros_like(sums)
    reference_signs(groups, cells, signs, want_counts, want_sums)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(sums, want_sums)
    return want_sums


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("bad_at", [None, 150_000])
@pytest.mark.parametrize("bit", [0, 1])
def test_a_crowded_cell_moves_its_row_before_its_partial_sum_wraps(kernel, bad_at, bit):
    """HCMS's shape, 200,000 reports, 90 % of them in one cell of group 0 with one sign: far past the 32767 an int16
    partial sum holds, so that group's row moves into the int32 partial sums on the way, several times (the sums and
    counts exact); a bad report after the moves still adds nothing."""
    rng = np.random.default_rng(bit)
    n, m = 200_000, 1024
    groups, cells = rng.integers(0, 256, n).astype(np.uint8), rng.integers(0, m, n).astype(np.uint16)
    signs = rng.integers(0, 2, n).astype(np.uint8)
    crowd = rng.random(n) < 0.9
    groups[crowd], cells[crowd], signs[crowd] = 0, 5, bit
    if bad_at is not None:
        cells[bad_at] = m
    want_sums = fold_signs_into_zeros(kernel, groups, cells, signs, 256, m, refused=bad_at is not None)
    assert want_sums is None or abs(want_sums[0, 5]) > 5 * 32767


@compiled
def test_engines_are_named_and_switched():
    fk = bits_mod._foldkernel
    assert ENGINES[0] == "generic" and set(ENGINES) <= {"generic", "avx2", "avx512"}
    before = fk.use_engine()
    assert before == ENGINES[-1]  # the fastest is the default
    assert fk.use_engine("generic") == before and fk.use_engine(before) == "generic"
    with pytest.raises(ValueError, match="engine"):
        fk.use_engine("sse9")
    assert fk.use_engine() == before


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_group_out_of_range_adds_nothing(kernel):
    rows = packed_rows(np.random.default_rng(1), 50, 20, 0.5)
    groups = np.arange(50, dtype=np.int64) % 4
    groups[37] = 4
    counts, ones = np.zeros(4, np.int64), np.zeros((4, 20), np.int64)
    with kernel_of(kernel) as k, pytest.raises((ValueError, IndexError)):
        add_ones_by_group(groups, rows, counts, ones, kernel=k)
    assert not counts.any() and not ones.any()
    groups[37] = -1
    with kernel_of(kernel) as k, pytest.raises((ValueError, IndexError)):
        add_ones_by_group(groups, rows, counts, ones, kernel=k)
    assert not counts.any() and not ones.any()


def test_bad_shapes_and_kernels_are_refused():
    assert ones_by_group(np.zeros(0, np.uint8), np.zeros((0, 2), np.uint8), 3, 9)[1].shape == (3, 9)
    counts, ones = np.zeros(3, np.int64), np.zeros((3, 9), np.int64)
    with pytest.raises(ValueError, match="kernel"):
        add_ones_by_group(np.zeros(2, np.uint8), np.zeros((2, 2), np.uint8), counts, ones, kernel="fortran")
    with pytest.raises(ValueError, match="int64"):
        add_ones_by_group(np.zeros(2, np.uint8), np.zeros((2, 2), np.uint8), counts.astype(np.int32), ones)
    if bits_mod._foldkernel is not None:
        with pytest.raises(ValueError, match="rows"):
            add_ones_by_group(np.zeros(3, np.uint8), np.zeros((2, 2), np.uint8), counts, ones, kernel="compiled")
        with pytest.raises(TypeError, match="integers"):
            add_ones_by_group(np.zeros(2), np.zeros((2, 2), np.uint8), counts, ones, kernel="compiled")
        fk = bits_mod._foldkernel
        with pytest.raises(ValueError):  # the C entry points check their buffers themselves
            fk.fold_rows(b"\0\0", 1, b"\0" * 4, 2, 17, counts, ones, None, None, None, 0, None, None)
        with pytest.raises(ValueError, match="buffer sizes"):
            fk.fold_rows(b"\0\0", 1, b"\0" * 4, 2, 9, counts, None, None, None, None, 0, None, None)
        with pytest.raises(ValueError, match="width"):
            fk.fold_rows(b"\0\0", 3, b"\0" * 4, 2, 9, counts, ones, None, None, None, 0, None, None)
        with pytest.raises(TypeError, match="writable"):
            fk.fold_rows(b"\0\0", 1, b"\0" * 4, 2, 9, counts, b"\0" * 216, None, None, None, 0, None, None)
        with pytest.raises(ValueError, match="buffer sizes"):
            fk.add_signs_by_group(b"\0\0", 1, b"\0\0", 1, b"\0", 1, 9, counts, ones)
        with pytest.raises(ValueError, match="buffer sizes"):  # hits neither (nmasks + 1,) nor (G, nmasks + 1)
            fk.fold_rows(b"\0\0", 1, b"\0" * 4, 2, 9, None, None, None, b"\0", b"\0" * 12, 2, b"\0" * 3,
                         np.zeros(4, np.int64))
        assert not counts.any() and not ones.any()


# -- aggregates: binary frames through add_bytes vs Report objects folded row by row ----------------------------

PARAMS = {
    "rappor_k13_m5": RapporParams(13, 2, 5, 0.25, 0.75, 0.5),
    "rappor_k128_m64": RapporParams(128, 2, 64, 0.25, 0.75, 0.5),
    "rappor_k8_m1": RapporParams(8, 1, 1, 0.25, 0.75, 0.5),
    "cms_k3_m20": CmsParams(4.0, 3, 20),
    "cms_k256_m1024": CmsParams(4.0, 256, 1024),
    "hcms_k4_m16": HcmsParams(4.0, 4, 16),
    "sfp_small": SfpParams(2.0, 6.0, length=4, word_num_hashes=3, word_width=20, fragment_num_hashes=5,
                           fragment_width=12),
}
AGGREGATES = {"rappor": RapporAggregate, "cms": SketchAggregate, "hcms": SketchAggregate, "sfp": SfpAggregate}


def random_batch(params, n: int, rng: np.random.Generator) -> ReportBatch:
    columns = {}
    for f in params.schema:
        if f.kind == "uint":
            columns[f.name] = rng.integers(0, f.size, n).astype(np.min_scalar_type(f.size - 1))
        else:
            columns[f.name] = packed_rows(rng, n, f.size, 0.3)
    return ReportBatch(params.protocol, params.fingerprint, params.schema, columns)


def assert_same_state(a, b) -> None:
    """Every statistic but RAPPOR's bits-set-together counts and pair cells, whose splits are drawn from fresh coins on
    every fold (tests/jobs/test_rappor_evidence.py holds both kernels equal on the same coins)."""
    assert a.n == b.n and a.rejected == b.rejected
    for (name, x), y in zip(a._state().items(), b._state().values(), strict=True):
        if name not in ("together", "pair_cells"):
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("name", sorted(PARAMS))
@settings(max_examples=8, deadline=None, derandomize=True)
@given(n=st.one_of(st.sampled_from([0, 1, 255, 256]), st.integers(0, 400)), seed=st.integers(0, 2**32 - 1))
def test_frames_fold_like_reports_one_by_one(name, n, seed):
    params = PARAMS[name]
    aggregate = AGGREGATES[name.split("_")[0]]
    batch = random_batch(params, n, np.random.default_rng(seed))
    data = batch.to_bytes()
    fast = aggregate(params)
    assert fast.add_bytes(data) == n
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bits_mod, "FOLD_KERNEL", "numpy")
        numpy_only = aggregate(params)
        numpy_only.add_bytes(data)
        mp.setattr(rappor_mod, "add_ones_by_group", reference_add)
        mp.setattr(sketch_mod, "add_ones_by_group", reference_add)
        reference = aggregate(params)
        assert reference.add(list(batch.reports())) == n
    assert_same_state(fast, reference)
    assert_same_state(numpy_only, reference)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 300), seed=st.integers(0, 2**32 - 1), bad_share=st.sampled_from([0.0, 0.01, 0.3, 1.0]))
def test_batch_validation_rejects_exactly_the_elementwise_rule(n, seed, bad_share):
    params = PARAMS["rappor_k13_m5"]
    rng = np.random.default_rng(seed)
    batch = random_batch(params, n, rng)
    cohort, rows = batch.columns["cohort"], batch.columns["bits"]
    cohort[rng.random(n) < bad_share] = 5 + rng.integers(0, 3)  # out of [0, m)
    rows[rng.random(n) < bad_share, -1] |= np.uint8(0x20)  # a padding bit (13 bits: 3 padding bits)
    out_of_range = cohort >= 5
    bad_value = ((rows[:, -1] >> 5) != 0) & ~out_of_range
    want = [(int(i), "out_of_range") for i in np.flatnonzero(out_of_range)]
    want += [(int(i), "bad_value") for i in np.flatnonzero(bad_value)]
    seen: list[tuple[int, str]] = []
    agg = RapporAggregate(params)
    ok = ~(out_of_range | bad_value)
    assert agg.add(batch, on_reject=lambda i, err: seen.append((i, err.reason))) == int(ok.sum())
    assert seen == want
    assert agg.rejected == {k: v for k, v in (("out_of_range", int(out_of_range.sum())),
                                              ("bad_value", int(bad_value.sum()))) if v}
    counts, ones = np.zeros(5, np.int64), np.zeros((5, 13), np.int64)
    reference_add(cohort[ok], rows[ok], counts, ones)
    np.testing.assert_array_equal(agg.cohort_n, counts)
    np.testing.assert_array_equal(agg.ones, ones)


# -- zero-copy frames ---------------------------------------------------------------------------------------------


def test_frame_columns_are_views_of_the_input_bytes():
    params = PARAMS["rappor_k128_m64"]
    data = random_batch(params, 1000, np.random.default_rng(3)).to_bytes()
    (frame,) = list(scan_frames(data))
    whole = np.frombuffer(data, np.uint8)
    for name, column in frame.columns.items():
        assert isinstance(column, memoryview) and column.obj is data and column.readonly, name
    for name, arr in frame_to_batch(frame).columns.items():
        assert np.shares_memory(arr, whole), name


@pytest.mark.skipif(bits_mod._foldkernel is None, reason="the compiled fold kernel is not built")
def test_add_bytes_allocates_far_less_than_the_frames():
    """Parsing (columns, CRC-32), validation and the compiled fold copy no column and no frame. (The first fold
    of an aggregate also chooses, from a sample, the bits its poisoning statistics test: done before measuring.)"""
    params = PARAMS["rappor_k128_m64"]
    gen = np.random.default_rng(4)
    agg = RapporAggregate(params)
    agg.add_bytes(random_batch(params, 200_000, gen).to_bytes())
    data = random_batch(params, 200_000, gen).to_bytes()  # 3.4 MB in one frame
    tracemalloc.start()
    try:
        agg.add_bytes(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert agg.n == 400_000
    assert peak < len(data) // 8, peak
