"""Subset Selection (protocol ``ss``): params, audit, exact subset law, estimator and exact variance, wire format."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import ldp.batch.subset_selection as _ss_batch
from ldp.decoders.base import Aggregate
from ldp.decoders.subset_selection import SSAggregate, ss_variance
from ldp.encoders.subset_selection import SSEncoder, SSParams, floyd_subset, subset_size
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import output_distribution
from ldp.protocols import get_protocol
from ldp.reports import ReportBatch

LABELS = ("a", "b", "c", "d", "e")
SS = SSParams(0.5, 5, LABELS)  # ω = 2


@pytest.mark.parametrize("make, rule", [
    (lambda: SSParams(0.0, 3), "epsilon must be finite and > 0"),
    (lambda: SSParams(math.inf, 3), "epsilon must be finite"),
    (lambda: SSParams(1.0, 1), "domain_size must be in"),
    (lambda: SSParams(1.0, 3.0), "domain_size must be an int"),
    (lambda: SSParams(1.0, 2, ("a",)), "labels must have"),
    (lambda: SSParams(1.0, 2, ("a", "a")), "labels must be distinct"),
    (lambda: SSParams(50.0, 3), "too large"),
    (lambda: SSParams(1e-20, 3), "too small"),
    (lambda: SSParams(1.0, 1 << 22), "bytes as an upload line"),
])
def test_params_refused_naming_the_rule(make, rule):
    with pytest.raises((ValueError, TypeError), match=rule):
        make()


def test_params_round_trip_discovery_and_probabilities():
    assert SSParams.from_dict(json.loads(json.dumps(SS.to_dict()))) == SS == SSParams.from_labels(0.5, LABELS)
    proto = get_protocol("ss")
    assert proto.params_type is SSParams and proto.encoder_type is SSEncoder and proto.aggregate_type is SSAggregate
    assert SS.omega == 2 and [subset_size(e, 1024) for e in (0.5, 1.0, 2.0, 4.0, 10.0)] == [387, 275, 122, 18, 1]
    e, w, d = math.exp(0.5), 2, 5
    assert SS.p == pytest.approx(w * e / (w * e + d - w), rel=1e-15)
    assert SS.q == pytest.approx(SS.p * (w - 1) / (d - 1) + (1 - SS.p) * w / (d - 1), rel=1e-15)
    assert SS.effective_epsilon == pytest.approx(0.5, rel=1e-12) and SS.privacy_cost.epsilon >= 0.5


def test_values_refused_before_any_charge():
    ledger = BudgetLedger()
    enc = SSEncoder(SS, ledger=ledger, metric="m")
    for value in (5, -1, "z", 1.0, True, None):
        with pytest.raises((ValueError, TypeError)):
            enc.encode(value)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    enc.encode("b")
    assert ledger.spent("m", "lifetime").epsilon == SS.privacy_cost.epsilon


def subset_law(params: SSParams, value: int) -> dict[str, float]:
    return {str(k): float(p) for k, p in output_distribution(
        lambda src: SSEncoder(params, rng=src).encode(value).payload["bits"].to01()).items()}


def test_client_law_is_exact():
    """Pr[S | v] = p/C(d−1, ω−1) for v ∈ S, (1−p)/C(d−1, ω) otherwise; every S has ω elements."""
    params = SSParams(0.3, 6)  # ω = 3
    d, w = 6, params.omega
    for v in (0, 3, 5):
        law = subset_law(params, v)
        assert len(law) == math.comb(d, w) and all(s.count("1") == w for s in law)
        for s, prob in law.items():
            want = params.p / math.comb(d - 1, w - 1) if s[v] == "1" else (1 - params.p) / math.comb(d - 1, w)
            assert prob == pytest.approx(want, rel=1e-12)


def test_floyd_subset_is_uniform():
    law = output_distribution(lambda src: floyd_subset(5, 2, src))
    assert len(law) == 10 and set(law.values()) == {Fraction(1, 10)}


def test_variance_is_the_pure_oracles_and_near_the_optimum():
    f, n = np.array([500, 300, 200, 0, 0]), 1000
    p, q = SS.p, SS.q
    np.testing.assert_allclose(ss_variance(SS, f), n * q * (1 - q) / (p - q) ** 2 + f * (1 - p - q) / (p - q),
                               rtol=1e-12)
    for eps in (0.5, 1.0, 2.0, 4.0):  # d ≫ e^ε: per-user variance within 5% of 4e^ε/(e^ε−1)²
        params, e = SSParams(eps, 1024), math.exp(eps)
        per_user = ss_variance(params, [0] * 1023 + [10**6])[0] / 10**6
        assert per_user / (4 * e / (e - 1) ** 2) <= 1.05


def test_json_lines_batches_merge_and_bytes():
    enc = SSEncoder(SS, rng=3, simulation=True)
    values = ["a", "b", "c", "e"]
    lines = [enc.encode(v).to_json() for v in values * 50]

    def line(payload: object, fp: str = SS.fingerprint) -> str:
        return json.dumps({"v": 1, "protocol": "ss", "params": fp, "payload": {"bits": payload}})

    bad = [line("11100"), line("10000"), line("110"), line(3), line("11000", "0" * 16), "{not json"]
    seen: list[str] = []
    agg = SSAggregate(SS)
    assert agg.add_json_lines(lines + bad, on_reject=lambda i, e: seen.append(e.reason)) == 200
    assert len(seen) == 6 and seen.count("bad_value") == 2 and "not_json" in seen
    other = SSAggregate(SS)
    good = enc.encode_batch(np.array([0, 1, 2, 4] * 25), rng=4)
    cols = good.columns["bits"].copy()
    cols[[3, 7]] = np.packbits(np.array([[1, 1, 1, 0, 0, 0, 0, 0]], np.uint8), axis=1, bitorder="little")
    rows: list[int] = []
    other.add(ReportBatch("ss", SS.fingerprint, SS.schema, {"bits": cols}), on_reject=lambda i, e: rows.append(i))
    assert other.n == 98 and rows == [3, 7] and other.rejected["bad_value"] == 2
    by_bytes = SSAggregate(SS)
    by_bytes.add_bytes(b"".join(enc.encode(v).to_bytes() for v in values))
    merged = Aggregate.from_bytes(agg.to_bytes()).merge(other)
    assert type(merged) is SSAggregate and merged.n == 298 and merged.params == SS and by_bytes.n == 4
    np.testing.assert_array_equal(merged.ones, agg.ones + other.ones)
    assert merged.estimate().items == list(LABELS)


needs_kernel = pytest.mark.skipif(not _ss_batch.kernel_in_use(), reason="the compiled SS kernel is not built")


@needs_kernel
@pytest.mark.parametrize("d, w, size", [(2, 1, 40), (5, 2, 300), (16, 4, 200), (100, 27, 50), (1024, 275, 4)])
def test_compiled_floyd_rows_equal_their_python_transcription(d, w, size):
    """The same seed gives the same rows, bit for bit (xoshiro256**, the bit-buffered draws, Floyd around v)."""
    gen = np.random.default_rng(d)
    v, own = gen.integers(0, d, size), (gen.random(size) < 0.5).astype(np.uint8)
    seed = gen.bit_generator.random_raw(4)
    fast, ref = np.zeros((size, (d + 7) // 8), np.uint8), np.zeros((size, (d + 7) // 8), np.uint8)
    _ss_batch._sskernel.floyd_rows(seed, v, own, w, d, fast)
    _ss_batch.floyd_rows_reference(seed, v, own, w, d, ref)
    assert np.array_equal(fast, ref)
    assert np.all(np.unpackbits(fast, axis=1, count=d, bitorder="little").sum(axis=1) == w)


@needs_kernel
def test_compiled_floyd_rows_refuses_inconsistent_buffers():
    v, own, rows, seed = np.array([0, 1]), np.zeros(2, np.uint8), np.zeros((2, 1), np.uint8), np.ones(4, np.uint64)
    for args in ((seed, v, own, 0, 5, rows), (seed, v, own, 5, 5, rows), (seed, v, own[:1], 2, 5, rows),
                 (seed, np.array([0, 9]), own, 2, 5, rows), (seed, v, own, 2, 1, rows), (seed[:3], v, own, 2, 5, rows),
                 (np.zeros(4, np.uint64), v, own, 2, 5, rows)):
        with pytest.raises(ValueError, match="floyd_rows"):
            _ss_batch._sskernel.floyd_rows(*args)


@pytest.mark.parametrize("kernel", ["numpy", pytest.param("compiled", marks=needs_kernel)])
def test_both_batch_paths_follow_the_clients_exact_law(kernel, monkeypatch):
    """Rows of different values in one batch (each row's subset drawn around its own value): every value's rows
    have the client's exact subset law, through the compiled kernel and the numpy loop."""
    monkeypatch.setattr(_ss_batch, "SS_KERNEL", kernel)
    params, size = SSParams(0.3, 5), 60_000
    values = np.random.default_rng(5).integers(0, 5, size)
    bits = np.unpackbits(SSEncoder(params).encode_batch(values, rng=11).columns["bits"], axis=1, bitorder="little")
    for value in range(5):
        law = subset_law(params, value)
        keys, counts = np.unique(bits[values == value, :5], axis=0, return_counts=True)
        observed = {"".join(map(str, k)): int(c) for k, c in zip(keys, counts, strict=True)}
        assert set(observed) <= set(law)
        m = int((values == value).sum())
        assert stats.chisquare([observed.get(k, 0) for k in law], [law[k] * m for k in law]).pvalue > 1e-6


@pytest.mark.parametrize("kernel, method", [("numpy", None)] + [
    pytest.param("compiled", m, marks=needs_kernel) for m in (None, (1, 2), (1, 1), (7, 4))])
def test_batch_subsets_of_a_larger_domain_have_the_closed_form_law(kernel, method, monkeypatch):
    """d = 10, ω = 4 (210 subsets): Pr[S | v] = p/C(d−1, ω−1) when v ∈ S, else (1 − p)/C(d−1, ω) (chi-square
    over every subset, 200,000 reports of one value); compiled: Floyd, and Bernoulli columns at 1/4 (corrected by
    additions), 1/2 (by removals) and 7/16 (both)."""
    monkeypatch.setattr(_ss_batch, "SS_KERNEL", kernel)
    monkeypatch.setattr(_ss_batch, "subset_method", lambda d, w, p: method)
    params, size, v = SSParams(0.5, 10), 200_000, 7
    d, w = 10, params.omega
    assert w == 4
    rows = SSEncoder(params).encode_batch(np.full(size, v), rng=12).columns["bits"]
    bits = np.unpackbits(rows, axis=1, count=d, bitorder="little")
    assert np.all(bits.sum(axis=1) == w)
    codes = bits @ (1 << np.arange(d))
    subsets = [sum(1 << i for i in c) for c in itertools.combinations(range(d), w)]
    observed = np.array([np.count_nonzero(codes == s) for s in subsets])
    want = np.array([params.p / math.comb(d - 1, w - 1) if s >> v & 1 else (1 - params.p) / math.comb(d - 1, w)
                     for s in subsets])
    assert observed.sum() == size and math.isclose(want.sum(), 1.0)
    assert stats.chisquare(observed, want * size).pvalue > 1e-6
