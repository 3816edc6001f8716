"""RAPPOR client: parameters, Google compatibility, exact privacy audit, memoization, budget, batch path."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from support.relay import Relay

from ldp.encoders.rappor import RapporEncoder, RapporParams, bloom_bits, google_prr_masks
from ldp.privacy.accountant import BudgetExceeded, BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.privacy.audit import audit
from ldp.randomness import RandomSource

DEMO = RapporParams(16, 2, 64, 0.5, 0.75, 0.5)


# -- parameters -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    (dict(num_bloombits=0), "num_bloombits"),
    (dict(num_hashes=17, num_bloombits=16), "num_hashes"),
    (dict(f=1.0), "0 <= f < 1"),
    (dict(f=-0.1), r"\[0, 1\]"),
    (dict(p=0.75, q=0.5), "p < q"),
    (dict(p=0.5, q=0.5), "p < q"),
    (dict(num_cohorts=0), "num_cohorts"),
    (dict(mode="chrome"), "mode"),
])
def test_params_are_validated_with_clear_errors(kwargs, match):
    base = dict(num_bloombits=16, num_hashes=2, num_cohorts=64, p=0.5, q=0.75, f=0.5)
    with pytest.raises(ValueError, match=match):
        RapporParams(**{**base, **kwargs})


def test_no_32_bit_limit_in_ldp_mode():
    params = RapporParams(1000, 3, 4, 0.25, 0.75, 0.5)
    bits = RapporEncoder(params, rng=1, simulation=True).encode("x").payload["bits"]
    assert len(bits) == 1000


# apple-and-theory.md §8.1 and rappor-reference.md §5 (p, q, f, h) -> (p*, q*, ε1, ε∞)
@pytest.mark.parametrize("p, q, f, h, ps, qs, e1, einf", [
    (0.5, 0.75, 0.5, 2, 0.5625, 0.6875, 1.0743, 4.3944),
    (0.5, 0.75, 0.75, 2, 0.59375, 0.65625, 0.5343, 2.0433),
    (0.5, 0.75, 0.5, 1, 0.5625, 0.6875, 0.5371, 2.1972),
    (0.39, 0.61, 0.45, 2, 0.4395, 0.5605, 0.9728, 4.9471),
    (0.25, 0.75, 0.5, 2, 0.375, 0.625, 2.0433, 4.3944),
])
def test_epsilon_formulas_match_the_published_values(p, q, f, h, ps, qs, e1, einf):
    pr = RapporParams(16, h, 64, p, q, f)
    assert pr.p_star == pytest.approx(ps, abs=1e-12) and pr.q_star == pytest.approx(qs, abs=1e-12)
    assert pr.epsilon_one == pytest.approx(e1, abs=5e-5)
    assert pr.epsilon_inf == pytest.approx(einf, abs=5e-5)
    assert pr.privacy_cost == PrivacyCost(pr.epsilon_one)


def test_f_zero_has_no_finite_longitudinal_bound():
    pr = RapporParams(8, 2, 128, 0.225, 0.775, 0.0)
    assert math.isinf(pr.epsilon_inf) and pr.epsilon_one == pytest.approx(4.9471, abs=5e-5)
    with pytest.raises(ValueError, match="no finite"):
        _ = RapporParams(8, 2, 4, 0.0, 1.0, 0.0).privacy_cost


# -- Google compatibility (rappor-reference.md §2.4) -----------------------------------------------
@pytest.mark.parametrize("k, word, cohort, bits, bloom, prr", [
    (16, "v1", 0, [8, 10], 1280, 256), (16, "v1", 5, [10, 0], 1025, 4677), (16, "v1", 63, [1, 4], 18, 1233),
    (16, "v2", 0, [7, 5], 160, 384), (16, "foo", 0, [6, 6], 64, 352), (16, "foo", 63, [7, 13], 8320, 8328),
    (32, "v1", 0, [24, 26], 83886080, 3856924715), (32, "foo", 63, [7, 29], 536871040, 537944305),
])
def test_google_bloom_and_prr_vectors(k, word, cohort, bits, bloom, prr):
    params = RapporParams(k, 2, 64, 0.0, 1.0, 0.5, mode="google")  # p=0, q=1: the IRR is the PRR
    enc = RapporEncoder(params, secret="c1", cohort=cohort, rng=7, simulation=True)
    assert list(bloom_bits(params, word, cohort)) == bits
    assert enc.encode_parts(word) == (bloom, prr, prr)
    report = enc.encode(word)
    assert report.payload["cohort"] == cohort
    assert sum(b << i for i, b in enumerate(report.payload["bits"])) == prr


@pytest.mark.parametrize("word, expected", [("v1", (17, 58)), ("v2", (3, 159)), ("v3", (150, 202))])
def test_google_prr_mask_vectors(word, expected):
    assert google_prr_masks(b"secret", word.encode(), 0.5, 8) == expected


class CyclicMock(RandomSource):
    """Google's rappor_test MockRandom: bit i of a mask is ``cycle[i % 3] < probability``."""

    def randbits(self, k):
        raise AssertionError("the IRR must draw through bernoulli_bits")

    def bernoulli_bits(self, p, k):
        return sum((([0.0, 0.6, 0.0][i % 3]) < p) << i for i in range(k))


def test_google_encoder_vector_with_mock_irr():
    params = RapporParams(16, 2, 64, 0.5, 0.75, 0.5, mode="google")
    enc = RapporEncoder(params, secret="secret", cohort=0, rng=CyclicMock())
    assert enc.encode_parts("abc") == (8256, 57576, 64493)


@pytest.mark.parametrize("f", [0.0, 0.25, 0.45, 0.5, 0.3, 0.999])
def test_google_f_quantization_is_ceil_128f(f):
    # Google draws a 7-bit uniform v and noises the bit iff v < 128 f
    assert Fraction(sum(v < f * 128 for v in range(128)), 128) == Fraction(math.ceil(128 * f), 128)
    pr = RapporParams(8, 2, 4, 0.25, 0.75, f, mode="google")
    assert pr.f_effective == math.ceil(128 * f) / 128
    assert RapporParams(8, 2, 4, 0.25, 0.75, f).f_effective == f


# -- exact privacy audit -------------------------------------------------------------------------
def _disjoint_values(params, cohort, count=2):
    """Values whose Bloom filters in ``cohort`` have h distinct bits and are pairwise disjoint."""
    chosen, used = [], set()
    for i in range(10_000):
        b = set(bloom_bits(params, f"v{i}", cohort))
        if len(b) == params.num_hashes and not b & used:
            chosen.append(f"v{i}")
            used |= b
            if len(chosen) == count:
                return chosen
    raise AssertionError("no disjoint values found")


AUDIT_CONFIGS = [  # small enough to enumerate: 2^(4k) random paths per input
    RapporParams(4, 2, 4, 0.5, 0.75, 0.5),
    RapporParams(3, 1, 2, 0.39, 0.61, 0.45),
    RapporParams(2, 1, 2, 0.25, 0.5, 0.25),
]


@pytest.mark.parametrize("params", AUDIT_CONFIGS)
def test_audit_prr_alone_equals_epsilon_inf(params):
    values = _disjoint_values(params, cohort=1)

    def prr(x, src):
        enc = RapporEncoder(params, secret=b"s", cohort=1, prr_rng=src)
        return enc.permanent_response(enc.prepare(x))

    assert audit(values, prr).matches(params.epsilon_inf)


def _reporter(params, cohort):
    """``(x, src) -> one report's JSON line`` by one client (secret and cohort fixed, so building it draws nothing:
    the relay has no source yet) whose every draw, the PRR included (``prr_rng``: never memoized), comes from the
    path's ``src``: the same draws and outputs as a client built per path, without rebuilding it per path."""
    relay = Relay()
    enc = RapporEncoder(params, secret=b"s", cohort=cohort, rng=relay, prr_rng=relay)

    def one_report(x, src):
        relay.current = src
        return enc.encode(x).to_json()

    return one_report


# exhaustive path enumeration in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@pytest.mark.parametrize("params", AUDIT_CONFIGS)
def test_audit_one_report_equals_epsilon_one(params):
    values = _disjoint_values(params, cohort=1)
    result = audit(values, _reporter(params, cohort=1))
    assert result.matches(params.epsilon_one), (result.epsilon, params.epsilon_one)


# exhaustive path enumeration in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
def test_audit_overlapping_filters_stay_within_the_claim():
    params = AUDIT_CONFIGS[0]
    values = _disjoint_values(params, cohort=0)
    values.append(next(f"w{i}" for i in range(100) if len(set(bloom_bits(params, f"w{i}", 0))) == 1))

    assert audit(values, _reporter(params, cohort=0)).epsilon <= params.epsilon_one * (1 + 1e-12)


# -- memoization ---------------------------------------------------------------------------------
def test_prr_is_memoized_per_value_from_the_secret():
    a = RapporEncoder(DEMO, secret=b"k" * 32, cohort=3)
    b = RapporEncoder.from_state(DEMO, a.state())
    assert b.cohort == 3 and b.secret == a.secret
    for word in ("alpha", "beta", b"\x00bytes"):
        prrs = {enc.permanent_response(enc.prepare(word)) for enc in (a, b, a)}
        assert len(prrs) == 1
    other = RapporEncoder(DEMO, secret=b"j" * 32, cohort=3)
    words = [f"w{i}" for i in range(40)]
    same = sum(a.permanent_response(a.prepare(w)) == other.permanent_response(other.prepare(w)) for w in words)
    assert same < 10  # independent PRRs agree on 16 bits only by chance


def test_prr_bits_have_the_stated_probabilities():
    """Over many secrets: Pr[B'_i = 1 | B_i = 1] = 1 − f/2 and Pr[B'_i = 1 | B_i = 0] = f/2."""
    params = RapporParams(16, 2, 1, 0.5, 0.75, 0.5)
    trials = 4000
    on, off = 0, 0
    bloom = None
    for s in range(trials):
        enc = RapporEncoder(params, secret=s.to_bytes(4, "big"), cohort=0)
        prep = enc.prepare("value")
        bloom = prep.bloom
        prr = enc.permanent_response(prep)
        on += (prr & bloom).bit_count()
        off += (prr & ~bloom & 0xFFFF).bit_count()
    n_on = trials * bloom.bit_count()
    n_off = trials * (16 - bloom.bit_count())
    for hits, n, p in ((on, n_on, 0.75), (off, n_off, 0.25)):
        assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_irr_is_fresh_per_report():
    enc = RapporEncoder(DEMO, secret=b"x", cohort=0, rng=5, simulation=True)
    reports = {enc.encode("same").payload["bits"].to01() for _ in range(30)}
    assert len(reports) > 10


def test_bad_values_are_type_errors():
    enc = RapporEncoder(DEMO, rng=1, simulation=True)
    for bad in (3, 2.5, None, ["a"]):
        with pytest.raises(TypeError, match="str or bytes"):
            enc.encode(bad)
    with pytest.raises(ValueError, match="cohort"):
        RapporEncoder(DEMO, cohort=64)


# -- budget ---------------------------------------------------------------------------------------
def test_ledger_charges_eps1_per_report_capped_at_eps_inf_per_value():
    ledger = BudgetLedger()
    enc = RapporEncoder(DEMO, secret=b"s", cohort=0, rng=1, simulation=True, ledger=ledger, metric="homepage")
    e1, einf = DEMO.epsilon_one, DEMO.epsilon_inf
    for t in range(1, 8):
        enc.encode("example.com")
        assert ledger.spent("homepage", "lifetime").epsilon == pytest.approx(min(t * e1, einf))
    enc.encode("other.org")  # another value: its own PRR, its own charge
    assert ledger.spent("homepage", "lifetime").epsilon == pytest.approx(einf + e1)
    fresh = RapporEncoder(DEMO, secret=b"new secret", cohort=0, rng=1, simulation=True, ledger=ledger,
                          metric="homepage")
    fresh.encode("example.com")  # a new secret means a new PRR: charged again
    assert ledger.spent("homepage", "lifetime").epsilon == pytest.approx(einf + 2 * e1)


def test_upfront_charging_and_budget_exhaustion():
    ledger = BudgetLedger(metrics={"m": BudgetPolicy(lifetime=PrivacyCost(DEMO.epsilon_inf * 1.5))})
    enc = RapporEncoder(DEMO, secret=b"s", cohort=0, rng=1, simulation=True, ledger=ledger, metric="m",
                        charging="upfront")
    enc.encode("a")
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(DEMO.epsilon_inf)
    for _ in range(5):
        enc.encode("a")  # memoized: nothing more to charge
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(DEMO.epsilon_inf)
    with pytest.raises(BudgetExceeded):
        enc.encode("b")
    assert len(ledger.history("m")) == 6
    with pytest.raises(ValueError, match="charging"):
        RapporEncoder(DEMO, charging="never")


def test_window_cap_below_eps1_refuses_every_report():
    ledger = BudgetLedger(metrics={"m": BudgetPolicy(per_window=PrivacyCost(DEMO.epsilon_one / 2))})
    enc = RapporEncoder(DEMO, rng=1, simulation=True, ledger=ledger, metric="m")
    with pytest.raises(BudgetExceeded):
        enc.encode("a")
    assert ledger.history("m") == []


# -- batch path ------------------------------------------------------------------------------------
def test_batch_reports_have_the_per_report_bit_probabilities():
    params = RapporParams(32, 2, 4, 0.25, 0.75, 0.5)
    enc = RapporEncoder(params, rng=1, simulation=True)
    cands = ["a", "b", "c"]
    n = 60_000
    batch = enc.encode_batch(np.zeros(n, dtype=np.int64), rng=3, candidates=cands, cohorts=2)
    bits = np.unpackbits(batch.columns["bits"], axis=1, bitorder="little")[:, :32]
    assert (batch.columns["cohort"] == 2).all()
    on = np.array(sorted(set(bloom_bits(params, "a", 2))))
    mask = np.zeros(32, bool)
    mask[on] = True
    for sel, p in ((mask, params.q_star), (~mask, params.p_star)):
        rate = bits[:, sel].mean()
        assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / (n * sel.sum()))


def test_batch_input_errors():
    enc = RapporEncoder(DEMO, rng=1, simulation=True)
    with pytest.raises(ValueError, match="candidates"):
        enc.encode_batch(np.array([0, 1]))
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        enc.encode_batch(np.array([0, 2]), candidates=["a", "b"])
    with pytest.raises(TypeError, match="str or bytes"):
        enc.encode_batch(np.array([0]), candidates=[1])
    with pytest.raises(ValueError, match="more than once"):
        enc.encode_batch(np.array([0]), candidates=["a", "a"])
    with pytest.raises(ValueError, match="cohorts"):
        enc.encode_batch(np.array([0]), candidates=["a"], cohorts=64)
