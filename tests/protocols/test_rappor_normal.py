"""The RAPPOR decoder's normal-equations fit (issue 61 item 5) against the pivoted-QR least squares it replaces when
the Gram matrix is well conditioned: the same coefficients, standard errors, dispersion, scale, statistics and
p-values up to rounding on random designs; ``None`` (and so the QR, unchanged) on rank-deficient ones; and the same
decode, detections equal, with either path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import ldp.decoders.rappor_normal as rn
from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.decoders.rappor_fit import _design, _fit
from ldp.encoders.rappor import RapporParams
from ldp.regression import least_squares
from ldp.simulation.collect import zipf

SETTINGS = settings(max_examples=60, deadline=None)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """The reference fits (the pivoted QR, the condition numbers) on one BLAS thread, as the decoder runs steps this
    small (:mod:`ldp.batch.threads`): with the library's default threads, one per core, they spin against the
    suite's other workers, 20 times the CPU (measured: 6.6 CPU-s against 0.3 for the 60 examples)."""
    import scipy.linalg  # noqa: F401  # its BLAS loaded first, so that the limit reaches it
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _bloom_design(gen: np.random.Generator, k: int, h: int, m: int, p: int) -> sp.csc_matrix:
    """A RAPPOR-like design: each column has ``h`` hashed bits in each of ``m`` cohorts of ``k`` bits, each cohort's
    rows scaled by a positive cohort share."""
    rows = (gen.integers(0, k, (p, m, h)) + np.arange(m)[None, :, None] * k).reshape(p, m * h)
    cols = np.repeat(np.arange(p), m * h)
    x = sp.csc_matrix((np.ones(rows.size), (rows.ravel(), cols)), shape=(m * k, p))
    x.data[:] = 1.0  # hashes that collide within a cohort set one bit
    share = gen.uniform(0.5, 1.5, m) / m
    return sp.csc_matrix(sp.diags(np.repeat(share, k)) @ x)


def _assert_same_fit(fast: Any, ref: Any) -> None:
    scale = max(float(np.abs(ref.coef).max()), 1e-300)
    np.testing.assert_allclose(fast.coef, ref.coef, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(fast.std_error, ref.std_error, rtol=1e-9)
    np.testing.assert_allclose(fast.statistic(), ref.statistic(), rtol=0, atol=1e-7 * max(1.0, np.abs(
        ref.statistic()).max()))
    np.testing.assert_allclose(fast.p_values("greater"), ref.p_values("greater"), rtol=1e-6, atol=1e-12)
    assert fast.df == ref.df
    assert fast.scale == pytest.approx(ref.scale, rel=1e-9)
    if np.isfinite(ref.dispersion):
        assert fast.dispersion == pytest.approx(ref.dispersion, rel=1e-8, abs=1e-12)
    else:
        assert not np.isfinite(fast.dispersion)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([8, 16, 32, 128]), h=st.integers(1, 4),
       m=st.sampled_from([1, 2, 4, 16]), fill=st.floats(0.05, 0.5), variance=st.sampled_from(["known",
                                                                                              "conservative"]))
def test_normal_equations_agree_with_least_squares(seed: int, k: int, h: int, m: int, fill: float,
                                                   variance: str) -> None:
    gen = np.random.default_rng(seed)
    p = max(1, int(fill * k * m))
    x = _bloom_design(gen, k, min(h, k), m, p)
    coef = np.where(gen.random(p) < 0.2, gen.uniform(0, 1e4, p), 0.0)
    y = x @ coef + gen.normal(0, 30.0, x.shape[0])
    w = gen.uniform(1e-4, 1e-2, x.shape[0])
    fast = rn.normal_equations_fit(x, y, w, variance)
    ref = least_squares(x, y, weights=w, variance=variance)
    if fast is None:  # declined: only for designs the QR finds rank deficient or that are ill conditioned
        a = x.toarray() * np.sqrt(w)[:, None]
        norms = np.linalg.norm(a, axis=0)
        assert ref.rank < p or not norms.all() or np.linalg.cond(a / norms) > 1e3
        return
    assert ref.rank == p and not ref.aliased.any()
    _assert_same_fit(fast, ref)


@pytest.mark.parametrize("how", ["duplicate", "sum", "zero"])
def test_rank_deficient_designs_are_left_to_the_qr(how: str) -> None:
    gen = np.random.default_rng(3)
    x = _bloom_design(gen, 32, 2, 8, 40).tolil()
    if how == "duplicate":
        x[:, 5] = x[:, 7]
    elif how == "sum":
        x[:, 5] = x[:, 7] + x[:, 9]
    else:
        x[:, 5] = 0.0
    x = sp.csc_matrix(x)
    y, w = gen.normal(size=x.shape[0]), gen.uniform(0.5, 2.0, x.shape[0])
    assert rn.normal_equations_fit(x, y, w, "conservative") is None
    fit, resid, scale = _fit(x, y, w, np.arange(x.shape[1]))
    ref = least_squares(x, y, weights=w, variance="conservative")
    assert fit.aliased.any()
    np.testing.assert_array_equal(fit.coef, ref.coef)
    np.testing.assert_array_equal(fit.std_error, ref.std_error)
    assert scale == ref.scale


def test_declines_what_it_does_not_do() -> None:
    x = _bloom_design(np.random.default_rng(1), 16, 2, 2, 40)  # more columns than rows
    y, w = np.ones(x.shape[0]), np.ones(x.shape[0])
    assert rn.normal_equations_fit(x, y, w, "conservative") is None
    assert rn.normal_equations_fit(x[:, :4], y, w, "estimated") is None
    fit = rn.normal_equations_fit(x[:, :4], y, w, "known")
    assert fit is not None and fit.scale == 1.0
    with pytest.raises(ValueError, match="greater"):
        fit.p_values("two-sided")


def _case(params: RapporParams, d: int, n: int, seed: int) -> tuple[RapporAggregate, CandidateMap]:
    truth = [f"v{i}" for i in range(1, 41)]
    cands = truth + [f"v{i}" for i in range(41, d + 1)]
    agg = RapporAggregate.simulate(params, zipf(len(truth), 1.0).counts(n, exact=True), np.random.default_rng(seed),
                                   values=truth)
    return agg, CandidateMap.from_candidates(params, cands)


@pytest.mark.parametrize(("params", "d", "options"), [
    (RapporParams(128, 2, 16, 0.25, 0.75, 0.5), 1024, {}),
    (RapporParams(128, 2, 16, 0.0, 1.0, 0.5), 1024, {"background": True}),
    (RapporParams(16, 2, 32, 0.35, 0.65, 0.4), 130, {"correction": "holm"}),
    (RapporParams(16, 2, 64, 0.5, 0.75, 0.5), 1200, {"selection": "lasso"}),
])
def test_decode_is_the_same_with_either_fit(monkeypatch: pytest.MonkeyPatch, params: RapporParams, d: int,
                                            options: dict[str, Any]) -> None:
    agg, cmap = _case(params, d, 200_000, 7)
    calls: list[bool] = []
    real = rn.normal_equations_fit

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(rn, "normal_equations_fit", spy)
    fast = decode(agg, cmap, **options)
    assert calls and all(calls)  # the normal equations answered every fit
    monkeypatch.setattr(rn, "normal_equations_fit", lambda *a, **k: None)
    ref = decode(agg, cmap, **options)
    np.testing.assert_array_equal(fast.detected, ref.detected)
    np.testing.assert_array_equal(fast.extra["selected"], ref.extra["selected"])
    scale = np.nanmax(np.abs(ref.count))
    np.testing.assert_allclose(fast.count, ref.count, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(fast.std_error, ref.std_error, rtol=1e-9)
    np.testing.assert_allclose(fast.extra["p_value"], ref.extra["p_value"], rtol=1e-6, atol=1e-12)
    assert fast.summary["dispersion"] == pytest.approx(ref.summary["dispersion"], rel=1e-8)


def test_gram_is_the_dense_product() -> None:
    x = _bloom_design(np.random.default_rng(5), 32, 3, 4, 50)
    dense = x.toarray()
    np.testing.assert_allclose(rn.gram(x), dense.T @ dense, rtol=1e-14, atol=1e-15)


def test_design_weights_are_what_the_fit_sees() -> None:
    agg, cmap = _case(RapporParams(32, 2, 8, 0.25, 0.75, 0.5), 100, 50_000, 2)
    x, y, w, _ = _design(agg, cmap)
    fast = rn.normal_equations_fit(x, y, w, "conservative")
    assert fast is not None
    _assert_same_fit(fast, least_squares(x, y, weights=w, variance="conservative"))
