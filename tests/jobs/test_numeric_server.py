"""The issue 18 protocols through the server job: every input format gives the same aggregates, equal to
the ones built directly from the reports; a TelemetryClient's uploads aggregate and decode; malformed
numeric reports are rejected with a reason and counted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ldp.client.runtime import TelemetryClient
from ldp.jobs import (
    Section,
    decode_file,
    fold_files,
    sections_from_envelopes,
    write_binary,
    write_csv,
    write_jsonl,
    write_parquet,
)
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec, Envelope

WINDOW = 20_000
ATTRIBUTES = [["screen", "grr", {"domain_size": 3}], ["minutes", "duchi", {"low": 0, "high": 240}]]
METRICS = {
    "minutes_duchi": ("duchi", {"epsilon": 1, "low": 0, "high": 240}),
    "minutes_pm": ("piecewise", {"epsilon": 2, "low": 0, "high": 240, "cells": 64}),
    "minutes_hybrid": ("hybrid", {"epsilon": 2, "low": 0, "high": 240, "cells": 64}),
    "minutes_hist": ("dbitflip", {"epsilon": 2, "edges": [0, 30, 60, 120, 240], "d": 2}),
    "minutes_buckets": ("bucket-grr", {"epsilon": 1, "edges": [0, 30, 60, 120, 240]}),
    "screen_daily": ("lgrr", {"epsilon_perm": 4, "epsilon": 1, "domain_size": 3}),
    "minutes_memo": ("memo-mean", {"epsilon": 1, "low": 0, "high": 240, "buckets": 8}),
    "profile": ("multi", {"epsilon": 2, "mode": "sample", "attributes": ATTRIBUTES}),
    # the frequency oracles of issue 19
    "screen_sue": ("sue", {"epsilon": 1, "domain_size": 5}),
    "screen_oue": ("oue", {"epsilon": 1, "domain_size": 5}),
    "screen_olh": ("olh", {"epsilon": 1, "domain_size": 5}),
    "screen_blh": ("blh", {"epsilon": 1, "domain_size": 5}),
    "screen_hr": ("hr", {"epsilon": 1, "domain_size": 5}),
    "screen_ss": ("ss", {"epsilon": 1, "domain_size": 5}),
    "screen_loue": ("loue", {"epsilon_perm": 4, "epsilon": 1, "domain_size": 5}),
    "minutes_oue": ("bucket-oue", {"epsilon": 1, "edges": [0, 30, 60, 120, 240]}),
}
ORACLES = ("sue", "oue", "olh", "blh", "hr", "ss", "loue")


def spec_doc() -> dict:
    return {"spec_version": 1, "name": "numeric_server_test", "budget": {"per_window": 1000, "lifetime": 100000},
            "metrics": {name: {"protocol": protocol, "params": params, "budget": {"per_report": 8}}
                        for name, (protocol, params) in METRICS.items()}}


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> CollectionSpec:
    path = tmp_path_factory.mktemp("spec") / "spec.json"
    path.write_text(json.dumps(spec_doc()))
    return CollectionSpec.load(path)


def _values(protocol: str, n: int, rng: np.random.Generator):
    minutes = np.minimum(rng.exponential(45.0, n), 240.0)
    if protocol in ("dbitflip", "bucket-grr", "bucket-oue"):
        return np.searchsorted([30, 60, 120], minutes, side="right")  # the batch encoders take bucket indices
    if protocol == "lgrr":
        return rng.integers(0, 3, n)
    if protocol in ORACLES:
        return rng.integers(0, 5, n)
    if protocol == "multi":
        return {"screen": rng.integers(0, 3, n), "minutes": minutes}
    return minutes


def make_sections(spec: CollectionSpec, n: int, seed: int) -> list[Section]:
    rng = np.random.default_rng(seed)
    out = []
    for name, m in spec.metrics.items():
        enc = get_protocol(m.protocol).encoder_type(m.params)
        out.append(Section(spec.fingerprint, name, WINDOW, enc.encode_batch(_values(m.protocol, n, rng), rng)))
    return out


def test_every_format_gives_the_aggregates_of_the_reports(spec, tmp_path):
    secs = make_sections(spec, 200, seed=1)
    envs = [Envelope(s.spec, s.metric, s.window, r) for s in secs for r in s.reports.reports()]
    write_jsonl(tmp_path / "a.jsonl", envs)
    write_csv(tmp_path / "a.csv", envs)
    write_binary(tmp_path / "a.ldpe", secs)
    write_parquet(tmp_path / "a.parquet", sections_from_envelopes(envs))
    results = {}
    for fmt in ("jsonl", "csv", "ldpe", "parquet"):
        s = fold_files([tmp_path / f"a.{fmt}"], spec, tmp_path / f"out-{fmt}")
        assert (s.records, s.accepted, s.rejected) == (len(envs), len(envs), {}), fmt
        results[fmt] = {p.name: p.read_bytes() for p in sorted((tmp_path / f"out-{fmt}" / "aggregates").glob("*.agg"))}
    assert len(results["jsonl"]) == len(METRICS)
    assert all(r == results["jsonl"] for r in results.values())
    for sec in secs:
        agg = get_protocol(sec.reports.protocol).aggregate_type(spec.params(sec.metric))
        agg.add(sec.reports)
        name = f"{sec.metric}.{spec.metrics[sec.metric].params_fingerprint}.agg"
        assert results["jsonl"][name] == agg.to_bytes(), sec.metric


def test_client_uploads_aggregate_and_decode(spec, tmp_path):
    lines = []
    for device in range(30):
        with TelemetryClient(spec, tmp_path / f"c{device}.sqlite", clock=lambda: WINDOW * 86400.0 + 60,
                             rng=device, simulation=True) as app:
            for metric, (protocol, _) in METRICS.items():
                value = {"lgrr": 1, "multi": {"screen": 2, "minutes": 30.0}}.get(protocol, 30.0)
                if protocol in ORACLES:
                    value = 3
                app.record(metric, value)
            lines += [item.line for item in app.pending()]
    (tmp_path / "up.jsonl").write_text("\n".join(lines) + "\n")
    summary = fold_files([tmp_path / "up.jsonl"], spec, tmp_path / "out")
    assert summary.accepted == 30 * len(METRICS) and summary.rejected == {}
    for path in sorted((tmp_path / "out" / "aggregates").glob("*.agg")):
        metric, est = decode_file(path, {spec.fingerprint: spec})
        assert est is not None and metric.name in METRICS


@pytest.mark.parametrize("metric, payload, reason", [
    ("minutes_duchi", {"bit": 2}, "out_of_range"),
    ("minutes_pm", {"cell": 64}, "out_of_range"),
    ("minutes_hybrid", {"pm": 0, "out": 5}, "out_of_range"),
    ("minutes_hist", {"sampled": "1110", "bits": "0000"}, "bad_value"),
    ("minutes_pm", {"cell": 1.5}, None),
    ("minutes_duchi", {"bit": 1, "extra": 0}, None),
])
def test_malformed_numeric_reports_are_rejected_and_counted(spec, tmp_path, metric, payload, reason):
    params = spec.params(metric)
    line = json.dumps({"spec": spec.fingerprint, "metric": metric, "window": WINDOW,
                       "report": {"v": 1, "protocol": params.protocol, "params": params.fingerprint,
                                  "payload": payload}})
    Path(tmp_path / "bad.jsonl").write_text(line + "\n")
    summary = fold_files([tmp_path / "bad.jsonl"], spec, tmp_path / "out")
    assert summary.accepted == 0 and sum(summary.rejected.values()) == 1
    if reason is not None:
        assert reason in summary.rejected, summary.rejected
