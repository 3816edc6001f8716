"""Writes (or checks) conformance/dap/dap09-messages.json: DAP-09's messages as ``ldp.aggregators`` encodes them, for
an independent implementation to decode and re-encode byte for byte (Janus's ``janus_messages`` 0.7, in
clients/rust/interop/tests/dap09_messages.rs).

Each entry is ``{"message": NAME, "hex": BYTES, ...fields}``, the fields those the message is built from, in the
names of ``janus_messages``' constructors' arguments:

* ``AggregationJobInitializeReq``: ``prepare_inits``, each ``report_id``, ``time``, ``public_share``, the
  ``HpkeCiphertext`` (``config_id``, ``encapsulated_key``, ``payload``) and the leader's ``prep_share`` (a ping-pong
  ``initialize`` message);
* ``AggregationJobResp``: ``prepare_resps``, each ``report_id`` and ``continue`` (the helper's ``prep_msg``, a
  ping-pong ``finish``), ``finished`` or ``reject`` (the ``PrepareError`` value);
* ``AggregateShareReq``: ``start``, ``duration``, ``report_count``, ``checksum``;
* ``AggregateShare`` and the ``HpkeCiphertext`` inside it;
* ``CollectionReq``: ``start``, ``duration``; ``Collection``: ``report_count``, ``start``, ``duration``, both
  ciphertexts;
* ``AggregateShareAad``: ``task_id``, ``start``, ``duration``.

Byte strings are hex. Seeded: the same file each run. Standard library and the ldp package only;
tests/conformance/test_dap_vectors.py checks the file is fresh.

Run from anywhere: python conformance/dap_vectors.py [--check]"""
from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))  # this checkout's ldp, whatever the environment has installed
sys.path.insert(0, str(root / "conformance"))
from spec_vectors import render, write_or_check  # noqa: E402, F401  # render: the test's

from ldp.aggregators.codec import HpkeCiphertext, Interval  # noqa: E402  # after the path is set
from ldp.aggregators.collection_messages import Collection, CollectionReq, aggregate_share_aad  # noqa: E402
from ldp.aggregators.messages import (  # noqa: E402
    AggregateShare,
    AggregateShareReq,
    AggregationJobInitReq,
    AggregationJobResp,
    PrepareInit,
    PrepareResp,
    ReportError,
    ReportShare,
    finish,
    initialize,
)

PATH = root / "conformance" / "dap" / "dap09-messages.json"


def _bytes(rng: random.Random, most: int) -> bytes:
    return rng.randbytes(rng.randrange(most + 1))


def _ciphertext(rng: random.Random) -> tuple[HpkeCiphertext, dict[str, Any]]:
    ct = HpkeCiphertext(rng.randrange(256), _bytes(rng, 65), _bytes(rng, 90))
    return ct, {"config_id": ct.config_id, "encapsulated_key": ct.encapsulated_key.hex(), "payload": ct.payload.hex()}


def _job(rng: random.Random, n: int) -> dict[str, Any]:
    inits, fields = [], []
    for _ in range(n):
        rid, time, public, share = rng.randbytes(16), rng.randrange(2 ** 40), _bytes(rng, 64), _bytes(rng, 80)
        ct, ct_fields = _ciphertext(rng)
        inits.append(PrepareInit(ReportShare(rid, time, public, ct.to_bytes()), initialize(share)))
        fields.append({"report_id": rid.hex(), "time": time, "public_share": public.hex(), "ciphertext": ct_fields,
                       "prep_share": share.hex()})
    return {"message": "AggregationJobInitializeReq", "hex": AggregationJobInitReq(tuple(inits)).to_bytes().hex(),
            "prepare_inits": fields}


def _resp(rng: random.Random, n: int) -> dict[str, Any]:
    resps, fields = [], []
    for i in range(n):
        rid = rng.randbytes(16)
        if i % 3 == 0:
            msg = _bytes(rng, 48)
            resps.append(PrepareResp(rid, payload=finish(msg)))
            fields.append({"report_id": rid.hex(), "continue": msg.hex()})
        elif i % 3 == 1:
            error = ReportError(rng.randrange(10))
            resps.append(PrepareResp(rid, error=error))
            fields.append({"report_id": rid.hex(), "reject": int(error)})
        else:
            resps.append(PrepareResp(rid, finished=True))
            fields.append({"report_id": rid.hex(), "finished": True})
    return {"message": "AggregationJobResp", "hex": AggregationJobResp(tuple(resps)).to_bytes().hex(),
            "prepare_resps": fields}


def _interval(rng: random.Random) -> Interval:
    start = rng.randrange(2 ** 40) * 60
    return Interval(start, rng.choice([60, 3600, 86400]))


def document() -> dict[str, Any]:
    rng = random.Random(20261128)
    out: list[dict[str, Any]] = [_job(rng, n) for n in (0, 1, 3)] + [_resp(rng, n) for n in (0, 1, 5)]
    for _ in range(2):
        iv, checksum, count = _interval(rng), rng.randbytes(32), rng.randrange(2 ** 33)
        out.append({"message": "AggregateShareReq", "hex": AggregateShareReq(iv, count, checksum).to_bytes().hex(),
                    "start": iv.start, "duration": iv.duration, "report_count": count, "checksum": checksum.hex()})
        ct, fields = _ciphertext(rng)
        out.append({"message": "AggregateShare", "hex": AggregateShare(ct.to_bytes()).to_bytes().hex(),
                    "ciphertext": fields})
        out.append({"message": "CollectionReq", "hex": CollectionReq(iv).to_bytes().hex(), "start": iv.start,
                    "duration": iv.duration})
        (leader, leader_fields), (helper, helper_fields) = _ciphertext(rng), _ciphertext(rng)
        out.append({"message": "Collection", "hex": Collection(count, iv, leader, helper).to_bytes().hex(),
                    "report_count": count, "start": iv.start, "duration": iv.duration, "leader": leader_fields,
                    "helper": helper_fields})
        task_id = rng.randbytes(32)
        out.append({"message": "AggregateShareAad", "hex": aggregate_share_aad(task_id, iv).hex(),
                    "task_id": task_id.hex(), "start": iv.start, "duration": iv.duration})
    return {"draft": "draft-ietf-ppm-dap-09", "messages": out}


if __name__ == "__main__":
    sys.exit(write_or_check(sys.argv, PATH, document()))
