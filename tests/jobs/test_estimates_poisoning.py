"""The estimates file carries the window's poisoning verdict (issue 72, item 6): write_estimates' CSV (two columns
on every row) and JSON (a key), as ``ldp decode --csv`` and ``--json`` print them; without evidence, unchanged."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.jobs.decode import estimates_csv, estimates_json, write_estimates
from ldp.jobs.poisoning import evidence_summary

PARAMS = RapporParams(num_bloombits=16, num_hashes=2, num_cohorts=4, p=0.25, q=0.75, f=0.5)
CANDIDATES = ["plain", 'with "quotes", and a comma', "line\nbreak"]


@pytest.fixture(scope="module")
def decoded() -> tuple[object, dict[str, object]]:
    agg = RapporAggregate.simulate(PARAMS, {c: 300 + 100 * i for i, c in enumerate(CANDIDATES)}, 3)
    summary = evidence_summary(agg)
    assert summary is not None
    return agg.estimate(CANDIDATES, selection="none"), summary


def test_the_csv_gains_the_verdict_on_every_row_and_keeps_its_own(decoded: tuple[object, dict[str, object]]) -> None:
    est, summary = decoded
    plain = list(csv.DictReader(io.StringIO(estimates_csv(est))))
    rows = list(csv.DictReader(io.StringIO(estimates_csv(est, summary))))
    assert estimates_csv(est) == est.to_csv()  # type: ignore[attr-defined]
    assert len(rows) == len(plain) == len(CANDIDATES)
    for row, before in zip(rows, plain, strict=True):
        assert {k: v for k, v in row.items() if not k.startswith("poisoning_")} == before
        assert row["poisoning_verdict"] == summary["verdict"] == "ok"
        assert float(row["poisoning_p_value"]) == summary["p_value"]
    untested = {**summary, "verdict": "untested", "p_value": None}
    assert {r["poisoning_p_value"] for r in csv.DictReader(io.StringIO(estimates_csv(est, untested)))} == {""}


def test_the_json_and_the_files(decoded: tuple[object, dict[str, object]], tmp_path: Path) -> None:
    est, summary = decoded
    assert "poisoning" not in json.loads(estimates_json(est))
    assert json.loads(estimates_json(est, summary))["poisoning"] == summary
    written = write_estimates(est, csv=tmp_path / "e.csv", json=tmp_path / "e.json", poisoning=summary)
    assert written == [tmp_path / "e.csv", tmp_path / "e.json"]
    assert (tmp_path / "e.csv").read_text(encoding="utf-8") == estimates_csv(est, summary)
    assert json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))["poisoning"]["verdict"] == "ok"
