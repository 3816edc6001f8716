"""DAP-09 reports and HPKE in :mod:`ldp.prio` (the native client's ``ldp_client::dap`` through the binding).

A report sealed by Python opens for each aggregator only, and its shares verify and aggregate to the measurements for
the four types; every field of a report tampered with is refused at opening; encodings round-trip and every refusal
is a :class:`~ldp.errors.PrioError` naming its operation (hypothesis feeds the decoders arbitrary and mutated bytes:
nothing but ``PrioError`` comes out); RFC 9180's published vectors open through ``hpke_open``; and the reports the
Rust API makes (``clients/rust/tests/data/dap_reports.json``, which a Rust test keeps equal to what the Rust and C
APIs make) open and verify to their measurements here."""

from __future__ import annotations

import json
import os
import pickle
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from prio_support import DRAFTS, ROOT, binding, make, refused as _refused

from ldp.errors import PrioError

TASK = bytes(range(32))
KEY = bytes(32 * [7])
INFO = b"dap-09 input share\x01"
RUST_DATA = ROOT / "clients" / "rust" / "tests" / "data"


def _open(prio: Any, key: Any, role: str, report: Any, **changes: Any) -> bytes:
    args = {"task_id": TASK, "report_id": report.report_id, "time": report.time, "public_share": report.public_share,
            "ciphertext": report.leader_ciphertext if role == "leader" else report.helper_ciphertext}
    args.update(changes)
    result: bytes = prio.open_input_share(key, role=role, **args)
    return result


def _verify(vdaf: Any, report_id: bytes, public: bytes, inputs: list[bytes]) -> list[Any]:
    pairs = [vdaf.verify_init(KEY[:vdaf.verify_key_size], i, report_id, public, s) for i, s in enumerate(inputs)]
    message = vdaf.verifier_shares_to_message([share for _, share in pairs])
    return [vdaf.verify_next(state, message) for state, _ in pairs]


def _aad(report_id: bytes, time: int, public: bytes, task: bytes = TASK) -> bytes:
    """DAP-09's InputShareAad, written out from the draft's text."""
    return task + report_id + struct.pack(">QI", time, len(public)) + public


def _ciphertext(config_id: int, enc: bytes, payload: bytes) -> bytes:
    """DAP-09's HpkeCiphertext, written out from the draft's text."""
    return struct.pack(">BH", config_id, len(enc)) + enc + struct.pack(">I", len(payload)) + payload


def _config(config_id: int, kem: int, kdf: int, aead: int, key: bytes) -> bytes:
    """DAP-09's HpkeConfig, written out from the draft's text."""
    return struct.pack(">BHHHH", config_id, kem, kdf, aead, len(key)) + key


CASES = [
    ("Prio3Count", {}, [1, 0, 1, True]),
    ("Prio3Sum", {"max_measurement": 1000}, [0, 1000, 17]),
    ("Prio3SumVec", {"length": 3, "max_measurement": 300}, [[1, 2, 300], [0, 5, 1]]),
    ("Prio3Histogram", {"length": 5}, [4, 0, 4, 2]),
]


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize(("name", "params", "measurements"), CASES, ids=[c[0] for c in CASES])
def test_python_reports_open_and_verify_to_the_measurements(prio: Any, keys: tuple[Any, Any], name: str,
                                                           params: dict[str, Any], measurements: list[Any],
                                                           draft: int) -> None:
    leader, helper = keys
    vdaf = make(prio, name, draft, ctx=TASK, **params)  # draft 08: its bits, no context string
    aggregates = [vdaf.aggregate_init(), vdaf.aggregate_init()]
    ids = set()
    for i, m in enumerate(measurements):
        data = prio.seal_report(vdaf, m, task_id=TASK, time=1_700_000_000 + i, time_precision=3600,
                                leader=leader.config, helper=helper.config)
        report = prio.DapReport.from_bytes(data)
        assert report.to_bytes() == data and report.time == 1_699_999_200 and len(report.report_id) == 16
        ids.add(report.report_id)
        inputs = [_open(prio, leader, "leader", report), _open(prio, helper, "helper", report)]
        for agg, out in zip(aggregates, _verify(vdaf, report.report_id, report.public_share, inputs), strict=True):
            agg.accumulate(out)
    assert len(ids) == len(measurements)
    result = vdaf.unshard(aggregates, len(measurements))
    if isinstance(measurements[0], list):
        assert result == [sum(column) for column in zip(*measurements, strict=True)]
    elif name == "Prio3Histogram":
        assert result == [measurements.count(b) for b in range(params["length"])]
    else:
        assert result == sum(measurements)


def test_given_randomness_gives_the_vdafs_shares(prio: Any, keys: tuple[Any, Any]) -> None:
    leader, helper = keys
    vdaf = prio.Prio3Histogram(length=4, ctx=TASK)
    rid, rand = bytes(range(16)), bytes(range(vdaf.rand_size))
    one = prio.DapReport.from_bytes(prio.seal_report(vdaf, 2, task_id=TASK, time=5, leader=leader.config,
                                                     helper=helper.config, report_id=rid, rand=rand))
    two = prio.DapReport.from_bytes(prio.seal_report(vdaf, 2, task_id=TASK, time=5, leader=leader.config,
                                                     helper=helper.config, report_id=rid, rand=rand))
    nonce, public, inputs = vdaf.shard(2, nonce=rid, rand=rand)
    assert one.report_id == two.report_id == nonce and one.public_share == two.public_share == public
    assert one.leader_ciphertext != two.leader_ciphertext  # a fresh ephemeral key each time
    for report in (one, two):
        assert [_open(prio, leader, "leader", report), _open(prio, helper, "helper", report)] == inputs


def test_every_tampered_field_is_refused_at_opening(prio: Any, keys: tuple[Any, Any]) -> None:
    leader, helper = keys
    vdaf = prio.Prio3SumVec(length=2, max_measurement=10, ctx=TASK)
    report = prio.DapReport.from_bytes(prio.seal_report(vdaf, [3, 4], task_id=TASK, time=120, time_precision=60,
                                                        leader=leader.config, helper=helper.config))
    assert _open(prio, leader, "leader", report)  # the honest report opens
    flip = bytearray(report.public_share)
    flip[0] ^= 1
    tampered: dict[str, dict[str, Any]] = {
        "task": {"task_id": bytes(32)},
        "report id": {"report_id": bytes(16)},
        "time": {"time": report.time + 60},
        "public share": {"public_share": bytes(flip)},
        "public share dropped": {"public_share": b""},
    }
    for what, change in tampered.items():
        for key, role in ((leader, "leader"), (helper, "helper")):
            error = _refused(lambda key=key, role=role, change=change: _open(prio, key, role, report, **change),
                             "open", "does not open")
            assert "sealed to another key" in str(error), what
    # The ciphertext itself: its encapsulated key, its payload (ciphertext and tag), its config id.
    ct = report.leader_ciphertext
    for at in (3, 3 + 32 + 4, len(ct) - 1):
        bad = bytearray(ct)
        bad[at] ^= 0x80
        _refused(lambda bad=bad: _open(prio, leader, "leader", report, ciphertext=bytes(bad)), "open")
    _refused(lambda: _open(prio, leader, "leader", report, ciphertext=bytes([2]) + ct[1:]), "open", "config 2")
    _refused(lambda: _open(prio, leader, "leader", report, ciphertext=ct[:-1]), "open", "malformed")
    _refused(lambda: _open(prio, leader, "leader", report, ciphertext=ct + b"\x00"), "open", "trailing")
    # Another aggregator's share, key or role.
    _refused(lambda: _open(prio, leader, "helper", report, ciphertext=ct), "open", "does not open")
    _refused(lambda: _open(prio, helper, "helper", report, ciphertext=ct), "open", "config 1")
    other = prio.HpkeKeypair.generate(1)
    _refused(lambda: _open(prio, other, "leader", report), "open", "does not open")
    _refused(lambda: _open(prio, leader, "collector", report), "open", "role")
    _refused(lambda: _open(prio, leader, "leader", report, task_id=TASK[:31]), "open", "task_id")
    _refused(lambda: _open(prio, leader, "leader", report, report_id=b"x" * 17), "open", "report_id")
    _refused(lambda: _open(prio, leader, "leader", report, time=-1), "open", "time")
    with pytest.raises(TypeError):
        _open(prio, leader, "leader", report, time="120")


def test_plaintexts_with_extensions_or_malformed_are_refused(prio: Any, keys: tuple[Any, Any]) -> None:
    leader, _ = keys
    rid, time, public = bytes(16), 60, b""
    aad, info = _aad(rid, time, public), INFO + b"\x02"
    extension = struct.pack(">HH", 0xFF00, 3) + b"abc"
    with_ext = struct.pack(">H", len(extension)) + extension + struct.pack(">I", 2) + b"hi"
    plain = struct.pack(">HI", 0, 2) + b"hi"
    for plaintext, words in [(plain, ()), (with_ext, ("extension", "0xff00")), (b"\x00", ("malformed",)),
                             (plain + b"!", ("trailing",))]:
        ct = prio.hpke_seal(leader.config, info, aad, plaintext)

        def call(ct: bytes = ct) -> bytes:
            result: bytes = prio.open_input_share(leader, role="leader", task_id=TASK, report_id=rid, time=time,
                                                  public_share=public, ciphertext=ct)
            return result

        if not words:
            assert call() == b"hi"  # the encodings written here are DAP's: a plain share opens
        else:
            _refused(call, "open", *words)


def test_configs_keypairs_and_lists_round_trip(prio: Any, keys: tuple[Any, Any]) -> None:
    leader, helper = keys
    c = leader.config
    assert (c.id, c.kem_id, c.kdf_id, c.aead_id, len(c.public_key)) == (1, 0x20, 1, 1, 32)
    assert c.to_bytes() == _config(1, 0x20, 1, 1, c.public_key)
    again = prio.HpkeConfig.from_bytes(c.to_bytes())
    assert again == c and hash(again) == hash(c) and again != helper.config
    assert pickle.loads(pickle.dumps(c)) == c
    assert "private" in repr(leader) and leader.private_key.hex() not in repr(leader)
    pair = prio.HpkeKeypair.from_bytes(c.to_bytes(), leader.private_key)
    assert pair.config == c and pair.private_key == leader.private_key
    listed = prio.encode_hpke_config_list([c, helper.config])
    assert listed == struct.pack(">H", len(listed) - 2) + c.to_bytes() + helper.config.to_bytes()
    assert prio.decode_hpke_config_list(listed) == [c, helper.config]
    # A suite the binding does not seal with still decodes (a list may carry it) and lists.
    p384 = prio.HpkeConfig.from_bytes(_config(9, 0x11, 2, 2, b"\x04" * 97))
    assert (p384.kem_id, p384.kdf_id, p384.aead_id) == (0x11, 2, 2)
    assert prio.decode_hpke_config_list(prio.encode_hpke_config_list([p384, c])) == [p384, c]
    report = prio.seal_report(prio.Prio3Count(ctx=b""), 1, task_id=TASK, time=0, leader=c, helper=helper.config)
    assert prio.DapReport.from_bytes(report).to_bytes() == report


def test_refusals_name_their_operation(prio: Any, keys: tuple[Any, Any]) -> None:
    leader, helper = keys
    c = leader.config.to_bytes()
    # Decoding.
    _refused(lambda: prio.HpkeConfig.from_bytes(c[:-1]), "decode", "malformed")
    _refused(lambda: prio.HpkeConfig.from_bytes(c + b"\x00"), "decode", "trailing")
    _refused(lambda: prio.HpkeConfig.from_bytes(_config(1, 0x20, 1, 1, b"")), "decode", "empty")
    _refused(lambda: prio.decode_hpke_config_list(b"\x00\x00"), "decode", "empty")
    _refused(lambda: prio.decode_hpke_config_list(struct.pack(">H", 2 * len(c)) + c + c), "decode", "repeats")
    _refused(lambda: prio.decode_hpke_config_list(struct.pack(">H", len(c)) + c + b"\x00"), "decode", "trailing")
    _refused(lambda: prio.DapReport.from_bytes(b""), "decode", "malformed")
    report = prio.seal_report(prio.Prio3Count(ctx=b""), 0, task_id=TASK, time=0, leader=leader.config,
                              helper=helper.config)
    _refused(lambda: prio.DapReport.from_bytes(report[:-1]), "decode", "malformed")
    _refused(lambda: prio.DapReport.from_bytes(report + b"\x00"), "decode", "trailing")
    # Key pairs.
    _refused(lambda: prio.HpkeKeypair.from_bytes(c, helper.private_key), "decode", "not the key")
    _refused(lambda: prio.HpkeKeypair.from_bytes(c, b"short"), "decode")
    unsupported = _config(1, 0x11, 1, 1, b"\x04" * 97)
    _refused(lambda: prio.HpkeKeypair.from_bytes(unsupported, bytes(48)), "decode", "0x0011")
    _refused(lambda: prio.HpkeKeypair.generate(256), "parameters", "config_id")
    _refused(lambda: prio.HpkeKeypair.generate(-1), "parameters", "config_id")
    with pytest.raises(TypeError):
        prio.HpkeKeypair.generate("1")
    # Lists.
    _refused(lambda: prio.encode_hpke_config_list([]), "encode", "empty")
    _refused(lambda: prio.encode_hpke_config_list([leader.config, leader.config]), "encode", "repeats")
    with pytest.raises(TypeError):
        prio.encode_hpke_config_list([c])
    # Sealing a report.
    vdaf = prio.Prio3Sum(max_measurement=10, ctx=b"")
    args: dict[str, Any] = {"task_id": TASK, "time": 0, "leader": leader.config, "helper": helper.config}
    _refused(lambda: prio.seal_report(vdaf, 11, **args), "shard", "measurement")
    _refused(lambda: prio.seal_report(vdaf, 1, **{**args, "task_id": TASK[:31]}), "seal", "task_id")
    _refused(lambda: prio.seal_report(vdaf, 1, **{**args, "time": -5}), "seal", "time")
    _refused(lambda: prio.seal_report(vdaf, 1, **args, time_precision=0), "seal", "time_precision")
    _refused(lambda: prio.seal_report(vdaf, 1, **args, report_id=bytes(15)), "seal", "report_id")
    _refused(lambda: prio.seal_report(vdaf, 1, **args, rand=bytes(3)), "shard", "rand")
    _refused(lambda: prio.seal_report(vdaf, 1, **{**args, "helper": leader.config}), "seal", "same public key")
    p384 = prio.HpkeConfig.from_bytes(unsupported)
    _refused(lambda: prio.seal_report(vdaf, 1, **{**args, "helper": p384}), "seal", "helper", "0x0011")
    bad_point = prio.HpkeConfig.from_bytes(_config(3, 0x10, 1, 1, b"\x04" + b"\xff" * 64))
    _refused(lambda: prio.seal_report(vdaf, 1, **{**args, "leader": bad_point}), "seal", "leader", "P-256")
    three = prio.Prio3Sum(max_measurement=10, ctx=b"", num_aggregators=3)
    _refused(lambda: prio.seal_report(three, 1, **args), "seal", "two aggregators")
    with pytest.raises(TypeError):
        prio.seal_report(object(), 1, **args)
    with pytest.raises(TypeError):
        prio.seal_report(vdaf, "1", **args)
    # HPKE.
    _refused(lambda: prio.hpke_seal(p384, b"", b"", b"x"), "seal", "0x0011")
    sealed = prio.hpke_seal(leader.config, b"info", b"aad", b"secret")
    assert prio.hpke_open(leader, b"info", b"aad", sealed) == b"secret"
    _refused(lambda: prio.hpke_open(leader, b"info", b"other", sealed), "open", "does not open")
    _refused(lambda: prio.hpke_open(leader, b"other", b"aad", sealed), "open", "does not open")
    _refused(lambda: prio.hpke_open(helper, b"info", b"aad", sealed), "open", "config 1")
    _refused(lambda: prio.hpke_open(leader, b"info", b"aad", sealed[:2]), "open", "malformed")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_decoders_raise_nothing_but_prio_errors_on_arbitrary_bytes(data: bytes) -> None:
    prio = binding()
    for decode in (prio.DapReport.from_bytes, prio.HpkeConfig.from_bytes, prio.decode_hpke_config_list):
        try:
            decoded = decode(data)
        except PrioError as e:
            assert e.operation == "decode"
        else:
            encoded = (prio.encode_hpke_config_list(decoded) if isinstance(decoded, list) else decoded.to_bytes())
            assert encoded == data  # whatever decodes encodes back to the same bytes


def _valid_encodings() -> list[bytes]:
    prio = binding()
    leader, helper = prio.HpkeKeypair.generate(1), prio.HpkeKeypair.generate(2)
    report = prio.seal_report(prio.Prio3Histogram(length=3, ctx=b""), 1, task_id=TASK, time=7, leader=leader.config,
                              helper=helper.config)
    return [report, leader.config.to_bytes(), prio.encode_hpke_config_list([leader.config, helper.config])]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2), st.data())
def test_decoders_raise_nothing_but_prio_errors_on_mutated_encodings(which: int, data: st.DataObject) -> None:
    prio = binding()
    base = bytearray(_valid_encodings()[which])
    action = data.draw(st.sampled_from(["flip", "cut", "extend", "length"]), label="mutation")
    if action == "flip":
        at = data.draw(st.integers(0, len(base) - 1), label="at")
        base[at] ^= data.draw(st.integers(1, 255), label="xor")
    elif action == "cut":
        base = base[:data.draw(st.integers(0, len(base) - 1), label="keep")]
    elif action == "extend":
        base += data.draw(st.binary(min_size=1, max_size=8), label="tail")
    else:  # a length prefix set to anything
        at = data.draw(st.integers(0, max(0, len(base) - 4)), label="at")
        base[at:at + 4] = struct.pack(">I", data.draw(st.integers(0, 2**32 - 1), label="length"))
    for decode in (prio.DapReport.from_bytes, prio.HpkeConfig.from_bytes, prio.decode_hpke_config_list):
        try:
            decode(bytes(base))
        except PrioError as e:
            assert e.operation == "decode"


def _rfc9180_vectors() -> list[dict[str, Any]]:
    doc = json.loads((RUST_DATA / "rfc9180_base.json").read_text())
    assert "RFC 9180" in doc["source"]
    vectors: list[dict[str, Any]] = doc["vectors"]
    return vectors


@pytest.mark.parametrize("vector", _rfc9180_vectors(), ids=lambda v: v["suite"])
def test_rfc9180_vectors_open_through_hpke_open(prio: Any, vector: dict[str, Any]) -> None:
    h = bytes.fromhex
    config = _config(5, vector["kem_id"], vector["kdf_id"], vector["aead_id"], h(vector["pkRm"]))
    keypair = prio.HpkeKeypair.from_bytes(config, h(vector["skRm"]))
    first = vector["encryptions"][0]
    assert first["sequence_number"] == 0  # the single-shot seal's encryption
    info, aad, pt = h(vector["info"]), h(first["aad"]), h(first["pt"])
    published = _ciphertext(5, h(vector["enc"]), h(first["ct"]))
    assert prio.hpke_open(keypair, info, aad, published) == pt
    _refused(lambda: prio.hpke_open(keypair, info, h(vector["encryptions"][1]["aad"]), published), "open")
    # A seal to the vector's recipient (a fresh ephemeral key: not the vector's bytes) opens with its private key.
    fresh = prio.hpke_seal(keypair.config, info, aad, pt)
    assert fresh != published and prio.hpke_open(keypair, info, aad, fresh) == pt
    assert len(fresh) == len(published)


def test_reports_made_by_the_rust_api_open_and_verify_here(prio: Any) -> None:
    doc = json.loads((RUST_DATA / "dap_reports.json").read_text())
    assert doc["draft"] == "draft-ietf-ppm-dap-09"
    task, ctx = bytes.fromhex(doc["task_id"]), bytes.fromhex(doc["ctx"])
    leader, helper = (prio.HpkeKeypair.from_bytes(bytes.fromhex(doc[k]["config"]), bytes.fromhex(doc[k]["private_key"]))
                      for k in ("leader", "helper"))
    assert len(doc["reports"]) == 4
    for case in doc["reports"]:
        params = {k: v for k, v in case["vdaf"].items() if k != "type"}
        vdaf = getattr(prio, case["vdaf"]["type"])(ctx=ctx, **params)
        report = prio.DapReport.from_bytes(bytes.fromhex(case["report"]))
        precision = case["time_precision"]
        assert report.report_id.hex() == case["report_id"]
        assert report.time == case["time"] - case["time"] % precision
        inputs = [prio.open_input_share(key, role=role, task_id=task, report_id=report.report_id, time=report.time,
                                        public_share=report.public_share, ciphertext=ct)
                  for key, role, ct in ((leader, "leader", report.leader_ciphertext),
                                        (helper, "helper", report.helper_ciphertext))]
        # The Rust API's shares are the Python binding's for the same nonce and sharding randomness.
        _, public, shares = vdaf.shard(case["measurement"], nonce=report.report_id,
                                       rand=bytes.fromhex(case["vdaf_rand"]))
        assert report.public_share == public and inputs == shares
        outs = _verify(vdaf, report.report_id, report.public_share, inputs)
        result = vdaf.unshard([vdaf.aggregate([outs[0]]), vdaf.aggregate([outs[1]])], 1)
        m = case["measurement"]
        if case["vdaf"]["type"] == "Prio3Histogram":
            assert result == [int(b == m) for b in range(params["length"])]
        else:
            assert result == m
        # Python seals the same measurement the same way, but for the ephemeral keys.
        again = prio.DapReport.from_bytes(prio.seal_report(
            vdaf, m, task_id=task, time=case["time"], time_precision=precision, leader=leader.config,
            helper=helper.config, report_id=report.report_id, rand=bytes.fromhex(case["vdaf_rand"])))
        assert (again.report_id, again.time, again.public_share) == (report.report_id, report.time,
                                                                     report.public_share)
        assert len(again.to_bytes()) == len(report.to_bytes())


def test_the_binding_is_the_native_clients_code() -> None:
    """bindings/prio depends on clients/rust by path, so DAP and HPKE live in one place."""
    manifest = (ROOT / "bindings" / "prio" / "Cargo.toml").read_text()
    assert 'ldp-telemetry-client = { path = "../../clients/rust"' in manifest
    assert os.path.exists(ROOT / "clients" / "rust" / "src" / "dap.rs")
    assert Path(ROOT / "MANIFEST.in").read_text().count("clients/rust") >= 2


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_many_shares_open_as_each_opens_alone(prio: Any, keys: tuple[Any, Any], threads: int) -> None:
    """``open_input_shares`` (the leader's door on many reports, spread over the cores) against
    ``open_input_share`` report by report: the same payloads, ``None`` exactly where one is refused (a tampered or
    truncated ciphertext, another aggregator's share, another report's metadata, bytes that are no ciphertext)."""
    vdaf = make(prio, "Prio3Histogram", 18, length=4)
    leader, helper = keys
    reports = [prio.DapReport.from_bytes(prio.seal_report(vdaf, i % 4, task_id=TASK, time=3600 * (i + 1),
                                                          leader=leader.config, helper=helper.config))
               for i in range(40)]
    items: list[tuple[bytes, int, bytes, bytes]] = []
    for i in range(130):  # 130 items: several parts of 32 or more, the faults spread over them
        r = reports[i % len(reports)]
        sealed = bytes(r.leader_ciphertext)
        item = [bytes(r.report_id), r.time, bytes(r.public_share), sealed]
        if i % 7 == 3:
            item[3] = sealed[:-1] + bytes([sealed[-1] ^ 1])  # tampered
        elif i % 11 == 5:
            item[3] = bytes(r.helper_ciphertext)  # the helper's share
        elif i % 13 == 6:
            item[1] = r.time + 1  # another report's metadata
        elif i % 17 == 8:
            item[3] = sealed[:5]  # no ciphertext
        items.append((item[0], item[1], item[2], item[3]))
    prio.set_batch_threads(threads)
    try:
        many = prio.open_input_shares(leader, role="leader", task_id=TASK, reports=items)
    finally:
        prio.set_batch_threads(None)
    for (rid, time, public, sealed), got in zip(items, many, strict=True):
        try:
            alone: bytes | None = prio.open_input_share(leader, role="leader", task_id=TASK, report_id=rid, time=time,
                                                        public_share=public, ciphertext=sealed)
        except PrioError:
            alone = None
        assert got == alone
    assert sum(x is None for x in many) > 20 and sum(x is not None for x in many) > 60
    assert prio.open_input_shares(leader, role="leader", task_id=TASK, reports=[]) == []


def test_many_shares_refuse_malformed_arguments_whole(prio: Any, keys: tuple[Any, Any]) -> None:
    leader = keys[0]
    good = (bytes(16), 0, b"", b"\x01")
    with pytest.raises(TypeError, match=r"reports\[1\]"):
        prio.open_input_shares(leader, role="leader", task_id=TASK, reports=[good, [bytes(16), 0, b"", b""]])
    with pytest.raises(PrioError, match="report_id must be 16 bytes"):
        prio.open_input_shares(leader, role="leader", task_id=TASK, reports=[good, (bytes(15), 0, b"", b"")])
    with pytest.raises(PrioError, match=r"reports\[0\] must have 4 items"):
        prio.open_input_shares(leader, role="leader", task_id=TASK, reports=[good[:3]])
    with pytest.raises(PrioError, match="role"):
        prio.open_input_shares(leader, role="collector", task_id=TASK, reports=[good])
    with pytest.raises(PrioError, match="task_id must be 32 bytes"):
        prio.open_input_shares(leader, role="leader", task_id=TASK[:31], reports=[good])
    with pytest.raises(TypeError, match="time must be an int"):
        prio.open_input_shares(leader, role="leader", task_id=TASK, reports=[(bytes(16), "0", b"", b"")])
