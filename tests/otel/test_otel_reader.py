"""Tests of ldp.otel (the privatizing MetricReader) and ldp.otel.window (a window's tally): plain OpenTelemetry code
measures, the reader reports one value per declared metric per window through the client, charges exactly the
spec's per-report cost, and never lets an undeclared instrument reach the outbox."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  # after the skip
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View  # noqa: E402

from ldp.otel import PrivatizingMetricReader  # noqa: E402
from ldp.otel.window import WindowTally, bucket_map  # noqa: E402
from ldp.privacy.accountant import PrivacyCost  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

WINDOW = 60
T0 = 1_800_000_000.0  # the start of window 30,000,000

SPEC: dict[str, Any] = {
    "spec_version": 1, "name": "otel_app", "window_seconds": WINDOW,
    "budget": {"per_window": 20, "lifetime": 1000}, "upload": {"min_interval_seconds": 0, "max_batch": 100},
    "metrics": {
        "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1},
                    "otel": {"instrument": "app.crashes", "kind": "counter", "value": "any"}},
        "screen": {"protocol": "grr", "params": {"epsilon": 2, "domain_size": 3,
                                                 "labels": ["home", "search", "profile"]},
                   "budget": {"per_report": 2}, "otel": {"instrument": "ui.views", "kind": "counter",
                                                         "value": "attribute", "attribute": "screen"}},
        "latency": {"protocol": "oue", "params": {"epsilon": 2, "domain_size": 3}, "budget": {"per_report": 2},
                    "otel": {"instrument": "http.duration", "kind": "histogram", "value": "bucket",
                             "buckets": [100, 250]}},
        "startup": {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 10, "clip": True},
                    "budget": {"per_report": 1}, "otel": {"instrument": "http.duration", "kind": "histogram",
                                                          "value": "mean"}},
        "battery": {"protocol": "duchi", "params": {"epsilon": 1, "low": 0, "high": 100, "clip": True},
                    "budget": {"per_report": 1}, "otel": {"instrument": "Battery.Level", "kind": "gauge",
                                                          "value": "last"}},
        "files": {"protocol": "piecewise", "params": {"epsilon": 1, "low": 0, "high": 50, "clip": True},
                  "budget": {"per_report": 1}, "otel": {"instrument": "files.opened", "kind": "counter",
                                                        "value": "sum"}},
        "query": {"protocol": "cms", "params": {"epsilon": 2, "num_hashes": 4, "width": 32},
                  "budget": {"per_report": 2}, "otel": {"instrument": "search.queries", "kind": "counter",
                                                        "value": "attribute", "attribute": "q"}},
        "plain": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 2}, "budget": {"per_report": 1}},
    },
}
UNDECLARED = "secret.purchases"


class Clock:
    def __init__(self, t: float = T0 + 1) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _setup(tmp_path: Path, clock: Clock, spec: dict[str, Any] = SPEC, **options: Any
           ) -> tuple[PrivatizingMetricReader, MeterProvider, list[tuple[str, Any]]]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    reader = PrivatizingMetricReader(path, tmp_path / "state.db", clock=clock, collect_seconds=0, **options)
    seen: list[tuple[str, Any]] = []
    record = reader._client.record

    def spy(metric: str, value: Any) -> int:
        seen.append((metric, value))
        return record(metric, value)

    reader._client.record = spy  # type: ignore[method-assign]
    return reader, MeterProvider(metric_readers=[reader]), seen


def _measure(provider: MeterProvider) -> None:
    meter = provider.get_meter("app")
    meter.create_counter("app.crashes").add(2)
    views = meter.create_counter("ui.views")
    views.add(3, {"screen": "search"})
    views.add(2, {"screen": "home"})
    views.add(9, {"screen": "settings"})  # not a category: not counted
    duration = meter.create_histogram("http.duration")
    for x in (50, 120, 130, 300, 140):
        duration.record(x)
    meter.create_gauge("battery.level").set(42)
    meter.create_counter("files.opened").add(4)
    queries = meter.create_counter("search.queries")
    queries.add(1, {"q": "cats"})
    queries.add(2, {"q": "dogs"})
    meter.create_counter(UNDECLARED).add(99, {"item": "ring"})
    meter.create_histogram("undeclared.histogram").record(5)


def _pending(reader: PrivatizingMetricReader) -> list[dict[str, Any]]:
    return [json.loads(line) for line in reader.pending()]


def test_each_window_reports_one_value_per_declared_metric_and_charges_exactly(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock)
    _measure(provider)
    provider.force_flush()
    assert seen == [] and _pending(reader) == []  # nothing leaves before the window ends
    clock.t = T0 + WINDOW + 5
    provider.force_flush()
    assert dict(seen) == {"crashed": True, "screen": 1, "latency": 1, "startup": (50 + 120 + 130 + 300 + 140) / 5,
                          "battery": 42.0, "files": 4.0, "query": "dogs"}
    lines = _pending(reader)
    assert sorted(e["metric"] for e in lines) == sorted(dict(seen)) and {e["window"] for e in lines} == {30_000_000}
    spec = CollectionSpec.from_dict(SPEC)
    spent = reader.spent(None, "lifetime")
    want = sum(spec.metrics[m].params.privacy_cost.epsilon for m in dict(seen))  # what one report costs
    assert math.isclose(spent.epsilon, want, rel_tol=1e-12) and spent.delta == 0
    for metric in dict(seen):
        cost = reader.spent(metric, "lifetime")
        assert cost == spec.metrics[metric].params.privacy_cost
    assert reader.spent("plain", "lifetime") == PrivacyCost(0.0, 0.0)
    assert reader.spent() == PrivacyCost(0.0, 0.0)  # this window's
    assert reader.reported == [(30_000_000, {m: "recorded" for m in dict(seen)})]
    text = "\n".join(json.dumps(e) for e in lines) + (tmp_path / "state.db.otel.json").read_text()
    assert UNDECLARED not in text and "ring" not in text and "undeclared" not in text
    provider.shutdown()


def test_an_idle_window_reports_what_a_window_without_measurements_says(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock)
    provider.force_flush()
    clock.t += WINDOW
    provider.force_flush()
    assert dict(seen) == {"crashed": False, "files": 0.0}  # the others need a measurement
    provider.shutdown()


def test_a_restart_mid_window_continues_the_tally(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock)
    meter = provider.get_meter("app")
    meter.create_counter("files.opened").add(3)
    provider.shutdown()  # mid-window: nothing reported
    assert seen == [] and json.loads((tmp_path / "state.db.otel.json").read_text())["totals"] == {"files": 3.0}
    clock.t += 10
    reader, provider, seen = _setup(tmp_path, clock)
    provider.get_meter("app").create_counter("files.opened").add(5)
    clock.t += WINDOW
    provider.force_flush()
    assert dict(seen)["files"] == 8.0
    provider.shutdown()


def test_a_window_that_ended_while_nothing_ran_is_reported_at_the_next_start(tmp_path):
    clock = Clock()
    reader, provider, _ = _setup(tmp_path, clock)
    provider.get_meter("app").create_counter("app.crashes").add(1)
    provider.shutdown()
    clock.t += 5 * WINDOW
    reader, provider, _ = _setup(tmp_path, clock)  # reported at construction, with its own window
    lines = _pending(reader)
    assert {e["window"] for e in lines} == {30_000_000} and {e["metric"] for e in lines} == {"crashed", "files"}
    provider.shutdown()


def test_report_on_shutdown_and_close_window_drop_the_rest_of_the_window(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock, report_on_shutdown=True)
    meter = provider.get_meter("app")
    meter.create_counter("files.opened").add(2)
    provider.shutdown()
    assert dict(seen)["files"] == 2.0
    reader, provider, seen = _setup(tmp_path, clock)
    provider.get_meter("app").create_counter("files.opened").add(7)  # the same window: closed already
    clock.t += WINDOW
    provider.force_flush()
    assert seen == []  # nothing more of that window
    provider.get_meter("app").create_counter("files.opened").add(1)
    assert reader.close_window() == {"crashed": "recorded", "files": "recorded"} and dict(seen)["files"] == 1.0
    assert reader.close_window() == {}
    provider.shutdown()


def test_a_spent_budget_skips_the_metric_and_never_reports_twice(tmp_path):
    clock = Clock()
    spec = json.loads(json.dumps(SPEC))
    spec["metrics"]["files"]["budget"]["lifetime"] = 1
    reader, provider, seen = _setup(tmp_path, clock, spec=spec)
    for _ in range(2):
        provider.get_meter("app").create_counter("files.opened").add(1)
        clock.t += WINDOW
        provider.force_flush()
    assert [outcome["files"] for _, outcome in reader.reported] == ["recorded", "budget"]
    provider.shutdown()


def test_a_declared_instrument_of_another_kind_is_dropped_as_a_misfit(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock)
    meter = provider.get_meter("app")
    meter.create_up_down_counter("files.opened").add(5)  # declared as a counter
    meter.create_counter("app.crashes").add(1)
    clock.t += WINDOW
    provider.force_flush()
    assert "files.opened" in reader.misfits and "files" not in dict(seen) and dict(seen)["crashed"] is True
    provider.shutdown()


def test_an_app_view_with_other_buckets_makes_the_points_unfit(tmp_path):
    clock = Clock()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    reader = PrivatizingMetricReader(path, tmp_path / "state.db", clock=clock, collect_seconds=0)
    view = View(instrument_name="http.duration", aggregation=ExplicitBucketHistogramAggregation([10, 200]))
    provider = MeterProvider(metric_readers=[reader], views=[view])
    provider.get_meter("app").create_histogram("http.duration").record(120)
    provider.force_flush()
    assert reader._tally.unfit == 1 and "latency" not in reader._tally.tallies
    assert reader._tally.counts["startup"] == 1  # the mean needs no bounds
    provider.shutdown()


def test_the_reader_refuses_what_it_cannot_serve_when_it_is_made(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    with pytest.raises(ValueError, match="declares instrument"):
        PrivatizingMetricReader(spec, tmp_path / "a.db", instruments=["app.crashes", "no.such"])
    bare = {**SPEC, "metrics": {"plain": SPEC["metrics"]["plain"]}}
    with pytest.raises(ValueError, match="declares no OpenTelemetry instrument"):
        PrivatizingMetricReader(CollectionSpec.from_dict(bare), tmp_path / "b.db")
    for bad in (0.01, -1, math.inf, True, "60"):
        with pytest.raises(ValueError, match="collect_seconds"):
            PrivatizingMetricReader(spec, tmp_path / "c.db", collect_seconds=bad)
    with pytest.raises(ValueError, match="url and token together"):
        PrivatizingMetricReader(spec, tmp_path / "d.db", url="http://127.0.0.1:1/v1/reports")
    only = PrivatizingMetricReader(spec, tmp_path / "e.db", instruments=["APP.CRASHES"], collect_seconds=0)
    assert set(only.declared) == {"app.crashes"}
    only.shutdown()


def test_a_damaged_tally_is_set_aside(tmp_path):
    (tmp_path / "state.db.otel.json").write_text("{not json")
    reader, provider, _ = _setup(tmp_path, Clock())
    assert (tmp_path / "state.db.otel.json.bad").exists() and reader._tally.totals == {}
    provider.shutdown()


@settings(max_examples=200, deadline=None)
@given(spec_bounds=st.lists(st.integers(-50, 50), min_size=1, max_size=5, unique=True),
       extra=st.lists(st.integers(-60, 60), max_size=6, unique=True), x=st.integers(-70, 70))
def test_sdk_buckets_map_onto_the_spec_bucket_of_every_value(spec_bounds, extra, x):
    spec = sorted(float(b) for b in spec_bounds)
    sdk = sorted({*spec, *(float(b) for b in extra)})
    where = bucket_map(sdk, spec)
    assert where is not None and len(where) == len(sdk) + 1
    in_sdk = sum(1 for b in sdk if b < x)  # OpenTelemetry's (b[i-1], b[i]]
    assert where[in_sdk] == sum(1 for b in spec if b < x)
    missing = [b for b in spec if b not in extra]
    assert (bucket_map(sorted(float(b) for b in extra), spec) is None) == bool(missing)


def test_the_tally_round_trips_and_refuses_other_documents():
    tally = WindowTally(7, totals={"a": 1.5}, counts={"a": 2.0}, last={"g": (5, 3.0)}, tallies={"b": {"x": 1.0}},
                        unfit=2, closed=True)
    assert WindowTally.from_json(json.loads(json.dumps(tally.to_json()))) == tally
    for bad in ({}, {"format": "x"}, {**tally.to_json(), "window": "7"}, {**tally.to_json(), "totals": {"a": "1"}},
                {**tally.to_json(), "last": {"g": [1]}}, {**tally.to_json(), "totals": {"a": math.inf}}):
        with pytest.raises(ValueError):
            WindowTally.from_json(bad)


def test_a_process_killed_as_a_window_ends_never_reports_it_twice(tmp_path):
    clock = Clock()
    reader, provider, seen = _setup(tmp_path, clock)
    provider.get_meter("app").create_counter("files.opened").add(3)
    provider.force_flush()

    def killed(values: Any, at: Any) -> Any:
        raise KeyboardInterrupt  # the process dies before the first report is recorded

    record, reader._record = reader._record, killed  # type: ignore[method-assign]
    clock.t += WINDOW
    with pytest.raises(KeyboardInterrupt):
        provider.force_flush()
    reader._record = record  # type: ignore[method-assign]
    provider.shutdown()
    saved = json.loads((tmp_path / "state.db.otel.json").read_text())
    assert saved["window"] == 30_000_001 and saved["totals"] == {}  # the ended window was set down as over first
    reader2, provider2, seen2 = _setup(tmp_path, clock)
    provider2.force_flush()
    assert seen2 == [] and reader2.pending() == [] and reader2.spent(None, "lifetime") == PrivacyCost(0.0, 0.0)
    provider2.shutdown()
