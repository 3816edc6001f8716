"""Which values the conformance vectors try for a parameter set: its audit inputs, then values around and outside
its domain and of every JSON type; and for a protocol of numbers, the float edges: ``-0.0``, the subnormals, the
largest finite doubles and the doubles one ulp either side of every bucket edge. One rule for every protocol (the
parameter sets are each protocol's own answer, :meth:`~ldp.encoders.base.ProtocolParams.conformance_examples`, and
for the protocols of numbers a few more derived from the first, :func:`float_edge_params`)."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["BAD_FIELD_VALUES", "EDGE_FLOATS", "EDGE_RANGES", "JUNK_VALUES", "MAX_DOUBLE", "MAX_EDGES", "WIDE_EDGES",
           "WINDOW", "float_edge_groups", "float_edge_params", "trial_values", "value_edges", "value_key"]

WINDOW = 20415
"""The window index every vector's envelope carries (2025-11-23 in UTC days)."""

BAD_FIELD_VALUES: list[Any] = [None, True, "x", -1, 0, 0.5, 1e300, [], {}]
"""What each parameter field is set to, one at a time, to record what the params check says (or accepts)."""

JUNK_VALUES: list[Any] = [None, True, [], {}, 1.5, -1, 5, 2**53, "", "zz-not-a-label", "\ud800", "caf\u00e9", "x" * 300]
"""Values of every JSON type every encoder is given: refused (with the text of the refusal) or reported."""


def trial_values(params: Any, inputs: list[Any]) -> list[Any]:
    """``inputs`` (a parameter set's audit inputs), then :data:`JUNK_VALUES`, the first indices past a fixed
    domain, just outside the range of numeric inputs, and records of attributes with one missing, unknown or null;
    each value once, in that order, and no infinite float (an input or "just outside" of a range reaching the
    largest double: JSON has no infinity)."""
    out = list(inputs)
    extra = list(JUNK_VALUES)
    if (d := params.domain_size) is not None:
        extra += [d, d + 1]
    floats = [v for v in inputs if isinstance(v, float) and math.isfinite(v)]
    if floats:  # a numeric protocol: just outside its range (when that is a finite double)
        extra += [x for x in (min(floats) - 1.0, max(floats) * 2 + 1.0) if math.isfinite(x)]
    records = [v for v in inputs if isinstance(v, dict)]
    if records:  # values of several attributes: one left out, one unknown, one null
        first = records[0]
        name = next(iter(first))
        extra += [{k: v for k, v in first.items() if k != name}, {**first, "zz": 0}, {**first, name: None}]
    for v in extra:
        if not any(type(v) is type(w) and v == w for w in out):
            out.append(v)
    return [v for v in out if not (isinstance(v, float) and not math.isfinite(v))]  # (JSON has no inf)


MAX_DOUBLE = 1.7976931348623157e308
"""The largest finite double."""

EDGE_FLOATS: list[float] = [-0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308, MAX_DOUBLE,
                            -MAX_DOUBLE]
"""The float edges every protocol of numbers is given: negative zero (which Python's comparisons take as ``0.0``),
the smallest subnormal and the smallest normal double, the largest finite double, and their negatives."""

WIDE_EDGES: list[float] = [-MAX_DOUBLE, -1.0, 0.5, MAX_DOUBLE]
"""The bucket edges of the float-edge parameter set of a histogram: ``0.0`` inside a bucket, the largest finite
doubles on the outer edges (accepted there)."""

EDGE_RANGES: list[tuple[float, float]] = [(-0.3, 0.7), (0.0, MAX_DOUBLE)]
"""The ``low`` and ``high`` of the float-edge parameter sets of a protocol of numbers in a range: ``0.0`` inside
(and for ``hh`` inner bucket edges ``low + (high − low)·i/D`` that are not the doubles nearest the exact ones), and
a range reaching the largest finite double."""

MAX_EDGES = 10
"""A parameter set with more bucket edges than this has the ulps either side of five of them only: the first two,
the middle one and the last two (its other edges are alike; every one would triple the size of the files)."""


def float_edge_params(params_type: Any) -> list[Any]:
    """The parameter sets the float edges add to a protocol's conformance examples: its first example with
    ``edges`` set to :data:`WIDE_EDGES`, or with ``low`` and ``high`` set to each of :data:`EDGE_RANGES`; those its
    parameters check accepts (``hh`` refuses ``[0, 1.7976931348623157e+308]``: its edges overflow). The examples'
    edges all hold ``0.0`` or lie above it, and none reaches the largest double. One rule, by the params' fields."""
    first = params_type.conformance_examples()[0].to_dict()
    trials = []
    if "edges" in first:
        trials.append({**first, "edges": WIDE_EDGES})
    if "low" in first and "high" in first:
        trials += [{**first, "low": low, "high": high} for low, high in EDGE_RANGES]
    out = []
    for trial in trials:
        try:
            out.append(params_type.from_dict(trial))
        except (TypeError, ValueError):
            continue
    return out


def value_key(value: Any) -> str:
    """What tells two trial values apart: the type and the JSON text (``-0.0`` is not ``0.0``, ``1`` not ``1.0``)."""
    return f"{type(value).__name__}:{json.dumps(value, sort_keys=True)}"


def value_edges(params: Any) -> list[float]:
    """Where a protocol of numbers changes its output for a value: its bucket edges (``edges``), else the rounding
    grid of ``buckets`` over ``[low, high]`` or, without one, the bounds ``low`` and ``high``; empty for a protocol
    of indices or strings. Finite edges only."""
    edges = getattr(params, "edges", None)
    if edges is None:
        low, high = getattr(params, "low", None), getattr(params, "high", None)
        if not (isinstance(low, float) and isinstance(high, float)):
            return []
        buckets = getattr(params, "buckets", None)
        edges = [low + j * (high - low) / buckets for j in range(buckets + 1)] if isinstance(buckets, int) \
            else [low, high]
    return [e for e in edges if math.isfinite(e)]


def _float_groups(edges: list[float]) -> list[list[float]]:
    """``-0.0`` alone, the other :data:`EDGE_FLOATS` in pairs (a value and its negative), then per edge ``e`` the
    doubles ``nextafter(e, -inf)``, ``e`` and ``nextafter(e, +inf)`` (finite ones), for every edge or, beyond
    :data:`MAX_EDGES`, five of them."""
    groups = [[EDGE_FLOATS[0]], EDGE_FLOATS[1:3], EDGE_FLOATS[3:5], EDGE_FLOATS[5:7]]
    if len(edges) > MAX_EDGES:
        k = len(edges) - 1
        edges = [edges[i] for i in sorted({0, 1, k // 2, k - 1, k})]
    for e in edges:
        groups.append([x for x in (math.nextafter(e, -math.inf), e, math.nextafter(e, math.inf)) if math.isfinite(x)])
    return groups


def float_edge_groups(params: Any, inputs: list[Any]) -> list[list[Any]]:
    """The float edges of a parameter set, in groups (one device reports the accepted values of a group in a row):
    :func:`_float_groups` of its :func:`value_edges`; for records of attributes (``multi``), the first record of
    ``inputs`` with one attribute of numbers set to each, attribute by attribute. Empty for a protocol that takes
    no numbers."""
    if edges := value_edges(params):
        return _float_groups(edges)
    records = [v for v in inputs if isinstance(v, dict)]
    if not records or not hasattr(params, "components"):
        return []
    first = records[0]
    groups = []
    for name, component in zip(params.names, params.components, strict=True):
        if edges := value_edges(component):
            groups += [[{**first, name: x} for x in group] for group in _float_groups(edges)]
    return groups
