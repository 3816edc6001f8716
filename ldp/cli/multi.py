"""``ldp simulate`` and ``ldp plan`` for several attributes per report (protocol ``multi``).

The attributes are one ``--param attributes=JSON`` (``[[name, protocol, {params}], ...]``, as in a
collection spec), ε is ``--epsilon`` and the mode ``--param mode=split|sample``, by default the one
:func:`ldp.decoders.multi.recommend_mode` recommends for ``--n``. ``ldp simulate`` draws each attribute's
truth from its own population: ``--population`` names one for every attribute whose kind has it (Zipf
``--s`` over a domain; ``--loc``/``--scale`` for numbers), the others keep the defaults (Zipf over a
domain, uniform numbers on the attribute's bounds).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.display.tables import Column, render

__all__ = ["multi_params", "plan_multi_command", "render_multi_simulation",
           "simulate_multi_command", "simulation_text", "plan_text"]


def _attributes(args: argparse.Namespace) -> tuple[float, list[Any], str | None]:
    given = dict(args.param)
    unknown = set(given) - {"attributes", "mode", "epsilon"}
    if unknown:
        raise ValueError(f"multi takes --param attributes=..., mode=... (and epsilon=...); not {sorted(unknown)}")
    if "attributes" not in given:
        raise ValueError('multi needs its attributes: --param \'attributes=[["screen", "grr", {"domain_size": 3}], '
                         '["minutes", "piecewise", {"low": 0, "high": 120}]]\'')
    attrs = given["attributes"]
    if not isinstance(attrs, list):
        raise ValueError(f"--param attributes= must be a JSON list of [name, protocol, {{params}}], got {attrs!r}")
    if args.epsilon is not None and "epsilon" in given:
        raise ValueError("give ε once: --epsilon or --param epsilon=..., not both")
    eps = args.epsilon if args.epsilon is not None else given.get("epsilon")
    if eps is None:
        raise ValueError("multi needs --epsilon")
    mode = given.get("mode")
    if mode is not None and not isinstance(mode, str):
        raise ValueError(f"--param mode= is split or sample, got {mode!r}")
    return float(eps), attrs, mode


def multi_params(args: argparse.Namespace, n: int) -> Any:
    """The multi params of the command line; without ``mode`` the one recommended for ``n`` users."""
    from ldp.decoders.multi import recommend_mode
    from ldp.encoders.multi import MultiParams

    eps, attrs, mode = _attributes(args)
    return MultiParams(eps, mode or recommend_mode(eps, attrs, n), tuple(attrs))


def _populations(args: argparse.Namespace, params: Any) -> dict[str, Any]:
    from ldp.simulation.collect import POPULATIONS
    from ldp.simulation.multi import attribute_populations
    from ldp.simulation.numeric import NUMERIC_POPULATIONS

    kinds = {"categorical": any(c.domain_size is not None for c in params.components),
             "numeric": any(c.domain_size is None for c in params.components)}
    name = args.population
    if name is not None and not ((name in POPULATIONS and kinds["categorical"]) or
                                 (name in NUMERIC_POPULATIONS and kinds["numeric"])):
        raise ValueError(f"no attribute takes population {name!r}: over a domain {', '.join(POPULATIONS)}; "
                         f"numbers {', '.join(NUMERIC_POPULATIONS)}")
    cat = name if name in POPULATIONS else "zipf"
    num = name if name in NUMERIC_POPULATIONS else "uniform"
    options = {"categorical": {"s": args.s} if args.s is not None and cat == "zipf" else {},
               "numeric": {k: v for k, v in (("loc", args.loc), ("scale", args.scale)) if v is not None}}
    if args.s is not None and cat != "zipf":
        raise ValueError("--s is the Zipf exponent of the attributes over a domain (--population zipf)")
    if options["numeric"] and (num == "uniform" or not kinds["numeric"]):
        raise ValueError("--loc and --scale shape a normal or exponential population of the numeric attributes")
    return attribute_populations(params, categorical=cat, numeric=num, options=options)


def simulate_multi_command(args: argparse.Namespace) -> dict[str, Any]:
    """``ldp simulate --protocol multi``: each attribute's accuracy over ``--trials`` collections."""
    from ldp.simulation.collect import accuracy

    if args.d is not None or args.values is not None:
        raise ValueError("multi takes its domains from its attributes: leave out --d and --values")
    params = multi_params(args, args.n)
    pops = _populations(args, params)
    result = accuracy(params, pops, args.n, trials=args.trials, method=args.method, rng=args.seed,
                      confidence=args.confidence, progress=False if getattr(args, "log_quiet", False) else None)
    return {"protocol": "multi", "params": params.to_dict(), "mode": params.mode, "method": args.method,
            "epsilon": params.privacy_cost.epsilon, "populations": {k: p.name for k, p in pops.items()},
            "summary": result.summary(), "items": result.rows(), "notes": list(result.notes)}


def simulation_text(args: argparse.Namespace) -> str:
    """What ``ldp simulate multi`` prints: :func:`simulate_multi_command` as JSON or a table."""
    out = simulate_multi_command(args)
    return json.dumps(out, indent=2) if args.json else render_multi_simulation(out)


def render_multi_simulation(out: dict[str, Any]) -> str:
    s = out["summary"]
    pops = ", ".join(f"{k}: {v}" for k, v in out["populations"].items())
    head = (f"multi ({out['mode']}) ε={out['epsilon']:.4g}, n={s['n']:,}, {s['trials']} trials "
            f"({out['method']} simulation); populations {pops}")
    cols = [Column("attribute", align="left"), Column("item", align="left"), Column("truth", ".6g"),
            Column("mean_estimate", ".6g"), Column("empirical_se", ".4g"), Column("exact_se", ".4g"),
            Column("coverage", ".2f")]
    lines = [render(cols, ([r[c.header] for c in cols] for r in out["items"]), title=head, max_rows=60,
                    more="... {} more rows (--json for all)")]
    lines += [f"{name}: empirical/exact variance {a['variance_ratio']:.3f}, CI coverage {a['coverage']:.3f}"
              for name, a in s["attributes"].items()]
    lines += [f"note: {note}" for note in out["notes"]]
    return "\n".join(lines)


def plan_multi_command(args: argparse.Namespace) -> Any:
    """``ldp plan multi``: both modes' SE per attribute and the recommended mode."""
    from ldp.cli.numeric import DETECTION_OPTIONS
    from ldp.cli.support import given_options
    from ldp.plan.multi import plan_multi

    unused = given_options(args, (*DETECTION_OPTIONS, "reports", "distinct_values"))
    if args.d is not None or args.target_se is not None or args.recommend or args.values is not None or unused:
        raise ValueError("ldp plan multi takes --epsilon, --param attributes=... and --n (the attributes give the "
                         "domains; it compares split and sample itself)"
                         + (f"; it does not take {', '.join(unused)}" if unused else ""))
    eps, attrs, mode = _attributes(args)
    if mode is not None:
        raise ValueError("ldp plan multi compares both modes: leave out --param mode=")
    return plan_multi(eps, attrs, int(args.n or 1_000_000))


def plan_text(args: argparse.Namespace) -> str:
    """What ``ldp plan multi`` prints: :func:`plan_multi_command` as JSON or a table; with ``--shuffled``, one
    central guarantee per mode (split, sample), under the plan's key ``central``."""
    from ldp.cli.shuffled import plan_output

    mplan = plan_multi_command(args)
    if args.shuffled is None:
        return json.dumps(mplan.to_dict(), indent=2) if args.json else str(mplan.table())
    modes = list(mplan.epsilon_per_report.items())
    shown = plan_output([mplan.to_dict()] * len(modes), modes, mplan.table(), args)
    if args.json:
        both = json.loads(shown)
        shown = json.dumps({**both[0], "central": {m: p["central"] for (m, _), p in zip(modes, both, strict=True)}},
                           indent=2)
    return shown
