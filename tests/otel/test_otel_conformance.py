"""The Python reader replays conformance/otel/reader-windows.json (the TypeScript reader replays the same file in
clients/typescript/test/otel-conformance.test.mjs): each clock script's steps, through a real OpenTelemetry SDK, report
exactly the windows and the values (before randomization) the file expects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  # after the skip

from ldp.client import TelemetryClient  # noqa: E402
from ldp.otel import PrivatizingMetricReader  # noqa: E402
from ldp.spec import CollectionSpec  # noqa: E402

SCRIPT = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "otel" / "reader-windows.json")
                    .read_text(encoding="utf-8"))
SPEC = CollectionSpec.from_dict(SCRIPT["spec"])


class _Device:
    """One device of a script: its clock, its state file, the reader and provider running now, and every record."""

    def __init__(self, folder: Path, records: list[tuple[int, str, Any]]) -> None:
        self.folder, self.records, self.now = folder, records, 0.0
        self.reader: PrivatizingMetricReader | None = None
        self.provider: MeterProvider | None = None
        self.instruments: dict[str, Any] = {}

    def start(self, at: float) -> None:
        self.now = at
        self.reader = PrivatizingMetricReader(SPEC, self.folder / "state.db", clock=lambda: self.now,
                                              collect_seconds=0)
        self.provider, self.instruments = MeterProvider(metric_readers=[self.reader]), {}

    def measure(self, m: dict[str, Any]) -> None:
        assert self.provider is not None
        meter, name, attributes = self.provider.get_meter("app"), m["instrument"], m.get("attributes")
        if name not in self.instruments:
            self.instruments[name] = {"counter": meter.create_counter, "histogram": meter.create_histogram,
                                      "gauge": meter.create_gauge,
                                      "updown_counter": meter.create_up_down_counter}[m["kind"]](name)
        instrument = self.instruments[name]
        if m["kind"] == "histogram":
            instrument.record(m["value"], attributes)
        elif m["kind"] == "gauge":
            instrument.set(m["value"], attributes)
        else:
            instrument.add(m["value"], attributes)

    def step(self, step: dict[str, Any]) -> None:
        if "start" in step:
            self.start(step["start"])
        elif "clock" in step:
            self.now = step["clock"]
        elif "measure" in step:
            self.measure(step["measure"])
        elif "flush" in step:
            assert self.provider is not None
            self.provider.force_flush()
        elif "close" in step:
            assert self.reader is not None
            self.reader.close_window()
        elif "stop" in step:
            assert self.provider is not None
            self.provider.shutdown()
            self.reader = self.provider = None
        else:
            raise AssertionError(f"unknown step {step}")


def _windows(records: list[tuple[int, str, Any]]) -> list[dict[str, Any]]:
    """The records grouped by window, in order: ``{"window", "values"}`` as the script writes them, each value with
    its type (``True`` is not ``1``)."""
    out: list[dict[str, Any]] = []
    for window, metric, value in records:
        if not out or out[-1]["window"] != window:
            out.append({"window": window, "values": {}})
        out[-1]["values"][metric] = (type(value) is bool, value)
    return out


def _expected(step: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"window": w["window"], "values": {m: (type(v) is bool, v) for m, v in w["values"].items()}}
            for w in step.get("expect", [])]


@pytest.mark.parametrize("case", SCRIPT["cases"], ids=[c["name"][:60] for c in SCRIPT["cases"]])
def test_the_reader_replays_the_shared_clock_script(case, tmp_path, monkeypatch):
    records: list[tuple[int, str, Any]] = []
    real = TelemetryClient.record

    def spy(client: TelemetryClient, metric: str, value: Any) -> Any:
        records.append((int(client._clock() // SPEC.window_seconds), metric, value))  # the window it carries
        return real(client, metric, value)

    monkeypatch.setattr(TelemetryClient, "record", spy)
    device = _Device(tmp_path, records)
    try:
        for i, step in enumerate(case["steps"]):
            del records[:]
            device.step(step)
            assert _windows(records) == _expected(step), f"step {i}: {step}"
    finally:
        if device.provider is not None:
            device.provider.shutdown()


def test_the_script_covers_every_step_and_value():
    """The file exercises what it says: every step kind, every metric's value in some window, and a window that
    ends between a measurement and the next flush (the case the readers once disagreed on)."""
    steps = [s for c in SCRIPT["cases"] for s in c["steps"]]
    assert {k for s in steps for k in s if k != "expect"} == {"start", "clock", "measure", "flush", "close", "stop"}
    valued = {m for s in steps for w in s.get("expect", []) for m in w["values"]}
    assert valued == set(SPEC.metrics)
    first = SCRIPT["cases"][0]["steps"]
    assert [next(iter(s)) for s in first].index("clock") < [next(iter(s)) for s in first].index("flush")
