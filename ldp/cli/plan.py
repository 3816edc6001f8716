"""``ldp plan [PROTOCOL]``: standard errors, detection limit and privacy of a collection before deploying it, or every
protocol ranked (``--recommend``; ``--mean``: the mean mechanisms). :func:`register` adds the command; the plan is that
of the protocol's kind of population (:func:`ldp.cli.protocols.kind_module`)."""

from __future__ import annotations

import argparse
from typing import Any

from ldp.cli.numeric import add_numeric_options
from ldp.cli.protocols import add_params_options, add_protocol_argument, check_own_options, kind_module, protocol_of
from ldp.cli.shuffled import add_shuffle_options, check_shuffle_options
from ldp.cli.support import PROTOCOLS_HELP, count, number, open_unit, output, positive_float, positive_int

__all__ = ["plan_command", "register"]


def register(sub: Any) -> None:
    """Add ``plan`` to the ``ldp`` subcommands."""
    pl = sub.add_parser("plan", help="standard errors, detection limit and privacy of a collection before deploying it",
                        description="Plan a collection from the decoders' exact variance formulas: give a protocol "
                                    "with --epsilon (the planner picks the rest) or its --param values, the users "
                                    "--n and the domain size --d; or --target-se to solve for n; or --recommend.")
    add_protocol_argument(pl, f"{PROTOCOLS_HELP}: split or sample")
    add_params_options(pl)
    pl.add_argument("--n", type=count, help="number of users (1e6 is accepted)")
    pl.add_argument("--frequency", type=number(float, 0, 1, low_open=True),
                    help="fraction of users holding the item of interest (default 1/d)")
    pl.add_argument("--alpha", type=open_unit, help="significance level of detection (default 0.05)")
    pl.add_argument("--candidates", type=positive_int, help="candidates tested, for Bonferroni (default d)")
    pl.add_argument("--power", type=open_unit, help="detection probability at the limit (default 0.5)")
    pl.add_argument("--reports", type=positive_int, help="reports per user over the horizon (default 1)")
    pl.add_argument("--distinct-values", type=positive_int,
                    help="distinct values a user reports over the horizon (memo-mean: rounded values; default 1)")
    pl.add_argument("--target-se", type=positive_float,
                    help="solve for the n giving this standard error of a fraction (of a mean: in the values' units)")
    pl.add_argument("--recommend", action="store_true", help="rank every protocol for --epsilon and --d")
    pl.add_argument("--trust-models", action="store_true",
                    help="compare the trust models (local, shuffle, two aggregators, two aggregators with local noise) "
                         "at central --epsilon for --n users and --d values, and say which to choose")
    pl.add_argument("--mean", action="store_true",
                    help="with --recommend: rank the mean mechanisms for --epsilon (bounds: --param low=, high=)")
    add_numeric_options(pl, simulate=False)
    add_shuffle_options(pl)
    pl.add_argument("--json", action="store_true", help="machine-readable output")
    pl.set_defaults(handler=plan_command, option_defaults={"alpha": 0.05, "power": 0.5, "reports": 1,
                                                           "distinct_values": 1})


def plan_command(args: argparse.Namespace) -> int:
    """Run ``ldp plan``: the plan of the protocol's kind module (``plan_text``; ``--mean``: the mean mechanisms'),
    which refuses the options its plans do not use."""
    protocol = protocol_of(args, required=False)
    if args.trust_models:
        from ldp.plan.trust import plan_trust_text

        if protocol is not None or args.recommend or args.shuffled is not None:
            raise ValueError("--trust-models compares the models for --n, --d and --epsilon: no protocol, "
                             "--recommend or --shuffled with it")
        output(plan_trust_text(args))
        return 0
    check_own_options(protocol, args)
    check_shuffle_options(args)
    output(kind_module(protocol, numbers=args.mean).plan_text(args))
    return 0
