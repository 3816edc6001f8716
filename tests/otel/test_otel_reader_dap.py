"""The privatizing reader (ldp.otel) with two-aggregator metrics: the example spec's two metrics
(examples/two_aggregators.json) fed by OpenTelemetry instruments. Given their tasks, the reader records each window's
value through the client as a DAP report line (charged the spec's ``report_charge``, the exact value measured for
``two-aggregator``, the randomized bit for ``two-aggregator+local``), one per metric per window; without a task it
is refused when it is made, naming the metric; end to end, the reports it uploads to a loopback ``ldp`` leader and
helper are collected, without noise, as exactly the windows' values (tests/support/loopback_aggregators.py)."""

from __future__ import annotations

import io
import json
import math
import time
import urllib.error
from email.message import Message
from typing import Any

import pytest
from support import ROOT
from support.loopback_aggregators import LoopbackAggregators, TaskSpec, prio

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  # after the skip

from ldp.aggregators.task import Noise, Task  # noqa: E402
from ldp.client.dap import DapEncoder, parse_dap_line  # noqa: E402
from ldp.otel import PrivatizingMetricReader  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

WINDOW = 86400
T0 = 1_800_000_000 - 1_800_000_000 % WINDOW  # the start of window 20833
OTEL = {"search_engine": {"instrument": "browser.searches", "kind": "counter", "value": "attribute",
                          "attribute": "engine"},
        "crashed": {"instrument": "app.crashes", "kind": "counter", "value": "any"}}


def _doc(release: bool = True) -> dict[str, Any]:
    """The example spec with an ``otel`` key on each metric (without its central target unless ``release``)."""
    doc = json.loads((ROOT / "examples" / "two_aggregators.json").read_text())
    for name, otel in OTEL.items():
        doc["metrics"][name]["otel"] = otel
    if not release:
        del doc["release"]
    return doc


def _tasks(spec: CollectionSpec) -> dict[str, Task]:
    """Each metric's task, as ``ldp collect task --leader-config ... --helper-config ...`` writes it (no servers)."""
    p = prio()
    keys = [p.HpkeKeypair.generate(i).config.to_bytes() for i in (1, 2, 3)]
    return {m: Task.for_metric(spec, m, leader_url="http://127.0.0.1:9", helper_url="http://127.0.0.1:9",
                               collector_hpke_config=keys[2], min_batch_size=1, noise=Noise(),
                               vdaf_draft=18 if m == "search_engine" else 8, hpke_configs=(keys[0], keys[1]))
            for m in OTEL}


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Every Prio3 measurement the client makes, by metric."""
    made: dict[str, list[Any]] = {m: [] for m in OTEL}
    measure = DapEncoder.measurement

    def spy(self: DapEncoder, prepared: Any) -> Any:
        made[self.metric].append(out := measure(self, prepared))
        return out

    monkeypatch.setattr(DapEncoder, "measurement", spy)
    return made


def _measure(provider: MeterProvider, engines: dict[str, int], crashes: int) -> None:
    meter = provider.get_meter("browser")
    searches = meter.create_counter("browser.searches")
    for engine, n in engines.items():
        searches.add(n, {"engine": engine})
    meter.create_counter("app.crashes").add(crashes)


class Leader:
    """A fake leader (the client's opener): every report PUT to it, each answered ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.puts: list[tuple[str, bytes]] = []

    def open(self, request: Any, data: Any = None, timeout: float = 0) -> Any:
        self.puts.append((request.full_url, request.data))
        if self.status >= 300:
            raise urllib.error.HTTPError(request.full_url, self.status, "busy", Message(), io.BytesIO(b""))
        return Answered(self.status)


class Answered:
    def __init__(self, status: int) -> None:
        self.status = status
        self.headers: dict[str, str] = {}

    def read(self, n: int = -1) -> bytes:
        return b""

    def __enter__(self) -> Answered:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_each_window_is_recorded_charged_and_queued_as_one_dap_line_per_metric(tmp_path, measured):
    spec = CollectionSpec.from_dict(_doc())
    tasks = _tasks(spec)
    clock, leader = Clock(T0 + 100), Leader(503)  # busy: the reports stay queued
    reader = PrivatizingMetricReader(spec, tmp_path / "state.db", clock=clock, collect_seconds=0, tasks=tasks,
                                     upload_options={"opener": leader, "max_attempts": 1})
    provider = MeterProvider(metric_readers=[reader])
    _measure(provider, {"engine_c": 3, "engine_a": 1, "not_an_engine": 9}, crashes=0)
    provider.force_flush()
    assert reader.pending() == [] and leader.puts == []  # nothing before the window ends
    clock.t = T0 + WINDOW + 5
    provider.force_flush()
    _measure(provider, {"other": 2}, crashes=1)
    clock.t = T0 + 2 * WINDOW + 5
    provider.force_flush()
    assert reader.reported == [(20833, {"crashed": "recorded", "search_engine": "recorded"}),
                               (20834, {"crashed": "recorded", "search_engine": "recorded"})]
    # two-aggregator: the exact value (engine_c is index 2 of the labels; "other" index 3), no noise on the device
    assert measured["search_engine"] == [2, 3]
    assert len(measured["crashed"]) == 2 and set(measured["crashed"]) <= {0, 1}  # the randomized bit
    lines = [parse_dap_line(line) for line in reader.pending()]
    ids = {m: task.id_text for m, task in tasks.items()}
    assert sorted(task_id for task_id, _ in lines) == sorted([ids["crashed"], ids["search_engine"]] * 2)
    assert all(b"engine" not in report and b"browser" not in report for _, report in lines)
    for metric in OTEL:  # the spec's charge of one report, once per window
        spent = reader.spent(metric, "lifetime")
        assert math.isclose(spent.epsilon, 2 * spec.report_charge(metric).epsilon, rel_tol=1e-12)
    assert spec.report_charge("search_engine").epsilon == 1.0  # per_report: the exact value is shared
    assert math.isclose(spec.report_charge("crashed").epsilon, math.log(3), rel_tol=1e-12)  # rr's local ε
    # no ingest service: the reader sends them to the task's leader, the queued bytes as they are
    assert leader.puts[0] == (f"http://127.0.0.1:9/tasks/{lines[0][0]}/reports", lines[0][1])
    leader.status = 201
    provider.force_flush()
    assert reader.pending() == [] and {body for _, body in leader.puts} == {report for _, report in lines}
    provider.shutdown()


def test_a_two_aggregator_metric_without_its_task_is_refused_when_the_reader_is_made(tmp_path):
    spec = CollectionSpec.from_dict(_doc())
    with pytest.raises(ValueError, match=r"'crashed' \(trust 'two-aggregator\+local'\), 'search_engine' "
                                         r"\(trust 'two-aggregator'\) in the two-aggregator mode, and no task"):
        PrivatizingMetricReader(spec, tmp_path / "a.db", collect_seconds=0)
    tasks = _tasks(spec)
    with pytest.raises(ValueError, match=r"collects 'search_engine' \(trust 'two-aggregator'\)"):
        PrivatizingMetricReader(spec, tmp_path / "b.db", collect_seconds=0, tasks={"crashed": tasks["crashed"]})
    with pytest.raises(ValueError, match="not its task under spec"):  # the client's check, through the reader
        PrivatizingMetricReader(spec, tmp_path / "c.db", collect_seconds=0,
                                tasks={"crashed": tasks["search_engine"], "search_engine": tasks["search_engine"]})
    only = PrivatizingMetricReader(spec, tmp_path / "d.db", collect_seconds=0, instruments=["app.crashes"],
                                   tasks={"crashed": tasks["crashed"]})  # search_engine is not read: no task needed
    assert list(only.declared) == ["app.crashes"]
    only.shutdown()


def test_spec_validate_says_which_instruments_go_to_two_aggregators_and_charges_per_report():
    from ldp.spec.cli import summary

    doc = _doc()
    doc["metrics"]["search_engine"]["budget"].update(per_report=1.5, per_window=1.5)  # charged, not grr's ε of 1
    text = summary(CollectionSpec.from_dict(doc))
    assert "browser.searches (counter) -> search_engine: the 'engine' value counted most, by grr, in Prio3 shares " \
           "to two aggregators (two-aggregator: the reader needs its task) (ε=1.5)" in text
    assert "one window of these costs a device at most ε=2.59861" in text  # per_report 1.5 + rr's ln 3


def test_readers_upload_to_a_loopback_leader_and_the_windows_are_collected_exactly(tmp_path, measured):
    spec = CollectionSpec.from_dict(_doc(release=False))  # no central target: no noise, exact sums
    now = int(time.time())
    t0 = now - now % WINDOW - WINDOW  # yesterday: ended, and younger than the leader's report expiry
    (tmp_path / "deploy").mkdir()
    agg = LoopbackAggregators(tmp_path / "deploy", {"search_engine": TaskSpec("Prio3Histogram", draft=18),
                                                    "crashed": TaskSpec("Prio3Count", draft=8)}, collection=spec)
    agg.start_both()
    try:
        files = {m: tmp_path / "deploy" / "collector" / f"{m}.task.json" for m in OTEL}
        engines = ["engine_a", "engine_b", "engine_b", "other"]
        for d, engine in enumerate(engines):
            clock = Clock(t0 + 900 * d + 7)
            reader = PrivatizingMetricReader(spec, tmp_path / f"device{d}.db", clock=clock, collect_seconds=0,
                                             tasks=files)  # no ingest service: the tasks' leader only
            provider = MeterProvider(metric_readers=[reader])
            _measure(provider, {engine: 2, "engine_c": 1}, crashes=d % 2)
            clock.t = now
            provider.force_flush()  # the window ends: recorded, then uploaded to the leader
            assert reader.pending() == [], agg.log("leader")
            provider.shutdown()
        assert measured["search_engine"] == [0, 1, 1, 3]
        for metric, measurements in measured.items():
            _, collected = agg.collect(metric, t0)
            assert collected is not None, agg.log("leader")
            assert collected["sums"] == spec.params(metric).prio3_fit().sums(measurements), metric
            assert collected["n"] == len(engines) and collected["refused"] == {}
    finally:
        agg.stop()
