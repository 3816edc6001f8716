"""The ``ldp`` command: ``demo``, ``privacy``, ``simulate``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from ldp import __version__


def _kv(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


def _add_params_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("protocol parameters")
    g.add_argument("--epsilon", type=float, help="privacy parameter ε (rr: symmetric RR at ε; grr: ε)")
    g.add_argument("--d", type=int, help="domain size (grr)")
    g.add_argument("--p", type=float, help="rr: Pr[report 1 | true 0]")
    g.add_argument("--q", type=float, help="rr: Pr[report 1 | true 1]")
    g.add_argument("--truth-prob", type=float, help="rr forced response: probability of answering truthfully (α)")
    g.add_argument("--yes-prob", type=float, help="rr forced response: probability the forced answer is yes (β)")
    g.add_argument("--param", type=_kv, action="append", default=[], metavar="KEY=VALUE",
                   help="any parameter of the protocol's Params class (repeatable)")


def build_params(protocol: str, args: argparse.Namespace) -> Any:
    """Protocol parameters from command-line options (clear errors for missing ones)."""
    from ldp.protocols import client_protocols

    known = client_protocols()
    if protocol not in known:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(sorted(known))}")
    params_type = known[protocol][0]
    extra = dict(args.param)
    if protocol == "rr" and not extra:
        from ldp.encoders.randomized_response import BinaryRRParams

        if args.truth_prob is not None or args.yes_prob is not None:
            return BinaryRRParams.forced_response(args.truth_prob if args.truth_prob is not None else 0.5,
                                                  args.yes_prob if args.yes_prob is not None else 0.5)
        if args.p is not None or args.q is not None:
            if args.p is None or args.q is None:
                raise ValueError("rr with --p/--q needs both")
            return BinaryRRParams(args.p, args.q)
        if args.epsilon is not None:
            return BinaryRRParams.from_epsilon(args.epsilon)
        return BinaryRRParams.forced_response()
    if protocol == "grr" and not extra:
        if args.epsilon is None or args.d is None:
            raise ValueError("grr needs --epsilon and --d")
        return params_type(args.epsilon, args.d)
    return params_type.from_dict(extra)


def _privacy(args: argparse.Namespace) -> dict[str, Any]:
    params = build_params(args.protocol, args)
    out = {"protocol": params.protocol, "params": params.to_dict(), "fingerprint": params.fingerprint,
           **params.privacy_cost.to_dict()}
    for name in ("p", "q"):
        if hasattr(params, name) and name not in out["params"]:
            out[name] = getattr(params, name)
    return out


def _simulate(args: argparse.Namespace) -> dict[str, Any]:
    from ldp.simulation import accuracy, make_population

    params = build_params(args.protocol, args)
    options = {}
    if args.s is not None:
        options["s"] = args.s
    population = make_population(args.population, params.domain_size, **options)
    result = accuracy(params, population, args.n, trials=args.trials, method=args.method, rng=args.seed,
                      confidence=args.confidence)
    return {"protocol": params.protocol, "params": params.to_dict(), "population": population.name,
            "method": args.method, "epsilon": params.privacy_cost.epsilon,
            "summary": result.summary(), "items": result.rows()}


def _render_simulation(out: dict[str, Any]) -> str:
    s = out["summary"]
    head = (f"{out['protocol']} ε={out['epsilon']:.4g}, population {out['population']}, n={s['n']}, "
            f"{s['trials']} trials ({out['method']} simulation)")
    cols = ["item", "true_count", "mean_estimate", "empirical_sd", "theoretical_sd", "coverage"]
    rows = [[str(r["item"]), str(r["true_count"]), f"{r['mean_estimate']:.1f}", f"{r['empirical_sd']:.1f}",
             f"{r['theoretical_sd']:.1f}", f"{r['coverage']:.2f}"] for r in out["items"][:40]]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    fmt = lambda cells: "  ".join(x.rjust(w) for x, w in zip(cells, widths))  # noqa: E731
    lines = [head, fmt(cols), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
    lines.append(f"RMSE (counts) {s['rmse_count']:.2f} vs theory {s['theoretical_rmse_count']:.2f}; "
                 f"CI coverage {s['coverage']:.3f} (nominal {s['nominal_coverage']})")
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ldp", description="Telemetry under local differential privacy.")
    parser.add_argument("--version", action="version", version=f"ldp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="a simulated collection end to end, in a few seconds",
                          description="Simulate clients encoding with their budget ledgers, the server aggregating "
                                      "and estimating, and the privacy spent.")
    demo.add_argument("--n", type=int, default=5000, help="number of simulated clients (default 5000)")
    demo.add_argument("--epsilon", type=float, default=1.0, help="ε of the app-category metric (default 1)")
    demo.add_argument("--seed", type=int, help="seed for a reproducible run")
    demo.add_argument("--json", action="store_true", help="machine-readable output")

    priv = sub.add_parser("privacy", help="the privacy cost (ε, δ) of given protocol parameters",
                          description="Print ε (and δ) and the derived probabilities of a protocol's parameters, "
                                      "e.g. `ldp privacy rr --truth-prob 0.5 --yes-prob 0.5` (ε = ln 3).")
    priv.add_argument("protocol", help="protocol name (rr, grr, ...)")
    _add_params_options(priv)
    priv.add_argument("--seed", type=int, help="accepted for uniformity; the privacy cost is deterministic")
    priv.add_argument("--json", action="store_true", help="machine-readable output")

    sim = sub.add_parser("simulate", help="accuracy of a protocol on a simulated population",
                         description="Simulate repeated collections and compare estimates with the truth and "
                                     "with the exact variance formula.")
    sim.add_argument("--protocol", required=True, help="protocol name (rr, grr, ...)")
    sim.add_argument("--population", default="zipf", help="uniform, zipf, exponential or gaussian (default zipf)")
    sim.add_argument("--s", type=float, help="Zipf exponent (default 1)")
    sim.add_argument("--n", type=int, default=100_000, help="number of users (default 100000)")
    sim.add_argument("--trials", type=int, default=20, help="number of simulated collections (default 20)")
    sim.add_argument("--method", choices=("aggregate", "per_report"), default="aggregate",
                     help="aggregate-level exact draw (fast) or every report encoded")
    sim.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals")
    _add_params_options(sim)
    sim.add_argument("--seed", type=int, help="seed for a reproducible run")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        if args.command == "demo":
            from ldp.demo import render, run_demo, to_jsonable

            result = run_demo(n=args.n, seed=args.seed, epsilon=args.epsilon)
            print(json.dumps(to_jsonable(result), indent=2) if args.json else render(result))
        elif args.command == "privacy":
            out = _privacy(args)
            print(json.dumps(out, indent=2) if args.json else
                  "\n".join(f"{k}: {v}" for k, v in out.items()))
        elif args.command == "simulate":
            out = _simulate(args)
            print(json.dumps(out, indent=2) if args.json else _render_simulation(out))
    except (ValueError, TypeError) as exc:
        print(f"ldp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
