"""What the protocol commands share: ``--param KEY=VALUE`` options into params (:func:`build_params`), the
protocol named positionally or by ``--protocol`` (:func:`add_protocol_argument`, :func:`protocol_of`), the options
only some protocols read (:func:`check_own_options`), and the inputs and output of the discovery commands
(``ldp sfp-discover``, ``ldp pem-discover``, ``ldp ngrams-discover``: :func:`discovery_aggregate`)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
from types import ModuleType
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


def add_protocol_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """The protocol a command is about, positional (``ldp simulate grr``, as ``ldp plan grr`` and ``ldp privacy grr``),
    or as ``--protocol grr``, kept as an alias; :func:`protocol_of` reads the two."""
    parser.add_argument("protocol", nargs="?", help=help)
    parser.add_argument("--protocol", dest="protocol_option", metavar="PROTOCOL",
                        help="the protocol as an option: the same as the positional PROTOCOL (give it once)")


def protocol_of(args: argparse.Namespace, *, required: bool = True) -> str | None:
    """The protocol of :func:`add_protocol_argument`'s two spellings, set as ``args.protocol``; both given and
    different, or none when ``required``, is a ``ValueError`` (exit status 2) naming the rule."""
    given, option = args.protocol, getattr(args, "protocol_option", None)
    if given is not None and option is not None and given != option:
        raise ValueError(f"the protocol is given twice, as {given!r} and as --protocol {option!r}: give it once")
    args.protocol = given if given is not None else option
    if args.protocol is None and required:
        from ldp.protocols import client_protocols

        raise ValueError(f"name the protocol: ldp {args.command} PROTOCOL (or --protocol PROTOCOL), one of "
                         f"{', '.join(sorted(client_protocols()))}")
    return args.protocol


KIND_MODULES = {"counts": "ldp.cli.counts", "numbers": "ldp.cli.numeric", "attributes": "ldp.cli.multi"}
"""The module that plans and simulates each kind of population a protocol's collections take (its params'
:attr:`~ldp.encoders.base.ProtocolParams.population_kind`): each has ``plan_text(args)`` and ``simulation_text(args)``
(and ``attack_text(args)`` where ``ldp simulate --attack`` applies), returning what the command prints."""


def kind_module(protocol: str | None, *, numbers: bool = False) -> ModuleType:
    """The :data:`KIND_MODULES` module of ``protocol``'s population kind; ``numbers``: the mean mechanisms' (``ldp plan
    --recommend --mean``); no protocol or an unknown one: the counting protocols' (whose errors name the known ones)."""
    from ldp.protocols import client_protocols

    known = client_protocols().get(protocol) if protocol is not None else None
    kind = "numbers" if numbers else known[0].population_kind if known is not None else "counts"
    return importlib.import_module(KIND_MODULES[kind])


OWN_OPTIONS = ("p", "q", "truth_prob", "yes_prob")
"""The loose options that belong to a protocol, not to every protocol: read only by the params'
:meth:`~ldp.encoders.base.ProtocolParams.from_options` that asks for them (:func:`options_read`)."""


class _ReadRecorder(dict[str, Any]):
    """The options handed to ``from_options``, every one ``None``, remembering which keys were asked for."""

    def __init__(self) -> None:
        super().__init__(dict.fromkeys(LOOSE_OPTIONS))
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def options_read(params_type: Any) -> frozenset[str]:
    """The :data:`LOOSE_OPTIONS` that ``params_type.from_options`` asks for, found by handing it options that are all
    ``None`` (what it answers, or raises, is not used: only the keys it reads). The base hook reads none."""
    options = _ReadRecorder()
    try:
        params_type.from_options(options)
    except Exception:  # noqa: BLE001  (a hook refusing options that are all None has still read them)
        pass
    return frozenset(options.read)


def _flags(names: list[str]) -> str:
    return ", ".join("--" + n.replace("_", "-") for n in names)


def check_own_options(protocol: str | None, args: argparse.Namespace) -> None:
    """Refuse the :data:`OWN_OPTIONS` given for a protocol whose params do not read them (``--p`` for ``grr``), or
    given with ``--param`` fields (which take the protocol's fields instead): a ``ValueError`` naming the options,
    the protocol and the protocols that take them. An unknown protocol is left to :func:`build_params`."""
    from ldp.protocols import client_protocols

    given = [n for n in OWN_OPTIONS if getattr(args, n, None) is not None]
    known = client_protocols()
    if not given or protocol not in known:
        return
    unread = [n for n in given if n not in options_read(known[protocol][0])]
    if unread:
        takers = sorted(name for name, (params_type, _) in known.items() if set(unread) <= options_read(params_type))
        raise ValueError(f"{_flags(unread)}: not an option of {protocol} (give its parameters with --epsilon, --d or "
                         f"--param KEY=VALUE); {_flags(unread)} {'are' if len(unread) > 1 else 'is'} for "
                         f"{', '.join(takers) or 'no protocol'}")
    if getattr(args, "param", None):
        raise ValueError(f"give {protocol}'s parameters either as {_flags(given)} or as --param KEY=VALUE fields, "
                         "not both")


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
    raise ValueError(f"{params_type.protocol} parameters: {missing} ({_missing_hint(params_type, given, epsilon, d)})"
                     ) from None


def _missing_hint(params_type: Any, given: dict[str, Any], epsilon: float | None, d: int | None) -> str:
    """How to give what ``params_type`` lacks: a planned protocol's ``--epsilon`` and ``--d`` (the planner chooses
    the rest), else ``--epsilon`` and ``--d`` for those fields and ``--param NAME=VALUE`` for the others."""
    from ldp.plan.frequency import PLANNED_PROTOCOLS

    fields = dataclasses.fields(params_type)
    if params_type.protocol in PLANNED_PROTOCOLS:
        closed = "domain_size" in {f.name for f in fields}
        need = [flag for flag, absent in (("--epsilon", epsilon is None), ("--d", d is None and closed)) if absent]
        if need:
            return f"give {' and '.join(need)} (the planner chooses the rest), or the fields as --param KEY=VALUE"
    lacking = [f.name for f in fields if f.init and f.name not in given and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    flags = {"epsilon": "--epsilon", "domain_size": "--d"}
    return "give " + ", ".join(flags.get(n, f"--param {n}=VALUE") for n in lacking)


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None


def aggregate_file(path: str, aggregate_type: type, protocol: str) -> Any:
    """The aggregate in the file ``path`` (checked as untrusted bytes), which must be of ``aggregate_type``."""
    from ldp.jobs.store import read_aggregate

    agg = read_aggregate(path)
    if not isinstance(agg, aggregate_type):
        raise ValueError(f"{path} holds a {agg.params.protocol} aggregate, not {protocol}")
    return agg


def add_discovery_inputs(parser: argparse.ArgumentParser, name: str, params_type: str, example: str) -> None:
    """The input options every discovery command shares: ``--aggregate``, or ``--reports`` with the
    parameters as ``--param KEY=VALUE`` (and ``--save``); read by :func:`discovery_aggregate`."""
    parser.add_argument("--aggregate", type=input_file, help=f"an ldp {name} aggregate (Aggregate.to_bytes)")
    parser.add_argument("--reports", nargs="+", metavar="FILE", type=input_file,
                        help="report files (JSON lines or binary frames); parameters as --param KEY=VALUE")
    parser.add_argument("--param", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                        help=f"a {params_type} field, e.g. {example} (repeatable)")
    parser.add_argument("--save", metavar="FILE", help="with --reports: also write the aggregate to FILE")


def discovery_aggregate(args: argparse.Namespace, aggregate_type: Any, params_type: Any, name: str) -> Any:
    """The aggregate a discovery command works on: ``--aggregate FILE``, or ``--reports FILE...`` folded
    with the parameters given as ``--param KEY=VALUE`` (``--save`` writes it); no valid report is an error."""
    if args.aggregate:
        if args.reports or args.param:
            raise ValueError("give either --aggregate or --reports with --param options, not both")
        agg = aggregate_file(args.aggregate, aggregate_type, name)
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
        data = read_bytes(path)
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
