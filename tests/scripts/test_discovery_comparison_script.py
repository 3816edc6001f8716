"""simulations/discovery_comparison.py runs end to end on a tiny setting (all three methods, synthetic words)."""

import math

from support.scripts import load_script, read_csv


def test_discovery_comparison_script_runs(tmp_path, capsys):
    dc = load_script("discovery_comparison")
    assert dc.main(["--ns", "20000", "--ngram-ns", "20000", "--epsilons", "8", "--reps", "1", "--words",
                    "english-like", "--vocab", "200", "--ngram-budget", "60", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rappor-ngrams" in out and "budget of 60.0 s" in out
    rows = read_csv(tmp_path / "results.csv")
    assert [r["method"] for r in rows] == ["pem", "sfp", "rappor-ngrams"]
    assert all(r["status"] == "ok" and 0.0 <= float(r["recall_top10"]) <= 1.0 for r in rows)
    assert [r["max_length"] for r in rows] == ["10", "10", "6"]
    assert len(read_csv(tmp_path / "summary.csv")) == 3


def test_budget_timeout_and_skip():
    dc = load_script("discovery_comparison")
    assert dc.run_with_budget(lambda: {"x": 1}, 5.0) == {"x": 1}

    def slow():
        import time

        time.sleep(5)
        return {}

    assert dc.run_with_budget(slow, 0.2) is None
    rows = [{"method": "rappor-ngrams", "n": 10, "epsilon": 8.0, "max_length": 6, "rep": 0, "status": "timeout",
             **{m: math.nan for m in dc.METRICS}}, dc.skipped(10, 4.0, 0)]
    summary = dc.summarize(rows)
    assert [s["status"] for s in summary] == ["skipped", "timeout"] and summary[1]["rep"] == 0  # sorted by ε
    assert "timeout" in dc.format_table(summary)
