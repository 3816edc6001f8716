"""Interoperability by vectors: every Poplar1 test vector of VDAF draft 18 (``conformance/dap/poplar1``, copied from
the ``prio`` crate 0.18.1's ``src/vdaf/test_vec/18``) replayed through :mod:`ldp.prio.poplar1`, byte for byte:
sharding with the vector's nonce and randomness (the public share and both input shares), each aggregator's
``verify_init`` for the vector's aggregation parameter (its verifier share of round 0, and its state's encoding read
back), ``verifier_shares_to_message`` of both rounds (the messages, with either aggregator's state decoding the
shares), ``verify_next`` of both rounds (round 1's verifier shares, then the output shares), the aggregate shares and
the result. The negative vector (``Poplar1_bad_corr_inner``: the helper's correlated randomness tampered with) is
refused as a :class:`~ldp.errors.PrioError` at the operation it marks, and every operation before it succeeds.

Breaking any step of the binding (another XOF, the prefixes read last bit first, the wrong aggregator's
correlation, a state's round lost) changes bytes and fails these; a copy that drifts from the crate's fails
``test_copies_are_the_crates``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prio_support import ROOT, binding, vector_dir
from test_prio_vectors import VectorReplay

FOLDER = ROOT / "conformance" / "dap" / "poplar1"
NAMES = sorted(p.name for p in FOLDER.glob("Poplar1_*.json"))


def _hex(data: bytes) -> str:
    return data.hex()


class Replay(VectorReplay):
    """One vector's operations, in its order, each checked against the vector's bytes."""

    def __init__(self, vector: dict[str, Any]) -> None:
        binding()
        from ldp.prio import poplar1

        super().__init__(poplar1.Poplar1(vector["bits"], ctx=bytes.fromhex(vector["ctx"])), vector)
        self.p1 = poplar1
        self.param = poplar1.Poplar1AggregationParam.from_bytes(bytes.fromhex(vector["agg_param"]))
        assert self.param.to_bytes().hex() == vector["agg_param"]

    def shard(self, op: dict[str, Any]) -> tuple[bytes, bytes, list[bytes]]:
        nonce, public, inputs = super().shard(op)
        assert len(public) == self.vdaf.public_share_len and len(inputs[1]) == self.vdaf.input_share_len(1)
        return nonce, public, inputs

    def verify_init(self, op: dict[str, Any]) -> None:
        r, agg = self.report(op), op["aggregator_id"]
        state, share = self.vdaf.verify_init(self.key, agg, self.param, bytes.fromhex(r["nonce"]),
                                             bytes.fromhex(r["public_share"]), bytes.fromhex(r["input_shares"][agg]))
        assert _hex(share) == r["verifier_shares"][0][agg]
        again = self.vdaf.verify_state_from_bytes(agg, self.param, state.to_bytes())
        assert (again.to_bytes(), again.round, again.agg_id) == (state.to_bytes(), 0, agg)
        self.states[op["report_index"], 0, agg] = state

    def verifier_shares_to_message(self, op: dict[str, Any]) -> None:
        r, rnd = self.report(op), op["round"]
        shares = [bytes.fromhex(s) for s in r["verifier_shares"][rnd]]
        messages = {_hex(self.vdaf.verifier_shares_to_message(self.states[op["report_index"], rnd, agg], shares))
                    for agg in (0, 1)}
        assert messages == {r["verifier_messages"][rnd]}

    def verify_next(self, op: dict[str, Any]) -> None:
        r, rnd, agg = self.report(op), op["round"], op["aggregator_id"]
        state = self.states[op["report_index"], rnd - 1, agg]
        message = bytes.fromhex(r["verifier_messages"][rnd - 1])
        if rnd == 1:
            state, share = self.p1.verify_continue(self.vdaf, state, message)
            assert (_hex(share), state.round) == (r["verifier_shares"][1][agg], 1)
            self.states[op["report_index"], 1, agg] = state
            return
        out = self.p1.verify_finish(self.vdaf, state, message)
        assert _hex(out.to_bytes()) == r["out_shares"][agg] and len(out) == len(self.param)
        assert self.vdaf.output_share_from_bytes(self.param, out.to_bytes()).to_bytes() == out.to_bytes()
        self.outputs[op["report_index"], agg] = out

    def aggregate(self, op: dict[str, Any]) -> None:
        agg = op["aggregator_id"]
        outs = [self.outputs[i, agg] for i in range(len(self.vector["reports"]))]
        share = self.vdaf.aggregate(self.param, outs)
        assert _hex(share.to_bytes()) == self.vector["agg_shares"][agg]
        folded = self.vdaf.aggregate_init(self.param)  # the same, one output share at a time
        for out in outs:
            folded.accumulate(out)
        assert folded.to_bytes() == share.to_bytes()
        self.aggregates[agg] = self.vdaf.aggregate_share_from_bytes(self.param, share.to_bytes())

    def unshard(self, op: dict[str, Any]) -> None:
        shares = [self.aggregates[0], self.aggregates[1]]
        n = len(self.vector["reports"])
        assert self.vdaf.unshard(self.param, shares, n) == self.vector["agg_result"]
        assert self.p1.signed_counts(shares) == self.vector["agg_result"]


def _load(name: str) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads((FOLDER / name).read_text())
    return vector


@pytest.mark.parametrize("name", NAMES)
def test_vector_replays_byte_for_byte(name: str) -> None:
    from ldp.errors import PrioError

    vector = _load(name)
    replay = Replay(vector)
    ops = vector["operations"]
    for i, op in enumerate(ops):
        step = getattr(replay, op["operation"])
        if op["success"]:
            step(op)
            continue
        assert "_bad_" in name, f"{name}: a good vector with a failing {op['operation']}"
        with pytest.raises(PrioError) as refused:
            step(op)
        assert refused.value.operation == op["operation"], str(refused.value)
        assert i == len(ops) - 1, f"{name}: operations listed after the refused one"
        return
    assert "_bad_" not in name, f"{name}: a negative vector whose every operation succeeded"
    assert {op["operation"] for op in ops} == {"shard", "verify_init", "verifier_shares_to_message", "verify_next",
                                               "aggregate", "unshard"}


def test_every_vector_is_here() -> None:
    """Draft 18's Poplar1 vectors in prio 0.18.1: six positive (levels 0 to 3 of 4 bits, 0 and 10 of 11 bits: inner
    levels and the leaves) and one negative; fewer means a copy went missing."""
    assert len(NAMES) == 7 and sum("_bad_" in n for n in NAMES) == 1, NAMES
    good = [_load(n) for n in NAMES if "_bad_" not in n]
    levels = {(v["bits"], int(v["agg_param"][:4], 16)) for v in good}
    assert levels >= {(4, 0), (4, 3), (11, 0), (11, 10)}


def test_copies_are_the_crates() -> None:
    """Each copy is byte-identical to the file of the crate that cargo downloaded for the binding (skipped without
    cargo, failed under ``LDP_REQUIRE_PRIO=1``)."""
    crate: Path = vector_dir()
    for name in NAMES:
        assert (FOLDER / name).read_bytes() == (crate / name).read_bytes(), name
    assert sorted(p.name for p in crate.glob("Poplar1_*.json")) == NAMES
