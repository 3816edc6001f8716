"""``ldp simulate`` and ``ldp plan`` for the counting protocols: the parameters from the options (a protocol's
own builder, :func:`options_builder`; else its params' own options,
:meth:`~ldp.encoders.base.ProtocolParams.from_options`; else the ``--param`` fields, else the planner's defaults from
``--epsilon`` alone), the run, and the tables printed (the mean mechanisms and
``multi`` have theirs in :mod:`ldp.cli.numeric` and :mod:`ldp.cli.multi`)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
from collections.abc import Callable
from typing import Any

from ldp.cli.protocols import build_params, loose_options
from ldp.cli.support import PROTOCOLS_HELP, apply_defaults
from ldp.display.tables import Column, render
from ldp.protocols.registry import protocols_taking

__all__ = ["simulate_counts", "render_count_simulation", "plan_counts", "render_count_plans", "options_builder",
           "simulation_text", "plan_text", "attack_text"]


def options_builder(protocol: str) -> Callable[[argparse.Namespace], Any] | None:
    """The builder of a protocol whose command line has options of its own: ``params_from_args`` of the CLI module
    named after its family (``ldp/cli/<stem>.py``, the stem of the module of its params: ``ldp.cli.pem``,
    ``ldp.cli.rappor_ngrams``), which takes the parsed options; else its params' :meth:`from_options
    <ldp.encoders.base.ProtocolParams.from_options>` when that answers for the options given (rr, grr); else
    ``None`` (an unknown protocol too: :func:`build_params` names the known ones)."""
    from ldp.protocols import client_protocols

    known = client_protocols().get(protocol)
    if known is None:
        return None
    params_type = known[0]
    module = f"ldp.cli.{params_type.__module__.rpartition('.')[2]}"
    if importlib.util.find_spec(module) is not None:
        builder: Callable[[argparse.Namespace], Any] | None = getattr(importlib.import_module(module),
                                                                      "params_from_args", None)
        if builder is not None:
            return builder

    def own_options(args: argparse.Namespace) -> Any:
        return None if args.param else params_type.from_options(loose_options(args))

    return own_options


def _means() -> str:
    """The mean protocols, as a message names them."""
    return ", ".join(protocols_taking("numbers"))


def _closed_domain(protocol: str, epsilon: float) -> bool:
    """Does the planner's choice for ``protocol`` at ``ε`` hold a domain of ``d`` values (``--d`` sets it), rather
    than an open domain of strings (simulated on ``--d`` candidates)? Asked at the smallest domain the protocol
    takes (2 values; 4 for ``hpg``'s two blocks): one that refuses both holds a domain that ``--d`` must give."""
    from ldp.plan.frequency import default_params

    for probe in (2, 4):
        try:
            return default_params(protocol, epsilon, probe).domain_size is not None
        except ValueError:
            continue
    return True


def _simulated_setup(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """``ldp simulate``'s protocol parameters, population and candidates (open-domain protocols: ``--d``)."""
    from ldp.plan.frequency import PLANNED_PROTOCOLS, default_params
    from ldp.simulation.collect import default_candidates, make_population

    if args.values is not None or args.loc is not None or args.scale is not None:
        raise ValueError(f"--values, --loc and --scale are for the mean protocols ({_means()}) and "
                         f"{', '.join(protocols_taking('attributes'))}")
    given = [args.p, args.q, args.truth_prob, args.yes_prob]
    own = options_builder(args.protocol)
    params = own(args) if own is not None else None
    if params is not None:
        pass  # the protocol's own options made them
    elif args.param or args.protocol not in PLANNED_PROTOCOLS or any(v is not None for v in given):
        params = build_params(args.protocol, args)
    elif args.epsilon is None:
        raise ValueError(f"{args.protocol} needs --epsilon (the planner chooses the rest, as `ldp plan` does) "
                         "or its --param values")
    else:
        if args.d is None and _closed_domain(args.protocol, args.epsilon):
            raise ValueError(f"{args.protocol} is simulated on a domain of d values: give --d")
        params = default_params(args.protocol, args.epsilon, args.d)
    d = params.domain_size
    if d is None:
        if args.d is None:
            raise ValueError(f"{args.protocol} is simulated on d candidate strings: give --d")
        d = args.d
    elif args.d is not None and args.d != d:
        raise ValueError(f"{args.protocol} has a domain of {d} values; --d {args.d} contradicts it")
    candidates = default_candidates(params, d) if params.domain_size is None else None  # checks d first
    options = {}
    if args.s is not None:
        options["s"] = args.s
    return params, make_population(args.population or "zipf", d, **options), candidates


def simulate_counts(args: argparse.Namespace) -> dict[str, Any]:
    """``ldp simulate``: parameters given (``--param``, rr/grr options) or the planner's defaults at
    ``--epsilon``; open-domain protocols are simulated on ``--d`` candidates."""
    from ldp.simulation.collect import accuracy

    params, population, candidates = _simulated_setup(args)
    result = accuracy(params, population, args.n, trials=args.trials, method=args.method, rng=args.seed,
                      confidence=args.confidence, candidates=candidates,
                      progress=False if getattr(args, "log_quiet", False) else None)
    out = {"protocol": params.protocol, "params": params.to_dict(), "population": population.name,
           "method": args.method, "epsilon": params.privacy_cost.epsilon,
           "summary": result.summary(), "items": result.rows(), "notes": list(result.notes)}
    quantile_rows = getattr(result, "quantile_rows", None)  # a protocol whose estimates have quantiles (histograms)
    if quantile_rows is not None:
        out["quantiles"] = quantile_rows()
    return out


def simulation_text(args: argparse.Namespace) -> str:
    """What ``ldp simulate`` prints for a counting protocol: :func:`simulate_counts` as JSON or a table."""
    out = simulate_counts(args)
    return json.dumps(out, indent=2) if args.json else render_count_simulation(out)


def render_count_simulation(out: dict[str, Any]) -> str:
    s = out["summary"]
    head = (f"{out['protocol']} ε={out['epsilon']:.4g}, population {out['population']}, n={s['n']}, "
            f"{s['trials']} trials ({out['method']} simulation)")
    cols = [Column("item"), Column("true_count", ".0f"), Column("mean_estimate", ".1f"),
            Column("empirical_sd", ".1f"), Column("theoretical_sd", ".1f"), Column("coverage", ".2f")]
    if out["items"] and "detected" in out["items"][0]:
        cols.append(Column("detected", ".2f"))
    lines = [render(cols, ([r[c.header] for c in cols] for r in out["items"]), title=head, max_rows=40,
                    more="... {} more items (--json for all)")]
    lines.append(f"RMSE (counts) {s['rmse_count']:.2f} vs theory {s['theoretical_rmse_count']:.2f}; "
                 f"CI coverage {s['coverage']:.3f} (nominal {s['nominal_coverage']})")
    recall = [f"{k} {v:.3f}" for k, v in s.items() if k.startswith("recall@")]
    if recall:  # a discovery protocol (pem): its recall and false strings per trial
        lines.append(f"discovery: {', '.join(recall)}; {s['strings_found_mean']:.1f} strings found per trial, "
                     f"{s['false_strings_mean']:.2f} false (at most {s['false_strings_max']})")
    if out.get("quantiles"):
        qcols = [Column("quantile"), Column("true_value", ".4g"), Column("mean_estimate", ".4g"), Column("rmse", ".4g"),
                 Column("mean_ci_width", ".4g"), Column("coverage", ".2f")]
        title = f"quantiles over the {s['trials']} trials (nominal coverage {s['nominal_coverage']})"
        lines.append(render(qcols, ([r[c.header] for c in qcols] for r in out["quantiles"]), title=title))
    lines += [f"note: {note}" for note in out.get("notes", [])]
    return "\n".join(lines)


def plan_counts(args: argparse.Namespace) -> Any:
    """``ldp plan``: one plan, the n for a target SE, or every protocol ranked (``--recommend``)."""
    from ldp.plan.frequency import default_params, plan, solve_n
    from ldp.plan.oracles import recommend

    if args.d is None:
        raise ValueError("give the domain size with --d (2 for a yes/no question), or plan a mean: "
                         f"{_means()}, or --recommend --mean; or several attributes: "
                         f"{', '.join(protocols_taking('attributes'))}")
    if args.values is not None:
        raise ValueError(f"--values is for the mean protocols ({_means()})")
    options = dict(frequency=args.frequency, alpha=args.alpha)
    if args.recommend:
        if args.epsilon is None:
            raise ValueError("--recommend needs --epsilon")
        return recommend(args.epsilon, args.d, n=int(args.n or 1_000_000), **options)
    if args.protocol is None:
        raise ValueError(f"name a protocol ({PROTOCOLS_HELP}), or use --recommend")
    explicit = args.param or args.p is not None or args.truth_prob is not None
    own = options_builder(args.protocol)
    params = own(args) if own is not None else None
    if params is None:
        params = build_params(args.protocol, args) if explicit else (
            default_params(args.protocol, args.epsilon, args.d) if args.epsilon is not None else None)
    if params is None:
        raise ValueError(f"{args.protocol} needs --epsilon (the planner chooses the rest) or its --param values")
    n = args.n
    if args.target_se is not None:
        n = solve_n(params, args.target_se, domain_size=args.d, frequency=args.frequency)
    if n is None:
        raise ValueError("give the number of users --n, or --target-se to solve for it")
    return [plan(params, n=int(n), domain_size=args.d, candidates=args.candidates, power=args.power,
                 reports=args.reports, distinct_values=args.distinct_values, **options)]


def plan_text(args: argparse.Namespace) -> str:
    """What ``ldp plan`` prints for a counting protocol (or ``--recommend``): :func:`plan_counts` as JSON or a table,
    with ``--shuffled``'s central guarantee."""
    from ldp.cli.shuffled import plan_output

    plans = plan_counts(apply_defaults(args))
    return plan_output([p.to_dict() for p in plans], [(p.protocol, p.epsilon_per_report, p.params) for p in plans],
                       "" if args.json else render_count_plans(plans, args.recommend), args)


def render_count_plans(plans: list[Any], ranked: bool) -> str:
    if not ranked:
        return plans[0].table()
    pct = lambda x: f"{100 * x:.4g}%"  # noqa: E731
    cols = [Column("protocol", align="left"), Column("SE of a fraction", pct, "left"),
            Column("min detectable", pct, "left"), Column("var/optimum", lambda x: f"{x:.3f}", "left"),
            Column("report bits", align="left"), Column("bytes", align="left"), Column("ε per report", align="left")]
    from ldp.plan.oracles import Ranking

    assert isinstance(plans, Ranking)  # recommend()'s: variance of a rare item's count / the optimum, frame bytes
    sc = plans.scores
    rows = [[p.protocol, p.std_error_fraction, p.min_detectable_fraction, sc[p.protocol].variance_ratio,
             p.report_bits, sc[p.protocol].report_bytes, p.epsilon_per_report] for p in plans]
    head = (f"lowest variance of a rare item's count first, n={plans[0].n:,}, d={plans[0].domain_size:,}, "
            f"SE at frequency {100 * plans[0].frequency:.4g}%")
    return "\n".join([render(cols, rows, title=head), plans.summary()])


def attack_text(args: argparse.Namespace) -> str:
    """What ``ldp simulate --attack`` prints: :func:`simulate_attack_command`'s result as JSON or lines."""
    res = simulate_attack_command(args)
    return json.dumps(res.to_dict(), indent=2) if args.json else "\n".join(res.lines())


def check_attack(params: Any, attack: str) -> None:
    """Refuse (``ValueError``, exit status 2) an ``--attack`` the protocol of ``params`` has no model for: ``mga``
    (``mga-bare``) without its :class:`~ldp.simulation.attack.Attacker` (``ldp/simulation/<family>_attack.py``)
    defining ``mga`` (``mga_bare``), and any attack on an
    open-domain protocol whose candidates cannot be scored (no ``scoring`` of its own in its simulation and no exact
    variance on its aggregate: the discovery protocols)."""
    from ldp.lazy import subclasses_in
    from ldp.protocols import get_protocol
    from ldp.simulation.attack import Attacker, attacker_for
    from ldp.simulation.base import Simulation
    from ldp.simulation.collect import simulation_for

    protocol = params.protocol
    scored = (params.domain_size is not None or type(simulation_for(params)).scoring is not Simulation.scoring
              or hasattr(get_protocol(protocol).aggregate_type, "exact_variance"))
    if not scored:
        raise ValueError(f"--attack {attack}: {protocol} has no attack model here: its simulated collection cannot "
                         "score given candidate strings (it discovers its strings), which the frequency gain needs")
    method = {"mga": "mga", "mga-bare": "mga_bare"}.get(attack)
    if method is not None and getattr(type(attacker_for(params)), method) is getattr(Attacker, method):
        types = [t for a in subclasses_in("ldp.simulation", Attacker, suffix="_attack")
                 if getattr(a, method) is not getattr(Attacker, method)
                 for t in (a.params_type if isinstance(a.params_type, tuple) else (a.params_type,))]
        modelled = sorted({str(getattr(t, "protocol", t.__name__)) for t in types})
        what = "maximal gain attack" if attack == "mga" else "unpadded maximal gain attack"
        raise ValueError(f"--attack {attack}: no {what} is defined for {protocol}; it is for "
                         f"{', '.join(modelled)} (--attack random sends uniformly random reports under any frequency "
                         "protocol)")


def simulate_attack_command(args: argparse.Namespace) -> Any:
    """``ldp simulate --attack``: one collection of ``--n`` users, ``--fraction`` of them fake (Cao, Jia and Gong
    2021), its damage and what the poisoning checks say (an :class:`~ldp.simulation.attack.AttackResult`); an attack
    the protocol has no model for is refused (:func:`check_attack`)."""
    from ldp.simulation.attack import simulate_attack

    params, population, _ = _simulated_setup(args)
    check_attack(params, args.attack)
    return simulate_attack(params, population, args.n, attack=args.attack, fraction=args.fraction,
                           targets=args.targets, rng=args.seed)
