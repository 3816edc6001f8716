"""The metric kinds a spec's ``protocol`` may name: the registered protocols (:func:`ldp.protocols.client_protocols`:
each with its params and its encoder, the device's local randomizer) and the kinds without a local randomizer, whose
devices share the exact value with a VDAF between two aggregators (``poplar1``: :mod:`ldp.encoders.poplar1`). The
latter have no encoder, so the registry does not list them (no planner, simulation, decoder or conformance vector
applies); they are the params classes of :mod:`ldp.encoders` whose ``local_randomizer`` is ``False``, found by the
registry's scanner. Standard library only (client code)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from ldp.lazy import subclasses_in
from ldp.protocols import client_protocols

if TYPE_CHECKING:
    from ldp.encoders.base import ProtocolParams

__all__ = ["metric_kinds", "shared_kinds"]


@cache
def shared_kinds() -> dict[str, type[ProtocolParams]]:
    """``{name: params_type}`` of the built-in kinds without a local randomizer (module docstring)."""
    from ldp.encoders.base import ProtocolParams

    return {p.protocol: p for p in subclasses_in("ldp.encoders", ProtocolParams) if not p.local_randomizer}


def metric_kinds() -> dict[str, type[ProtocolParams]]:
    """``{name: params_type}`` of every kind a metric may name: the registered protocols, then :func:`shared_kinds`
    (read now, so that a protocol registered for a while is in it)."""
    return {**{name: params for name, (params, _) in client_protocols().items()}, **shared_kinds()}
