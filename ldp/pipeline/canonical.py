"""The canonical bytes of an upload line: the envelope every client of this project writes for a report (keys in
order, the payload's fields in the metric's schema order, no spaces), the rule the ingest service stores accepted lines
by (:mod:`ldp.ingest.canonical`) and the shuffler checks every line it mixes against
(:mod:`ldp.shuffler.lines`)."""

from __future__ import annotations

from collections.abc import Mapping

from ldp.reports import Report
from ldp.spec import CollectionSpec, Envelope, parse_envelope

__all__ = ["canonical_line"]


def canonical_line(line: bytes | str, specs: Mapping[str, CollectionSpec]) -> bytes:
    """The canonical bytes (without newline) of an upload line the ingest service accepts under ``specs``
    (``{fingerprint: spec}``): the envelope the clients would have written for the same report. Raises
    :class:`~ldp.spec.EnvelopeError`, with the ingest service's reason, for a line it rejects. A trailing ``\\r`` (of a
    CRLF ending) is whitespace to the parser, hence dropped."""
    env = parse_envelope(line, specs)
    payload = env.report.payload
    schema = specs[env.spec].metrics[env.metric].params.schema  # routed: the spec and metric exist
    report = Report.trusted(env.report.protocol, env.report.fingerprint, {f.name: payload[f.name] for f in schema})
    return Envelope(env.spec, env.metric, env.window, report).to_json().encode("ascii")
