"""Conformance vectors for clients in other languages: the Python client's exact outputs, from the exact random
bits it drew (:mod:`ldp.conformance.vectors`; the folder ``conformance/vectors/`` of the repository, checked by the
test suite). See docs/conformance.md."""

from ldp.conformance.vectors import FORMAT, GENERATE, all_vectors, check, protocol_vectors, render, write

__all__ = ["FORMAT", "GENERATE", "all_vectors", "check", "protocol_vectors", "render", "write"]
