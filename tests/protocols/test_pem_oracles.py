"""PEM's oracles: GRR for the groups whose prefix domain is small ("grr", and "auto" per group by variance),
with "olh" parameters, fingerprints and reports unchanged."""

import hashlib
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import stats

from ldp.batch.pem import pem_encode_batch
from ldp.decoders.aggregate_file import AggregateFormatError
from ldp.decoders.pem import PEMAggregate, null_threshold, pem_detectable_share, pem_null_se, pem_variance
from ldp.encoders.pem import MAX_GRR_BITS, PEMEncoder, PEMParams, null_variance
from ldp.reports import Report, ReportBatch

TINY = {"max_length": 1, "start_bits": 4, "step_bits": 4, "seed_range": 3}  # groups of 4 and 8 bits: enumerable
MIXED = PEMParams(2.0, oracle="auto", **TINY)  # 3e^2 ≈ 22 > 2^4 − 2: GRR, then 2^8 − 2 > 22: OLH


def enc(params, rng=1):
    return PEMEncoder(params, rng=rng, simulation=True)


# ------------------------------------------------------------------------ "olh" parameters unchanged
@pytest.mark.parametrize("kwargs, fp", [  # fingerprints of the code before the oracle choice existed
    ({"epsilon": 4.0}, "7809d5d0d6484d42"),
    ({"epsilon": 2.0, "max_length": 2}, "89871780156d721c"),
    ({"epsilon": 1.0, "max_length": 5, "start_bits": 8, "step_bits": 16}, "a25bbe6ea2f4ae3b"),
    ({"epsilon": 6.0, "max_length": 3, "truncate": True, "top_k": 8, "seed_range": 3}, "e1ffadbd5f4ea750"),
])
def test_olh_fingerprints_and_dicts_unchanged(kwargs, fp):
    p = PEMParams(**kwargs)
    assert p.fingerprint == fp and p.oracles == ("olh",) * p.groups
    assert list(p.to_dict()) == ["epsilon", "max_length", "start_bits", "step_bits", "top_k", "oracle", "truncate",
                                 "seed_range"] and p.to_dict()["oracle"] == "olh"
    assert [f.size for f in p.schema] == [p.groups, p.seed_range, p.g] and p.privacy_cost == p.olh.privacy_cost


def test_olh_reports_unchanged():
    """Seeded reports and batch columns of the code before the oracle choice existed."""
    p = PEMParams(2.0, max_length=2)
    got = [dict(enc(p, rng=s).encode("ab").payload) for s in range(4)]
    assert got == [{"group": 1, "seed": 1654615998, "y": 3}, {"group": 0, "seed": 2444712010, "y": 7},
                   {"group": 1, "seed": 3707026329, "y": 0}, {"group": 0, "seed": 2545373330, "y": 1}]
    cols = pem_encode_batch(p, np.arange(1000) % 3, np.random.default_rng(9), candidates=["ab", "b", "zz"])
    raw = b"".join(np.asarray(cols[k], np.uint32).tobytes() for k in ("group", "seed", "y"))
    assert hashlib.sha256(raw).hexdigest()[:16] == "4e30450c0b03a0c9"


# ------------------------------------------------------------------------------------ the choice
def test_auto_picks_grr_by_the_realized_null_variance():
    for eps in (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        p = PEMParams(eps, max_length=4, start_bits=4, step_bits=4, oracle="auto")
        for j, o in enumerate(p.oracles):
            bits = p.prefix_bits(j)
            if bits > MAX_GRR_BITS:
                assert o == "olh"
                continue
            grr_v0 = null_variance(p.grr(j).p, p.grr(j).q)
            assert (o == "grr") == (grr_v0 < null_variance(p.p, p.q_star))
            d = 1 << bits
            if abs((d - 2) / (3 * math.exp(eps)) - 1) > 0.1:  # away from the boundary: Wang et al.'s rule
                assert (o == "grr") == (d - 2 < 3 * math.exp(eps)), (eps, bits)
    six = PEMParams(6.0, oracle="auto")  # the docs' example: 3e^6 ≈ 1210 > 2^8 − 2, 2^16 − 2 > 1210
    assert six.oracles == ("grr",) + ("olh",) * 9 and six.y_size(0) == 256 and six.schema[2].size == 404
    assert PEMParams(4.0, oracle="auto").oracles == ("olh",) * 10  # 3e^4 ≈ 164 < 254


def test_grr_params_and_cost():
    p = PEMParams(3.0, max_length=2, oracle="grr")
    assert p.oracles == ("grr", "grr") and [p.y_size(j) for j in range(2)] == [256, 65536]
    assert p.schema[2].size == 65536 and p.privacy_cost.epsilon == max(p.grr(j).privacy_cost.epsilon for j in (0, 1))
    assert p.privacy_cost.epsilon == pytest.approx(3.0, abs=1e-9) and PEMParams.from_dict(p.to_dict()) == p
    assert MIXED.privacy_cost.epsilon == max(MIXED.grr(0).privacy_cost.epsilon, MIXED.olh.privacy_cost.epsilon)
    with pytest.raises(ValueError, match=r"at most 2\^16: the last group's prefixes have 24 bits"):
        PEMParams(3.0, max_length=3, oracle="grr")
    with pytest.raises(ValueError, match="over the cap"):
        PEMParams(3.0, oracle="auto").grr(2)


# ------------------------------------------------------------------------------ client and audit


def test_grr_report_is_the_prefix_or_another():
    for r in (enc(MIXED, rng=s).encode("q").payload for s in range(40)):
        if r["group"] == 0:
            assert r["seed"] == 0 and 0 <= r["y"] < 16
        else:
            assert 0 <= r["y"] < MIXED.g


# ------------------------------------------------------------------------ validation and the aggregate
def line(params, payload):
    return json.dumps({"v": 1, "protocol": "pem", "params": params.fingerprint, "payload": payload})


def test_reports_out_of_their_groups_range_are_refused():
    g = MIXED.g  # OLH group 1: y < g = 8; GRR group 0: y < 16, seed 0
    bad = [{"group": 0, "seed": 1, "y": 3}, {"group": 1, "seed": 1, "y": g}, {"group": 0, "seed": 0, "y": 16}]
    good = [{"group": 0, "seed": 0, "y": 15}, {"group": 1, "seed": 2, "y": g - 1}]
    agg, seen = PEMAggregate(MIXED), []
    assert agg.add_json_lines([line(MIXED, p) for p in bad + good], lambda i, e: seen.append(e.reason)) == 2
    assert seen == ["out_of_range"] * 3 and agg.rejected == {"out_of_range": 3}
    with pytest.raises(Exception, match="seed must be 0 in group 0"):
        MIXED.validate(Report("pem", MIXED.fingerprint, bad[0]))
    cols = {k: np.array([p[k] for p in bad + good + [{"group": 2, "seed": 0, "y": 0}]], np.uint32)
            for k in ("group", "seed", "y")}
    rows = []
    batch = PEMAggregate(MIXED)
    assert batch.add(ReportBatch("pem", MIXED.fingerprint, MIXED.schema, cols), lambda i, e: rows.append(i)) == 2
    assert sorted(rows) == [0, 1, 2, 5] and batch.rejected == {"out_of_range": 4}
    assert batch.group_n.tolist() == agg.group_n.tolist() == [1, 1]


def test_aggregate_round_trip_and_damaged_state():
    agg = PEMAggregate.simulate(MIXED, {"a": 300, "q": 100}, 2)
    back = PEMAggregate.from_bytes(agg.merge(PEMAggregate.simulate(MIXED, {"b": 50}, 3)).to_bytes())
    assert back.n == 450 and back.group_n.tolist() == agg.group_n.tolist()
    np.testing.assert_allclose(back.score(0, [6, 7])[0], agg.score(0, [6, 7])[0])
    g, s, y = agg.reports()
    forged = PEMAggregate(MIXED)
    forged._fold({"group": g, "seed": np.where(g == 0, 1, s), "y": y})  # bypassing validation
    forged.n = agg.n
    with pytest.raises(AggregateFormatError, match="out of range"):
        PEMAggregate.from_bytes(forged.to_bytes())


# ------------------------------------------------------------------------ estimator and variance
def _excess_kurtosis(params, group, t, n, group_n):
    """Excess kurtosis of ``F̂`` given ``N_j``: the oracle's 4th cumulant (its supports are independent
    Bernoullis, ``p`` for the holders, ``q'`` for the others; the group's sampling, near normal, left out)
    over the exact variance squared. The sample variance of ``T`` draws has relative SD
    ``√(2/(T−1) + κ/T)``: GRR's supports over 2^16 prefixes are rare, so far from normal."""
    p, q = params.group_pq(group)
    f = t * group_n / n
    k4 = f * p * (1 - p) * (1 - 6 * p * (1 - p)) + (group_n - f) * q * (1 - q) * (1 - 6 * q * (1 - q))
    return k4 * (n / group_n / (p - q)) ** 4 / pem_variance(params, t, n, group_n, group) ** 2


@pytest.mark.parametrize("params, group", [(PEMParams(2.0, max_length=2, oracle="grr"), 0),
                                           (PEMParams(2.0, max_length=2, oracle="grr"), 1),
                                           (PEMParams(6.0, max_length=2, oracle="auto"), 0)],
                         ids=["grr-8bit", "grr-16bit", "auto-8bit"])
def test_grr_group_unbiased_with_the_exact_variance(params, group, trials=300):
    """Mean within 5 SE; sample variance within 5 of its SDs (relative √(2/(T−1) + κ/T), κ the excess
    kurtosis from the formula) of E[Var(F̂ | N_j)]."""
    assert params.oracle_of(group) == "grr"
    truth = {"ab": 6000, "ac": 3000, "b": 1000}
    shift = params.total_bits - params.prefix_bits(group)
    prefixes = sorted({int.from_bytes(params.padded(w), "big") >> shift for w in truth})
    prefixes.append(int.from_bytes(b"zz", "big") >> shift)  # nobody's
    t = np.array([sum(c for w, c in truth.items() if int.from_bytes(params.padded(w), "big") >> shift == x)
                  for x in prefixes], np.float64)
    gen = np.random.default_rng(11)
    est, var = np.empty((trials, t.size)), np.empty((trials, t.size))
    sizes = []
    for i in range(trials):
        agg = PEMAggregate.simulate(params, truth, gen)
        est[i] = agg.score(group, prefixes)[0]
        sizes.append(int(agg.group_n[group]))
        var[i] = pem_variance(params, t, agg.n, sizes[-1], group)
    expected = var.mean(axis=0)
    kurt = _excess_kurtosis(params, group, t, agg.n, float(np.mean(sizes)))
    assert np.all(np.abs(est.mean(axis=0) - t) < 5 * np.sqrt(expected / trials))
    assert np.all(np.abs(est.var(axis=0, ddof=1) / expected - 1) < 5 * np.sqrt(2 / (trials - 1) + kurt / trials))


@pytest.mark.parametrize("group_n", [60, 5000])
def test_null_threshold_is_grrs_binomial_quantile(group_n):
    p, level = PEMParams(6.0, max_length=3, oracle="auto"), 1e-3
    pg, q = p.group_pq(0)
    assert (pg, q) == (p.grr(0).p, p.grr(0).q) and p.group_pq(1) == (p.p, p.q_star)
    n = 3 * group_n
    thr = null_threshold(p, n, group_n, level, 0)
    c = thr / (n / group_n) * (pg - q) + group_n * q
    assert c == pytest.approx(round(c)) and stats.binom.sf(round(c), group_n, q) <= level
    assert stats.binom.sf(round(c) - 1, group_n, q) > level
    assert pem_null_se(p, n, group_n, 0) < pem_null_se(p, n, group_n, 1)  # GRR's variance is the smaller
    assert pem_detectable_share(p, 10**6) == pem_detectable_share(PEMParams(6.0, max_length=3), 10**6)  # last: OLH


def test_discover_with_a_grr_first_round():
    p = PEMParams(6.0, max_length=4, oracle="auto")
    truth = {"the": 4000, "of": 2500, "and": 2000, "to": 1500, **{f"w{i:03d}": 5 for i in range(200)}}
    found = PEMAggregate.simulate(p, truth, 7).discover(alphabet="abcdefghijklmnopqrstuvwxyz0123456789")
    assert {"the", "of", "and", "to"} <= set(found.strings.items) <= set(truth)
    assert "PEM over GRR, OLH×3" in found.strings.notes[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({"group": st.integers(-1, 2), "seed": st.integers(-1, 3),
                                       "y": st.integers(-1, 17)}), max_size=12))
def test_parser_keeps_only_reports_valid_in_their_group(payloads):
    """JSON lines and a batch of the same rows: the same reports kept, each within its group's range."""
    lines = [line(MIXED, p) for p in payloads]
    agg = PEMAggregate(MIXED)
    accepted = agg.add_json_lines(lines)
    assert accepted + sum(agg.rejected.values()) == len(lines)
    g, s, y = agg.reports()
    assert ((g == 0) & (s == 0) & (y < 16) | (g == 1) & (s < 3) & (y < MIXED.g)).all()
    rows = [p for p in payloads if min(p.values()) >= 0]  # a batch's columns are unsigned
    cols = {k: np.array([p[k] for p in rows], np.int64) for k in ("group", "seed", "y")}
    batch = PEMAggregate(MIXED)
    assert batch.add(ReportBatch("pem", MIXED.fingerprint, MIXED.schema, cols)) == accepted
    for a, b in zip(batch.reports(), agg.reports(), strict=True):
        np.testing.assert_array_equal(np.sort(a), np.sort(b))
