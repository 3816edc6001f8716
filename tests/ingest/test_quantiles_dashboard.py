"""The ingest service shows a histogram metric's p50 and p95 with CIs: the fold writes them (the estimates'
``summary_quantiles`` hook), the dashboard prints them for the latest window and over time; a metric without
the hook has none."""

import json
from datetime import UTC, datetime

import numpy as np
from test_watch import WINDOW, add_segment

from ldp.decoders.histogram import BucketGRRAggregate
from ldp.encoders.histogram import BucketGRRParams
from ldp.ingest.dashboard import render_page
from ldp.ingest.series import summary_quantiles
from ldp.ingest.watch import fold_app
from ldp.jobs import Section
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

EDGES = [0, 25, 50, 100, 200, 400, 800]


def test_fold_and_dashboard_show_the_quantiles(tmp_path):
    doc = {"spec_version": 1, "name": "latency_app", "budget": {"per_window": 100, "lifetime": 1000},
           "metrics": {"latency_ms": {"protocol": "bucket-grr", "params": {"epsilon": 4, "edges": EDGES},
                                      "budget": {"per_report": 4}},
                       "screen": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3},
                                  "budget": {"per_report": 1}}}}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(doc))
    spec = CollectionSpec.load(spec_path)
    rng = np.random.default_rng(1)
    lines = []
    for name, values in (("latency_ms", rng.choice(6, 3000, p=[0.1, 0.3, 0.3, 0.2, 0.07, 0.03])),
                         ("screen", rng.integers(0, 3, 3000))):
        enc = get_protocol(spec.metrics[name].protocol).encoder_type(spec.params(name))
        sec = Section(spec.fingerprint, name, WINDOW, enc.encode_batch(values, rng))
        lines += [Envelope(sec.spec, sec.metric, sec.window, r).to_json() for r in sec.reports.reports()]
    data = tmp_path / "data"
    add_segment(data, lines, 1)
    folded = fold_app(data, "demo", [spec_path])
    by_name = {m["metric"]: m for m in folded["metrics"]}
    hist, other = by_name["latency_ms"], by_name["screen"]
    assert other["quantiles"] is None and other["windows"][-1]["quantiles"] is None
    rows = hist["windows"][-1]["quantiles"]["quantiles"]
    assert [r["quantile"] for r in rows] == ["p50", "p95"]
    assert hist["quantiles"]["quantiles"] == rows  # one window: the pooled view is the same
    assert 25.0 < rows[0]["estimate"] < 100.0 and rows[0]["ci_low"] <= rows[0]["estimate"] <= rows[0]["ci_high"]
    html = render_page({"demo": folded}, now=datetime.fromtimestamp(WINDOW * 86400 + 3600, UTC))
    assert "Quantiles of latency_ms in the window of" in html
    assert "p50 of the values (95% CI)" in html and "p95 of the values (95% CI)" in html  # over time
    assert '<th scope="row">p50</th><td>' in html
    assert "Quantiles of screen" not in html and html.count("of the values (95% CI)") == 2


def test_summary_quantiles_hook():
    params = BucketGRRParams(2.0, tuple(float(e) for e in EDGES))
    truth = np.array([100, 300, 300, 200, 70, 30])
    est = BucketGRRAggregate.simulate(params, truth, np.random.default_rng(2)).estimate()
    doc = summary_quantiles(est)
    assert doc is not None and [r["quantile"] for r in doc["quantiles"]] == ["p50", "p95"]
    assert json.loads(json.dumps(doc)) == doc  # plain JSON
    assert summary_quantiles(object()) is None  # no hook, no quantiles
