"""simulations/planner_figures.py: its tables hold the planner's numbers, recomputed here from ldp.plan.

The CSVs keep 6 significant digits, hence the relative tolerance 1e-5. Where a closed form is
short (GRR's variance, the sketch's collision floor, the privacy over a horizon), the numbers are
also checked against it, so that the figures would not silently show a planner bug."""

from __future__ import annotations

import math
import sys

import pytest
from support.scripts import load_script, read_csv

from ldp.encoders import CmsParams, GRRParams
from ldp.encoders.sfp import SfpParams
from ldp.plan.frequency import default_params, plan, solve_n

REL = 1e-5


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("planner_figures")
    script = load_script("planner_figures")
    assert script.main(["--quick", "--no-plots", "--out", str(out)]) == 0
    return script, out


def test_every_table_is_written_with_its_columns(quick_run):
    script, out = quick_run
    for name, (columns, *_rest) in script.FIGURES.items():
        rows = read_csv(out / f"{name}.csv")
        assert rows and list(rows[0]) == list(columns), name
    assert {r["protocol"] for r in read_csv(out / "se_vs_n.csv")} == set(script.PROTOCOLS)
    assert not list(out.glob("*.png"))


def test_standard_errors_and_detection_limits_are_the_planners(quick_run):
    _, out = quick_run
    for r in read_csv(out / "se_vs_n.csv"):
        pl = plan(r["protocol"], n=int(r["n"]), domain_size=int(r["d"]), epsilon=float(r["epsilon"]))
        assert float(r["std_error_fraction"]) == pytest.approx(pl.std_error_fraction, rel=REL)
        assert float(r["std_error_count"]) == pytest.approx(pl.std_error_count, rel=REL)
        assert int(r["report_bits"]) == pl.report_bits
    for r in read_csv(out / "detectable_vs_epsilon.csv"):
        pl = plan(r["protocol"], n=int(r["n"]), domain_size=int(r["d"]), epsilon=float(r["epsilon"]))
        assert float(r["min_detectable_fraction"]) == pytest.approx(pl.min_detectable_fraction, rel=REL)
        expected_m = SfpParams(1.0, 1.0).num_records if r["protocol"] == "sfp" else int(r["d"])
        assert int(r["candidates"]) == expected_m


def test_grr_against_cms_follows_grr_closed_form(quick_run):
    _, out = quick_run
    for r in read_csv(out / "grr_vs_d.csv"):
        eps, d, n = float(r["epsilon"]), int(r["d"]), int(r["n"])
        assert float(r["std_error_fraction"]) == pytest.approx(
            plan(r["protocol"], n=n, domain_size=d, epsilon=eps).std_error_fraction, rel=REL)
        if r["protocol"] == "grr":  # Var = (f·p(1−p) + (n−f)·q(1−q))/(p−q)², f = n/d
            p, q = GRRParams(eps, d).p, GRRParams(eps, d).q
            f = n / d
            se = math.sqrt(f * p * (1 - p) + (n - f) * q * (1 - q)) / (p - q) / n
            assert float(r["std_error_fraction"]) == pytest.approx(se, rel=REL)


def test_privacy_horizon_caps_rappor_by_memoization(quick_run):
    _, out = quick_run
    default = default_params("rappor", 2.0, 8)  # the planner's one-time RAPPOR: ε₁ = ε∞ = 2
    for r in read_csv(out / "rappor_horizon.csv"):
        reports, distinct, total = int(r["reports"]), int(r["distinct_values"]), float(r["epsilon_total"])
        e1 = float(r["epsilon_per_report"])
        if r["protocol"] == "grr":
            assert total == pytest.approx(reports * e1, rel=REL)
        elif "default" in r["series"]:
            assert total == pytest.approx(default.epsilon_inf, rel=REL) and e1 == pytest.approx(2.0, rel=REL)
        else:  # Chrome's parameters: min(R·ε₁, min(D, R)·ε∞)
            e_inf = 2 * 2 * math.log(0.75 / 0.25)
            assert total == pytest.approx(min(reports * e1, min(distinct, reports) * e_inf), rel=REL)


def test_sketch_floor_is_where_solve_n_gives_up(quick_run):
    _, out = quick_run
    rows = read_csv(out / "sketch_floor.csv")
    for k in {int(r["k"]) for r in rows}:
        rs = sorted((r for r in rows if int(r["k"]) == k), key=lambda r: int(r["n"]))
        params = CmsParams(float(rs[0]["epsilon"]), k, int(rs[0]["m"]), 0)
        d, floor = int(rs[0]["d"]), float(rs[0]["floor"])
        for r in rs:
            assert float(r["std_error_fraction"]) == pytest.approx(
                plan(params, n=int(r["n"]), domain_size=d).std_error_fraction, rel=REL)
        ses = [float(r["std_error_fraction"]) for r in rs]
        assert ses == sorted(ses, reverse=True) and ses[-1] > floor
        with pytest.raises(ValueError, match="floor"):
            solve_n(params, floor * 0.999, domain_size=d)
        n = solve_n(params, floor * 1.01, domain_size=d)
        assert plan(params, n=n, domain_size=d).std_error_fraction <= floor * 1.01 * (1 + 1e-9)


def test_sfp_split_trades_discovery_for_counting(quick_run):
    _, out = quick_run
    rows = read_csv(out / "sfp_split.csv")
    for r in rows:
        params = SfpParams(float(r["word_epsilon"]), float(r["fragment_epsilon"]))
        pl = plan(params, n=int(r["n"]), domain_size=int(r["d"]), frequency=float(r["frequency"]))
        assert float(r["min_detectable_fraction"]) == pytest.approx(pl.min_detectable_fraction, rel=REL)
        assert float(r["std_error_fraction"]) == pytest.approx(pl.std_error_fraction, rel=REL)
    mdf = [float(r["min_detectable_fraction"]) for r in rows]
    se = [float(r["std_error_fraction"]) for r in rows]
    assert mdf == sorted(mdf, reverse=True) and se == sorted(se)  # more ε to fragments: find more, count worse


def test_plots_and_arguments(tmp_path, monkeypatch, capsys):
    script = load_script("planner_figures")
    few = ["--quick", "--figures", "rappor_horizon,sfp_split", "--out", str(tmp_path), "--img", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(few) == 2
        assert "matplotlib" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--no-plots", "--figures", "nope", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        script.main(["--no-plots", "--d", "1", "--out", str(tmp_path)])
    pytest.importorskip("matplotlib")
    assert script.main(few) == 0
    for png in ("plan-rappor-horizon.png", "plan-sfp-split.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "plan-se-vs-n.png").exists()


def test_oracles_are_recommends_scores(quick_run):
    """Each row is recommend()'s score of that oracle; GRR is under the optimum exactly below d = 3e^ε + 2."""
    from ldp.plan.oracles import optimal_variance, recommend

    script, out = quick_run
    rows = read_csv(out / "oracles.csv")
    assert {r["protocol"] for r in rows} == set(script.ORACLES)
    assert {float(r["epsilon"]) for r in rows} == set(script.ORACLE_EPSILONS)
    small = {(float(r["epsilon"]), int(r["d"])) for r in rows if int(r["d"]) in (16, 64)}  # RAPPOR is slow at large d
    for eps, d in small:
        scores = recommend(eps, d, n=int(rows[0]["n"])).scores
        for r in (r for r in rows if float(r["epsilon"]) == eps and int(r["d"]) == d):
            s = scores[r["protocol"]]
            assert float(r["variance_per_user"]) == pytest.approx(s.variance_per_user, rel=REL)
            assert float(r["variance_ratio"]) == pytest.approx(s.variance_ratio, rel=REL)
            assert int(r["report_bytes"]) == s.report_bytes
    for r in rows:
        eps, d, ratio = float(r["epsilon"]), int(r["d"]), float(r["variance_ratio"])
        assert float(r["optimum"]) == pytest.approx(optimal_variance(eps), rel=REL)
        if r["protocol"] == "grr":
            assert (ratio < 1) == (d < 3 * math.exp(eps) + 2)
        if r["protocol"] == "oue":
            assert ratio == pytest.approx(1.0, rel=REL)
