"""Protocols by name: the registry (:mod:`ldp.protocols.registry`) finds each protocol's params, encoder and
aggregate, built in or from another installed distribution; :mod:`ldp.protocols.checks` is the conformance suite
every registered protocol passes, and :mod:`ldp.protocols.checklist` lists a protocol's optional parts."""

from ldp.protocols.registry import (
    Protocol,
    ProtocolClashError,
    builtin_client_protocols,
    client_protocols,
    get_protocol,
    params_from_dict,
    protocols,
    protocols_taking,
)

__all__ = ["Protocol", "ProtocolClashError", "builtin_client_protocols", "client_protocols", "get_protocol",
           "protocols", "params_from_dict", "protocols_taking"]
