"""An ingest service as one replica among several behind a balancer: its name (config ``replica`` or ``ldp serve
--replica``) on every ``/metrics`` sample and in ``/healthz``; ``/readyz`` (readiness: 503 while the storage fails,
so the balancer stops sending uploads) and ``/livez`` (liveness: 200 as long as the process answers, a storage
error included, since it heals by itself)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from test_metrics import GOOD, SCRAPER, SPEC, make_config, upload

from ldp.cli import main
from ldp.errors import ConfigError
from ldp.ingest.app import create_app
from ldp.ingest.config import APP_NAME_RE, check_replica, parse_config, token_sha256


def test_every_sample_carries_the_replica(tmp_path: Path) -> None:
    config = dataclasses.replace(make_config(tmp_path, {"token_sha256": token_sha256(SCRAPER)}), replica="r2")
    operator = {"Authorization": f"Bearer {SCRAPER}"}  # the scraper's token reads /healthz's details too
    with TestClient(create_app(config)) as c:
        assert upload(c, b"".join(GOOD[:5]), "b1").status_code == 200
        c.app.state.metrics.publish()  # type: ignore[attr-defined]  # as the next interval boundary does
        text = c.get("/metrics", headers=operator).text
        om = c.get("/metrics", headers={**operator, "Accept": "application/openmetrics-text; version=1.0.0"}).text
        health = c.get("/healthz", headers=operator).json()
        assert c.get("/healthz").json() == {"status": "ok"}  # anonymous: no name
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert samples and all(s.labels.get("replica") == "r2" for s in samples)
    assert all(s.labels.get("replica") == "r2" for f in parse_openmetrics(om) for s in f.samples)
    accepted = [s for s in samples if s.name == "ldp_collector_reports_accepted_total"]
    assert sum(s.value for s in accepted) == 5
    assert health["replica"] == "r2" and health["status"] == "ok"


def test_no_replica_no_label(tmp_path: Path) -> None:
    with TestClient(create_app(make_config(tmp_path))) as c:
        text = c.get("/metrics").text
        assert "replica" not in c.get("/healthz").json()
    assert all("replica" not in s.labels for f in text_string_to_metric_families(text) for s in f.samples)


def test_readyz_follows_the_writer_and_livez_stays_up(tmp_path: Path) -> None:
    config = dataclasses.replace(make_config(tmp_path), replica="r1")
    with TestClient(create_app(config)) as c:
        assert c.get("/readyz").status_code == 200 and c.get("/livez").json() == {"status": "alive"}  # no name
        writer = c.app.state.writer  # type: ignore[attr-defined]
        writer._fail("test: the disk is full")
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json() == {"status": "unavailable", "reason": "storage"}
        assert ready.headers["retry-after"] and c.get("/healthz").status_code == 503
        assert c.get("/livez").status_code == 200
        c.app.state.metrics.publish()  # type: ignore[attr-defined]  # as the next interval boundary does
        samples = {(s.name, s.labels.get("route"), s.labels.get("status")): s.value
                   for f in text_string_to_metric_families(c.get("/metrics").text) for s in f.samples}
    assert samples[("ldp_collector_requests_total", "/readyz", "503")] == 1
    assert samples[("ldp_collector_requests_total", "/livez", "200")] == 2


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=70), st.integers(), st.none(), st.booleans()))
def test_replica_names_are_checked(name: object) -> None:
    """Any value: accepted exactly when it is an app-like name (a label value and an object-name part)."""
    ok = isinstance(name, str) and APP_NAME_RE.match(name) is not None
    doc = {"replica": name, "apps": {"demo": {"token_sha256": token_sha256("t" * 43), "specs": []}}}
    try:
        assert check_replica(name) == name and ok
    except ConfigError:
        assert not ok
    if not ok:
        with pytest.raises(ConfigError, match="replica"):
            parse_config(doc, Path("."))


def test_config_and_command_line_name_the_replica(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = parse_config({"replica": "eu-1", "data_dir": "d", "apps": {"demo": {"token_sha256": token_sha256("x"),
                                                                                 "specs": [str(SPEC)]}}}, tmp_path)
    assert config.replica == "eu-1"
    path = tmp_path / "c.toml"
    path.write_text(f'[apps.demo]\ntoken_sha256 = "{token_sha256("x")}"\nspecs = ["{SPEC}"]\n')
    assert main(["serve", "--config", str(path), "--replica", "Bad Name"]) == 2
    assert "--replica: a replica name is 1 to 64" in capsys.readouterr().err
