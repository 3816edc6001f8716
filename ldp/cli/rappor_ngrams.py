"""``ldp ngrams-discover`` (its options, run and output; :func:`register` adds it) and rappor-ngrams' parameters
in ``ldp simulate`` and ``ldp plan``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ldp.cli.protocols import add_discovery_inputs, discovery_aggregate
from ldp.cli.support import non_negative_int, open_unit, positive_int

__all__ = ["ngrams_params", "add_ngrams_arguments", "ngrams_command", "ngrams_discover_files", "register"]

_SHAPE = ("n", "max_length", "alphabet")
"""The fields :func:`~ldp.plan.rappor_ngrams.ngrams_default_params` takes besides ε."""


def ngrams_params(args: argparse.Namespace) -> Any:
    """:class:`~ldp.encoders.rappor_ngrams.RapporNgramsParams` from ``--param KEY=VALUE`` options; with
    ``--epsilon``, the planner's defaults at ε (:func:`~ldp.plan.rappor_ngrams.ngrams_default_params`, shaped by any
    ``--param n=``, ``max_length=``, ``alphabet=``) with the other ``--param`` fields over them."""
    from ldp.encoders.rappor_ngrams import RapporNgramsParams
    from ldp.plan.rappor_ngrams import ngrams_default_params

    fields = dict(args.param)
    try:
        if args.epsilon is None:
            return RapporNgramsParams.from_dict(fields)
        base = ngrams_default_params(args.epsilon, **{k: fields[k] for k in _SHAPE if k in fields})
        return RapporNgramsParams.from_dict({**base.to_dict(), **fields})
    except TypeError as exc:  # an unknown or missing field, or a value of the wrong type
        raise ValueError(f"rappor-ngrams parameters: {exc} (give --epsilon, or every field as --param KEY=VALUE)"
                         ) from None


params_from_args = ngrams_params  # what `ldp simulate` and `ldp plan` build params with (ldp.cli.counts)


def register(sub: Any) -> None:
    """Add ``ngrams-discover`` to the ``ldp`` subcommands."""
    add_ngrams_arguments(sub).set_defaults(handler=ngrams_command)


def add_ngrams_arguments(sub: Any) -> argparse.ArgumentParser:
    """The ``ngrams-discover`` subcommand's parser (added to ``sub``, returned)."""
    nd = sub.add_parser("ngrams-discover", help="discover frequent strings from RAPPOR n-gram reports (rappor-ngrams)",
                        description="RAPPOR with unknown strings (Fanti et al.): screen the n-grams at each position, "
                                    "test the n-gram pairs of each position pair by EM, chain the significant pairs "
                                    "into candidate strings and decode the full-string RAPPOR against them "
                                    "(docs/protocols/rappor-ngrams.md).")
    add_discovery_inputs(nd, "rappor-ngrams", "RapporNgramsParams",
                         "--param num_bloombits=32 ... --param gram_f=0.25 --param alphabet=abc")
    nd.add_argument("--alpha", type=open_unit, default=0.05,
                    help="Benjamini-Hochberg level of the final full-string decode (default 0.05)")
    nd.add_argument("--gram-alpha", type=open_unit, default=0.05,
                    help="Benjamini-Hochberg level of the n-gram screen per position (default 0.05)")
    nd.add_argument("--pair-alpha", type=open_unit, default=0.05,
                    help="level of the n-gram pair test per position pair, Bonferroni over its cells (default 0.05)")
    nd.add_argument("--max-grams", type=positive_int, default=32,
                    help="most n-grams kept per position, the largest estimates (default 32; the EM costs "
                         "about reports x max_grams^2 per map)")
    nd.add_argument("--max-candidates", type=positive_int, default=10_000,
                    help="stop with an error if more candidate strings would be formed (default 10000)")
    nd.add_argument("--max-maps", type=positive_int, default=1000, help="most EM maps per position pair (default 1000)")
    nd.add_argument("--se", choices=("auto", "information", "bootstrap"), default="auto",
                    help="standard errors of the pair tables (default auto: the observed information when it fits)")
    nd.add_argument("--seed", type=non_negative_int, help="seed of the bootstrap (with --se bootstrap or auto)")
    nd.add_argument("--confidence", type=open_unit, default=0.95, help="confidence level of the intervals")
    nd.add_argument("--all", action="store_true", help="print every candidate string's estimate, not only the "
                                                       "discovered strings")
    out = nd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="CSV output (the strings' estimates)")
    return nd


def ngrams_discover_files(args: argparse.Namespace) -> tuple[Any, Any]:
    """Discover strings from a rappor-ngrams aggregate file, or from report files and the parameters
    (``--param KEY=VALUE``): ``(aggregate, NgramDiscovery)``."""
    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate
    from ldp.encoders.rappor_ngrams import RapporNgramsParams

    agg = discovery_aggregate(args, RapporNgramsAggregate, RapporNgramsParams, "rappor-ngrams")
    found = agg.discover(alpha=args.alpha, gram_alpha=args.gram_alpha, pair_alpha=args.pair_alpha,
                         max_grams=args.max_grams, max_candidates=args.max_candidates, max_maps=args.max_maps,
                         se=args.se, confidence=args.confidence, rng=args.seed)
    return agg, found


def _discovery_json(agg: Any, found: Any, shown: Any) -> dict[str, Any]:
    return {**json.loads(shown.to_json()), "reports": agg.n, "rejected": dict(agg.rejected), "grams": found.grams,
            "pairs": {f"{a},{b}": [[u, v, pi] for u, v, pi in cells] for (a, b), cells in found.pairs.items()},
            "candidates": found.candidates, "summary": found.summary}


def _text(agg: Any, found: Any, shown: Any) -> str:
    rejected = sum(agg.rejected.values())
    lines = [f"{agg.n} reports read" + (f", {rejected} rejected: {dict(agg.rejected)}" if rejected else ", 0 rejected")]
    for i, grams in enumerate(found.grams):
        lines.append(f"n-grams kept at position {i}: {len(grams)}" + (f" ({' '.join(grams)})" if grams else ""))
    pairs = ", ".join(f"{a},{b}: {len(v)}" for (a, b), v in found.pairs.items())
    lines.append(f"significant n-gram pairs per position pair: {pairs}")
    cands = found.candidates
    lines.append(f"{len(cands)} candidate strings" + (f": {' '.join(cands[:20])}" if cands else "")
                 + (f" ... {len(cands) - 20} more" if len(cands) > 20 else ""))
    if found.summary["unconverged"]:
        lines.append(f"note: the EM stopped at --max-maps on pairs {', '.join(found.summary['unconverged'])}")
    lines.append(f"{found.summary['detected']} strings discovered")
    lines.append(shown.table(max_rows=len(shown.items)))
    return "\n".join(lines)


def ngrams_command(args: argparse.Namespace) -> int:
    """Run ``ldp ngrams-discover`` and print its result."""
    agg, found = ngrams_discover_files(args)
    shown = found.estimates.sorted() if args.all and found.estimates is not None else found.strings
    if args.json:
        print(json.dumps(_discovery_json(agg, found, shown)))
    elif args.csv:
        print(shown.to_csv(), end="")
    else:
        print(_text(agg, found, shown))
    return 0
