"""``Report.to_json`` and ``canonical_json`` (ldp.wire) write, without building a json encoder per call, exactly
the bytes of their ``json.dumps`` references: on every report and canonical text of the conformance vectors,
and on reports hypothesis makes (of every client protocol, and of any payload ``Report.trusted`` lets through)."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from bitarray import bitarray, frozenbitarray
from hypothesis import given, settings, strategies as st

from ldp.protocols import builtin_client_protocols, client_protocols
from ldp.randomness import ReplaySource
from ldp.reports import MAX_UINT, Report, canonical_json, parse_json
from ldp.spec import CollectionSpec, Envelope, parse_envelope
from ldp.wire import _reference_json

VECTORS = Path(__file__).resolve().parents[2] / "conformance" / "vectors"
PROTOCOLS = sorted(builtin_client_protocols())


def _load(protocol: str) -> dict[str, Any]:
    return json.loads((VECTORS / f"{protocol}.json").read_text("ascii"))


def _reference_canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _outcome(fn: Callable[[Any], str], obj: Any) -> tuple[str, Any]:
    """``("ok", text)``, or ``("raises", exception type)`` where the serializer refuses ``obj``."""
    try:
        return "ok", fn(obj)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        return "raises", type(exc)


def _extras(case: dict[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if "cohort" in case:
        extra["cohort"] = case["cohort"]
    if "metric_secret" in case:
        extra["secret"] = bytes.fromhex(case["metric_secret"])
    return extra


def test_every_vector_report_is_written_as_the_reference_and_the_vector_writes_it() -> None:
    """Every report line of every vector file, made again from its recorded draws (``Report.trusted``, as the
    client makes them) and parsed from the line (a validated ``Report``): ``to_json`` == the reference == the
    line's ``report`` object, byte for byte."""
    files = sorted(p.stem for p in VECTORS.glob("*.json") if p.stem != "primitives")
    assert files == PROTOCOLS
    replayed = 0
    for protocol in files:
        doc = _load(protocol)
        spec = CollectionSpec.from_dict(doc["spec"])
        encoder_type = client_protocols()[protocol][1]
        for case in doc["cases"]:
            source = ReplaySource([(k, int(v, 16)) for k, v in case["draws"]])
            encoder = encoder_type(spec.params(case["metric"]), rng=source, simulation=True, **_extras(case))
            for item in case["reports"]:
                made = encoder.randomize(encoder.prepare(item["value"]))
                parsed = parse_envelope(item["line"], spec).report
                head = f'{{"spec":"{spec.fingerprint}","metric":"{case["metric"]}","window":{case["window"]},'
                for report in (made, parsed):
                    line = report.to_json()
                    assert line == _reference_json(report), (protocol, item["line"])
                    assert head + f'"report":{line}}}' == item["line"], protocol
                    assert Envelope(spec.fingerprint, case["metric"], case["window"], report).to_json() == item["line"]
                    assert parse_json(line) == parsed
                replayed += 1
    assert replayed >= 10 * len(files)


def test_every_canonical_text_of_the_vectors_is_written_as_the_reference() -> None:
    """``canonical_json`` of the primitives' objects (unicode, control characters, escapes, floats) and of every
    file's spec and parameters is the vector's text and the ``json.dumps`` reference's."""
    primitives = json.loads((VECTORS / "primitives.json").read_text("ascii"))["texts"]["canonical_json"]
    texts = [(item["value"], item["canonical"]) for item in primitives]
    for protocol in PROTOCOLS:
        doc = _load(protocol)
        texts.append((doc["spec"], doc["spec_canonical"]))
        texts += [(json.loads(item["canonical"]), item["canonical"]) for item in doc["params"]]
    assert len(primitives) >= 3
    for value, text in texts:
        assert canonical_json(value) == _reference_canonical(value) == text


@cache
def _encoders(protocol: str) -> list[tuple[Any, list[Any]]]:
    """Per case of the protocol's vector file: an encoder of its metric (seeded, advancing at every report) and
    the values its reports encode."""
    doc = _load(protocol)
    spec = CollectionSpec.from_dict(doc["spec"])
    encoder_type = client_protocols()[protocol][1]
    out = []
    for case in doc["cases"]:
        extra = _extras(case)
        params = spec.params(case["metric"])
        if encoder_type.assigned_cohorts(params) and "cohort" not in extra:
            extra["cohort"] = 0
        if encoder_type.needs_secret and "secret" not in extra:
            extra["secret"] = b"s"
        encoder = encoder_type(params, rng=len(out), simulation=True, **extra)
        out.append((encoder, [item["value"] for item in case["reports"]]))
    return out


@settings(max_examples=300, deadline=None)
@given(protocol=st.sampled_from(PROTOCOLS), pick=st.integers(0, 2**16), repeat=st.integers(1, 4))
def test_reports_of_every_client_protocol_are_written_as_the_reference(protocol: str, pick: int,
                                                                       repeat: int) -> None:
    encoders = _encoders(protocol)
    encoder, values = encoders[pick % len(encoders)]
    value = values[(pick // len(encoders)) % len(values)]
    for _ in range(repeat):
        report = encoder.encode(value)
        assert report.to_json() == _reference_json(report)


class Small(enum.IntEnum):
    one = 1


class Name(str):
    pass


NAMES = st.text(max_size=12)  # any code point: unicode, control characters, quotes, backslashes, surrogates
# any bit string of up to 300 bits, drawn as one string of 0s and 1s (a list of booleans is 300 draws)
BITS = st.text(alphabet="01", max_size=300).map(lambda b: frozenbitarray(b, endian="little"))
VALUES = st.one_of(
    st.integers(0, MAX_UINT),
    st.sampled_from([0, 1, MAX_UINT, MAX_UINT + 1, -1, 10**4299, 10**4300, True, False, Small.one, None,
                     math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]),
    st.integers(),
    st.floats(),
    BITS,
    BITS.map(lambda b: frozenbitarray(b, endian="big")),
    BITS.map(bitarray),
    st.text(max_size=5),
)


@settings(max_examples=500, deadline=None)
@given(protocol=st.one_of(NAMES, NAMES.map(Name), st.integers()), fp=st.one_of(NAMES, st.none()),
       payload=st.dictionaries(st.one_of(NAMES, NAMES.map(Name), st.integers()), VALUES, max_size=5))
def test_any_trusted_report_is_written_as_the_reference(protocol: Any, fp: Any, payload: dict[Any, Any]) -> None:
    """Whatever ``Report.trusted`` holds (names with any code point, bools, int and str subclasses, floats and
    non-finite floats, ints past the 4,300-digit limit, big-endian and mutable bit strings, values json refuses):
    the same text, or the same exception type."""
    report = Report.trusted(protocol, fp, payload)
    assert _outcome(Report.to_json, report) == _outcome(_reference_json, report)


_LOWER = "abcdefghijklmnopqrstuvwxyz"


# hypothesis examples: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@settings(max_examples=300, deadline=None)
# the languages [a-z][a-z0-9_-]{0,31}, [0-9a-f]{16}, [a-z][a-z0-9_]{0,31} and [01]{1,200}, each string drawn as one
# choice (st.from_regex draws them a character at a time: most of this test's time went there)
@given(protocol=st.builds(str.__add__, st.sampled_from(_LOWER), st.text(alphabet=_LOWER + "0123456789_-", max_size=31)),
       fp=st.text(alphabet="0123456789abcdef", min_size=16, max_size=16),
       payload=st.dictionaries(st.builds(str.__add__, st.sampled_from(_LOWER),
                                         st.text(alphabet=_LOWER + "0123456789_", max_size=31)),
                               st.one_of(st.integers(0, MAX_UINT), st.text(alphabet="01", min_size=1, max_size=200)),
                               min_size=1, max_size=16))
def test_any_valid_report_is_written_as_the_reference(protocol: str, fp: str, payload: dict[str, Any]) -> None:
    report = Report(protocol, fp, payload)
    line = report.to_json()
    assert line == _reference_json(report)
    assert parse_json(line) == report


def test_reports_of_the_encoders_and_the_parser_need_no_json_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixed-shape writer covers every report an encoder or the parser makes (uint and bit-string fields):
    the json encoder is only the way out for what ``Report.trusted`` alone could hold."""

    class NoEncoder:
        def encode(self, obj: Any) -> str:
            raise AssertionError(f"json encoder used for {obj!r}")

    # the encoders are built first: a params class's checks size its longest line once, through the encoder
    # (ldp.wire.max_line_bytes, cached), which is not a report's JSON
    encoders = [(encoder, values) for protocol in PROTOCOLS for encoder, values in _encoders(protocol)]
    monkeypatch.setattr("ldp.wire._LINE_ENCODER", NoEncoder())
    for encoder, values in encoders:
        report = encoder.encode(values[0])
        assert report.to_json() == _reference_json(report)
        assert parse_json(report.to_json()).to_json() == _reference_json(report)


@pytest.mark.parametrize("version", [True, 1.0, Small.one, "1"])
def test_a_version_not_an_int_is_left_to_the_encoder(version: Any) -> None:
    report = Report.trusted("grr", "0" * 16, {"index": 3})
    report.__dict__["version"] = version  # only by force: Report() refuses it and trusted() writes 1
    assert report.to_json() == _reference_json(report)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.sampled_from([Small.one, -0.0])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(obj=JSON_VALUES)
def test_canonical_json_is_the_reference(obj: Any) -> None:
    """Sorted keys, unicode and control characters escaped, floats as ``float.__repr__``, NaN and infinities
    refused (``ValueError``) as by the reference."""
    assert _outcome(canonical_json, obj) == _outcome(_reference_canonical, obj)


def _reference_envelope(env: Envelope) -> str:
    return json.dumps({"spec": env.spec, "metric": env.metric, "window": env.window, "report": env.report.to_dict()},
                      separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(spec=st.one_of(NAMES, NAMES.map(Name), st.none()), metric=st.one_of(NAMES, st.integers()),
       window=st.one_of(st.integers(), st.sampled_from([True, 2**64, 2**65, 10**4300, 1.5, None])),
       payload=st.dictionaries(NAMES, VALUES, max_size=4))
def test_any_envelope_is_written_as_the_reference(spec: Any, metric: Any, window: Any, payload: dict[Any, Any]) -> None:
    """``Envelope.to_json`` (the client's outbox line, the ingest service's canonical line) builds no encoder either,
    and writes the reference's bytes, or fails as it does, whatever its fields hold."""
    env = Envelope(spec, metric, window, Report.trusted("grr", "0" * 16, payload))
    assert _outcome(Envelope.to_json, env) == _outcome(_reference_envelope, env)
