"""Poisoning evidence in the ingest service (issue 31 item 4): each folded window records the verdict of the law tests
of :mod:`ldp.jobs.poisoning`; the page warns on a suspicious window and ``/metrics`` exports it."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from test_watch import add_segment

from ldp.ingest.config import parse_config
from ldp.ingest.dashboard import render_dashboard
from ldp.ingest.metrics import IngestMetrics
from ldp.ingest.segments import SegmentWriter
from ldp.ingest.watch import fold_app
from ldp.jobs import Section
from ldp.pipeline.guarantee import window_guarantee
from ldp.privacy.shuffle import shuffled_epsilon
from ldp.protocols import get_protocol
from ldp.simulation.attack import fake_reports
from ldp.spec import CollectionSpec, Envelope

pytest.importorskip("prometheus_client")

W0 = 20000
SPEC = {"spec_version": 1, "name": "poison_test", "budget": {"per_window": 10, "lifetime": 1000},
        "metrics": {"site": {"protocol": "oue", "params": {"epsilon": 1, "domain_size": 32},
                             "budget": {"per_report": 1}}}}


def lines(spec: CollectionSpec, window: int, honest: int, fake: int, seed: int) -> list[str]:
    """``honest`` reports of a skewed population, then ``fake`` random reports (each bit 1 with probability 1/2:
    far more 1s than OUE's law allows)."""
    rng = np.random.default_rng(seed)
    m = spec.metrics["site"]
    batches = [get_protocol(m.protocol).encoder_type(m.params).encode_batch(rng.zipf(1.5, honest) % 32, rng)]
    if fake:
        batches.append(fake_reports(m.params, "random-report", [0], fake, rng))
    out = []
    for batch in batches:
        s = Section(spec.fingerprint, "site", window, batch)
        out += [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()]
    return out


def test_each_window_has_a_verdict_the_page_and_metrics_show_it(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(SPEC))
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    add_segment(data, lines(spec, W0, 3000, 0, seed=1), 1)      # honest
    add_segment(data, lines(spec, W0 + 1, 3000, 150, seed=2), 2)  # 5 % fake random reports
    doc = fold_app(data, "demo", [spec_path])
    (m,) = doc["metrics"]
    first, second = (w["poisoning"] for w in m["windows"])
    # the total of 1s: honest z ~ N(0, 1); 150 random reports add 150 (16 − 0.5 − 31/(e+1)) ≈ 2,070 ones, about
    # 28 honest standard deviations (sqrt(3,150 (p(1−p) + 31 q(1−q))) ≈ 73)
    assert first["verdict"] == "ok" and first["p_value"] > 0.01
    assert second["verdict"] == "suspicious" and second["p_value"] < 1e-10
    assert m["poisoning"]["verdict"] == "suspicious"  # the pooled view holds the fake reports too
    html = render_dashboard(data, ["demo"])
    assert html.count("Possible poisoning") == 1 and "(possible poisoning)" in html
    # the shuffle's central guarantee: a device's reports among the 3,000 of the smallest segment; the spec lets a
    # device send 10 a window (per_window 10 over per_report 1): each in a shuffle of its own among 300, the
    # protocol's structure kept (as one report of 10·ε₀ among the 300 devices, nothing could be proven)
    sh = m["shuffle"]
    assert sh["segments"] == 2 and sh["smallest"] == 3000 and sh["unshuffled_segments"] == 0
    assert sh["reports_per_window"] == 10
    assert not shuffled_epsilon(10.0, 300, 1e-8).amplified
    assert m["shuffle"]["central"] == window_guarantee(spec.metrics["site"].params, 3000, 1e-8, 10).to_dict()
    assert m["shuffle"]["central"]["epsilon"] < 10.0
    assert "Central guarantee against the analyst (shuffled)" in html
    config = parse_config({"data_dir": str(data), "apps": {"demo": {"token_sha256": "0" * 64,
                                                                    "specs": [str(spec_path)]}}}, tmp_path)
    page, _ = IngestMetrics(config, SegmentWriter(config)).render()
    assert 'ldp_collector_poisoning_suspicious{app="demo",metric="site",spec="poison_test"} 1.0' in page.decode()


def test_segments_stored_before_shuffling_have_no_central_guarantee(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(SPEC))
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    old = add_segment(data, lines(spec, W0, 500, 0, seed=4), 1)
    old.rename(old.with_name("20250101T000000Z-000001.jsonl"))  # the name of a segment closed in arrival order
    doc = fold_app(data, "demo", [spec_path])
    (m,) = doc["metrics"]
    assert m["shuffle"] == {"segments": 0, "smallest": None, "unshuffled_segments": 1, "delta": 1e-8,
                            "reports_per_window": 10, "central": None}
    assert "Segments stored before shuffling" in render_dashboard(data, ["demo"])


RAPPOR = {"spec_version": 1, "name": "rappor_poison", "budget": {"per_window": 10, "lifetime": 1000},
          "metrics": {"site": {"protocol": "rappor", "params": {"num_bloombits": 64, "num_hashes": 2,
                                                                "num_cohorts": 8, "p": 0.25, "q": 0.75, "f": 0.5},
                               "budget": {"per_report": 3}}}}
WORDS = [f"item{i}" for i in range(64)]


def rappor_lines(spec: CollectionSpec, window: int, honest: int, fake: int, seed: int) -> list[str]:
    """``honest`` fresh clients over a Zipf-like population of :data:`WORDS`, then ``fake`` reports of the maximal
    gain attack padded to the honest mean of 1s (its totals look honest) on 10 targets, shuffled together."""
    rng = np.random.default_rng(seed)
    m = spec.metrics["site"]
    batch = get_protocol("rappor").encoder_type(m.params).encode_batch(rng.zipf(1.5, honest) % 64, rng,
                                                                      candidates=WORDS)
    cols = {k: np.asarray(v) for k, v in batch.columns.items()}
    if fake:
        bad = fake_reports(m.params, "mga", list(range(20, 30)), fake, rng, domain=64, candidates=WORDS)
        cols = {k: np.concatenate([v, np.asarray(bad.columns[k])]) for k, v in cols.items()}
    order = rng.permutation(cols["bits"].shape[0])
    from ldp.reports import ReportBatch

    mixed = ReportBatch("rappor", m.params.fingerprint, m.params.schema, {k: v[order] for k, v in cols.items()})
    s = Section(spec.fingerprint, "site", window, mixed)
    return [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()]


def test_rappor_windows_are_judged_by_their_reports_on_the_page_and_by_ldp_decode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A RAPPOR window with 5 % fake reports padded to the honest mean: its totals see nothing, the per-report
    statistics the fold kept do, on the page and in ``ldp decode`` (text and JSON); the honest window passes."""
    from ldp.cli.command import main

    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(RAPPOR))
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    add_segment(data, rappor_lines(spec, W0, 4000, 0, seed=11), 1)
    add_segment(data, rappor_lines(spec, W0 + 1, 3800, 200, seed=12), 2)
    (m,) = fold_app(data, "demo", [spec_path])["metrics"]
    first, second = (w["poisoning"] for w in m["windows"])
    assert first["verdict"] == "ok" and second["verdict"] == "suspicious"
    verdicts = {c["name"]: c["verdict"] for c in second["checks"]}
    assert verdicts["ones_total"] == "ok" and "suspicious" in (verdicts["ones_spike"], verdicts["bits_together"])
    assert render_dashboard(data, ["demo"]).count("Possible poisoning") == 1
    words = tmp_path / "words.txt"
    words.write_text("\n".join(WORDS) + "\n")
    job = data / "apps" / "demo" / "job"
    for window, verdict in ((W0, "reports match the honest law"), (W0 + 1, "possible poisoning")):
        assert main(["decode", str(job), "--spec", str(spec_path), "--window", str(window),
                     "--candidates", str(words)]) == 0
        line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("poisoning: ")]
        assert len(line) == 1 and verdict in line[0]
    assert main(["decode", str(job), "--spec", str(spec_path), "--window", str(W0 + 1), "--candidates", str(words),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["poisoning"]["verdict"] == "suspicious" and len(doc["poisoning"]["checks"]) == 7
    assert main(["decode", str(job), "--spec", str(spec_path), "--window", str(W0 + 1), "--candidates", str(words),
                 "--csv"]) == 0  # the estimates file: the verdict in two columns of every row
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {r["poisoning_verdict"] for r in rows} == {"suspicious"}
    assert {float(r["poisoning_p_value"]) for r in rows} == {doc["poisoning"]["p_value"]}
