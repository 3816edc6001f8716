"""The protocol commands' parameter handling and the two decoders the ``ldp`` command runs on files:
``--param KEY=VALUE`` options into params (:func:`build_params`), ``ldp privacy``, ``ldp
rappor-decode`` (Google's CSVs or an aggregate file), ``ldp sfp-discover`` and ``ldp pem-discover``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from typing import Any

from ldp.cli.support import finite_float, input_file


def key_value(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        return key, json.loads(raw)
    except (ValueError, RecursionError):
        return key, raw


LOOSE_OPTIONS = ("epsilon", "d", "p", "q", "truth_prob", "yes_prob")
"""The options of :func:`add_params_options` besides ``--param``, as :meth:`ProtocolParams.from_options
<ldp.encoders.base.ProtocolParams.from_options>` receives them."""


def loose_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :data:`LOOSE_OPTIONS` of parsed ``args`` (``None`` where not given)."""
    return {name: getattr(args, name, None) for name in LOOSE_OPTIONS}


def add_params_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("protocol parameters")
    g.add_argument("--epsilon", type=finite_float,
                   help="ε per report: the protocol's epsilon field, or the planner's parameters at ε for the "
                        "fields no --param gives (rr: symmetric RR at ε)")
    g.add_argument("--d", type=int, help="domain size, the number of values: the protocol's domain_size field "
                                         "(bucket protocols: buckets; open-domain ones: candidates simulated)")
    g.add_argument("--p", type=finite_float, help="rr: Pr[report 1 | true 0]")
    g.add_argument("--q", type=finite_float, help="rr: Pr[report 1 | true 1]")
    g.add_argument("--truth-prob", type=finite_float,
                   help="rr forced response: probability of answering truthfully (α)")
    g.add_argument("--yes-prob", type=finite_float, help="rr forced response: probability the forced answer is yes (β)")
    g.add_argument("--param", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="any parameter of the protocol's Params class (repeatable)")


def build_params(protocol: str, args: argparse.Namespace) -> Any:
    """Protocol parameters from command-line options (clear errors for missing ones)."""
    from ldp.protocols import client_protocols

    known = client_protocols()
    if protocol not in known:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(sorted(known))}")
    params_type = known[protocol][0]
    extra = dict(args.param)
    if not extra:  # a protocol with options of its own reads them (ProtocolParams.from_options)
        own = params_type.from_options(loose_options(args))
        if own is not None:
            return own
    return params_with_options(params_type, extra, args.epsilon, args.d)


def params_with_options(params_type: Any, fields: dict[str, Any], epsilon: float | None, d: int | None) -> Any:
    """``params_type`` from ``--param`` ``fields``, with ``--epsilon`` and ``--d`` as its ``epsilon`` and
    ``domain_size`` fields when it has them and no ``--param`` sets them; when fields are still missing
    and ``--epsilon`` is given, the planner's defaults at ε (``ldp plan``'s choice) with ``fields`` over
    them. ``ValueError`` names what is missing."""
    names = {f.name for f in dataclasses.fields(params_type)}
    given = dict(fields)
    for name, value in (("epsilon", epsilon), ("domain_size", d)):
        if value is not None and name in names:
            given.setdefault(name, value)
    try:
        return params_type.from_dict(given)
    except TypeError as exc:  # a missing field (an unknown one is a ValueError of from_dict)
        missing = exc
    if epsilon is not None:
        from ldp.plan.frequency import PLANNED_PROTOCOLS, default_params

        if params_type.protocol in PLANNED_PROTOCOLS and (d is not None or "domain_size" not in names):
            base = default_params(params_type.protocol, epsilon, d if d is not None else 2).to_dict()
            params = params_type.from_dict({**base, **fields})
            realized = params.privacy_cost.epsilon
            if not math.isclose(realized, epsilon, rel_tol=1e-9):  # a --param moved what ε had set
                raise ValueError(f"{params_type.protocol}: the planner's parameters at --epsilon {epsilon:g} with "
                                 f"--param {', '.join(sorted(fields))} cost ε={realized:.6g} per report, not "
                                 f"{epsilon:g}; give every field as --param KEY=VALUE, or drop --epsilon")
            return params
    raise ValueError(f"{params_type.protocol} parameters: {missing} (give --epsilon and --d, or the fields as "
                     "--param KEY=VALUE)") from None


def privacy_summary(args: argparse.Namespace) -> dict[str, Any]:
    params = build_params(args.protocol, args)
    out = {"protocol": params.protocol, "params": params.to_dict(), "fingerprint": params.fingerprint,
           **params.privacy_cost.to_dict()}
    for name in ("p", "q", "p_star", "q_star", "f_effective", "epsilon_one", "epsilon_inf"):
        if hasattr(params, name) and name not in out["params"]:
            out[name] = getattr(params, name)
    return out


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None


def _aggregate_file(path: str, aggregate_type: type, protocol: str) -> Any:
    """The aggregate in the file ``path`` (checked as untrusted bytes), which must be of ``aggregate_type``."""
    from ldp.server.store import read_aggregate

    agg = read_aggregate(path)
    if not isinstance(agg, aggregate_type):
        raise ValueError(f"{path} holds a {agg.params.protocol} aggregate, not {protocol}")
    return agg


def rappor_decode_files(args: argparse.Namespace) -> Any:
    """Decode RAPPOR counts: Google's params/counts/map CSVs, or our aggregate file + candidates.

    Text files are read as UTF-8 (a leading byte-order mark dropped; :func:`ldp.decoders.rappor_output.decode_text`);
    a candidate file by :func:`~ldp.decoders.rappor_output.read_candidates`; no candidates is an error."""
    from ldp.decoders.rappor import RapporAggregate
    from ldp.decoders.rappor_decode import CandidateMap, decode
    from ldp.decoders.rappor_output import decode_text, read_candidates
    from ldp.encoders.rappor import RapporParams

    if getattr(args, "google_csv", False) and args.all:
        raise ValueError("--google-csv writes the detected candidates only, as Google's results.csv does; "
                         "for every candidate use --csv or --json")
    if args.aggregate:
        if args.counts or args.params:
            raise ValueError("give either --aggregate or --params with --counts, not both")
        agg = _aggregate_file(args.aggregate, RapporAggregate, "RAPPOR")
    else:
        if not (args.params and args.counts):
            raise ValueError("need --aggregate FILE, or Google's --params params.csv and --counts counts.csv")
        params = RapporParams.from_google_csv(decode_text(_read_bytes(args.params), args.params))
        agg = RapporAggregate.from_google_counts(params, decode_text(_read_bytes(args.counts), args.counts))
    if bool(args.map) == bool(args.candidates):
        raise ValueError("give the candidates as exactly one of --map map.csv (Google) or --candidates FILE")
    if args.map:
        cands: Any = CandidateMap.from_google_map(agg.params, decode_text(_read_bytes(args.map), args.map))
        given = len(cands.candidates)
    else:
        cands = read_candidates(_read_bytes(args.candidates), args.candidates)
        given = len(cands)
    if not given:
        raise ValueError(f"{args.map or args.candidates} holds no candidates")
    est = decode(agg, cands, alpha=args.alpha, correction=args.correction, confidence=args.confidence,
                 selection=args.selection)
    return est.sorted()


def sfp_discover_files(args: argparse.Namespace) -> Any:
    """Discover words from an SFP aggregate file, or from report files and the parameters."""
    from ldp.decoders.sfp import SfpAggregate
    from ldp.encoders.sfp import SfpParams

    agg = _discovery_aggregate(args, SfpAggregate, SfpParams, "SFP")
    found = agg.discover(top=args.top, alpha=None if args.alpha <= 0 else args.alpha, confidence=args.confidence,
                         max_candidates=args.max_candidates, false_records=args.false_records, peel=not args.no_peel,
                         progress=False if getattr(args, "log_quiet", False) else None)
    return agg, found


def add_discovery_inputs(parser: argparse.ArgumentParser, name: str, params_type: str, example: str) -> None:
    """The input options every discovery command shares: ``--aggregate``, or ``--reports`` with the
    parameters as ``--param KEY=VALUE`` (and ``--save``); read by :func:`_discovery_aggregate`."""
    parser.add_argument("--aggregate", type=input_file, help=f"an ldp {name} aggregate (Aggregate.to_bytes)")
    parser.add_argument("--reports", nargs="+", metavar="FILE", type=input_file,
                        help="report files (JSON lines or binary frames); parameters as --param KEY=VALUE")
    parser.add_argument("--param", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                        help=f"a {params_type} field, e.g. {example} (repeatable)")
    parser.add_argument("--save", metavar="FILE", help="with --reports: also write the aggregate to FILE")


def pem_discover_files(args: argparse.Namespace) -> Any:
    """Discover strings from a PEM aggregate file, or from report files and the parameters
    (``--param KEY=VALUE``): ``(aggregate, PEMDiscovery)``."""
    from ldp.decoders.pem import PEMAggregate
    from ldp.encoders.pem import PEMParams

    agg = _discovery_aggregate(args, PEMAggregate, PEMParams, "PEM")
    found = agg.discover(top_k=args.top_k, alpha=args.alpha or None, false_prefixes=args.false_prefixes or None,
                         alphabet=args.alphabet, confidence=args.confidence)
    return agg, found


def _discovery_aggregate(args: argparse.Namespace, aggregate_type: Any, params_type: Any, name: str) -> Any:
    """The aggregate a discovery command works on: ``--aggregate FILE``, or ``--reports FILE...`` folded
    with the parameters given as ``--param KEY=VALUE`` (``--save`` writes it); no valid report is an error."""
    if args.aggregate:
        if args.reports or args.param:
            raise ValueError("give either --aggregate or --reports with --param options, not both")
        agg = _aggregate_file(args.aggregate, aggregate_type, name)
    else:
        if not args.reports:
            raise ValueError("need --aggregate FILE, or --reports FILE... with the parameters as --param KEY=VALUE")
        try:
            params = params_type.from_dict(dict(args.param))
        except TypeError as exc:
            raise ValueError(f"{name} parameters: {exc} (give them as --param KEY=VALUE)") from None
        agg = aggregate_type(params)
        _fold_report_files(agg, args.reports, args.save)
    if agg.n == 0:
        raise ValueError(f"no valid reports (rejected: {dict(agg.rejected) or 'none'})")
    return agg


def _fold_report_files(agg: Any, paths: list[str], save: str | None) -> None:
    """Add the reports of each file to ``agg``: JSON lines when the file starts with ``{`` (after
    whitespace), else binary frames; malformed reports are rejected with a reason and counted. With
    ``save``, write the aggregate there."""
    for path in paths:
        data = _read_bytes(path)
        if data.lstrip()[:1] == b"{":
            agg.add_json_lines(data.splitlines())
        else:
            agg.add_bytes(data)
    if save:
        with open(save, "wb") as fh:
            fh.write(agg.to_bytes())


def print_discovery(args: argparse.Namespace, agg: Any, found: Any, shown: Any, **extra_json: Any) -> None:
    """The output of a discovery command (``sfp-discover``, ``pem-discover``): ``--json`` (the shown
    estimates, ``extra_json`` and the rejects), ``--csv``, or the reports read, the summary and a table."""
    if args.json:
        print(json.dumps({**json.loads(shown.to_json()), **extra_json, "rejected": dict(agg.rejected)}))
    elif args.csv:
        print(shown.to_csv(), end="")
    else:
        rejected = sum(agg.rejected.values())
        print(f"{agg.n} reports" + (f" ({rejected} rejected: {dict(agg.rejected)})" if rejected else ""))
        print(found.summary())
        print(shown.table(max_rows=len(shown.items)))
