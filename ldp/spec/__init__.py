"""The collection spec, read by clients and servers: standard library (and ``ldp.encoders``) only.

One versioned JSON document names the collection, its window, its budgets (all metrics: per window
and lifetime; each metric: per report, per window, lifetime), its upload policy and, per metric,
the protocol, its parameters and the candidate dictionary. :class:`CollectionSpec` loads and
validates it (every error names its JSON path) and fingerprints it. Each uploaded report travels
in an :class:`Envelope` naming the spec's fingerprint, the metric and the window;
:func:`parse_envelope` checks one with a reason code per failure. See ``docs/client.md``.
"""

from ldp.spec.cli import add_spec_arguments, spec_command, summary
from ldp.spec.collection import CollectionSpec
from ldp.spec.envelope import ENVELOPE_REASONS, Envelope, EnvelopeError, parse_envelope
from ldp.spec.schema import SPEC_VERSION, Budget, CentralTarget, MetricSpec, Release, SpecError, UploadPolicy

__all__ = [
    "SPEC_VERSION", "CollectionSpec", "MetricSpec", "Budget", "UploadPolicy", "Release", "CentralTarget", "SpecError",
    "Envelope", "EnvelopeError", "ENVELOPE_REASONS", "parse_envelope",
    "summary", "add_spec_arguments", "spec_command",
]
