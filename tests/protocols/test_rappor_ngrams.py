"""RAPPOR with unknown strings (Fanti et al.): params, client and budget, exact audit, aggregate, discovery."""

import itertools
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support import ROOT
from support.relay import Relay

from ldp.decoders.base import Aggregate, AggregateFormatError
from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
from ldp.decoders.rappor_ngrams_discovery import join_candidates, possible_grams
from ldp.encoders.rappor import bloom_bits
from ldp.encoders.rappor_ngrams import RapporNgramsEncoder, RapporNgramsParams, gram_value, pair_index, pair_of
from ldp.privacy.accountant import BudgetLedger
from ldp.privacy.audit import audit
from ldp.privacy.ledger import MemoizedCharge

SMALL = RapporNgramsParams(16, 2, 4, 0.25, 0.75, 0.5, 8, 1, 2, 0.25, 0.75, 0.5, n=2, max_length=6, alphabet="abcd")
POP = RapporNgramsParams(32, 2, 32, 0.25, 0.75, 0.25, 16, 2, 16, 0.25, 0.75, 0.25, n=2, max_length=6,
                         alphabet="abcdefgh")
WORDS = ["abc", "bad", "cafe", "dead", "face", "beef", "fed", "gag", "hag", "added"]
SHARES = [0.2, 0.15, 0.12, 0.1, 0.1, 0.09, 0.08, 0.07, 0.05, 0.04]


def enc(params=SMALL, rng=1, **kw):
    return RapporNgramsEncoder(params, rng=rng, simulation=True, **kw)


# ------------------------------------------------------------------------------------------ params
BASE = dict(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5, gram_bloombits=8, gram_hashes=1,
            gram_cohorts=2, gram_p=0.25, gram_q=0.75, gram_f=0.5)


@pytest.mark.parametrize("change, rule", [
    ({"max_length": 5}, "must be a multiple of n=2"),
    ({"n": 0}, r"n \(gram length\) must be in"),
    ({"max_length": 2}, r"positions \(L/n\) must be in"),
    ({"alphabet": ""}, "alphabet must be a non-empty str"),
    ({"alphabet": "aba"}, "must not repeat"),
    ({"pad": "a"}, "must not be a character of the alphabet"),
    ({"pad": "__"}, "pad must be one character"),
    ({"truncate": 1}, "truncate must be a bool"),
    ({"gram_hashes": 9}, "num_hashes"),
    ({"p": 0.8}, "0 <= p < q <= 1"),
    ({"gram_f": 1.0}, "f must satisfy"),
])
def test_params_refused_naming_the_rule(change, rule):
    with pytest.raises((TypeError, ValueError), match=rule):
        RapporNgramsParams(**{**BASE, **change})


def test_cost_schema_and_round_trip():
    p = SMALL
    assert p.positions == 3 and p.pairs == 3
    assert p.privacy_cost.epsilon == pytest.approx(p.full.epsilon_one + 2 * p.gram.epsilon_one)
    assert p.epsilon_inf == pytest.approx(p.full.epsilon_inf + 3 * p.gram.epsilon_inf)
    assert [f.name for f in p.schema] == ["cohort", "bits", "gram_cohort", "pos_a", "pos_b", "gram_a", "gram_b"]
    assert RapporNgramsParams.from_dict(p.to_dict()) == p
    assert p.grams("abc") == ("ab", "c_", "__") and p.padded("d") == "d_____"
    assert [pair_of(i, 4) for i in range(6)] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert all(pair_index(*pair_of(i, 5), 5) == i for i in range(10))


def test_padding_and_truncation():
    cut = RapporNgramsParams(**{**BASE, "alphabet": "abcd", "truncate": True})
    assert cut.padded("abcdabcd") == "abcdab" and cut.padded(b"ab") == "ab____"
    report = enc(cut).encode("abcdabcd")
    assert report.payload["pos_a"] < report.payload["pos_b"]
    # values that truncate alike are one encoded string in a batch (regression: "though"/"thought" was
    # refused as a repeated candidate), by strings or by indices into candidates
    cols = enc(cut).encode_batch(["abcdab", "abcdabc", "abcdabd"], np.random.default_rng(2)).columns
    assert cols["bits"].shape[0] == 3
    cols = enc(cut).encode_batch(np.array([0, 1, 2, 1]), np.random.default_rng(2),
                                 candidates=["abcdab", "abcdabc", "ab"]).columns
    assert cols["bits"].shape[0] == 4


@pytest.mark.parametrize("bad, err", [("", "non-empty"), ("abz", "outside the alphabet"),
                                      ("ab_", "outside the alphabet"), ("abcdabc", "over max_length"),
                                      (3, "str or bytes"), (b"\xff", "UTF-8")])
def test_values_refused_before_any_charge(bad, err):
    ledger = BudgetLedger()
    e = RapporNgramsEncoder(SMALL, ledger=ledger, metric="m")
    with pytest.raises((TypeError, ValueError), match=err):
        e.encode(bad)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    e.encode("ab")
    assert ledger.spent("m", "lifetime").epsilon == pytest.approx(SMALL.privacy_cost.epsilon)


# ------------------------------------------------------------------------------------------ budget
def test_ledger_charges_each_prr_exactly_memoized():
    ledger = BudgetLedger()
    e = RapporNgramsEncoder(SMALL, secret=b"s", rng=5, simulation=True, ledger=ledger, metric="m")
    f1, finf = SMALL.full.epsilon_one, SMALL.full.epsilon_inf
    g1, ginf = SMALL.gram.epsilon_one, SMALL.gram.epsilon_inf
    per_position = [0] * SMALL.positions
    for t in range(1, 12):
        r = e.encode("abc")
        per_position[r.payload["pos_a"]] += 1
        per_position[r.payload["pos_b"]] += 1
        want = min(t * f1, finf) + sum(min(k * g1, ginf) for k in per_position)
        assert ledger.spent("m", "lifetime").epsilon == pytest.approx(want)
    assert ledger.spent("m", "lifetime").epsilon <= SMALL.epsilon_inf + 1e-9


def test_single_charge_for_the_telemetry_client_is_conservative():
    e = enc(secret=b"s")
    prepared = e.prepare("abc")
    one = e.charge_for(prepared)
    assert isinstance(one, MemoizedCharge) and one.first == SMALL.privacy_cost
    assert one.cap.epsilon == pytest.approx(SMALL.full.epsilon_inf + 2 * SMALL.gram.epsilon_inf)
    assert sum(c.cap.epsilon for c in e.charges(prepared)) == pytest.approx(one.cap.epsilon)
    again = RapporNgramsEncoder.from_state(SMALL, e.state(), rng=2, simulation=True)
    assert again.cohort == e.cohort and again.gram_cohort == e.gram_cohort
    assert [c.key for c in again.charges(prepared)] == [c.key for c in e.charges(prepared)]


# ------------------------------------------------------------------------------------------ audit
AUDIT = RapporNgramsParams(2, 1, 1, 0.25, 0.75, 0.5, 2, 1, 1, 0.25, 0.75, 0.5, n=2, max_length=4, alphabet="abcd")


def _audit_inputs():
    """Two strings whose n-grams have different Bloom bits at both positions (the worst case)."""
    vals = ["".join(t) for j in (1, 2, 3, 4) for t in itertools.product("abcd", repeat=j)]

    def bits(v):
        g = AUDIT.grams(v)
        return [set(bloom_bits(AUDIT.gram, gram_value(i, g[i]), 0)) for i in range(AUDIT.positions)]

    return next([x, y] for x in vals for y in vals if all(a.isdisjoint(b) for a, b in zip(bits(x), bits(y),
                                                                                         strict=True)))


def _ngram_reporter():
    """``(value, src) -> the n-gram part of a report``, by one client (secret fixed, so building it draws nothing:
    the relay has no source yet) whose every draw, PRRs included (``prr_rng``: never memoized), comes from the
    path's ``src``: the same draws and outputs as a client built per path, without rebuilding it 2^17 times."""
    relay = Relay()
    e = RapporNgramsEncoder(AUDIT, secret=b"s", rng=relay, prr_rng=relay)

    def report(value, src):
        relay.current = src
        d = e.ngram_payload(e.prepare(value))
        return d["pos_a"], d["pos_b"], d["gram_a"].to01(), d["gram_b"].to01()

    return report


# exhaustive path enumeration in pure Python: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@pytest.mark.slow
def test_audit_of_the_ngram_report_equals_two_gram_epsilons():
    # 2^16 random paths per input (two slots of PRR + IRR over 2 bits): about 4 s of CPU
    result = audit(_audit_inputs(), _ngram_reporter())
    assert result.matches(2 * AUDIT.gram.epsilon_one), (result.epsilon, 2 * AUDIT.gram.epsilon_one)


# ------------------------------------------------------------------------------------------ batch law
def test_batch_bits_follow_the_first_report_law():
    p = RapporNgramsParams(**{**BASE, "gram_cohorts": 1, "alphabet": "abcd"})
    cols = enc(p).encode_batch(["abc"] * 30000, np.random.default_rng(3)).columns
    pairs = np.bincount(cols["pos_a"] * 3 + cols["pos_b"], minlength=9)[[1, 2, 5]]
    assert abs(pairs / 30000 - 1 / 3).max() < 0.015  # 3.5 standard errors
    sel = cols["pos_a"] == 0
    ones = np.unpackbits(cols["gram_a"][sel], axis=1, bitorder="little", count=8).mean(axis=0)
    bloom = set(bloom_bits(p.gram, gram_value(0, "ab"), 0))
    want = np.array([p.gram.q_star if i in bloom else p.gram.p_star for i in range(8)])
    assert abs(ones - want).max() < 4 * np.sqrt(0.25 / sel.sum())


# ------------------------------------------------------------------------------------------ server
def line(payload, fp=SMALL.fingerprint):
    return json.dumps({"v": 1, "protocol": "rappor-ngrams", "params": fp, "payload": payload})


GOOD = {"cohort": 0, "bits": "0" * 16, "gram_cohort": 1, "pos_a": 0, "pos_b": 2, "gram_a": "0" * 8, "gram_b": "1" * 8}


def test_malformed_reports_rejected_with_a_reason_and_counted():
    e = enc(rng=3)
    lines = [e.encode(v).to_json() for v in ["ab", "bad", "ab"] * 10]
    bad = [line({**GOOD, "pos_a": 2}), line({**GOOD, "pos_b": 3}), line({**GOOD, "gram_a": "0" * 7}),
           line({**GOOD, "gram_cohort": 2}), line(GOOD, "0" * 16), "{not json"]
    seen = []
    agg = RapporNgramsAggregate(SMALL)
    assert agg.add_json_lines(lines + bad + [line(GOOD)], on_reject=lambda i, err: seen.append(err.reason)) == 31
    assert seen == ["not_json", "bad_value", "out_of_range", "bad_length", "out_of_range", "wrong_fingerprint"]
    batch = e.encode_batch(["ab", "cab", "d"] * 4, np.random.default_rng(1))
    batch.columns["pos_a"][[0, 5]] = 2
    batch.columns["pos_b"][[0, 5]] = 1
    assert agg.add(batch) == 10 and agg.rejected["bad_value"] == 3


def test_merge_bytes_and_frames_round_trip():
    e = enc(rng=4)
    agg = RapporNgramsAggregate(SMALL)
    agg.add_json_lines([e.encode(v).to_json() for v in ["ab", "bad"] * 20] + ["{bad"])
    other = RapporNgramsAggregate.simulate(SMALL, {"ab": 30, "dcba": 10}, 2)
    framed = RapporNgramsAggregate(SMALL)
    assert framed.add_bytes(b"".join(e.encode("c").to_bytes() for _ in range(4))) == 4
    merged = RapporNgramsAggregate.from_bytes(agg.to_bytes()).merge(other).merge(framed)
    assert merged.n == 84 and merged.rejected == agg.rejected
    np.testing.assert_array_equal(merged.ones, agg.ones + other.ones + framed.ones)
    again = Aggregate.from_bytes(merged.to_bytes())  # the generic loader, through the _load_state hook
    assert isinstance(again, RapporNgramsAggregate) and again.to_bytes() == merged.to_bytes()
    for name, col in merged.reports().items():
        np.testing.assert_array_equal(again.reports()[name], col)
    assert again.position_aggregate(0).n + again.position_aggregate(1).n + again.position_aggregate(2).n == 2 * 84
    a, b = again.pair_columns(0, 1)
    assert len(a["cohort"]) == len(b["cohort"]) == int(((again.reports()["pos_a"] == 0)
                                                        & (again.reports()["pos_b"] == 1)).sum())
    blob = bytearray(merged.to_bytes())
    blob[-6] ^= 1
    with pytest.raises(AggregateFormatError, match="CRC"):
        RapporNgramsAggregate.from_bytes(bytes(blob))
    with pytest.raises(ValueError, match="parameters differ"):
        agg.merge(RapporNgramsAggregate(POP))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"cohort": st.integers(-1, 4), "bits": st.text("01", max_size=17),
                           "gram_cohort": st.integers(-1, 2), "pos_a": st.integers(-1, 3), "pos_b": st.integers(-1, 3),
                           "gram_a": st.text("01", min_size=7, max_size=9), "gram_b": st.just("0" * 8)}),
    st.dictionaries(st.sampled_from(["cohort", "bits", "pos_a", "x"]), st.one_of(st.integers(), st.text(max_size=3))),
    st.text(max_size=20)), max_size=10))
def test_report_parser_never_crashes(payloads):
    lines = [p if isinstance(p, str) else line(p) for p in payloads]
    agg = RapporNgramsAggregate(SMALL)
    accepted = agg.add_json_lines(lines)
    assert accepted + sum(agg.rejected.values()) == sum(1 for x in lines if x.strip())
    r = agg.reports()
    assert agg.n == accepted == len(r["pos_a"]) and (r["pos_a"] < r["pos_b"]).all() and (r["pos_b"] < 3).all()
    assert RapporNgramsAggregate.from_bytes(agg.to_bytes()).n == accepted


# ------------------------------------------------------------------------------------------ discovery
def test_possible_grams():
    assert possible_grams(SMALL, 0)[:3] == ["aa", "ab", "ac"] and "_a" not in possible_grams(SMALL, 1)
    assert len(possible_grams(SMALL, 0)) == 16 + 4 and len(possible_grams(SMALL, 1)) == 16 + 4 + 1


@pytest.fixture(scope="module")
def found():
    """The aggregate, and its discovery as ``ldp decode`` runs it (the server decode path, without candidates, on
    the aggregate after a round trip through the generic loader: the same bytes, so the same discovery as
    ``agg.discover()``, whose defaults decode passes), run once: the discovery tests read the result, the server
    path's test what it returned."""
    from ldp.jobs.decode import decode_aggregate

    counts = dict(zip(WORDS, np.round(np.array(SHARES) * 100_000).astype(int).tolist(), strict=True))
    agg = RapporNgramsAggregate.simulate(POP, counts, np.random.default_rng(11))
    back = Aggregate.from_bytes(agg.to_bytes())
    assert isinstance(back, RapporNgramsAggregate) and back.to_bytes() == agg.to_bytes()
    runs = []

    def discover(**options):
        runs.append(RapporNgramsAggregate.discover(back, **options))
        return runs[-1]

    back.discover = discover  # type: ignore[method-assign]  # keeps the NgramDiscovery the decode path runs
    served = decode_aggregate(back)
    del back.discover
    assert len(runs) == 1
    return agg, runs[0], back, served


def test_discover_finds_the_heavy_strings_and_no_false_one(found):
    agg, res, _, _ = found
    assert sorted(res.strings.items) == sorted(WORDS)
    true = dict(zip(WORDS, SHARES, strict=True))
    for item, count, se in zip(res.strings.items, res.strings.count, res.strings.std_error, strict=True):
        assert abs(count - true[item] * agg.n) < 4.5 * se
    assert res.summary["candidates"] <= 20 and res.estimates is not None
    assert res.grams[2] == ["d_", "__"]  # "added" is the only string over 4 letters


def test_join_prunes_by_every_pair_and_caps_candidates(found):
    agg, res, _, _ = found
    grams = [["ab", "ba"], ["c_", "d_", "dd"], ["__", "d_"]]
    pairs = {(0, 1): [("ab", "c_", 0.2), ("ba", "d_", 0.1), ("ab", "dd", 0.1)], (0, 2): [("ab", "__", 0.2),
             ("ba", "__", 0.1), ("ab", "d_", 0.1)], (1, 2): [("c_", "__", 0.2), ("d_", "__", 0.1), ("c_", "d_", 0.1)]}
    # "ab dd d_" fails (1, 2); "ab c_ d_" fails the pad rule; "ab dd __" fails (1, 2)
    assert join_candidates(POP, grams, pairs, 10) == ["abc", "bad"]
    with pytest.raises(ValueError, match="exceed max_candidates=1"):
        join_candidates(POP, grams, pairs, 1)
    with pytest.raises(ValueError, match="exceed max_candidates=3"):
        join_candidates(POP, res.grams, res.pairs, 3)
    with pytest.raises(ValueError, match="no reports"):
        RapporNgramsAggregate(POP).discover()
    with pytest.raises(ValueError, match="pair_alpha must be in"):
        agg.discover(pair_alpha=0)


def test_telemetry_client_round_trip(tmp_path):
    from ldp.client.runtime import TelemetryClient
    from ldp.spec import CollectionSpec

    doc = {"spec_version": 1, "name": "app", "budget": {"per_window": 50, "lifetime": 100},
           "upload": {"min_interval_seconds": 0, "max_batch": 100},
           "metrics": {"word": {"protocol": "rappor-ngrams", "params": SMALL.to_dict(), "budget": {"per_report": 10}}}}
    spec = CollectionSpec.from_dict(doc)
    with TelemetryClient(spec, tmp_path / "state.db", rng=1, simulation=True) as client:
        for v in ("ab", "bad", "ab"):
            client.record("word", v)
        assert client.spent("word", "lifetime").epsilon >= 3 * SMALL.privacy_cost.epsilon - 1e-9
        lines = [json.dumps(json.loads(item.line)["report"]) for item in client.pending()]
    agg = RapporNgramsAggregate(SMALL)
    assert agg.add_json_lines(lines) == 3 and not agg.rejected


def test_simulation_script_runs(tmp_path, capsys):
    import sys

    sim = ROOT / "simulations"
    sys.path.insert(0, str(sim))
    try:
        import rappor_ngrams
    finally:
        sys.path.remove(str(sim))
    assert rappor_ngrams.main(["--ns", "20000", "--epsilons", "8", "--reps", "1", "--words", "english-like",
                               "--vocab", "200", "--out", str(tmp_path)]) == 0
    assert "rec@10" in capsys.readouterr().out
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[0].startswith("n,epsilon,gram")


def test_the_server_decode_path_discovers_or_estimates(found):
    """``ldp decode`` (ldp.jobs.decode.decode_aggregate): discovery without candidates, the full-string
    decode with them, after a round trip through the generic aggregate loader."""
    from ldp.jobs.decode import decode_aggregate

    agg, res, back, served = found  # served: decode_aggregate(back), run by the fixture
    for name, col in agg.reports().items():  # the round trip keeps every report the discovery reads
        np.testing.assert_array_equal(back.reports()[name], col)
    assert sorted(served.items) == sorted(res.strings.items) == sorted(WORDS)
    np.testing.assert_array_equal(served.count, res.strings.count)
    est = decode_aggregate(back, [*WORDS, "nope"])  # every held string listed: the absent one stays out
    assert est.items == [*WORDS, "nope"] and est.detected[:-1].all() and not est.detected[-1]
