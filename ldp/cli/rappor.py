"""``ldp rappor-decode``: RAPPOR counts decoded into candidate frequencies, from Google's CSVs or an ldp fold
file (RAPPOR's own command: :func:`register` adds it)."""

from __future__ import annotations

import argparse
from typing import Any

from ldp.cli.protocols import aggregate_file, read_bytes
from ldp.cli.support import input_file, open_unit, output

__all__ = ["register", "rappor_decode_command", "rappor_decode_files"]


def register(sub: Any) -> None:
    """Add ``rappor-decode`` to the ``ldp`` subcommands."""
    rd = sub.add_parser("rappor-decode", help="decode RAPPOR counts into candidate frequencies",
                        description="Count recovery by least squares over every candidate (or a lasso's selection when "
                                    "there are many) with Benjamini-Hochberg (default), Holm or Bonferroni tests, "
                                    "from Google's params.csv/counts.csv/map.csv or from an ldp fold file.")
    rd.add_argument("--params", type=input_file, help="Google's params.csv (k,h,m,p,q,f), with --counts")
    rd.add_argument("--counts", type=input_file, help="Google's counts.csv (one row per cohort)")
    rd.add_argument("--aggregate", type=input_file,
                    help="an ldp RAPPOR aggregate (Aggregate.to_bytes) instead of --params/--counts")
    rd.add_argument("--map", type=input_file,
                    help="Google's map.csv of candidates (a leading UTF-8 byte-order mark is dropped)")
    rd.add_argument("--candidates", type=input_file,
                    help="a UTF-8 file of candidate strings, one per line, each exactly as written; a leading "
                         "byte-order mark is dropped and blank lines skipped; a repeated candidate or text that "
                         "is not UTF-8 is an error")
    rd.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    rd.add_argument("--correction", choices=("bh", "holm", "bonferroni"), default="bh",
                    help="multiple-testing correction: Benjamini-Hochberg (default: the expected share of false "
                         "detections among the detections is at most --alpha), Holm or Bonferroni (the chance of "
                         "any false detection is at most --alpha; Holm never detects fewer)")
    rd.add_argument("--selection", choices=("auto", "lasso", "none"), default="auto",
                    help="fit every candidate (none), select by the lasso first (lasso) or choose: every candidate "
                         "when there are at most half as many as count rows and the fit is small "
                         "(rows x candidates^2 <= 4e9), else the lasso (auto, default)")
    rd.add_argument("--confidence", type=open_unit, default=0.95,
                    help="confidence level of the intervals (default 0.95; --google-csv names its interval "
                         "columns for it)")
    shown = rd.add_mutually_exclusive_group()
    shown.add_argument("--all", action="store_true", help="print every candidate, not only the detected ones")
    shown.add_argument("--detected-only", action="store_true",
                       help="with --csv or --json: only the detected candidates (the printed table shows only "
                            "them unless --all)")
    out = rd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output (every candidate)")
    out.add_argument("--csv", action="store_true", help="CSV output (every candidate)")
    out.add_argument("--google-csv", action="store_true",
                     help="Google's results.csv (string, estimate, std_error, proportion, prop_std_error, "
                          "prop_low_95, prop_high_95): the detected candidates by decreasing estimate")
    rd.set_defaults(handler=rappor_decode_command)


def rappor_decode_command(args: argparse.Namespace) -> int:
    """Run ``ldp rappor-decode``: Google's results.csv (``--google-csv``), CSV or JSON of every candidate (or the
    detected ones), else the table of the detected candidates (``--all``: every one)."""
    from ldp.decoders.rappor_output import detected_only, google_results_csv

    est = rappor_decode_files(args)
    if args.google_csv:
        output(google_results_csv(est), end="")
    elif args.json or args.csv:
        est = detected_only(est) if args.detected_only else est
        output(est.to_json() if args.json else est.to_csv(), end="\n" if args.json else "")
    else:
        shown = est if args.all else detected_only(est)
        output(shown.table(max_rows=len(shown.items) if args.all else 100))
    return 0


def rappor_decode_files(args: argparse.Namespace) -> Any:
    """Decode RAPPOR counts: Google's params/counts/map CSVs, or our aggregate file + candidates.

    Text files are read as UTF-8 (a leading byte-order mark dropped; :func:`ldp.decoders.rappor_output.decode_text`);
    a candidate file by :func:`~ldp.decoders.rappor_output.read_candidates`; no candidates is an error."""
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap, decode
    from ldp.decoders.rappor_output import decode_text, read_candidates
    from ldp.encoders.rappor import RapporParams

    if getattr(args, "google_csv", False) and args.all:
        raise ValueError("--google-csv writes the detected candidates only, as Google's results.csv does; "
                         "for every candidate use --csv or --json")
    if args.aggregate:
        if args.counts or args.params:
            raise ValueError("give either --aggregate or --params with --counts, not both")
        agg = aggregate_file(args.aggregate, RapporAggregate, "RAPPOR")
    else:
        if not (args.params and args.counts):
            raise ValueError("need --aggregate FILE, or Google's --params params.csv and --counts counts.csv")
        params = RapporParams.from_google_csv(decode_text(read_bytes(args.params), args.params))
        agg = RapporAggregate.from_google_counts(params, decode_text(read_bytes(args.counts), args.counts))
    if bool(args.map) == bool(args.candidates):
        raise ValueError("give the candidates as exactly one of --map map.csv (Google) or --candidates FILE")
    if args.map:
        cands: Any = CandidateMap.from_google_map(agg.params, decode_text(read_bytes(args.map), args.map))
        given = len(cands.candidates)
    else:
        cands = read_candidates(read_bytes(args.candidates), args.candidates)
        given = len(cands)
    if not given:
        raise ValueError(f"{args.map or args.candidates} holds no candidates")
    est = decode(agg, cands, alpha=args.alpha, correction=args.correction, confidence=args.confidence,
                 selection=args.selection)
    return est.sorted()
