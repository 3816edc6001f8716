"""The options of ``ldp compare`` (standard library only, so building the CLI parser stays fast)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_compare_arguments"]


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
