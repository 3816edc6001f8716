"""Interoperability by vectors: every VDAF draft 18 test vector of Prio3Count, Prio3Sum, Prio3SumVec and
Prio3Histogram (the ``prio`` crate's ``src/vdaf/test_vec/18``, read where cargo downloaded the crate) replayed
through the Python binding, byte for byte: sharding with the vector's nonce and randomness (the public share and
every input share), each aggregator's ``verify_init`` (its verifier share), ``verifier_shares_to_message`` (the
verifier message), ``verify_next`` (the output shares), the aggregate shares (and their bytes read back) and the
result. A negative vector (``*_bad_*.json``) is refused, as a :class:`~ldp.errors.PrioError`, at the operation it
marks as failing, and every operation before it succeeds.

(Named ``test_prio_vectors.py``: file names are unique across the test folders, and ``tests/conformance`` has a
``test_vectors.py``.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from prio_support import binding, vector_dir, vector_names

TYPES = ("Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram")
PARAMETERS = ("length", "max_measurement", "chunk_length")
EXPECTED = {"Prio3Count": (3, 4), "Prio3Sum": (3, 0), "Prio3SumVec": (2, 0), "Prio3Histogram": (3, 4)}
"""Good and bad vectors per type in the crate's draft 18 folder: fewer means vectors went missing."""


def _vdaf(prio: Any, name: str, vector: dict[str, Any]) -> Any:
    params = {k: vector[k] for k in PARAMETERS if k in vector}
    return getattr(prio, name)(ctx=bytes.fromhex(vector["ctx"]), num_aggregators=vector["shares"], **params)


class VectorReplay:
    """What a replay of any VDAF's vector shares (Prio3's here, Poplar1's in test_poplar1_vectors.py): the VDAF, the
    vector, its verify key, the states, output and aggregate shares kept between operations, a report by index, and
    the shard operation, checked byte for byte against the vector's nonce, public share and input shares."""

    def __init__(self, vdaf: Any, vector: dict[str, Any]) -> None:
        self.vdaf, self.vector = vdaf, vector
        self.key = bytes.fromhex(vector["verify_key"])
        self.states: dict[Any, Any] = {}
        self.outputs: dict[tuple[int, int], Any] = {}
        self.aggregates: dict[int, Any] = {}

    def report(self, op: dict[str, Any]) -> dict[str, Any]:
        report: dict[str, Any] = self.vector["reports"][op["report_index"]]
        return report

    def shard(self, op: dict[str, Any]) -> tuple[bytes, bytes, list[bytes]]:
        report = self.report(op)
        nonce, public, inputs = self.vdaf.shard(report["measurement"], nonce=bytes.fromhex(report["nonce"]),
                                                rand=bytes.fromhex(report["rand"]))
        assert nonce.hex() == report["nonce"]
        assert public.hex() == report["public_share"]
        assert [s.hex() for s in inputs] == report["input_shares"]
        return nonce, public, inputs


class Replay(VectorReplay):
    """One vector's operations, in its order, each checked against the vector's bytes."""

    def __init__(self, prio: Any, name: str, vector: dict[str, Any]) -> None:
        super().__init__(_vdaf(prio, name, vector), vector)
        self.prio = prio

    def verify_init(self, op: dict[str, Any]) -> None:
        report, agg = self.report(op), op["aggregator_id"]
        state, share = self.vdaf.verify_init(self.key, agg, bytes.fromhex(report["nonce"]),
                                             bytes.fromhex(report["public_share"]),
                                             bytes.fromhex(report["input_shares"][agg]))
        assert state.agg_id == agg
        self.states[op["report_index"], agg] = state
        shares = report["verifier_shares"][0] if report["verifier_shares"] else []
        if agg < len(shares):
            assert share.hex() == shares[agg]
        again = self.vdaf.verify_state_from_bytes(agg, state.to_bytes())  # the state survives its encoding
        assert again.to_bytes() == state.to_bytes() and again.agg_id == agg

    def verifier_shares_to_message(self, op: dict[str, Any]) -> None:
        report = self.report(op)
        assert op["round"] == 0
        message = self.vdaf.verifier_shares_to_message([bytes.fromhex(s) for s in report["verifier_shares"][0]])
        assert message.hex() == report["verifier_messages"][0]

    def verify_next(self, op: dict[str, Any]) -> None:
        report, agg = self.report(op), op["aggregator_id"]
        assert op["round"] == 1
        state = self.states[op["report_index"], agg]
        out = self.vdaf.verify_next(state, bytes.fromhex(report["verifier_messages"][0]))
        assert state.used
        assert out.to_bytes().hex() == report["out_shares"][agg]
        assert len(out) == self.vdaf.output_len
        self.outputs[op["report_index"], agg] = out

    def aggregate(self, op: dict[str, Any]) -> None:
        agg = op["aggregator_id"]
        outs = [self.outputs[r, agg] for r in range(len(self.vector["reports"]))]
        share = self.vdaf.aggregate(outs)
        assert share.to_bytes().hex() == self.vector["agg_shares"][agg]
        folded = self.vdaf.aggregate_init()  # the same, one output share at a time
        for out in outs:
            folded.accumulate(out)
        assert folded.to_bytes() == share.to_bytes()
        again = self.vdaf.aggregate_share_from_bytes(share.to_bytes())
        assert again.to_bytes() == share.to_bytes()
        assert self.vdaf.aggregate_share_from_field_elements(share.field_elements()).to_bytes() == share.to_bytes()
        self.aggregates[agg] = again

    def unshard(self, op: dict[str, Any]) -> None:
        shares = [self.aggregates[a] for a in range(self.vector["shares"])]
        result = self.vdaf.unshard(shares, len(self.vector["reports"]))
        assert result == self.vector["agg_result"]


def _load(name: str) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads((vector_dir() / name).read_text())
    return vector


@pytest.mark.parametrize("name", vector_names(TYPES))
def test_vector_replays_byte_for_byte(name: str) -> None:
    prio = binding()
    vector = _load(name)
    replay = Replay(prio, name.split("_", 1)[0], vector)
    ops = vector["operations"]
    assert ops, f"{name} lists no operation"
    for i, op in enumerate(ops):
        step = getattr(replay, op["operation"])
        if op["success"]:
            step(op)
            continue
        assert "_bad_" in name, f"{name}: a good vector with a failing {op['operation']}"
        with pytest.raises(prio.PrioError) as refused:
            step(op)
        assert refused.value.operation == op["operation"], str(refused.value)
        assert isinstance(refused.value, ValueError)
        assert i == len(ops) - 1, f"{name}: operations listed after the refused one"
        return
    assert "_bad_" not in name, f"{name}: a negative vector whose every operation succeeded"
    assert {op["operation"] for op in ops} >= {"shard", "verify_init", "verifier_shares_to_message", "verify_next",
                                               "aggregate", "unshard"}


def test_every_type_has_its_vectors() -> None:
    binding()
    names = vector_names(TYPES)
    for name, (good, bad) in EXPECTED.items():
        mine = [n for n in names if n.split("_", 1)[0] == name]
        assert len([n for n in mine if "_bad_" not in n]) >= good, (name, mine)
        assert len([n for n in mine if "_bad_" in n]) >= bad, (name, mine)
    assert vector_dir().parent.name == "test_vec"
