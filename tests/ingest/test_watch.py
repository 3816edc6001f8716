"""Tests of ldp.ingest.watch (continuous aggregation) and ``ldp watch``: fold_app against a direct
``ldp fold`` + decode of the same segments, idempotence, a new segment, the Watcher thread.

Segments are written as the ingest service writes them: one upload envelope per line in
``DATA/apps/<app>/segments/closed/<UTC>-<seq>.jsonl``, from the encoders (fixed seeds) and from a
TelemetryClient's pending() lines."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ldp.ingest.watch import (
    JOB_DIR,
    FoldBusyError,
    Watcher,
    _fold_lock,
    estimates_path,
    fold_app,
    load_estimates,
)
from ldp.jobs import Section, decode_file, fold_files, spec_index, write_jsonl
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

HOSTILE = '<script>alert("x")</script>'
CANDIDATES = ["example.com", "example.org", HOSTILE, "mail.example"]
WINDOW = 20000


def watch_spec_doc(name: str = "watch_test") -> dict:
    return {
        "spec_version": 1, "name": name, "budget": {"per_window": 100, "lifetime": 1000},
        "description": "Test <b>collection</b>",
        "metrics": {
            "app_category": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 4},
                             "budget": {"per_report": 1, "per_window": 5}, "description": "The app's category"},
            "dark_mode": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1},
                          "description": f"Dark mode on {HOSTILE}"},
            "homepage": {"protocol": "cms", "params": {"epsilon": 4, "num_hashes": 4, "width": 32},
                         "candidates": "candidates.txt", "budget": {"per_report": 4}},
            "minutes": {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 60},
                        "budget": {"per_report": 1}},
        },
    }


def write_spec(folder: Path, doc: dict | None = None, name: str = "spec.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "candidates.txt").write_text("\n".join(CANDIDATES) + "\n")
    (folder / name).write_text(json.dumps(doc or watch_spec_doc()))
    return folder / name


def simulate_lines(spec: CollectionSpec, n: int, seed: int) -> list[str]:
    """``n`` reports of every metric (values from a fixed seed) as upload lines."""
    rng = np.random.default_rng(seed)
    sections = []
    for name, m in spec.metrics.items():
        enc = get_protocol(m.protocol).encoder_type(m.params)
        if m.protocol == "duchi":
            batch = enc.encode_batch(rng.uniform(20, 40, n), rng)
        elif m.protocol in ("grr", "rr"):
            batch = enc.encode_batch(rng.integers(0, m.params.domain_size, n), rng)
        else:
            batch = enc.encode_batch(rng.choice(len(CANDIDATES), n, p=[0.5, 0.3, 0.15, 0.05]), rng,
                                     candidates=CANDIDATES)
        sections.append(Section(spec.fingerprint, name, WINDOW, batch))
    return [Envelope(s.spec, s.metric, s.window, r).to_json() for s in sections for r in s.reports.reports()]


def closed_dir(data: Path, app: str = "demo") -> Path:
    d = data / "apps" / app / "segments" / "closed"
    d.mkdir(parents=True, exist_ok=True)
    return d


def add_segment(data: Path, lines: list[str], seq: int, app: str = "demo") -> Path:
    """A closed segment, named as the ingest service names them (a window's start, 16 hex digits); written aside, then
    moved in (as the close does)."""
    path = closed_dir(data, app) / f"20260101T0000{seq:02d}Z-{seq:016x}.jsonl"
    tmp = path.parent.parent / f".tmp-{seq}"
    write_jsonl(tmp, lines)
    tmp.replace(path)
    return path


@pytest.fixture(name="spec_path")
def spec_path_fixture(tmp_path) -> Path:
    return write_spec(tmp_path / "specs")


@pytest.fixture(name="spec")
def spec_fixture(spec_path) -> CollectionSpec:
    return CollectionSpec.load(spec_path)


JUNK = ["not json", '{"v":1}', ""]


def test_fold_equals_a_direct_aggregate_and_decode(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 300, seed=1) + JUNK, 1)
    add_segment(data, simulate_lines(spec, 200, seed=2), 2)
    open_dir = data / "apps" / "demo" / "segments" / "open"
    open_dir.mkdir(parents=True)
    write_jsonl(open_dir / "20260101T000003Z-000003.jsonl", simulate_lines(spec, 50, seed=3))  # not read: open
    doc = fold_app(data, "demo", [spec_path])
    assert json.loads(estimates_path(data, "demo").read_text()) == doc == load_estimates(data, "demo")

    direct = fold_files([closed_dir(data)], spec, tmp_path / "direct")
    assert (doc["segments"], doc["records"], doc["accepted"], doc["rejected"]) == \
        (2, direct.records, direct.accepted, direct.rejected) == (2, 2002, 2000, direct.rejected)
    assert sum(direct.rejected.values()) == 2 and doc["this_fold"]["segments"] == 2
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert set(metrics) == set(spec.metrics)
    for path in sorted((tmp_path / "direct" / "aggregates").glob("*.agg")):
        metric, est = decode_file(path, spec_index(spec))
        m = metrics[metric.name]
        assert m["key"] == path.name[:-4] and m["n"] == est.n == 500 and m["protocol"] == metric.protocol
        assert m["description"] == metric.description and m["error"] is None
        assert m["privacy"]["per_report"]["epsilon"] == metric.params.privacy_cost.epsilon
        if metric.protocol == "duchi":
            assert m["kind"] == "mean" and m["rows"] == [{"item": "mean", "estimate": est.mean,
                                                           "std_error": est.std_error, "ci_low": est.ci_low,
                                                           "ci_high": est.ci_high}]
            continue
        want = est.to_dicts()
        assert [r["item"] for r in m["rows"]] == [str(r["item"]) for r in want]
        for got, exp in zip(m["rows"], want, strict=True):
            assert got["estimate"] == pytest.approx(exp["count"], abs=0, rel=1e-12)
            assert (got["std_error"], got["ci_low"], got["ci_high"]) == pytest.approx(
                (exp["std_error"], exp["ci_low"], exp["ci_high"]), rel=1e-12)
        if metric.protocol == "cms":  # detects: the items over the threshold
            assert m["detected"] == [str(r["item"]) for r in want if r["detected"]] and "example.com" in m["detected"]
        else:
            assert m["detected"] is None
    assert metrics["app_category"]["privacy"]["metric"]["per_window"]["epsilon"] == 5
    assert metrics["app_category"]["privacy"]["collection"]["per_window"]["epsilon"] == 100
    assert 25 < metrics["minutes"]["rows"][0]["estimate"] < 35  # the true mean is 30


def test_folding_again_adds_nothing_and_a_new_segment_adds_exactly_its_reports(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 100, seed=1), 1)
    first = fold_app(data, "demo", [spec_path])
    time.sleep(1.05)  # a later second: checked_at moves, folded_at does not
    again = fold_app(data, "demo", [spec_path])
    assert again["this_fold"]["segments"] == 0 and again["metrics"] == first["metrics"]
    assert (again["records"], again["folded_at"]) == (first["records"], first["folded_at"])
    assert again["checked_at"] > first["checked_at"]
    add_segment(data, simulate_lines(spec, 40, seed=2) + ["junk"], 2)
    third = fold_app(data, "demo", [spec_path])
    assert third["this_fold"]["segments"] == 1
    assert third["records"] == first["records"] + 4 * 40 + 1 and third["accepted"] == first["accepted"] + 160
    assert {m["metric"]: m["n"] for m in third["metrics"]} == {m["metric"]: m["n"] + 40 for m in first["metrics"]}


def test_real_client_lines_fold(spec, spec_path, tmp_path):
    from ldp.client.runtime import TelemetryClient

    data = tmp_path / "data"
    lines = []
    for device in range(5):
        client = TelemetryClient(spec, tmp_path / f"device{device}.db", rng=device, simulation=True)
        client.record("app_category", device % 4)
        client.record("homepage", HOSTILE)
        lines += [p.line for p in client.pending()]
        client.close()
    add_segment(data, lines, 1)
    doc = fold_app(data, "demo", spec_index(spec))  # specs as {fingerprint: spec}, as the config holds them
    n = {m["metric"]: m["n"] for m in doc["metrics"]}
    assert n == {"app_category": 5, "homepage": 5, "dark_mode": 0, "minutes": 0} and doc["accepted"] == 10
    assert next(m for m in doc["metrics"] if m["metric"] == "minutes")["rows"] == []


def test_no_segments_yet_and_a_new_spec_version(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    empty = fold_app(data, "demo", [spec_path])  # no segments folder yet
    assert empty["records"] == 0 and all(m["n"] == 0 for m in empty["metrics"])
    add_segment(data, simulate_lines(spec, 50, seed=1), 1)
    fold_app(data, "demo", [spec_path])
    v2 = write_spec(tmp_path / "specs", watch_spec_doc("watch_test_v2"), "spec2.json")
    both = fold_app(data, "demo", [spec_path, v2])  # the job refuses other specs in a folder: folded afresh
    assert both["records"] == 200 and both["settings"]["specs"] == sorted(spec_index([spec_path, v2]))
    assert (data / "apps" / "demo" / "job.previous" / "manifest.json").exists()


def test_the_job_folder_is_job_and_an_old_layout_moves_once(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 50, seed=1), 1)
    first = fold_app(data, "demo", [spec_path])
    app = data / "apps" / "demo"
    assert sorted(p.name for p in (app / JOB_DIR / "aggregates").glob("*.agg")) and not (app / "aggregates").exists()
    os.replace(app / JOB_DIR, app / "aggregates")  # a data folder as versions before 0.2 left it
    again = fold_app(data, "demo", [spec_path])
    assert (app / JOB_DIR / "manifest.json").is_file() and not (app / "aggregates").exists()
    assert again["records"] == first["records"] == 200 and again["this_fold"]["segments"] == 0  # nothing twice


def test_a_damaged_estimates_file_is_rewritten(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 20, seed=1), 1)
    fold_app(data, "demo", [spec_path])
    estimates_path(data, "demo").write_text('{"metrics": ')
    assert load_estimates(data, "demo") is None
    assert fold_app(data, "demo", [spec_path])["records"] == 80 == load_estimates(data, "demo")["records"]


def test_a_fold_under_way_is_not_doubled(spec_path, tmp_path):
    data = tmp_path / "data"
    with _fold_lock(data / "apps" / "demo"), pytest.raises(FoldBusyError):
        fold_app(data, "demo", [spec_path])


def test_an_undecodable_metric_keeps_its_counts_and_says_why(spec, spec_path, tmp_path):
    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 50, seed=1), 1)
    (spec_path.parent / "candidates.txt").unlink()
    doc = fold_app(data, "demo", [spec_path])
    m = next(m for m in doc["metrics"] if m["metric"] == "homepage")
    assert m["n"] == 50 and m["rows"] == [] and "candidates" in m["error"]
    write_spec(spec_path.parent)  # the dictionary is back: decoded at the next fold, with no new segment
    m = next(m for m in fold_app(data, "demo", [spec_path])["metrics"] if m["metric"] == "homepage")
    assert m["error"] is None and len(m["rows"]) == len(CANDIDATES)


def test_watcher_folds_every_app_periodically_and_survives_errors(tmp_path):
    calls: list[str] = []
    active, overlap = [0], [False]
    lock = threading.Lock()

    def fold(data_dir, app, specs, **options):
        with lock:
            active[0] += 1
            overlap[0] |= active[0] > 1
        try:
            calls.append(app)
            time.sleep(0.01)
            if app == "bad":
                raise RuntimeError("boom")
            return {"app": app}
        finally:
            with lock:
                active[0] -= 1

    w = Watcher(tmp_path, {"good": [], "bad": []}, 0.05, fold=fold)
    with w:
        assert w.running
        for _ in range(10):
            threading.Thread(target=w.fold_all).start()  # manual folds while the thread folds: never at once
        deadline = time.monotonic() + 5
        while calls.count("good") < 15 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not w.running and not overlap[0]
    assert calls.count("good") >= 15 and w.failures >= 3 and "boom" in (w.last_error or "")
    n = len(calls)
    time.sleep(0.15)
    assert len(calls) == n  # stopped
    assert w.fold_all() == {"good": {"app": "good"}, "bad": None}  # still usable by hand after stop
    with pytest.raises(ValueError):
        Watcher(tmp_path, {}, 0)


def test_watcher_with_real_folds_and_its_hooks(spec, spec_path, tmp_path):
    import asyncio

    data = tmp_path / "data"
    add_segment(data, simulate_lines(spec, 30, seed=1), 1)
    w = Watcher(data, {"demo": [spec_path], "empty": [spec_path]}, 60)
    asyncio.run(w.startup_hook(None))
    deadline = time.monotonic() + 20
    while load_estimates(data, "empty") is None and time.monotonic() < deadline:
        time.sleep(0.02)
    asyncio.run(w.shutdown_hook(None))
    assert not w.running and w.failures == 0
    assert load_estimates(data, "demo")["records"] == 120 and load_estimates(data, "empty")["records"] == 0


def _config(tmp_path: Path, spec_path: Path, every: int = 60) -> Path:
    cfg = tmp_path / "serve.toml"
    cfg.write_text(f'data_dir = "data"\n[fold]\nevery_seconds = {every}\n'
                   f'[apps.demo]\ntoken_sha256 = "{"0" * 64}"\nspecs = ["{spec_path}"]\n')
    return cfg


def _args(*argv: str) -> argparse.Namespace:
    from ldp.cli.watch import add_watch_arguments

    parser = argparse.ArgumentParser(prog="ldp")
    add_watch_arguments(parser.add_subparsers(dest="command"))
    return parser.parse_args(["watch", *argv])


def test_cli_watch_once(spec, spec_path, tmp_path, capsys):
    from ldp.cli.watch import watch_command

    cfg = _config(tmp_path, spec_path)
    add_segment(tmp_path / "data", simulate_lines(spec, 20, seed=1), 1)
    assert watch_command(_args("--config", str(cfg), "--once")) == 0
    out = capsys.readouterr().out
    assert out.startswith("demo: 1 segment(s) (1 new), 80 report(s), 0 rejected, 4 metric(s)")
    assert watch_command(_args("--config", str(cfg), "--once", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["demo"]["this_fold"]["segments"] == 0
    assert watch_command(_args("--config", str(tmp_path / "missing.toml"), "--once")) == 2
    assert "ldp watch: error:" in capsys.readouterr().err
    off = _config(tmp_path, spec_path, every=0)
    assert watch_command(_args("--config", str(off))) == 2
    assert "--every" in capsys.readouterr().err


def test_cli_watch_once_honours_the_release_thresholds(spec, tmp_path, capsys):
    from ldp.cli.watch import watch_command

    doc = watch_spec_doc()
    doc["release"] = {"min_reports": 21}
    doc["metrics"]["minutes"]["release"] = {"min_reports": 20}  # exactly its 20 reports: released
    spec_path = write_spec(tmp_path / "released", doc)
    assert CollectionSpec.load(spec_path).fingerprint == spec.fingerprint
    cfg = _config(tmp_path, spec_path)
    add_segment(tmp_path / "data", simulate_lines(spec, 20, seed=1), 1)
    assert watch_command(_args("--config", str(cfg), "--once")) == 0
    out = capsys.readouterr().out
    assert "4 metric(s) (3 not released: not enough reports yet; 0 item(s) withheld below min_z)" in out
    assert watch_command(_args("--config", str(cfg), "--once", "--json")) == 0
    metrics = {m["metric"]: m for m in json.loads(capsys.readouterr().out)["demo"]["metrics"]}
    assert metrics["minutes"]["rows"] and metrics["minutes"]["release"]["released"]
    for name in ("app_category", "dark_mode", "homepage"):
        m = metrics[name]
        # its one window is under min_reports: left out of the pooled view, which holds none (issue 57)
        (left,) = m["release"]["left_out"]
        assert m["rows"] == [] and left["n"] == 20 and left["reason"] == "not enough reports yet — 20 of 21"
        assert m["release"]["reason"].startswith("not enough reports yet — no window has 21 reports of its own: ")
        assert all(w["rows"] == [] for w in m["windows"])
