"""Interoperability with VDAF draft 08, the draft deployed DAP clients speak, by vectors: every draft 08 test vector of
Prio3Count, Prio3Sum, Prio3SumVec and Prio3Histogram (``src/vdaf/test_vec/08`` of the ``prio`` crate 0.16.8, read
where cargo downloaded it) replayed through the Python binding (``draft=8``) byte for byte from the vector's input
shares on: each aggregator's ``verify_init`` (its prepare share), ``verifier_shares_to_message`` (the prepare
message), ``verify_next`` (the output shares), the aggregate shares (and their bytes and field elements read back)
and the result.

Sharding cannot be replayed from a draft 08 vector's randomness here: the crate 0.16.8 has no public sharding with
given randomness (the binding refuses ``rand=`` for draft 8, as checked below), so that step is checked byte for byte
in Rust by the crate's own ``prio3_test::check_test_vec`` (``bindings/prio/tests/vectors_08.rs``). Here the binding's
``shard`` with the vector's nonce makes shares of exactly the vector's lengths, which the crate's decoding takes and
which verify under the vector's key and unshard to the vector's measurement."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prio_support import binding, refused, vector_dir, vector_names

TYPES = ("Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram")
PARAMETERS = ("length", "bits", "chunk_length")
EXPECTED = sorted(f"{name}_{i}.json" for name in TYPES for i in (0, 1))
"""The crate 0.16.8's draft 08 vectors of the four types: two each, no negative ones."""
NAMES = vector_names(TYPES, draft=8)


def _load(name: str) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads((vector_dir(draft=8) / name).read_text())
    return vector


def _vdaf(prio: Any, name: str, vector: dict[str, Any]) -> Any:
    params = {k: vector[k] for k in PARAMETERS if k in vector}
    return getattr(prio, name)(draft=8, num_aggregators=vector["shares"], **params)


def _type(name: str) -> str:
    return name.split("_", 1)[0]


def _aggregate_result(name: str, vdaf: Any, measurements: list[Any]) -> Any:
    if name in ("Prio3Count", "Prio3Sum"):
        return sum(measurements)
    if name == "Prio3SumVec":
        return [sum(column) for column in zip(*measurements, strict=True)]
    return [measurements.count(b) for b in range(vdaf.length)]


def test_the_vectors_are_found() -> None:
    binding()
    assert NAMES == EXPECTED, NAMES
    assert vector_dir(draft=8).name == "08" and vector_dir(draft=8).parent.name == "test_vec"


@pytest.mark.parametrize("name", NAMES)
def test_vector_replays_byte_for_byte_from_its_input_shares(name: str) -> None:
    prio = binding()
    vector = _load(name)
    vdaf = _vdaf(prio, _type(name), vector)
    assert vdaf.draft == 8 and vdaf.ctx == b"" and vdaf.num_aggregators == vector["shares"]
    key = bytes.fromhex(vector["verify_key"])
    assert len(key) == vdaf.verify_key_size == 16
    outputs: list[list[Any]] = [[] for _ in range(vector["shares"])]
    for report in vector["prep"]:
        nonce, public = bytes.fromhex(report["nonce"]), bytes.fromhex(report["public_share"])
        states = []
        for agg, (input_share, want) in enumerate(zip(report["input_shares"], report["prep_shares"][0], strict=True)):
            vdaf.check_input_share(agg, bytes.fromhex(input_share))
            state, share = vdaf.verify_init(key, agg, nonce, public, bytes.fromhex(input_share))
            assert share.hex() == want, (name, agg)
            again = vdaf.verify_state_from_bytes(agg, state.to_bytes())  # the state survives its encoding
            assert again.to_bytes() == state.to_bytes() and again.agg_id == agg
            states.append(again if agg % 2 else state)
        message = vdaf.verifier_shares_to_message([bytes.fromhex(s) for s in report["prep_shares"][0]])
        assert [message.hex()] == report["prep_messages"]
        for agg, state in enumerate(states):
            out = vdaf.verify_next(state, message)
            assert state.used and len(out) == vdaf.output_len
            assert out.to_bytes().hex() == "".join(report["out_shares"][agg]), (name, agg)
            elements = [int.from_bytes(bytes.fromhex(x), "little") for x in report["out_shares"][agg]]
            assert out.field_elements() == elements
            outputs[agg].append(out)
    shares = []
    for agg, want in enumerate(vector["agg_shares"]):
        share = vdaf.aggregate(outputs[agg])
        assert share.to_bytes().hex() == want, (name, agg)
        assert vdaf.aggregate_share_from_bytes(share.to_bytes()).to_bytes() == share.to_bytes()
        assert vdaf.aggregate_share_from_field_elements(share.field_elements()).to_bytes() == share.to_bytes()
        shares.append(vdaf.aggregate_share_from_bytes(bytes.fromhex(want)))
    assert vdaf.unshard(shares, len(vector["prep"])) == vector["agg_result"]


@pytest.mark.parametrize("name", NAMES)
def test_shard_with_the_vectors_nonce_makes_shares_of_its_lengths(name: str) -> None:
    prio = binding()
    vector = _load(name)
    vdaf = _vdaf(prio, _type(name), vector)
    key = bytes.fromhex(vector["verify_key"])
    measurements = []
    for report in vector["prep"]:
        nonce, measurement = bytes.fromhex(report["nonce"]), report["measurement"]
        got_nonce, public, inputs = vdaf.shard(measurement, nonce=nonce)
        assert got_nonce == nonce
        assert len(public) == len(report["public_share"]) // 2 == vdaf.public_share_len
        assert [len(s) for s in inputs] == [len(s) // 2 for s in report["input_shares"]]
        assert [vdaf.input_share_len(i) for i in range(vdaf.num_aggregators)] == [len(s) for s in inputs]
        vdaf.check_public_share(public)
        for agg, share in enumerate(inputs):
            vdaf.check_input_share(agg, share)
        assert inputs != [bytes.fromhex(s) for s in report["input_shares"]]  # the randomness is the OS's
        pairs = [vdaf.verify_init(key, agg, nonce, public, share) for agg, share in enumerate(inputs)]
        message = vdaf.verifier_shares_to_message([share for _, share in pairs])
        outs = [vdaf.verify_next(state, message) for state, _ in pairs]
        assert vdaf.unshard([vdaf.aggregate([out]) for out in outs], 1) == _aggregate_result(
            _type(name), vdaf, [measurement])
        measurements.append(measurement)
    refused(lambda: vdaf.shard(measurements[0], nonce=nonce, rand=bytes.fromhex(vector["prep"][0]["rand"])),
            "shard", "draft 08", "0.16.8", "no public sharding with given randomness")
    assert vdaf.rand_size is None


@pytest.mark.parametrize("name", [n for n in NAMES if _type(n) in ("Prio3Sum", "Prio3SumVec")])
def test_max_measurement_of_all_ones_is_the_vectors_bits(name: str) -> None:
    """The aggregators build a draft 08 Sum or SumVec from ``max_measurement`` (``2**bits - 1``): the same VDAF as
    the vector's ``bits``."""
    prio = binding()
    vector = _load(name)
    by_bits = _vdaf(prio, _type(name), vector)
    params = {k: vector[k] for k in ("length", "chunk_length") if k in vector}
    by_max = getattr(prio, _type(name))(draft=8, num_aggregators=vector["shares"],
                                        max_measurement=2 ** vector["bits"] - 1, **params)
    assert by_max == by_bits and by_max.bits == vector["bits"] and by_max.max_measurement == 2 ** vector["bits"] - 1
    report = vector["prep"][0]
    state, share = by_max.verify_init(bytes.fromhex(vector["verify_key"]), 0, bytes.fromhex(report["nonce"]),
                                      bytes.fromhex(report["public_share"]), bytes.fromhex(report["input_shares"][0]))
    assert share.hex() == report["prep_shares"][0][0]
