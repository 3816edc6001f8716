"""``ldp compare``: its options (standard library only, so building the CLI parser stays fast) and its run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_compare_arguments", "compare_command", "register"]


def register(sub: Any) -> None:
    """Add ``compare`` to the ``ldp`` subcommands (its run, :func:`ldp.compare.compare_command`, imported when run)."""
    parser = sub.add_parser("compare", help="local against central DP: counting queries and linear regression",
                          description="Measures by simulation what local DP costs against central DP: the smoker "
                                      "survey of an introductory thesis on DP (randomized response against Laplace "
                                      "noise on the count), the error of every local protocol against central "
                                      "Laplace and Gaussian noise as n and ε vary, and local against central linear "
                                      "regression. Every printed table is followed by a legend of its columns.")
    add_compare_arguments(parser)
    parser.set_defaults(handler=compare_command)


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ldp compare`` (values checked here, so a bad one fails before the run starts)."""
    from ldp.cli.support import non_negative_int, number

    parser.add_argument("--quick", action="store_true",
                        help="small sizes: measured about 3 s on 2 idle cores (the full run about 20 s)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="master seed (default 0)")
    parser.add_argument("--out", metavar="DIR", type=Path, default=None, help="write the CSV tables (and PNGs) here")
    parser.add_argument("--plots", action=argparse.BooleanOptionalAction, default=None,
                        help="PNG figures into --out (default: when --out is given and matplotlib is installed)")
    parser.add_argument("--trials", type=number(int, 2), default=None,
                        help="repetitions per setting, and regression data sets (default 20 and 5; --quick 3-5 and 2)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def compare_command(args: argparse.Namespace) -> int:
    """Run ``ldp compare`` (:func:`ldp.compare.compare_command`) once the option combinations are checked: the run
    itself takes seconds."""
    from ldp.cli.support import matplotlib_missing_error
    from ldp.compare import compare_command as run

    if args.plots and args.out is None:
        raise ValueError("--plots needs --out DIR")
    if args.plots:
        matplotlib_missing_error("--plots", alternative="--no-plots")
    return run(args)
