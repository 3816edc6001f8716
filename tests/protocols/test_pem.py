"""PEM (prefix extending method over OLH): params, client, exact audit, estimator and variance, discovery."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import stats

from ldp.batch.pem import key_support
from ldp.decoders.base import Aggregate, AggregateFormatError
from ldp.decoders.pem import PEMAggregate, null_threshold, pem_detectable_share, pem_null_se, pem_variance
from ldp.encoders.local_hashing import lh_hash
from ldp.encoders.pem import PEMEncoder, PEMParams, prefix_key
from ldp.privacy.accountant import BudgetLedger

SMALL = PEMParams(2.0, max_length=2)  # G = 2 groups: prefixes of 8 and 16 bits


def enc(params=SMALL, rng=1):
    return PEMEncoder(params, rng=rng, simulation=True)


# ------------------------------------------------------------------------------------------ params
@pytest.mark.parametrize("kwargs, rule", [
    ({"epsilon": 0}, "epsilon must be finite and > 0"),
    ({"epsilon": 1, "max_length": 0}, r"max_length \(bytes\) must be in"),
    ({"epsilon": 1, "max_length": 1, "start_bits": 9}, "start_bits must be in"),
    ({"epsilon": 1, "step_bits": 17}, "step_bits must be in"),
    ({"epsilon": 1, "top_k": 0}, "top_k must be in"),
    ({"epsilon": 1, "oracle": "oue"}, "oracle must be one of 'olh', 'grr', 'auto'"),
    ({"epsilon": 1, "oracle": "grr"}, r"oracle='grr' .* at most 2\^16: the last group's prefixes have 80 bits"),
    ({"epsilon": 1, "truncate": 1}, "truncate must be a bool"),
    ({"epsilon": 40}, "too large for olh"),
])
def test_params_refused_naming_the_rule(kwargs, rule):
    with pytest.raises((TypeError, ValueError), match=rule):
        PEMParams(**kwargs)


def test_schedule_and_cost():
    p = PEMParams(4.0, max_length=10, start_bits=12, step_bits=16)
    assert p.groups == 6 and [p.prefix_bits(j) for j in range(6)] == [12, 28, 44, 60, 76, 80]
    assert p.privacy_cost == p.olh.privacy_cost and p.g == round(math.exp(4)) + 1
    assert [f.name for f in p.schema] == ["group", "seed", "y"]
    assert PEMParams.from_dict(p.to_dict()) == p


# ------------------------------------------------------------------------------------------ client
@pytest.mark.parametrize("bad, err", [("", "non-empty"), (b"a\x00", "NUL"), ("abc", "over max_length"),
                                      (3, "str or bytes"), ("é\x00", "NUL")])
def test_values_refused_before_any_charge(bad, err):
    ledger = BudgetLedger()
    e = PEMEncoder(SMALL, ledger=ledger, metric="m")
    with pytest.raises((TypeError, ValueError), match=err):
        e.encode(bad)
    assert ledger.spent("m", "lifetime").epsilon == 0.0
    e.encode("ab")
    assert ledger.spent("m", "lifetime").epsilon == SMALL.privacy_cost.epsilon


def test_padding_and_truncation():
    assert SMALL.padded("a") == b"a\x00" and SMALL.padded(b"\xff\xfe") == b"\xff\xfe"
    cut = PEMParams(1.0, max_length=3, truncate=True)
    assert cut.padded("abcd") == b"abc" and cut.padded("aé€") == "aé".encode()  # € would be cut mid-character
    assert cut.padded(b"\xe2\x82\xac\xe2") == b"\xe2\x82\xac"  # bytes: cut as they are
    with pytest.raises(ValueError, match="after truncation"):
        PEMParams(1.0, max_length=1, truncate=True).padded("€")


def test_report_is_olh_of_the_prefix_key():
    p = PEMParams(1.0, max_length=5, start_bits=8, step_bits=16)  # 8, 24, 40 bits: the last one hashed
    assert p.key_of("hello", 0) == ord("h") and p.key_of("hello", 1) == int.from_bytes(b"hel", "big")
    assert p.key_of("hello", 2) == prefix_key(int.from_bytes(b"hello", "big"), 40) != int.from_bytes(b"hell", "big")
    for r in (enc(p, rng=s).encode("hello") for s in range(20)):
        key = p.key_of("hello", r.payload["group"])
        assert 0 <= r.payload["y"] < p.g and lh_hash(key, r.payload["seed"], p.g) in range(p.g)


@pytest.mark.parametrize("g", [2, 5, 56, 64])
def test_key_support_is_the_brute_force_count(g):
    gen = np.random.default_rng(g)
    seeds = gen.integers(0, 2**32, 700, dtype=np.uint32)
    ys = gen.integers(0, g, 700, dtype=np.uint32)
    keys = [0, 1, 2**32 - 1, *gen.integers(0, 2**32, 600).tolist()]  # > one block of keys
    brute = [sum(lh_hash(k, int(s), g) == int(y) for s, y in zip(seeds, ys, strict=True)) for k in keys[:40]]
    assert key_support(seeds, ys, keys, g)[:40].tolist() == brute


# ------------------------------------------------------------------------------ estimator, variance
def test_given_groups_and_null_se():
    values = np.repeat([0, 1], [300, 100])
    groups = np.tile([0, 1], 200)
    cols = enc().encode_batch(values, rng=3, candidates=["ab", "b"], groups=groups).columns
    assert cols["group"].tolist() == groups.tolist()
    agg = PEMAggregate(SMALL)
    agg.add(enc().encode_batch(values, rng=3, candidates=["ab", "b"], groups=groups))
    assert agg.group_n.tolist() == [200, 200]
    assert pem_null_se(SMALL, 400, 200) == pytest.approx(math.sqrt(pem_variance(SMALL, [0], 400, 200)[0]))
    with pytest.raises(ValueError, match="groups must be"):
        enc().encode_batch(values, candidates=["ab", "b"], groups=groups + 1)


# ------------------------------------------------------------------------------------------ discovery
def test_discover_finds_the_heavy_strings_and_no_false_one():
    p = PEMParams(4.0, max_length=4)
    truth = {"the": 20_000, "of": 12_000, "and": 9_000, "to": 7_000, "a": 6000, "in": 5000, "zzzz": 30}
    rest = {f"w{i:03d}": 20 for i in range(300)}
    agg = PEMAggregate.simulate(p, {**truth, **rest}, 7)
    found = agg.discover(alphabet="abcdefghijklmnopqrstuvwxyz0123456789")
    assert set(list(truth)[:6]) <= set(found.strings.items)
    assert set(found.strings.items) <= set(truth) | set(rest)
    lo, hi = found.strings.ci_low, found.strings.ci_high
    assert sum(lo[i] <= {**truth, **rest}[w] <= hi[i] for i, w in enumerate(found.strings.items)) >= 5
    assert len(found.rounds) == p.groups and "strings reported" in found.summary()
    assert found.to_dicts()[0]["item"] == "the"
    plain = agg.discover(alpha=None, false_prefixes=None, top_k=4)  # the paper's rule: top-k each round
    assert plain.strings.items[:1] == ["the"] and len(plain.strings.items) == 4
    with pytest.raises(ValueError, match="top_k"):
        agg.discover(top_k=0)
    with pytest.raises(ValueError, match="expected number"):
        agg.discover(alpha=-1)


@pytest.mark.parametrize("group_n", [60, 700, 20_000])
def test_null_threshold_is_the_exact_binomial_quantile(group_n):
    """An absent prefix's support is Binomial(N_j, 1/g): the count cutoff is exceeded with probability at
    most the level, and is the smallest such cutoff (one support count less would exceed it)."""
    p = PEMParams(6.0, max_length=3)
    n, level, q = 3 * group_n, 1e-3, p.q_star
    thr = null_threshold(p, n, group_n, level)
    c = thr / (n / group_n) * (p.p - q) + group_n * q  # back to a support count
    assert c == pytest.approx(round(c)) and stats.binom.sf(round(c), group_n, q) <= level
    assert stats.binom.sf(round(c) - 1, group_n, q) > level
    support = np.random.default_rng(group_n).binomial(group_n, q, 200_000)  # absent prefixes' supports
    exceed = np.mean(n / group_n * (support - group_n * q) / (p.p - q) > thr)
    assert exceed <= level + 4 * math.sqrt(level / 200_000)
    normal = stats.norm.isf(level) * pem_null_se(p, n, group_n)  # the normal cutoff is too low in small groups
    if group_n == 60:
        assert normal < thr


def test_detectable_share_is_the_last_threshold():
    p = PEMParams(4.0, max_length=4)
    agg = PEMAggregate.simulate(p, {"the": 20_000, "of": 12_000, "zz": 8000}, 3)
    rounds = agg.discover(alpha=0.05).rounds
    share = pem_detectable_share(p, agg.n, 0.05, rounds[-1]["candidates"])
    assert rounds[-1]["threshold"] / agg.n == pytest.approx(share, rel=0.05)  # N_j is about n/G
    assert pem_detectable_share(p, 10**6) < pem_detectable_share(p, 10**5)


def test_discover_on_nothing():
    with pytest.raises(ValueError, match="empty"):
        PEMAggregate(SMALL).discover()
    agg = PEMAggregate.simulate(SMALL, {"ab": 50}, 1)
    assert agg.discover(alphabet="xy").strings.items == []  # every candidate pruned


# -------------------------------------------------------------------- aggregate, wire format and rejects
def line(payload, fp=SMALL.fingerprint):
    return json.dumps({"v": 1, "protocol": "pem", "params": fp, "payload": payload})


def test_json_lines_merge_frames_and_bytes():
    e = enc(rng=3)
    lines = [e.encode(v).to_json() for v in ["ab", "b", "ab"] * 30]
    bad = [line({"group": 2, "seed": 1, "y": 0}), line({"group": 0, "seed": 1, "y": SMALL.g}),
           line({"group": 0, "seed": 1}), line({"group": 0, "seed": 1, "y": 0}, "0" * 16), "{not json"]
    seen = []
    agg = PEMAggregate(SMALL)
    assert agg.add_json_lines(lines + bad, on_reject=lambda i, err: seen.append(err.reason)) == 90
    assert sum(agg.rejected.values()) == 5 and {"out_of_range", "not_json", "wrong_fingerprint"} <= set(seen)
    other = PEMAggregate(SMALL)
    other.add(e.encode_batch(np.array([0, 1] * 20), rng=4, candidates=["ab", "b"]))
    framed = PEMAggregate(SMALL)
    assert framed.add_bytes(b"".join(e.encode("b").to_bytes() for _ in range(4))) == 4
    merged = PEMAggregate.from_bytes(agg.to_bytes()).merge(other).merge(framed)
    assert merged.n == 134 and merged.rejected == agg.rejected
    assert merged.group_n.tolist() == (agg.group_n + other.group_n + framed.group_n).tolist()
    again = PEMAggregate.from_bytes(merged.to_bytes())
    for a, b in zip(again.reports(), merged.reports(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(again.estimate(["ab"]).count, merged.estimate(["ab"]).count)
    with pytest.raises(ValueError, match="parameters differ"):
        agg.merge(PEMAggregate(PEMParams(1.0, max_length=2)))


def test_bytes_refused_when_damaged():
    agg = PEMAggregate.simulate(SMALL, {"ab": 20}, 1)
    blob = bytearray(agg.to_bytes())
    blob[-6] ^= 1
    with pytest.raises(AggregateFormatError, match="CRC"):
        PEMAggregate.from_bytes(bytes(blob))
    with pytest.raises(AggregateFormatError):
        PEMAggregate.from_bytes(b"LDPA\x01")
    back = Aggregate.from_bytes(agg.to_bytes())  # the generic loader, through PEM's _load_state hook
    assert isinstance(back, PEMAggregate) and back.to_bytes() == agg.to_bytes()
    with pytest.raises(AggregateFormatError, match="CRC"):
        Aggregate.from_bytes(bytes(blob))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"group": st.integers(-2, 4), "seed": st.integers(-1, 2**33), "y": st.integers(-1, 80)}),
    st.dictionaries(st.sampled_from(["group", "seed", "y", "x"]), st.one_of(st.integers(), st.text(max_size=3))),
    st.text(max_size=20)), max_size=12))
def test_report_parser_never_crashes(payloads):
    lines = [p if isinstance(p, str) else line(p) for p in payloads]
    agg = PEMAggregate(SMALL)
    accepted = agg.add_json_lines(lines)
    assert accepted + sum(agg.rejected.values()) == sum(1 for x in lines if x.strip())
    g, s, y = agg.reports()
    assert (g < SMALL.groups).all() and (y < SMALL.g).all() and agg.n == accepted


