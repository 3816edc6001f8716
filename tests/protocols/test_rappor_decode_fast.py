"""Vectorized RAPPOR decoding paths against their scalar references (issue 16, item 5), and the
import-time contract of ``ldp.decoders`` (item 2): equal tables, maps and designs, exactly."""

from __future__ import annotations

import subprocess
import sys

import mmh3
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from ldp.batch.murmur import bucket_table, murmur3_32, namespaced_bucket_table, namespaced_murmur3_32
from ldp.batch.rappor import bloom_index_table, bloom_table
from ldp.batch.threads import threads_for
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.decoders.rappor_fit import _design
from ldp.encoders.rappor import RapporParams, bloom_bits, bloom_filter
from ldp.hashing import namespaced, value_bytes

SETTINGS = settings(max_examples=60, deadline=None)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)  # no lone surrogates
VALUE = st.one_of(TEXT, st.binary(max_size=40), st.text(min_size=100, max_size=300), st.binary(min_size=64,
                                                                                                max_size=200))
FIXED = ["", b"", "é", "e\u0301", "日本語のテキスト", "🙂" * 9, b"\x00", b"\x00\x00\x00\x00", "x" * 257, "abc", "abcd"]


def _unique(values: list) -> list:
    """Candidates must be distinct as bytes: keep the first of each."""
    seen: set[bytes] = set()
    return [v for v in values if not (value_bytes(v) in seen or seen.add(value_bytes(v)))]


CANDIDATES = st.lists(VALUE, max_size=25).map(lambda vs: _unique(FIXED + vs))


@st.composite
def ldp_params(draw: st.DrawFn) -> RapporParams:
    k = draw(st.sampled_from([1, 2, 3, 16, 128, 1000]))
    h = draw(st.integers(1, min(k, 4)))
    m = draw(st.sampled_from([1, 2, 3, 8, 64]))
    return RapporParams(k, h, m, 0.25, 0.75, 0.5)


@st.composite
def google_params(draw: st.DrawFn) -> RapporParams:
    k = draw(st.sampled_from([1, 2, 3, 16, 32]))
    return RapporParams(k, draw(st.integers(1, min(k, 16))), draw(st.sampled_from([1, 2, 5])), 0.25, 0.75, 0.5,
                        mode="google")


def _reference_indices(params: RapporParams, cands: list) -> np.ndarray:
    """The scalar path: one :func:`bloom_bits` call per candidate and cohort."""
    return np.array([[bloom_bits(params, v, c) for c in range(params.num_cohorts)] for v in cands],
                    dtype=np.int64).reshape(len(cands), params.num_cohorts, params.num_hashes)


def _reference_map(params: RapporParams, cands: list) -> tuple[sp.csc_matrix, np.ndarray]:
    """The pattern (COO with duplicates summed) and representatives (first equal column) built per candidate."""
    m, k, d = params.num_cohorts, params.num_bloombits, len(cands)
    rows = (np.arange(m)[None, :, None] * k + _reference_indices(params, cands)).reshape(d, -1)
    cols = np.repeat(np.arange(d), rows.shape[1])
    pattern = sp.csc_matrix((np.ones(cols.size), (rows.reshape(-1), cols)), shape=(m * k, d))
    pattern.sum_duplicates()
    pattern.data[:] = 1.0
    first: dict[bytes, int] = {}
    rep = np.array([first.setdefault(pattern.indices[pattern.indptr[v]:pattern.indptr[v + 1]].tobytes(), v)
                    for v in range(d)], dtype=np.int64)
    return pattern, rep


def _same_sparse(a: sp.spmatrix, b: sp.spmatrix) -> None:
    a, b = sp.csc_matrix(a), sp.csc_matrix(b)
    assert a.shape == b.shape and a.has_sorted_indices and b.has_sorted_indices
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)


# -- hashing -------------------------------------------------------------------------------------------
@SETTINGS
@given(keys=st.lists(st.binary(max_size=70), max_size=30),
       seeds=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=5))
def test_murmur_equals_mmh3(keys, seeds):
    expected = np.array([[mmh3.hash(k, s, signed=False) for s in seeds] for k in keys],
                        dtype=np.uint32).reshape(len(keys), len(seeds))
    assert np.array_equal(murmur3_32(keys, seeds), expected)


@SETTINGS
@given(keys=st.lists(st.binary(max_size=70), max_size=20),
       namespaces=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4),
       seeds=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=3))
def test_namespaced_murmur_equals_mmh3_of_the_namespaced_bytes(keys, namespaces, seeds):
    expected = np.array([[[mmh3.hash(namespaced(ns, key), s, signed=False) for s in seeds] for ns in namespaces]
                         for key in keys], dtype=np.uint32).reshape(len(keys), len(namespaces), len(seeds))
    assert np.array_equal(namespaced_murmur3_32(keys, namespaces, seeds), expected)


@SETTINGS
@given(values=CANDIDATES, width=st.sampled_from([1, 2, 3, 16, 1000, 2**31 + 1, 2**32 - 1, 2**32]))
def test_bucket_tables_equal_the_scalar_buckets(values, width):
    from ldp.hashing import bucket

    assert np.array_equal(bucket_table(values, width, [0, 5]),
                          np.array([[bucket(v, width, s) for s in (0, 5)] for v in values]).reshape(-1, 2))
    got = namespaced_bucket_table(values, width, [0, 1, 70_000], [0, 3])
    ref = np.array([[[bucket(namespaced(ns, v), width, s) for s in (0, 3)] for ns in (0, 1, 70_000)]
                    for v in values]).reshape(-1, 3, 2)
    assert np.array_equal(got, ref)


def test_hash_inputs_are_checked():
    with pytest.raises(ValueError, match="2\\*\\*32"):
        murmur3_32([b"a"], [-1])
    with pytest.raises(ValueError, match="2\\*\\*32"):
        namespaced_murmur3_32([b"a"], [2**32], [0])
    with pytest.raises(TypeError, match="integers"):
        murmur3_32([b"a"], [0.5])
    with pytest.raises(ValueError, match="buckets"):
        bucket_table(["a"], 0, [0])
    with pytest.raises(TypeError, match="str or bytes"):
        namespaced_bucket_table(["a", 3], 16, [0], [0])
    assert murmur3_32([], [0, 1]).shape == (0, 2) and namespaced_murmur3_32([], [0], [0, 1]).shape == (0, 1, 2)


# -- Bloom tables ------------------------------------------------------------------------------------
@SETTINGS
@given(params=st.one_of(ldp_params(), google_params()), cands=CANDIDATES)
def test_bloom_index_table_equals_bloom_bits(params, cands):
    got = bloom_index_table(params, cands)
    assert got.dtype == np.int64 and np.array_equal(got, _reference_indices(params, cands))


@settings(max_examples=25, deadline=None)
@given(params=st.one_of(ldp_params(), google_params()), cands=CANDIDATES)
def test_bloom_table_equals_bloom_filter(params, cands):
    packed = bloom_table(params, cands)
    k = params.num_bloombits
    bits = np.unpackbits(packed, axis=2, bitorder="little")[:, :, :k]
    weights = [1 << i for i in range(k)]
    got = [[sum(w for w, b in zip(weights, row.tolist(), strict=True) if b) for row in per_cohort]
           for per_cohort in bits]
    assert got == [[bloom_filter(params, v, c) for c in range(params.num_cohorts)] for v in cands]


# -- candidate maps ------------------------------------------------------------------------------------
@SETTINGS
@given(params=st.one_of(ldp_params(), google_params()), cands=CANDIDATES)
def test_candidate_map_equals_the_per_candidate_construction(params, cands):
    cmap = CandidateMap.from_candidates(params, cands)
    pattern, rep = _reference_map(params, cands)
    _same_sparse(cmap.pattern, pattern)
    assert np.array_equal(cmap.representative, rep)


@SETTINGS
@given(k=st.sampled_from([1, 2, 3, 4]), h=st.integers(1, 2), m=st.integers(1, 2),
       extra=st.lists(TEXT, max_size=30))
def test_indistinguishable_groups_match_the_reference(k, h, m, extra):
    """Tiny filters: many candidates share every bit, in groups; the map and its groups are unchanged."""
    params = RapporParams(max(k, h), h, m, 0.25, 0.75, 0.5)
    cands = _unique([f"d{i}" for i in range(40)] + extra)
    cmap = CandidateMap.from_candidates(params, cands)
    pattern, rep = _reference_map(params, cands)
    _same_sparse(cmap.pattern, pattern)
    assert np.array_equal(cmap.representative, rep)
    groups: dict[int, list[str]] = {}
    for v, r in enumerate(rep.tolist()):
        groups.setdefault(r, []).append(cands[v])
    assert cmap.duplicates == [g for g in groups.values() if len(g) > 1]
    back = CandidateMap.from_google_map(params, cmap.to_google_map())  # the other entry to the same builder
    _same_sparse(back.pattern, pattern)
    assert np.array_equal(back.representative, rep)


def test_empty_candidate_map():
    params = RapporParams(16, 2, 4, 0.25, 0.75, 0.5)
    cmap = CandidateMap.from_candidates(params, [])
    assert cmap.pattern.shape == (64, 0) and cmap.representative.shape == (0,) and cmap.duplicates == []
    assert CandidateMap.from_google_map(params, "").pattern.shape == (64, 0) and cmap.to_google_map() == ""
    est = decode(RapporAggregate.simulate(params, {"a": 100}, rng=1), [])
    assert est.items == [] and any("no candidates" in n for n in est.notes)


# -- decoding ------------------------------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), empty=st.lists(st.integers(0, 7), max_size=7))
def test_design_equals_diag_times_pattern(seed, empty):
    """``X = diag(N_c/N)·pattern`` on the rows of non-empty cohorts, exactly as the sparse product gives it."""
    params = RapporParams(16, 2, 8, 0.25, 0.75, 0.5)
    agg = RapporAggregate.simulate(params, {"a": 3000, "b": 1000, "c": 50}, rng=seed)
    agg.cohort_n[empty] = 0  # cohorts without reports are dropped from the design
    agg.ones[empty] = 0
    cmap = CandidateMap.from_candidates(params, ["a", "b", "c", "d"])
    x, *_ = _design(agg, cmap)
    keep = np.repeat(agg.cohort_n > 0, params.num_bloombits)
    n_row = np.repeat(agg.cohort_n, params.num_bloombits)[keep].astype(np.float64)
    _same_sparse(x, sp.diags(n_row / agg.n) @ cmap.pattern[np.flatnonzero(keep)])


def test_small_steps_run_on_one_blas_thread():
    from threadpoolctl import threadpool_info, threadpool_limits

    decode(RapporAggregate.simulate(RapporParams(8, 2, 2, 0.25, 0.75, 0.5), {"a": 100}, rng=1), ["a"])  # loads BLAS
    with threadpool_limits(limits=2, user_api="blas"):  # the suite's workers run one thread (tests/conftest.py)
        blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
        assert blas and all(lib["num_threads"] == 2 for lib in blas)
        with threads_for(1e6):
            assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
        with threads_for(1e12):  # a large step: left as it was
            assert all(lib["num_threads"] == 2 for lib in threadpool_info() if lib["user_api"] == "blas")


def test_importing_the_decoders_loads_neither_scipy_nor_scikit_learn():
    """``import ldp.decoders`` (and ldp.batch) stays fast: scipy and scikit-learn load only to fit."""
    code = ("import sys, ldp.decoders, ldp.batch.rappor, ldp.decoders.rappor_decode; "
            "print(sorted(m for m in ('scipy', 'sklearn', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
