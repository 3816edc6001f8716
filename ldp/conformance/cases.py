"""Which values the conformance vectors try for a parameter set: its audit inputs, then values around and outside
its domain and of every JSON type. One rule for every protocol (the parameter sets are each protocol's own answer,
:meth:`~ldp.encoders.base.ProtocolParams.conformance_examples`)."""

from __future__ import annotations

from typing import Any

__all__ = ["BAD_FIELD_VALUES", "JUNK_VALUES", "WINDOW", "trial_values"]

WINDOW = 20415
"""The window index every vector's envelope carries (2025-11-23 in UTC days)."""

BAD_FIELD_VALUES: list[Any] = [None, True, "x", -1, 0, 0.5, 1e300, [], {}]
"""What each parameter field is set to, one at a time, to record what the params check says (or accepts)."""

JUNK_VALUES: list[Any] = [None, True, [], {}, 1.5, -1, 5, 2**53, "", "zz-not-a-label", "\ud800", "caf\u00e9", "x" * 300]
"""Values of every JSON type every encoder is given: refused (with the text of the refusal) or reported."""


def trial_values(params: Any, inputs: list[Any]) -> list[Any]:
    """``inputs`` (a parameter set's audit inputs), then :data:`JUNK_VALUES`, the first indices past a fixed
    domain, just outside the range of numeric inputs, and records of attributes with one missing, unknown or null;
    each value once, in that order."""
    out = list(inputs)
    extra = list(JUNK_VALUES)
    if (d := params.domain_size) is not None:
        extra += [d, d + 1]
    floats = [v for v in inputs if isinstance(v, float)]
    if floats:  # a numeric protocol: just outside its range
        extra += [min(floats) - 1.0, max(floats) * 2 + 1.0]
    records = [v for v in inputs if isinstance(v, dict)]
    if records:  # values of several attributes: one left out, one unknown, one null
        first = records[0]
        name = next(iter(first))
        extra += [{k: v for k, v in first.items() if k != name}, {**first, "zz": 0}, {**first, name: None}]
    for v in extra:
        if not any(type(v) is type(w) and v == w for w in out):
            out.append(v)
    return out
