"""simulations/sfp_discovery.py: SFP word discovery, recall, precision and CI coverage.

The small setting below is n = 10^5 users over the script's default vocabulary: 1,000 random words,
Zipf s = 1, so word i holds p_i = (1/i)/H_1000 of the users (H_1000 ≈ 7.49). The 10th word holds
about 1,340 users, the 20th about 670. Default SFP parameters: CMS with k = 64 for both parts,
m = 1024 for the word and m' = 512 for the fragments, L = 10, r = 2 (P = 5 positions), an 8-bit
hash, ``discover(top=20, alpha=0.05, false_records=0.05)`` (the level and cap that were the
default before issue 20). Three repetitions, each with its own hash family. The
bounds were derived for these defaults, so the first test checks them.

Bounds (derived, not tuned). A position's fragment sketch sees ≈ n/5 = 20,000 reports; the
fragment of word i there has count ≈ p_i·n/5 (≈ 267 for i = 10). CMS variance at f = 0:
``n'(c²−1)/4 + (n' + F2/k)/(m'−1)`` with n' = 20,000, c = (e^{ε/2}+1)/(e^{ε/2}−1) and
F2 ≈ n'²·Σp_i² ≈ 1.2·10^7, so the collision part is ≈ 40 + 360. A record is kept when its
estimate exceeds z·sd with z = z_{1−0.05/186,624} ≈ 5.0 (Bonferroni over the 2^8·27² grid).

* ε_fragment = 8: (c²−1)/4 ≈ 0.019, sd ≈ √(380 + 400) ≈ 28, threshold ≈ 140. The 10th word's
  fragments are ≈ 4.5 sd above it (P(miss) ≈ 3·10^-6 each), and only ~20 words' fragments clear
  it, so ``top=20`` keeps them.
  The word sketch (ε_word = 4, sd ≈ 150, see below; threshold z_{1−0.05/~15}·sd ≈ 440) then sees
  the 10th word ≈ 6 sd above its own threshold. So every top-10 word is found, bar a ~10^-4
  event (50 fragments): the bound recall ≥ 0.9 per repetition allows one miss. If the budgets were swapped
  (the fragments at ε = 4), recall would drop as in the next point.
* ε_fragment = 4: (c²−1)/4 ≈ 0.181, sd ≈ √(3,620 + 400) ≈ 63, threshold ≈ 320: above the
  10th word's fragment count (267). It must clear the threshold at all 5 positions (each ≈
  P(Z > 0.8) ≈ 0.21), so it is found with probability ≈ 4·10^-4. Hence recall ≤ 0.9 per repetition.
  (``discover`` peels the detected records off the sketch, which removes most of the collision
  part of the variance: sd ≈ √(3,620 + 40) ≈ 60, threshold ≈ 300, still above 267.)
* Precision: a non-word passes only if it is detected in the word sketch, where the test is
  Bonferroni-corrected over the scored candidates. So P(any false word) ≤ α = 0.05 per
  repetition, and ≥ 2 false words in one repetition is rarer still. The bound: at most one
  false word per repetition, and precision ≥ 0.9.
* Error and coverage: the discovered words are far above the word-sketch threshold. The fragment
  sketches that select them are independent of the word sketch given the counts. So their
  word-sketch errors are unselected. The exact sd is ≈ 150: privacy noise 10^5·0.181 ≈ 18,100,
  plus hash collisions (n + F2(d)/k)/(m−1) ≈ 100 + 4,000 with F2 ≈ 0.029·n². The collision part
  comes from a Poisson(k/m = 1/16) number of collisions with the heaviest word, each ≈ 1.4 sd.
  That makes the error's excess kurtosis only ≈ 0.2, so it is close to normal. With ≈ 3 × 13 ≈ 39
  pooled words, RMSE/sd has relative sd ≈ √(2.2/(4·39)) ≈ 0.12. The coverage's sd is
  ≈ √(0.95·0.05/39) ≈ 0.035. Bands: RMSE/sd, against the exact formula and against the
  decoder's own SE, in [0.55, 1.45] (≈ 4 sd). Coverage ≥ 0.8 (≈ 4.3 sd below 0.95).

Observed over seeds 0–29 (``--seed``: a new vocabulary, population and client randomness):

* 4:8: recall 1.0 in every repetition, no false words.
* 4:4: recall 0.5–0.8.
* Pooled coverage 0.87–1.0.
* RMSE over the exact sd 0.76–1.30 (mean 0.96, sd 0.11).
* RMSE/SE equal to that within 1%.
"""

from __future__ import annotations

import math
import sys

import pytest
from support.scripts import load_script, read_csv

REPS = 3
# the random vocabulary with the old fragment level (0.05 absent records per position) and cap (top=20): the bounds
# above were derived for them; the default (English words, no cap) is tested at the end
SMALL = ["--quick", "--no-plots", "--reps", str(REPS), "--ns", "100000", "--budgets", "4:4,4:8", "--words", "random",
         "--top", "20", "--false-records", "0.05", "--no-pure"]


def _by_budget(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(f"{r['eps_word']}:{r['eps_fragment']}", []).append(r)
    return out


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sfp_discovery")
    script = load_script("sfp_discovery")
    assert script.main([*SMALL, "--out", str(out)]) == 0
    return script, out


def test_csvs_have_the_expected_columns(small_run):
    script, out = small_run
    rows = read_csv(out / "results.csv")
    assert list(rows[0]) == list(script.RESULT_COLUMNS)
    assert len(rows) == 2 * REPS
    for column in ("recall_top10", "recall_top50", "precision", "rmse", "ci_coverage", "formed", "pruned_padding",
                   "pruned_hash", "seconds_discover"):
        assert column in rows[0]
    assert {r["hash_seed"] for r in rows} == {str(script.HASH_SEED_STEP * rep) for rep in range(REPS)}
    for r in rows:
        assert r["n"] == "100000" and r["failed"] == "0"
        assert float(r["epsilon"]) == pytest.approx(float(r["eps_word"]) + float(r["eps_fragment"]))
    sketches = {tuple(r[c] for c in ("word_sketch", "word_k", "word_m", "fragment_sketch", "fragment_k", "fragment_m"))
                for r in rows}
    assert sketches == {("cms", "64", "1024", "cms", "64", "512")}, "the bounds here were derived for these defaults"
    summary = read_csv(out / "summary.csv")
    assert list(summary[0]) == list(script.SUMMARY_COLUMNS) and len(summary) == 2
    assert all(s["reps"] == str(REPS) for s in summary)
    assert 150 <= int(rows[0]["truncated"]) <= 250  # lengths 3..12: 2 in 10 are longer than L = 10
    assert not list(out.glob("*.png"))


def test_reconstruction_counts_are_consistent(small_run):
    _, out = small_run
    for r in read_csv(out / "results.csv"):
        formed, pad, bad_hash, scored = (int(r[c]) for c in ("formed", "pruned_padding", "pruned_hash", "scored"))
        assert formed == pad + bad_hash + scored
        assert int(r["discovered"]) == int(r["true_found"]) + int(r["false_found"]) <= scored
        assert float(r["kept_per_position"]) <= 20  # top=20
        assert float(r["recall_top50"]) <= 0.45  # at most ~20 words can be discovered with top=20


def test_generous_budget_finds_the_top_words(small_run):
    """ε = 4:8 finds every top-10 word; 4:4 cannot see the 10th word's fragments (module docstring)."""
    _, out = small_run
    runs = _by_budget(read_csv(out / "results.csv"))
    for r in runs["4:8"]:
        assert float(r["recall_top10"]) >= 0.9, r
    for r in runs["4:4"]:
        assert float(r["recall_top10"]) <= 0.9, r
    for r in runs["4:8"] + runs["4:4"]:
        assert int(r["false_found"]) <= 1 and float(r["precision"]) >= 0.9, r
    summary = _by_budget(read_csv(out / "summary.csv"))
    assert float(summary["4:8"][0]["recall_top10"]) > float(summary["4:4"][0]["recall_top10"])
    assert float(summary["4:8"][0]["discovered"]) > float(summary["4:4"][0]["discovered"])


def test_discovered_counts_are_calibrated(small_run):
    """Word-sketch errors of the discovered words: RMSE vs the exact CMS formula, and CI coverage.

    The formula is written out here (apple-and-theory.md §1.4) with the true counts of the
    population, averaged over the top ``true_found`` words (the discovered words are the most
    frequent ones, give or take one or two)."""
    script, out = small_run
    (s,) = _by_budget(read_csv(out / "summary.csv"))["4:8"]
    found = round(float(s["true_found"]))
    assert found * REPS >= 30  # enough words for the bands of the module docstring
    words = script.make_vocabulary(1000, 3, 12, 0)
    pop = script.make_population(100_000, words, 1.0, 0, script.make_params(4, 8))
    f = [float(v) for v in pop.encoded.values()]
    f2 = sum(v * v for v in f)
    n, k, m = pop.n, int(s["word_k"]), int(s["word_m"])
    c = (math.exp(2) + 1) / math.expm1(2)  # CMS at ε_word = 4
    var = [(m / (m - 1)) ** 2 * n * (c**2 - 1) / 4 + ((1 - 1 / k) * (n - fd) + (f2 - fd**2) / k) / (m - 1)
           for fd in f[:found]]
    sd = math.sqrt(sum(var) / len(var))  # ≈ 150: privacy 18,100 + collisions ≈ 4,000 + 100
    assert float(s["rmse_theory"]) == pytest.approx(sd, rel=0.03)
    assert 0.55 <= float(s["rmse"]) / sd <= 1.45, (s["rmse"], sd)
    assert 0.55 <= float(s["rmse_over_se"]) <= 1.45, s["rmse_over_se"]
    assert float(s["ci_coverage"]) >= 0.8, s["ci_coverage"]


def test_plots_and_arguments(tmp_path, monkeypatch, capsys):
    script = load_script("sfp_discovery")
    tiny = ["--reps", "1", "--ns", "100000", "--budgets", "4:8", "--words", "random", "--out", str(tmp_path)]
    with monkeypatch.context() as mp:
        mp.setitem(sys.modules, "matplotlib", None)  # as if not installed
        assert script.main(tiny) == 2
        assert "matplotlib" in capsys.readouterr().err
    assert script.main(["--no-plots", "--budgets", "0:4", "--out", str(tmp_path)]) == 2  # ε must be > 0
    assert "epsilon" in capsys.readouterr().err
    for bad in (["--budgets", "4"], ["--reps", "0"], ["--top", "0"], ["--word-sketch", "rappor"], ["--alpha", "0"],
                ["--false-records", "-1"], ["--pure-top", "0"], ["--words", "klingon"]):
        with pytest.raises(SystemExit):
            script.main(["--no-plots", *bad, "--out", str(tmp_path)])
    pytest.importorskip("matplotlib")
    assert script.main(tiny) == 0
    for name in ("recall_vs_n", "precision_vs_n"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rec@10" in capsys.readouterr().out


def test_default_beats_pure_ldps_rule_on_english_like_words(tmp_path, monkeypatch, capsys):
    """The issue 20 benchmark setting, n = 10^6 and ε 2:2, on the synthetic English-like list (one
    repetition): the default (no cap, 100 expected absent records per position, 0.05 expected
    false words) finds every top-10 word, at least 11 words and no false one, more than pure-ldp's
    rule (top 10 records per position) finds on the same aggregate. Over 10 repetitions it found
    11–13 words (pure-ldp's rule 7–10, 0.4 false on average) with recall@10 0.99 (0.78): one
    collection in ten missed the 10th word, so this seed's pass is not guaranteed by the method,
    only measured (repetition 0 found 13 words, pure-ldp's rule 8)."""
    script = load_script("sfp_discovery")
    monkeypatch.setitem(sys.modules, "wordfreq", None)  # as if not installed: the english list falls back
    out = tmp_path / "en"
    assert script.main(["--no-plots", "-q", "--reps", "1", "--ns", "1000000", "--budgets", "2:2",
                        "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "wordfreq" in captured.err and "English-like" in captured.err
    (r,) = read_csv(out / "results.csv")
    assert r["words"] == "english" and r["top"] == "none" and r["false_records"] == "default"
    assert float(r["recall_top10"]) == 1.0 and int(r["discovered"]) >= 11 and int(r["false_found"]) == 0, r
    assert int(r["true_found"]) > int(r["pure_true_found"]) and float(r["recall_top10"]) >= float(
        r["pure_recall_top10"])
    assert float(r["pure_found"]) == int(r["pure_true_found"]) + int(r["pure_false_found"])
    assert "pure-ldp" in captured.out and "rec@100" in captured.out
    assert script.main(["--no-plots", "--words", "wordfreq", "--out", str(out)]) == 2
    assert "pip install wordfreq" in capsys.readouterr().err
