"""recommend() ranks every frequency oracle by the exact variance of a rare item's count and by bytes per report.

Closed forms (f = 0, per user, q*(1 − q*)/(p* − q*)²): GRR ``(d − 2 + e^ε)/(e^ε − 1)²``, SUE ``e^{ε/2}/(e^{ε/2} − 1)²``,
OUE ``4e^ε/(e^ε − 1)²`` (the optimum), HR and BLH ``(e^ε + 1)²/(e^ε − 1)²`` (q* = 1/2), OLH with its rounded ``g``
``(g − 1)/g² / (p − 1/g)²``, ``p = e^ε/(e^ε + g − 1)``. The planner uses the realized (client-rounded)
probabilities, hence the relative tolerance 1e-6."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldp.encoders as enc
from ldp.encoders.hadamard_block import HRBlockEncoder
from ldp.encoders.projective_geometry import HPGEncoder, PGREncoder
from ldp.frames import encode_batch
from ldp.plan.frequency import default_params, plan
from ldp.plan.oracles import FIXED_DOMAIN_ORACLES, optimal_variance, recommend, report_bytes

ENCODERS = {"rr": enc.BinaryRREncoder, "grr": enc.GRREncoder, "sue": enc.SUEEncoder, "oue": enc.OUEEncoder,
            "blh": enc.BLHEncoder, "olh": enc.OLHEncoder, "hr": enc.HREncoder,
            "hr-block": HRBlockEncoder, "ss": enc.SSEncoder,
            "cms": enc.CmsEncoder, "hcms": enc.HcmsEncoder, "pgr": PGREncoder, "hpg": HPGEncoder}


def _closed_form(protocol: str, eps: float, d: int) -> float:
    e = math.exp(eps)
    if protocol == "grr":
        return (d - 2 + e) / (e - 1) ** 2
    if protocol == "sue":
        return math.exp(eps / 2) / math.expm1(eps / 2) ** 2
    if protocol == "oue":
        return 4 * e / (e - 1) ** 2
    if protocol in ("hr", "blh"):
        return (e + 1) ** 2 / (e - 1) ** 2
    assert protocol == "olh"
    g = math.floor(e + 0.5) + 1
    return (g - 1) / g**2 / (e / (e + g - 1) - 1 / g) ** 2


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_scores_are_the_exact_variances_of_a_rare_item(eps: float) -> None:
    d = 100
    r = recommend(eps, d)
    for protocol in ("grr", "sue", "oue", "hr", "blh", "olh"):
        s = r.scores[protocol]
        assert s.variance_per_user == pytest.approx(_closed_form(protocol, eps, d), rel=1e-6), protocol
        assert s.variance_ratio == pytest.approx(s.variance_per_user / optimal_variance(eps), rel=1e-12)
    # the target: OUE, OLH (rounded g) and SS within 5% of the optimum where each is meant to be optimal
    assert r.scores["oue"].variance_ratio == pytest.approx(1.0, abs=1e-6)
    assert r.scores["olh"].variance_ratio <= 1.05 and r.scores["ss"].variance_ratio <= 1.05


def test_ranking_order_best_and_left_out() -> None:
    r = recommend(1.0, 200)
    names = [p.protocol for p in r]
    assert set(names) == {"grr", "sue", "oue", "blh", "olh", "hr", "hr-block", "ss", "cms", "hcms", "rappor", "pgr",
                          "hpg"}
    var = [r.scores[p].variance_per_user for p in names]
    assert var == sorted(var) and r.best_variance == names[0] in ("oue", "olh", "ss")
    smallest = min(s.report_bytes for s in r.scores.values())
    assert r.scores[r.best_size].report_bytes == smallest and r.best_size == "hr"  # 1 byte, lower variance than GRR
    assert "lowest variance: ss" in r.summary() and "smallest report: hr (1 byte," in r.summary()
    # the smallest report within 5 % of the lowest variance: PGR's 2 bytes (OLH: 5, within too)
    assert r.best_near_optimal == "pgr" and "within 5% of the lowest variance: pgr (2 bytes" in r.summary()
    assert recommend(8.0, 65536).best_near_optimal == "hpg"  # PGR's K past the decode limit's best
    assert [p.protocol for p in recommend(1.0, 2)][:2] == ["rr", "grr"] and "rr" not in recommend(1.0, 3).scores
    huge = recommend(30.0, 64)  # OLH's g = round(e^30) + 1 exceeds the 32-bit hash: left out, with the reason
    assert "olh" not in huge.scores and "2**32" in huge.left_out["olh"]
    with pytest.raises(ValueError, match="no frequency protocol can be planned at epsilon=800"):
        recommend(800.0, 10)  # every one refused (was: an empty ranking, and an IndexError in the CLI)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_grr_wins_below_3e_eps_plus_2(eps: float) -> None:
    """GRR's (d − 2 + e^ε) beats OUE's 4e^ε exactly when d < 3e^ε + 2 (Wang et al. 2017)."""
    cross = 3 * math.exp(eps) + 2
    below, above = math.floor(cross - 1e-9), math.ceil(cross + 1e-9)
    assert recommend(eps, max(below, 2)).scores["grr"].variance_ratio < 1.0
    assert recommend(eps, above).scores["grr"].variance_ratio > 1.0


@pytest.mark.parametrize("protocol", FIXED_DOMAIN_ORACLES + ("cms", "hcms"))
def test_report_bytes_are_a_binary_frame_record(protocol: str) -> None:
    """Two reports make a frame exactly report_bytes longer than one (same header and CRC)."""
    d = 2 if protocol == "rr" else 300
    params = default_params(protocol, 1.0, d)
    encoder = ENCODERS[protocol](params, rng=1, simulation=True)
    values = (lambda k: ["a"] * k) if protocol in ("cms", "hcms") else (lambda k: np.zeros(k, dtype=np.int64))
    one, two = (len(encode_batch(encoder.encode_batch(values(k)))) for k in (1, 2))
    assert two - one == report_bytes(params)


def test_report_bits_of_the_hashing_oracles() -> None:
    """Regression: plan() raised TypeError for BLH and OLH, and gave HR d bits instead of log2 K."""
    assert plan("hr", n=10, domain_size=100, epsilon=1.0).report_bits == 7  # j in [0, 128)
    assert plan("olh", n=10, domain_size=100, epsilon=1.0).report_bits == 32 + 2  # seed, y in [0, g = 4)
    assert plan("blh", n=10, domain_size=100, epsilon=1.0).report_bits == 32 + 1


def test_cli_recommend_prints_the_ranking(capsys: pytest.CaptureFixture[str]) -> None:
    from ldp.cli.command import main

    assert main(["plan", "--recommend", "--epsilon", "1", "--d", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "var/optimum" in lines[1] and "bytes" in lines[1]
    assert lines[3].split()[0] == "ss" and lines[3].split()[3] == "0.987"
    assert lines[-3].startswith("lowest variance: ss") and lines[-2].startswith("smallest report: hr")
    assert lines[-1].startswith("smallest report within 5% of the lowest variance: pgr")
