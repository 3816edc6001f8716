"""SFP discovery by test: no cap by default, the cap as an option, and the two stated levels
(``false_records`` absent records kept per position, ``alpha`` false words reported) calibrated
against the Poisson law over simulated collections with a new hash family each."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from ldp.decoders.sfp import FALSE_RECORDS_PER_HASH, SfpAggregate
from ldp.encoders.sfp import SfpParams

SMALL = dict(alphabet="abcd", length=4, word_num_hashes=16, word_width=1024, fragment_num_hashes=16,
             fragment_width=256)


def test_no_cap_by_default_and_the_cap_is_an_option():
    """30 heavy words: the default finds them all (more than the old cap of 20 records per
    position could hold), ``top=5`` keeps the 5 largest detected records per position."""
    assert inspect.signature(SfpAggregate.discover).parameters["top"].default is None
    p = SfpParams(4.0, 6.0, alphabet="abcdefgh", length=4, hash_bits=6, word_num_hashes=16, word_width=1024,
                  fragment_num_hashes=32, fragment_width=512)
    rng = np.random.default_rng(3)
    words: list[str] = []
    while len(words) < 30:
        w = "".join(rng.choice(list("abcdefgh"), 4))
        if w not in words:
            words.append(w)
    truth = {w: 4000 for w in words}
    agg = SfpAggregate.simulate(p, truth, rng=5)
    found = agg.discover()
    assert sorted(found.words.items) == sorted(words)
    assert all(len(f["hash"]) >= 25 for f in found.fragments)  # 30 records (fewer if two words share one)
    capped = agg.discover(top=5)
    for full, cap in zip(found.fragments, capped.fragments, strict=True):
        assert list(cap["count"]) == list(full["count"][:5])  # the 5 largest of the same detected records
    assert len(capped.words.items) <= 5 and set(capped.words.items) <= set(words)
    assert any("expected false word" in note for note in found.words.notes)


def test_false_records_is_the_expected_number_of_absent_records_kept_per_position():
    """20 light words (1,000 users each), ε_fragment = 1, a 6,400-record grid, ``false_records=4``:
    over R = 60 collections × P = 2 positions the absent records kept are about Poisson with mean
    λ = Σ 4·(N − held)/N ≈ 478. Tolerance 4.5·√λ ≈ 98. (The normal tail is slightly light here:
    600 positions gave 2,546 against 2,388, +6.6 %, well inside it.) The old level (0.05 per
    position) would keep about 6, and a level not divided by the grid thousands."""
    truth = {"".join(np.random.default_rng(i).choice(list("abcd"), 4)): 1000 for i in range(20)}
    kept, lam = 0, 0.0
    for rep in range(60):
        p = SfpParams(2.0, 1.0, hash_bits=8, hash_seed=997 * rep, **SMALL)
        agg = SfpAggregate.simulate(p, truth, rng=rep)
        found = agg.discover(false_records=4.0)
        for pos, frag in enumerate(found.fragments):
            held = set()
            for w in truth:
                pw = p.prepare_word(w)
                held.add((pw.hash, p.fragment_at(pw.padded, pos)))
            kept += sum((int(h), s) not in held for h, s in zip(frag["hash"], frag["fragment"], strict=True))
            lam += 4.0 * (p.num_records - len(held)) / p.num_records
    assert abs(kept - lam) <= 4.5 * math.sqrt(lam), (kept, lam)


def test_alpha_is_the_expected_number_of_false_words():
    """No word hash (``hash_bits=0``): four heavy words glue into chimeras that all reach the word
    sketch. Each candidate is tested at level α/C, so the false words of a collection have mean
    α·F/C (F false candidates of C). Over R = 100 collections at α = 2 (≈ 1.5 per collection) the
    total is about Poisson with that mean summed (≈ 158); tolerance 4.5·√λ ≈ 57. A level of α per
    candidate, or α over the whole grid, would be far off."""
    truth = {"abcd": 5000, "bcda": 5000, "cdab": 5000, "dabc": 5000}
    seen, lam = 0, 0.0
    for rep in range(100):
        p = SfpParams(1.0, 4.0, hash_bits=0, hash_seed=997 * rep, **SMALL)
        found = SfpAggregate.simulate(p, truth, rng=rep).discover(alpha=2.0)
        cands = found.candidates.items
        assert set(truth) <= set(cands)
        seen += sum(w not in truth for w in found.words.items)
        lam += min(2.0, len(cands) / 2) / len(cands) * sum(w not in truth for w in cands)
    assert 100 <= lam <= 250  # the setting is as described
    assert abs(seen - lam) <= 4.5 * math.sqrt(lam), (seen, lam)


def test_default_false_records_scale_with_the_hash():
    p = SfpParams(4.0, 6.0, hash_bits=2, **SMALL)
    agg = SfpAggregate.simulate(p, {"abcd": 3000, "dcba": 2000}, rng=1)
    found = agg.discover()
    expected = FALSE_RECORDS_PER_HASH * 4
    assert any(f"detection: {expected:g} expected absent records" in note for note in found.words.notes)
    assert sorted(found.words.items) == ["abcd", "dcba"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(false_records=0), "false_records is an expected number"),
    (dict(false_records=-1.0), "false_records"),
    (dict(false_records=math.nan), "false_records"),
    (dict(false_records=math.inf), "false_records"),
    (dict(false_records=True), "false_records"),
    (dict(false_records="1"), "false_records"),
    (dict(alpha=0.0), "alpha is an expected number"),
    (dict(alpha=-0.05), "alpha"),
    (dict(alpha=math.nan), "alpha"),
    (dict(top=0), "top must be a positive int"),
    (dict(top=2.5), "top"),
    (dict(top=None, alpha=None), "top=, alpha="),
    (dict(peel=1), "peel must be True or False"),
])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    p = SfpParams(4.0, 6.0, hash_bits=2, **SMALL)
    agg = SfpAggregate.simulate(p, {"abcd": 300}, rng=1)
    with pytest.raises(ValueError, match=match):
        agg.discover(**kwargs)


def test_top_with_no_test_still_works():
    """``discover(top=20, alpha=None)`` keeps the 20 largest records per position with no test and
    reports every scored candidate (the old inspection mode, and pure-ldp's keep rule)."""
    p = SfpParams(4.0, 6.0, hash_bits=2, **SMALL)
    agg = SfpAggregate.simulate(p, {"abcd": 3000, "dcba": 2000}, rng=1)
    found = agg.discover(top=20, alpha=None)
    assert all(len(f["hash"]) == 20 for f in found.fragments)
    assert found.words.items == found.candidates.items and {"abcd", "dcba"} <= set(found.words.items)


def test_peeling_keeps_the_level_given_one_hash_family():
    """A heavy head (100,000 and 30,000 of 135,000 users): with one fixed family, absent records
    sharing rows with ``abcd`` inherit part of its count, and the raw test keeps them by the
    thousand (22,175 over these 80 positions). Peeled, the absent records kept are about
    Poisson with mean λ = Σ 2·(N − held)/N ≈ 160 (174 here); tolerance 4.5·√λ ≈ 57."""
    truth = {"abcd": 100_000, "dcba": 30_000}
    truth.update({"".join(np.random.default_rng(i).choice(list("abcd"), 4)): 500 for i in range(10)})
    kept = {True: 0, False: 0}
    lam = 0.0
    for rep in range(40):
        p = SfpParams(2.0, 4.0, hash_bits=8, hash_seed=997 * rep, **SMALL)
        agg = SfpAggregate.simulate(p, truth, rng=rep)
        held = []
        for pos in range(p.num_positions):
            prepared = [p.prepare_word(w) for w in truth]
            held.append({(pw.hash, p.fragment_at(pw.padded, pos)) for pw in prepared})
            lam += 2.0 * (p.num_records - len(held[pos])) / p.num_records
        for peel in (True, False):
            found = agg.discover(false_records=2.0, peel=peel)
            for pos, frag in enumerate(found.fragments):
                kept[peel] += sum((int(h), s) not in held[pos]
                                  for h, s in zip(frag["hash"], frag["fragment"], strict=True))
    assert abs(kept[True] - lam) <= 4.5 * math.sqrt(lam), (kept, lam)
    assert kept[False] > 10 * lam, (kept, lam)  # what peeling removes
