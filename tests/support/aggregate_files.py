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


COIN_FIELDS = ("pair_cells", "pair_halves")
"""A RAPPOR aggregate's arrays that depend on the fold's own coins (the pair test's split, the halves of
``ldp.batch.rappor_pair_bins``): fresh OS entropy each fold, so the same reports give other counts there."""


def assert_same_aggregate(a: Any, b: Any) -> None:
    """Two aggregate files of the same reports agree: byte for byte, or (a RAPPOR aggregate) every array but the
    coins' equal, and each half's counts within ``pair_bins`` (``0 <= pair_halves <= pair_bins``)."""
    import numpy as np

    from ldp.jobs.store import read_aggregate

    if a.read_bytes() == b.read_bytes():
        return
    x, y = read_aggregate(a), read_aggregate(b)
    assert type(x) is type(y) and x.params == y.params and x.n == y.n and hasattr(x, "pair_halves"), (a, b)
    for name in type(x).state_layout(x.params):
        if name not in COIN_FIELDS:
            assert np.array_equal(getattr(x, name), getattr(y, name)), name
    for agg in (x, y):
        assert ((agg.pair_halves >= 0) & (agg.pair_halves <= agg.pair_bins)).all()
