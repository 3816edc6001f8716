"""``ldp associate``: the joint distribution of two variables reported by the same clients (docs/association.md).

Two inputs: two attributes of a split ``multi`` metric (``--metric M --attributes A B REPORTS...``: one report
per client carries both), or two metrics from row-aligned files (``--pair MA MB --a-reports F --b-reports F``:
row ``i`` of each is client ``i``, as simulations write them). Bad input ends with ``ldp associate: error: ...``
on stderr and status 2."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
from typing import Any

from ldp.cli.support import BAD_INPUT, input_file, number, open_unit, report_error

__all__ = ["add_associate_arguments", "associate_command", "SE_CHOICES", "register"]

MAX_REPLICATES = 100_000
SE_CHOICES = ("bootstrap", "information", "none")
"""``ldp.decoders.association.SE_METHODS``, spelled out: ``ldp --help`` must not import numpy (a test checks both)."""


def register(subparsers: Any) -> None:
    """Add ``associate`` to the ``ldp`` subcommands, run by :func:`associate_command`."""
    add_associate_arguments(subparsers).set_defaults(handler=associate_command)


def add_associate_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``associate`` command; returns its parser."""
    p = subparsers.add_parser(
        "associate", help="joint distribution of two variables reported by the same clients (EM, with SEs)",
        description="Estimate the joint table of two privatized variables by EM, with standard errors: two "
                    "attributes of a split multi metric (--metric M --attributes A B REPORTS...; one report per "
                    "client carries both), or two metrics from row-aligned files (--pair MA MB --a-reports F "
                    "--b-reports F; row i of each is client i). Reports are validated as ldp fold does; "
                    "the rejected ones are counted by reason. See docs/association.md.")
    p.add_argument("reports", nargs="*", metavar="REPORTS",
                   help="with --metric: report files (JSONL, CSV, Parquet, binary .ldpe) or folders of them")
    p.add_argument("--spec", action="append", required=True, metavar="FILE",
                   help="the collection spec; repeat for every version deployed")
    p.add_argument("--metric", help="a split multi metric of the spec")
    p.add_argument("--attributes", nargs=2, metavar=("A", "B"), help="with --metric: the two attributes to pair")
    p.add_argument("--pair", nargs=2, metavar=("METRIC_A", "METRIC_B"), help="two metrics in row-aligned files")
    p.add_argument("--a-reports", type=input_file, metavar="FILE", help="with --pair: METRIC_A's reports")
    p.add_argument("--b-reports", type=input_file, metavar="FILE", help="with --pair: METRIC_B's reports")
    p.add_argument("--format", choices=("jsonl", "csv", "parquet", "binary"),
                   help="the inputs' format (default: from each file's extension)")
    p.add_argument("--se", choices=SE_CHOICES, default="bootstrap",
                   help="standard errors: bootstrap over clients (default), observed information (small tables), "
                        "or none")
    p.add_argument("--replicates", type=number(int, 2, MAX_REPLICATES), default=200,
                   help="bootstrap replicates (default 200)")
    p.add_argument("--confidence", type=open_unit, default=0.95,
                   help="confidence level of the intervals (default 0.95)")
    p.add_argument("--seed", type=number(int, 0, 2**63 - 1), default=None,
                   help="seed of the bootstrap (default: fresh randomness)")
    p.add_argument("--candidates-a", type=input_file, metavar="FILE",
                   help="with --pair: METRIC_A's RAPPOR candidates, one per line (default: the spec's)")
    p.add_argument("--candidates-b", type=input_file, metavar="FILE",
                   help="with --pair: METRIC_B's RAPPOR candidates (default: the spec's)")
    p.add_argument("--other", action="store_true",
                   help="add an '(other)' value to the RAPPOR variables: any string outside the candidates")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="CSV output: one row per cell")
    return p


def associate_command(args: argparse.Namespace) -> int:
    """Run ``ldp associate`` and print its result (0), or the error line (2)."""
    try:
        pairs = _pairs(args)
        res = pairs.associate(se=args.se, replicates=args.replicates, level=args.confidence, rng=args.seed)
        if args.json:
            print(json.dumps(_to_dict(pairs, res)))
        elif args.csv:
            print(_to_csv(res), end="")
        else:
            print(_text(pairs, res))
        return 0
    except BrokenPipeError:
        raise  # the caller decides (ldp.cli.command: the reader closed stdout)
    except BAD_INPUT as exc:
        return report_error("ldp associate", exc)


def _pairs(args: argparse.Namespace) -> Any:
    """The :class:`~ldp.jobs.association.Pairs` the options name (their combinations checked first)."""
    from ldp.jobs.association import aligned_pairs, multi_pairs

    if (args.metric is None) == (args.pair is None):
        raise ValueError("give either --metric M --attributes A B REPORTS... (a split multi metric) or "
                         "--pair METRIC_A METRIC_B --a-reports F --b-reports F (row-aligned files)")
    if args.metric is not None:
        if args.attributes is None:
            raise ValueError("--metric needs --attributes A B (the two attributes to pair)")
        if not args.reports:
            raise ValueError("--metric needs report files (or folders of them)")
        stray = [o for o, v in (("--a-reports", args.a_reports), ("--b-reports", args.b_reports),
                                ("--candidates-a", args.candidates_a), ("--candidates-b", args.candidates_b),
                                ("--other", args.other)) if v]
        if stray:
            raise ValueError(f"{', '.join(stray)} go with --pair (multi attributes are not RAPPOR)")
        return multi_pairs(args.spec, args.metric, args.attributes, args.reports, fmt=args.format)
    if args.attributes is not None or args.reports:
        raise ValueError("--pair takes its files as --a-reports F --b-reports F (no --attributes, no positional "
                         "report files)")
    if args.a_reports is None or args.b_reports is None:
        raise ValueError("--pair needs --a-reports FILE and --b-reports FILE (row i of each: client i)")
    return aligned_pairs(args.spec, args.pair[0], args.pair[1], args.a_reports, args.b_reports,
                         candidates_a=args.candidates_a, candidates_b=args.candidates_b, other=args.other,
                         fmt=args.format)


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _to_dict(pairs: Any, res: Any) -> dict[str, Any]:
    def grid(a: Any) -> list[list[float | None]]:
        return [[_num(x) for x in row] for row in a.tolist()]

    return {"variables": list(pairs.names), "labels_a": res.labels_a, "labels_b": res.labels_b, "n": res.n,
            "records": pairs.records, "rejected": dict(sorted(pairs.rejected.items())),
            "other_metrics": pairs.other_metrics, "unpaired": pairs.unpaired,
            "table": grid(res.table), "se": grid(res.se), "lower": grid(res.lower), "upper": grid(res.upper),
            "confidence": res.level, "se_method": res.se_method,
            "marginal_a": res.table.sum(axis=1).tolist(), "marginal_b": res.table.sum(axis=0).tolist(),
            "privacy_cost": res.privacy_cost.to_dict(), "privacy_note": pairs.cost_note,
            "converged": res.converged, "maps": res.maps, "loglik": res.loglik}


def _to_csv(res: Any) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["a", "b", "estimate", "se", "lower", "upper", "count"])
    for i, la in enumerate(res.labels_a):
        for j, lb in enumerate(res.labels_b):
            se = res.se[i, j]
            w.writerow([la, lb, f"{res.table[i, j]:.6g}", f"{se:.6g}" if math.isfinite(se) else "",
                        f"{res.lower[i, j]:.6g}" if math.isfinite(se) else "",
                        f"{res.upper[i, j]:.6g}" if math.isfinite(se) else "", f"{res.counts[i, j]:.1f}"])
    return buf.getvalue()


def _marginal(name: str, labels: list[str], values: Any) -> str:
    return f"marginal of {name}: " + ", ".join(f"{lab} {v:.3f}" for lab, v in zip(labels, values, strict=True))


def _text(pairs: Any, res: Any) -> str:
    rejected = sum(pairs.rejected.values())
    read = f"{res.n} pairs ({pairs.records} records read"
    read += f"; {rejected} rejected: " + ", ".join(f"{k} {v}" for k, v in sorted(pairs.rejected.items())) \
        if rejected else "; none rejected"
    if pairs.other_metrics:
        read += f"; {pairs.other_metrics} reports of other metrics skipped"
    if pairs.unpaired:
        read += f"; {pairs.unpaired} valid reports unpaired (their partner row was rejected)"
    se = {"bootstrap": "bootstrap SE", "information": "observed-information SE", "none": "no SE"}[res.se_method]
    lines = [f"{pairs.names[0]} × {pairs.names[1]}: {read})",
             f"joint distribution (rows: {pairs.names[0]}, columns: {pairs.names[1]}; proportion ± {se}):",
             res.format(digits=3),
             _marginal(pairs.names[0], res.labels_a, res.table.sum(axis=1)),
             _marginal(pairs.names[1], res.labels_b, res.table.sum(axis=0)),
             f"privacy cost per client: ε = {res.privacy_cost.epsilon:.4g}"
             + (f", δ = {res.privacy_cost.delta:.3g}" if res.privacy_cost.delta else "") + f"; {pairs.cost_note}",
             f"EM: {'converged' if res.converged else 'NOT converged'} after {res.maps} maps "
             f"(log-likelihood {res.loglik:.6g})"]
    return "\n".join(lines)
