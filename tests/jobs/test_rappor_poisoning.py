"""RAPPOR's per-report poisoning checks (ldp.jobs.rappor_poisoning): the bounds against exact enumeration, false
alarms on honest windows, power against the maximal gain attack (padded, bare, and padded to the honest law of the
1s), and odd windows."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ldp.batch.rappor import bloom_index_table
from ldp.batch.rappor_evidence import BitsTogether
from ldp.batch.rappor_pairs import pairs_enabled
from ldp.encoders.rappor import RapporParams
from ldp.jobs.poisoning import check_reports, law_for, poisoning_evidence
from ldp.jobs.rappor_poisoning import (
    TAIL,
    cooccurrence_bound,
    cooccurrence_sizes,
    rappor_ones_pmfs,
    rappor_ones_tails,
    report_statistics,
)
from ldp.protocols import get_protocol
from ldp.simulation.attack import fake_reports, simulate_attack
from ldp.simulation.population import zipf

DOCS = RapporParams(num_bloombits=64, num_hashes=2, num_cohorts=32, p=0.25, q=0.75, f=0.5)
SMALL = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5)


REPORTS = np.array(list(itertools.product((0, 1), repeat=6)), bool)  # every report of k = 6 bits


def _report_law(params: RapporParams, bloom: tuple[int, ...]) -> np.ndarray:
    """The exact probability of each of :data:`REPORTS` for a client whose Bloom filter is ``bloom``."""
    one = np.full(params.num_bloombits, params.p_star)
    one[list(bloom)] = params.q_star
    return np.where(REPORTS, one, 1 - one).prod(axis=1)


@pytest.mark.parametrize("params", [RapporParams(6, 2, 1, 0.25, 0.75, 0.5), RapporParams(6, 2, 1, 0.001, 0.999, 0.0),
                                    RapporParams(6, 3, 1, 0.5, 0.75, 0.25, mode="google")])
def test_bounds_hold_for_every_bloom_filter_by_enumeration(params: RapporParams) -> None:
    """k = 6: every Bloom filter of 1..h set bits, every report. The 1s per report follow the pmf of its B; the
    tails, the single counts and 'all of S set', for every S, are at most their bounds, and the bounds are
    reached (they are the tightest that hold whatever the value)."""
    k, h = params.num_bloombits, params.num_hashes
    pmfs = rappor_ones_pmfs(params)
    low, high, bound = rappor_ones_tails(params)
    worst_tails, worst_count = 0.0, np.zeros(k + 1)
    worst_together = dict.fromkeys(range(1, k + 1), 0.0)
    for size in range(1, h + 1):
        for bloom in itertools.combinations(range(k), size):
            law = _report_law(params, bloom)
            ones = np.bincount(REPORTS.sum(axis=1), weights=law, minlength=k + 1)
            np.testing.assert_allclose(ones, pmfs[size - 1], atol=1e-15)
            worst_count = np.maximum(worst_count, ones)
            worst_tails = max(worst_tails, ones[:low + 1].sum() + ones[high:].sum())
            for s in range(1, k + 1):
                for subset in itertools.combinations(range(k), s):
                    p_all = float(law[REPORTS[:, list(subset)].all(axis=1)].sum())
                    assert p_all <= cooccurrence_bound(params, s) * (1 + 1e-12)
                    worst_together[s] = max(worst_together[s], p_all)
    np.testing.assert_allclose(worst_count, pmfs.max(axis=0), rtol=1e-12)
    assert worst_tails <= bound * (1 + 1e-12) and bound <= 2 * TAIL
    for s, p_all in worst_together.items():
        assert p_all == pytest.approx(cooccurrence_bound(params, s), rel=1e-12)
    assert (low < 0 or pmfs[0][:low + 2].sum() > TAIL) and (high > k or pmfs[-1][high - 1:].sum() > TAIL)


def test_the_extreme_config_has_both_tails() -> None:
    assert rappor_ones_tails(RapporParams(6, 2, 1, 0.001, 0.999, 0.0))[:2] == (0, 4)
    assert rappor_ones_tails(DOCS)[:2] == (12, 38) and cooccurrence_sizes(DOCS) == (4, 8)


def _honest(params: RapporParams, n: int, gen: np.random.Generator, d: int = 32) -> Any:
    """Reports of ``n`` fresh clients, values Zipf over ``d`` candidates (popular values' bits vary together)."""
    values = np.repeat(np.arange(d), zipf(d).counts(n, gen))
    enc: Any = get_protocol("rappor").encoder_type(params)
    return enc.encode_batch(gen.permutation(values), gen, candidates=[f"c{i}" for i in range(d)])


@pytest.mark.parametrize("params", [SMALL, RapporParams(32, 4, 2, 0.5, 0.75, 0.25, mode="google")])
def test_false_alarm_rate_of_the_report_checks(params: RapporParams) -> None:
    """200 honest windows of 2,000 reports at family-wise alpha = 0.05: each check at alpha/3 bounds the alarms at
    5 % in expectation; the limit is the binomial tail's 0.1 % point (21 of 200)."""
    gen = np.random.default_rng(59)
    alarms = sum(check_reports(params, _honest(params, 2000, gen), alpha=0.05).suspicious for _ in range(200))
    assert alarms <= stats.binom.isf(1e-3, 200, 0.05)


@pytest.mark.parametrize("attack", ["mga", "mga-bare"])
def test_power_against_a_5_percent_maximal_gain_attack(attack: str) -> None:
    """The docs' configuration, n = 100,000, β = 0.05, 10 targets, α = 0.01 family-wise (aggregate and reports):
    flagged in at least 8 of 10 windows (each check at 0.002). Padded reports all carry l ones (the spike);
    bare ones carry the targets' bits alone, about 17 of 64, where honest reports pile up less (the spike); both
    set the targets' bits together (the co-occurrence test) while the totals see nothing."""
    gen = np.random.default_rng(5)
    runs = [simulate_attack(DOCS, zipf(128), 100_000, attack=attack, fraction=0.05, targets=10, rng=gen)
            for _ in range(10)]
    assert sum(r.detected for r in runs) >= 8
    caught = {c.name for r in runs for c in r.evidence.checks if c.suspicious}
    assert {"ones_spike", "bits_together"} <= caught
    assert attack == "mga-bare" or "ones_total" not in caught  # padded to the mean: the totals see nothing


def _law_padded(params: RapporParams, targets: list[int], m: int, gen: np.random.Generator) -> dict[str, Any]:
    """Fake reports with the targets' bits set and uniform other bits up to a count drawn from the honest law
    of a filter with h bits: their 1s per report look honest."""
    k = params.num_bloombits
    idx = bloom_index_table(params, [f"item{t}" for t in targets])
    cohort = gen.integers(0, params.num_cohorts, m)
    want = gen.choice(k + 1, size=m, p=rappor_ones_pmfs(params)[-1])
    bits = np.zeros((m, k), bool)
    for i in range(m):
        base = np.unique(idx[:, cohort[i], :])
        rest = gen.permutation(np.setdiff1d(np.arange(k), base))[:max(0, want[i] - base.size)]
        bits[i, base] = bits[i, rest] = True
    return {"cohort": cohort.astype(np.uint8), "bits": np.packbits(bits, axis=1, bitorder="little")}


def test_padding_to_the_honest_law_is_caught_by_bits_set_together() -> None:
    """Fakes whose number of 1s follows the honest law pass the tails and the spike; their targets' bits, set
    together, do not pass the co-occurrence test (β = 0.05, 10 targets, n = 100,000)."""
    gen = np.random.default_rng(8)
    honest = _honest(DOCS, 95_000, gen, 128)
    fake = _law_padded(DOCS, list(range(10)), 5000, gen)
    cols = {k: np.concatenate([np.asarray(honest.columns[k]), fake[k]]) for k in ("cohort", "bits")}
    checks = {c.name: c for c in check_reports(DOCS, cols, alpha=0.01).checks}
    assert checks["bits_together"].suspicious and checks["bits_together"].z > 20
    assert not checks["ones_tails"].suspicious and not checks["ones_spike"].suspicious


def test_bare_reports_sit_in_the_low_tail_when_few_targets() -> None:
    """One target: a bare report has h = 2 ones where honest ones have at least 13 but with probability <= 1e-3."""
    fake = fake_reports(DOCS, "mga-bare", [3], 200, 1, domain=8, candidates=[f"item{i}" for i in range(8)])
    honest = _honest(DOCS, 20_000, np.random.default_rng(2))
    cols = {k: np.concatenate([np.asarray(honest.columns[k]), np.asarray(fake.columns[k])]) for k in honest.columns}
    assert {c.name: c for c in check_reports(DOCS, cols, alpha=0.01).checks}["ones_tails"].suspicious


def test_the_tested_half_never_changes_the_choice() -> None:
    """Rewriting every tested report leaves the bits chosen as they were: the choice comes from the other side of
    the fold's coins only."""
    gen = np.random.default_rng(4)
    batch = _honest(SMALL, 3000, gen)
    cols = {k: np.asarray(v).copy() for k, v in batch.columns.items()}
    first = report_statistics(SMALL, cols, 7)[1]
    from ldp.batch.rappor_evidence import BitsTogether

    a, b = BitsTogether(SMALL, 7), BitsTogether(SMALL, 7)
    tested = np.unpackbits(BitsTogether(SMALL, 7).split(3000), bitorder="little").astype(bool)
    cols["bits"][tested] = gen.integers(0, 256, cols["bits"][tested].shape, dtype=np.uint8)
    hist, hits = np.zeros(17, np.int64), np.zeros(1 + len(cooccurrence_sizes(SMALL)), np.int64)
    a.add(np.asarray(batch.columns["cohort"]), np.asarray(batch.columns["bits"]), hist.copy(), hits.copy())
    b.add(cols["cohort"], cols["bits"], hist, hits)
    assert (a.masks == b.masks).all() and (a.chosen == b.chosen).all() and a.chosen.all()
    assert first[0] == hits[0] == tested.sum()


@st.composite
def _window(draw: st.DrawFn) -> tuple[RapporParams, dict[str, np.ndarray]]:
    k = draw(st.integers(1, 24))
    params = RapporParams(k, draw(st.integers(1, k)), draw(st.integers(1, 3)), *draw(st.sampled_from(
        [(0.25, 0.75, 0.5), (0.0, 1.0, 0.0), (0.5, 0.75, 0.9)])), mode=draw(st.sampled_from(["ldp", "google"])))
    n = draw(st.integers(0, 40))
    fill = draw(st.sampled_from(["zeros", "ones", "random"]))
    width = (k + 7) // 8
    if fill == "random":
        rows = np.frombuffer(draw(st.binary(min_size=n * width, max_size=n * width)), np.uint8).reshape(n, width)
    else:
        rows = np.full((n, width), 0 if fill == "zeros" else 0xFF, np.uint8)  # padding bits set too
    one = draw(st.booleans())
    cohort = np.zeros(n, np.uint8) if one else np.asarray(draw(st.lists(
        st.integers(0, params.num_cohorts - 1), min_size=n, max_size=n)), np.uint8)
    return params, {"cohort": cohort, "bits": rows}


@settings(max_examples=120, deadline=None)
@given(window=_window(), alpha=st.floats(1e-6, 0.5))
def test_odd_windows_give_valid_checks(window: tuple[RapporParams, dict[str, np.ndarray]], alpha: float) -> None:
    """Empty windows, one cohort, all zeros, all ones, one report, any k and h: as many checks as announced, each
    a p-value in [0, 1] and a verdict."""
    params, cols = window
    law = law_for(params)
    assert law is not None
    checks = law.report_checks(params, cols, alpha)
    assert len(checks) == law.report_check_count(params) == 3 + int(pairs_enabled(params))
    for c in checks:
        assert 0.0 <= c.p_value <= 1.0 and c.verdict in ("ok", "suspicious") and c.reports == cols["bits"].shape[0]


def test_evidence_counts_the_report_checks_in_its_alpha() -> None:
    """Totals (2), the cohorts' counts (1), the per-report statistics (3) and the pair cells (1) the fold kept: each
    check at alpha/7, reports given or not (they would repeat what the aggregate holds). A simulated aggregate
    holds no per-report statistics: its totals and counts at alpha/3, and the reports, when given, at alpha/7."""
    batch = _honest(SMALL, 4000, np.random.default_rng(1))  # every cohort past the pairs' first choice, whatever
    agg = get_protocol("rappor").aggregate_type(SMALL)        # the fold's coins (fresh OS entropy)
    agg.add(batch)
    names = ["ones_total", "ones_cohort", "cohort_reports", "ones_tails", "ones_spike", "bits_together", "pair_law"]
    for ev in (poisoning_evidence(agg, batch, alpha=0.07), poisoning_evidence(agg, alpha=0.07)):
        assert [c.name for c in ev.checks] == names
        assert all(c.alpha == pytest.approx(0.01) for c in ev.checks)
    sim = get_protocol("rappor").aggregate_type.simulate(SMALL, {"a": 300, "b": 200}, 1)
    assert [c.name for c in poisoning_evidence(sim, alpha=0.07).checks] == names[:3]
    assert [c.name for c in poisoning_evidence(sim, batch, alpha=0.07).checks] == names


def test_the_aggregate_runs_the_report_checks_as_the_reports_do() -> None:
    """Folded in one batch or in many, read back from its file, merged from two halves: the aggregate's checks
    are those of its reports (the same statistics when folded in one batch; valid tests however folded)."""
    gen = np.random.default_rng(12)
    batch = _honest(DOCS, 20_000, gen)
    cols = {k: np.asarray(v) for k, v in batch.columns.items()}
    agg_type = get_protocol("rappor").aggregate_type
    whole = agg_type(DOCS)
    whole._together = BitsTogether(DOCS, 3)  # the fold's coins, drawn as report_statistics draws them
    whole.add(batch)
    hist, together = report_statistics(DOCS, cols, 3)
    assert (whole.ones_hist == hist).all() and (whole.together == together).all()
    again = type(whole).from_bytes(whole.to_bytes())
    assert (again.ones_hist == hist).all() and (again.together == together).all()
    halves = [agg_type(DOCS), agg_type(DOCS)]
    for i, part in enumerate(halves):
        for start in range(i * 10_000, (i + 1) * 10_000, 500):  # 20 batches of 500 each
            part.add(batch.take(np.arange(start, start + 500)) if hasattr(batch, "take") else
                     type(batch)(batch.protocol, batch.fingerprint, batch.schema,
                                 {k: v[start:start + 500] for k, v in cols.items()}))
    merged = halves[0].merge(halves[1])
    assert (merged.ones_hist == hist).all() and 5_000 < merged.together[0] < 10_000
    assert not poisoning_evidence(merged, alpha=0.01).suspicious
