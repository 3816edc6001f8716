"""The upload envelope: one JSON line per report, tying it to its spec, metric and window.

``{"spec": "<spec fingerprint>", "metric": "<name>", "window": <int>, "report": {<v1 report>}}``
and nothing else: no identifier, no timestamp finer than the window index. :func:`parse_envelope`
rejects a bad line with an :class:`EnvelopeError` whose ``reason`` is one of
:data:`ENVELOPE_REASONS` (the report's own reasons from :mod:`ldp.reports` included).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ldp.errors import ENVELOPE_REASONS, EnvelopeError
from ldp.reports import MAX_LINE, MAX_WINDOW, Report, ReportError, loads_utf8
from ldp.wire import _LINE_ENCODER, _json_str  # the encoder pieces Report.to_json writes with

__all__ = ["Envelope", "EnvelopeError", "ENVELOPE_REASONS", "METRIC_RE", "MAX_WINDOW", "parse_envelope"]

METRIC_RE = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
"""Metric names: a lowercase letter, then up to 31 lowercase letters, digits or underscores."""
_FP_RE = re.compile(r"[0-9a-f]{16}\Z")


@dataclass(frozen=True)
class Envelope:
    """One upload record: spec fingerprint, metric, window index and the report. Nothing else."""

    spec: str
    metric: str
    window: int
    report: Report

    def to_json(self) -> str:
        """One JSON line, keys in the order spec, metric, window, report (no newline): the bytes of
        ``json.dumps(envelope, separators=(",", ":"))``, written as :meth:`Report.to_json` writes the report,
        without a json encoder per call (the client's outbox writes one line per report)."""
        spec, metric, window = self.spec, self.metric, self.window
        if type(spec) is str and type(metric) is str and type(window) is int and window.bit_length() <= 64:
            return (f'{{"spec":{_json_str(spec)},"metric":{_json_str(metric)},"window":{window},'
                    f'"report":{self.report.to_json()}}}')
        return _LINE_ENCODER.encode({"spec": spec, "metric": metric, "window": window,
                                     "report": self.report.to_dict()})


def _keys(obj: Any, expected: set[str], what: str) -> None:
    if not isinstance(obj, dict):
        raise EnvelopeError("not_object" if what == "envelope" else "bad_report", f"{what} must be a JSON object")
    if missing := expected - obj.keys():
        raise EnvelopeError("missing_key", f"{what} lacks {sorted(missing)}")
    if extra := obj.keys() - expected:
        raise EnvelopeError("unknown_key", f"{what} has {sorted(extra)[:5]} (no identifier or timestamp allowed)")


def parse_envelope(line: str | bytes, specs: Any = None) -> Envelope:
    """Parse and check one upload line; raise :class:`EnvelopeError` with the reason.

    With ``specs`` (a :class:`~ldp.spec.CollectionSpec`, or ``{fingerprint: spec}`` for several
    versions of the spec) the envelope is also routed: its spec must be known, its metric in that
    spec, and its report made with that metric's parameters and in range
    (:meth:`~ldp.spec.CollectionSpec.route`)."""
    if len(line) > MAX_LINE:
        raise EnvelopeError("too_large", f"line longer than {MAX_LINE}")
    try:
        obj = loads_utf8(line)
    except ReportError as err:  # a repeated key, anywhere in the line
        raise EnvelopeError(err.reason, err.detail) from None
    except (ValueError, UnicodeDecodeError, RecursionError, TypeError) as exc:
        raise EnvelopeError("not_json", str(exc)[:200]) from None
    _keys(obj, {"spec", "metric", "window", "report"}, "envelope")
    if not (isinstance(obj["spec"], str) and _FP_RE.match(obj["spec"])):
        raise EnvelopeError("bad_spec", "spec must be 16 lowercase hex digits")
    if not (isinstance(obj["metric"], str) and METRIC_RE.match(obj["metric"])):
        raise EnvelopeError("bad_metric", "metric names match [a-z][a-z0-9_]{0,31}")
    window = obj["window"]
    if type(window) is not int or not 0 <= window <= MAX_WINDOW:
        raise EnvelopeError("bad_window", f"window must be an integer in [0, 2**53], got {window!r}")
    raw = obj["report"]
    _keys(raw, {"v", "protocol", "params", "payload"}, "report")
    if not isinstance(raw["payload"], dict):
        raise EnvelopeError("bad_payload", "report: payload must be an object")
    try:
        report = Report(raw["protocol"], raw["params"], raw["payload"], raw["v"])
    except ReportError as err:
        raise EnvelopeError(err.reason, f"report: {err.detail}") from None
    env = Envelope(obj["spec"], obj["metric"], window, report)
    if specs is not None:
        index: Mapping[str, Any] = specs if isinstance(specs, Mapping) else {specs.fingerprint: specs}
        spec = index.get(env.spec)
        if spec is None:
            raise EnvelopeError("unknown_spec", f"no known spec has fingerprint {env.spec}")
        spec.route(env)
    return env
