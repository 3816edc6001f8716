"""``ldp sfp-discover``: popular words discovered from Sequence Fragment Puzzle reports (SFP's own command:
:func:`register` adds it)."""

from __future__ import annotations

import argparse
from typing import Any

from ldp.cli.protocols import add_discovery_inputs, discovery_aggregate, print_discovery
from ldp.cli.support import number, open_unit, positive_int

__all__ = ["register", "sfp_discover_command", "sfp_discover_files"]


def register(sub: Any) -> None:
    """Add ``sfp-discover`` to the ``ldp`` subcommands."""
    sd = sub.add_parser("sfp-discover", help="discover popular words from Sequence Fragment Puzzle reports",
                        description="Puzzle reconstruction: score every (hash, fragment) record per position, keep "
                                    "the records detected by test, glue them by word hash and confirm candidates in "
                                    "the word sketch.")
    add_discovery_inputs(sd, "SFP", "SfpParams", "--param word_epsilon=2 --param fragment_epsilon=6")
    sd.add_argument("--top", type=positive_int, default=None,
                    help="cap: at most this many detected records per position (default: no cap)")
    sd.add_argument("--alpha", type=number(float, 0, 1, high_open=True), default=0.05,
                    help="expected number of false words reported (default 0.05; 0 turns the tests off, needs --top)")
    sd.add_argument("--false-records", type=number(float, 0, None, low_open=True), default=None,
                    help="expected absent records kept per position (default: 100 per 256 hashes)")
    sd.add_argument("--no-peel", action="store_true",
                    help="raw estimates: do not peel heavy records off the sketches before testing")
    sd.add_argument("--max-candidates", type=positive_int, default=1_000_000,
                    help="stop with an error if more candidate words would be formed (default 1000000)")
    sd.add_argument("--confidence", type=open_unit, default=0.95, help="confidence level of the intervals")
    sd.add_argument("--all", action="store_true", help="print every scored candidate, not only the discovered words")
    out = sd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="CSV output")
    sd.set_defaults(handler=sfp_discover_command)


def sfp_discover_command(args: argparse.Namespace) -> int:
    """Run ``ldp sfp-discover`` and print the discovered words (``--all``: every scored candidate)."""
    agg, found = sfp_discover_files(args)
    print_discovery(args, agg, found, found.candidates if args.all else found.words, stats=found.stats)
    return 0


def sfp_discover_files(args: argparse.Namespace) -> Any:
    """Discover words from an SFP aggregate file, or from report files and the parameters."""
    from ldp.decoders.sfp import SfpAggregate
    from ldp.encoders.sfp import SfpParams

    agg = discovery_aggregate(args, SfpAggregate, SfpParams, "SFP")
    found = agg.discover(top=args.top, alpha=None if args.alpha <= 0 else args.alpha, confidence=args.confidence,
                         max_candidates=args.max_candidates, false_records=args.false_records, peel=not args.no_peel,
                         progress=False if getattr(args, "log_quiet", False) else None)
    return agg, found
