"""Histograms of numbers (dBitFlip, bucketized GRR): parameters, client input before any charge, exact
privacy audit, the estimator's exact mean and variance (by enumeration of one user's outputs, and by
simulation), the batch kernel's law against the client's, aggregation, wire and rejects.

Tolerances: with T independent trials, a mean is within z·σ/√T of its expectation and a sample
variance within z·σ²·√(2/(T−1)) (normal approximation; the estimates are sums of thousands of
independent terms). z is chosen for a family-wise false-failure rate of 1e-6 over each test's checks.
"""

import json
import math
from fractions import Fraction
from functools import partial

import numpy as np
import pytest
from scipy import stats
from support.stats import z_family

from ldp.decoders.histogram import BucketGRRAggregate, DBitFlipAggregate, dbitflip_variance
from ldp.encoders.histogram import BucketGRREncoder, BucketGRRParams, DBitFlipEncoder, DBitFlipParams
from ldp.privacy.accountant import BudgetLedger, BudgetPolicy, PrivacyCost
from ldp.privacy.audit import output_distribution
from ldp.protocols import get_protocol, params_from_dict
from ldp.randomness import RandomSource
from ldp.reports import ReportBatch
from ldp.simulation.collect import accuracy, from_counts

EDGES = (0.0, 10.0, 20.0, 50.0, 100.0)
LABELS = ["[0, 10)", "[10, 20)", "[20, 50)", "[50, 100]"]
TRUTH = np.array([1200, 400, 2000, 400])


def dbf(epsilon: float = 1.0, d: int = 2, edges: tuple[float, ...] = EDGES, clip: bool = False) -> DBitFlipParams:
    return DBitFlipParams(epsilon, edges, d, clip)


# ----------------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("make", [partial(DBitFlipParams, d=1), BucketGRRParams])
@pytest.mark.parametrize("epsilon, edges, exc, message", [
    (0.0, EDGES, ValueError, "epsilon must be finite and > 0"),
    (-1.0, EDGES, ValueError, "epsilon must be finite and > 0"),
    (math.nan, EDGES, ValueError, "epsilon must be finite and > 0"),
    (1.0, (0, 10, 10, 20), ValueError, "strictly increasing"),
    (1.0, (0, 20, 10), ValueError, "strictly increasing"),
    (1.0, (0, math.inf, 10), ValueError, "must be finite"),
    (1.0, (0, math.nan, 10), ValueError, "must be finite"),
    (1.0, (0, 10), ValueError, "between 3 and"),
    (1.0, (), ValueError, "between 3 and"),
    (1.0, "0123", TypeError, "sequence of numbers"),
    (1.0, (0, "1", 2), TypeError, "real numbers"),
    (1.0, (0, True, 2), TypeError, "real numbers"),
])
def test_params_validation_names_the_rule(make, epsilon, edges, exc, message):
    with pytest.raises(exc, match=message):
        make(epsilon, edges)


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"d": 5}, ValueError, r"d must be in \[1, 4\]"),
    ({"d": 0}, ValueError, r"d must be in \[1, 4\]"),
    ({"d": True}, TypeError, "d must be an int"),
    ({"clip": 1}, TypeError, "clip must be a bool"),
    ({"epsilon": 200.0}, ValueError, "too large"),
    ({"epsilon": 1e-30}, ValueError, "too small"),
])
def test_dbitflip_params_validation(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        DBitFlipParams(**{"epsilon": 1.0, "edges": EDGES, **kwargs})


def test_bucket_grr_checks_epsilon_as_grr_does():
    with pytest.raises(ValueError, match="too large"):
        BucketGRRParams(100.0, EDGES)
    with pytest.raises(TypeError, match="clip must be a bool"):
        BucketGRRParams(1.0, EDGES, clip="yes")  # type: ignore[arg-type]


def test_labels_round_trip_and_fingerprints():
    p = dbf(edges=(0, 10, 20, 50, 100))
    assert p.edges == EDGES and list(p.labels) == LABELS
    assert list(BucketGRRParams(1.0, (-0.5, 0.25, 1e20)).labels) == ["[-0.5, 0.25)", "[0.25, 1e+20]"]
    for params in (p, BucketGRRParams(1.0, EDGES, clip=True)):
        again = params_from_dict(json.loads(json.dumps({"protocol": params.protocol, "params": params.to_dict()})))
        assert again == params and again.fingerprint == params.fingerprint
    assert dbf(d=3).fingerprint != p.fingerprint and dbf(clip=True).fingerprint != p.fingerprint
    assert get_protocol("dbitflip").aggregate_type is DBitFlipAggregate
    assert get_protocol("bucket-grr").aggregate_type is BucketGRRAggregate


def test_dbitflip_cost_is_the_realized_epsilon():
    """d >= 2: two buckets' bits differ, ε* = ln(p1/p0) + ln((1−p0)/(1−p1)); d = 1: one bit, ε* ≈ ε/2."""
    for eps in (0.1, 1.0, 5.0):
        p = dbf(eps, d=2)
        assert p.p1 == pytest.approx(math.exp(eps / 2) / (math.exp(eps / 2) + 1), rel=1e-15)
        assert p.effective_epsilon == pytest.approx(eps, rel=1e-12)
        assert p.privacy_cost.epsilon == max(eps, p.effective_epsilon)
        assert dbf(eps, d=1).privacy_cost.epsilon == pytest.approx(eps / 2, rel=1e-12)


# ------------------------------------------------------------------------- client input and budget

@pytest.mark.parametrize("encoder, params", [(DBitFlipEncoder, dbf()), (BucketGRREncoder, BucketGRRParams(1, EDGES))])
def test_client_refuses_bad_values_before_any_charge(encoder, params):
    ledger = BudgetLedger(":memory:", total=BudgetPolicy(per_window=PrivacyCost(10)))
    enc = encoder(params, ledger=ledger, metric="m")
    for value, exc, message in [
        (math.nan, ValueError, "finite"), (math.inf, ValueError, "finite"), (-math.inf, ValueError, "finite"),
        (True, TypeError, "real numbers"), ("5", TypeError, "real numbers"), (None, TypeError, "real numbers"),
        (-0.001, ValueError, "outside the histogram's range"), (100.5, ValueError, "clip=True"),
        (10**400, ValueError, "outside"),
    ]:
        with pytest.raises(exc, match=message):
            enc.encode(value)
    assert ledger.history() == []  # nothing was charged for bad input
    enc.encode(100)
    assert len(ledger.history()) == 1


def test_buckets_of_values_and_clipping():
    enc = DBitFlipEncoder(dbf())
    cases = [(0, 0), (9.999, 0), (10, 1), (10.0, 1), (49.9, 2), (50, 3), (100, 3), (100.0, 3),
             (Fraction(199, 10), 1), (np.float32(20), 2)]
    for value, bucket in cases:
        assert enc.prepare(value) == bucket, value
    clipped = DBitFlipEncoder(dbf(clip=True))
    assert [clipped.prepare(v) for v in (-5, 1e300, 10**400, -(10**400), 42)] == [0, 3, 3, 0, 2]
    with pytest.raises(ValueError, match="finite"):
        clipped.prepare(math.nan)  # clipping never hides a NaN


def test_bucketize_matches_the_client():
    from ldp.batch.histogram import bucketize

    values = np.array([0, 5, 10, 19.999, 20, 50, 99, 100, 0.0, 49.99999999])
    p = dbf()
    assert bucketize(p, values).tolist() == [DBitFlipEncoder(p).prepare(float(v)) for v in values]
    assert bucketize(dbf(clip=True), np.array([-1.0, 101.0, 3])).tolist() == [0, 3, 0]
    with pytest.raises(ValueError, match="finite"):
        bucketize(p, np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="outside the histogram's range"):
        bucketize(p, np.array([1.0, 100.5]))
    with pytest.raises(TypeError, match="real numbers"):
        bucketize(p, np.array(["1"]))
    with pytest.raises(TypeError, match="real numbers"):
        bucketize(p, np.array([True]))


# ----------------------------------------------------------------------------------- exact audit


# ------------------------------------------------- the estimator: exact mean and variance of one user

def _report_distribution(params: DBitFlipParams, value: float) -> dict:
    def run(src: RandomSource) -> tuple[str, str]:
        payload = DBitFlipEncoder(params, rng=src).encode(value).to_dict()["payload"]
        return payload["sampled"], payload["bits"]
    return output_distribution(run)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_estimator_terms_are_unbiased_with_the_exact_variance(d):
    """ĉ_v is a sum over users of Y = s(b − p0)/(rΔ); one user's exact law gives E[Y] = [x = v] and Var[Y]
    equal to the variance formula at n = 1 (the users are independent, so it holds for every n)."""
    params = DBitFlipParams(1.5, (0, 1, 2, 3, 4), d)
    k = params.num_buckets
    p0, delta, r = Fraction(params.p0), Fraction(params.p1) - Fraction(params.p0), Fraction(d, k)
    for x in range(k):
        dist = _report_distribution(params, x + 0.5)
        assert all(s.count("1") == d and all(b <= s_ for b, s_ in zip(bits, s, strict=True))
                   for s, bits in dist)
        for v in range(k):
            y = {out: (int(out[1][v]) - p0) / (r * delta) if out[0][v] == "1" else Fraction(0) for out in dist}
            mean = sum(pr * y[o] for o, pr in dist.items())
            var = sum(pr * y[o] ** 2 for o, pr in dist.items()) - mean**2
            assert mean == (1 if v == x else 0)
            formula = dbitflip_variance(params, np.eye(k)[x])[v]
            assert float(var) == pytest.approx(formula, rel=1e-12)


def test_variance_with_d_equal_k_is_symmetric_unary_encoding():
    from ldp.decoders.pure import pure_count_variance

    p = dbf(2.0, d=4)
    np.testing.assert_allclose(dbitflip_variance(p, TRUTH), pure_count_variance(TRUTH, TRUTH.sum(), p.p1, p.p0))


def test_confidence_intervals_cover_at_the_nominal_rate():
    params, trials = dbf(1.0, d=2), 3000
    gen = np.random.default_rng(6)
    covered = np.zeros(TRUTH.size)
    for _ in range(trials):
        e = DBitFlipAggregate.simulate(params, TRUTH, gen).estimate(0.95)
        covered += (e.ci_low <= TRUTH) & (TRUTH <= e.ci_high)
    z = z_family(TRUTH.size)
    assert np.all(np.abs(covered / trials - 0.95) <= z * math.sqrt(0.95 * 0.05 / trials)), covered / trials


def test_aggregate_simulation_has_the_exact_joint_law_of_the_sampling():
    """N_v ~ Bin(n, r), O_v ~ Bin(f_v, r·p1) + Bin(n − f_v, r·p0) exactly; Cov(N_0, N_1) =
    n·(d(d−1)/(k(k−1)) − r²) (a user's d picks are without replacement)."""
    params, truth = dbf(1.0, d=2), np.array([120, 40, 200, 40])
    n, k, d, r, trials = int(truth.sum()), 4, 2, 0.5, 3000
    gen = np.random.default_rng(4)
    aggs = [DBitFlipAggregate.simulate(params, truth, gen) for _ in range(trials)]
    sampled, ones = np.array([a.sampled for a in aggs]), np.array([a.ones for a in aggs])
    assert {a.n for a in aggs} == {n}
    for v in (0, 2):
        assert stats.chisquare(*_binned(sampled[:, v], stats.binom.pmf(np.arange(n + 1), n, r))).pvalue > 1e-5
        pmf = np.convolve(stats.binom.pmf(np.arange(truth[v] + 1), truth[v], r * params.p1),
                          stats.binom.pmf(np.arange(n - truth[v] + 1), n - truth[v], r * params.p0))
        assert stats.chisquare(*_binned(ones[:, v], pmf)).pvalue > 1e-5
    cov = n * (d * (d - 1) / (k * (k - 1)) - r * r)
    sd = math.sqrt(n * r * (1 - r))
    tol = z_family(1) * math.sqrt((sd**4 + cov**2) / trials)
    assert abs(np.cov(sampled[:, 0], sampled[:, 1])[0, 1] - cov) <= tol


def _binned(samples: np.ndarray, pmf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected counts over the cells with >= 5 expected, tails pooled into the end cells."""
    expected = pmf * samples.size
    lo, hi = np.flatnonzero(expected >= 5)[[0, -1]]
    observed = np.bincount(samples, minlength=pmf.size)[lo:hi + 1].astype(float)
    exp = expected[lo:hi + 1].copy()
    observed[0] += np.sum(samples < lo)
    observed[-1] += np.sum(samples > hi)
    exp[0] += expected[:lo].sum()
    exp[-1] += expected[hi + 1:].sum()
    return observed, exp * observed.sum() / exp.sum()


def test_simulation_falls_back_to_reports_when_cheaper_and_accuracy_runs():
    params = DBitFlipParams(2.0, tuple(range(65)), d=3)
    truth = np.zeros(64, np.int64)
    truth[[0, 10]] = [30, 20]
    agg = DBitFlipAggregate.simulate(params, truth, rng=1)  # 64²·4 > 4·50·12: per report
    assert agg.n == 50 and agg.sampled.sum() == 150
    res = accuracy(dbf(2.0), from_counts(TRUTH.tolist()), int(TRUTH.sum()), trials=3, rng=2)
    assert res.items == LABELS and np.all(res.theoretical_sd > 0)


# ------------------------------------------------------------------ batch encoding's exact law


def test_dbitflip_batch_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"in \[0, 4\)"):
        DBitFlipEncoder(dbf()).encode_batch(np.array([0, 4]))


# ---------------------------------------------------------------- aggregate, wire format and rejects

def _reports(params, values, seed):
    enc = get_protocol(params.protocol).encoder_type(params, rng=seed, simulation=True)
    return [enc.encode(v) for v in values]


def _line(params: DBitFlipParams, sampled: str, bits: object) -> str:
    return json.dumps({"v": 1, "protocol": "dbitflip", "params": params.fingerprint,
                       "payload": {"sampled": sampled, "bits": bits}})


def test_malformed_dbitflip_reports_are_rejected_with_a_reason():
    params = dbf(1.0, d=2)
    good = _reports(params, [5.0, 55.0], seed=2)
    lines = [good[0].to_json(),
             _line(params, "1110", "0000"),  # three sampled buckets, d = 2
             _line(params, "1000", "1000"),  # one
             _line(params, "1100", "0010"),  # a 1 outside the sampled buckets
             _line(params, "11000", "00000"),  # wrong length
             _line(params, "1100", 3),  # a uint where the schema has bits
             "{not json", good[1].to_json()]
    seen = []
    agg = DBitFlipAggregate(params)
    assert agg.add_json_lines(lines, on_reject=lambda item, err: seen.append(err.reason)) == 2
    assert agg.n == 2 and dict(agg.rejected) == {"bad_value": 3, "bad_length": 1, "payload_mismatch": 1,
                                                "not_json": 1}
    assert sorted(seen) == sorted(["bad_value"] * 3 + ["bad_length", "payload_mismatch", "not_json"])


def test_batches_and_frames_reject_rule_breaking_rows_by_row_number():
    params = dbf(1.0, d=2)
    batch = DBitFlipEncoder(params).encode_batch(np.array([0, 1, 2, 3, 0, 1]), rng=3)
    sampled, bits = batch.columns["sampled"].copy(), batch.columns["bits"].copy()
    sampled[1] = 0b0111  # three sampled
    bits[2] = sampled[2] ^ 0b1111  # ones outside the sampled set
    sampled[4] |= 0b10000  # a padding bit: the base's check, row number kept through the filter
    bad = ReportBatch(batch.protocol, batch.fingerprint, batch.schema, {"sampled": sampled, "bits": bits})
    seen = []
    agg = DBitFlipAggregate(params)
    assert agg.add(bad, on_reject=lambda i, err: seen.append((i, err.reason))) == 3
    assert sorted(seen) == [(1, "bad_value"), (2, "bad_value"), (4, "bad_value")]
    assert agg.rejected["bad_value"] == 3 and agg.n == 3
    ok = DBitFlipAggregate(params)
    ok.add_bytes(bad.to_bytes())
    assert ok.n == 3 and ok.rejected["bad_value"] == 3
    np.testing.assert_array_equal(ok.sampled, agg.sampled)


