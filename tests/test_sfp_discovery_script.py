"""simulations/sfp_discovery.py: SFP word discovery, recall, precision and CI coverage.

The small setting below is n = 10^5 users over the script's default vocabulary: 1,000 random words,
Zipf s = 1, so word i holds p_i = (1/i)/H_1000 of the users (H_1000 ≈ 7.49). The 10th word holds
about 1,340 users, the 20th about 670. Default SFP parameters: CMS with k = 64, m = 1024 for both
parts, L = 10, r = 2 (P = 5 positions), an 8-bit hash, ``discover(top=20, alpha=0.05)``. Three
repetitions, each with its own hash family.

Bounds (derived, not tuned). A position's fragment sketch sees ≈ n/5 = 20,000 reports; the
fragment of word i there has count ≈ p_i·n/5 (≈ 267 for i = 10). CMS variance at f = 0:
``n'(c²−1)/4 + (n' + F2/k)/(m−1)`` with n' = 20,000, c = (e^{ε/2}+1)/(e^{ε/2}−1) and
F2 ≈ n'²·Σp_i² ≈ 1.2·10^7, so the collision part is ≈ 20 + 180. A record is kept when its
estimate exceeds z·sd with z = z_{1−0.05/186,624} ≈ 5.0 (Bonferroni over the 2^8·27² grid).

* ε_fragment = 8: (c²−1)/4 ≈ 0.019, sd ≈ √(380 + 200) ≈ 24, threshold ≈ 120. The 10th word's
  fragments are ≈ 6 sd above it, and only ~20 words' fragments clear it, so ``top=20`` keeps them.
  The word sketch (ε_word = 4, sd ≈ √(10^5·0.181) ≈ 135) then sees the 10th word ≈ 7 sd above its
  own threshold. So every top-10 word is found, bar a ~10^-8 event: the bound recall ≥ 0.9 per
  repetition allows one miss. If the budgets were swapped (the fragments at ε = 4), recall would
  drop as in the next point.
* ε_fragment = 4: (c²−1)/4 ≈ 0.181, sd ≈ √(3,620 + 200) ≈ 62, threshold ≈ 310: above the
  10th word's fragment count (267). It must clear the threshold at all 5 positions (each ≈
  P(Z > 0.7) ≈ 0.24), so it is found with probability ≈ 10^-3. Hence recall ≤ 0.9 per repetition.
* Precision: a non-word passes only if it is detected in the word sketch, where the test is
  Bonferroni-corrected over the scored candidates. So P(any false word) ≤ α = 0.05 per
  repetition, and ≥ 2 false words in one repetition is rarer still. The bound: at most one
  false word per repetition, and precision ≥ 0.9.
* Error and coverage: the discovered words are far above the word-sketch threshold. The fragment
  sketches that select them are independent of the word sketch given the counts. So their
  word-sketch errors are unselected and close to normal (privacy noise is ≈ 99% of the variance at
  n = 10^5). The exact sd is ≈ 135. With ≈ 3 × 14 ≈ 42 pooled words, RMSE/sd has relative sd
  ≈ 1/√84 ≈ 0.11, and the coverage's sd is ≈ √(0.95·0.05/42) ≈ 0.034. Bands: RMSE/sd (the exact
  formula, and the decoder's own SE) in [0.6, 1.45] (≈ 4 sd). Coverage ≥ 0.8 (≈ 4.4 sd below 0.95).

Over seeds 0–9, 4:8 gave recall 1.0 in every repetition, precision 1.0 and no false words. Pooled
coverage was 0.92–1.0 and RMSE/SE 0.82–1.14. 4:4 gave recall 0.5–0.8.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPS = 3
SMALL = ["--quick", "--no-plots", "--reps", str(REPS), "--ns", "100000", "--budgets", "4:4,4:8"]


def _script():
    name = "sfp_discovery_script"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "simulations" / "sfp_discovery.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the class is created
    spec.loader.exec_module(mod)
    return mod


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _by_budget(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(f"{r['eps_word']}:{r['eps_fragment']}", []).append(r)
    return out


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sfp_discovery")
    script = _script()
    assert script.main([*SMALL, "--out", str(out)]) == 0
    return script, out


def test_csvs_have_the_expected_columns(small_run):
    script, out = small_run
    rows = _read(out / "results.csv")
    assert list(rows[0]) == list(script.RESULT_COLUMNS)
    assert len(rows) == 2 * REPS
    for column in ("recall_top10", "recall_top50", "precision", "rmse", "ci_coverage", "formed", "pruned_padding",
                   "pruned_hash", "seconds_discover"):
        assert column in rows[0]
    assert {r["hash_seed"] for r in rows} == {str(script.HASH_SEED_STEP * rep) for rep in range(REPS)}
    for r in rows:
        assert r["n"] == "100000" and r["failed"] == "0"
        assert float(r["epsilon"]) == pytest.approx(float(r["eps_word"]) + float(r["eps_fragment"]))
    summary = _read(out / "summary.csv")
    assert list(summary[0]) == list(script.SUMMARY_COLUMNS) and len(summary) == 2
    assert all(s["reps"] == str(REPS) for s in summary)
    assert 150 <= int(rows[0]["truncated"]) <= 250  # lengths 3..12: 2 in 10 are longer than L = 10
    assert not list(out.glob("*.png"))


def test_reconstruction_counts_are_consistent(small_run):
    _, out = small_run
    for r in _read(out / "results.csv"):
        formed, pad, bad_hash, scored = (int(r[c]) for c in ("formed", "pruned_padding", "pruned_hash", "scored"))
        assert formed == pad + bad_hash + scored
        assert int(r["discovered"]) == int(r["true_found"]) + int(r["false_found"]) <= scored
        assert float(r["kept_per_position"]) <= 20  # top=20
        assert float(r["recall_top50"]) <= 0.45  # at most ~20 words can be discovered with top=20


def test_generous_budget_finds_the_top_words(small_run):
    """ε = 4:8 finds every top-10 word; 4:4 cannot see the 10th word's fragments (module docstring)."""
    _, out = small_run
    runs = _by_budget(_read(out / "results.csv"))
    for r in runs["4:8"]:
        assert float(r["recall_top10"]) >= 0.9, r
    for r in runs["4:4"]:
        assert float(r["recall_top10"]) <= 0.9, r
    for r in runs["4:8"] + runs["4:4"]:
        assert int(r["false_found"]) <= 1 and float(r["precision"]) >= 0.9, r
    summary = _by_budget(_read(out / "summary.csv"))
    assert float(summary["4:8"][0]["recall_top10"]) > float(summary["4:4"][0]["recall_top10"])
    assert float(summary["4:8"][0]["discovered"]) > float(summary["4:4"][0]["discovered"])


def test_discovered_counts_are_calibrated(small_run):
    """Word-sketch errors of the discovered words: RMSE vs the exact CMS formula, and CI coverage."""
    _, out = small_run
    (s,) = _by_budget(_read(out / "summary.csv"))["4:8"]
    assert float(s["true_found"]) * REPS >= 30  # enough words for the bands of the module docstring
    n, k, m = 100_000, 64, 1024
    c = (math.exp(2) + 1) / math.expm1(2)  # CMS at ε_word = 4
    sd = math.sqrt((m / (m - 1)) ** 2 * n * (c**2 - 1) / 4 + n / (m - 1))  # + F2/(k(m−1)) < 10: negligible
    assert 0.6 <= float(s["rmse"]) / sd <= 1.45, (s["rmse"], sd)
    assert 0.6 <= float(s["rmse_over_se"]) <= 1.45, s["rmse_over_se"]
    assert float(s["ci_coverage"]) >= 0.8, s["ci_coverage"]


def test_plots_and_arguments(tmp_path, monkeypatch, capsys):
    script = _script()
    tiny = ["--reps", "1", "--ns", "100000", "--budgets", "4:8", "--out", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(tiny) == 2
        assert "matplotlib" in capsys.readouterr().err
    assert script.main(["--no-plots", "--budgets", "0:4", "--out", str(tmp_path)]) == 2  # ε must be > 0
    assert "epsilon" in capsys.readouterr().err
    for bad in (["--budgets", "4"], ["--reps", "0"], ["--top", "0"], ["--word-sketch", "rappor"]):
        with pytest.raises(SystemExit):
            script.main(["--no-plots", *bad, "--out", str(tmp_path)])
    pytest.importorskip("matplotlib")
    assert script.main(tiny) == 0
    for name in ("recall_vs_n", "precision_vs_n"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rec@10" in capsys.readouterr().out
