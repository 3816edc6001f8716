"""The leader's door checks what it can before 201 (issue 84, item 1; :mod:`ldp.aggregators.door`): a valid report
with a padded helper share, and a report of another VDAF, are refused at the door with DAP's ``invalid_message`` and
counted (``refused_at_upload``), never taken to fail later; an upload whose ``Content-Type`` is not
``application/dap-report`` is refused by the route (415); any mutation of a valid report is taken with exact lengths
or refused with a DAP code, never an internal error; honest reports of the four types, sealed to a helper of any
supported KEM, are still taken."""

from __future__ import annotations

import secrets
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from two_aggregators import T0, handmade_report, prio, world

from ldp.aggregators import door
from ldp.errors import AggregatorError

DAP_REPORT = {"Content-Type": "application/dap-report"}
PAD = 1_000_000
"""The attack's padding: a report stays under the upload's 1 MiB, and some 65 of them made a job over 64 MiB."""
REPORT_CODES = {"invalid_message", "report_too_early", "report_too_late", "batch_collected", "report_replayed",
                "hpke_unknown_config_id", "hpke_decrypt_error"}
"""What the door refuses a report with (DAP-09's report errors, docs/two-aggregators.md §11)."""


def _opaque(n: int, data: bytes) -> bytes:
    return len(data).to_bytes(n, "big") + data


def _door(w: Any) -> dict[str, int]:
    return dict(w.leader.status()["tasks"][0]["refused_at_upload"])


def _split(ciphertext: bytes) -> tuple[int, bytes, bytes]:
    """An encoded ``HpkeCiphertext``'s config ID, ``enc`` and ``payload`` (DAP-09 §4.4.2)."""
    n = int.from_bytes(ciphertext[1:3], "big")
    return ciphertext[0], ciphertext[3:3 + n], ciphertext[7 + n:]


def _with_helper_ciphertext(body: bytes, config_id: int, enc: bytes, payload: bytes) -> bytes:
    """The report ``body`` re-encoded (DAP-09's ``Report``) with another helper ciphertext."""
    r = prio().DapReport.from_bytes(body)
    return (r.report_id + struct.pack(">Q", r.time) + _opaque(4, r.public_share) + r.leader_ciphertext
            + bytes([config_id]) + _opaque(2, enc) + _opaque(4, payload))


def _with_helper_extension(w: Any, data: bytes) -> bytes:
    """A valid report whose helper ``PlaintextInputShare`` carries one extension of ``data`` (sealed as DAP-09 says)."""
    p = prio()
    rid = secrets.token_bytes(16)
    _, public, (leader, helper) = w.task.prio3().shard(2, nonce=rid)
    body = handmade_report(w, public, leader, helper, rid)
    aad = w.task.task_id + rid + struct.pack(">Q", T0 + 5) + _opaque(4, public)
    extensions = _opaque(2, struct.pack(">H", 0xFF00) + _opaque(2, data))
    sealed = p.hpke_seal(w.helper_key.config, b"dap-09 input share\x01\x03", aad, extensions + _opaque(4, helper))
    return _with_helper_ciphertext(body, *_split(sealed))


@pytest.fixture
def app(tmp_path: Path) -> Any:
    from starlette.testclient import TestClient

    from ldp.aggregators.http import create_app

    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    return w, TestClient(create_app(w.leader)), f"/tasks/{w.task.id_text}/reports"


def test_a_padded_helper_share_is_refused_at_the_door_and_counted(app: Any) -> None:
    """The attack (issue 84): a valid report whose helper ciphertext is padded, its payload, its encapsulated key,
    the sealed share or its extensions. Each is refused with ``invalid_message`` over HTTP and counted; the honest
    report is still taken and counted once."""
    w, client, path = app
    body = w.report(2)
    config_id, enc, payload = _split(prio().DapReport.from_bytes(body).helper_ciphertext)
    rid = secrets.token_bytes(16)
    _, public, (leader, helper) = w.task.prio3().shard(1, nonce=rid)
    padded = [_with_helper_ciphertext(body, config_id, enc, payload + bytes(PAD)),
              _with_helper_ciphertext(body, config_id, enc + bytes(65_000), payload),  # a u16's length at most
              _with_helper_ciphertext(body, config_id, enc, payload[:-1]),
              handmade_report(w, public, leader, helper + bytes(PAD), rid),
              _with_helper_extension(w, bytes(60_000))]
    for i, report in enumerate(padded):
        r = client.put(path, content=report, headers=DAP_REPORT)
        assert r.status_code == 400, r.text
        doc = r.json()
        assert doc["code"] == "invalid_message" and doc["type"] == "urn:ietf:params:ppm:dap:error:invalidMessage"
        assert "helper's sealed share" in doc["detail"], doc
        assert _door(w) == {"invalid_message": i + 1}
    assert w.leader.pending(w.task.task_id) == []
    assert client.put(path, content=body, headers=DAP_REPORT).status_code == 201
    assert list(w.collect().sums) == [0, 0, 1, 0]


def test_what_padding_is_left_is_a_kems_key_and_the_helper_refuses_it(tmp_path: Path) -> None:
    """The door cannot know the helper's KEM: an X25519 report whose ``enc`` is grown to P-521's 133 bytes (the
    most a device can add: 101 bytes) is taken; the helper, which knows its key, refuses it in the job."""
    w = world(tmp_path, params={"length": 4}, min_batch_size=1)
    body = w.report(1)
    config_id, enc, payload = _split(prio().DapReport.from_bytes(body).helper_ciphertext)
    assert len(enc) == 32 and len(payload) == door.helper_payload_len(w.task.prio3())
    grown = _with_helper_ciphertext(body, config_id, enc + bytes(101), payload)
    w.leader.upload(w.task.task_id, grown)
    for extra in (1, 34, 102):  # 33, 66, 134 bytes: no supported KEM's
        with pytest.raises(AggregatorError, match="encapsulated key") as exc:
            w.leader.upload(w.task.task_id, _with_helper_ciphertext(w.report(1), config_id, enc + bytes(extra),
                                                                    payload))
        assert exc.value.code == "invalid_message"
    w.leader.upload(w.task.task_id, w.report(3))
    c = w.collect()
    assert list(c.sums) == [0, 0, 0, 1] and c.refused == {"hpke_decrypt_error": 1}
    assert _door(w) == {"invalid_message": 3}


@pytest.mark.parametrize(("vdaf", "params", "other", "measurement", "what"), [
    ("Prio3Histogram", {"length": 5}, ("Prio3Histogram", {"length": 4}), 3, "leader's input share"),
    ("Prio3Count", {}, ("Prio3Sum", {"max_measurement": 7}), 5, "leader's input share"),
    ("Prio3Sum", {"max_measurement": 7}, ("Prio3Sum", {"max_measurement": 100}), 50, "leader's input share"),
    ("Prio3Count", {}, ("Prio3SumVec", {"length": 2, "max_measurement": 1}), [1, 0], "public share"),
    ("Prio3Histogram", {"length": 4}, ("Prio3Count", {}), 1, "public share"),
], ids=["histogram-4-to-5", "sum-to-count", "sum-100-to-sum-7", "sumvec-to-count", "count-to-histogram"])
def test_a_report_of_another_vdaf_is_refused_at_the_door(tmp_path: Path, vdaf: str, params: dict[str, int],
                                                         other: tuple[str, dict[str, int]], measurement: Any,
                                                         what: str) -> None:
    """A device of another VDAF (or draft: Janus 0.7's VDAF-08 shares) gets ``invalid_message`` at once, not a 201
    and a ``vdaf_invalid`` later; the report is neither stored nor sent to the helper."""
    p = prio()
    w = world(tmp_path, vdaf=vdaf, params=params, min_batch_size=1)
    name, other_params = other
    sealed = p.seal_report(getattr(p, name)(ctx=w.task.task_id, **other_params), measurement, task_id=w.task.task_id,
                           time=T0 + 5, leader=w.leader_key.config, helper=w.helper_key.config)
    with pytest.raises(AggregatorError, match=what) as exc:
        w.leader.upload(w.task.task_id, sealed)
    assert (exc.value.code, exc.value.status) == ("invalid_message", 400)
    refusal = w.leader.upload_many(w.task.task_id, [sealed])[0]
    assert refusal is not None and refusal.code == "invalid_message"
    assert _door(w) == {"invalid_message": 2} and w.leader.pending(w.task.task_id) == []


@pytest.mark.parametrize(("content_type", "taken"), [
    (None, False), ("", False), ("application/octet-stream", False), ("text/plain", False),
    ("application/json", False), ("application/dap-hpke-config-list", False), ("application/dap-reports", False),
    ("application/dap-report", True), ("Application/DAP-Report", True),
    ("application/dap-report; charset=binary", True), ("APPLICATION/DAP-REPORT ;x=1", True),
])
def test_the_upload_is_an_application_dap_report(app: Any, content_type: str | None, taken: bool) -> None:
    """The media type compared case-insensitively, its parameters ignored (RFC 9110 §8.3.1); any other refused with
    415 and DAP's ``invalid_message``, before the body is read, and counted at the door."""
    w, client, path = app
    headers = {} if content_type is None else {"Content-Type": content_type}
    r = client.put(path, content=w.report(1), headers=headers)
    if taken:
        assert r.status_code == 201, r.text
        assert _door(w) == {}
        return
    assert r.status_code == 415, r.text
    doc = r.json()
    assert doc["code"] == "invalid_message" and doc["type"] == "urn:ietf:params:ppm:dap:error:invalidMessage"
    assert "application/dap-report" in doc["detail"] and r.headers["content-type"] == "application/problem+json"
    assert _door(w) == {"invalid_message": 1} and w.leader.pending(w.task.task_id) == []


def test_the_task_is_checked_before_the_media_type(app: Any) -> None:
    from ldp.aggregators import http, routes

    _, client, _ = app
    r = client.put(f"/tasks/{'A' * 43}/reports", content=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 404 and r.json()["code"] == "unrecognized_task"
    assert routes.DAP_REPORT == http.DAP_REPORT == DAP_REPORT["Content-Type"]
    assert routes.media_type(None) == "" and routes.media_type(" A/B ; c=d") == "a/b"


# a helper config of each KEM a device can seal to: the curve's generator as its public key (a valid point)
P256 = bytes.fromhex("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e"
                     "162bce33576b315ececbb6406837bf51f5")
P521 = bytes.fromhex("0400c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2"
                     "ffa8de3348b3c1856a429bf97e7e31c2e5bd66011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd"
                     "17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650")


def _config(kem_id: int, kdf_id: int, aead_id: int, public_key: bytes) -> Any:
    return prio().HpkeConfig.from_bytes(struct.pack(">BHHH", 9, kem_id, kdf_id, aead_id) + _opaque(2, public_key))


@pytest.mark.parametrize(("vdaf", "params", "draw", "total"), [
    ("Prio3Count", {}, lambda i: i % 2, lambda ms: [sum(ms)]),
    ("Prio3Sum", {"max_measurement": 100}, lambda i: i * 7 % 101, lambda ms: [sum(ms)]),
    ("Prio3SumVec", {"length": 3, "max_measurement": 2}, lambda i: [i % 3, 0, 2],
     lambda ms: [sum(m[j] for m in ms) for j in range(3)]),
    ("Prio3Histogram", {"length": 16}, lambda i: i % 16, lambda ms: [ms.count(v) for v in range(16)]),
])
def test_honest_reports_of_each_type_and_kem_are_taken(tmp_path: Path, vdaf: str, params: dict[str, int],
                                                       draw: Any, total: Any) -> None:
    """Honest reports still pass, one by one and many at once, sealed to the helper's X25519 config or to a
    helper of P-256 or P-521 (the door cannot know which): the sums are exact."""
    p = prio()
    w = world(tmp_path, vdaf=vdaf, params=params, min_batch_size=1)
    vdaf_obj = w.task.prio3()
    measurements = [draw(i) for i in range(12)]
    for m in measurements[:4]:
        w.leader.upload(w.task.task_id, w.report(m))
    assert w.leader.upload_many(w.task.task_id, [w.report(m) for m in measurements[4:]]) == [None] * 8
    for helper in (_config(0x0010, 0x0001, 0x0002, P256), _config(0x0012, 0x0003, 0x0003, P521)):
        sealed = p.seal_report(vdaf_obj, measurements[0], task_id=w.task.task_id, time=T0 + 5,
                               leader=w.leader_key.config, helper=helper)
        assert len(_split(p.DapReport.from_bytes(sealed).helper_ciphertext)[1]) == door.KEM_ENC_SIZES[helper.kem_id]
        door.check_report(vdaf_obj, p.DapReport.from_bytes(sealed))  # taken at the door, refused by the helper
    assert _door(w) == {}
    c = w.collect()
    assert c.report_count == 12 and list(c.sums) == total(measurements)


# -- any mutation of a valid report: taken with exact lengths, or refused with a DAP code --------------------------

_POSITION = st.integers(0, 1 << 20)
MUTATION = st.one_of(
    st.tuples(st.just("flip"), _POSITION, st.integers(1, 255)),
    st.tuples(st.just("truncate"), _POSITION),
    st.tuples(st.just("extend"), st.binary(min_size=1, max_size=300)),
    st.tuples(st.just("insert"), _POSITION, st.binary(min_size=1, max_size=40)),
    st.tuples(st.just("delete"), _POSITION, st.integers(1, 40)),
)


def _mutate(body: bytes, mutation: tuple[Any, ...]) -> bytes:
    kind, *args = mutation
    at = args[0] % (len(body) + 1) if kind != "extend" else len(body)
    if kind == "flip":
        if not body:
            return body
        at = min(at, len(body) - 1)
        return body[:at] + bytes([body[at] ^ args[1]]) + body[at + 1:]
    if kind == "truncate":
        return body[:at]
    if kind == "extend":
        return body + args[0]
    if kind == "insert":
        return body[:at] + args[1] + body[at:]
    return body[:at] + body[at + args[1]:]


@pytest.fixture(scope="module", params=[("Prio3Histogram", {"length": 4}), ("Prio3Count", {})],
                ids=["histogram", "count"])
def fuzzed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    vdaf, params = request.param
    return world(tmp_path_factory.mktemp("door"), vdaf=vdaf, params=params, min_batch_size=1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(MUTATION, min_size=1, max_size=3), st.integers(0, 1))
def test_a_mutated_report_is_taken_exactly_or_refused_with_a_code(fuzzed: Any, mutations: list[Any], m: int) -> None:
    w = fuzzed
    body = w.report(m)
    for mutation in mutations:
        body = _mutate(body, mutation)
    try:
        w.leader.upload(w.task.task_id, body)
    except AggregatorError as exc:
        assert exc.code in REPORT_CODES and exc.status in (400, 409), exc
        return
    p, vdaf = prio(), w.task.prio3()
    report = p.DapReport.from_bytes(body)
    stored = w.leader.task_state(w.task.task_id).stored[bytes(report.report_id)]
    assert stored.body == body and stored.share is not None
    assert len(stored.share) == vdaf.input_share_len(door.LEADER)
    vdaf.check_input_share(door.LEADER, stored.share)
    assert len(report.public_share) == vdaf.public_share_len
    _, enc, payload = _split(report.helper_ciphertext)
    assert len(enc) in door.KEM_ENC_SIZES.values() and len(payload) == door.helper_payload_len(vdaf)


def test_many_reports_at_once_are_taken_and_refused_as_one_by_one(tmp_path: Path) -> None:
    """``upload_many`` (the leader's shares opened in one call, over the cores: issue 86) against ``upload`` report
    by report on an identical leader (another store): the same refusal at every position and the same reports
    stored, for a mix of valid reports, tampered leader shares, another config, a time in the future and repeated
    report IDs (within the call), spread over more than one part of 32."""
    from ldp.aggregators.leader import Leader
    from ldp.storage import open_store

    p = prio()
    w = world(tmp_path, min_batch_size=1)
    twin = Leader([w.task], open_store(tmp_path / "twin-store"), w.leader_key, {w.task.task_id: w.verify_key},
                  w.helper, clock=lambda: w.now)
    bodies: list[bytes] = []
    for i in range(120):
        body = bytearray(w.report(i % 4, time=T0 + 5 + (10 ** 6 if i % 19 == 7 else 0)))
        sealed = bytes(p.DapReport.from_bytes(bytes(body)).leader_ciphertext)
        at = bytes(body).index(sealed)
        if i % 9 == 4:  # the leader's share tampered: its last byte
            body[at + len(sealed) - 1] ^= 1
        elif i % 23 == 11:  # sealed to another config ID
            body[at] ^= 0x40
        bodies.append(bytes(body))
    bodies += bodies[:5]  # the same reports again, in the same call
    expected: list[str | None] = []
    for body in bodies:
        try:
            twin.upload(w.task.task_id, body)
            expected.append(None)
        except AggregatorError as exc:
            expected.append(exc.code)
    got = [None if e is None else e.code for e in w.leader.upload_many(w.task.task_id, bodies)]
    assert got == expected
    assert {None, "hpke_decrypt_error", "hpke_unknown_config_id", "report_too_early", "report_replayed"} <= set(got)
    assert sorted(w.leader.pending(w.task.task_id)) == sorted(twin.pending(w.task.task_id))
    assert _door(w) == dict(twin.task_state(w.task.task_id).door)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["keep", "pad", "cut", "enc", "public", "garbage"]),
                          st.binary(min_size=1, max_size=40)), min_size=1, max_size=8))
def test_the_helpers_check_of_a_job_is_the_doors_check_of_each_report(tmp_path_factory: Any,
                                                                      picks: list[Any]) -> None:
    """``door.fits`` (the helper's check of a whole job, the VDAF's lengths read once) against ``check_report``
    report by report, on reports cut, padded, with another ``enc`` length, another public share or garbage."""
    p = prio()
    w = _fits_world(tmp_path_factory)
    pairs = []
    for measurement, how, noise in picks:
        r = p.DapReport.from_bytes(w.report([measurement, 3 - measurement, 1]))
        public, sealed = bytes(r.public_share), bytes(r.helper_ciphertext)
        if how == "pad":
            sealed = sealed + noise
        elif how == "cut":
            sealed = sealed[:max(0, len(sealed) - len(noise))]
        elif how == "enc":
            sealed = sealed[:1] + (len(noise) + 32).to_bytes(2, "big") + noise + sealed[3:]
        elif how == "public":
            public = public + noise
        elif how == "garbage":
            sealed = noise
        pairs.append((public, sealed))
    expected = []
    for public, sealed in pairs:
        try:
            door.check_report(w.task.prio3(), _Pair(public, sealed))
            expected.append(True)
        except AggregatorError:
            expected.append(False)
    assert door.fits(w.task.prio3(), pairs) == expected


class _Pair:
    def __init__(self, public_share: bytes, helper_ciphertext: bytes) -> None:
        self.public_share, self.helper_ciphertext = public_share, helper_ciphertext


_FITS_WORLD: dict[str, Any] = {}


def _fits_world(factory: Any) -> Any:
    if "w" not in _FITS_WORLD:
        _FITS_WORLD["w"] = world(factory.mktemp("fits"), vdaf="Prio3SumVec", params={"length": 3, "max_measurement": 3})
    return _FITS_WORLD["w"]
