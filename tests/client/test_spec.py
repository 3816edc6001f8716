"""Tests of ldp.spec: the collection spec (validation, normalization, fingerprints), the upload
envelope (parsing and routing, every rejection reason, fuzzed lines) and `ldp spec validate`."""

from __future__ import annotations

import argparse
import copy
import json
import random
from pathlib import Path

import pytest
from support import ROOT

from ldp.encoders import GRREncoder, RapporEncoder
from ldp.reports import ReportError
from ldp.spec import (
    ENVELOPE_REASONS,
    CollectionSpec,
    Envelope,
    EnvelopeError,
    SpecError,
    add_spec_arguments,
    parse_envelope,
    spec_command,
)

EXAMPLE = ROOT / "examples" / "collection.json"


def doc() -> dict:
    """A small valid spec document (a fresh copy each call)."""
    return {
        "spec_version": 1,
        "name": "test_app",
        "budget": {"per_window": 5, "lifetime": 50},
        "metrics": {
            "color": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["r", "g", "b"]},
                      "budget": {"per_report": 1, "per_window": 2, "lifetime": 20}, "description": "favourite"},
            "page": {"protocol": "rappor", "params": {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 4,
                                                      "p": 0.5, "q": 0.75, "f": 0.5},
                     "candidates": "pages.txt", "budget": {"per_report": 1.1}},
        },
    }


def errors_of(data) -> list[str]:
    with pytest.raises(SpecError) as info:
        CollectionSpec.from_dict(data)
    return info.value.errors


# --------------------------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------------------------


def test_example_spec_is_valid_and_complete():
    spec = CollectionSpec.load(EXAMPLE)
    assert spec.name == "example_app" and spec.window_seconds == 86400
    assert set(spec.metrics) == {"app_category", "dark_mode", "homepage"}
    assert spec.upload.max_batch == 500 and spec.upload.min_interval_seconds == 86400
    assert spec.candidates("homepage") == EXAMPLE.parent / "homepage_candidates.txt"
    assert spec.candidates("homepage").exists()
    for m in spec.metrics.values():
        assert m.params.privacy_cost.fits_within(m.budget.per_report)
        assert spec.params(m.name) is m.params


def test_defaults_and_normalized_form():
    spec = CollectionSpec.from_dict(doc())
    out = spec.to_dict()
    assert out["window_seconds"] == 86400
    assert out["upload"] == {"min_interval_seconds": 86400, "max_batch": 1000}
    assert out["budget"] == {"per_window": 5.0, "lifetime": 50.0}
    assert out["metrics"]["color"]["params"] == {"epsilon": 1.0, "domain_size": 3, "labels": ["r", "g", "b"]}
    assert out["metrics"]["page"]["budget"] == {"per_report": 1.1}
    assert "description" not in out and out["metrics"]["color"]["description"] == "favourite"
    d = doc()
    d["budget"]["per_window"] = {"epsilon": 5, "delta": 1e-6}
    assert errors_of(d) == ["budget.per_window: ε=5, δ=1e-06 exceeds budget.lifetime (ε=50)"]  # δ > 0 = lifetime δ
    d["budget"]["lifetime"] = {"epsilon": 50, "delta": 1e-5}
    assert CollectionSpec.from_dict(d).to_dict()["budget"]["per_window"] == {"epsilon": 5.0, "delta": 1e-6}


def test_round_trip_through_dict_and_json(tmp_path):
    spec = CollectionSpec.from_dict(doc())
    again = CollectionSpec.from_dict(spec.to_dict())
    assert again == spec and again.fingerprint == spec.fingerprint
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json(), encoding="utf-8")
    loaded = CollectionSpec.load(path)
    assert loaded == spec and loaded.fingerprint == spec.fingerprint
    assert loaded.candidates("page") == tmp_path / "pages.txt"
    example = CollectionSpec.load(EXAMPLE)
    assert CollectionSpec.loads(example.to_json()).fingerprint == example.fingerprint


def test_fingerprint_is_stable():
    spec = CollectionSpec.from_dict(doc())
    # Key order, whitespace and 1 vs 1.0 do not matter; the value is pinned so format changes are noticed.
    shuffled = json.loads(json.dumps(doc(), sort_keys=True), object_pairs_hook=lambda p: dict(reversed(p)))
    floats = doc()
    floats["metrics"]["color"]["params"]["epsilon"] = 1.0
    floats["budget"] = {"lifetime": 50.0, "per_window": 5.0}
    for variant in (shuffled, floats, json.loads(json.dumps(doc(), indent=4))):
        assert CollectionSpec.from_dict(variant).fingerprint == spec.fingerprint
    assert spec.fingerprint == "06a1bd4e9fa350f4"
    assert len(spec.fingerprint) == 16 and int(spec.fingerprint, 16) >= 0
    assert spec.metrics["color"].fingerprint == CollectionSpec.from_dict(floats).metrics["color"].fingerprint


@pytest.mark.parametrize("change", [
    lambda d: d.update(name="test_app2"),
    lambda d: d.update(window_seconds=3600),
    lambda d: d.update(upload={"max_batch": 10}),
    lambda d: d.update(description="now described"),
    lambda d: d["budget"].update(lifetime=60),
    lambda d: d["metrics"]["color"]["params"].update(epsilon=0.5),
    lambda d: d["metrics"]["color"]["budget"].update(per_window=3),
    lambda d: d["metrics"]["color"].update(description="other"),
    lambda d: d["metrics"]["page"].update(candidates="https://example.com/pages.txt"),
])
def test_fingerprint_sees_every_change(change):
    before = CollectionSpec.from_dict(doc())
    d = doc()
    change(d)
    after = CollectionSpec.from_dict(d)
    assert after.fingerprint != before.fingerprint
    changed = {n for n in before.metrics if before.metrics[n].fingerprint != after.metrics[n].fingerprint}
    assert changed <= {"color", "page"}


def test_metric_fingerprints_and_params_fingerprint():
    spec = CollectionSpec.from_dict(doc())
    color = spec.metrics["color"]
    assert color.params_fingerprint == GRREncoder(color.params, rng=1, simulation=True).encode("g").fingerprint
    d = doc()
    d["metrics"]["page"]["budget"]["per_window"] = 3  # another metric's change leaves this one alone
    assert CollectionSpec.from_dict(d).metrics["color"].fingerprint == color.fingerprint
    assert CollectionSpec.from_dict(d).metrics["page"].fingerprint != spec.metrics["page"].fingerprint
    d["metrics"]["color"]["budget"]["lifetime"] = 30  # budget is in the metric fingerprint, not in params
    assert CollectionSpec.from_dict(d).metrics["color"].params_fingerprint == color.params_fingerprint


def _set(path: str, value):
    def change(d):
        keys = path.split(".")
        for k in keys[:-1]:
            d = d[k]
        if value is _DELETE:
            del d[keys[-1]]
        else:
            d[keys[-1]] = value
    return change


_DELETE = object()
ERROR_CASES = [
    (_set("spec_version", 2), "spec_version: must be 1, got 2"),
    (_set("spec_version", True), "spec_version: must be 1"),
    (_set("spec_version", _DELETE), "spec_version: required"),
    (_set("name", "Test App"), "name: collection names match"),
    (_set("name", _DELETE), "name: required"),
    (_set("extra", 1), "extra: unknown key (expected one of budget, description, metrics"),
    (_set("window_seconds", 0), "window_seconds: must be >= 1, got 0"),
    (_set("window_seconds", 1.5), "window_seconds: must be an integer"),
    (_set("description", 3), "description: must be a string"),
    (_set("budget", 5), "budget: must be an object, got int 5"),
    (_set("budget.lifetime", _DELETE), "budget.lifetime: required"),
    (_set("budget.per_report", 1), "budget.per_report: unknown key"),
    (_set("budget.per_window", -1), "budget.per_window: must be > 0, got -1"),
    (_set("budget.per_window", "5"), "budget.per_window: must be a finite number"),
    (_set("budget.per_window", float("inf")), "budget.per_window: must be a finite number"),
    (_set("budget.per_window", {"delta": 0.1}), "budget.per_window.epsilon: required"),
    (_set("budget.per_window", {"epsilon": 1, "delta": 1.5}), "budget.per_window.delta: must be in [0, 1)"),
    (_set("budget.per_window", {"epsilon": 1, "eps": 1}), "budget.per_window.eps: unknown key"),
    (_set("budget.per_window", {"epsilon": 1, "delta": "0"}), "budget.per_window.delta: must be a finite number, got"),
    (_set("budget.per_window", {"epsilon": 0}), "budget.per_window.epsilon: must be > 0, got 0"),
    (_set("budget.per_window", 60), "budget.per_window: ε=60 exceeds budget.lifetime (ε=50)"),
    (_set("upload", {"max_batch": 0}), "upload.max_batch: must be >= 1, got 0"),
    (_set("upload", {"min_interval_seconds": -1}), "upload.min_interval_seconds: must be >= 0"),
    (_set("upload", {"every": 1}), "upload.every: unknown key"),
    (_set("metrics", {}), "metrics: a collection needs at least one metric"),
    (_set("metrics", []), "metrics: must be an object, got a list"),
    (_set("metrics.Color", {}), 'metrics["Color"]: metric names match [a-z][a-z0-9_]{0,31}'),
    (_set("metrics." + "m" * 33, {}), f'metrics["{"m" * 33}"]: metric names match'),
    (_set("metrics.color", "grr"), "metrics.color: must be an object, got a string"),
    (_set("metrics.color.protocol", "no-such-protocol"),
     "metrics.color.protocol: unknown protocol 'no-such-protocol' (known: "),
    (_set("metrics.color.protocol", _DELETE), "metrics.color.protocol: required"),
    (_set("metrics.color.params", _DELETE), "metrics.color.params: required"),
    (_set("metrics.color.params", [1]), "metrics.color.params: must be an object, got a list"),
    (_set("metrics.color.params.epsilon", 0), "metrics.color.params.epsilon: must be finite and > 0, got 0"),
    (_set("metrics.color.params.epsilon", "1"), "metrics.color.params.epsilon: must be a real number, got str"),
    (_set("metrics.color.params.domain_size", _DELETE), "metrics.color.params.domain_size: required"),
    (_set("metrics.color.params.domain_size", 4), "metrics.color.params.labels: must have domain_size=4 entries"),
    (_set("metrics.color.params.colour", 1), "metrics.color.params.colour: unknown key (expected one of "
                                             "domain_size, epsilon, labels)"),
    (_set("metrics.page.params.num_hashes", 20), "metrics.page.params.num_hashes: num_hashes (h=20) must be <="),
    (lambda d: d["metrics"]["page"]["params"].update(p=0.0, f=0.0),
     "metrics.page.params: these RAPPOR parameters give no finite ε₁"),
    (_set("metrics.color.extra", 1), "metrics.color.extra: unknown key"),
    (_set("metrics.color.description", None), "metrics.color.description: must be a string, got null"),
    (_set("metrics.color.budget", _DELETE), "metrics.color.budget: required"),
    (_set("metrics.color.budget.per_report", _DELETE), "metrics.color.budget.per_report: required"),
    (_set("metrics.color.budget.per_report", 0.9), "metrics.color.budget.per_report: ε=0.9 is less than what one "
                                                   "grr report costs with these params (ε=1)"),
    (_set("metrics.color.budget.per_window", 0.5), "metrics.color.budget.per_report: ε=1 exceeds the metric's "
                                                   "per_window (ε=0.5)"),
    (_set("metrics.color.budget.lifetime", 1.5), "metrics.color.budget.per_window: ε=2 exceeds the metric's lifetime"),
    (_set("metrics.color.budget.per_report", 6), "metrics.color.budget.per_report: ε=6 exceeds budget.per_window of "
                                                 "the collection (ε=5)"),
    (_set("metrics.color.budget.per_session", 1), "metrics.color.budget.per_session: unknown key"),
    (_set("metrics.color.candidates", "c.txt"), "metrics.color.candidates: grr has a fixed domain (domain_size=3)"),
    (_set("metrics.page.candidates", "/etc/pages.txt"), "metrics.page.candidates: must be relative to the spec file"),
    (_set("metrics.page.candidates", ""), "metrics.page.candidates: must be a path relative to the spec file, or a"),
    (_set("metrics.page.candidates", ["a"]), "metrics.page.candidates: must be a path"),
]


@pytest.mark.parametrize("change, expected", ERROR_CASES, ids=[e for _, e in ERROR_CASES])
def test_every_error_names_its_json_path(change, expected):
    d = doc()
    change(d)
    errors = errors_of(d)
    assert any(e.startswith(expected) for e in errors), errors


def test_all_errors_are_reported_at_once():
    d = doc()
    d["spec_version"] = 3
    d["metrics"]["color"]["params"]["epsilon"] = -1
    d["metrics"]["page"]["budget"]["per_report"] = 0.1
    d["upload"] = {"max_batch": 0}
    errors = errors_of(d)
    assert len(errors) == 4, errors
    with pytest.raises(SpecError, match=r"spec: 4 error\(s\)"):
        CollectionSpec.from_dict(d)


def test_not_a_document():
    assert errors_of([1, 2]) == ["$: must be an object, got a list"]
    for text, message in (("{", "$: not valid JSON"), ('{"name": "a", "name": "b"}', "$: key 'name' appears twice"),
                          (b"\xff\xfe", "$: not valid JSON")):
        with pytest.raises(SpecError) as info:
            CollectionSpec.loads(text)
        assert info.value.errors[0].startswith(message)
    with pytest.raises(SpecError, match="cannot read the file"):
        CollectionSpec.load("/nonexistent/spec.json")


def test_lookups():
    spec = CollectionSpec.from_dict(doc(), base_dir="/srv/ldp")
    assert len({spec, CollectionSpec.from_dict(doc())}) == 1  # hashable, by content
    assert spec.candidates("page") == Path("/srv/ldp/pages.txt")
    assert spec.candidates("color") is None
    d = doc()
    d["metrics"]["page"]["candidates"] = "https://example.com/pages.txt"
    assert CollectionSpec.from_dict(d).candidates("page") == "https://example.com/pages.txt"
    with pytest.raises(KeyError, match=r"no metric 'size' in spec 'test_app' \(metrics: color, page\)"):
        spec.params("size")


# --------------------------------------------------------------------------------------------
# The envelope
# --------------------------------------------------------------------------------------------

SPEC = CollectionSpec.from_dict(doc())


def good_lines() -> list[str]:
    color = GRREncoder(SPEC.params("color"), rng=3, simulation=True)
    page = RapporEncoder(SPEC.params("page"), secret=b"s", cohort=2, rng=4, simulation=True)
    return [Envelope(SPEC.fingerprint, "color", 20000, color.encode("g")).to_json(),
            Envelope(SPEC.fingerprint, "page", 20001, page.encode("example.com")).to_json()]


def test_envelope_round_trip_and_shape():
    line = good_lines()[0]
    obj = json.loads(line)
    assert list(obj) == ["spec", "metric", "window", "report"]
    assert set(obj["report"]) == {"v", "protocol", "params", "payload"}
    env = parse_envelope(line, SPEC)
    assert (env.spec, env.metric, env.window) == (SPEC.fingerprint, "color", 20000)
    assert env.to_json() == line
    assert SPEC.route(env) is SPEC.metrics["color"]
    assert parse_envelope(line.encode()) == env  # bytes too; no spec: syntax only


def _mutate(obj_change=None, text=None) -> str:
    obj = json.loads(good_lines()[0])
    if obj_change:
        obj_change(obj)
    return text if text is not None else json.dumps(obj)


REJECTS = [
    ("too_large", _mutate(text=" " * (1 << 22 + 1))),
    ("not_json", _mutate(text='{"spec": ')),
    ("not_json", _mutate(text="\xff")),
    ("not_object", _mutate(text="[1, 2]")),
    ("duplicate_key", _mutate(text='{"spec":"0123456789abcdef","spec":"0123456789abcdef"}')),
    ("missing_key", _mutate(lambda o: o.pop("window"))),
    ("unknown_key", _mutate(lambda o: o.update(device="abc"))),
    ("unknown_key", _mutate(lambda o: o.update(time=1700000000))),
    ("bad_spec", _mutate(lambda o: o.update(spec="ABCDEF0123456789"))),
    ("bad_spec", _mutate(lambda o: o.update(spec=None))),
    ("bad_metric", _mutate(lambda o: o.update(metric="Color"))),
    ("bad_window", _mutate(lambda o: o.update(window=-1))),
    ("bad_window", _mutate(lambda o: o.update(window=20000.5))),
    ("bad_window", _mutate(lambda o: o.update(window=True))),
    ("bad_window", _mutate(lambda o: o.update(window=2**60))),
    ("bad_report", _mutate(lambda o: o.update(report="grr"))),
    ("missing_key", _mutate(lambda o: o["report"].pop("payload"))),
    ("unknown_key", _mutate(lambda o: o["report"].update(user="42"))),
    ("bad_payload", _mutate(lambda o: o["report"].update(payload=[1]))),
    ("bad_value", _mutate(lambda o: o["report"]["payload"].update(index=True))),
    ("bad_version", _mutate(lambda o: o["report"].update(v=2))),
    ("bad_fingerprint", _mutate(lambda o: o["report"].update(params="xyz"))),
    ("bad_protocol", _mutate(lambda o: o["report"].update(protocol="GRR"))),
    ("unknown_spec", _mutate(lambda o: o.update(spec="0123456789abcdef"))),
    ("unknown_metric", _mutate(lambda o: o.update(metric="size"))),
    ("wrong_fingerprint", _mutate(lambda o: o["report"].update(params="0123456789abcdef"))),
    ("wrong_protocol", _mutate(lambda o: o["report"].update(protocol="rr"))),
    ("out_of_range", _mutate(lambda o: o["report"]["payload"].update(index=3))),
    ("payload_mismatch", _mutate(lambda o: o["report"].update(payload={"bit": 1}))),
    ("bad_length", _mutate(lambda o: o.update(metric="page", report=json.loads(good_lines()[1])["report"]) or
                           o["report"]["payload"].update(bits="0101"))),
]


@pytest.mark.parametrize("reason, line", REJECTS, ids=[f"{r}-{i}" for i, (r, _) in enumerate(REJECTS)])
def test_each_bad_envelope_gets_its_reason(reason, line):
    with pytest.raises(EnvelopeError) as info:
        parse_envelope(line, SPEC)
    assert info.value.reason == reason, info.value
    assert isinstance(info.value, ReportError) and info.value.reason in ENVELOPE_REASONS


def test_several_spec_versions():
    d = doc()
    d["metrics"]["color"]["params"]["epsilon"] = 0.5
    d["metrics"]["color"]["budget"]["per_report"] = 0.5
    newer = CollectionSpec.from_dict(d)
    index = {s.fingerprint: s for s in (SPEC, newer)}
    old_line = good_lines()[0]
    assert parse_envelope(old_line, index).spec == SPEC.fingerprint
    with pytest.raises(EnvelopeError) as info:
        parse_envelope(old_line, newer)
    assert info.value.reason == "unknown_spec"
    forged = json.loads(old_line)
    forged["spec"] = newer.fingerprint  # old params under the new spec's name
    with pytest.raises(EnvelopeError) as info:
        parse_envelope(json.dumps(forged), index)
    assert info.value.reason == "wrong_fingerprint"


def test_fuzzed_lines_are_parsed_or_rejected_with_a_reason():
    rng = random.Random(9)
    lines = good_lines()
    alphabet = '{}[]":,0123456789abcdefvx \\-.etrunl'
    outcomes = {"ok": 0}
    for _ in range(3000):
        chars = list(rng.choice(lines))
        for _ in range(rng.randint(1, 4)):
            if not chars:
                break
            op, i = rng.random(), rng.randrange(len(chars))
            if op < 0.4:
                chars[i] = rng.choice(alphabet)
            elif op < 0.7:
                del chars[i]
            elif op < 0.9:
                chars.insert(i, rng.choice(alphabet))
            else:
                chars = chars[:i]
        try:
            parse_envelope("".join(chars), SPEC)
            outcomes["ok"] += 1
        except EnvelopeError as err:
            assert err.reason in ENVELOPE_REASONS
            outcomes[err.reason] = outcomes.get(err.reason, 0) + 1
    assert sum(outcomes.values()) == 3000
    assert outcomes["ok"] > 0 and len(outcomes) > 8, outcomes


def test_envelope_error_rejects_unknown_reasons():
    with pytest.raises(ValueError, match="unknown envelope rejection reason"):
        EnvelopeError("because")


# --------------------------------------------------------------------------------------------
# `ldp spec validate`
# --------------------------------------------------------------------------------------------


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ldp")
    add_spec_arguments(parser.add_subparsers(dest="command", required=True))
    return spec_command(parser.parse_args(argv))


def test_cli_validate_prints_a_summary(capsys):
    assert run_cli(["spec", "validate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    spec = CollectionSpec.load(EXAMPLE)
    assert spec.fingerprint in out and "homepage_candidates.txt" in out
    for m in spec.metrics.values():
        row = next(line for line in out.splitlines() if line.startswith(m.name + " "))
        assert m.protocol in row and m.params_fingerprint in row and m.fingerprint in row
        assert str(m.params.privacy_cost) in row


def test_cli_validate_json(capsys):
    assert run_cli(["spec", "validate", str(EXAMPLE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spec = CollectionSpec.load(EXAMPLE)
    assert out["fingerprint"] == spec.fingerprint and out["spec"] == spec.to_dict()
    assert out["metrics"]["homepage"]["params"] == spec.metrics["homepage"].params_fingerprint


def test_cli_validate_shuffled_shows_both_guarantees(capsys):
    """``--shuffled N``: per metric the local ε₀, the reports a device may send a window (k) and the central ε of a
    device's k reports among the k·N of N devices (never above k·ε₀), with the trust assumption; JSON keeps the same
    numbers."""
    from ldp.pipeline.guarantee import window_guarantee
    from ldp.privacy.shuffle import shuffled_epsilon

    assert run_cli(["spec", "validate", str(EXAMPLE), "--shuffled", "1000000"]) == 0
    out = capsys.readouterr().out
    spec = CollectionSpec.load(EXAMPLE)
    assert "trust: the shuffler (the ingest service) is trusted and is not the analyst" in out
    # homepage: per_window 2.2 over per_report 1.1, two reports a window
    eps0 = spec.metrics["homepage"].params.privacy_cost.epsilon
    two = window_guarantee(spec.metrics["homepage"].params, 2 * 10**6, 1e-8, 2)
    assert two is not None and two.epsilon <= shuffled_epsilon(2 * eps0, 10**6, 1e-8).epsilon
    assert f"homepage: local ε₀={eps0:g} per report, ≤ 2 a window; central ε={two.epsilon:.4g}" in out
    assert run_cli(["spec", "validate", str(EXAMPLE), "--shuffled", "1000000", "--json"]) == 0
    doc_ = json.loads(capsys.readouterr().out)["central"]
    assert doc_["homepage"]["reports_per_window"] == 2 and doc_["app_category"]["reports_per_window"] == 1
    assert doc_["homepage"]["guarantee"]["epsilon"] == two.epsilon

    one = window_guarantee(spec.metrics["app_category"].params, 10**6, 1e-8)  # its channel's own structure
    assert one is not None and doc_["app_category"]["guarantee"]["epsilon"] == one.epsilon
    assert one.epsilon <= shuffled_epsilon(1.0, 10**6, 1e-8).epsilon  # never above the generic bound
    assert run_cli(["spec", "validate", str(EXAMPLE), "--shuffled", "0"]) == 2


def test_cli_validate_errors_exit_2(tmp_path, capsys):
    bad = copy.deepcopy(doc())
    bad["metrics"]["color"]["params"]["epsilon"] = 0
    bad["window_seconds"] = "day"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert run_cli(["spec", "validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}: 2 error(s)" in captured.err
    assert "  metrics.color.params.epsilon: must be finite and > 0, got 0" in captured.err
    assert "  window_seconds: must be an integer, got a string" in captured.err
    assert run_cli(["spec", "validate", str(tmp_path / "missing.json")]) == 2


def test_docs_show_the_example_spec_verbatim():
    page = (ROOT / "docs" / "client.md").read_text(encoding="utf-8")
    block = page.split("```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(block) == json.loads(EXAMPLE.read_text(encoding="utf-8"))
