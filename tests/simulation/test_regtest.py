"""Google's RAPPOR regtest as data (ldp.simulation.rappor_regtest) and its script (simulations/rappor_regtest.py)."""

import csv
import importlib.util
import math
import sys

import numpy as np
import pytest
from scipy import stats
from support import ROOT

from ldp.simulation import rappor_regtest as regtest
from ldp.simulation.rappor_regtest import CONFIGS, SIZES, candidates, case_metrics, cases, pmf, run_case, true_counts


def _case(name: str) -> regtest.RegtestCase:
    (case,) = [c for c in cases(sizes=tuple(SIZES)) if c.name == name]
    return case


def test_pmfs_follow_google_compute_pdf():
    r = 100
    i = np.arange(1, r + 1)
    expected = {
        "unif": np.ones(r),
        "exp": stats.expon(scale=r / 5).pdf(i),  # R's dexp(i, rate = 5/R)
        "gauss": stats.norm(0, r / 6).pdf(i - r / 2),  # dnorm over -R/2+1..R/2, sd R/6
        "zipf1": 1 / i,
        "zipf1.5": i ** -1.5,
    }
    for name, w in expected.items():
        got = pmf(name, r)
        assert got.shape == (r,) and math.isclose(got.sum(), 1.0)
        np.testing.assert_allclose(got, w / w.sum(), rtol=1e-12)
    e = pmf("exp", 40)
    np.testing.assert_allclose(e[1:] / e[:-1], math.exp(-5 / 40))
    g = pmf("gauss", r)
    assert g.argmax() == 49  # v50 is x = 0
    np.testing.assert_allclose(g[:49], g[50:99][::-1])  # symmetric around v50; v100 is the extra tail
    assert math.isclose(g[49 + 17] / g[49], math.exp(-0.5 * (17 / (r / 6)) ** 2))
    with pytest.raises(ValueError, match="unknown distribution"):
        pmf("pareto", 3)


def test_cases_match_regtest_spec():
    default = cases()
    # tiny + small: 5 distributions x 5 configs = 25 cases per size, 50 in all
    assert len(default) == 50 and len({c.name for c in default}) == 50
    assert len(cases(sizes=("tiny",))) == 25 and len(cases(sizes=tuple(SIZES))) == 100
    assert [c.name for c in cases(sizes="tiny", configs="sharp")] == [
        f"r-{d}-tiny-sharp" for d in ("unif", "exp", "gauss", "zipf1", "zipf1.5")]
    c = _case("r-exp-small-typical")
    assert (c.n_values, c.n_reports, c.extra, c.remove, c.num_additional) == (100, 1_000_000, 0.2, True, 20)
    p = c.params
    assert (p.k, p.h, p.m, p.p, p.q, p.f, p.mode) == (8, 2, 128, 0.39, 0.61, 0.45, "ldp")
    assert _case("r-unif-large-loose").params.f == 0.0 and _case("r-unif-large-loose").n_reports == 10 ** 8
    assert abs(_case("r-unif-tiny-typical").params.epsilon_one - 0.9728) < 1e-4  # rappor-reference.md §5
    assert cases(sizes="tiny", dists="exp", configs="sharp", mode="google")[0].params.mode == "google"
    with pytest.raises(ValueError, match="unknown configs"):
        cases(configs=("nope",))


def test_candidates_remove_every_tenth_and_add_extras():
    typical = candidates(_case("r-exp-small-typical"))
    assert len(typical) == 90 + 20
    removed = {f"v{i}" for i in range(1, 101)} - set(typical)
    assert removed == {f"v{i}" for i in range(9, 100, 10)}
    assert typical[-20:] == [f"v{i}" for i in range(101, 121)] and "v109" in typical  # extras are not filtered
    assert candidates(_case("r-exp-tiny-sharp")) == [f"v{i}" for i in range(1, 101)]
    big = candidates(_case("r-gauss-medium-over_x10"))
    assert len(big) == 900 + 10_000 and big[900] == "v1001" and big[-1] == "v11000"
    assert len(candidates(_case("r-zipf1-large-over_x2"))) == 9_000 + 20_000
    assert {c.extra for c in CONFIGS.values()} == {0.0, 0.2, 2.0, 10.0}


def test_true_counts_is_a_multinomial_draw_without_zeros():
    case = _case("r-zipf1.5-tiny-sharp")
    t = true_counts(case, np.random.default_rng(3))
    assert sum(t.values()) == 1000 and all(v > 0 for v in t.values())
    assert t == true_counts(case, np.random.default_rng(3)) and t["v1"] > 300  # v1 holds 38% of zipf1.5
    assert len(t) < 100  # the tail is mostly empty at 1,000 reports


def test_case_metrics_by_hand():
    truth = {"v1": 6, "v2": 3, "v3": 1, "v6": 0}  # n = 10; v6 holds nobody
    estimates = {"v1": 5.0, "v2": 4.0, "v4": 1.0, "v5": 2.0, "v6": 1.0}
    m = case_metrics(truth, estimates, {"v1", "v2", "v4"}, num_additional=2)
    # detected v1, v2 (true), v4 (FP); v3 missed (FN); v5 is not detected, so its estimate is ignored
    assert (m["num_actual"], m["num_detected"], m["fp"], m["fn"]) == (3, 3, 1, 1)
    assert m["fp_rate"] == 0.5 and math.isclose(m["fn_rate"], 1 / 3)
    # TV = 1/2 (|.6-.5| + |.3-.4| + |.1-0| + |0-.1|) = 0.2; mass = .5 + .4 + .1
    assert math.isclose(m["total_variation"], 0.2) and math.isclose(m["allocated_mass"], 1.0)
    m = case_metrics(truth, estimates, {"v6", "v1"}, num_additional=0)  # a zero-count value is not "actual"
    assert (m["fp"], m["fn"]) == (1, 2) and math.isnan(m["fp_rate"])
    assert math.isclose(m["total_variation"], 0.5 * (0.1 + 0.3 + 0.1 + 0.1))
    m = case_metrics(truth, {}, set(), num_additional=20)
    assert (m["fp"], m["fn"], m["allocated_mass"]) == (0, 3, 0.0) and math.isclose(m["total_variation"], 0.5)


def test_run_case_exp_small_sharp():
    res = run_case(_case("r-exp-small-sharp"), rng=np.random.default_rng(2024), method="aggregate")
    assert (res.method, res.mode, res.n_reports, res.num_candidates) == ("aggregate", "ldp", 10 ** 6, 100)
    # Measured over 60 seeds: FP = 0 every time, 26-34 detected, TV 0.146-0.185 (median 0.164,
    # sd ~0.01). 0.25 is > 6 sd above the worst; detecting nothing would give TV = 0.5.
    assert res.fp == 0
    assert res.num_detected >= 15
    assert 0.05 < res.total_variation < 0.25
    assert 0.5 < res.allocated_mass < 1.1
    assert res.fn == res.num_actual - res.num_detected
    assert set(res.estimated) <= set(res.truth) and set(res.ci) == set(res.estimated)
    row = res.row()
    assert row["case"] == "r-exp-small-sharp" and "truth" not in row and math.isnan(row["fp_rate"])


def test_plot_case(tmp_path, monkeypatch):
    res = run_case(_case("r-zipf1.5-small-typical"), rng=1, method="aggregate")
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        with pytest.raises(ImportError, match=r"pip install 'ldp-telemetry\[plot\]'"):
            regtest.plot_case(res, tmp_path / "x.png")
    pytest.importorskip("matplotlib")
    regtest.plot_case(res, tmp_path / "x.png")
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _script():
    spec = importlib.util.spec_from_file_location("rappor_regtest_script", ROOT / "simulations" / "rappor_regtest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_script_writes_csvs(tmp_path, capsys):
    script = _script()
    assert script.main(["--sizes", "tiny", "--configs", "sharp", "--no-plots", "--out", str(tmp_path),
                        "--repeats", "2"]) == 0
    with open(tmp_path / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    with open(tmp_path / "summary.csv") as fh:
        summary = list(csv.DictReader(fh))
    assert len(rows) == 10 and {r["repeat"] for r in rows} == {"0", "1"}
    assert [s["case"] for s in summary] == [f"r-{d}-tiny-sharp" for d in ("unif", "exp", "gauss", "zipf1", "zipf1.5")]
    assert all(s["repeats"] == "2" and "total_variation_se" in s for s in summary)
    assert not list(tmp_path.glob("*.png"))
    out = capsys.readouterr().out
    assert "r-zipf1.5-tiny-sharp" in out and "TV" in out
    assert script.mean_se([1.0, 3.0]) == (2.0, 1.0) and math.isnan(script.mean_se([4.0])[1])
    assert script.main(["--dists", "nope", "--no-plots", "--out", str(tmp_path)]) == 2
