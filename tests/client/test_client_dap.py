"""The Python client's two-aggregator metrics (issue 87, items 3 and 4; ldp.client.dap, ldp.client.dap_upload): the
task checked against the spec, the charge and the per-window cap of k reports, the outbox's two lanes, opting out,
the refusal without the binding, and the leader's every answer to an upload (by hand and by hypothesis). The
end-to-end count through a loopback leader and helper is tests/client/test_client_dap_e2e.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support import ROOT
from support.loopback_aggregators import prio

from ldp.aggregators.task import Noise, Task
from ldp.client import TelemetryClient
from ldp.client.dap_upload import GONE, refusal_code
from ldp.client.transport import Answer
from ldp.errors import BudgetExceeded, MissingExtraError, RefusalValueError, UploadError
from ldp.spec import CollectionSpec

SPEC = ROOT / "examples" / "two_aggregators.json"
T = 1_700_000_000.0


def _tasks(spec: CollectionSpec, **changes: Any) -> dict[str, Task]:
    p = prio()
    leader, helper = (p.HpkeKeypair.generate(i).config.to_bytes() for i in (1, 2))
    collector = p.HpkeKeypair.generate(3).config.to_bytes()
    return {m: dataclasses.replace(Task.for_metric(spec, m, leader_url="http://leader.test", helper_url="http://h.test",
                                                   collector_hpke_config=collector, min_batch_size=1, noise=Noise(),
                                                   hpke_configs=(leader, helper)), **changes)
            for m in ("search_engine", "crashed")}


def _client(tmp_path: Path, tasks: dict[str, Any] | None = None, name: str = "state.db") -> TelemetryClient:
    spec = CollectionSpec.load(SPEC)
    return TelemetryClient(spec, tmp_path / name, clock=lambda: T, tasks=_tasks(spec) if tasks is None else tasks)


def test_each_report_is_charged_and_k_reports_a_window_pass(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        spec = client.spec
        client.record("search_engine", "engine_b")
        with pytest.raises(BudgetExceeded):  # k = 1: per_window 1 over per_report 1
            client.record("search_engine", "engine_a")
        client.record("crashed", True)
        client.record("crashed", False)
        with pytest.raises(BudgetExceeded):  # k = 2, charged its local ε (1.0986 < per_report 1.1)
            client.record("crashed", True)
        assert client.spent("search_engine") == spec.report_charge("search_engine") == spec.metric(
            "search_engine").budget.per_report
        assert client.spent("crashed").epsilon == pytest.approx(2 * spec.params("crashed").privacy_cost.epsilon)
        assert client.pending() == [] and client.has_pending()  # nothing for the ingest service
        lines = client._outbox.dap_pending(10)
        assert [m for _, m, _ in lines] == ["search_engine", "crashed", "crashed"]
        for _, metric, line in lines:
            doc = json.loads(line)
            assert doc["task_id"] == client._tasks[metric].id_text and len(doc["report"]) > 100


def test_the_report_time_stays_in_the_charged_window_rounded_to_the_precision(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        enc = client._encoder("crashed")
        day = 86400
        w = int(T // day)
        assert enc.report_time(T, w) == T - T % 86400  # the task's precision is the window
        assert enc.report_time((w + 1) * day + 5, w) == w * day  # clamped back into the charged window
        assert enc.report_time(w * day - 5, w) == w * day


def test_the_exact_value_or_the_randomized_report_is_the_measurement(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        exact = client._encoder("search_engine")
        assert [exact.measurement(exact.prepare(v)) for v in ("engine_a", "other")] == [0, 3]
        local = client._encoder("crashed")
        assert {local.measurement(local.prepare(True)) for _ in range(200)} == {0, 1}  # randomized: both


@pytest.mark.parametrize("change", [{"metric": "other"}, {"window_seconds": 3600, "time_precision": 3600},
                                    {"local": None}, {"reports_per_window": 5},
                                    {"vdaf_params": {"length": 5}, "labels": None}, {"hpke_configs": None}])
def test_a_task_that_is_not_the_metrics_is_refused(tmp_path: Path, change: dict[str, Any]) -> None:
    spec = CollectionSpec.load(SPEC)
    tasks = _tasks(spec)
    tasks["crashed" if "local" in change else "search_engine"] = dataclasses.replace(
        tasks["crashed" if "local" in change else "search_engine"], **change)
    with pytest.raises(ValueError, match="the task given for metric"):
        _client(tmp_path, tasks)


def test_tasks_name_only_two_aggregator_metrics_and_load_from_files(tmp_path: Path) -> None:
    spec = CollectionSpec.load(SPEC)
    tasks = _tasks(spec)
    with pytest.raises(ValueError, match="'nope' is no two-aggregator metric"):
        _client(tmp_path, {"nope": tasks["crashed"]})
    tasks["crashed"].save(tmp_path / "crashed.task.json")
    with _client(tmp_path, {"crashed": tmp_path / "crashed.task.json",
                            "search_engine": tasks["search_engine"].to_dict()}) as client:
        client.record("crashed", True)


def test_a_metric_without_its_task_is_refused_with_nothing_written(tmp_path: Path) -> None:
    with _client(tmp_path, {}) as client:
        with pytest.raises(RefusalValueError, match="no task was given") as exc:
            client.record("crashed", True)
        assert exc.value.code == "trust_model" and client.spent("crashed").epsilon == 0


def test_without_the_binding_the_error_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from ldp import prio as module

    with _client(tmp_path) as client:
        monkeypatch.setattr(module, "_why_missing", "ImportError: no module named ldp_prio")
        with pytest.raises(MissingExtraError, match=r"pip install 'ldp-telemetry\[prio\]'"):
            client.record("crashed", True)
        assert client.spent("crashed").epsilon == 0


def test_opting_out_deletes_the_pending_dap_reports(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        client.record("crashed", True)
        assert client.opt_out() == 1 and not client.has_pending()


# -- the upload lane ---------------------------------------------------------------------------------------------
def _problem(status: int, code: str) -> Answer:
    return Answer(status, body=json.dumps({"type": "urn:ietf:params:ppm:dap:error:x", "code": code}).encode())


ANSWERS = {"201": Answer(201), "replayed": _problem(409, "report_replayed"), "too_early": _problem(400,
           "report_too_early"), "503": Answer(503), "none": Answer(None, error="reset"),
           "unknown_task": _problem(404, "unrecognized_task"),
           "janus_rejected": Answer(400, body=b'{"type": "urn:ietf:params:ppm:dap:error:reportRejected"}'),
           **{code: _problem(400, code) for code in sorted(GONE)}}


class _Leader:
    """An opener answering each PUT from a script (the last answer repeats), recording the URLs."""

    def __init__(self, script: list[str]) -> None:
        self.script, self.urls = list(script), []

    def open(self, request: Any, data: Any = None, timeout: float = 0) -> Any:
        import io
        import urllib.error

        assert request.get_method() == "PUT" and request.headers["Content-type"] == "application/dap-report"
        self.urls.append(request.full_url)
        answer = ANSWERS[self.script.pop(0) if len(self.script) > 1 else self.script[0]]
        if answer.status is None:
            raise ConnectionResetError("reset")
        if answer.status >= 300:
            raise urllib.error.HTTPError(request.full_url, answer.status, "x", {}, io.BytesIO(answer.body))
        return _Response(answer.status)


class _Response:
    def __init__(self, status: int) -> None:
        self.status, self.headers = status, {}

    def read(self, n: int = -1) -> bytes:
        return b""

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_each_answer_of_the_leader(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        client.record("crashed", True)
        client.record("search_engine", "other")
        leader = _Leader(["503", "none", "201", "replayed"])
        result = client.upload(opener=leader, sleep=lambda s: None)
        assert (result.accepted, result.duplicates, result.acknowledged, result.stopped) == (1, 1, 2, "empty")
        tid = client._tasks["crashed"].id_text
        assert leader.urls[0] == f"http://leader.test/tasks/{tid}/reports"
        client.record("crashed", False)
        kept = client.upload(opener=_Leader(["too_early"]), sleep=lambda s: None)
        assert kept.stopped == "interval" and client.has_pending()
        with pytest.raises(UploadError, match="HTTP 404") as exc:
            client.upload(opener=_Leader(["unknown_task"]), sleep=lambda s: None)
        assert exc.value.reason == "unrecognized_task" and client.has_pending()
        gone = client.upload(opener=_Leader(["janus_rejected"]), sleep=lambda s: None)
        assert gone.rejected == {"report_rejected": 1} and not client.has_pending()
        assert client.counts()["crashed"] == {"reports": 2, "pending": 0, "uploaded": 2, "discarded": 0}


def test_reports_for_the_ingest_service_need_its_url(tmp_path: Path) -> None:
    spec = CollectionSpec.from_dict({**json.loads(SPEC.read_text()), "metrics": {
        **json.loads(SPEC.read_text())["metrics"],
        "plain": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "budget": {"per_report": 1.1}}}})
    with TelemetryClient(spec, tmp_path / "s.db", clock=lambda: T, tasks=_tasks(spec)) as client:
        client.record("plain", True)
        with pytest.raises(ValueError, match="upload\\(url, token\\)"):
            client.upload(opener=_Leader(["201"]))
        assert len(client.pending()) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scripts=st.lists(st.lists(st.sampled_from(sorted(ANSWERS)), min_size=1, max_size=4), min_size=1, max_size=3))
def test_a_report_leaves_the_outbox_only_once_stored_or_refused_for_good(tmp_path_factory: Any,
                                                                          scripts: list[list[str]]) -> None:
    with _client(tmp_path_factory.mktemp("lane")) as client:
        for _ in scripts:
            try:
                client.record("crashed", True)
            except BudgetExceeded:
                break
        before = len(client._outbox.dap_pending(10))
        flat = [a for s in scripts for a in s]
        try:
            result = client.upload(opener=_Leader(flat), sleep=lambda s: None, max_attempts=3)
        except UploadError as exc:
            result = exc.result
        left = len(client._outbox.dap_pending(10))
        assert result.acknowledged == before - left
        assert result.accepted + result.duplicates + sum(result.rejected.values()) == result.acknowledged
        assert set(result.rejected) <= GONE | {"report_rejected"}


@given(st.binary(max_size=200) | st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.sampled_from(["code", "type", "x"]), st.text(max_size=60) | st.integers())))
def test_refusal_codes_are_read_from_any_body(body: bytes) -> None:
    code = refusal_code(Answer(400, body=body))
    assert code is None or (code.replace("_", "").isalpha() and code.islower() and len(code) <= 80)
