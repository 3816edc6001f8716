"""simulations/apple_sketches.py: CMS/HCMS simulated variance against the exact formulas.

Tolerances (derived, not tuned). The small setting below is n = 20,000 users over 300 Zipf words,
k = 64, m = 1024, ε ∈ {1, 4}. Privacy noise dominates there: the hash-collision term is at most
~7% of the variance (CMS at ε = 4). So each item's estimate is close to normal. Over R
independent repetitions, its sample variance divided by the true variance is ≈ χ²_{R−1}/(R−1),
with relative sd sqrt(2/(R−1)). Two items share a cell in a row with probability 1/m, so their
estimates are nearly independent. The mean of N items' sample variances, divided by the mean exact
variance, therefore has relative sd ≈ sqrt(2/((R−1)·N)). With R = 30:

* all N = 300 words:    sd ≈ 0.0152, so the tolerance 0.08 is ≈ 5 sd;
* N = 100 null items:   sd ≈ 0.026,  so the tolerance 0.13 is ≈ 5 sd;
* the top N = 10 words: sd ≈ 0.083,  so the tolerance 0.42 is ≈ 5 sd.

Over 40 seeds the observed sds were 0.014–0.016, 0.023–0.028 and 0.07–0.09. The bias check:
z_i = (mean error of item i)/sqrt(V_i/R) is ≈ N(0, 1) when the estimator is unbiased, so the mean
of z² over the 400 candidates has sd sqrt(2/400) ≈ 0.071, and z_rms = sqrt(mean z²) has sd ≈ 0.035.
Its band is 1 ± 0.18 (≈ 5 sd). An error of 10% or more in the formula or in the decoder's scaling
fails the first check (scaling c by 1.05 gave 0.91, and a bias z of 39). So does an ε-vs-ε/2 mix-up
(a factor ≥ 2). A missing m/(m−1) (0.1% at m = 1024) is below this resolution. Reusing one
hash family in every repetition fails the bias check: the last test runs the script that way.
"""

from __future__ import annotations

import math
import sys

import pytest
from support.scripts import load_script, read_csv

SMALL = ["--quick", "--no-plots", "--reps", "30", "--n", "20000", "--vocab", "300", "--null-items", "100",
         "--epsilons", "1,4", "--ms", "1024", "--ks", "64", "--k", "64", "--m", "1024", "--epsilon", "4"]
TOL_ALL, TOL_NULL, TOL_TOP, TOL_Z = 0.08, 0.13, 0.42, 0.18


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("apple_sketches")
    script = load_script("apple_sketches")
    assert script.main([*SMALL, "--out", str(out)]) == 0
    return script, out


def test_csvs_have_the_expected_columns(small_run, capsys):
    script, out = small_run
    for sweep in ("epsilon", "m", "k"):
        rows = read_csv(out / f"error_vs_{sweep}.csv")
        assert list(rows[0]) == list(script.SWEEP_COLUMNS)
        assert {r["oracle"] for r in rows} == {"cms", "hcms"}
        assert all(r["reps"] == "30" and r["n"] == "20000" for r in rows)
    assert len(read_csv(out / "error_vs_epsilon.csv")) == 4  # 2 oracles x 2 ε
    opt = read_csv(out / "ratio_to_optimum.csv")
    assert list(opt[0]) == list(script.OPTIMUM_COLUMNS) and len(opt) == 4
    items = read_csv(out / "per_item.csv")
    assert list(items[0]) == list(script.ITEM_COLUMNS)
    assert len(items) == 3 * 2 * 400 + 2 * 400  # (m and k sweeps: 1 setting; ε sweep: 2) x 2 oracles x 400 items
    assert not list(out.glob("*.png"))


def test_empirical_variance_matches_the_exact_formula(small_run):
    _, out = small_run
    for r in read_csv(out / "error_vs_epsilon.csv"):
        label = f"{r['oracle']} ε={r['epsilon']}"
        assert abs(float(r["var_ratio_all"]) - 1) < TOL_ALL, (label, r["var_ratio_all"])
        assert abs(float(r["var_ratio_null"]) - 1) < TOL_NULL, (label, r["var_ratio_null"])
        assert abs(float(r["var_ratio_top"]) - 1) < TOL_TOP, (label, r["var_ratio_top"])
        assert abs(float(r["bias_z_rms"]) - 1) < TOL_Z, (label, r["bias_z_rms"])
        # the RMSE columns are the same comparison on another scale: mean MSE about the truth vs theory
        assert abs(float(r["rmse_emp_all"]) / float(r["rmse_theory_all"]) - 1) < TOL_ALL
        # privacy noise dominates here (the premise of the tolerances above)
        assert float(r["theory_collision_all"]) < 0.1 * float(r["var_theory_all"])


def test_ratio_to_optimum_uses_the_privacy_term(small_run):
    script, out = small_run
    for r in read_csv(out / "ratio_to_optimum.csv"):
        eps, k, m = float(r["epsilon"]), int(r["k"]), int(r["m"])
        opt = 4 * math.exp(eps) / math.expm1(eps) ** 2
        assert float(r["optimum_const"]) == pytest.approx(opt, rel=1e-5)
        r2 = (m / (m - 1)) ** 2
        if r["oracle"] == "cms":  # SUE constant e^{ε/2}/(e^{ε/2}−1)², apple-and-theory.md §2.3 table
            expected = r2 * math.exp(eps / 2) / math.expm1(eps / 2) ** 2
        else:  # BLH/HR constant ((e^ε+1)/(e^ε−1))² minus the O(1/m) collision correction
            expected = r2 * (((math.exp(eps) + 1) / math.expm1(eps)) ** 2 - 1 / (k * m) - (1 - 1 / k) / m**2)
        assert float(r["privacy_const"]) == pytest.approx(expected, rel=1e-5)
        assert float(r["privacy_ratio_to_optimum"]) == pytest.approx(expected / opt, rel=1e-5)
        assert float(r["privacy_ratio_to_optimum"]) > 1  # neither oracle beats the optimum
        assert abs(float(r["null_ratio_emp_to_theory"]) - 1) < TOL_NULL
    rows = read_csv(out / "ratio_to_optimum.csv")
    by = {(r["oracle"], r["epsilon"]): float(r["privacy_ratio_to_optimum"]) for r in rows}
    assert by[("cms", "4")] == pytest.approx(2.386, abs=0.01) and by[("hcms", "4")] == pytest.approx(14.18, abs=0.05)


def test_fixed_hash_family_is_caught_by_the_bias_check(tmp_path):
    """One hash family for all repetitions: items colliding with heavy hitters are biased (§1.4).

    At ε = 4 the collision variance (≈ 270) is ≈ 7.5% of the total variance (≈ 3,600). With one
    fixed family, most of it becomes a fixed bias of each item, so E[z²] is up to 1 + R·270/3600 ≈ 3.2
    (z_rms ≈ 1.8). The observed z_rms is 1.55: still ≈ 10 sd above the band 1 ± 0.18."""
    script = load_script("apple_sketches")
    args = [a if a != "1,4" else "4" for a in SMALL]
    assert script.main([*args, "--oracles", "cms", "--sweeps", "epsilon", "--fixed-hash-seed",
                        "--out", str(tmp_path)]) == 0
    (row,) = read_csv(tmp_path / "error_vs_epsilon.csv")
    assert float(row["bias_z_rms"]) > 1 + TOL_Z


def test_plots_and_arguments(tmp_path, monkeypatch, capsys):
    script = load_script("apple_sketches")
    tiny = ["--reps", "3", "--n", "2000", "--vocab", "50", "--null-items", "10", "--epsilons", "2,4",
            "--ms", "64,128", "--ks", "1,4", "--k", "4", "--m", "64", "--out", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(tiny) == 2
        assert "matplotlib" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    assert script.main(tiny) == 0
    for name in ("error_vs_epsilon", "error_vs_m", "error_vs_k", "ratio_to_optimum"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):  # HCMS needs a power-of-two width
        script.main(["--no-plots", "--ms", "100", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        script.main(["--no-plots", "--reps", "1", "--out", str(tmp_path)])
