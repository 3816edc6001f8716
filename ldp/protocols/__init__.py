"""Protocols by name: the registry (:mod:`ldp.protocols.registry`) finds each protocol's params, encoder and
aggregate; :mod:`ldp.protocols.checks` is the conformance suite every registered protocol passes."""

from ldp.protocols.registry import Protocol, client_protocols, get_protocol, params_from_dict, protocols

__all__ = ["Protocol", "client_protocols", "get_protocol", "protocols", "params_from_dict"]
