"""The n-gram check of rappor-ngrams' full-string estimates (ldp.decoders.rappor_ngrams_fit) and its widening
rule, with a quarter of the clients outside the candidates and with none (issue 33 item 5).

Setting: the planner's parameters at ε = 8, the population of tests/support/ngrams_outside.py (8 candidates holding
70,000 clients; 23,333 more on about 3,000 rare six-letter strings, or none), full reports with their n-gram
reports drawn by the exact batch law. Tolerances: over ``T`` collections a z-score's mean stays within
``4/√T`` of its expectation; a rate of at least ``r`` is tested as ``> r − 4·√(r(1−r)/k)`` over ``k`` draws.
Measured (30 collections): without the background column the check rejects 100 % (z ≈ −6.3) and the widened
intervals cover 92 % (0.4 % before); with it, or with nothing outside, it never rejects. Also: each position's
fit is reused until the reports change, and discovery's strings keep the check's notes (on a small population of
three strings: what is checked there is the plumbing, not the statistics)."""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import pytest
from support.ngrams_outside import COUNTS, HEAVY, OUTSIDE, population

from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
from ldp.decoders.rappor_ngrams_fit import NgramCheck, ngram_check
from ldp.plan.rappor_ngrams import ngrams_default_params

PARAMS = ngrams_default_params(8.0)
T = 12


def _collections(outside: int) -> list[RapporNgramsAggregate]:
    counts = population(outside)
    return [RapporNgramsAggregate.simulate(PARAMS, counts, rng=300 + rep) for rep in range(T)]


@pytest.fixture(scope="module")
def outside() -> list[RapporNgramsAggregate]:
    return _collections(OUTSIDE)


def _run(aggs: list[RapporNgramsAggregate], background: bool) -> dict[str, np.ndarray]:
    out: dict[str, list] = {"z_raw": [], "z": [], "cover": [], "cover_raw": [], "rejected": [], "check_z": [],
                            "outside_z": [], "same": []}
    for agg in aggs:
        raw = agg.estimate(HEAVY, selection="none", background=background, check=False)
        est = agg.estimate(HEAVY, selection="none", background=background)
        s = est.summary
        out["z_raw"].append((raw.count - COUNTS) / raw.std_error)
        out["z"].append((est.count - COUNTS) / est.std_error)
        out["cover_raw"].append((raw.ci_low <= COUNTS) & (COUNTS <= raw.ci_high))
        out["cover"].append((est.ci_low <= COUNTS) & (COUNTS <= est.ci_high))
        out["rejected"].append(s["ngram_misfit"])
        out["check_z"].append(s["ngram_check_z"])
        out["outside_z"].append((s["ngram_outside"] - (agg.n - COUNTS.sum())) / s["ngram_outside_se"])
        out["same"].append(np.array_equal(raw.count, est.count) and
                           (s["ngram_misfit"] or np.array_equal(raw.std_error, est.std_error)))
    return {k: np.array(v) for k, v in out.items()}


def test_without_the_background_the_check_rejects_and_the_widened_intervals_cover(outside, caplog):
    """The failure (candidates 3.8–4.5 SE high) is seen by the n-gram reports alone, and the rule widens."""
    with caplog.at_level(logging.WARNING, logger="ldp"):
        r = _run(outside, background=False)
    assert np.all(r["z_raw"].mean(axis=0) > 3.0)  # the failure is there
    assert r["rejected"].mean() > 1.0 - 4 * math.sqrt(0.05 * 0.95 / T)  # rejects (measured 100 %)
    assert np.all(r["same"])  # the counts are never moved
    assert r["cover_raw"].mean() < 0.1
    assert r["cover"].mean() > 0.85  # measured 92 % over 240 pairs: most of the way back to 95 %
    assert any("does not fit the n-gram reports" in rec.getMessage() for rec in caplog.records)


def test_with_the_background_the_check_passes_and_changes_nothing(outside):
    r = _run(outside, background=True)
    assert r["rejected"].mean() <= 4 * math.sqrt(0.01 * 0.99 / T) and np.all(r["same"])
    assert abs(r["check_z"].mean()) < 4 / math.sqrt(T)  # the model holds: E[z] = 0 (no outside string shares)
    assert np.all(np.abs(r["z"].mean(axis=0)) < 4 / math.sqrt(T))
    # random six-letter strings rarely share a candidate's n-gram: the n-gram lower bound is about the truth
    assert abs(r["outside_z"].mean()) < 4 / math.sqrt(T)


def test_with_nothing_outside_the_check_passes_and_states_no_mass_outside():
    r = _run(_collections(0)[: T // 2], background=True)
    k = T // 2
    assert not r["rejected"].any() and np.all(r["same"])
    assert abs(r["check_z"].mean()) < 4 / math.sqrt(k) and r["check_z"].std() < 1.5  # SE(T) not too small
    assert abs(r["outside_z"].mean()) < 4 / math.sqrt(k)  # n − the candidates' n-gram mass ≈ 0


SMALL_COUNTS = {"apple": 3000, "mango": 2000, "plum": 1000}


@pytest.fixture(scope="module")
def small() -> RapporNgramsAggregate:
    return RapporNgramsAggregate.simulate(PARAMS, SMALL_COUNTS, rng=5)


def test_the_check_runs_in_discovery_and_skips_strings_no_client_can_hold(small):
    agg = small
    est = agg.estimate(["apple", "mango", "plum", "Nope!", "toolongstring"], selection="none")
    check = ngram_check(agg, est)
    assert check is not None and check.positions == PARAMS.positions
    assert check.bias_bound.shape == (5,) and np.all(check.bias_bound[3:] == 0)
    assert any(note.startswith("n-gram check") for note in est.notes)


def _same_check(a: NgramCheck | None, b: NgramCheck | None) -> bool:
    """Every field equal, bit for bit."""
    assert a is not None and b is not None
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(NgramCheck))


def test_the_per_position_fits_are_reused_until_the_reports_change(small):
    """The check fits each position's complete dictionary once per state of the n-gram reports (it does not
    depend on the candidates): a second check, on other candidates, gives what a fresh aggregate of the same
    bytes gives; after a merge the fits are redone (the check equals a fresh aggregate's of the merged bytes)."""
    def check(agg: RapporNgramsAggregate, cands: list[str], fresh: bool = False) -> NgramCheck | None:
        if fresh:
            agg = RapporNgramsAggregate.from_bytes(agg.to_bytes())  # nothing cached
        return ngram_check(agg, agg.estimate(cands, selection="none", check=False))

    agg = RapporNgramsAggregate.from_bytes(small.to_bytes())
    for cands in (["apple", "mango", "plum"], ["apple", "plum"]):
        assert _same_check(check(agg, cands), check(agg, cands, fresh=True))
    before = check(agg, ["apple", "mango", "plum"])
    agg.merge(RapporNgramsAggregate.simulate(PARAMS, {"mango": 3000}, rng=6))
    after = check(agg, ["apple", "mango", "plum"])
    assert _same_check(after, check(agg, ["apple", "mango", "plum"], fresh=True))
    assert before is not None and after is not None and not np.array_equal(before.outside, after.outside)


def test_ldp_decode_states_the_mass_outside_and_warns_when_the_model_does_not_fit(outside, small):
    """What `ldp decode` prints (decode_aggregate's table): the unexplained mass with its SE and the check; a
    warning line when the check rejects (the estimate without the background column: the failure)."""
    from ldp.jobs.decode import decode_aggregate

    text = decode_aggregate(outside[0], HEAVY, selection="none").table()
    assert "hold strings outside the candidates" in text and "note: n-gram check" in text
    assert "warning:" not in text
    bad = outside[0].estimate(HEAVY, selection="none", background=False).table()
    assert "note: warning: the candidate model does not fit the n-gram reports" in bad
    found = small.decode(None).table()  # discovery: the strings found keep the final decode's notes
    assert "note: n-gram check" in found and "hold strings outside the candidates" in found
