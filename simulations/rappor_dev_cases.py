#!/usr/bin/env python3
"""The RAPPOR decoder on the cases made with Google's own client and R decoder (issue 20, item 1).

    python simulations/rappor_dev_cases.py                     # every case in ../shared/rappor-dev-cases
    python simulations/rappor_dev_cases.py --cases DIR --json  # another folder of cases, JSON out

Each case folder holds Google's decoder inputs (``case_params.csv``, ``case_counts.csv``,
``case_map.csv``), the truth (``truth.csv``) and Google's result (``google_summary.json``); the
folder's ``score.py`` reproduces Google's ``compare_dist.R`` metrics. Per case this prints FP, FN,
TV (and TV ÷ Google's TV), the number of strings reported and the decode time, for Google and for
our decoder with its default (Benjamini–Hochberg at 5 % FDR, every candidate fitted when there are
at most half as many as rows), Holm and Bonferroni (5 % family-wise), and the previous default's
lasso selection with BH. A string is reported with proportion = estimated count / N, as Google's
``results.csv`` has it. "goal" marks FP ≤ Google's and TV ≤ 0.9 × Google's (issue 20's goal).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

from ldp.decoders.rappor import RapporAggregate
from ldp.decoders.rappor_decode import CandidateMap, decode
from ldp.encoders.rappor import RapporParams

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ROOT.parent / "shared" / "rappor-dev-cases"
VARIANTS: dict[str, dict[str, Any]] = {
    "default (bh, auto)": {},
    "holm": {"correction": "holm"},
    "bonferroni": {"correction": "bonferroni"},
    "bh, lasso": {"selection": "lasso"},
}
GOAL_TV = 0.9


def load_scorer(folder: Path) -> Any:
    """The cases' own ``score(truth, detected)`` (Google's compare_dist.R metrics)."""
    spec = importlib.util.spec_from_file_location("rappor_dev_score", folder / "score.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no score.py in {folder}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.score


def load_case(case: Path) -> tuple[RapporAggregate, CandidateMap, dict[str, int], dict[str, Any]]:
    params = RapporParams.from_google_csv((case / "case_params.csv").read_text(encoding="utf-8"))
    agg = RapporAggregate.from_google_counts(params, (case / "case_counts.csv").read_text(encoding="utf-8"))
    cmap = CandidateMap.from_google_map(params, (case / "case_map.csv").read_text(encoding="utf-8"))
    with open(case / "truth.csv", newline="", encoding="utf-8") as fh:
        truth = {row["value"]: int(row["count"]) for row in csv.DictReader(fh)}
    google = json.loads((case / "google_summary.json").read_text(encoding="utf-8"))
    return agg, cmap, truth, google


def run_case(case: Path, score: Any, repeats: int = 3) -> dict[str, Any]:
    """Google's figures and each variant's, with the goal checked against Google's."""
    agg, cmap, truth, g = load_case(case)
    google = {"fp": g["false_positives"], "fn": g["false_negatives"], "tv": g["total_variation_distance"],
              "detected": g["num_detected"], "seconds": g["decode_seconds"]}
    out: dict[str, Any] = {"case": case.name, "n": agg.n, "candidates": len(cmap.candidates), "google": google}
    for name, options in VARIANTS.items():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            est = decode(agg, cmap, **options)
            best = min(best, time.perf_counter() - t0)
        reported = {it: c / agg.n for it, c, d in zip(est.items, est.count, est.detected, strict=True) if d}
        s = score(truth, reported)
        tv = s["total_variation"]
        out[name] = {"fp": s["false_positives"], "fn": s["false_negatives"], "tv": round(tv, 5),
                     "tv_over_google": round(tv / google["tv"], 3), "detected": s["num_detected"],
                     "seconds": round(best, 4), "selection": est.summary["selection"],
                     "goal": bool(s["false_positives"] <= google["fp"] and tv <= GOAL_TV * google["tv"])}
    return out


def run(folder: Path, repeats: int = 3) -> list[dict[str, Any]]:
    score = load_scorer(folder)
    cases = sorted(p for p in folder.iterdir() if (p / "google_summary.json").exists())
    if not cases:
        raise FileNotFoundError(f"no cases (folders with google_summary.json) in {folder}")
    return [run_case(c, score, repeats) for c in cases]


def table(rows: list[dict[str, Any]]) -> str:
    names = ["google", *VARIANTS]
    lines = ["case            " + " | ".join(f"{n:^30}" for n in names),
             "                " + " | ".join(f"{'FP  FN  TV(÷G)  det  s':^30}" for _ in names)]
    for r in rows:
        cells = []
        for n in names:
            v = r[n]
            ratio = v.get("tv_over_google", 1.0)
            mark = "*" if v.get("goal") else " "
            cells.append(f"{v['fp']:>2} {v['fn']:>3} {v['tv']:.4f}({ratio:.2f}){mark} {v['detected']:>3} "
                         f"{v['seconds']:6.2f}")
        lines.append(f"{r['case']:<15} " + " | ".join(f"{c:^30}" for c in cells))
    met = {n: sum(r[n]["goal"] for r in rows) for n in VARIANTS}
    lines.append("goal (FP ≤ Google's and TV ≤ 0.9 × Google's, marked *) met on: "
                 + ", ".join(f"{n} {k}/{len(rows)}" for n, k in met.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="folder of cases (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, help="decode timings: best of this many (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args(argv)
    if not args.cases.is_dir():
        print(f"no case folder at {args.cases}", file=sys.stderr)
        return 2
    rows = run(args.cases, args.repeats)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
