"""The ingest service's central target (``release.central``): windows released in order while the composed central ε
stays within it, the next one withheld at the boundary, the decisions durable across restarts and crashes, nothing
released that cannot be proven, and the figures on /metrics and the dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ldp.ingest.central as central_module
import ldp.ingest.watch as watch_module
from ldp.ingest.central import WITHHELD, load_state, round_down, state_path
from ldp.ingest.dashboard import render_page
from ldp.ingest.watch import fold_app, load_estimates
from ldp.jobs import Section, write_jsonl
from ldp.pipeline.guarantee import over_windows
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.over_time import WindowRelease, central_over_time
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

DELTA = 1e-6
N = 2000
W0 = 20000  # windows well in the past (day 20000 is in 2024)


def spec_doc(target: dict | None, per_window: float | None = 1) -> dict:
    budget: dict[str, Any] = {"lifetime": 1000}
    if per_window is not None:
        budget["per_window"] = per_window
    doc = {"spec_version": 1, "name": "ct", "budget": budget,
           "metrics": {"on": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2},
                              "budget": {"per_report": 1}}}}
    if target is not None:
        doc["release"] = {"central": target}
    return doc


def figure(windows: int, delta: float = DELTA) -> float:
    """The central ε of ``windows`` windows of one k-RR report among N, computed apart from the ingest service: one
    window at its own figure (:func:`ldp.pipeline.guarantee.over_windows`, the rule every line stating one window
    follows; the laws composed can be a little below it), more windows by their laws composed."""
    params = CollectionSpec.from_dict(spec_doc(None)).metrics["on"].params
    if windows == 1:
        return over_windows([WindowRelease(PrivacyCost(1.0), N, params.shuffle_structure)], delta).epsilon
    return central_over_time(PrivacyCost(1.0), N, delta, windows, params.shuffle_structure).epsilon


def lines(spec: CollectionSpec, window: int, n: int, seed: int) -> list[str]:
    m = spec.metrics["on"]
    rng = np.random.default_rng(seed)
    batch = get_protocol(m.protocol).encoder_type(m.params).encode_batch(rng.integers(0, 2, n), rng)
    s = Section(spec.fingerprint, "on", window, batch)
    return [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()]


def add_segment(data: Path, spec: CollectionSpec, window: int, n: int, seq: int, shuffled: bool = True) -> None:
    closed = data / "apps" / "demo" / "segments" / "closed"
    closed.mkdir(parents=True, exist_ok=True)
    name = f"20260101T0000{seq:02d}Z-{seq:016x}.jsonl" if shuffled else f"20260101T000000Z-{seq:06d}.jsonl"
    write_jsonl(closed / name, lines(spec, window, n, seq))


def three_windows(tmp_path: Path, target: dict | None, per_window: float | None = 1) -> tuple[Path, CollectionSpec]:
    spec = CollectionSpec.from_dict(spec_doc(target, per_window))
    data = tmp_path / "data"
    for i in range(3):
        add_segment(data, spec, W0 + i, N, i + 1)
    return data, spec


def windows_of(doc: dict) -> dict[int, dict]:
    (m,) = doc["metrics"]
    return {w["window"]: w for w in m["windows"]}


@pytest.fixture(autouse=True)
def fresh_cache():
    central_module._compose.cache_clear()  # each fold as after a restart: nothing computed is reused
    yield


@pytest.fixture(scope="module")
def figures() -> list[float]:
    return [figure(w) for w in (1, 2, 3)]


def test_the_third_window_is_withheld_at_the_boundary(tmp_path, figures):
    e1, e2, e3 = figures
    assert e1 < e2 < e3
    data, spec = three_windows(tmp_path, {"epsilon": (e2 + e3) / 2, "delta": DELTA})
    doc = fold_app(data, "demo", spec)
    ws = windows_of(doc)
    assert [ws[W0 + i]["release"]["released"] for i in range(3)] == [True, True, False]
    assert ws[W0]["rows"] and ws[W0 + 1]["rows"]
    held = ws[W0 + 2]
    assert held["release"]["reason"].startswith(WITHHELD) and f"{e3:.4g}" in held["release"]["reason"]
    assert held["rows"] == [] and held["poisoning"] is None and held["quantiles"] is None
    (m,) = doc["metrics"]
    c = m["central"]
    assert c["epsilon"] == pytest.approx(e2, rel=1e-12) and c["delta"] == DELTA and c["windows"] == 2
    assert c["served"] == [W0, W0 + 1] and list(c["withheld"]) == [str(W0 + 2)] and c["local"] == 2.0
    assert m["n"] == 2 * N  # the pooled estimate merges the released windows only
    state = load_state(data / "apps" / "demo")
    (rec,) = state["metrics"].values()
    assert rec["released"] == {str(W0): {"n": N, "segments": 1}, str(W0 + 1): {"n": N, "segments": 1}}


@pytest.mark.parametrize(("scale", "released"), [(1.0, True), (1 - 1e-6, False)])
def test_a_target_equal_to_the_figure_is_met_and_just_below_is_not(tmp_path, figures, scale, released):
    data, spec = three_windows(tmp_path, {"epsilon": figures[2] * scale, "delta": DELTA})
    ws = windows_of(fold_app(data, "demo", spec))
    assert ws[W0 + 2]["release"]["released"] is released
    assert ws[W0]["release"]["released"] and ws[W0 + 1]["release"]["released"]


def test_a_restart_keeps_every_decision_and_a_late_small_segment_is_not_released(tmp_path, figures):
    e1, e2, e3 = figures
    data, spec = three_windows(tmp_path, {"epsilon": (e2 + e3) / 2, "delta": DELTA})
    fold_app(data, "demo", spec)
    path = state_path(data / "apps" / "demo")
    before = path.read_bytes()
    again = fold_app(data, "demo", spec)  # a restart: a new fold, nothing cached
    assert path.read_bytes() == before
    assert [w["release"]["released"] for w in windows_of(again).values()] == [True, True, False]
    # a late upload of 150 reports of the second window, in a segment of its own: that window's facts get worse;
    # released with them it would exceed the target, so it is withheld from now on, and still counted
    add_segment(data, spec, W0 + 1, 150, 9)
    doc = fold_app(data, "demo", spec)
    ws = windows_of(doc)
    assert [ws[W0 + i]["release"]["released"] for i in range(3)] == [True, False, False]
    (m,) = doc["metrics"]
    assert m["central"]["epsilon"] == pytest.approx(e2, rel=1e-12) and m["central"]["served"] == [W0]
    rec = load_state(data / "apps" / "demo")["metrics"][f"on.{spec.metrics['on'].params_fingerprint}"]
    assert rec["released"][str(W0 + 1)] == {"n": N, "segments": 1} and str(W0 + 1) in rec["withheld"]
    assert m["n"] == N


def test_a_crash_before_the_record_serves_nothing_and_after_it_nothing_twice(tmp_path, figures, monkeypatch):
    e1, e2, e3 = figures
    data, spec = three_windows(tmp_path, {"epsilon": (e2 + e3) / 2, "delta": DELTA})

    def killed(*args: Any, **kw: Any) -> None:
        raise KeyboardInterrupt("killed")

    # killed between computing the decisions and recording them: nothing is served
    with monkeypatch.context() as mp:
        mp.setattr(central_module, "write_atomic", killed)
        with pytest.raises(KeyboardInterrupt):
            fold_app(data, "demo", spec)
    assert load_estimates(data, "demo") is None and not state_path(data / "apps" / "demo").exists()
    # killed after the record, before estimates.json: recorded, not served
    with monkeypatch.context() as mp:
        mp.setattr(watch_module, "write_atomic", killed)
        with pytest.raises(KeyboardInterrupt):
            fold_app(data, "demo", spec)
    assert load_estimates(data, "demo") is None
    recorded = state_path(data / "apps" / "demo").read_bytes()
    # the next fold serves what was recorded, and counts each window once
    doc = fold_app(data, "demo", spec)
    assert state_path(data / "apps" / "demo").read_bytes() == recorded
    assert [w["release"]["released"] for w in windows_of(doc).values()] == [True, True, False]
    assert doc["metrics"][0]["central"]["epsilon"] == pytest.approx(e2, rel=1e-12)


def test_a_damaged_record_stops_the_fold(tmp_path, figures):
    data, spec = three_windows(tmp_path, {"epsilon": figures[2], "delta": DELTA})
    fold_app(data, "demo", spec)
    state_path(data / "apps" / "demo").write_text("{not json")
    with pytest.raises(ValueError, match="damaged"):
        fold_app(data, "demo", spec)


def test_windows_served_before_a_target_count_once_it_is_set(tmp_path, figures):
    e1, e2, e3 = figures
    data, plain = three_windows(tmp_path, None)
    doc = fold_app(data, "demo", plain)
    c = doc["metrics"][0]["central"]
    assert c["served"] is None and c["withheld"] == {} and c["target"] is None
    assert c["delta"] == 1e-8 and c["epsilon"] == pytest.approx(figure(3, 1e-8), rel=1e-12)
    # the target set afterwards is below what was already served: nothing new is released
    spec = CollectionSpec.from_dict(spec_doc({"epsilon": e2, "delta": DELTA}))
    add_segment(data, spec, W0 + 3, N, 4)
    doc = fold_app(data, "demo", {spec.fingerprint: spec})
    (m,) = doc["metrics"]
    assert m["central"]["withheld"] == {str(W0 + 3): m["central"]["withheld"][str(W0 + 3)]}
    assert m["central"]["epsilon"] == pytest.approx(e3, rel=1e-12) and m["central"]["windows"] == 3


def test_nothing_is_released_when_nothing_can_be_proven(tmp_path):
    spec = CollectionSpec.from_dict(spec_doc({"epsilon": 100.0, "delta": DELTA}))
    data = tmp_path / "data"
    add_segment(data, spec, W0, N, 1, shuffled=False)
    why = "stored before shuffling"
    doc = fold_app(data, "demo", spec)
    (w,) = windows_of(doc).values()
    assert w["release"]["released"] is False and why in w["release"]["reason"] and w["rows"] == []
    (m,) = doc["metrics"]
    assert m["rows"] == [] and m["release"]["reason"].startswith(WITHHELD)


def test_the_dashboard_shows_both_guarantees_and_the_mark(tmp_path, figures):
    e1, e2, e3 = figures
    data, spec = three_windows(tmp_path, {"epsilon": (e2 + e3) / 2, "delta": DELTA, "windows": 365})
    doc = fold_app(data, "demo", spec)
    html = render_page({"demo": doc})
    assert f"ε={e2:.4g}, δ={DELTA:g} over the 2 window(s) released" in html
    assert "Local guarantee of those windows, per device</th>" in html or "Local guarantee of those windows" in html
    assert "ε=2 (1 report(s) a window at most)" in html
    assert f"ε={(e2 + e3) / 2:g}, δ={DELTA:g}, planned over 365 windows; 1 window(s) withheld: central target" in html
    assert "not released: withheld: central target: releasing it would make the cumulative central ε" in html


def test_round_down_keeps_two_significant_digits():
    assert [round_down(n) for n in (1, 99, 100, 2049, 123456, 10**8 + 7)] == [1, 99, 100, 2000, 120000, 10**8]


def test_the_state_file_is_json_with_the_decisions(tmp_path, figures):
    data, spec = three_windows(tmp_path, {"epsilon": figures[0], "delta": DELTA})
    fold_app(data, "demo", spec)
    raw = json.loads(state_path(data / "apps" / "demo").read_text())
    (rec,) = raw["metrics"].values()
    assert rec["target"] == {"epsilon": figures[0], "delta": DELTA}
    assert list(rec["released"]) == [str(W0)] and list(rec["withheld"]) == [str(W0 + 1), str(W0 + 2)]


def test_metrics_show_the_cumulative_epsilon_and_the_windows_withheld(tmp_path, figures):
    from ldp.ingest.config import parse_config
    from ldp.ingest.metrics import IngestMetrics
    from ldp.ingest.segments import SegmentWriter

    e1, e2, e3 = figures
    data, spec = three_windows(tmp_path, {"epsilon": (e2 + e3) / 2, "delta": DELTA})
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec_doc({"epsilon": (e2 + e3) / 2, "delta": DELTA})))
    fold_app(data, "demo", [spec_path])
    config = parse_config({"data_dir": str(data), "apps": {"demo": {"token_sha256": "0" * 64,
                                                                    "specs": [str(spec_path)]}}}, tmp_path)
    page = IngestMetrics(config, SegmentWriter(config)).render()[0].decode()
    assert f'ldp_collector_central_epsilon{{app="demo",metric="on",spec="ct"}} {e2!r}' in page
    assert 'ldp_collector_central_withheld_windows_total{app="demo",metric="on",spec="ct"} 1.0' in page


def test_a_lifetime_cap_within_the_target_releases_every_window(tmp_path, figures):
    """The spec's lifetime cap bounds what a device's reports ever cost, against the analyst too: a target it meets
    is met whatever the windows (no composition needed), and the cumulative figure is never stated above it."""
    doc = spec_doc({"epsilon": 2.5, "delta": DELTA})
    doc["budget"]["lifetime"] = 2  # at most 2 reports of ε₀ = 1, ever
    spec = CollectionSpec.from_dict(doc)
    data = tmp_path / "data"
    for i in range(3):
        add_segment(data, spec, W0 + i, N, i + 1)
    out = fold_app(data, "demo", spec)
    assert [w["release"]["released"] for w in windows_of(out).values()] == [True, True, True]
    (m,) = out["metrics"]
    c = m["central"]
    assert c["withheld"] == {} and c["windows"] == 3
    assert c["epsilon"] == pytest.approx(min(figures[2], 2.0)) and c["local"] == 2.0  # capped at the lifetime


def test_a_memoizing_protocol_is_released_only_under_a_lifetime_cap_within_the_target(tmp_path):
    """RAPPOR's windows share one permanent response: no per-window composition, so a target is met only through
    the lifetime cap; above it, every window is withheld with the reason."""
    def rappor(lifetime: float, target: float) -> dict:
        return {"spec_version": 1, "name": "ct", "budget": {"per_window": 10, "lifetime": lifetime},
                "release": {"central": {"epsilon": target, "delta": DELTA}},
                "metrics": {"on": {"protocol": "rappor", "params": {"num_bloombits": 8, "num_hashes": 1,
                                                                   "num_cohorts": 1, "f": 0.5, "p": 0.25,
                                                                   "q": 0.75},
                                   "budget": {"per_report": 10}}}}

    def fold(lifetime: float, target: float, where: Path) -> dict:
        spec = CollectionSpec.from_dict(rappor(lifetime, target))
        m = spec.metrics["on"]
        rng = np.random.default_rng(7)
        batch = get_protocol(m.protocol).encoder_type(m.params).encode_batch([f"v{i % 3}" for i in range(300)], rng)
        s = Section(spec.fingerprint, "on", W0, batch)
        closed = where / "apps" / "demo" / "segments" / "closed"
        closed.mkdir(parents=True, exist_ok=True)
        write_jsonl(closed / "20260101T000001Z-0000000000000001.jsonl",
                    [Envelope(s.spec, s.metric, s.window, r).to_json() for r in s.reports.reports()])
        (entry,) = fold_app(where, "demo", spec)["metrics"]
        return entry

    ok = fold(20, 30, tmp_path / "a")
    assert ok["windows"][0]["release"]["released"] and ok["central"]["epsilon"] == 20
    held = fold(40, 30, tmp_path / "b")
    assert not held["windows"][0]["release"]["released"]
    assert "memoizes" in held["windows"][0]["release"]["reason"]
