"""Canonical bytes at the door (issue 57, item 1): every accepted line is stored in the clients' one serialization.

A line whose keys come in another order, with other separators, spaces, ``\\u`` escapes or a CRLF ending would
stand out in a shuffled segment and link its client's reports across windows. The rule
(:func:`~ldp.ingest.canonical.canonical_line`) keeps every conformance vector's line byte for byte (so it is
the clients' form); the same report in five formattings is stored as five identical lines by an ingest service and by a
replica; random key orders and whitespace come out as the client's bytes; the upload path's fast version
(:func:`~ldp.ingest.canonical.canonical_body`, from the validator's own pass) writes exactly what the line by
line reference does, with both line kernels; and the answer to the device is what it was.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from starlette.testclient import TestClient
from support import ROOT
from support.aggregate_files import assert_same_aggregate

from ldp.ingest.app import create_app
from ldp.ingest.canonical import _rewrite, canonical_body, canonical_line, canonical_lines
from ldp.ingest.config import IngestConfig, parse_config, token_sha256
from ldp.ingest.rejects import find_rejects
from ldp.ingest.upload import check_body, check_lines
from ldp.jobs import jsonl
from ldp.jobs.job import fold_files
from ldp.shuffler import decode_chunk
from ldp.spec import CollectionSpec, EnvelopeError

VECTORS = ROOT / "conformance" / "vectors"
SPEC_PATH = ROOT / "examples" / "collection.json"
SPEC = CollectionSpec.from_dict(json.loads(SPEC_PATH.read_text()))
SPECS = {SPEC.fingerprint: SPEC}
TOKEN = "canonical-door-token-0123456789abcdefghijklmnop"
EXAMPLE = [ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines()
           if ln.startswith(b'{"spec":"3455db860d356e46"')]
HOMEPAGE = next(ln for ln in EXAMPLE if b'"metric":"homepage"' in ln)  # rappor: payload {"cohort", "bits"}


def vector_lines() -> Iterator[tuple[str, dict[str, CollectionSpec], bytes]]:
    """Every report line of the conformance vectors: (file, its spec, the line)."""
    for path in sorted(VECTORS.glob("*.json")):
        doc = json.loads(path.read_text())
        if "cases" not in doc:
            continue
        spec = CollectionSpec.from_dict(doc["spec"])
        for case in doc["cases"]:
            for report in case["reports"]:
                yield path.name, {spec.fingerprint: spec}, report["line"].encode("ascii")


VECTOR_LINES = list(vector_lines())


# -- formatting a report otherwise ----------------------------------------------------------------------------


def escape(text: str, which: list[bool]) -> str:
    """``text`` as a JSON string, the characters flagged in ``which`` written as ``\\uXXXX``."""
    return '"' + "".join(f"\\u{ord(c):04x}" if w else c for c, w in zip(text, which, strict=False)) + '"'


def formatted(obj: Any, draw: Any) -> str:
    """``obj`` (a parsed envelope) as JSON, with ``draw(kind, ...)`` choosing key orders, whitespace, escapes and
    ``-0`` for zeros."""
    space = draw("space")
    if isinstance(obj, dict):
        keys = draw("order", list(obj))
        items = [f"{space}{escape(k, draw('escape', k))}{draw('space')}:{draw('space')}{formatted(obj[k], draw)}"
                 f"{draw('space')}" for k in keys]
        return "{" + ",".join(items) + "}"
    if isinstance(obj, str):
        return space + escape(obj, draw("escape", obj))
    if obj == 0 and draw("minus_zero"):
        return space + "-0"
    return space + json.dumps(obj)


def random_formatting(line: bytes, rng: random.Random) -> bytes:
    """``line`` with keys shuffled at every level, random JSON whitespace, some characters of its strings
    escaped and zeros written ``-0``: what another JSON library might send."""

    def draw(kind: str, arg: Any = None) -> Any:
        if kind == "space":
            return "".join(rng.choice(" \t\r") for _ in range(rng.choice((0, 0, 1, 2))))
        if kind == "order":
            return rng.sample(arg, len(arg))
        if kind == "escape":
            return [rng.random() < 0.2 for _ in arg]
        return rng.random() < 0.5  # minus_zero

    return (formatted(json.loads(line), draw) + draw("space")).encode("ascii")


SEEDS = st.integers(0, 2**64 - 1)
"""A formatting's random choices come from ``random.Random(seed)``, the seed drawn by hypothesis (a failure prints
it): ``st.randoms()`` makes each of a line's hundreds of choices a hypothesis draw, two thirds of these tests'
time, for no check of theirs (the formatting is one random variation, not shrunk choice by choice)."""


def five_formattings(line: bytes) -> list[bytes]:
    """The same report five ways, each a whole line: the client's, reordered keys, ``", "`` and ``": "``
    separators, a CRLF ending, and spaces, tabs and ``\\u`` escapes."""
    obj = json.loads(line)
    report = obj["report"]
    reordered = {"report": {"payload": dict(reversed(report["payload"].items())), "params": report["params"],
                            "protocol": report["protocol"], "v": 1},
                 "window": obj["window"], "metric": obj["metric"], "spec": obj["spec"]}
    spaced = (line.decode().replace('","', '" , \t"').replace('":', '"\t:  ').replace('{"', '{ "')
              .replace('"spec"', '"\\u0073pec"').replace(obj["metric"], "\\u" + f"{ord(obj['metric'][0]):04x}"
                                                          + obj["metric"][1:]))
    return [line + b"\n",
            json.dumps(reordered, separators=(",", ":")).encode() + b"\n",
            json.dumps(obj, separators=(", ", ": ")).encode() + b"\n",
            line + b"\r\n",
            b"  " + spaced.encode() + b" \t\n"]


# -- the rule ---------------------------------------------------------------------------------------------------


def test_every_conformance_line_is_canonical_and_taken_as_it_is() -> None:
    """Every vector line (every protocol, every parameter set, the widest payloads) comes out of the rule byte for
    byte, so the rule is the clients' form; and a body of them all is stored as it came, the very object (the
    template path took every line: nothing was written again)."""
    assert len(VECTOR_LINES) > 800
    by_file: dict[str, list[bytes]] = {}
    for name, specs, line in VECTOR_LINES:
        assert canonical_line(line, specs) == line, name
        by_file.setdefault(name, []).append(line)
    for name, lines in by_file.items():
        specs = next(s for n, s, _ in VECTOR_LINES if n == name)
        body = b"\n".join(lines) + b"\n"
        folder, spans = find_rejects(body, specs)
        assert not spans and folder.accepted == len(lines), name
        assert canonical_body(body, specs, folder, spans)[0] is body, name


def test_five_formattings_one_canonical_line() -> None:
    for line in (HOMEPAGE, *EXAMPLE[:3]):
        variants = five_formattings(line)
        assert len(set(variants)) == 5
        assert {canonical_line(v.rstrip(b"\n"), SPECS) for v in variants} == {line}
        body = b"".join(variants)
        assert canonical_lines(body, SPECS) == (line + b"\n") * 5
        assert check_body(body, SPECS).body == (line + b"\n") * 5


# hypothesis examples: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VECTOR_LINES), SEEDS)
def test_random_key_orders_and_whitespace(item: tuple[str, dict[str, CollectionSpec], bytes], seed: int) -> None:
    """canonical_line(random formatting of x) == canonical_line(x) == the client's bytes of x; and the upload
    path's rewrite of a line the validator accepted (no second check) writes the same bytes."""
    name, specs, line = item
    rng = random.Random(seed)
    other = random_formatting(line, rng)
    assert canonical_line(other, specs) == canonical_line(line, specs) == line, (name, other)
    assert _rewrite(other, specs) == line, (name, other)


def test_numbers_are_the_clients_integers_and_floats_are_refused() -> None:
    """A payload holds integers and bit strings only, the window an integer: ``-0`` is ``0`` and a big integer is
    written whole, while ``1.0``, ``1e0`` or ``0.0`` are refused (so no float is ever written again)."""
    line = next(ln for ln in EXAMPLE if b'"index":0}' in ln)
    assert canonical_line(line.replace(b'"index":0', b'"index":-0'), SPECS) == line
    big = line.replace(b'"window":20000', b'"window":9007199254740992')
    assert canonical_line(big.replace(b"9007199254740992", b" 9007199254740992 "), SPECS) == big
    for bad, reason in ((b'"index":0.0', "bad_value"), (b'"index":0e0', "bad_value"), (b'"index":-1', "bad_value")):
        with pytest.raises(EnvelopeError) as err:
            canonical_line(line.replace(b'"index":0', bad), SPECS)
        assert err.value.reason == reason
    for bad in (b'"window":20000.0', b'"window":2e4'):
        with pytest.raises(EnvelopeError) as err:
            canonical_line(line.replace(b'"window":20000', bad), SPECS)
        assert err.value.reason == "bad_window"


def test_nothing_to_drop_an_extra_field_is_rejected() -> None:
    """A field naming a client library (or anything else) is not dropped but rejected: the envelope, the report and
    the payload take no key beyond theirs, so an accepted line carries nothing but the report's meaning."""
    obj = json.loads(HOMEPAGE)
    for where, value, reason in ((obj, "ldp-js/1.2.3", "unknown_key"), (obj["report"], "ldp-js/1.2.3", "unknown_key"),
                                 (obj["report"]["payload"], 123, "payload_mismatch")):
        where["lib"] = value
        with pytest.raises(EnvelopeError) as err:
            canonical_line(json.dumps(obj), SPECS)
        assert err.value.reason == reason
        del where["lib"]


# -- the fast path against the reference --------------------------------------------------------------------------

REJECTED = [b"not json", b"{", b'{"spec":"not-a-fingerprint","metric":"dark_mode","window":20000,"report":{}}',
            EXAMPLE[0].replace(b'"window":20000', b'"window":20000.5'),
            EXAMPLE[0][:-1] + b',"lib":"x"}', EXAMPLE[1].replace(b'"report":{', b'"report":{"client":"kt",'),
            EXAMPLE[0].replace(b"b5da20e68b8ff562", b"0000000000000000"), "{\"spec\": \"caf\u00e9\"}".encode()]


@st.composite
def bodies(draw: Any) -> bytes:
    """Bodies of whole lines: client lines, the same reformatted, CRLF endings, runs of one line, blank and
    whitespace lines, junk and other rejected lines (some with CRLF endings)."""
    rng = random.Random(draw(SEEDS))
    out = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["client", "client", "client", "other", "blank", "rejected", "run"]))
        line = draw(st.sampled_from(EXAMPLE))
        if kind == "other":
            line = random_formatting(line, rng)
        elif kind == "blank":
            line = draw(st.sampled_from([b"", b" ", b"\t", b"\r", b" \r"]))
        elif kind == "rejected":
            line = draw(st.sampled_from(REJECTED))
        ending = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
        out.append((line + ending) * (draw(st.integers(2, 4)) if kind == "run" else 1))
    return b"".join(out)


# hypothesis examples: run untraced (the lines it runs are covered by other tests)
@pytest.mark.no_cover
@pytest.mark.parametrize("kernel", ["compiled", "numpy"])
def test_fast_path_writes_what_the_reference_writes(kernel: str) -> None:
    if kernel == "compiled" and jsonl._linekernel is None:
        pytest.skip("the compiled line kernel is not built")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonl, "LINE_KERNEL", kernel)
        differential()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies())
def differential(body: bytes) -> None:
    """canonical_body (from the validator's pass) == canonical_lines (line by line); each rejected line's span
    moved onto the same bytes; the counts those of the body as it came, and of the body as stored too (the
    stored body is its own canonical form)."""
    folder, spans = find_rejects(body, SPECS)
    stored, moved = canonical_body(body, SPECS, folder, spans)
    assert stored == canonical_lines(body, SPECS)
    assert [(s.reason, stored[s.start:s.end]) for s in moved] == [(s.reason, body[s.start:s.end]) for s in spans]
    if not folder.records:
        return
    counts, _ = check_lines(body, SPECS)
    checked = check_body(body, SPECS)
    assert checked.counts == counts and checked.body == stored and checked.rejects == moved
    again = check_body(stored, SPECS)
    assert again.counts == counts and again.body == stored


# -- through an ingest service and a replica ---------------------------------------------------------------------------


def make_config(tmp_path: Path, replica: bool) -> IngestConfig:
    doc: dict[str, Any] = {"data_dir": "data", "apps": {"demo": {"token_sha256": token_sha256(TOKEN),
                                                                  "specs": [str(SPEC_PATH)]}}}
    if replica:
        doc |= {"replica": "r1", "storage": {"url": str(tmp_path / "store")}}
    return parse_config(doc, tmp_path)


def post(c: TestClient, body: bytes, batch_id: str) -> Any:
    r = c.post("/v1/reports", content=body, headers={"Authorization": f"Bearer {TOKEN}", "Ldp-Batch-Id": batch_id,
                                                     "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    return r.json()


def stored(config: IngestConfig, replica: bool) -> list[bytes]:
    """Every line stored: the local ingest service's segments, or the replica's chunks in its store."""
    if replica:
        assert config.storage is not None
        store = config.storage.open()
        return [ln for k in store.list("apps/demo/incoming/") for b in decode_chunk(store.get(k))
                for ln in b.lines.splitlines(keepends=True)]
    folder = config.app_dir("demo") / "segments"
    return [ln for p in sorted(folder.rglob("*.jsonl")) for ln in p.read_bytes().splitlines(keepends=True)]


@pytest.mark.parametrize("replica", [False, True], ids=["collector", "replica"])
def test_five_formattings_are_stored_as_five_identical_lines(tmp_path: Path, replica: bool) -> None:
    config = make_config(tmp_path, replica)
    variants = five_formattings(HOMEPAGE)
    with TestClient(create_app(config)) as c:
        for i, v in enumerate(variants):
            assert post(c, v, f"f{i}") == {"batch_id": f"f{i}", "accepted": 1, "rejected": {}, "lines": 1,
                                           "duplicate": False}
    assert stored(config, replica) == [HOMEPAGE + b"\n"] * 5


@pytest.mark.parametrize("replica", [False, True], ids=["collector", "replica"])
def test_the_answer_is_unchanged_and_the_stored_lines_aggregate_alike(tmp_path: Path, replica: bool) -> None:
    """A batch of client lines, the same reports formatted otherwise, blank lines and rejected ones: the answer is
    the validator's counts of the body as sent; what is stored is the accepted lines canonical (blank lines
    dropped) and, by an ingest service, the rejected ones as they came (a replica keeps them out of its chunks);
    ``ldp fold`` of it counts the same accepted reports as that of the body as sent."""
    rng = random.Random(57)
    sent = [EXAMPLE[i] + b"\n" for i in range(0, 600, 7)]
    sent += [random_formatting(EXAMPLE[i], rng) + b"\r\n" for i in range(3, 600, 11)]
    sent += [b"\n", b" \t\r\n", b"not json\r\n", REJECTED[2] + b"\n", REJECTED[4] + b"\r\n"]
    rng.shuffle(sent)
    body = b"".join(sent)
    config = make_config(tmp_path, replica)
    with TestClient(create_app(config)) as c:
        answer = post(c, body, "mixed")
    counts, _ = check_lines(body, SPECS)
    assert {k: answer[k] for k in ("accepted", "rejected", "lines")} == counts.to_dict()
    assert answer["accepted"] == len(sent) - 5 and answer["lines"] == len(sent) - 2
    lines = stored(config, replica)
    rejected = {b"not json\r\n", REJECTED[2] + b"\n", REJECTED[4] + b"\r\n"}
    want = canonical_lines(body, SPECS).splitlines(keepends=True)
    if replica:  # a replica's chunks hold the accepted lines only: the rejected stay in its data folder (issue 70)
        want = [ln for ln in want if ln not in rejected]
        assert not rejected & set(lines)
    else:
        assert b"not json\r\n" in lines and REJECTED[4] + b"\r\n" in lines
    assert sorted(lines) == sorted(want)
    accepted = [ln for ln in lines if ln.startswith(b'{"spec":"3455db860d356e46"') and b'"lib"' not in ln]
    assert len(accepted) == answer["accepted"] and all(canonical_line(ln, SPECS) + b"\n" == ln for ln in accepted)
    (tmp_path / "sent.jsonl").write_bytes(body)
    (tmp_path / "stored.jsonl").write_bytes(b"".join(lines))
    got = fold_files([tmp_path / "stored.jsonl"], [SPEC_PATH], tmp_path / "a1", progress=False)
    want = fold_files([tmp_path / "sent.jsonl"], [SPEC_PATH], tmp_path / "a2", progress=False)
    assert got.accepted == want.accepted and got.rejected == ({} if replica else want.rejected)
    for name in want.aggregates:
        assert_same_aggregate(tmp_path / "a1" / "aggregates" / f"{name}.agg",
                              tmp_path / "a2" / "aggregates" / f"{name}.agg")
