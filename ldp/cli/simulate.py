"""``ldp simulate PROTOCOL``: a protocol's accuracy on a simulated population, or one poisoned collection
(``--attack``). :func:`register` adds the command; the run is that of the protocol's kind of population
(:func:`ldp.cli.protocols.kind_module`: counts, numbers or attributes)."""

from __future__ import annotations

import argparse
from typing import Any

from ldp.cli.numeric import add_numeric_options
from ldp.cli.protocols import add_params_options, add_protocol_argument, check_own_options, kind_module, protocol_of
from ldp.cli.support import (
    PROTOCOLS_HELP,
    apply_defaults,
    finite_float,
    non_negative_int,
    open_unit,
    output,
    positive_int,
    refuse_options,
)

__all__ = ["register", "simulate_command"]

ACCURACY_OPTIONS = ("trials", "method", "confidence")
"""The options of the accuracy simulation (repeated collections), not of ``--attack``'s one collection."""
ATTACK_OPTIONS = ("fraction", "targets")
"""The options of ``--attack``'s poisoned collection."""


def register(sub: Any) -> None:
    """Add ``simulate`` to the ``ldp`` subcommands."""
    sim = sub.add_parser("simulate", help="accuracy of a protocol on a simulated population",
                         description="Simulate repeated collections and compare estimates with the truth and "
                                     "with the exact variance formula, e.g. `ldp simulate grr --epsilon 1 --d 8`.")
    add_protocol_argument(sim, f"{PROTOCOLS_HELP}; with --epsilon alone the others' parameters are the planner's "
                               "defaults (pem: also with --param), and rappor, cms, hcms, sfp and pem are simulated "
                               "on --d candidates")
    sim.add_argument("--population",
                     help="uniform, zipf, exponential or gaussian over the domain (default zipf); for a mean: "
                          "uniform, normal or exponential on [low, high] (default uniform)")
    sim.add_argument("--s", type=finite_float, help="Zipf exponent (default 1)")
    sim.add_argument("--n", type=positive_int, default=100_000, help="number of users (default 100000)")
    sim.add_argument("--trials", type=positive_int, help="number of simulated collections (default 20)")
    sim.add_argument("--method", choices=("aggregate", "per_report"),
                     help="aggregate-level exact draw (fast; the default) or every report encoded")
    sim.add_argument("--confidence", type=open_unit, help="confidence level of the intervals (default 0.95)")
    add_params_options(sim)
    add_numeric_options(sim, simulate=True)
    sim.add_argument("--attack", choices=("mga", "mga-bare", "random"),
                     help="poison one collection (Cao, Jia and Gong 2021): fake users run the maximal gain attack "
                          "(mga-bare: without the padding that makes its reports look honest; SUE, OUE, RAPPOR) or "
                          "send uniformly random reports; prints the targets' frequency gain and what the "
                          "poisoning checks say")
    sim.add_argument("--fraction", type=open_unit,
                     help="with --attack: β, the share of fake users among --n (default 0.05)")
    sim.add_argument("--targets", type=positive_int, help="with --attack: target items (default 10)")
    sim.add_argument("--seed", type=non_negative_int, help="seed for a reproducible run")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    sim.set_defaults(handler=simulate_command, option_defaults={"trials": 20, "method": "aggregate",
                                                                "confidence": 0.95, "fraction": 0.05, "targets": 10})


def simulate_command(args: argparse.Namespace) -> int:
    """Run ``ldp simulate``: the protocol's kind module simulates (``simulation_text``) or, with ``--attack``,
    poisons one collection (``attack_text``: the frequency protocols only). Options the run would not use are
    refused (exit status 2)."""
    protocol = protocol_of(args)
    check_own_options(protocol, args)
    module = kind_module(protocol)
    if args.attack is None:
        refuse_options(args, ATTACK_OPTIONS, "only with --attack mga|random (they shape its poisoned collection)")
        output(module.simulation_text(apply_defaults(args)))
        return 0
    refuse_options(args, ACCURACY_OPTIONS, "not with --attack, which simulates one poisoned collection (they are "
                                           "for the accuracy over repeated collections)")
    attack = getattr(module, "attack_text", None)
    if attack is None:
        raise ValueError(f"--attack is for the frequency protocols (the poisoning attacks promote items), not "
                         f"{protocol}")
    output(attack(apply_defaults(args)))
    return 0
