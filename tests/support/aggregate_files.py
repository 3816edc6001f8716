"""Aggregate files as older versions wrote them: a RAPPOR aggregate's file holding only the arrays of ``layout``."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any


def rappor_file(agg: Any, layout: dict[str, Any]) -> bytes:
    """The aggregate ``agg``'s file (format ``LDPA`` 1, CRC-32 at the end) with the arrays of ``layout`` only
    (name -> (dtype, shape)), in its order: what a version that kept no more wrote."""
    header = {"protocol": "rappor", "params": agg.params.to_dict(), "fingerprint": agg.params.fingerprint,
              "n": agg.n, "rejected": {},
              "arrays": [[k, d.newbyteorder("<").str, list(s)] for k, (d, s) in layout.items()]}
    head = json.dumps(header, separators=(",", ":")).encode()
    body = b"".join(getattr(agg, k).astype("<i8").tobytes() for k in layout)
    blob = b"LDPA\x01" + struct.pack("<I", len(head)) + head + body
    return blob + struct.pack("<I", zlib.crc32(blob))



def assert_same_aggregate(a: Any, b: Any) -> None:
    """Two aggregate files of the same reports agree (:func:`ldp.jobs.store.same_reports`: all but the arrays the
    fold's coins fill), and each RAPPOR half's counts lie within ``pair_bins`` (``0 <= pair_halves <= pair_bins``)."""
    from ldp.jobs.store import read_aggregate, same_reports

    assert same_reports(a, b), (a, b)
    for agg in (read_aggregate(a), read_aggregate(b)):
        if getattr(agg, "pair_halves", None) is not None and agg.pair_halves.size:
            assert ((agg.pair_halves >= 0) & (agg.pair_halves <= agg.pair_bins)).all()
