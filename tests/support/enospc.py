"""A full disk, for real: the ingest service's writer on a small tmpfs, filled to the last byte at random points.

:func:`episodes` runs a :class:`~ldp.ingest.segments.SegmentWriter` on ``data_dir`` (a tmpfs of a few MiB, mounted
by the caller in its own mount namespace: ``unshare -rm``), and ``n`` times: fills the disk, frees a random few KiB
so that the next failure lands at a random point (a segment write, its fsync, the journal, a new segment, a rotation),
uploads batches until the writer fails, uploads more (refused), frees the disk, waits for the writer to heal by
itself, and uploads the refused batches again under the same ids, as clients do. At the end it closes the writer,
starts a new one on the same folder (recovery) and checks that every acknowledged line is stored exactly once.
Run as ``python -m support.enospc DATA_DIR N SEED``: prints a JSON summary; exit status 1 on a lost or doubled line.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import threading
import time
from pathlib import Path

from ldp.ingest import segments
from ldp.ingest.config import parse_config
from ldp.ingest.segments import Batch, SegmentWriter, Stored
from ldp.ingest.upload import BatchCounts

SPEC = Path(__file__).resolve().parents[2] / "examples" / "collection.json"


def _fill(path: Path) -> None:
    """Write ``path`` until the disk is full."""
    with open(path, "ab", buffering=0) as fh:
        block = bytes(4096)
        with contextlib.suppress(OSError):
            while True:
                fh.write(block)


def _submit(w: SegmentWriter, batch_id: str, body: bytes) -> Stored | BaseException:
    got: list[Stored | BaseException] = []
    event = threading.Event()

    def done(result: Stored | BaseException) -> None:
        got.append(result)
        event.set()

    lines = body.count(b"\n")
    try:
        w.submit(Batch("demo", batch_id, body, BatchCounts(lines, lines), done))
    except Exception as exc:  # WriterClosed while in error
        return exc
    assert event.wait(10), "no answer in 10 s"
    return got[0]


def _stored_lines(config) -> list[bytes]:
    seg = config.app_dir("demo") / "segments"
    return [line for d in ("open", "closed") for p in sorted((seg / d).glob("*.jsonl"))
            for line in p.read_bytes().splitlines()]


def episodes(data_dir: Path, n: int, seed: int) -> dict[str, object]:
    segments.PROBE_SECONDS = 0.05
    segments._TICK = 0.01  # the writer thread's idle wake-up, when it probes: healing is seen within ~0.06 s, not 0.25
    rng = random.Random(seed)
    config = parse_config({"limits": {"segment_max_bytes": 64 * 2**10, "segment_max_seconds": 0.3},
                           "apps": {"demo": {"token_sha256": "0" * 64, "specs": [str(SPEC)]}}}, data_dir)
    filler = data_dir / "filler"
    w = SegmentWriter(config)
    w.start()
    acked: dict[str, bytes] = {}
    count = 0
    failures = refused = 0
    heal_seconds: list[float] = []

    def body_of(batch_id: str) -> bytes:
        return b"".join(f"{batch_id}:{i}:{'x' * rng.randrange(1, 200)}\n".encode()
                        for i in range(rng.randrange(1, 40)))

    for _ in range(n):
        _fill(filler)
        with open(filler, "r+b") as fh:  # free a random few KiB: the next failure lands somewhere else each time
            fh.truncate(max(0, filler.stat().st_size - rng.randrange(0, 96 * 2**10)))
        waiting: dict[str, bytes] = {}
        while w.error is None and count < 10**6:
            count += 1
            bid, body = f"b{count}", body_of(f"b{count}")
            res = _submit(w, bid, body)
            if isinstance(res, Stored):
                acked[bid] = body
            else:
                waiting[bid] = body
        failures += 1
        for _ in range(5):  # uploads while the disk is full are refused
            count += 1
            bid, body = f"b{count}", body_of(f"b{count}")
            res = _submit(w, bid, body)
            assert not isinstance(res, Stored), "stored while in error"
            waiting[bid] = body
        refused += len(waiting)
        filler.unlink()
        t0 = time.monotonic()
        while w.error is not None:
            assert time.monotonic() - t0 < 10, f"not healed in 10 s: {w.error}"
            time.sleep(0.01)
        heal_seconds.append(time.monotonic() - t0)
        for bid, body in waiting.items():  # the clients retry under the same ids
            res = _submit(w, bid, body)
            assert isinstance(res, Stored) and not res.duplicate, res
            acked[bid] = body
    w.close()
    want = sorted(line for body in acked.values() for line in body.splitlines())
    first = sorted(_stored_lines(config))
    w2 = SegmentWriter(config)
    cut = w2.start()
    w2.close()
    second = sorted(_stored_lines(config))
    return {"episodes": n, "failures": failures, "refused_then_stored": refused, "batches_acknowledged": len(acked),
            "lines_acknowledged": len(want), "lost_or_doubled": int(first != want) + int(second != want),
            "cut_on_recovery": cut["demo"], "index": len(w2.logs["demo"].ids()),
            "heal_seconds_max": round(max(heal_seconds), 3)}


if __name__ == "__main__":
    out = episodes(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(out))
    sys.exit(1 if out["lost_or_doubled"] else 0)
