"""Consistency post-processing: Norm-Sub, Base-Cut and IBU, and the Estimates methods that apply them."""

from __future__ import annotations

import logging
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from ldp.decoders import GRRAggregate, RRAggregate, UnaryAggregate
from ldp.decoders.consistency import SupportChannel, base_cut, ibu, norm_sub, norm_sub_delta, oracle_channel
from ldp.decoders.histogram import DBitFlipAggregate
from ldp.decoders.pure import pure_count_estimate
from ldp.decoders.results import CONSISTENCY_METHODS, project_to_simplex
from ldp.encoders.histogram import DBitFlipParams
from ldp.encoders.randomized_response import BinaryRRParams, GRRParams
from ldp.encoders.unary import OUEParams, SUEParams

TRUE = np.array([400, 250, 150, 80, 50, 30, 20, 10, 6, 4, 0, 0])


@pytest.fixture(params=["grr", "oue", "sue"])
def case(request: pytest.FixtureRequest) -> tuple[object, object]:
    d = TRUE.size
    params, agg_type = {"grr": (GRRParams(1.0, d), GRRAggregate), "oue": (OUEParams(1.0, d), UnaryAggregate),
                        "sue": (SUEParams(1.0, d), UnaryAggregate)}[request.param]
    return params, agg_type.simulate(params, TRUE, np.random.default_rng(7))


def test_raw_estimate_is_the_default_and_untouched(case: tuple) -> None:
    params, agg = case
    est = agg.estimate()
    support = agg.counts if isinstance(agg, GRRAggregate) else agg.ones
    raw, _ = pure_count_estimate(support, agg.n, params.p, params.q)
    assert est.notes == () and np.array_equal(est.count, raw)
    before = est.count.copy()
    for post in (est.norm_sub(), est.base_cut(), est.ibu(params), est.clipped(), est.projected()):
        assert len(post.notes) == 1 and post.count is not est.count
    assert np.array_equal(est.count, before) and est.notes == ()


@pytest.mark.parametrize("counts, n", [([5.0, -3.0, 2.0, 9.0], 10), ([1.0, 2.0, -1.0], 10), ([-1.0, -2.0], 5),
                                       ([3.0, 3.0, 3.0], 9)])
def test_norm_sub_is_a_common_shift_clipped_at_zero_summing_to_n(counts: list[float], n: int) -> None:
    out, delta = norm_sub(counts, n), norm_sub_delta(counts, n)
    assert out.min() >= 0 and out.sum() == pytest.approx(n)
    assert np.allclose(out, np.maximum(np.array(counts) - delta, 0))
    assert np.allclose(out, project_to_simplex(np.array(counts), n))  # the CLS equivalence


def test_norm_sub_of_nothing_is_zero() -> None:
    assert np.array_equal(norm_sub([-1.0, -2.0], 0), [0.0, 0.0])


def test_estimates_norm_sub(case: tuple) -> None:
    _, agg = case
    est = agg.estimate().norm_sub()
    assert est.count.min() >= 0 and est.count.sum() == pytest.approx(agg.n)
    assert est.notes[0].startswith("Norm-Sub")


def test_base_cut_zeros_exactly_the_non_significant_items(case: tuple) -> None:
    _, agg = case
    raw = agg.estimate()
    for z in (None, 1.0, 2.0):
        cut = raw.base_cut(z)
        zz = float(cut.notes[0].split(" not above ")[1].split()[0]) if z is None else z
        significant = raw.count > zz * raw.std_error
        assert np.array_equal(cut.count[significant], raw.count[significant])
        assert np.all(cut.count[~significant] == 0)
    assert np.array_equal(base_cut([3.0, 1.0, -2.0], [2.0, 1.0, 0.0]), [3.0, 0.0, 0.0])


def test_base_cut_default_z_is_bonferroni() -> None:
    est = GRRAggregate.simulate(GRRParams(2.0, 12), TRUE, np.random.default_rng(1)).estimate(confidence=0.9)
    assert "2.39 standard errors" in est.base_cut().notes[0]  # Φ⁻¹(1 − 0.1/12)


def test_ibu_sums_to_n_and_is_non_negative(case: tuple) -> None:
    params, agg = case
    est = agg.estimate().ibu(params)
    assert est.count.min() >= 0 and est.count.sum() == pytest.approx(agg.n)
    assert est.std_error is agg.estimate().std_error or np.array_equal(est.std_error, agg.estimate().std_error)


def _grid(d: int, steps: int) -> np.ndarray:
    pts = [c for c in product(range(steps + 1), repeat=d - 1) if sum(c) <= steps]
    g = np.array([list(c) + [steps - sum(c)] for c in pts], dtype=np.float64)
    return g / steps


def _loglik(observed: np.ndarray, a: np.ndarray, pis: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(pis @ a.T) @ observed


@pytest.mark.parametrize("observed", [[7.0, 2.0, 1.0], [3.0, 3.0, 4.0], [10.0, 0.0, 0.0]])
def test_ibu_matches_brute_force_maximum_likelihood_for_grr(observed: list[float]) -> None:
    a = oracle_channel(GRRParams(1.0, 3))[0]
    assert isinstance(a, SupportChannel)
    c = np.array(observed)
    pi = ibu(c, a.matrix, tol=1e-12, max_iter=200_000)
    grid = _grid(3, 400)
    ll = _loglik(c, a.matrix, grid)
    best = grid[np.argmax(ll)]
    assert _loglik(c, a.matrix, pi[None])[0] >= ll.max() - 1e-9
    assert np.abs(pi - best).max() <= 0.01
    assert np.allclose(ibu(c, a, tol=1e-12, max_iter=200_000), pi)  # structured = dense


def test_ibu_for_unary_maximizes_the_support_quasi_likelihood() -> None:
    a = SupportChannel(0.5, 1 / (np.e + 1), 3)
    c = np.array([30.0, 12.0, 9.0])
    pi = ibu(c, a, tol=1e-12, max_iter=200_000)
    ll = _loglik(c, a.matrix, _grid(3, 300))
    assert _loglik(c, a.matrix, pi[None])[0] >= ll.max() - 1e-9


def test_ibu_for_binary_rr_is_the_clipped_estimate() -> None:
    params = BinaryRRParams.from_epsilon(1.0)  # 2 outputs, monotone channel: the MLE is the unbiased one clipped
    for seed in range(4):
        agg = RRAggregate.simulate(params, np.array([95, 5]), np.random.default_rng(seed))
        est = agg.estimate()
        assert np.allclose(est.ibu(params, tol=1e-13, max_iter=100_000).count, est.clipped().count, atol=1e-3)


def test_ibu_refuses_unknown_channels_and_post_processed_estimates(case: tuple) -> None:
    params, agg = case
    dbf = DBitFlipParams(1.0, (0, 1, 2, 3, 4), d=2)
    est = DBitFlipAggregate.simulate(dbf, np.array([5, 4, 3, 2]), np.random.default_rng(0)).estimate()
    with pytest.raises(ValueError, match="IBU needs the channel"):
        est.ibu(dbf)
    with pytest.raises(ValueError, match="raw estimate"):
        agg.estimate().projected().ibu(params)
    with pytest.raises(ValueError, match="params are for"):
        agg.estimate().ibu(dbf)


def test_ibu_logs_convergence(caplog: pytest.LogCaptureFixture) -> None:
    a = SupportChannel(0.7, 0.1, 4)
    with caplog.at_level(logging.DEBUG, logger="ldp.decoders.consistency"):
        ibu([5.0, 3.0, 1.0, 1.0], a, max_iter=2)
        assert "max_iter=2" in caplog.records[-1].getMessage() and caplog.records[-1].levelno == logging.WARNING
        ibu([5.0, 3.0, 1.0, 1.0], a, tol=1e-3)
        assert "converged" in caplog.records[-1].getMessage()


def test_ibu_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="columns"):
        ibu([1.0, 2.0], [[0.5, 0.5], [0.6, 0.5]])
    with pytest.raises(ValueError, match="do not fit"):
        ibu([1.0, 2.0, 3.0], SupportChannel(0.7, 0.1, 2))
    with pytest.raises(ValueError, match="tol"):
        ibu([1.0, 2.0], SupportChannel(0.7, 0.1, 2), tol=0)


def test_figure_script_writes_its_table(tmp_path: Path) -> None:
    from support.scripts import load_script, read_csv

    script = load_script("consistency_figures")
    assert script.main(["--quick", "--no-plots", "-q", "--out", str(tmp_path), "--d", "8", "--n", "500",
                        "--reps", "2", "--epsilons", "1"]) == 0
    rows = read_csv(tmp_path / "mse.csv")
    assert list(rows[0]) == list(script.COLUMNS)
    assert {(r["protocol"], r["method"]) for r in rows} == {(p, m) for p in script.PROTOCOLS for m in script.METHODS}
    for r in rows:
        if r["method"] in ("projected", "norm_sub", "ibu"):
            assert float(r["sum_fraction"]) == pytest.approx(1.0)
        if r["method"] == "raw":
            assert float(r["mse_ratio_to_raw"]) == 1.0
    assert not list(tmp_path.glob("*.png"))


def test_consistent_dispatches_by_name(case: tuple) -> None:
    params, agg = case
    raw = agg.estimate()
    assert raw.consistent() is raw and raw.consistent("none") is raw
    pairs = {"clip": raw.clipped(), "project": raw.projected(), "norm-sub": raw.norm_sub(),
             "base-cut": raw.base_cut(), "ibu": raw.ibu(params)}
    assert set(pairs) | {"none"} == set(CONSISTENCY_METHODS)
    for name, expected in pairs.items():
        got = raw.consistent(name, params)
        assert np.array_equal(got.count, expected.count) and got.notes == expected.notes
    assert np.array_equal(raw.consistent("base-cut", z=1.0).count, raw.base_cut(1.0).count)
    with pytest.raises(ValueError, match="known: none, clip"):
        raw.consistent("lasso")
    with pytest.raises(ValueError, match="needs the protocol's params"):
        raw.consistent("ibu")


def test_ldp_decode_applies_the_consistency_option(tmp_path):
    """``ldp decode --consistency norm-sub``: the counts sum to n, are non-negative, and the note says so."""
    import json as _json
    import subprocess
    import sys

    from ldp.decoders.randomized_response import GRRAggregate
    from ldp.encoders.randomized_response import GRRParams
    from ldp.jobs.store import write_aggregate
    from ldp.spec import CollectionSpec

    doc = {"spec_version": 1, "name": "consistency_cli", "budget": {"per_window": 10, "lifetime": 100},
           "metrics": {"color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 5},
                                 "budget": {"per_report": 1}}}}
    (tmp_path / "spec.json").write_text(_json.dumps(doc))
    spec = CollectionSpec.load(tmp_path / "spec.json")
    agg = GRRAggregate.simulate(GRRParams(1.0, 5), [600, 300, 80, 15, 5], 3)
    path = tmp_path / f"color.{spec.metrics['color'].params_fingerprint}.agg"
    write_aggregate(path, agg)
    out = subprocess.run([sys.executable, "-m", "ldp", "decode", str(path), "--spec", str(tmp_path / "spec.json"),
                          "--consistency", "norm-sub", "--json"], capture_output=True, text=True, check=True).stdout
    result = _json.loads(out)
    counts = [row["count"] for row in result["estimates"]]
    assert min(counts) >= 0 and abs(sum(counts) - agg.n) < 1e-6
    assert any("norm" in note.lower() for note in result["notes"])
