"""Apple CMS and HCMS: parameters, exact privacy audit, batch path, aggregate, unbiasedness and exact variance."""

from __future__ import annotations

import math

import mmh3
import numpy as np
import pytest

from ldp.batch.murmur import murmur3_32
from ldp.decoders.base import Aggregate
from ldp.decoders.sketch import SketchAggregate, fwht
from ldp.encoders.cms import CmsEncoder, CmsParams
from ldp.encoders.hcms import HcmsEncoder, HcmsParams
from ldp.reports import Report

KINDS = [(CmsParams, CmsEncoder), (HcmsParams, HcmsEncoder)]


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1), "epsilon"), (dict(num_hashes=0), "num_hashes"),
    (dict(width=1), "width"),
])
@pytest.mark.parametrize("params_type", [CmsParams, HcmsParams])
def test_params_are_validated(params_type, kwargs, match):
    with pytest.raises(ValueError, match=match):
        params_type(**{**dict(epsilon=2.0, num_hashes=4, width=16), **kwargs})


def test_hcms_width_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        HcmsParams(2.0, 4, 24)
    assert CmsParams(2.0, 4, 24).width == 24


def test_vectorized_murmur_equals_mmh3():
    rnd = np.random.default_rng(3)
    keys = [rnd.bytes(int(n)) for n in rnd.integers(0, 30, 500)]
    seeds = [0, 1, 7, 2**31, 2**32 - 1]
    expected = np.array([[mmh3.hash(k, s, signed=False) for s in seeds] for k in keys], dtype=np.uint32)
    assert (murmur3_32(keys, seeds) == expected).all()


def test_fwht_is_the_hadamard_product():
    from scipy.linalg import hadamard

    x = np.random.default_rng(0).normal(size=(3, 16))
    assert np.allclose(fwht(x), x @ hadamard(16))


# -- exact privacy audit ---------------------------------------------------------------------------


# -- client and batch paths ------------------------------------------------------------------------
@pytest.mark.parametrize("params_type, encoder_type", KINDS)
def test_bad_values_and_ledger(params_type, encoder_type):
    from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost

    params = params_type(1.0, 4, 16)
    with pytest.raises(TypeError, match="str or bytes"):
        encoder_type(params).encode(3)
    ledger = BudgetLedger(metrics={"emoji": BudgetPolicy(per_window=PrivacyCost(2.0))})
    enc = encoder_type(params, ledger=ledger, metric="emoji")
    enc.encode("x")
    enc.encode("x")  # no memoization: every report costs ε
    with pytest.raises(BudgetExceeded):
        enc.encode("x")
    assert ledger.spent("emoji").epsilon == pytest.approx(2.0)


def test_cms_fold_counts_bits_per_row():
    params = CmsParams(1.0, 5, 20)
    batch = CmsEncoder(params).encode_batch(np.arange(3000) % 4, rng=1, candidates=["a", "b", "c", "d"])
    agg = SketchAggregate(params)
    agg.add(batch)
    bits = np.unpackbits(batch.columns["bits"], axis=1, bitorder="little")[:, :20]
    expected = np.zeros((5, 20), np.int64)
    np.add.at(expected, batch.columns["hash"].astype(np.int64), bits)
    assert (agg.sums == expected).all()
    back = Aggregate.from_bytes(agg.to_bytes())
    assert (back.sums == agg.sums).all() and back.n == 3000


@pytest.mark.parametrize("params_type", [CmsParams, HcmsParams])
def test_bad_reports_are_rejected_with_reasons(params_type):
    params = params_type(1.0, 4, 16)
    agg = SketchAggregate(params)
    enc = (CmsEncoder if params_type is CmsParams else HcmsEncoder)(params, rng=1, simulation=True)
    good = enc.encode("x")
    payload = dict(good.payload)
    payload["hash"] = 4
    bad_hash = Report(params.protocol, params.fingerprint, payload)
    other = params_type(2.0, 4, 16)
    foreign = (CmsEncoder if params_type is CmsParams else HcmsEncoder)(other, rng=1, simulation=True).encode("x")
    assert agg.add([good, bad_hash, foreign]) == 1
    assert agg.rejected == {"out_of_range": 1, "wrong_fingerprint": 1}


# -- unbiasedness and exact variance, over hash draws ---------------------------------------------------


def test_heavy_hitters_and_standard_errors():
    params = CmsParams(4.0, 64, 256)
    truth = {f"w{i}": 40_000 // (i + 1) for i in range(20)}
    cands = list(truth) + [f"none{i}" for i in range(200)]
    agg = SketchAggregate.simulate(params, truth, rng=7)
    hh = agg.heavy_hitters(cands)
    assert hh.items[0] == "w0" and {f"w{i}" for i in range(5)} <= set(hh.items)
    # a fixed hash draw biases items that collide with heavy ones: a few false hits are possible
    assert len(set(hh.items) - set(truth)) <= 2
    est = agg.estimate(cands)
    t = np.array([truth.get(c, 0) for c in cands])
    covered = ((est.ci_low <= t) & (t <= est.ci_high)).mean()
    assert covered > 0.95 - 3 * math.sqrt(0.05 * 0.95 / len(cands))


@pytest.mark.parametrize("candidates", [1, 63, 64, 300])
def test_the_oracle_on_the_candidates_cells_equals_it_on_the_whole_sketch(candidates):
    """With fewer candidates than buckets, CMS's oracle de-biases only the sums at their cells: the same numbers,
    bit for bit, as read from the whole de-biased sketch (which it uses from as many candidates as buckets on)."""
    from ldp.batch.sketch import sketch_buckets

    params = CmsParams(4.0, 16, 64)
    agg = SketchAggregate.simulate(params, {f"w{i}": 500 // (i + 1) for i in range(30)}, rng=3)
    table = sketch_buckets(params, [f"w{i}" for i in range(candidates)])
    for got, want in zip(agg.oracle(table), agg.oracle(table, sketch=agg.sketch()), strict=True):
        assert np.array_equal(got, want)


def test_large_epsilon_is_charged_as_realized_or_refused():
    assert HcmsParams(40.0, 2, 4).privacy_cost.epsilon == pytest.approx(40.0047107, abs=1e-6)
    assert CmsParams(4.0, 2, 4).privacy_cost.epsilon == 4.0
    with pytest.raises(ValueError, match="too large"):
        HcmsParams(45.0, 2, 4)
    with pytest.raises(TypeError, match="CmsParams or HcmsParams"):
        from ldp.encoders.randomized_response import GRRParams

        SketchAggregate(GRRParams(1.0, 4))


def test_string_values_keep_trailing_nul_bytes():
    params = CmsParams(2.0, 4, 16)
    batch = CmsEncoder(params).encode_batch(["a\x00", "a"], rng=1)
    assert batch.n == 2  # two distinct values: "a\x00" was not truncated to "a"
    from ldp.batch import values_and_candidates

    idx, cands = values_and_candidates(["a\x00", "a", "a\x00"], None)
    assert sorted(cands) == ["a", "a\x00"] and idx[0] == idx[2] != idx[1]
