"""Find a protocol's parts by name: params, client encoder, server aggregate.

Discovery scans the modules of :mod:`ldp.encoders` for :class:`~ldp.encoders.base.Encoder`
subclasses (each names its ``params_type``) and of :mod:`ldp.decoders` for
:class:`~ldp.decoders.base.Aggregate` subclasses, so a new protocol is added by adding its two
files. :func:`client_protocols` stays on the client side (no numpy); :func:`get_protocol` also
imports the decoders.

**Protocols of other packages.** An installed distribution adds protocols through two entry-point groups, one per
half, as :mod:`ldp` lays out its own (the client half must import without numpy, so it is declared apart)::

    [project.entry-points."ldp.encoders"]      # client side: XParams and XEncoder (standard library only)
    toy = "toy_ldp.encoder"                    # a module (its Encoder subclasses) or "toy_ldp.encoder:ToyEncoder"
    [project.entry-points."ldp.decoders"]      # server side: XAggregate
    toy = "toy_ldp.aggregate"                  # a module (its Aggregate subclasses) or "module:ToyAggregate"

Each ``ldp.encoders`` entry point is named after the protocol its encoder serves (``params_type.protocol``). They
are read (:func:`importlib.metadata.entry_points`) and their modules imported only when :func:`client_protocols`
(the ``ldp.encoders`` group) or :func:`protocols` (both) is first called; a protocol name that a built-in or another
entry point already has is a :class:`ProtocolClashError` naming both. :func:`builtin_client_protocols` gives the
built-in ones alone (the conformance vectors and their documentation cover those).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ldp.errors import ProtocolClashError, RefusalValueError
from ldp.lazy import added_classes, added_to, entry_point_classes, entry_point_origin, package_classes, subclasses_in

if TYPE_CHECKING:
    from ldp.decoders.base import Aggregate
    from ldp.encoders.base import Encoder, ProtocolParams

__all__ = ["ENCODERS_GROUP", "DECODERS_GROUP", "Protocol", "ProtocolClashError", "builtin_client_protocols",
           "clear_caches", "client_protocols", "get_protocol", "protocols", "params_from_dict", "protocols_taking",
           "provisionally_registered"]

ENCODERS_GROUP = "ldp.encoders"
"""The entry-point group of other distributions' client halves (params and encoder): named after the package."""
DECODERS_GROUP = "ldp.decoders"
"""The entry-point group of other distributions' server halves (aggregates): named after the package
(:func:`ldp.decoders.base.Aggregate.from_bytes` reads their files too)."""


@dataclass(frozen=True)
class Protocol:
    name: str
    params_type: type[ProtocolParams]
    encoder_type: type[Encoder]
    aggregate_type: Any = None  # an Aggregate subclass; its simulate/exact_variance are not declared on Aggregate
    origin: str = "ldp"
    """Where the protocol comes from: ``"ldp"`` (built in), else the entry point and its distribution."""


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@cache
def builtin_client_protocols() -> dict[str, tuple[type[ProtocolParams], type[Encoder]]]:
    """``{name: (params_type, encoder_type)}`` of the protocols built into :mod:`ldp.encoders` (standard library)."""
    from ldp.encoders.base import Encoder

    out: dict[str, tuple[type[ProtocolParams], type[Encoder]]] = {}
    for enc in subclasses_in("ldp.encoders", Encoder):  # type: ignore[type-abstract]  # a base to test, never made
        params = enc.params_type
        if params.protocol in out:
            raise ProtocolClashError(f"two encoders claim protocol {params.protocol!r}: "
                                     f"{_where(out[params.protocol][1])} and {_where(enc)}")
        out[params.protocol] = (params, enc)
    return out


@cache
def _plugins() -> dict[str, tuple[type[ProtocolParams], type[Encoder], str]]:
    """``{name: (params_type, encoder_type, origin)}`` of the ``ldp.encoders`` entry points."""
    from ldp.encoders.base import Encoder

    builtin = builtin_client_protocols()
    out: dict[str, tuple[type[ProtocolParams], type[Encoder], str]] = {}
    for ep, enc in entry_point_classes(ENCODERS_GROUP, Encoder):  # type: ignore[type-abstract]  # a base to test
        name, origin = enc.params_type.protocol, f"entry point {ep.name} = {ep.value!r} ({entry_point_origin(ep)})"
        if name != ep.name:
            raise ProtocolClashError(f"{origin}: its encoder {_where(enc)} serves protocol {name!r}; name the entry "
                                     f"point after the protocol ({name} = ...)")
        if name in builtin:
            raise ProtocolClashError(f"protocol {name!r} of {origin} ({_where(enc)}) clashes with the built-in "
                                     f"{_where(builtin[name][1])}: give it another name")
        if name in out:
            raise ProtocolClashError(f"protocol {name!r} is defined twice: by {out[name][2]} ({_where(out[name][1])}) "
                                     f"and by {origin} ({_where(enc)})")
        out[name] = (enc.params_type, enc, origin)
    return out


def _added_encoders() -> list[Any]:
    return list(added_to(ENCODERS_GROUP))


@cache
def client_protocols() -> dict[str, tuple[type[ProtocolParams], type[Encoder]]]:
    """``{name: (params_type, encoder_type)}``: the built-in protocols, then those of the installed distributions'
    ``ldp.encoders`` entry points (standard library only, unless a distribution's client half imports more), then
    any registered for a while by :func:`provisionally_registered`."""
    return {**builtin_client_protocols(), **{name: (p, e) for name, (p, e, _) in _plugins().items()},
            **{enc.params_type.protocol: (enc.params_type, enc) for enc in _added_encoders()}}


@cache
def protocols() -> dict[str, Protocol]:
    """Every protocol with its params, encoder and aggregate types (imports numpy)."""
    from ldp.decoders.base import Aggregate

    aggregates: dict[type[ProtocolParams], type[Aggregate]] = {}
    # an aggregate may serve several protocols (CMS, HCMS)
    for agg in package_classes(DECODERS_GROUP, Aggregate):  # type: ignore[type-abstract]  # a base to test
        for params_type in agg.params_type if isinstance(agg.params_type, tuple) else (agg.params_type,):
            aggregates[params_type] = agg
    origins = {name: origin for name, (_, _, origin) in _plugins().items()}
    origins.update((enc.params_type.protocol, "provisional") for enc in _added_encoders())
    return {
        name: Protocol(name, params, enc, aggregates.get(params), origins.get(name, "ldp"))
        for name, (params, enc) in sorted(client_protocols().items())
    }


def get_protocol(name: str) -> Protocol:
    """The protocol called ``name`` (``ValueError`` listing the known ones otherwise)."""
    known = protocols()
    if name not in known:
        raise RefusalValueError(f"unknown protocol {name!r}; known: {', '.join(known)}", "param_choice",
                                param="protocol", choices=list(known), got=name)
    return known[name]


def params_from_dict(d: dict[str, Any]) -> ProtocolParams:
    """Params from ``{"protocol": name, "params": {...}}`` (client side, no numpy)."""
    try:
        params_type, _ = client_protocols()[d["protocol"]]
    except KeyError:
        raise RefusalValueError(f"unknown protocol {d.get('protocol')!r}; known: {', '.join(client_protocols())}",
                                "param_choice", param="protocol", choices=list(client_protocols()),
                                got=d.get("protocol")) from None
    return params_type.from_dict(d["params"])


def protocols_taking(kind: str) -> tuple[str, ...]:
    """The registered protocols whose collections take ``kind`` (their params'
    :attr:`~ldp.encoders.base.ProtocolParams.population_kind`: ``"counts"``, ``"numbers"`` — the means —, or
    ``"attributes"``), by name: read from the registry, so that a protocol added (or installed) is in it with no
    list to edit."""
    return tuple(sorted(name for name, (params, _) in client_protocols().items() if params.population_kind == kind))


def clear_caches() -> None:
    """Forget what was discovered, so that the next call scans again (after installing a distribution in a running
    process, or in tests that put one on ``sys.path``)."""
    for f in (builtin_client_protocols, _plugins):
        f.cache_clear()
    _forget_merged()


def _forget_merged() -> None:
    from ldp.decoders.base import _aggregates  # what Aggregate.from_bytes reads headers with

    for f in (client_protocols, protocols, _aggregates):
        f.cache_clear()


@contextmanager
def provisionally_registered(proto: Protocol) -> Iterator[Protocol]:
    """Within the block, ``proto`` is registered like an installed one (the spec, the client, the server fold and
    ``Aggregate.from_bytes`` find it): how the conformance suite runs on a protocol before it is installed. A
    registered protocol of that name must be this one (same params and encoder; :class:`ProtocolClashError`
    otherwise), and is then used as it is."""
    known = protocols().get(proto.name)
    if known is not None:
        same = (known.params_type, known.encoder_type) == (proto.params_type, proto.encoder_type) and \
            proto.aggregate_type in (None, known.aggregate_type)
        if not same:
            raise ProtocolClashError(f"protocol {proto.name!r} ({_where(proto.encoder_type)}) clashes with the "
                                     f"registered {_where(known.encoder_type)} ({known.origin}): give it another name")
        yield known
        return
    aggregates = [] if proto.aggregate_type is None else [proto.aggregate_type]
    with added_classes(ENCODERS_GROUP, [proto.encoder_type]), added_classes(DECODERS_GROUP, aggregates):
        _forget_merged()
        try:
            yield protocols()[proto.name]
        finally:
            _forget_merged()
