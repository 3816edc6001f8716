"""Local hashing: BLH and OLH (params, hash family, server kernel, estimator, wire format, client)."""

from __future__ import annotations

import json
import math

import mmh3
import numpy as np
import pytest

import ldp.batch.local_hashing as lhb
from ldp.batch.murmur import murmur3_32
from ldp.decoders.base import Aggregate
from ldp.decoders.local_hashing import LocalHashingAggregate, lh_per_user_variance, lh_variance
from ldp.encoders.local_hashing import BLHParams, OLHEncoder, OLHParams, lh_hash, olh_width
from ldp.privacy.accountant import BudgetLedger
from ldp.protocols import get_protocol

LABELS = ("a", "b", "c")
BLH = BLHParams(1.0, 3, LABELS)
OLH = OLHParams(2.0, 3, LABELS)


def encoder(params, **kw):
    return get_protocol(params.protocol).encoder_type(params, **kw)


# ------------------------------------------------------------------------------------------- params
@pytest.mark.parametrize("make, rule", [
    (lambda: OLHParams(0.0, 3), "epsilon must be finite and > 0"),
    (lambda: BLHParams(math.inf, 3), "epsilon must be finite"),
    (lambda: OLHParams(1.0, 1), "domain_size must be in"),
    (lambda: OLHParams(1.0, 3.0), "domain_size must be an int"),
    (lambda: BLHParams(1.0, 2, ("a",)), "labels must have"),
    (lambda: BLHParams(1.0, 2, ("a", "a")), "labels must be distinct"),
    (lambda: BLHParams(1.0, 2, ("a", 1)), "labels must be strings"),
    (lambda: BLHParams(1.0, 3, seed_range=0), "seed_range must be in"),
    (lambda: BLHParams(1.0, 3, seed_range=2**32 + 1), "seed_range must be in"),
    (lambda: BLHParams(50.0, 3), "too large"),
    (lambda: OLHParams(25.0, 3), "exceeds 2\\*\\*32"),
    (lambda: OLHParams(1e3, 3), "exceeds 2\\*\\*32"),
    (lambda: BLHParams(1e-20, 3), "too small"),
])
def test_params_refused_naming_the_rule(make, rule):
    with pytest.raises((ValueError, TypeError), match=rule):
        make()


def test_params_probabilities_width_and_discovery():
    assert [olh_width(e) for e in (0.1, 0.5, 1.0, 2.0, 4.0)] == [2, 3, 4, 8, 56]
    assert BLH.g == 2 and OLH.g == 8 and OLHParams(4.0, 3).g == 56
    for params in (BLH, OLH, OLHParams(0.5, 10), OLHParams(4.0, 10)):
        assert type(params).from_dict(json.loads(json.dumps(params.to_dict()))) == params
        proto = get_protocol(params.protocol)
        assert proto.params_type is type(params) and proto.aggregate_type is LocalHashingAggregate
        e, g = math.exp(params.epsilon), params.g
        assert params.p == pytest.approx(e / (e + g - 1), rel=1e-15) and params.q_star == 1 / g
        assert params.q == pytest.approx(1 / (e + g - 1), rel=1e-14) and params.p_star == params.p
        assert params.effective_epsilon == pytest.approx(params.epsilon, rel=1e-12)
        assert params.privacy_cost.epsilon == max(params.epsilon, params.effective_epsilon)
        assert [f.size for f in params.schema] == [2**32, g]
    big = OLHParams(math.log(2**32 - 1), 3)  # the largest g, 2^32: y spans the whole hash
    agg, batch = LocalHashingAggregate(big), OLHEncoder(big).encode_batch(np.arange(3), rng=1)
    assert big.g == 2**32 and agg.add(batch) == 3
    pairs = list(zip(batch.columns["seed"].tolist(), batch.columns["y"].tolist(), strict=True))
    assert agg.support.tolist() == [sum(lh_hash(v, s, 2**32) == y for s, y in pairs) for v in range(3)]
    assert OLH.hash_of("b", 7) == lh_hash(1, 7, 8) == mmh3.hash((1).to_bytes(4, "little"), 7, signed=False) % 8


@pytest.mark.parametrize("params, bad", [(BLH, [3, -1, "z", 1.0, True, None]), (OLH, [3, "z", b"a"])])
def test_values_refused_before_any_charge(params, bad):
    ledger = BudgetLedger()
    enc = encoder(params, ledger=ledger, metric="m")
    for value in bad:
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    enc.encode("b")
    assert ledger.spent("m", "lifetime").epsilon == params.privacy_cost.epsilon


# ------------------------------------------------------------------------------------ exact audits


# ------------------------------------------------------------------------------------ the hash family
def test_vectorized_hash_is_mmh3():
    gen = np.random.default_rng(0)
    seeds = np.concatenate([np.array([0, 1, 2**31, 2**32 - 1], np.uint64), gen.integers(0, 2**32, 300, np.uint64)])
    items = np.concatenate([np.array([0, 1, 255, 256, 2**32 - 1], np.uint64), gen.integers(0, 2**32, 300, np.uint64)])
    got = lhb.lh_hashes(seeds[:, None], items[None, :])
    want = [[mmh3.hash(int(v).to_bytes(4, "little"), int(s), signed=False) for v in items] for s in seeds]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.uint32))
    keys = [int(v).to_bytes(4, "little") for v in items]
    np.testing.assert_array_equal(got.T, murmur3_32(keys, seeds))  # and the package's general kernel
    with pytest.raises(ValueError, match="in \\[0, 2\\*\\*32\\)"):
        lhb.lh_hashes([2**32], [0])
    with pytest.raises(TypeError, match="integers"):
        lhb.lh_hashes([1.0], [0])


@pytest.mark.parametrize("g", [2, 3, 5, 6, 12, 56, 1000, 2**16, 2**31 + 11, 3 * 2**30, 2**32 - 1, 2**32])
def test_match_is_h_mod_g_including_the_wrapped_multiple(g):
    """The divisibility test (ldp/batch/local_hashing.py) against ``h % g == y``, at its edge: ``h = y − (2^32 mod
    g)`` wraps to the largest multiple of g, and ``h = y + g·floor((2^32−1)/g)`` is that multiple legitimately."""
    r, top = (1 << 32) % g, 0xFFFFFFFF // g
    gen = np.random.default_rng(g % 1001)
    ys = np.array(sorted({y for y in [0, g - 1, r - 1, r, r + 1, *gen.integers(0, g, 40).tolist()] if 0 <= y < g}),
                  dtype=np.uint64)
    hs = [int(y) - r for y in ys if y >= r] + [int(y) + g * top for y in ys if y < r] + [int(y) for y in ys]
    hs += [int(h) for h in gen.integers(0, 2**32, 200, dtype=np.uint64)] + [0, 1, 2**32 - 1]
    h = np.array(hs, dtype=np.uint32)
    matcher = lhb._Matcher(g, ys)
    y_col, limit = matcher.bounds(0, ys.size)
    block = np.broadcast_to(h, (ys.size, h.size)).copy()
    out = np.empty(block.shape, np.bool_)
    matcher.match(block, y_col, limit, np.empty_like(block), out)
    np.testing.assert_array_equal(out, h.astype(np.uint64)[None, :] % g == ys[:, None])


KERNELS = ["numpy", pytest.param("compiled", marks=pytest.mark.skipif(lhb._lhkernel is None,
                                                                       reason="ldp/batch/_lhkernel.c not built"))]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("g", [2, 3, 4, 12, 56, 2**31 + 11, 2**32])
def test_support_counts_are_the_brute_force_ones(g, kernel, monkeypatch):
    monkeypatch.setattr(lhb, "BLOCK_REPORTS", 64)  # partial blocks both ways
    monkeypatch.setattr(lhb, "BLOCK_ITEMS", 128)
    gen = np.random.default_rng(g)
    n, d = 1000, 300
    seeds = gen.integers(0, 2**32, n, dtype=np.uint64)
    ys = lhb.lh_hashes(seeds, gen.integers(0, d, n)).astype(np.uint64) % g  # real reports: many matches
    ys[::3] = gen.integers(0, g, ys[::3].size)
    want = [sum(mmh3.hash(v.to_bytes(4, "little"), int(s), signed=False) % g == y for s, y in zip(seeds, ys,
                                                                                              strict=True))
            for v in range(0, d, 37)]
    got = lhb.support_counts(seeds, ys, d, g, kernel)
    np.testing.assert_array_equal(got[::37], want)
    full = (lhb.lh_hashes(seeds[:, None], np.arange(d)[None, :]).astype(np.uint64) % g == ys[:, None]).sum(axis=0)
    np.testing.assert_array_equal(got, full)
    assert lhb.support_counts(seeds[:0], ys[:0], d, g, kernel).tolist() == [0] * d


def test_support_counts_refuse_bad_arguments():
    with pytest.raises(ValueError, match="g must be in"):
        lhb.support_counts([1], [0], 4, 1)
    with pytest.raises(ValueError, match="kernel must be"):
        lhb.support_counts([1], [0], 4, 2, "fortran")
    with pytest.raises(ValueError, match="one length"):
        lhb.support_counts([1, 2], [0], 4, 2)


# ------------------------------------------------------------------- estimator: mean and variance
def test_variance_forms_and_the_optimum():
    f, n = np.array([500, 300, 200]), 1000
    for params in (BLH, OLH):
        p, q = params.p, 1 / params.g
        wang = n * q * (1 - q) / (p - q) ** 2 + f * (1 - p - q) / (p - q)
        np.testing.assert_allclose(lh_variance(params, f), wang, rtol=1e-12)
    for eps in (0.5, 1.0, 2.0, 4.0):
        e = math.exp(eps)
        olh = lh_per_user_variance(OLHParams(eps, 16)) / (4 * e / (e - 1) ** 2)
        assert 1.0 <= olh <= 1.05  # the rounded g costs under 5 %
        params = OLHParams(eps, 4)
        g, n, f = params.g, 1000, np.array([700, 200, 100, 0])
        closed = n * (e + g - 1) ** 2 / ((g - 1) * (e - 1) ** 2) + f * ((g - 1) ** 2 - e) / ((g - 1) * (e - 1))
        np.testing.assert_allclose(lh_variance(params, f), closed, rtol=1e-9)  # the docs' closed form
        blh = lh_per_user_variance(BLHParams(eps, 16))
        assert blh == pytest.approx((e + 1) ** 2 / (e - 1) ** 2, rel=1e-12)
    worst = max(lh_per_user_variance(OLHParams(eps, 4)) * (math.exp(eps) - 1) ** 2 / (4 * math.exp(eps))
                for eps in np.linspace(0.01, 6.0, 3000))
    assert 1.04 < worst <= 1 + 1 / 24 + 1e-9  # the sup over ε, approached just below e^ε = 1.5


# ------------------------------------------------------------------ batch encoding's exact law


def test_batch_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        OLHEncoder(OLH).encode_batch(np.array([0, 3]))


# ---------------------------------------------------------------- aggregate, wire format and rejects
@pytest.mark.parametrize("params", [BLH, OLH])
def test_json_lines_merge_and_bytes(params):
    values = ["a", "b", "c", "a"]
    enc = encoder(params, rng=3, simulation=True)
    lines = [enc.encode(v).to_json() for v in values * 50]

    def line(payload: object, fp: str = params.fingerprint) -> str:
        return json.dumps({"v": 1, "protocol": params.protocol, "params": fp, "payload": payload})

    bad = [line({"seed": 1, "y": params.g}), line({"seed": 2**32, "y": 0}), line({"seed": 1}),
           line({"seed": 1, "y": 0}, "0" * 16), line({"seed": "1", "y": 0}), "{not json"]
    seen: list[str] = []
    agg = LocalHashingAggregate(params)
    assert agg.add_json_lines(lines + bad, on_reject=lambda i, e: seen.append(e.reason)) == 200
    assert sum(agg.rejected.values()) == 6 and len(seen) == 6
    assert {"out_of_range", "not_json", "wrong_fingerprint"} <= set(seen)
    other = LocalHashingAggregate(params)
    other.add(enc.encode_batch(np.array([params.index_of(v) for v in values] * 25), rng=4))
    framed = LocalHashingAggregate(params)
    framed.add_bytes(b"".join(enc.encode(v).to_bytes() for v in values))
    merged = Aggregate.from_bytes(agg.to_bytes()).merge(other)
    assert type(merged) is LocalHashingAggregate and merged.n == 300 and merged.params == params
    np.testing.assert_array_equal(merged.support, agg.support + other.support)
    assert framed.n == 4 and merged.estimate().items == list(params.labels)
    batch = enc.encode_batch(np.array([0, 1, 2]), rng=5)
    batch.columns["y"][1] = params.g  # one out-of-range row of a batch: rejected, the rest folded
    assert LocalHashingAggregate(params).add(batch) == 2
    with pytest.raises(ValueError, match="parameters differ"):
        agg.merge(LocalHashingAggregate(type(params).from_dict({**params.to_dict(), "epsilon": 0.25})))


