"""``--shuffled N`` of ``ldp privacy`` and ``ldp plan``: the central guarantee against the analyst that a trusted
shuffler buys (:mod:`ldp.privacy.shuffle`), shown beside the local one."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.cli.support import count, open_unit
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.shuffle import shuffled_cost

__all__ = ["DEFAULT_DELTA", "add_shuffle_options", "central_guarantee", "central_lines", "check_shuffle_options",
           "privacy_output", "plan_output"]

DEFAULT_DELTA = 1e-8
"""δ of the central guarantee when ``--shuffled`` comes without ``--delta``."""


def add_shuffle_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shuffled", type=count, metavar="N",
                        help="also give the central (ε, δ) against the analyst when a trusted shuffler, not the "
                             "analyst, permutes N reports from N distinct users, one each (1e6 is accepted)")
    parser.add_argument("--delta", type=open_unit, help=f"δ of the central guarantee with --shuffled (default "
                                                         f"{DEFAULT_DELTA:g})")


def check_shuffle_options(args: argparse.Namespace) -> None:
    """``--delta`` is the δ of ``--shuffled``'s guarantee: alone, it is refused (exit status 2)."""
    if getattr(args, "delta", None) is not None and getattr(args, "shuffled", None) is None:
        raise ValueError("--delta is the δ of the central guarantee of --shuffled N: give --shuffled too")


def central_guarantee(per_report: PrivacyCost, args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``--shuffled`` guarantee of one report's cost as a dict (``None`` without ``--shuffled``)."""
    if getattr(args, "shuffled", None) is None:
        return None
    if per_report.delta != 0.0:
        return {"n": int(args.shuffled), "amplified": False,
                "note": f"no shuffling bound for a report with δ > 0 ({per_report}); the local guarantee stands"}
    delta = args.delta if getattr(args, "delta", None) is not None else DEFAULT_DELTA
    return shuffled_cost(per_report, int(args.shuffled), delta).to_dict()


def central_lines(label: str, per_report: PrivacyCost, central: dict[str, Any], trust: bool = True) -> list[str]:
    """Both guarantees as text: the local one per report, the central one (and its trust assumption)."""
    lines = [f"{label}local (per report, against everyone): {per_report}"]
    if "note" in central:
        return lines + [f"{label}central: {central['note']}"]
    if not central["amplified"]:
        return lines + [f"{label}central ({central['n']:,} shuffled reports): ε={central['epsilon']:.6g}, no "
                        "amplification proven at this n, ε₀ and δ (the local guarantee stands)"]
    return lines + [f"{label}central ({central['n']:,} shuffled reports, against the analyst only): "
                    f"ε={central['epsilon']:.4g}, δ={central['delta']:.3g} (Feldman, McMillan and Talwar's "
                    "numerical bound)"] + ([f"{label}trust: {central['trust']}"] if trust else [])


def privacy_output(out: dict[str, Any], args: argparse.Namespace) -> str:
    """``ldp privacy``'s output; with ``--shuffled``, the central guarantee too (key ``central`` in JSON)."""
    local = PrivacyCost(out["epsilon"], out.get("delta", 0.0))
    central = central_guarantee(local, args)
    if central is not None:
        out = {**out, "central": central}
    if args.json:
        return json.dumps(out, indent=2)
    lines = [f"{k}: {v}" for k, v in out.items() if k != "central"]
    return "\n".join(lines + (central_lines("", local, central) if central is not None else []))


def plan_output(plans: list[Any], costs: list[tuple[str, PrivacyCost]], text: str,
                args: argparse.Namespace) -> str:
    """``ldp plan``'s output (``plans`` as dicts, ``costs`` each plan's label and ε per report, ``text`` the table);
    with ``--shuffled``, each plan's central ε beside its local one (key ``central`` of each plan in JSON)."""
    centrals = [central_guarantee(cost, args) for _, cost in costs]
    if args.json:
        if centrals and centrals[0] is not None:
            plans = [{**p, "central": c} for p, c in zip(plans, centrals, strict=True)]
        return json.dumps(plans, indent=2)
    lines = [text]
    for (label, cost), central in zip(costs, centrals, strict=True):
        if central is not None:
            lines += central_lines(f"{label}: " if label else "", cost, central, trust=False)
    trusts = [c["trust"] for c in centrals if c is not None and c.get("amplified")]
    return "\n".join(lines + ([f"trust: {trusts[0]}"] if trusts else []))
