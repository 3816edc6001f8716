"""Find a protocol's parts by name: params, client encoder, server aggregate.

Discovery scans the modules of :mod:`ldp.encoders` for :class:`~ldp.encoders.base.Encoder`
subclasses (each names its ``params_type``) and of :mod:`ldp.decoders` for
:class:`~ldp.decoders.base.Aggregate` subclasses, so a new protocol is added by adding its two
files. :func:`client_protocols` stays on the client side (no numpy); :func:`get_protocol` also
imports the decoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ldp.lazy import subclasses_in

if TYPE_CHECKING:
    from ldp.decoders.base import Aggregate
    from ldp.encoders.base import Encoder, ProtocolParams

__all__ = ["Protocol", "client_protocols", "get_protocol", "protocols", "params_from_dict"]

@dataclass(frozen=True)
class Protocol:
    name: str
    params_type: type[ProtocolParams]
    encoder_type: type[Encoder]
    aggregate_type: Any = None  # an Aggregate subclass; its simulate/exact_variance are not declared on Aggregate


@cache
def client_protocols() -> dict[str, tuple[type[ProtocolParams], type[Encoder]]]:
    """``{name: (params_type, encoder_type)}`` from :mod:`ldp.encoders` (standard library only)."""
    from ldp.encoders.base import Encoder

    out: dict[str, tuple[type[ProtocolParams], type[Encoder]]] = {}
    for enc in subclasses_in("ldp.encoders", Encoder):  # type: ignore[type-abstract]  # a base to test, never made
        params = enc.params_type
        if params.protocol in out:
            raise RuntimeError(f"two encoders claim protocol {params.protocol!r}")
        out[params.protocol] = (params, enc)
    return out


@cache
def protocols() -> dict[str, Protocol]:
    """Every protocol with its params, encoder and aggregate types (imports numpy)."""
    from ldp.decoders.base import Aggregate

    aggregates: dict[type[ProtocolParams], type[Aggregate]] = {}
    # an aggregate may serve several protocols (CMS, HCMS)
    for agg in subclasses_in("ldp.decoders", Aggregate):  # type: ignore[type-abstract]  # a base to test, never made
        for params_type in agg.params_type if isinstance(agg.params_type, tuple) else (agg.params_type,):
            aggregates[params_type] = agg
    return {
        name: Protocol(name, params, enc, aggregates.get(params))
        for name, (params, enc) in sorted(client_protocols().items())
    }


def get_protocol(name: str) -> Protocol:
    """The protocol called ``name`` (``ValueError`` listing the known ones otherwise)."""
    known = protocols()
    if name not in known:
        raise ValueError(f"unknown protocol {name!r}; known: {', '.join(known)}")
    return known[name]


def params_from_dict(d: dict[str, Any]) -> ProtocolParams:
    """Params from ``{"protocol": name, "params": {...}}`` (client side, no numpy)."""
    try:
        params_type, _ = client_protocols()[d["protocol"]]
    except KeyError:
        raise ValueError(f"unknown protocol {d.get('protocol')!r}; known: {', '.join(client_protocols())}") from None
    return params_type.from_dict(d["params"])
