"""``ldp simulate`` and ``ldp plan`` for the mean protocols (``duchi``, ``piecewise``, ``hybrid``, ``memo-mean``).

Their parameters are given as for every protocol (``--param KEY=VALUE``), or by ``--epsilon`` with the
bounds defaulting to ``low=0``, ``high=1`` (``--epsilon 1 --param high=240`` sets one of them); the
population is ``--population uniform|normal|exponential`` (``--loc``, ``--scale``) or ``--values FILE``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.display.tables import Column, key_values, render
from ldp.protocols.registry import protocols_taking

__all__ = ["add_numeric_options", "mean_params", "plan_means", "render_mean_plans",
           "render_mean_simulation", "simulate_means", "simulation_text", "plan_text"]

DETECTION_OPTIONS = ("frequency", "alpha", "candidates", "power")
"""``ldp plan``'s options about detecting an item, which a mean's plan (an SE of the mean) does not use."""


def add_numeric_options(p: argparse.ArgumentParser, simulate: bool) -> None:
    """The options of a population of numbers (``simulate``) or of the values a plan is for."""
    from ldp.cli.support import finite_float, input_file

    g = p.add_argument_group(f"numbers ({', '.join(protocols_taking('numbers'))})")
    g.add_argument("--values", type=input_file, metavar="FILE",
                   help="the users' values: numbers separated by commas, spaces or newlines" +
                        ("" if simulate else " (the plan's SE is then exact for them, not the worst case)"))
    if simulate:
        g.add_argument("--loc", type=finite_float,
                       help="normal: its mean (default the centre); exponential: its start (default low)")
        g.add_argument("--scale", type=finite_float,
                       help="normal: its sd (default range/6); exponential: its mean above loc (default range/4)")


def _bounds(args: argparse.Namespace) -> tuple[float, float]:
    given = dict(args.param)
    return float(given.get("low", 0.0)), float(given.get("high", 1.0))


def mean_params(protocol: str, args: argparse.Namespace) -> Any:
    """A mean mechanism's params: ``--epsilon`` with ``low=0``, ``high=1`` and the other fields' defaults,
    each overridden by ``--param KEY=VALUE``; or all from ``--param`` (with ``epsilon``)."""
    from ldp.cli.protocols import build_params

    if args.epsilon is not None:
        if "epsilon" in dict(args.param):
            raise ValueError("give ε once: --epsilon or --param epsilon=..., not both")
        args = argparse.Namespace(**{**vars(args), "param": [("epsilon", args.epsilon), ("low", 0.0), ("high", 1.0),
                                                             *args.param]})
    elif not args.param:
        raise ValueError(f"{protocol} needs --epsilon (the bounds default to [0, 1]; set them with --param low=... "
                         "--param high=...) or its --param values")
    return build_params(protocol, args)


def _population(args: argparse.Namespace, params: Any) -> Any:
    from ldp.simulation.numeric import given_values, make_numeric_population, read_values

    if args.values is not None:
        if args.population is not None or args.loc is not None or args.scale is not None:
            raise ValueError("--values gives the population: leave out --population, --loc and --scale")
        values = read_values(args.values)
        if params.clip:
            values = [min(max(v, params.low), params.high) for v in values]
        return given_values(values, params.low, params.high)
    options = {k: v for k, v in (("loc", args.loc), ("scale", args.scale)) if v is not None}
    return make_numeric_population(args.population or "uniform", params.low, params.high, **options)


def simulate_means(args: argparse.Namespace) -> dict[str, Any]:
    """``ldp simulate`` for a mean mechanism: its accuracy over ``--trials`` collections."""
    from ldp.simulation.collect import accuracy

    if args.d is not None or args.s is not None:
        raise ValueError(f"{args.protocol} takes numbers, not a domain: leave out --d and --s")
    params = mean_params(args.protocol, args)
    population = _population(args, params)
    result = accuracy(params, population, None if args.values is not None else args.n, trials=args.trials,
                      method=args.method, rng=args.seed, confidence=args.confidence,
                      progress=False if getattr(args, "log_quiet", False) else None)
    return {"protocol": params.protocol, "params": params.to_dict(), "population": population.name,
            "method": args.method, "epsilon": params.privacy_cost.epsilon, "summary": result.summary(),
            "notes": list(result.notes)}


def simulation_text(args: argparse.Namespace) -> str:
    """What ``ldp simulate`` prints for a mean mechanism: :func:`simulate_means` as JSON or a table."""
    out = simulate_means(args)
    return json.dumps(out, indent=2) if args.json else render_mean_simulation(out)


def plan_text(args: argparse.Namespace) -> str:
    """What ``ldp plan`` prints for a mean mechanism (or ``--recommend --mean``): :func:`plan_means` as JSON or a
    table, with ``--shuffled``'s central guarantee; the detection options are refused."""
    from ldp.cli.shuffled import plan_output
    from ldp.cli.support import apply_defaults, refuse_options

    refuse_options(args, DETECTION_OPTIONS, f"not for {args.protocol or 'the mean mechanisms'}: a mean's plan gives "
                                            "the SE of the mean, not the detection of an item of a domain")
    plans = plan_means(apply_defaults(args))
    return plan_output([p.to_dict() for p in plans], [(p.protocol, p.epsilon_per_report) for p in plans],
                       "" if args.json else render_mean_plans(plans, args.recommend), args)


def render_mean_simulation(out: dict[str, Any]) -> str:
    s, pr = out["summary"], out["params"]
    head = (f"{out['protocol']} ε={out['epsilon']:.4g}, values in [{pr['low']:g}, {pr['high']:g}], population "
            f"{out['population']}, n={s['n']:,}, {s['trials']} trials ({out['method']} simulation)")
    rows = [
        ("true mean", f"{s['true_mean']:.6g}"),
        ("mean of the estimates", f"{s['mean_estimate']:.6g}  (bias {s['bias']:+.3g} ± {s['bias_se']:.2g})"),
        ("empirical SE", f"{s['empirical_se']:.4g}"),
        ("exact SE", f"{s['exact_se']:.4g}  (empirical/exact variance {s['variance_ratio']:.3f})"),
        ("mean reported SE", f"{s['mean_reported_se']:.4g}"),
        ("CI coverage", f"{s['coverage']:.3f} (nominal {s['nominal_coverage']})"),
    ]
    return "\n".join([head, key_values(rows)] + [f"note: {n}" for n in out["notes"]])


def plan_means(args: argparse.Namespace) -> list[Any]:
    """``ldp plan`` for the mean mechanisms: one plan, the n for ``--target-se``, or ``--recommend --mean``."""
    from ldp.plan.numeric import plan_mean, recommend_mean, solve_n_mean
    from ldp.simulation.numeric import read_values

    if args.d is not None:
        raise ValueError("the mean mechanisms take numbers in [low, high], not a domain: leave out --d")
    means = protocols_taking("numbers")
    if not args.recommend and (args.mean or args.protocol not in means):
        named = args.protocol in means
        raise ValueError("--mean ranks the mean mechanisms with --recommend; for one plan name one of "
                         f"{', '.join(means)}" + (" (without --mean)" if named else ""))
    values = read_values(args.values) if args.values is not None else None
    if args.recommend:
        if args.epsilon is None:
            raise ValueError("--recommend needs --epsilon")
        low, high = _bounds(args)
        return recommend_mean(args.epsilon, n=int(args.n or 1_000_000), low=low, high=high, values=values)
    params = mean_params(args.protocol, args)
    n = args.n
    if args.target_se is not None:
        n = solve_n_mean(params, args.target_se, values=values)
    if n is None:
        raise ValueError("give the number of users --n, or --target-se to solve for it")
    return [plan_mean(params, n=int(n), values=values, reports=args.reports, distinct_values=args.distinct_values)]


def render_mean_plans(plans: list[Any], ranked: bool) -> str:
    if not ranked:
        return str(plans[0].table())
    first = plans[0]
    cols = [Column("protocol", align="left"), Column("SE of the mean", ".4g"), Column("variance per report", ".4g"),
            Column("report bits"), Column("ε per report", align="left")]
    rows = [[p.protocol, p.std_error, p.report_variance, p.report_bits, p.epsilon_per_report] for p in plans]
    which = "worst case over the values" if first.worst_case else "at the given values"
    head = (f"lowest variance first ({which}), n={first.n:,}, values in [{first.params.low:g}, "
            f"{first.params.high:g}], ε={first.params.epsilon:g}")
    return "\n".join([render(cols, rows, title=head),
                      f"local Laplace (a reference, not a protocol here): SE {first.laplace_std_error:.4g}"]
                     + [f"note: {s}" for p in plans for s in p.notes])
