#!/usr/bin/env python3
"""Google's RAPPOR regression test (google/rappor regtest.sh), run against ldp's decoder.

    python simulations/rappor_regtest.py                      # tiny + small: 50 cases, well under a minute
    python simulations/rappor_regtest.py --all-sizes          # + medium and large (aggregate-level simulation)
    python simulations/rappor_regtest.py --dists exp,zipf1 --configs sharp --repeats 5 --no-plots

Cases, metrics and the per-case plot are in :mod:`ldp.simulation.rappor_regtest`. Writes to ``--out``:
``results.csv`` (one row per case and repeat), ``summary.csv`` (per case: the mean of every
metric and its standard error over the repeats, as Google's make_summary.py) and, unless
``--no-plots``, ``<case>.png`` (first repeat). Every case and repeat has its own random stream
derived from ``--seed``, the case name and the repeat number, so a subset reproduces the full run.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import sys
import time
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "simulations" / "results" / "rappor_regtest"
SUMMARY_METRICS = ("num_detected", "fp", "fn", "fp_rate", "fn_rate", "total_variation", "allocated_mass",
                   "ci_covered", "seconds")


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=_csv_list, default=["tiny", "small"], help="comma list (default tiny,small)")
    ap.add_argument("--all-sizes", action="store_true", help="add medium and large (aggregate-level path)")
    ap.add_argument("--dists", type=_csv_list, default=None, help="comma list (default: all five)")
    ap.add_argument("--configs", type=_csv_list, default=None, help="comma list (default: all five)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--mode", choices=("ldp", "google"), default="ldp", help="Bloom hashing of the encoder")
    ap.add_argument("--repeats", type=int, default=1, help="instances per case (default 1)")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--correction", choices=("bh", "holm", "bonferroni"), default="bh")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    if args.all_sizes:
        args.sizes = list(dict.fromkeys([*args.sizes, "medium", "large"]))
    return args


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean over the finite values (NaN when undefined)."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    if not xs:
        return math.nan, math.nan
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, math.nan
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    return mean, math.sqrt(var / len(xs))


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    out = []
    for name, rs in by_case.items():
        s: dict[str, Any] = {"case": name, "repeats": len(rs), "n_reports": rs[0]["n_reports"],
                             "num_candidates": rs[0]["num_candidates"], "method": rs[0]["method"],
                             "mode": rs[0]["mode"]}
        for metric in ("num_actual", *SUMMARY_METRICS):
            s[metric], s[metric + "_se"] = mean_se([r[metric] for r in rs])
        out.append(s)
    return out


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["case"])
        writer.writeheader()
        writer.writerows(rows)


def _fmt(x: float, se: float, digits: int) -> str:
    text = f"{x:.{digits}f}"
    return text if math.isnan(se) else f"{text}±{se:.{digits}f}"


def format_table(summary: list[dict[str, Any]]) -> str:
    head = f"{'case':30s} {'det':>6s} {'FP':>6s} {'FN':>7s} {'TV':>11s} {'mass':>11s} {'sec':>6s}"
    lines = [head, "-" * len(head)]
    for s in summary:
        lines.append(f"{s['case']:30s} {s['num_detected']:6.1f} {s['fp']:6.1f} {s['fn']:7.1f} "
                     f"{_fmt(s['total_variation'], s['total_variation_se'], 3):>11s} "
                     f"{_fmt(s['allocated_mass'], s['allocated_mass_se'], 3):>11s} {s['seconds']:6.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if str(ROOT) not in sys.path:  # run as a script from anywhere: use this source tree's ldp
        sys.path.insert(0, str(ROOT))
    import numpy as np

    from ldp.display.progress import progress
    from ldp.extras import install_hint
    from ldp.simulation import rappor_regtest as regtest

    if not args.no_plots and importlib.util.find_spec("matplotlib") is None:
        print(f"error: plots need matplotlib: {install_hint('matplotlib', 'plot')}; or pass --no-plots",
              file=sys.stderr)
        return 2
    try:
        selected = regtest.cases(args.sizes, args.dists, args.configs, mode=args.mode)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    runs = len(selected) * args.repeats
    with progress(runs, "rappor_regtest", False if args.quiet else None, unit="run") as bar:
        for i, case in enumerate(selected, 1):
            bar.set_postfix_str(case.name)
            for rep in range(args.repeats):
                rng = np.random.default_rng([args.seed, zlib.crc32(case.name.encode()), rep])
                # scikit-learn's lasso warns per fit on the big cases; keep the table readable
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Objective did not converge")
                    res = regtest.run_case(case, rng, alpha=args.alpha, correction=args.correction)
                row = res.row()
                rows.append({"case": row.pop("case"), "repeat": rep, **row})
                if rep == 0 and not args.no_plots:
                    regtest.plot_case(res, args.out / f"{case.name}.png")
                bar.update(1)
            if not bar:  # a log line per case without a bar (the bar shows the case's name)
                print(f"[{i}/{len(selected)}] {case.name}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    summary = summarize(rows)
    _write_csv(args.out / "results.csv", rows)
    _write_csv(args.out / "summary.csv", summary)
    print(format_table(summary))
    print(f"\n{len(selected)} cases x {args.repeats} repeat(s), mode={args.mode}, seed={args.seed}: "
          f"{elapsed:.1f} s; wrote {args.out}/results.csv and summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
