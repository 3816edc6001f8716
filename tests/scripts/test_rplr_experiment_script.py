"""simulations/rplr_experiment.py: RPLR on model-(3.11) data, Spearman ρ against ε and n_pv (quick mode).

The run below is ``--quick`` (10 Monte Carlo splits, 4 × 4 threshold searches on a coarse ω grid)
restricted to ε ∈ {0.1, 10} at n_pv = 500 and n_pv ∈ {0, 100, 800} at ε = 2. It takes about 2 s.

The trend tested is that RPLR's mean ρ at ε = 10 beats its mean at ε = 0.1 by more than 0.4. Why it is
robust: at ε = 0.1 the Xᵀy share is p2·ε = 0.06. The Laplace scale 2d·B_x·B_y/0.06 ≈ 333·B_x·B_y per
coordinate then exceeds the clipped signal, which is at most ≈ n·B_x·B_y·|E sign(x_j)·sign(y)| ≈ 100·B_x·B_y
at n = 500 (the thresholds sit near the ω → 0 plateau, where Zᵀu ≈ B_x·B_y·sign(X)ᵀsign(y)). So ρ is
small. At ε = 10 the scale is 100 times smaller, and ρ is close to the non-private one (≈ 0.9).
Measured over ``--seed`` 0–7: the difference is 0.51–0.87, and its standard error is ≤ 0.15 (the ε = 0.1
spread dominates).
"""

from __future__ import annotations

import sys

import pytest
from support.scripts import load_script, read_csv

SMALL = ["--quick", "--no-plots", "--epsilons", "0.1,10", "--n-pvs", "0,100,800"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rplr")
    script = load_script("rplr_experiment")
    assert script.main([*SMALL, "--out", str(out)]) == 0
    return script, out


def test_csvs_have_the_expected_rows(small_run):
    script, out = small_run
    rows = read_csv(out / "results.csv")
    assert list(rows[0]) == list(script.RESULT_COLUMNS)
    settings = {("epsilon", "0.1", "500"), ("epsilon", "10", "500"), ("npv", "2", "0"), ("npv", "2", "100"),
                ("npv", "2", "800")}
    assert {(r["sweep"], r["epsilon"], r["n_pv"]) for r in rows} == settings
    assert len(rows) == len(settings) * script.QUICK_SPLITS * len(script.METHODS)
    assert all(-1 <= float(r["spearman"]) <= 1 and r["n_npv"] == "10" and r["n_test"] == "100" for r in rows)
    summary = read_csv(out / "summary.csv")
    assert list(summary[0]) == list(script.SUMMARY_COLUMNS)
    assert len(summary) == len(settings) * len(script.METHODS)
    assert all(s["splits"] == str(script.QUICK_SPLITS) for s in summary)
    # the public-only baseline does not depend on the setting (same splits everywhere)
    assert len({s["spearman_mean"] for s in summary if s["method"] == "public_only"}) == 1
    # n_pv = 0: nothing private, so every method is the public-only fit and no threshold was chosen
    zero = [s for s in summary if s["n_pv"] == "0"]
    assert len({s["spearman_mean"] for s in zero}) == 1 and all(s["omega_x"] == "nan" for s in zero)
    for s in summary:
        if s["n_pv"] != "0":
            assert float(s["omega_x"]) in script.QUICK_GRID and float(s["omega_y"]) in script.QUICK_GRID
    clipped = [r for r in rows if r["method"] == "rplr" and r["n_pv"] != "0"]
    assert all(0 < float(r["clip_X"]) < 1 for r in clipped)  # ω_x·SD of unit-norm rows (SD ≈ 0.32)
    assert not list(out.glob("*.png"))


def test_spearman_grows_with_epsilon_and_with_private_rows(small_run):
    """The bound is derived in the module docstring."""
    _, out = small_run
    mean = {(s["sweep"], s["epsilon"], s["n_pv"], s["method"]): float(s["spearman_mean"])
            for s in read_csv(out / "summary.csv")}
    assert mean[("epsilon", "10", "500", "rplr")] - mean[("epsilon", "0.1", "500", "rplr")] > 0.4
    # without noise, more data cannot hurt much: the no-clipping reference at 800 is near its ceiling
    assert mean[("npv", "2", "800", "nonprivate_noclip")] > mean[("npv", "2", "800", "public_only")]
    assert mean[("npv", "2", "800", "rplr")] > mean[("npv", "2", "100", "rplr")]


def test_plots_and_arguments(tmp_path, monkeypatch, capsys):
    script = load_script("rplr_experiment")
    tiny = ["--splits", "2", "--sweeps", "epsilon", "--epsilons", "10", "--aux-datasets", "1", "--aux-noise", "1",
            "--omega-grid", "0.05,1", "--out", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(tiny) == 2
        assert "matplotlib" in capsys.readouterr().err
    assert script.main(["--no-plots", *tiny[:-2], "--split", "0.5,0.5,0.5", "--out", str(tmp_path)]) == 2
    assert "sum to 1" in capsys.readouterr().err
    for bad in (["--splits", "1"], ["--sweeps", "gamma"], ["--n-pvs", "1"], ["--n-total", "200"]):
        with pytest.raises(SystemExit):
            script.main(["--no-plots", *bad, "--out", str(tmp_path)])
    pytest.importorskip("matplotlib")
    assert script.main(tiny) == 0
    assert (tmp_path / "spearman_vs_epsilon.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Spearman ρ vs ε" in capsys.readouterr().out
