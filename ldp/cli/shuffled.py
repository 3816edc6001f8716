"""``--shuffled N`` of ``ldp privacy`` and ``ldp plan``: the central guarantee against the analyst that a trusted
shuffler buys (:mod:`ldp.privacy.shuffle`), shown beside the local one; with ``--windows W``, a device's guarantee
across W windows too (:mod:`ldp.privacy.over_time`: composed privacy-loss distributions, not W·ε). The one-window
figure is :func:`ldp.pipeline.guarantee.window_guarantee`'s, the function the ingest service's dashboard, ``ldp
shuffle`` and ``ldp spec validate --shuffled`` state a window's central ε by."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.cli.support import count, open_unit
from ldp.pipeline.guarantee import Randomizer, over_windows, window_guarantee, window_release
from ldp.privacy.binary_shuffle import BINARY
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.krr_shuffle import KRR
from ldp.privacy.over_time import METHOD
from ldp.privacy.shuffle import ShuffleStructure

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
    parser.add_argument("--windows", type=count, metavar="W",
                        help="with --shuffled: also a device's central guarantee across W windows (one report in "
                             "each, N shuffled per window), by composed privacy-loss distributions")


def check_shuffle_options(args: argparse.Namespace) -> None:
    """``--delta`` and ``--windows`` qualify ``--shuffled``'s guarantee: without it, they are refused (exit 2)."""
    for name in ("delta", "windows"):
        if getattr(args, name, None) is not None and getattr(args, "shuffled", None) is None:
            raise ValueError(f"--{name} qualifies the central guarantee of --shuffled N: give --shuffled too")


def central_guarantee(per_report: PrivacyCost, args: argparse.Namespace, structure: ShuffleStructure | None = None,
                      params: Any = None) -> dict[str, Any] | None:
    """The ``--shuffled`` guarantee of one report's cost as a dict (``None`` without ``--shuffled``), with the
    randomizer's ``structure`` where it has one; with ``--windows``, the guarantee over the windows under the key
    ``over_windows`` (:func:`~ldp.privacy.over_time.protocol_over_time` when the ``params`` are known, so that a
    memoizing protocol gets its lifetime bound)."""
    if getattr(args, "shuffled", None) is None:
        return None
    n = int(args.shuffled)
    delta = args.delta if getattr(args, "delta", None) is not None else DEFAULT_DELTA
    randomizer = params if params is not None else Randomizer(per_report, structure)
    g = window_guarantee(randomizer, n, delta)
    if g is None:
        out: dict[str, Any] = {"n": n, "amplified": False, "note": f"no shuffling bound for a report with δ > 0 "
                                                                    f"({per_report}); the local guarantee stands"}
    else:
        out = g.to_dict()
    windows = getattr(args, "windows", None)
    if windows is not None:
        from ldp.privacy.over_time import central_over_time, protocol_over_time

        if windows == 1:  # one window: its own figure, the one above (over_windows)
            over = over_windows([window_release(randomizer, n)], delta)
        else:
            over = protocol_over_time(params, n, delta, windows) if params is not None else \
                central_over_time(per_report, n, delta, windows, structure)
        out["over_windows"] = over.to_dict()
    return out


def central_lines(label: str, per_report: PrivacyCost, central: dict[str, Any], trust: bool = True) -> list[str]:
    """Both guarantees as text: the local one per report, the central one (and its trust assumption); with
    ``--windows``, both over the windows."""
    lines = [f"{label}local (per report, against everyone): {per_report}"]
    if "note" in central:
        lines.append(f"{label}central: {central['note']}")
    elif not central["amplified"]:
        lines.append(f"{label}central ({central['n']:,} shuffled reports): ε={central['epsilon']:.6g}, no "
                     "amplification proven at this n, ε₀ and δ (the local guarantee stands)")
    else:
        lines.append(f"{label}central ({central['n']:,} shuffled reports, against the analyst only): "
                     f"ε={central['epsilon']:.4g}, δ={central['delta']:.3g} ({_bound(central['method'])})")
    over = central.get("over_windows")
    if over is not None:
        w = over["windows"]
        lines.append(f"{label}local over {w:,} windows (one report each): ε={over['local']['epsilon']:.4g}"
                     + (f", δ={over['local']['delta']:.3g}" if over["local"]["delta"] else ""))
        naive = over["naive"]["epsilon"]
        summed = f"; the one-window figures summed: ε={naive:.4g}" if over["method"] == METHOD else ""
        lines.append(f"{label}central over {w:,} windows: ε={over['epsilon']:.4g}, δ={over['delta']:.3g} "
                     f"({over['method']}{summed})")
        lines += [f"{label}note: {note}" for note in over["notes"]]
    return lines + ([f"{label}trust: {central['trust']}"] if trust and central.get("amplified") else [])


def _bound(method: str) -> str:
    """The bound a one-window figure comes from, in words (a :class:`~ldp.privacy.shuffle.ShuffleGuarantee`'s
    ``method``)."""
    if method == BINARY:
        return "binary randomized response's worst dataset, computed exactly"
    if method == KRR:
        return "k-RR's privacy blanket, computed exactly"
    whose = " with k-RR's clone structure" if method == "numerical k-RR" else ""
    return f"Feldman, McMillan and Talwar's numerical bound{whose}"


def privacy_output(out: dict[str, Any], args: argparse.Namespace, params: Any = None) -> str:
    """``ldp privacy``'s output; with ``--shuffled``, the central guarantee too (key ``central`` in JSON), with the
    ``params``' shuffle structure."""
    local = PrivacyCost(out["epsilon"], out.get("delta", 0.0))
    central = central_guarantee(local, args, getattr(params, "shuffle_structure", None), params)
    if central is not None:
        out = {**out, "central": central}
    if args.json:
        return json.dumps(out, indent=2)
    lines = [f"{k}: {v}" for k, v in out.items() if k != "central"]
    return "\n".join(lines + (central_lines("", local, central) if central is not None else []))


def plan_output(plans: list[Any], costs: list[tuple[str, PrivacyCost]] | list[tuple[str, PrivacyCost, Any]],
                text: str, args: argparse.Namespace) -> str:
    """``ldp plan``'s output (``plans`` as dicts, ``costs`` each plan's label, ε per report and optionally its
    params, ``text`` the table); with ``--shuffled``, each plan's central ε beside its local one (key ``central`` of
    each plan in JSON)."""
    centrals = [central_guarantee(c[1], args, getattr(c[2], "shuffle_structure", None) if len(c) > 2 else None,
                                  c[2] if len(c) > 2 else None) for c in costs]
    costs = [(c[0], c[1]) for c in costs]
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
