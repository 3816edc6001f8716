"""``ldp decode --quantiles`` on a histogram metric (text, JSON, refusals, the quantile parser) and ``ldp simulate``
of a histogram protocol (its quantile table)."""

import argparse
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ldp.cli.command import main
from ldp.cli.jobs import quantile_list
from ldp.decoders.histogram import BucketOUEAggregate
from ldp.encoders.histogram import BucketOUEParams
from ldp.jobs.store import write_aggregate
from ldp.spec import CollectionSpec

EDGES = [0, 10, 20, 50, 100, 200]


@pytest.fixture
def job(tmp_path):
    doc = {"spec_version": 1, "name": "latency_app", "budget": {"per_window": 100, "lifetime": 10000},
           "metrics": {"latency": {"protocol": "bucket-oue", "params": {"epsilon": 2, "edges": EDGES},
                                   "budget": {"per_report": 4}},
                       "screen": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3},
                                  "budget": {"per_report": 4}}},
           "release": {"min_reports": 100, "min_z": 100}}
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    spec = CollectionSpec.load(tmp_path / "spec.json")
    params = spec.params("latency")
    assert isinstance(params, BucketOUEParams)
    agg = BucketOUEAggregate.simulate(params, np.array([2000, 5000, 2500, 400, 100]), np.random.default_rng(3))
    path = tmp_path / f"latency.{spec.metrics['latency'].params_fingerprint}.agg"
    write_aggregate(path, agg)
    return tmp_path, path, agg


def test_decode_prints_the_quantiles(job, capsys):
    tmp, path, agg = job
    assert main(["decode", str(path), "--spec", str(tmp / "spec.json"), "--quantiles", "p50,0.95",
                 "--confidence", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "quantiles, 90% CI" in out and "p50" in out and "p95" in out
    # min_z 100 withholds every bucket; the quantiles are the whole metric's (released: n >= min_reports)
    assert main(["decode", str(path), "--spec", str(tmp / "spec.json"), "--quantiles", "p50,p95", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = agg.estimate(0.95).quantiles([0.5, 0.95])
    got = doc["quantiles"]["quantiles"]
    assert [r["quantile"] for r in got] == ["p50", "p95"] and doc["release"]["withheld_items"] == 5
    assert np.allclose([r["estimate"] for r in got], expected.estimate)
    assert np.allclose([r["ci_low"] for r in got], expected.low)


def test_decode_quantiles_refusals(job, capsys):
    tmp, path, _ = job
    assert main(["decode", str(path), "--spec", str(tmp / "spec.json"), "--quantiles", "p50", "--csv"]) == 2
    assert "not --csv" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["decode", str(path), "--spec", str(tmp / "spec.json"), "--quantiles", "1.5"])
    assert "must be in (0, 1)" in capsys.readouterr().err


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                          st.floats(-10, 200).map(lambda v: f"p{v}"), st.text(max_size=4)), min_size=1, max_size=4))
def test_quantile_list_parses_or_names_the_bad_part(parts):
    text = ",".join(parts)
    try:
        qs = quantile_list(text)
    except argparse.ArgumentTypeError as exc:
        assert "quantile" in str(exc)
        return
    assert len(qs) == len(text.split(",")) and all(0.0 < q < 1.0 for q in qs)


def test_quantile_list_forms():
    assert quantile_list("0.5, p95,P99.9") == (0.5, 0.95, pytest.approx(0.999))


def test_simulate_reports_quantile_coverage(capsys):
    assert main(["simulate", "--protocol", "bucket-grr", "--epsilon", "2", "--d", "8", "--n", "5000", "--trials", "20",
                 "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["quantiles"]
    assert [r["quantile"] for r in rows] == ["p50", "p90", "p95", "p99"]
    assert all(0.0 <= r["coverage"] <= 1.0 and r["mean_ci_width"] > 0 for r in rows)
    assert 0.0 <= out["summary"]["quantile_coverage"] <= 1.0
    assert main(["simulate", "--protocol", "bucket-grr", "--epsilon", "2", "--d", "8", "--n", "5000", "--trials", "5",
                 "--seed", "1"]) == 0
    assert "quantiles over the 5 trials" in capsys.readouterr().out
