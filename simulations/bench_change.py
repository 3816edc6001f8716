"""Sections of ``simulations/benchmark.py`` for the protocols of repeated collection whose values change (issue 33
item 3): memoized dBitFlip (``memo-dbitflip``) and charge on change (``thresh``). Registered by :func:`register`.

Targets: a per-report ``encode()`` without a ledger <= 10 µs (a replay: the memoized response is kept; a change:
one HMAC-SHA256 stream); batch encode >= 1e6 reports/s (fresh devices, and panels of the same devices). Through a
ledger in a file each report is one transaction and one fsync (the charge on change adds a read, and a write at a
change): reported beside the fsync it waits for, not judged (disk-bound).
"""

from __future__ import annotations

import os
import tempfile
from types import ModuleType
from typing import Any

import numpy as np

from ldp.batch.dbitflip_memo import memo_dbitflip_devices
from ldp.batch.thresh import ThreshPanel
from ldp.encoders.dbitflip_memo import MemoDBitFlipEncoder, MemoDBitFlipParams
from ldp.encoders.thresh import ThreshEncoder, ThreshParams

MEMO_PARAMS = MemoDBitFlipParams(2.0, tuple(float(i) for i in range(17)), d=4, gamma=0.05)
THRESH_PARAMS = ThreshParams(1.0, 64)


class _Alternating:
    """An encoder whose every ``encode`` reports the next of ``values``: a change at every report."""

    def __init__(self, encoder: Any, values: list[Any]) -> None:
        self.encoder, self.values, self.i = encoder, values, 0

    def encode(self, _value: Any) -> Any:
        self.i += 1
        return self.encoder.encode(self.values[self.i % len(self.values)])


def register(b: ModuleType) -> None:
    """Add the changing-values sections to the benchmark module ``b``."""

    @b.benchmark("change_client_report")
    def change_client_report(ctx: Any) -> dict[str, Any]:
        """µs per ``encode()``: replays of one value, and a change at every report; without a ledger, with one in
        memory and in a file (fsync per report)."""
        s = ctx.sizes
        out: dict[str, Any] = {"rng": b.CLIENT_RNG_NOTE}
        cases = {"memo-dbitflip": (lambda **kw: MemoDBitFlipEncoder(MEMO_PARAMS, secret=b"device", **kw), [0.5, 7.5]),
                 "thresh": (lambda **kw: ThreshEncoder(THRESH_PARAMS, secret=b"device", **kw), [3, 41])}
        for name, (make, values) in cases.items():
            row: dict[str, Any] = {}
            for how in ("replay", "change"):
                b.log(f"  {name} {how}: {s.client_calls:,} calls, no ledger")
                enc = make() if how == "replay" else _Alternating(make(), values)
                timing = b.client_path_timing(enc, values[0], s.client_calls, s.client_batch)
                timing.update(ctx.judge(f"{name}.{how}.us_mean", timing["us_mean"], "<=", 10.0, "µs/report"))
                with tempfile.TemporaryDirectory(prefix="ldp-bench-") as tmp:
                    timing["with_ledger"] = {
                        kind: b.ledger_path_timing(
                            lambda led, make=make, how=how, values=values: (
                                make(ledger=led, metric="bench") if how == "replay"
                                else _Alternating(make(ledger=led, metric="bench"), values)),
                            values[0], ":memory:" if kind == "memory" else os.path.join(tmp, "l.sqlite"), calls,
                            s.ledger_blocks, True)
                        for kind, calls in (("memory", s.ledger_memory_calls), ("file", s.ledger_file_calls))}
                row[how] = timing
            out[name] = row
        out["note"] = ("memo-dbitflip: a memoized charge per report (the cap per bucket); thresh: a charge on change "
                       "(ε at a change, 0 for a replay; the ledger reads the stream's epoch, writes it on a change)")
        return out

    @b.benchmark("change_batch_encode")
    def change_batch_encode(ctx: Any) -> dict[str, Any]:
        """Batch encode throughput: fresh devices; and a panel of the same devices (a window's reports)."""
        n = ctx.sizes.batch_n // 10
        out: dict[str, Any] = {
            "memo-dbitflip": b.batch_encode_section(
                ctx, MemoDBitFlipEncoder(MEMO_PARAMS, secret=b"sim"),
                {"uint8": ctx.rng(90).integers(0, MEMO_PARAMS.num_buckets, n, dtype=np.uint8)}, 1e6),
            "thresh": b.batch_encode_section(
                ctx, ThreshEncoder(THRESH_PARAMS, secret=b"sim"),
                {"uint8": ctx.rng(91).integers(0, THRESH_PARAMS.domain_size, n, dtype=np.uint8)}, 1e6)}
        panel_n = min(n, 200_000)
        gen = ctx.rng(92)
        x = gen.integers(0, THRESH_PARAMS.domain_size, panel_n)
        y = np.where(gen.random(panel_n) < 0.1, gen.integers(0, THRESH_PARAMS.domain_size, panel_n), x)
        enc = ThreshEncoder(THRESH_PARAMS, secret=b"sim")

        def window(_: Any) -> Any:
            panel = ThreshPanel(panel_n)
            enc.encode_batch(x, gen, panel=panel)
            return enc.encode_batch(y, gen, panel=panel)  # 10 % of the devices change

        timing, _ = b.time_runs(window, ctx.sizes.repeats)
        rate = b.throughput(2 * panel_n, timing)
        out["thresh_panel_two_windows"] = {"n": panel_n, "reports_per_s": rate, "seconds": timing,
                                           **ctx.judge("thresh_panel.reports_per_s", rate["best"], ">=", 1e6,
                                                       "reports/s")}
        memo_enc = MemoDBitFlipEncoder(MEMO_PARAMS, secret=b"sim")
        devices = memo_dbitflip_devices(MEMO_PARAMS, panel_n, gen)
        v = gen.integers(0, MEMO_PARAMS.num_buckets, panel_n)
        timing, _ = b.time_runs(lambda _: memo_enc.encode_batch(v, gen, devices=devices), ctx.sizes.repeats)
        rate = b.throughput(panel_n, timing)
        out["memo_dbitflip_panel"] = {"n": panel_n, "reports_per_s": rate, "seconds": timing,
                                      **ctx.judge("memo_dbitflip_panel.reports_per_s", rate["best"], ">=", 1e6,
                                                  "reports/s")}
        return out
