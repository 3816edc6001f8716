"""``ldp pem-discover`` (its options, run and output; :func:`register` adds it) and PEM's parameters in
``ldp simulate`` and ``ldp plan``."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ldp.cli.protocols import add_discovery_inputs, discovery_aggregate, print_discovery
from ldp.cli.support import number, open_unit, positive_int

__all__ = ["pem_params", "add_pem_discover_arguments", "pem_discover_command", "pem_discover_files", "register"]


def pem_params(args: argparse.Namespace) -> Any:
    """:class:`~ldp.encoders.pem.PEMParams` from ``--param KEY=VALUE`` options, ε from ``--epsilon`` unless
    a ``--param epsilon=`` gives it (the other fields keep their defaults)."""
    from ldp.encoders.pem import PEMParams

    fields = dict(args.param)
    if args.epsilon is not None:
        if "epsilon" in fields and fields["epsilon"] != args.epsilon:
            raise ValueError(f"--epsilon {args.epsilon:g} and --param epsilon={fields['epsilon']!r} disagree: "
                             "give ε once")
        fields["epsilon"] = args.epsilon
    if "epsilon" not in fields:
        raise ValueError("pem needs --epsilon (or --param epsilon=...); its other parameters have defaults")
    try:
        return PEMParams.from_dict(fields)
    except TypeError as exc:  # an unknown field, or a value of the wrong type
        raise ValueError(f"pem parameters: {exc} (give them as --param KEY=VALUE)") from None


params_from_args = pem_params  # what `ldp simulate pem` and `ldp plan pem` build params with (ldp.cli.counts)


def register(sub: Any) -> None:
    """Add ``pem-discover`` to the ``ldp`` subcommands."""
    add_pem_discover_arguments(sub).set_defaults(handler=pem_discover_command)


def add_pem_discover_arguments(sub: Any) -> argparse.ArgumentParser:
    """The ``pem-discover`` subcommand's parser (added to ``sub``, returned)."""
    pd = sub.add_parser("pem-discover", help="discover frequent strings from PEM (prefix extending) reports",
                        description="Prefix extension: score every first prefix in the first group, extend the "
                                    "prefixes kept round by round, and report the full-length strings above the "
                                    "last round's threshold (docs/protocols/pem.md).")
    add_discovery_inputs(pd, "PEM", "PEMParams", "--param epsilon=4 --param max_length=10")
    pd.add_argument("--top-k", type=positive_int, default=None,
                    help="prefixes kept per round (default: the parameters' top_k)")
    pd.add_argument("--alpha", type=number(float, 0), default=0.05,
                    help="expected number of strings nobody holds reported (default 0.05; 0 turns the last "
                         "round's test off: the top_k largest are reported)")
    pd.add_argument("--false-prefixes", type=number(float, 0), default=5.0,
                    help="expected absent prefixes kept per round (default 5; 0 turns the rounds' tests off)")
    pd.add_argument("--alphabet", help="the characters a string may hold (prunes the other bytes; default: any)")
    pd.add_argument("--confidence", type=open_unit, default=0.95, help="confidence level of the intervals")
    pd.add_argument("--all", action="store_true", help="print every scored candidate of the last round, "
                                                       "not only the discovered strings")
    out = pd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="CSV output")
    return pd


def _round_json(r: dict[str, Any]) -> dict[str, Any]:
    """A round of :class:`~ldp.decoders.pem.PEMDiscovery` for JSON: a threshold that is not finite is null."""
    t = r["threshold"]
    return {**r, "threshold": float(t) if math.isfinite(t) else None}


def pem_discover_command(args: argparse.Namespace) -> int:
    """Run ``ldp pem-discover`` and print its result."""
    agg, found = pem_discover_files(args)
    print_discovery(args, agg, found, found.candidates if args.all else found.strings,
                    rounds=[_round_json(r) for r in found.rounds])
    return 0


def pem_discover_files(args: argparse.Namespace) -> Any:
    """Discover strings from a PEM aggregate file, or from report files and the parameters
    (``--param KEY=VALUE``): ``(aggregate, PEMDiscovery)``."""
    from ldp.decoders.pem import PEMAggregate
    from ldp.encoders.pem import PEMParams

    agg = discovery_aggregate(args, PEMAggregate, PEMParams, "PEM")
    found = agg.discover(top_k=args.top_k, alpha=args.alpha or None, false_prefixes=args.false_prefixes or None,
                         alphabet=args.alphabet, confidence=args.confidence)
    return agg, found
