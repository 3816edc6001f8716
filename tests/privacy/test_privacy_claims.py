"""Privacy claims are never smaller than the exact audit's ε, at any parameters the params accept;
parameters that cannot be realized, uploaded or aggregated are refused (issue 15, items 3, 7, 11)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from ldp.encoders import (
    BinaryRREncoder,
    BinaryRRParams,
    CmsEncoder,
    CmsParams,
    GRREncoder,
    GRRParams,
    HcmsEncoder,
    HcmsParams,
    RapporEncoder,
    RapporParams,
)
from ldp.encoders.base import MAX_AGGREGATE_CELLS
from ldp.encoders.sfp import SfpEncoder, SfpParams
from ldp.privacy.audit import audit, audit_encoder
from ldp.randomness import realized_probability
from ldp.reports import MAX_LINE, max_line_bytes

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# probabilities at and around the client's 2^-64 resolution and the double grid near 0 and 1
EDGE_PROBS = [0.0, 2.0**-80, 1e-30, 2.0**-65, 2.0**-64, 1.5 * 2.0**-64, 2.0**-63, 1e-12, 2.0**-11, 0.25, 0.5,
              0.75, 1 - 2.0**-53, 1.0]
probability = st.one_of(st.sampled_from(EDGE_PROBS), st.floats(0.0, 1.0),
                        st.floats(-80, 0).map(lambda e: 2.0**e))
epsilon = st.one_of(st.sampled_from([1e-20, 1e-9, 0.01, 1.0, 20.0, 30.0, 36.0, 38.0, 40.0, 45.0, 800.0, 2000.0]),
                    st.floats(1e-6, 60.0))


def within(audited: float, claimed: float) -> bool:
    """The audit never exceeds the claim (up to the float rounding of two logarithms)."""
    return audited <= claimed * (1 + 1e-12) + 1e-12


def accepted(make):
    """The params, or ``None`` if they are refused with a ValueError (the other allowed outcome)."""
    try:
        return make()
    except ValueError:
        return None


# -- item 3: exact audit <= claim for every accepted parameter ---------------------------------------
@SETTINGS
@given(p=probability, q=probability)
@example(p=1e-30, q=0.5)
@example(p=1.5 * 2.0**-64, q=0.5)
def test_binary_rr_claim_covers_the_audit(p, q):
    params = accepted(lambda: BinaryRRParams(p, q))
    if params is None:
        return
    result = audit_encoder(lambda src: BinaryRREncoder(params, rng=src), [0, 1])
    assert math.isfinite(params.epsilon) and within(result.epsilon, params.epsilon), (result.epsilon, params)


@SETTINGS
@given(eps=epsilon)
@example(eps=40.0)
@example(eps=44.0)
def test_binary_rr_from_epsilon_claim_covers_the_audit(eps):
    params = accepted(lambda: BinaryRRParams.from_epsilon(eps))
    if params is None:
        return
    result = audit_encoder(lambda src: BinaryRREncoder(params, rng=src), [0, 1])
    assert within(result.epsilon, params.privacy_cost.epsilon)


@SETTINGS
@given(eps=epsilon, d=st.integers(2, 5))
@example(eps=40.0, d=4)
@example(eps=30.0, d=4)
@example(eps=800.0, d=4)
def test_grr_claim_covers_the_audit(eps, d):
    params = accepted(lambda: GRRParams(eps, d))
    if params is None:
        return
    result = audit_encoder(lambda src: GRREncoder(params, rng=src), range(d))
    assert within(result.epsilon, params.privacy_cost.epsilon), (result.epsilon, params.privacy_cost)
    # and the claim is what the realized probabilities give, not merely an upper bound far above it
    assert result.epsilon == pytest.approx(params.effective_epsilon, rel=1e-9)


def _rappor_values(params: RapporParams) -> list[str]:
    return [f"v{i}" for i in range(3)]


@SETTINGS
@given(k=st.integers(1, 3), h=st.integers(1, 2), p=probability, q=probability, f=probability)
@example(k=2, h=1, p=0.25, q=0.75, f=1e-30)
@example(k=2, h=1, p=1e-30, q=0.75, f=0.0)
def test_rappor_claims_cover_the_audit(k, h, p, q, f):
    params = accepted(lambda: RapporParams(k, min(h, k), 1, p, q, f))
    if params is None:
        return
    values = _rappor_values(params)

    def prr(x, src):
        enc = RapporEncoder(params, secret=b"s", cohort=0, prr_rng=src)
        return enc.permanent_response(enc.prepare(x))

    def one_report(x, src):
        return RapporEncoder(params, secret=b"s", cohort=0, rng=src, prr_rng=src).encode_parts(x)[2]

    assert within(audit(values, prr).epsilon, params.epsilon_inf)
    assert within(audit(values, one_report).epsilon, params.epsilon_one)


@SETTINGS
@given(eps=epsilon, k=st.integers(1, 2), log_m=st.integers(1, 2), hadamard=st.booleans())
@example(eps=2000.0, k=1, log_m=2, hadamard=False)
@example(eps=800.0, k=1, log_m=2, hadamard=True)
def test_sketch_claims_cover_the_audit(eps, k, log_m, hadamard):
    params_type, encoder_type = (HcmsParams, HcmsEncoder) if hadamard else (CmsParams, CmsEncoder)
    params = accepted(lambda: params_type(eps, k, 1 << log_m))
    if params is None:
        return
    result = audit_encoder(lambda src: encoder_type(params, rng=src), ["a", "b", "c"])
    assert within(result.epsilon, params.privacy_cost.epsilon)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(word=epsilon, fragment=epsilon)
def test_sfp_claim_covers_the_audit(word, fragment):
    params = accepted(lambda: SfpParams(word, fragment, alphabet="ab", length=2, fragment_length=1, hash_bits=1,
                                        word_num_hashes=1, word_width=2, fragment_num_hashes=1, fragment_width=2))
    if params is None:
        return
    result = audit_encoder(lambda src: SfpEncoder(params, rng=src), ["a", "b", "ab"])
    assert within(result.epsilon, params.privacy_cost.epsilon)


@pytest.mark.parametrize("make, match", [
    (lambda: BinaryRRParams(1e-30, 0.5), "below the client's 2\\^-64 resolution"),
    (lambda: BinaryRRParams(2.0**-66, 2.0**-65), "below the client's 2\\^-64 resolution"),
    (lambda: BinaryRRParams(1.2 * 2.0**-64, 1.5 * 2.0**-64), "equal at the client's 2\\^-64 resolution"),
    (lambda: BinaryRRParams.from_epsilon(800), "too large"),
    (lambda: GRRParams(40, 4), "too large for domain_size=4"),
    (lambda: GRRParams(800, 4), "too large for domain_size=4"),
    (lambda: GRRParams(1e-20, 4), "too small for domain_size=4"),
    (lambda: RapporParams(16, 2, 4, 0.25, 0.75, 1e-30), "f=1e-30 is below the client's 2\\^-64 resolution"),
    (lambda: RapporParams(16, 2, 4, 1e-70, 0.75, 0.5), "p=1e-70 is below"),
    (lambda: CmsParams(2000, 4, 16), "too large"),
    (lambda: HcmsParams(800, 4, 16), "too large"),
])
def test_unrealizable_parameters_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_claims_use_the_realized_probabilities():
    p = 1.5 * 2.0**-64  # realized: exactly 2^-64
    params = BinaryRRParams(p, 0.5)
    assert realized_probability(p) == 2.0**-64
    assert params.epsilon == pytest.approx(max(math.log(0.5 / 2.0**-64), math.log((1 - 2.0**-64) / 0.5)))
    grr = GRRParams(30.0, 4)  # 1 - p is on a 2^-53 grid near 1: the realized ε is not exactly 30
    assert grr.privacy_cost.epsilon == max(30.0, grr.effective_epsilon)
    assert grr.q == (1 - grr.p) / 3
    assert realized_probability(grr.p) == grr.p


# -- item 7: parameters that validate but could never be collected ---------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: GRRParams(1.0, 2**32), "needs 4,294,967,296 counters"),
    (lambda: CmsParams(4.0, 256, 1 << 23), "upload line, over the 4,194,304-byte limit"),
    (lambda: HcmsParams(4.0, 1 << 16, 1 << 16), "counters"),
    (lambda: RapporParams(4_200_000, 2, 1, 0.25, 0.75, 0.5), "upload line"),
    (lambda: RapporParams(1 << 20, 2, 1 << 10, 0.25, 0.75, 0.5), "counters"),
])
def test_uncollectable_parameters_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_the_largest_accepted_reports_fit_the_line_limit():
    k = 4_194_000
    params = RapporParams(k, 2, 1, 0.25, 0.75, 0.5)
    assert max_line_bytes(params.protocol, params.schema) <= MAX_LINE
    assert params.aggregate_cells <= MAX_AGGREGATE_CELLS
    with pytest.raises(ValueError, match="upload line"):
        RapporParams(k + 1_000, 2, 1, 0.25, 0.75, 0.5)


def test_max_line_bytes_is_the_length_of_the_longest_envelope():
    from ldp.reports import MAX_WINDOW, Report
    from ldp.spec import Envelope

    params = RapporParams(40, 2, 7, 0.25, 0.75, 0.5)
    from bitarray import frozenbitarray
    report = Report(params.protocol, params.fingerprint, {"cohort": 6, "bits": frozenbitarray("1" * 40)})
    line = Envelope("f" * 16, "m" * 32, MAX_WINDOW, report).to_json() + "\n"
    assert max_line_bytes(params.protocol, params.schema) == len(line.encode())


# -- item 11: Google's files with k > 32 decode ------------------------------------------------------
def test_google_params_with_k_128_decode_but_do_not_encode(tmp_path, capsys):
    from ldp.cli.command import main
    from ldp.decoders import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap, decode

    params = RapporParams.from_google_csv("k,h,m,p,q,f\n128,2,8,0.5,0.75,0.5\n")
    assert params.k == 128 and params.mode == "google"
    with pytest.raises(ValueError, match="k <= 32"):
        RapporEncoder(params)
    truth = {f"https://site{i}.example/": 40_000 // i for i in range(1, 8)}
    agg = RapporAggregate.simulate(params, truth, rng=1)
    cmap = CandidateMap.from_candidates(params, list(truth))
    (tmp_path / "params.csv").write_text(params.to_google_csv())
    (tmp_path / "counts.csv").write_text(agg.to_google_counts())
    (tmp_path / "map.csv").write_text(cmap.to_google_map())
    est = decode(RapporAggregate.from_google_counts(params, agg.to_google_counts()),
                 CandidateMap.from_google_map(params, cmap.to_google_map()))
    assert est.detected.sum() >= 3
    assert main(["rappor-decode", "--params", str(tmp_path / "params.csv"), "--counts", str(tmp_path / "counts.csv"),
                 "--map", str(tmp_path / "map.csv"), "--json"]) == 0
    assert "site1" in capsys.readouterr().out
