#!/usr/bin/env python3
"""A simulated deployment end to end: many clients with their own state files, uploads, server jobs.

    python simulations/deployment.py                      # 1,000 clients x 4 days (~20 s)
    python simulations/deployment.py --quick              # 120 clients x 3 days (a few seconds)
    python simulations/deployment.py --clients 2000 --days 5 --out results/deployment

The collection is ``examples/collection.json``: ``app_category`` (GRR, 4 labels), ``dark_mode``
(forced-response RR) and ``homepage`` (RAPPOR, 5 candidate host names).

Clients. Client i has a usual app category (Zipf over the 4 labels), a dark-mode setting
(on with probability 0.3) and a home page (Zipf over the 5 candidates); each day its category is
the usual one with probability 0.7, else uniform. Each day every client opens its state file
(``TelemetryClient`` with a fake clock at a random time of that day), records the three metrics,
and one client in ten tries a second ``app_category`` report, which the budget must refuse. Then
its uploader sends ``pending()`` to the ingest service, unless it is offline that day (probability
0.15); after the last day every client comes online once more and sends what it still holds. The
ingest service appends each upload to the file of the day it arrived (``uploads/arrived-<day>.jsonl``),
so reports of one window are spread over several files.

Server. ``ldp.jobs.fold_files`` folds the upload files (``--by-window``: one aggregate per
metric and day the reports were made), then each aggregate is decoded (RAPPOR with the spec's
candidate dictionary, every candidate fitted) and compared with the truth of that day. The same
uploads are also converted to CSV, Parquet and binary files, and aggregated again.

Checks (printed, and in ``summary.json``): the budgets held (every extra report refused, nothing
spent beyond a cap, each client made exactly one report per metric and day); the server counted
exactly one report per client, metric and day (nothing lost or doubled through outbox and
uploads); every format gave the same aggregate bytes; and the share of 95% intervals that hold
the true count (≈ 0.95 expected; RAPPOR's are per day, since a client's memoized PRR makes its
reports on different days dependent). Outputs in ``--out``: ``estimates.csv`` (one row per
metric, day and item: truth, estimate, standard error, interval, covered), ``summary.json``,
and the server's folders.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from ldp.client.runtime import BudgetExceeded, TelemetryClient  # noqa: E402
from ldp.display.progress import progress  # noqa: E402
from ldp.jobs import (  # noqa: E402
    decode_aggregate,
    fold_files,
    load_candidates,
    read_aggregate,
    sections_from_envelopes,
    write_binary,
    write_csv,
    write_parquet,
)
from ldp.jobs.store import same_reports  # noqa: E402
from ldp.simulation.collect import write_rows_csv  # noqa: E402
from ldp.spec import CollectionSpec, parse_envelope  # noqa: E402

SPEC_PATH = REPO / "examples" / "collection.json"
DAY = 86400
FIRST_DAY = 20000
ESTIMATE_COLUMNS = ("metric", "window", "item", "true_count", "count", "std_error", "ci_low", "ci_high", "covered")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, help="simulated devices (default 1000; 120 with --quick)")
    ap.add_argument("--days", type=int, help="days of recording (default 4; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a small deployment, for tests (a few seconds)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    ap.add_argument("--seed", type=int, default=2024, help="seed of the population and of the clients' noise")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes simulating the clients (default: 2)")
    ap.add_argument("--state-dir", help="keep the clients' state files here (default: a temporary folder)")
    ap.add_argument("--out", default=str(REPO / "simulations" / "results" / "deployment"), help="output folder")
    args = ap.parse_args(argv)
    args.clients = args.clients or (120 if args.quick else 1000)
    args.days = args.days or (3 if args.quick else 4)
    if args.clients < 1 or args.days < 1:
        ap.error("--clients and --days must be >= 1")
    return args


def population(spec: CollectionSpec, clients: int, seed: int) -> dict[str, np.ndarray]:
    """Each client's usual category, dark-mode setting and home page (indices)."""
    rng = np.random.default_rng([seed, 0])
    labels = spec.params("app_category").domain_size
    cands = len(load_candidates(spec, "homepage") or [])
    zipf = lambda k: (1 / np.arange(1, k + 1)) / (1 / np.arange(1, k + 1)).sum()  # noqa: E731
    return {"category": rng.choice(labels, clients, p=zipf(labels)), "dark": rng.random(clients) < 0.3,
            "home": rng.choice(cands, clients, p=zipf(cands))}


def simulate_clients(ids: list[int], pop: dict[str, np.ndarray], days: int, seed: int, state_dir: str
                     ) -> dict[str, Any]:
    """Run clients ``ids`` through every day; return their uploads, truth and budget checks."""
    spec = CollectionSpec.load(SPEC_PATH)
    labels = spec.params("app_category").labels
    cands = load_candidates(spec, "homepage") or []
    out: dict[str, Any] = {"uploads": {}, "truth": {}, "refused": 0, "tried": 0, "over_cap": 0, "recorded": 0,
                           "pending_left": 0, "one_per_day": True}
    for cid in ids:
        rng = np.random.default_rng([seed, 1, cid])
        now = [0.0]
        path = os.path.join(state_dir, f"client-{cid}.sqlite")
        for day in range(days + 1):  # the extra day: everyone comes online once more and uploads
            now[0] = (FIRST_DAY + day) * DAY + float(rng.uniform(60, DAY - 60))
            with TelemetryClient(spec, path, clock=lambda now=now: now[0], rng=int(rng.integers(2**32)),
                                 simulation=True) as app:
                if day < days:
                    category = pop["category"][cid] if rng.random() < 0.7 else int(rng.integers(len(labels)))
                    values = {"app_category": labels[category], "dark_mode": bool(pop["dark"][cid]),
                              "homepage": cands[pop["home"][cid]]}
                    for metric, value in values.items():
                        app.record(metric, value)
                        key = f"{metric}|{FIRST_DAY + day}|{value}"
                        out["truth"][key] = out["truth"].get(key, 0) + 1
                    out["recorded"] += 3
                    if rng.random() < 0.1:
                        out["tried"] += 1
                        try:
                            app.record("app_category", labels[0])
                        except BudgetExceeded:
                            out["refused"] += 1
                if day == days or rng.random() >= 0.15:  # online: upload what is pending
                    batch = app.pending()
                    out["uploads"].setdefault(day, []).extend(item.line for item in batch)
                    app.acknowledge([item.id for item in batch])
                if day == days:
                    out["over_cap"] += sum(_over_cap(spec, app, m) for m in spec.metrics)
                    counts = app.counts()
                    out["pending_left"] += sum(c["pending"] for c in counts.values())
                    out["one_per_day"] &= all(c["reports"] == days and c["uploaded"] == days for c in counts.values())
    return out


def _over_cap(spec: CollectionSpec, app: TelemetryClient, metric: str) -> int:
    """1 if the lifetime spending of ``metric`` exceeds its cap (it never should)."""
    cap = spec.metrics[metric].budget.lifetime
    return int(cap is not None and not app.spent(metric, "lifetime").fits_within(cap))


def merge_results(parts: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"uploads": {}, "truth": {}}
    for p in parts:
        for day, lines in p["uploads"].items():
            total["uploads"].setdefault(day, []).extend(lines)
        for k, v in p["truth"].items():
            total["truth"][k] = total["truth"].get(k, 0) + v
        for k in ("refused", "tried", "over_cap", "recorded", "pending_left"):
            total[k] = total.get(k, 0) + p[k]
        total["one_per_day"] = total.get("one_per_day", True) and p["one_per_day"]
    return total


def estimate_rows(spec: CollectionSpec, out: Path, truth: dict[str, int]) -> list[dict[str, Any]]:
    """Decode every per-day aggregate and set it beside the truth of that day."""
    rows = []
    cands = load_candidates(spec, "homepage")
    for path in sorted((out / "aggregates").glob("*.agg")):
        metric, _, window = path.name[:-4].split(".")
        agg = read_aggregate(path)
        est = decode_aggregate(agg, cands if metric == "homepage" else None, selection="none")
        for i, item in enumerate(est.items):
            value = {"no": "False", "yes": "True"}[item] if metric == "dark_mode" else item  # RR items: no, yes
            t = truth.get(f"{metric}|{window[1:]}|{value}", 0)
            lo, hi = float(est.ci_low[i]), float(est.ci_high[i])
            rows.append({"metric": metric, "window": int(window[1:]), "item": item, "true_count": t,
                         "count": float(est.count[i]), "std_error": float(est.std_error[i]), "ci_low": lo,
                         "ci_high": hi, "covered": bool(lo <= t <= hi)})
    return rows


def formats_agree(spec: CollectionSpec, upload_files: list[Path], out: Path) -> bool:
    """Convert the uploads to CSV, Parquet and binary; aggregate each; compare the aggregates (the same bytes, but
    for the arrays the fold's own coins fill: :func:`ldp.jobs.store.same_reports`)."""
    envs = [parse_envelope(line) for f in upload_files for line in f.read_text().splitlines()]
    conv = out / "converted"
    conv.mkdir(exist_ok=True)
    write_csv(conv / "uploads.csv", envs)
    write_binary(conv / "uploads.ldpe", sections_from_envelopes(envs))
    files = [conv / "uploads.csv", conv / "uploads.ldpe"]
    try:
        write_parquet(conv / "uploads.parquet", sections_from_envelopes(envs))
        files.append(conv / "uploads.parquet")
    except ImportError:
        pass
    want = sorted(p.name for p in (out / "server" / "aggregates").glob("*.agg"))
    for f in files:
        job = out / f"server-{f.suffix[1:]}"
        shutil.rmtree(job, ignore_errors=True)
        fold_files([f], spec, job, by_window=True, progress=False)
        got = sorted(p.name for p in (job / "aggregates").glob("*.agg"))
        if got != want or not all(same_reports(out / "server" / "aggregates" / name, job / "aggregates" / name)
                                  for name in want):
            return False
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole deployment; returns the summary (also written to ``summary.json``)."""
    t0 = time.perf_counter()
    spec = CollectionSpec.load(SPEC_PATH)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    (out / "uploads").mkdir(parents=True)
    pop = population(spec, args.clients, args.seed)
    state = Path(args.state_dir) if args.state_dir else Path(tempfile.mkdtemp(prefix="ldp-deployment-"))
    state.mkdir(parents=True, exist_ok=True)
    # small blocks of clients (each client's randomness is its own), so that the progress bar moves
    n_blocks = min(args.clients, 8 * max(args.workers, 1))
    blocks = [list(range(i, args.clients, n_blocks)) for i in range(n_blocks)]
    parts = []
    try:
        with (contextlib.ExitStack() as stack,
              progress(args.clients, "deployment", False if args.quiet else None, unit="client") as bar):
            pool = stack.enter_context(ProcessPoolExecutor(args.workers)) if args.workers > 1 else None
            done = (pool.map if pool else map)(simulate_clients, blocks, repeat(pop), repeat(args.days),
                                               repeat(args.seed), repeat(str(state)))
            for block, part in zip(blocks, done, strict=True):
                parts.append(part)
                bar.update(len(block))
    finally:
        if not args.state_dir:
            shutil.rmtree(state, ignore_errors=True)
    sim = merge_results(parts)
    t_clients = time.perf_counter() - t0
    files = []
    for day, lines in sorted(sim["uploads"].items()):
        files.append(out / "uploads" / f"arrived-{FIRST_DAY + day}.jsonl")
        files[-1].write_text("".join(line + "\n" for line in sorted(lines)))
    t1 = time.perf_counter()
    server = fold_files(files, spec, out / "server", by_window=True, progress=False)
    t_server = time.perf_counter() - t1
    rows = estimate_rows(spec, out / "server", sim["truth"])
    write_rows_csv(out / "estimates.csv", ESTIMATE_COLUMNS, rows)
    per_window = {(a["metric"], a["window"]): a["n"] for a in server.aggregates.values()}
    coverage = {m: float(np.mean([r["covered"] for r in rows if r["metric"] == m])) for m in spec.metrics}
    summary = {
        "clients": args.clients, "days": args.days, "seed": args.seed, "reports_recorded": sim["recorded"],
        "extra_reports_tried": sim["tried"], "extra_reports_refused": sim["refused"],
        "upload_files": len(files), "server_records": server.records, "server_rejected": server.rejected,
        "checks": {
            "budgets_held": sim["refused"] == sim["tried"] and sim["over_cap"] == 0 and sim["one_per_day"],
            "one_report_per_client_metric_day": server.accepted == sim["recorded"] and sim["pending_left"] == 0
            and set(per_window.values()) == {args.clients} and len(per_window) == 3 * args.days,
            "formats_agree": formats_agree(spec, files, out),
        },
        "ci_coverage": coverage, "ci_coverage_all": float(np.mean([r["covered"] for r in rows])),
        "intervals": len(rows), "seconds": {"clients": round(t_clients, 2), "server": round(t_server, 2),
                                            "total": round(time.perf_counter() - t0, 2)},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def render(summary: dict[str, Any]) -> str:
    c, s = summary["checks"], summary["seconds"]
    cov = ", ".join(f"{m} {v:.2f}" for m, v in summary["ci_coverage"].items())
    return "\n".join([
        f"deployment: {summary['clients']:,} clients x {summary['days']} days, {summary['reports_recorded']:,} reports "
        f"in {summary['upload_files']} upload files (clients {s['clients']} s, server {s['server']} s)",
        f"budgets held: {c['budgets_held']} ({summary['extra_reports_refused']}/{summary['extra_reports_tried']} extra "
        "reports refused)",
        f"server: {summary['server_records']:,} records, rejected {summary['server_rejected'] or 0}; one report per "
        f"client, metric and day: {c['one_report_per_client_metric_day']}; formats agree: {c['formats_agree']}",
        f"95% CI coverage over {summary['intervals']} intervals: {summary['ci_coverage_all']:.2f} ({cov})",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    summary = run(args)
    print(render(summary))
    print(f"wrote {Path(args.out) / 'estimates.csv'} and {Path(args.out) / 'summary.json'}")
    ok = all(summary["checks"].values()) and summary["ci_coverage_all"] >= 0.8 and not math.isnan(
        summary["ci_coverage_all"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
