"""Junk full of frame magics is skipped in bulk by ``scan_frames``, counting exactly what parsing
each false start one by one would count (issue 15, item 8)."""

from __future__ import annotations

import random
import time
from collections import Counter

from hypothesis import given, settings, strategies as st

from ldp.encoders import GRREncoder, GRRParams
from ldp.reports import MAGIC, ReportError, scan_frames

FRAME = GRREncoder(GRRParams(1.0, 4), simulation=True, rng=1).encode_batch([0, 1, 2, 3], rng=2).to_bytes()


def one_by_one(data: bytes):
    """The reference: every false start parsed on its own, resuming at the next magic."""
    return scan_frames(data, bulk=False)


def tally(items) -> tuple[Counter, list]:
    reasons, frames = Counter(), []
    for item in items:
        if isinstance(item, ReportError):
            reasons[item.reason] += item.records
        else:
            frames.append((item.protocol, item.count, dict(item.columns)))
    return reasons, frames


PIECES = [MAGIC, MAGIC + b"\x01", MAGIC + b"\x01\x03grr", MAGIC + b"\x01\x00", MAGIC + b"\x01\x40",
          MAGIC + b"\x01\x02Ab", MAGIC + b"\x02", FRAME, FRAME[:20], b"\x00", b"xyz", b"\x01", b"L", b"LDP"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=12)), max_size=400))
def test_bulk_skipping_counts_what_one_by_one_parsing_counts(pieces):
    data = b"".join(pieces)
    assert tally(scan_frames(data)) == tally(one_by_one(data))


def test_the_tail_and_a_frame_after_junk_are_exact():
    rng = random.Random(5)
    for _ in range(50):
        junk = b"".join(rng.choice(PIECES[:7]) for _ in range(rng.randrange(0, 200)))
        data = junk + FRAME + junk[: rng.randrange(0, 300)]
        assert tally(scan_frames(data)) == tally(one_by_one(data))


def test_megabytes_of_magics_are_skipped_in_bulk():
    """8 MiB of bare magics (2M false starts) and of magics with the version byte: linear, C-speed
    scanning (one-by-one parsing took ~2 s per MiB; the bound is generous for a loaded machine)."""
    for unit in (MAGIC, MAGIC + b"\x01"):
        data = unit * ((8 << 20) // len(unit))
        t0 = time.perf_counter()
        reasons, frames = tally(scan_frames(data))
        assert time.perf_counter() - t0 < 2.5
        assert sum(reasons.values()) == data.count(MAGIC) and not frames
