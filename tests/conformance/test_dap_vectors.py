"""conformance/dap/dap09-messages.json, DAP-09's messages as ``ldp.aggregators`` encodes them (decoded and re-encoded
byte for byte by Janus's ``janus_messages`` in clients/rust/interop), is what conformance/dap_vectors.py writes from
this version, and each entry decodes back to its fields here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from ldp.aggregators.collection_messages import Collection, CollectionReq
from ldp.aggregators.messages import AggregateShareReq, AggregationJobInitReq, AggregationJobResp

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dap_vectors", ROOT / "conformance" / "dap_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dap_fixture_is_what_this_version_writes() -> None:
    gen = _generator()
    assert gen.PATH.read_bytes() == gen.render(gen.document()), "run: python conformance/dap_vectors.py"


def test_each_entry_decodes_to_its_fields() -> None:
    doc = json.loads((ROOT / "conformance" / "dap" / "dap09-messages.json").read_text())
    kinds = {m["message"] for m in doc["messages"]}
    assert kinds == {"AggregationJobInitializeReq", "AggregationJobResp", "AggregateShareReq", "AggregateShare",
                     "CollectionReq", "Collection", "AggregateShareAad"}
    for m in doc["messages"]:
        data = bytes.fromhex(m["hex"])
        if m["message"] == "AggregationJobInitializeReq":
            job = AggregationJobInitReq.from_bytes(data)
            assert [(p.report_share.report_id.hex(), p.report_share.time, p.leader_prep_share.hex())
                    for p in job.prepare_inits] == [(f["report_id"], f["time"], f["prep_share"])
                                                    for f in m["prepare_inits"]]
        elif m["message"] == "AggregationJobResp":
            resps = AggregationJobResp.from_bytes(data).prepare_resps
            assert [r.report_id.hex() for r in resps] == [f["report_id"] for f in m["prepare_resps"]]
        elif m["message"] == "AggregateShareReq":
            req = AggregateShareReq.from_bytes(data)
            assert (req.interval.start, req.report_count, req.checksum.hex()) == (m["start"], m["report_count"],
                                                                                  m["checksum"])
        elif m["message"] == "CollectionReq":
            assert CollectionReq.from_bytes(data).interval.duration == m["duration"]
        elif m["message"] == "Collection":
            assert Collection.from_bytes(data).report_count == m["report_count"]
