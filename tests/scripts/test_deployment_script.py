"""simulations/deployment.py --quick: clients with state files, uploads, the server job and decoding.

The checks are exact (budgets, one report per client, metric and day, formats agreeing) except
the CI coverage, which has 33 intervals at ≈ 0.95 each: P(coverage < 0.8) ≈ P(Bin(33, 0.05) ≥ 7)
≈ 0.004 if they were independent (the RAPPOR days share each client's memoized PRR)."""

from __future__ import annotations

import json

import pytest
from support.scripts import load_script, read_csv


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    script = load_script("deployment")
    out = tmp_path_factory.mktemp("deployment")
    status = script.main(["--quick", "--workers", "1", "--out", str(out)])
    return script, out, status


def test_quick_deployment_passes_its_checks(run):
    _, out, status = run
    summary = json.loads((out / "summary.json").read_text())
    assert status == 0 and all(summary["checks"].values()), summary
    assert summary["reports_recorded"] == 120 * 3 * 3 == summary["server_records"]
    assert summary["extra_reports_tried"] == summary["extra_reports_refused"] > 0
    assert summary["ci_coverage_all"] >= 0.8 and summary["intervals"] == 3 * (4 + 2 + 5)


def test_estimates_csv_holds_truth_and_intervals(run):
    script, out, _ = run
    rows = read_csv(out / "estimates.csv")
    assert list(rows[0]) == list(script.ESTIMATE_COLUMNS)
    for metric, items in (("app_category", 4), ("dark_mode", 2), ("homepage", 5)):
        for window in (20000, 20001, 20002):
            day = [r for r in rows if r["metric"] == metric and int(r["window"]) == window]
            assert len(day) == items
            if metric != "homepage":  # each client holds one value of these per day
                assert sum(int(r["true_count"]) for r in day) == 120
    assert all(float(r["ci_low"]) <= float(r["count"]) <= float(r["ci_high"]) for r in rows)
    assert len(list((out / "uploads").glob("arrived-*.jsonl"))) == 4
