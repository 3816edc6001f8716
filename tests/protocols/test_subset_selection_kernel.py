"""Subset Selection's compiled batch kernel, its Bernoulli-columns route (``fixup_rows``): equal to its Python
transcription draw for draw, refusing bad buffers, and chosen by the cost model only where it is cheaper."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ldp.batch.subset_selection as _ss_batch
from ldp.encoders.subset_selection import SSParams

pytestmark = pytest.mark.skipif(not _ss_batch.kernel_in_use(), reason="the compiled SS kernel is not built")


def _both(d: int, w: int, threshold: int, planes: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    v, own = gen.integers(0, d, size), (gen.random(size) < 0.5).astype(np.uint8)
    key = gen.bit_generator.random_raw(4)
    fast, ref = np.full((size, (d + 7) // 8), 0xA5, np.uint8), np.zeros((size, (d + 7) // 8), np.uint8)
    _ss_batch._sskernel.fixup_rows(key, v, own, w, d, threshold, planes, fast)
    _ss_batch.fixup_rows_reference(key, v, own, w, d, threshold, planes, ref)
    bits = np.unpackbits(fast, axis=1, bitorder="little")
    assert not bits[:, d:].any() and np.all(bits.sum(axis=1) == w)  # rows overwritten, exactly ω ones
    assert np.all(bits[np.arange(size), v] == own)
    return fast, ref


@pytest.mark.parametrize("d, w, threshold, planes, size", [
    (2, 1, 1, 1, 40), (5, 2, 1, 1, 300), (16, 4, 1, 2, 200), (65, 20, 5, 4, 100), (100, 27, 1, 2, 50),
    (1024, 275, 1, 2, 6), (1024, 275, 17, 6, 6), (1024, 387, 3, 3, 6), (200, 3, 1, 1, 20)])
def test_compiled_fixup_rows_equal_their_python_transcription(d, w, threshold, planes, size):
    fast, ref = _both(d, w, threshold, planes, size, d + threshold)
    assert np.array_equal(fast, ref)


@settings(max_examples=40, deadline=None)
@given(d=st.integers(2, 140), data=st.data())
def test_fixup_rows_equal_the_transcription_at_any_size_and_threshold(d, data):
    w = data.draw(st.integers(1, d - 1))
    planes = data.draw(st.integers(1, 10))
    threshold = data.draw(st.integers(1, (1 << planes) - 1))
    fast, ref = _both(d, w, threshold, planes, 5, data.draw(st.integers(0, 2**32)))
    assert np.array_equal(fast, ref)


def test_compiled_fixup_rows_refuses_inconsistent_buffers():
    v, own, rows, seed = np.array([0, 1]), np.zeros(2, np.uint8), np.zeros((2, 1), np.uint8), np.ones(4, np.uint64)
    for args in ((seed, v, own, 0, 5, 1, 1, rows), (seed, v, own, 5, 5, 1, 1, rows), (seed, v, own, 2, 5, 0, 1, rows),
                 (seed, v, own, 2, 5, 2, 1, rows), (seed, v, own, 2, 5, 1, 0, rows), (seed, v, own, 2, 5, 1, 33, rows),
                 (seed, v, own[:1], 2, 5, 1, 1, rows), (seed, np.array([0, 9]), own, 2, 5, 1, 1, rows),
                 (seed[:3], v, own, 2, 5, 1, 1, rows), (np.zeros(4, np.uint64), v, own, 2, 5, 1, 1, rows)):
        with pytest.raises(ValueError, match="fixup_rows"):
            _ss_batch._sskernel.fixup_rows(*args)


def test_the_cost_model_takes_floyd_for_small_subsets_and_columns_for_large():
    assert _ss_batch.subset_method(16, 4, 0.5) is None and _ss_batch.subset_method(1024, 18, 0.5) is None
    big = SSParams(1.0, 1024)
    assert _ss_batch.subset_method(1024, big.omega, big.p) == (1, 2)  # ω/(d−1) = 0.27: columns at 1/4
    for d in (3, 10, 100, 1024, 65536):
        for w in {1, d // 4, d // 2, d - 1} - {0}:
            method = _ss_batch.subset_method(d, w, 0.5)
            assert method is None or 0 < method[0] < 1 << method[1] <= 256


def test_a_batch_through_the_columns_route_has_omega_ones_and_the_own_rate():
    params, size = SSParams(1.0, 1024), 20_000
    values = np.random.default_rng(3).integers(0, 1024, size)
    bits = np.unpackbits(_ss_batch.ss_encode_batch(params, values, 4), axis=1, bitorder="little")
    assert np.all(bits.sum(axis=1) == params.omega)
    own = bits[np.arange(size), values].mean()
    assert abs(own - params.p) < 5 * np.sqrt(params.p * (1 - params.p) / size)
