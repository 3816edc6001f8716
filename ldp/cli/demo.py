"""``ldp demo``: a simulated collection end to end (:func:`register` adds it; :mod:`ldp.demo` runs it)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.cli.support import finite_float, non_negative_int, output

__all__ = ["demo_command", "register"]


def register(sub: Any) -> None:
    """Add ``demo`` to the ``ldp`` subcommands."""
    demo = sub.add_parser("demo", help="a simulated collection end to end (measured: about 6 s on 2 idle cores; "
                                       "--quick about 2 s)",
                          description="Simulate clients encoding with their budget ledgers, the server aggregating "
                                      "and estimating, and the privacy spent.")
    demo.add_argument("--n", type=int, help="devices with budget ledgers (default 5000, or 500 with --quick)")
    demo.add_argument("--epsilon", type=finite_float, default=1.0, help="ε of the app-category metric (default 1)")
    demo.add_argument("--seed", type=non_negative_int, help="seed for a reproducible run")
    demo.add_argument("--quick", action="store_true", help="smaller collections: measured about 2 s on 2 idle cores")
    demo.add_argument("--plots", metavar="DIR", help="also write one figure per question into DIR (needs matplotlib)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    """Run ``ldp demo``: the report (or ``--json``), and with ``--plots DIR`` one figure per question (matplotlib
    checked before the run, which takes seconds)."""
    from ldp.cli.support import matplotlib_missing_error
    from ldp.demo import render, run_demo, to_jsonable

    if args.plots is not None:
        matplotlib_missing_error("--plots")
    n = args.n if args.n is not None else (500 if args.quick else 5000)
    result = run_demo(n=n, seed=args.seed, epsilon=args.epsilon, quick=args.quick,
                      progress=False if args.log_quiet else None)
    output(json.dumps(to_jsonable(result), indent=2) if args.json else render(result))
    if args.plots is not None:
        from ldp.demo.plots import write_plots

        paths = write_plots(result, args.plots)
        output(f"wrote {len(paths)} figures to {args.plots}", to_stderr=args.json)
    return 0
