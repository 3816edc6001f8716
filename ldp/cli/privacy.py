"""``ldp privacy PROTOCOL``: the privacy cost (ε, δ) of a protocol's parameters (with ``--shuffled N``, the central
guarantee too); :func:`register` adds the command."""

from __future__ import annotations

import argparse
from typing import Any

from ldp.cli.protocols import add_params_options, add_protocol_argument, build_params, check_own_options, protocol_of
from ldp.cli.shuffled import add_shuffle_options, check_shuffle_options, privacy_output
from ldp.cli.support import non_negative_int, output

__all__ = ["privacy_command", "privacy_summary", "register"]


def register(sub: Any) -> None:
    """Add ``privacy`` to the ``ldp`` subcommands."""
    priv = sub.add_parser("privacy", help="the privacy cost (ε, δ) of given protocol parameters",
                          description="Print ε (and δ) and the derived probabilities of a protocol's parameters, "
                                      "e.g. `ldp privacy rr --truth-prob 0.5 --yes-prob 0.5` (ε = ln 3).")
    add_protocol_argument(priv, "protocol name (rr, grr, ...)")
    add_params_options(priv)
    priv.add_argument("--seed", type=non_negative_int,
                      help="accepted for uniformity; the privacy cost is deterministic")
    add_shuffle_options(priv)
    priv.add_argument("--json", action="store_true", help="machine-readable output")
    priv.set_defaults(handler=privacy_command, blas_threads=1)  # small array work (ldp.cli.command)


def privacy_command(args: argparse.Namespace) -> int:
    """Run ``ldp privacy``."""
    protocol_of(args)
    check_own_options(args.protocol, args)
    check_shuffle_options(args)
    output(privacy_output(privacy_summary(args), args, build_params(args.protocol, args)))
    return 0


def privacy_summary(args: argparse.Namespace) -> dict[str, Any]:
    """The parameters' protocol, fields, fingerprint and privacy cost, and the derived probabilities they have
    (``p``, ``q``, ``p_star``, …). ``--d`` must be the parameters' domain size; an open-domain protocol takes it (the
    candidates of ``ldp plan`` and ``ldp simulate``: its cost does not depend on them), a mean or ``multi`` refuses
    it."""
    params = build_params(args.protocol, args)
    if args.d is not None and params.domain_size is None and params.population_kind != "counts":
        raise ValueError(f"--d {args.d}: {params.protocol} takes {params.population_kind}, not a domain: leave out --d")
    if args.d is not None and params.domain_size is not None and params.domain_size != args.d:
        raise ValueError(f"{params.protocol} has a domain of {params.domain_size} values; --d {args.d} contradicts it")
    out = {"protocol": params.protocol, "params": params.to_dict(), "fingerprint": params.fingerprint,
           **params.privacy_cost.to_dict()}
    for name in ("p", "q", "p_star", "q_star", "f_effective", "epsilon_one", "epsilon_inf"):
        if hasattr(params, name) and name not in out["params"]:
            out[name] = getattr(params, name)
    return out
