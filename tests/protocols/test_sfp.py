"""Sequence Fragment Puzzle: parameters, words, injective records, exact privacy audit, the three
simulation paths, fragment estimates against the exact variance, reconstruction, chimeras, caps
and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldp.decoders.sfp import CandidateLimitError, SfpAggregate, record_grid
from ldp.decoders.sketch import sketch_variance
from ldp.encoders.sfp import SfpEncoder, SfpParams
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.reports import Report
from ldp.simulation.collect import simulate

SMALL = dict(word_num_hashes=16, word_width=256, fragment_num_hashes=16, fragment_width=256)


# -- parameters and words ----------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    (dict(word_epsilon=0.0), "word_epsilon"),
    (dict(fragment_epsilon=-1.0), "fragment_epsilon"),
    (dict(alphabet=""), "non-empty"),
    (dict(alphabet="abca"), "repeated"),
    (dict(pad="a"), "pad"),
    (dict(pad="__"), "pad"),
    (dict(length=10, fragment_length=3), "multiple"),
    (dict(hash_bits=17), "hash_bits"),
    (dict(word_sketch="olh"), "word_sketch"),
    (dict(fragment_sketch="hcms", fragment_width=1000), "fragment sketch: .*power of two"),
    (dict(word_width=1), "word sketch: width"),
    (dict(replacement="?"), "replacement"),
])
def test_params_are_validated(kwargs, match):
    base = dict(word_epsilon=1.0, fragment_epsilon=1.0)
    base.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        SfpParams(**base)


def test_privacy_cost_is_the_sum_of_independent_budgets():
    p = SfpParams(word_epsilon=2.0, fragment_epsilon=6.0)
    assert p.privacy_cost.epsilon == pytest.approx(8.0, rel=1e-12)
    assert p.word_params.epsilon == 2.0 and p.fragment_params.epsilon == 6.0
    assert p.num_positions == 5 and p.num_records == 256 * 27**2
    back = SfpParams.from_dict(p.to_dict())
    assert back == p and back.fingerprint == p.fingerprint
    assert SfpParams(2.0, 6.0, hash_seed=1).fingerprint != p.fingerprint


def test_words_are_padded_truncated_and_replaced_only_when_asked():
    p = SfpParams(1.0, 1.0)
    w = p.prepare_word("hello")
    assert w.word == "hello" and w.padded == "hello_____" and not w.truncated and w.replaced == 0
    assert w.hash == p.word_hash("hello") and 0 <= w.hash < 256
    with pytest.raises(ValueError, match="empty"):
        p.prepare_word("")
    with pytest.raises(ValueError, match="'H' of 'Hello' is not in the alphabet"):
        p.prepare_word("Hello")
    with pytest.raises(ValueError, match="'_'"):  # the pad symbol is not a word character
        p.prepare_word("a_b")
    with pytest.raises(ValueError, match="longer than length=10"):
        p.prepare_word("abcdefghijk")
    with pytest.raises(TypeError, match="str"):
        p.prepare_word(b"hello")
    q = SfpParams(1.0, 1.0, replacement="z", truncate=True)
    w = q.prepare_word("Héllo wörld!")
    assert w.word == "zzllozwzrl" and w.truncated and w.replaced == 4  # H é space ö; '!' is cut, not counted
    enc = SfpEncoder(q, rng=1, simulation=True)
    enc.encode("Héllo wörld!")
    enc.encode("ok")
    enc.encode_batch(["x" * 12, "ab", "x" * 12], rng=2)
    assert enc.truncated == 3 and enc.replaced == 4
    with pytest.raises(ValueError, match="'N' of 'NO' is not in the alphabet"):
        SfpEncoder(p).encode_batch(["ok", "NO"], rng=1)


@pytest.mark.parametrize("kwargs", [
    dict(alphabet="ab", length=4, fragment_length=2, hash_bits=3),
    dict(alphabet="abc", length=3, fragment_length=3, hash_bits=9),        # a 2-byte hash
    # 2-byte symbols
    dict(alphabet="".join(chr(0x100 + i) for i in range(300)), length=2, fragment_length=1, hash_bits=2),
    dict(alphabet="a", length=1, fragment_length=1, hash_bits=0),
])
def test_fragment_records_are_injective(kwargs):
    """Every (hash, fragment) pair has its own record, and the server's grid encodes them the same way."""
    p = SfpParams(1.0, 1.0, **kwargs)
    hashes, symbols, records = record_grid(p)
    assert len(records) == p.num_records == len(set(records))
    sym = p.symbols
    for h, row, rec in zip(hashes.tolist(), symbols.tolist(), records, strict=True):
        assert p.fragment_record(h, "".join(sym[i] for i in row)) == rec
    pairs = [(h, "".join(f)) for h in range(1 << p.hash_bits) for f in itertools.product(sym, repeat=p.fragment_length)]
    assert len({p.fragment_record(h, f) for h, f in pairs}) == len(pairs)


# -- exact privacy audit ---------------------------------------------------------------------------------


def test_ledger_charges_both_budgets_per_report():
    p = SfpParams(1.0, 1.5, **SMALL)
    ledger = BudgetLedger(metrics={"words": BudgetPolicy(per_window=PrivacyCost(5.0))})
    enc = SfpEncoder(p, ledger=ledger, metric="words", rng=3, simulation=True)
    enc.encode("cat")
    enc.encode("cat")
    with pytest.raises(BudgetExceeded):
        enc.encode("cat")
    assert ledger.spent("words").epsilon == pytest.approx(5.0)
    with pytest.raises(ValueError, match="empty"):  # bad input fails before any charge
        enc.encode("")


# -- simulation paths and estimates ---------------------------------------------------------------------
TRUTH = {"hello": 6000, "world": 3000, "sun": 1500, "hi": 700}


@pytest.mark.parametrize("method", ["per_report", "aggregate", "client"])
def test_paths_give_unbiased_word_and_fragment_estimates(method):
    """Client reports, batch rows and the exact aggregate draw: every true word's count and every
    true record's count at every position are within 4.5 standard errors of their expectations
    (f and f/P; 4 words × 6 checks, so a correct path fails with probability < 1e-4)."""
    p = SfpParams(3.0, 3.0, **SMALL)
    if method == "client":
        enc = SfpEncoder(p, rng=11, simulation=True)
        agg = SfpAggregate(p)
        agg.add([enc.encode(w) for w, c in TRUTH.items() for _ in range(c)])
    else:
        agg = simulate(p, TRUTH, method=method, rng=12)
    assert agg.n == sum(TRUTH.values())
    est = agg.estimate(list(TRUTH))
    truth = np.array(list(TRUTH.values()), float)
    assert np.all(np.abs(est.count - truth) < 4.5 * est.std_error)
    P = p.num_positions
    per_position = agg.fragment_row_n.sum(axis=1)
    chi2 = float(((per_position - agg.n / P) ** 2 / (agg.n / P)).sum())
    assert chi2 < 20.5  # χ²_4 upper 0.0004 quantile: positions are uniform
    for pos in range(P):
        records = {}
        for w, c in TRUTH.items():
            pw = p.prepare_word(w)
            key = p.fragment_record(pw.hash, p.fragment_at(pw.padded, pos))
            records[key] = records.get(key, 0) + c
        frag = agg.fragment_sketch(pos).estimate(list(records))
        # given n_l the record counts are binomial(f, 1/P) around f/P: add that to the variance
        expected = np.array(list(records.values()), float) / P
        sd = np.sqrt(frag.std_error**2 + expected * (1 - 1 / P))
        assert np.all(np.abs(frag.count - expected) < 4.5 * sd)


@pytest.mark.parametrize("eps, width", [(2.0, 64), (8.0, 1024)])
def test_fragment_estimate_has_the_exact_variance(eps, width):
    """Over R = 300 exact draws with a new hash family each, the estimate of a record's count at
    position 0 has mean f/P and variance E[V(f_0, n_0, F2_0)] + f(1/P)(1 − 1/P): the sketch's
    exact variance (linear in f_0, n_0 and F2_0, so its expectation is V at the expectations,
    E[F2_0] = Σ (f'/P)² + f'(1/P)(1−1/P)) plus the binomial split over positions.
    Tolerances: mean within 4 sd of the mean (sd = sqrt(V/R)); the sample variance's ratio to V
    has relative sd sqrt(2/(R−1)) = 0.082 (near-normal estimates), so ±0.33 is 4 sd.
    At ε = 2, m = 64 the sketch's noise dominates; at ε = 8, m = 1024 the split over positions
    does (about 85% of the variance), so a draw that splits users evenly fails."""
    base = dict(word_num_hashes=8, word_width=64, fragment_num_hashes=8, fragment_width=width, length=4)
    truth = {"ab": 3000, "cd": 1200, "ef": 600, "gh": 300}
    R = 300
    counts = []
    for rep in range(R):
        p = SfpParams(2.0, eps, hash_seed=997 * rep, **base)
        agg = SfpAggregate.simulate(p, truth, rng=rep)
        pw = p.prepare_word("ab")
        counts.append(agg.fragment_sketch(0).estimate([p.fragment_record(pw.hash, "ab")]).count[0])
    counts = np.array(counts)
    P, n, f = 2, sum(truth.values()), 3000
    others = np.array([1200, 600, 300], float)
    f2 = float(np.sum((others / P) ** 2 + others / P * (1 - 1 / P)))
    v = float(sketch_variance(p.fragment_params, f / P, n / P, f2)) + f / P * (1 - 1 / P)
    assert abs(counts.mean() - f / P) < 4 * math.sqrt(v / R)
    assert abs(counts.var(ddof=1) / v - 1) < 0.33


# -- reconstruction ------------------------------------------------------------------------------------
def test_heavy_words_are_discovered_with_counts_in_their_intervals():
    rng = np.random.default_rng(5)
    truth = {"privacy": 40000, "sketch": 25000, "puzzle": 15000, "apple": 10000, "zebra": 6000}
    for _ in range(3000):  # a tail of light random words
        word = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), int(rng.integers(2, 11))))
        truth[word] = truth.get(word, 0) + int(rng.integers(1, 30))
    p = SfpParams(4.0, 6.0)
    agg = SfpAggregate.simulate(p, truth, rng=8)
    found = agg.discover(top=20, confidence=0.999)
    heavy = ["privacy", "sketch", "puzzle", "apple", "zebra"]
    assert found.words.items[:5] == heavy
    est = found.words
    t = np.array([truth[w] for w in heavy], float)
    assert np.all((est.ci_low[:5] <= t) & (t <= est.ci_high[:5]))
    assert set(est.items) <= set(truth)  # nothing invented
    s = found.stats
    assert s["formed"] == s["pruned_padding"] + s["pruned_hash"] + s["scored"]
    assert s["discovered"] == len(est.items) and s["hashes_complete"] >= 5
    assert "candidates formed" in found.summary()


def _same_hash_pair(p: SfpParams, length: int) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    seen: dict[int, str] = {}
    while True:
        w = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), length))
        h = p.word_hash(w)
        if h in seen and seen[h] != w and all(a != b for a, b in zip(seen[h], w, strict=True)):
            return seen[h], w
        seen[h] = w


def test_chimeras_are_rejected_by_the_word_sketch():
    """With no word hash (hash_bits=0) every cross product of two heavy words' fragments reaches
    the word sketch; only the two real words are detected there."""
    p = SfpParams(4.0, 6.0, length=4, hash_bits=0, **SMALL)
    agg = SfpAggregate.simulate(p, {"abcd": 20000, "wxyz": 20000}, rng=3)
    found = agg.discover(top=2)
    assert found.stats["formed"] == 4 and found.stats["scored"] == 4
    assert sorted(found.words.items) == ["abcd", "wxyz"]
    chimeras = [i for i, w in enumerate(found.candidates.items) if w in ("abyz", "wxcd")]
    assert len(chimeras) == 2 and not found.candidates.extra["detected"][chimeras].any()


def test_same_hash_words_do_not_produce_discoveries_beyond_themselves():
    p = SfpParams(4.0, 6.0, length=6, **SMALL)
    a, b = _same_hash_pair(p, 6)
    agg = SfpAggregate.simulate(p, {a: 20000, b: 20000}, rng=4)
    found = agg.discover(top=2)
    assert found.stats["formed"] == 8  # 2 fragments at each of 3 positions, one hash
    assert sorted(found.words.items) == sorted([a, b])
    assert found.stats["pruned_hash"] + found.stats["scored"] == 8


def test_candidate_cap_and_grid_cap_have_clear_errors():
    p = SfpParams(4.0, 6.0, hash_bits=0, length=6, **SMALL)
    agg = SfpAggregate.simulate(p, {"abcdef": 100, "ghijkl": 100}, rng=1)
    with pytest.raises(CandidateLimitError, match="would form 27 candidate words .*max_candidates=10"):
        agg.discover(top=3, alpha=None, max_candidates=10)
    assert agg.discover(top=3, alpha=None, max_candidates=27).stats["formed"] == 27
    with pytest.raises(ValueError, match="max_grid"):
        agg.discover(max_grid=100)
    with pytest.raises(ValueError, match="top"):
        agg.discover(top=0)
    with pytest.raises(ValueError, match="top=, alpha="):
        agg.discover(top=None, alpha=None)


# -- server: bad input, merge, serialization ------------------------------------------------------------
def test_bad_reports_are_rejected_with_reasons_and_nothing_is_lost():
    p = SfpParams(2.0, 2.0, **SMALL)
    enc = SfpEncoder(p, rng=1, simulation=True)
    good = enc.encode("cat")
    payload = dict(good.payload, position=p.num_positions)
    bad = Report(p.protocol, p.fingerprint, payload)
    agg = SfpAggregate(p)
    assert agg.add([good, bad]) == 1
    assert agg.rejected == {"out_of_range": 1}
    batch = enc.encode_batch(["cat", "dog", "cow"], rng=2)
    batch.columns["position"][1] = p.num_positions
    seen = []
    assert agg.add(batch, on_reject=lambda item, err: seen.append((item, err.reason))) == 2
    assert agg.n == 3 and sum(agg.rejected.values()) == 2 and seen == [(1, "out_of_range")]
    with pytest.raises(ValueError, match="position"):
        agg.fragment_sketch(p.num_positions)


