"""Telemetry over time (issue 30, item 7): folding per window, decoding only what changed, the pooled view as
the merge of the windows, setting aside a job folder made without windows, ``/v1/estimates?window=`` and
``ldp decode --window``; and the reports waiting for a fold (item 6)."""

from __future__ import annotations

import argparse
import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_watch import add_segment

import ldp.ingest.series as series
from ldp.ingest.backlog import open_segment_started, waiting_state
from ldp.ingest.dashboard import render_dashboard
from ldp.ingest.watch import JOB_DIR, fold_app
from ldp.jobs import Section, decode_file, fold_files
from ldp.jobs.decode import parse_window
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

W0 = 20000                     # 2024-10-04 (days since 1970-01-01)
DEVICES = 200
LABELS = ["games", "social", "news", "other"]
TRUTH = [100, 50, 30, 20]      # of the 200 devices, every day
SPEC = {"spec_version": 1, "name": "series_test", "budget": {"per_window": 10, "lifetime": 1000},
        "metrics": {"app_category": {"protocol": "grr", "description": "Category of the app used most today.",
                                     "params": {"epsilon": 2, "domain_size": 4, "labels": LABELS},
                                     "budget": {"per_report": 2}},
                    "minutes": {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 60},
                                "budget": {"per_report": 1}}}}


@pytest.fixture(name="spec_path")
def spec_path_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


def day_lines(spec: CollectionSpec, window: int, seed: int) -> list[str]:
    """One report of every metric from each of the same 200 devices, in ``window``."""
    rng = np.random.default_rng(seed)
    values = np.repeat(np.arange(4), TRUTH)
    out = []
    for name, m in spec.metrics.items():
        enc = get_protocol(m.protocol).encoder_type(m.params)
        batch = enc.encode_batch(values if name == "app_category" else rng.uniform(20, 40, DEVICES), rng)
        s = Section(spec.fingerprint, name, window, batch)
        out += [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()]
    return out


def three_days(data: Path, spec: CollectionSpec) -> None:
    for d in range(3):
        add_segment(data, day_lines(spec, W0 + d, seed=d), d + 1)


def metric(doc: dict, name: str) -> dict:
    return next(m for m in doc["metrics"] if m["metric"] == name)


def test_three_days_of_the_same_devices_are_three_points_of_200(spec_path, tmp_path):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    three_days(data, spec)
    doc = fold_app(data, "demo", [spec_path])
    m = metric(doc, "app_category")
    assert m["n"] == 600 and m["window_n"] == {str(W0 + d): 200 for d in range(3)} and m["latest"] == W0 + 2
    assert [w["window"] for w in m["windows"]] == [W0, W0 + 1, W0 + 2]
    assert m["windows"][0]["start"] == "2024-10-04T00:00:00Z" and m["windows"][0]["end"] == "2024-10-05T00:00:00Z"
    misses = 0
    for w in m["windows"]:
        assert w["n"] == 200 and w["open"] is False and w["error"] is None
        rows = {r["item"]: r for r in w["rows"]}
        # GRR's estimates sum to n exactly: 200 per day, not 600
        assert sum(r["estimate"] for r in rows.values()) == pytest.approx(DEVICES, abs=1e-6)
        for label, true in zip(LABELS, TRUTH, strict=True):
            r = rows[label]
            assert abs(r["estimate"] - true) <= 4 * r["std_error"], (w["window"], r)  # fails ~1 in 16,000
            misses += not r["ci_low"] <= true <= r["ci_high"]
    assert misses <= 2  # 12 intervals at 95 %: 0.6 misses expected, 3 or more has probability 2 %
    mean = metric(doc, "minutes")
    assert [w["n"] for w in mean["windows"]] == [200] * 3
    assert all(w["kind"] == "mean" and abs(w["rows"][0]["estimate"] - 30) <= 4 * w["rows"][0]["std_error"]
               for w in mean["windows"])  # uniform on [20, 40]: the true mean is about 30

    html = render_dashboard(data, ["demo"])
    svg = re.search(r'<svg[^>]*id="app0-m0-series".*?</svg>', html, re.S).group(0)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    points = root.findall(f".//{ns}circle[@class='point']")
    bands = root.findall(f".//{ns}polygon[@class='ci-band']")
    assert len(points) == 3 * 4 and len(bands) == 4  # 4 items, 3 days each, one band per item
    assert "estimated reports in the window" in root.find(f"{ns}title").text
    assert "estimated number of clients" not in html
    assert re.search(r"<dt>Reports in the latest window</dt><dd>200</dd>", html)
    assert re.search(r"<dt>Reports in all windows</dt><dd>600</dd>", html)


def test_a_window_unchanged_is_not_decoded_again_and_the_pool_is_the_merge(spec_path, tmp_path, monkeypatch):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    calls: list[int] = []
    real = series._decode

    def counting(agg, *args):
        calls.append(agg.n)
        return real(agg, *args)

    monkeypatch.setattr(series, "_decode", counting)
    add_segment(data, day_lines(spec, W0, seed=0), 1)
    add_segment(data, day_lines(spec, W0 + 1, seed=1), 2)
    first = fold_app(data, "demo", [spec_path])
    assert sorted(calls) == [200, 200, 200, 200, 400, 400]  # 2 metrics: 2 windows + the pool
    calls.clear()
    add_segment(data, day_lines(spec, W0 + 2, seed=2), 3)
    second = fold_app(data, "demo", [spec_path])
    assert sorted(calls) == [200, 200, 600, 600]  # only the new window and the pool
    for name in ("app_category", "minutes"):
        assert metric(second, name)["windows"][:2] == metric(first, name)["windows"]
    calls.clear()
    fold_app(data, "demo", [spec_path])
    assert calls == []  # nothing new: nothing decoded

    # the pooled estimate is the merge of the windows: the same as folding every day into one aggregate
    pooled = fold_files([data / "apps" / "demo" / "segments" / "closed"], spec, tmp_path / "pooled")
    assert pooled.accepted == second["accepted"] == 1200
    for path in sorted((tmp_path / "pooled" / "aggregates").glob("*.agg")):
        m, est = decode_file(path, {spec.fingerprint: spec})
        got = metric(second, m.name)
        want = series.estimate_rows(est)["rows"]
        assert got["n"] == est.n == 600 and len(got["rows"]) == len(want)
        for a, b in zip(got["rows"], want, strict=True):
            assert a["item"] == b["item"]
            assert (a["estimate"], a["std_error"], a["ci_low"]) == pytest.approx(
                (b["estimate"], b["std_error"], b["ci_low"]), rel=1e-12, abs=1e-9)


def test_windows_kept_are_the_last_n(spec_path, tmp_path):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    three_days(data, spec)
    doc = fold_app(data, "demo", [spec_path], windows=2)
    m = metric(doc, "app_category")
    assert [w["window"] for w in m["windows"]] == [W0 + 1, W0 + 2] and m["n"] == 600
    old = series.window_entry_for(m, W0)
    assert old["n"] == 200 and old["rows"] == [] and "ldp decode" in old["error"]
    assert series.window_entry_for(m, W0 + 5)["n"] == 0
    assert series.window_entry_for(m, "latest")["window"] == W0 + 2
    assert series.window_entry_for(m, "all")["n"] == 600
    with pytest.raises(ValueError):
        fold_app(data, "demo", [spec_path], windows=0)


def test_an_old_pooled_job_folder_is_set_aside_and_refolded_exactly(spec_path, tmp_path):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    three_days(data, spec)
    app = data / "apps" / "demo"
    old = fold_files([app / "segments" / "closed"], spec, app / JOB_DIR)  # as folds before windows made it
    assert old.accepted == 1200 and not json.loads((app / JOB_DIR / "manifest.json").read_text())["by_window"]
    add_segment(data, day_lines(spec, W0 + 3, seed=3)[:50] + ["junk"], 4)  # arrives while the old job is there
    doc = fold_app(data, "demo", [spec_path])
    assert (app / "job.previous" / "manifest.json").is_file()
    assert json.loads((app / JOB_DIR / "manifest.json").read_text())["by_window"] is True
    assert (doc["segments"], doc["records"], doc["accepted"], doc["rejected"]) == (4, 1251, 1250, {"not_json": 1})
    assert metric(doc, "app_category")["window_n"] == {str(W0): 200, str(W0 + 1): 200, str(W0 + 2): 200,
                                                       str(W0 + 3): 50}
    again = fold_app(data, "demo", [spec_path])
    assert again["this_fold"]["segments"] == 0 and again["accepted"] == 1250


# -- reports waiting for a fold ------------------------------------------------------------------------------

T = datetime(2026, 1, 1, 23, 9, 0, tzinfo=UTC)


def test_waiting_reports_and_the_honest_next_fold_time(tmp_path):
    doc = {"accepted": 100, "checked_at": "2026-01-01T23:09:00Z",
           "schedule": {"every_seconds": 60, "segment_max_seconds": 300}}
    ingest = {"accepted": 1000}
    state = waiting_state(doc, ingest, None, T + timedelta(seconds=10))
    assert state["reports"] == 900 and state["next_fold_at"] == "2026-01-01T23:10:00Z" and not state["overdue"]
    assert state["text"] == "900 reports waiting for the next fold at 23:10:00 UTC"
    # the open segment opened at 23:08:30 closes at 23:13:30: its reports are folded at 23:14, not 23:10
    opened = T - timedelta(seconds=30)
    state = waiting_state(doc, ingest, opened, T + timedelta(seconds=10))
    assert state["next_fold_at"] == "2026-01-01T23:14:00Z" and state["open_segment_closes_at"] == "2026-01-01T23:13:30Z"
    assert "23:14:00 UTC" in state["text"] and "once it closes, by 23:13:30 UTC" in state["text"]
    assert waiting_state(doc, ingest, None, T + timedelta(minutes=5))["overdue"]
    assert waiting_state(doc, {"accepted": 100}, None, T)["reports"] == 0
    assert waiting_state(doc, None, None, T) is None and waiting_state(doc, {"accepted": "x"}, None, T) is None
    by_hand = waiting_state({**doc, "schedule": {"every_seconds": None}}, ingest, None, T)
    assert by_hand["next_fold_at"] is None and "by hand" in by_hand["text"]
    assert "first fold" in waiting_state(None, ingest, None, T)["text"]
    open_dir = tmp_path / "segments" / "open"
    open_dir.mkdir(parents=True)
    (open_dir / "20260101T230830Z-000007.jsonl").write_text("{}\n")
    (open_dir / "20260101T230000Z-000006.jsonl").write_text("")  # empty: not counted
    assert open_segment_started(tmp_path) == opened and open_segment_started(tmp_path / "none") is None


def test_the_page_says_reports_wait_for_the_fold(spec_path, tmp_path):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    add_segment(data, day_lines(spec, W0, seed=0), 1)
    fold_app(data, "demo", [spec_path], every_seconds=60, segment_max_seconds=300)
    (data / "ingest.json").write_text(json.dumps({"apps": {"demo": {"accepted": 1300, "rejected": {"not_json": 2}}}}))
    html = render_dashboard(data, ["demo"])
    assert re.search(r'<p class="waiting" role="status">900 reports waiting for the next fold at [0-9:]+ UTC', html)
    assert "<dt>Reports accepted by the ingest service</dt><dd>1,300</dd>" in html
    assert "<dt>Reports rejected</dt><dd>2</dd>" in html  # the ingest service's exact count
    assert '<th scope="row">not_json</th><td>2</td><td>0</td>' in html


# -- /v1/estimates?window= and ldp decode --window ----------------------------------------------------------

@pytest.fixture(name="served")
def served_fixture(spec_path, tmp_path):
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ldp.ingest.access import ReadAccess
    from ldp.ingest.dashboard import dashboard_routes

    data = tmp_path / "data"
    three_days(data, CollectionSpec.load(spec_path))
    fold_app(data, "demo", [spec_path])
    routes = dashboard_routes(data, ["demo", "later"], access=ReadAccess(public=True))  # who reads: test_read_auth.py
    with TestClient(Starlette(routes=routes)) as client:
        yield client


def test_estimates_by_window(served):
    whole = served.get("/v1/estimates").json()
    assert metric(whole["apps"]["demo"], "app_category")["n"] == 600 and "waiting" in whole
    one = served.get(f"/v1/estimates?window={W0 + 1}").json()
    m = metric(one["apps"]["demo"], "app_category")
    assert one["window"] == W0 + 1 and m["window"] == W0 + 1 and m["n"] == 200 and len(m["rows"]) == 4
    assert m["start"] == "2024-10-05T00:00:00Z" and "windows" not in m and one["apps"]["later"] is None
    assert metric(served.get("/v1/estimates?window=latest").json()["apps"]["demo"], "minutes")["window"] == W0 + 2
    pooled = metric(served.get("/v1/estimates?window=all").json()["apps"]["demo"], "app_category")
    assert pooled["window"] == "all" and pooled["n"] == 600
    missing = metric(served.get("/v1/estimates?window=5").json()["apps"]["demo"], "app_category")
    assert missing["n"] == 0 and missing["rows"] == []
    for bad in ("-1", "yesterday", "1.5", " 1", "99999999999999999999999", ""):
        r = served.get("/v1/estimates", params={"window": bad})
        assert r.status_code == 400 and r.json()["error"] == "bad_window", bad
    assert served.get("/v1/estimates?window=1&window=2").status_code == 400


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # read-only
@given(text=st.text(max_size=30) | st.integers(-5, 2**64).map(str) | st.sampled_from(["latest", "all", "ALL"]))
def test_the_window_parameter_never_fails_the_server(served, text):
    try:
        expected = parse_window(text)
    except ValueError:
        expected = None
    r = served.get("/v1/estimates", params={"window": text})
    assert r.status_code == (400 if expected is None else 200), (text, r.text[:200])
    if expected is not None:
        assert r.json()["window"] == expected


def _decode_cli(*argv: str) -> int:
    from ldp.cli.jobs import add_job_arguments, job_command

    parser = argparse.ArgumentParser()
    add_job_arguments(parser.add_subparsers(dest="command"))
    return job_command(parser.parse_args(["decode", *argv]))


def test_ldp_decode_window(spec_path, tmp_path, capsys):
    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    three_days(data, spec)
    doc = fold_app(data, "demo", [spec_path])
    job = str(data / "apps" / "demo" / JOB_DIR)
    m = metric(doc, "app_category")
    for window, want in ((str(W0 + 1), m["windows"][1]), ("latest", m["windows"][2]), ("all", m)):
        assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category", "--window", window,
                           "--json") == 0
        est = json.loads(capsys.readouterr().out)
        assert est["n"] == want["n"]
        assert [e["count"] for e in est["estimates"]] == pytest.approx([r["estimate"] for r in want["rows"]],
                                                                       rel=1e-12)
    assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category", "--window", "7") == 2
    err = capsys.readouterr().err
    assert "no aggregate for window 7" in err and f"{W0}, {W0 + 1}, {W0 + 2}" in err
    assert _decode_cli(job, "--spec", str(spec_path), "--window", "latest") == 2
    assert "several metrics" in capsys.readouterr().err
    assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category") == 2
    assert "pass --window" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _decode_cli(job, "--spec", str(spec_path), "--window", "soon")
    assert "a window is 'latest', 'all' or an index" in capsys.readouterr().err
    one = next(Path(job, "aggregates").glob(f"app_category.*.w{W0}.agg"))
    assert _decode_cli(str(one), "--spec", str(spec_path)) == 0  # one file, as before
    assert f"window {W0}" not in capsys.readouterr().out


def test_a_window_from_the_future_does_not_hijack_the_series(spec_path, tmp_path):
    """A forged (or clock-skewed) report in a far window counts in the pool but is never the latest window."""
    from ldp.reports import MAX_WINDOW

    spec, data = CollectionSpec.load(spec_path), tmp_path / "data"
    three_days(data, spec)
    add_segment(data, day_lines(spec, MAX_WINDOW, seed=9)[:1], 4)
    doc = fold_app(data, "demo", [spec_path])
    m = metric(doc, "app_category")
    assert m["latest"] == W0 + 2 and [w["window"] for w in m["windows"]] == [W0, W0 + 1, W0 + 2]
    assert m["n"] == 601 and m["future_reports"] == 1
    far = series.window_entry_for(m, MAX_WINDOW)
    assert far["n"] == 1 and far["start"] is None and "had not started" in far["error"]
    html = render_dashboard(data, ["demo"])
    assert "Reports in windows not started yet (in the pooled count only)</dt><dd>1</dd>" in html


# -- release thresholds (issue 31 item 3): the fold keeps only what they let out; decode, API and page agree ----
RELEASE_Z = 5.0


@pytest.fixture(name="released")
def released_fixture(tmp_path):
    """Three days of 200 devices and a fourth window of 37, under ``min_reports`` 200 (the minutes metric:
    637, exactly its pooled count) and ``min_z`` 5."""
    doc = json.loads(json.dumps(SPEC))
    doc["release"] = {"min_reports": 200, "min_z": RELEASE_Z}
    doc["metrics"]["minutes"]["release"] = {"min_reports": 637}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    spec, data = CollectionSpec.load(path), tmp_path / "data"
    assert spec.fingerprint == CollectionSpec.from_dict(SPEC).fingerprint  # release moves no fingerprint
    three_days(data, spec)
    return path, spec, data


def _small_window(data: Path, spec: CollectionSpec) -> None:
    lines = day_lines(spec, W0 + 3, seed=7)
    add_segment(data, lines[:37] + lines[DEVICES:DEVICES + 37], 4)


def _full(job: str, spec_path: Path, window: int | str) -> tuple[list[str], list[str]]:
    """The items a full decode (no threshold) releases and withholds at min_z, for one window of app_category."""
    metric_spec, est = decode_file(job, {s.fingerprint: s for s in [CollectionSpec.load(spec_path)]},
                                   metric="app_category", window=window)
    z = est.count / est.std_error
    return [i for i, v in zip(est.items, z, strict=True) if v >= RELEASE_Z], \
        [i for i, v in zip(est.items, z, strict=True) if not v >= RELEASE_Z]


def test_the_fold_keeps_only_what_the_thresholds_release(released, capsys):
    spec_path, spec, data = released
    doc = fold_app(data, "demo", [spec_path])
    job = str(data / "apps" / "demo" / JOB_DIR)
    m = metric(doc, "app_category")
    withheld_total = 0
    for w in m["windows"] + [m]:
        shown, hidden = _full(job, spec_path, w["window"])
        assert [r["item"] for r in w["rows"]] == shown and w["release"]["withheld_items"] == len(hidden)
        assert w["release"]["released"] and w["release"]["min_z"] == RELEASE_Z
        withheld_total += len(hidden)
        if hidden:
            assert w["release"]["text"] == f"{len(hidden)} item{'s' * (len(hidden) != 1)} below 5 SE withheld"
    assert withheld_total > 0 and all(w["rows"] for w in m["windows"])  # the test can fail both ways
    minutes = metric(doc, "minutes")  # 200 a window, under its own 637: withheld; pooled 600 too
    assert all(w["rows"] == [] and w["release"]["reason"] == "not enough reports yet — 200 of 637"
               for w in minutes["windows"])
    # the page's latest window: the count line of the items withheld, never their values
    latest = m["windows"][-1]
    html = render_dashboard(data, ["demo"])
    if latest["release"]["withheld_items"]:
        assert latest["release"]["text"] + "." in html
    assert "not enough reports yet — 200 of 637" in html
    # a window of 37 reports; the minutes of 4 windows, 637 in all, none of 637 itself: the pooled view holds no
    # window (it was released at 637 before issue 57: it minus the other windows gave the small one)
    _small_window(data, spec)
    doc = fold_app(data, "demo", [spec_path])
    small = metric(doc, "app_category")["windows"][-1]
    assert small["window"] == W0 + 3 and small["n"] == 37 and small["rows"] == [] and small["detected"] is None
    assert small["release"] == {"applied": True, "min_reports": 200, "min_z": RELEASE_Z, "n": 37, "released": False,
                                "withheld_items": None, "reason": "not enough reports yet — 37 of 200",
                                "text": "not enough reports yet — 37 of 200"}
    pooled = metric(doc, "minutes")
    assert pooled["n"] == 0 and not pooled["release"]["released"] and pooled["rows"] == []
    assert pooled["release"]["reason"].startswith("not enough reports yet — no window has 637 reports of its own")
    assert [(e["window"], e["n"]) for e in pooled["release"]["left_out"]] == [(W0, 200), (W0 + 1, 200),
                                                                              (W0 + 2, 200), (W0 + 3, 37)]
    categories = metric(doc, "app_category")  # the small window left out of the pool, and named
    assert categories["n"] == 600 and categories["release"]["left_out"] == [
        {"window": W0 + 3, "n": 37, "reason": "not enough reports yet — 37 of 200"}]
    assert f"window {W0 + 3} left out of the pooled view (not enough reports yet — 37 of 200)" in \
        categories["release"]["text"]
    html = render_dashboard(data, ["demo"])
    assert "Not released: not enough reports yet — 37 of 200." in html
    assert "<dt>Windows left out of the pooled estimate</dt><dd>2024-10-07 (not enough reports yet — 37 of 200)" \
        in html and "<dt>Reports in all windows</dt><dd>637</dd>" in html
    # ldp decode: the same thresholds, and --no-release for the data owner
    for args in (["--window", str(W0 + 3)], ["--window", str(W0 + 3), "--json"]):
        assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category", *args) == 0
        out = capsys.readouterr().out
        text = json.loads(out)["release"]["reason"] if "--json" in args else out
        assert "not enough reports yet — 37 of 200" in text and "games" not in out
    assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category", "--window", str(W0 + 3),
                       "--no-release", "--json") == 0
    full = json.loads(capsys.readouterr().out)
    assert len(full["estimates"]) == 4 and full["release"]["applied"] is False
    assert "for the data owner only" in full["release"]["text"]
    shown, hidden = _full(job, spec_path, W0)
    assert _decode_cli(job, "--spec", str(spec_path), "--metric", "app_category", "--window", str(W0)) == 0
    table = capsys.readouterr().out
    assert all(i in table for i in shown) and not any(i in table for i in hidden)
    assert (f"release: {len(hidden)} item" in table) == bool(hidden)


def test_the_api_never_shows_a_withheld_value(released):
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ldp.ingest.access import ReadAccess
    from ldp.ingest.dashboard import dashboard_routes

    spec_path, spec, data = released
    _small_window(data, spec)
    doc = fold_app(data, "demo", [spec_path])
    job = str(data / "apps" / "demo" / JOB_DIR)
    with TestClient(Starlette(routes=dashboard_routes(data, ["demo"], access=ReadAccess(public=True)))) as client:
        for window in (None, "latest", "all", str(W0), str(W0 + 1), str(W0 + 3)):
            got = client.get("/v1/estimates", params={} if window is None else {"window": window}).json()
            entries = got["apps"]["demo"]["metrics"]
            for e in entries:
                for w in e.get("windows") or [e]:
                    rel = w["release"] or {}
                    if e["metric"] == "minutes" or rel.get("released") is False:
                        assert w["rows"] == []
                    elif w["rows"]:
                        shown, _ = _full(job, spec_path, w["window"])
                        assert [r["item"] for r in w["rows"]] == shown
    assert metric(doc, "app_category")["windows"][-1]["rows"] == []


def test_a_threshold_change_decodes_again_and_the_page_waits_for_it(released):
    from ldp.ingest.dashboard import load_state, release_of
    from ldp.ingest.series import release_settings

    spec_path, spec, data = released
    fold_app(data, "demo", [spec_path])
    raised = json.loads(spec_path.read_text())
    raised["release"]["min_z"] = 1000.0
    spec_path.write_text(json.dumps(raised))
    new = CollectionSpec.load(spec_path)
    assert new.fingerprint == spec.fingerprint
    expected = {"demo": release_settings({new.fingerprint: new})}
    assert load_state(data, ["demo"], expected)[0]["demo"] is None  # folded under the old thresholds: not shown
    assert load_state(data, ["demo"])[0]["demo"] is not None
    doc = fold_app(data, "demo", [spec_path])  # no new segment: decoded again all the same
    assert all(w["rows"] == [] and w["release"]["withheld_items"] == 4
               for w in metric(doc, "app_category")["windows"])
    assert load_state(data, ["demo"], expected)[0]["demo"] == doc

    class App:
        specs = {new.fingerprint: new}

    assert release_of({"demo": App()}) == expected and release_of(["demo"]) is None
