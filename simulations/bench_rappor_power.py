"""Benchmark section ``rappor_power`` (issue 88, item 4): RAPPOR's disguised attacks in every shape, measured and
against what any test of the targets' own pairs can reach.

Per shape (``k`` in 16, 32, 64, 128; ``m`` in 4, 8, 16, 64; ``n`` in 2·10⁴, 10⁵; h = 2, p = 0.25, q = 0.75,
f = 0.5; Zipf(1) over 64 candidates) windows of each row: honest (the false alarms), and 1, 2 or 3 targets taken
in turn by 2 % or 5 % fake users whose number of 1s follows the honest law
(:func:`ldp.simulation.rappor_disguise.disguised_window`, folded as a fold that knows the candidates folds:
``keep_pairs``). Each window's checks at the family-wise level 0.01 as ``ldp decode`` runs them
(:func:`~ldp.jobs.rappor_poisoning.candidate_evidence`, the 64 candidates known). The ingest service's dashboard
runs the same function with the spec's candidates (:func:`ldp.ingest.series.poisoning`): on the first two windows
of every row both are run and must agree (``board_differs`` counts where they do not).

``bound`` is the asymptotic power of the likelihood-ratio test of the targets' exact cells against the closest
honest mixture (:func:`ldp.jobs.rappor_power_bound.power_bound`, from the expected cells, no simulation): an
approximation of what the best test of those cells reaches, not a theorem. Judges: measured ``>= 0.8`` where the
bound is ``>= 0.95``; honest false alarms at most the 99.9 % point of ``Binomial(trials, α)``.

The benchmark's full run measures the four corner shapes (k 16 and 128, m 4 and 64) at both ``n`` (10 windows per
attack, 40 honest); the script measures any shapes (20 and 200 by default) and rows (``--rows``), writing every
window as a JSON line (``--out``) so a long run loses nothing; ``docs/poisoning.md`` has the whole grid. At m = 64
the candidates' test is the ratio over the cohorts summed in 16 runs
(:func:`ldp.jobs.rappor_shared_share.pooled_cohorts`; k = 16, 32) or cross-fitted over the fold's two halves
(:mod:`ldp.jobs.rappor_cross_fit`; k = 64, 128, too few bins for the ratio): every cell of bound ``>= 0.8`` reaches
0.8 there (17–20 of 20 windows), where the linear sum first used flagged 3–16 of the cells of bound ``>= 0.95`` and
the cross-fitted sum 7 of 20 at n = 2·10⁴, k = 16 (bound 0.88).

    python simulations/bench_rappor_power.py [--trials 20] [--honest 200] [--quick] [--shapes 16x4x20000,...]
        [--rows honest,3x5%,...] [--out windows.jsonl] [--table windows.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from types import ModuleType
from typing import Any

ALPHA = 0.01
ATTACKS = tuple((f"{t}x{f:.0%}", t, f) for f in (0.02, 0.05) for t in (1, 2, 3))
ROWS = (("honest", 0, 0.0), *ATTACKS)
SHAPES = tuple((k, m, n) for n in (20_000, 100_000) for k in (16, 32, 64, 128) for m in (4, 8, 16, 64))
CORNERS = tuple((k, m, n) for n in (20_000, 100_000) for k in (16, 128) for m in (4, 64))
QUICK = ((16, 4, 20_000), (32, 8, 20_000), (128, 64, 100_000))
POWER_TARGET = 0.8
BOUND_FOR_TARGET = 0.95


def _params(k: int, m: int) -> Any:
    from ldp.encoders.rappor import RapporParams

    return RapporParams(num_bloombits=k, num_hashes=2, num_cohorts=m, p=0.25, q=0.75, f=0.5)


def window(k: int, m: int, n: int, row: str, trial: int, seed: int, cands: list[str]) -> dict[str, Any]:
    """One window of ``row`` (seeded by ``(seed, k, m, n, row, trial)``): whether ``ldp decode``'s checks flag it,
    whether the candidates' pair check does and its statistic, which checks flagged it, and on trials 0 and 1
    whether the dashboard's verdict differs."""
    import numpy as np

    from ldp.ingest.series import poisoning
    from ldp.jobs.rappor_poisoning import candidate_evidence
    from ldp.simulation.rappor_disguise import disguised_window

    i, targets, fraction = next((j, t, f) for j, (name, t, f) in enumerate(ROWS) if name == row)
    gen = np.random.default_rng([seed, k, m, n, i, trial])
    win = disguised_window(_params(k, m), "honest" if targets == 0 else "alternating", n=n, fraction=fraction,
                           rng=gen, gain=False, targets=max(targets, 1))
    ev = candidate_evidence(win.aggregate, cands, alpha=ALPHA)
    own = {c.name: c for c in ev.checks}.get("pair_candidates")
    out = {"k": k, "m": m, "n": n, "row": row, "trial": trial, "flag": bool(ev.suspicious),
           "pc": bool(own is not None and own.suspicious), "stat": None if own is None else own.statistic,
           "by": [c.name for c in ev.checks if c.suspicious], "checks": len(ev.checks)}
    if trial < 2:
        board = poisoning(win.aggregate, cands)
        out["board_differs"] = board is None or board["verdict"] != ev.verdict
    return out


def measure_shape(k: int, m: int, n: int, trials: int, honest: int, seed: int, sink: Any = None,
                  rows: Iterable[str] | None = None) -> list[dict]:
    """Every window of one shape: ``honest`` honest ones, ``trials`` of each attack (one JSON line each to
    ``sink``); ``rows``: only these rows (names of :data:`ROWS`)."""
    from ldp.decoders.rappor_decode import synthetic_rappor_candidates

    cands = synthetic_rappor_candidates(_params(k, m), 64)
    keep = None if rows is None else set(rows)
    out = []
    for row, targets, _ in ROWS:
        if keep is not None and row not in keep:
            continue
        for trial in range(trials if targets else honest):
            rec = window(k, m, n, row, trial, seed, cands)
            out.append(rec)
            if sink is not None:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
    return out


def bounds(k: int, m: int, n: int, draws: int = 6, rows: Iterable[str] | None = None) -> dict[str, float]:
    """Per attack row (``rows``: only these) the bound (:func:`ldp.jobs.rappor_power_bound.power_bound`, ``draws``
    draws of the targets), at the window's threshold (7 checks, 64 candidates)."""
    from ldp.jobs.rappor_power_bound import power_bound

    params = _params(k, m)
    keep = None if rows is None else set(rows)
    return {row: round(power_bound(params, n, f, t, draws=draws)["power"], 3) for row, t, f in ATTACKS
            if keep is None or row in keep}


def table(records: Iterable[dict[str, Any]], draws: int = 6) -> list[dict[str, Any]]:
    """The cells of the windows ``records``: per shape and row the share flagged, the windows, the dashboard's
    disagreements and (attack rows) the bound."""
    from scipy import stats

    cells: dict[tuple[int, int, int], dict[str, Any]] = {}
    for r in records:
        cell = cells.setdefault((r["k"], r["m"], r["n"]), {"k": r["k"], "m": r["m"], "n": r["n"], "rows": {}})
        row = cell["rows"].setdefault(r["row"], {"flagged": 0, "trials": 0, "board_differs": 0})
        row["flagged"] += int(r["flag"])
        row["trials"] += 1
        row["board_differs"] += int(r.get("board_differs", False))
    for (k, m, n), cell in sorted(cells.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        bound = bounds(k, m, n, draws, [name for name in cell["rows"] if name != "honest"])
        for name, row in cell["rows"].items():
            row["power"] = round(row["flagged"] / row["trials"], 3)
            if name == "honest":
                row["tolerance"] = int(stats.binom.isf(0.001, row["trials"], ALPHA))
            else:
                row["bound"] = bound[name]
    return [cells[key] for key in sorted(cells, key=lambda t: (t[2], t[0], t[1]))]


def judge(ctx: Any, cells: list[dict[str, Any]]) -> None:
    """The section's judges (module docstring), in place."""
    for cell in cells:
        for name, row in cell["rows"].items():
            label = f"rappor_power.k{cell['k']}_m{cell['m']}_n{cell['n']}.{name}"
            if name == "honest":
                row["target"] = ctx.judge(label, row["flagged"], "<=", row["tolerance"], "false alarms")
            elif row["bound"] >= BOUND_FOR_TARGET:
                row["target"] = ctx.judge(label, row["power"], ">=", POWER_TARGET, "share flagged")


def register(b: ModuleType) -> None:
    """Add the ``rappor_power`` section to the benchmark module ``b``."""

    @b.benchmark("rappor_power")
    def rappor_power(ctx: Any) -> dict[str, Any]:
        trials, honest, shapes = (4, 20, QUICK) if ctx.quick else (10, 40, CORNERS)
        t0 = time.perf_counter()
        records = [r for k, m, n in shapes for r in measure_shape(k, m, n, trials, honest, ctx.seed)]
        cells = table(records, 2 if ctx.quick else 4)
        judge(ctx, cells)
        return {"alpha": ALPHA, "h": 2, "p": 0.25, "q": 0.75, "f": 0.5, "candidates": 64, "cells": cells,
                "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="windows per attack row")
    ap.add_argument("--honest", type=int, default=200, help="honest windows per shape")
    ap.add_argument("--seed", type=int, default=88)
    ap.add_argument("--quick", action="store_true", help="three shapes, 4 windows per row")
    ap.add_argument("--shapes", default=None, help="comma-separated KxMxN, e.g. 16x4x20000,128x64x100000")
    ap.add_argument("--rows", default=None, help="comma-separated rows to run, e.g. honest,3x5%% (default: all)")
    ap.add_argument("--out", default=None, help="append every window to this JSON-lines file")
    ap.add_argument("--table", nargs="*", default=None, help="only print the table of these JSON-lines files")
    a = ap.parse_args()
    if a.table is not None:
        records = [json.loads(line) for path in a.table for line in open(path)]
        print(json.dumps(table(records), indent=1))
        return
    chosen = (tuple(tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")) if a.shapes
              else QUICK if a.quick else SHAPES)
    sink = open(a.out, "a") if a.out else None
    rows = a.rows.split(",") if a.rows else None
    records = [r for k, m, n in chosen for r in measure_shape(k, m, n, 4 if a.quick else a.trials,
                                                              20 if a.quick else a.honest, a.seed, sink, rows)]
    print(json.dumps(table(records), indent=1))


if __name__ == "__main__":
    main()
