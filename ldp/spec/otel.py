"""A metric's ``otel`` key: which OpenTelemetry instrument feeds it, and how one window of it becomes one value.

A spec names the instruments a privatizing reader (:mod:`ldp.otel`, ``clients/typescript``'s ``otel`` entry) may
read; every other instrument is dropped on the device. Each mapping is checked against the metric's protocol here,
when the spec is read, so that an instrument whose window value could not be encoded is refused before anything is
measured (docs/opentelemetry.md has the table)::

    "otel": {"instrument": "app.screen.views", "kind": "counter", "value": "attribute", "attribute": "screen"}

``kind`` is the instrument's (a counter, an up-down counter, a histogram or a gauge; the observable ones aggregate
as their synchronous kin). ``value`` says what one window of its measurements reports:

=============  =======================  =====================================================  ====================
``value``      ``kind``                 the window's value                                     protocols
=============  =======================  =====================================================  ====================
``any``        counter, histogram       whether anything was counted (sum, or count, > 0)      rr; a 2-value one
``sum``        counter, updown_counter  the window's sum                                       numbers (clip: true)
``last``       gauge                    the last value observed                                numbers (clip: true)
``mean``       histogram                sum / count of the window's observations               numbers (clip: true)
``bucket``     histogram                the bucket of ``buckets`` holding most observations    categories
``attribute``  counter, histogram       the value of ``attribute`` counted most (``values``:   categories, strings
                                        the categories, by default the protocol's labels)
=============  =======================  =====================================================  ====================

Ties go to the lowest bucket or category, or the smallest string. Standard library only (a client module).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ldp.spec.jsonpath import finite as _finite, join as _join, kind as _kind

if TYPE_CHECKING:
    from ldp.encoders.base import ProtocolParams

__all__ = ["OtelSource", "KINDS", "VALUES", "value_classes", "INSTRUMENT_RE", "value_class", "parse_otel",
           "MAX_ATTRIBUTE_LENGTH", "otel_lines"]

KINDS = ("counter", "updown_counter", "histogram", "gauge")
"""The instrument kinds a mapping names (``observable_*`` instruments aggregate as these)."""
VALUES = ("any", "sum", "last", "mean", "bucket", "attribute")
"""How one window of an instrument becomes one value (the module's table)."""
KINDS_OF: Mapping[str, tuple[str, ...]] = {
    "any": ("counter", "histogram"), "sum": ("counter", "updown_counter"), "last": ("gauge",),
    "mean": ("histogram",), "bucket": ("histogram",), "attribute": ("counter", "histogram")}
"""The instrument kinds each ``value`` reads."""
CLASSES_OF: Mapping[str, tuple[str, ...]] = {
    "any": ("boolean", "category"), "sum": ("number",), "last": ("number",), "mean": ("number",),
    "bucket": ("category",), "attribute": ("category", "string")}
"""The protocol classes each ``value`` can feed (``any`` a category only of 2 values)."""
INSTRUMENT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_./-]{0,254}\Z")
"""OpenTelemetry's instrument names: a letter, then up to 254 letters, digits, ``_``, ``.``, ``-`` or ``/``
(matched case-insensitively, as the SDKs do)."""
MAX_ATTRIBUTE_LENGTH = 255
"""Longest ``attribute`` key."""


@dataclass(frozen=True)
class OtelSource:
    """The instrument that feeds a metric and how (the module's table). ``values``: the attribute values naming the
    protocol's categories in index order (``None``: the protocol's labels, or a string protocol); ``buckets``: the
    histogram's upper bounds (OpenTelemetry's explicit buckets: bucket ``i`` holds ``(b[i-1], b[i]]``)."""

    instrument: str
    kind: str
    value: str
    attribute: str | None = None
    values: tuple[str, ...] | None = None
    buckets: tuple[float, ...] | None = None

    @property
    def key(self) -> str:
        """The instrument's name as matched (ASCII lowercase)."""
        return self.instrument.lower()

    def categories(self, params: ProtocolParams) -> tuple[str, ...] | None:
        """The attribute values of the categories, in index order (``values``, else the params' labels)."""
        return self.values if self.values is not None else getattr(params, "labels", None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instrument": self.instrument, "kind": self.kind, "value": self.value}
        if self.attribute is not None:
            out["attribute"] = self.attribute
        if self.values is not None:
            out["values"] = list(self.values)
        if self.buckets is not None:
            out["buckets"] = list(self.buckets)
        return out


def value_class(params: ProtocolParams) -> str | None:
    """``"boolean"``, ``"category"``, ``"number"`` or ``"string"``: what the protocol of ``params`` encodes (its
    params' ``value_class``; ``None``: no mapping, as for ``multi``)."""
    found = getattr(type(params), "value_class", None)
    return found if found in ("boolean", "category", "number", "string") else None


def value_classes() -> dict[str, str | None]:
    """Each client protocol's :func:`value_class`, by name (the table of docs/opentelemetry.md)."""
    from ldp.protocols import client_protocols

    return {name: getattr(params, "value_class", None) for name, (params, _) in sorted(client_protocols().items())}


def parse_otel(ck: Any, raw: Any, path: str, params: ProtocolParams | None) -> OtelSource | None:
    """The ``otel`` key at ``path`` (a metric's), checked on its own and against ``params`` (``None``: the params
    were refused, so only the key's own rules are checked); ``ck``: the spec's checker, which collects errors."""
    if ck.obj(raw, path, {"instrument", "kind", "value"}, {"attribute", "values", "buckets"}) is None:
        return None
    before = len(ck.errors)
    instrument, kind, value = raw.get("instrument"), raw.get("kind"), raw.get("value")
    if "instrument" in raw and not (isinstance(instrument, str) and INSTRUMENT_RE.match(instrument)):
        ck.fail(_join(path, "instrument"), "instrument names match [A-Za-z][A-Za-z0-9_./-]{0,254} (OpenTelemetry's "
                                           f"rule), got {_shown(instrument, _kind)}")
    if "kind" in raw and kind not in KINDS:
        ck.fail(_join(path, "kind"), f"must be one of {', '.join(KINDS)}, got {_shown(kind, _kind)}")
    if "value" in raw and value not in VALUES:
        ck.fail(_join(path, "value"), f"must be one of {', '.join(VALUES)}, got {_shown(value, _kind)}")
    elif value in VALUES and kind in KINDS and kind not in KINDS_OF[value]:
        ck.fail(_join(path, "value"), f"{value!r} reads a {' or '.join(KINDS_OF[value])} instrument, "
                                      f"got kind {kind!r}")
    attribute = _attribute(ck, raw, path, value, _join, _kind)
    buckets = _buckets(ck, raw, path, value, _join, _kind)
    values = _values(ck, raw, path, value, _join, _kind)
    if params is not None and value in VALUES:
        _fits(ck, path, value, params, values if "values" not in raw else raw["values"], buckets, _join)
    if len(ck.errors) != before:
        return None
    return OtelSource(instrument, kind, value, attribute, values, buckets)


def _shown(v: Any, kind: Any) -> str:
    return repr(v) if isinstance(v, str) else kind(v)


def _attribute(ck: Any, raw: Mapping[str, Any], path: str, value: Any, join: Any, kind: Any) -> str | None:
    apath = join(path, "attribute")
    if "attribute" not in raw:
        if value == "attribute":
            ck.fail(apath, "required with value 'attribute'")
        return None
    attribute = raw["attribute"]
    if value != "attribute":
        ck.fail(apath, "only with value 'attribute'")
    elif not isinstance(attribute, str) or not 1 <= len(attribute) <= MAX_ATTRIBUTE_LENGTH:
        ck.fail(apath, f"must be an attribute key of 1 to {MAX_ATTRIBUTE_LENGTH} characters, "
                       f"got {_shown(attribute, kind)}")
    else:
        return attribute
    return None


def _values(ck: Any, raw: Mapping[str, Any], path: str, value: Any, join: Any, kind: Any
            ) -> tuple[str, ...] | None:
    if "values" not in raw:
        return None
    vpath, values = join(path, "values"), raw["values"]
    if value != "attribute":
        ck.fail(vpath, "only with value 'attribute'")
    elif not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        ck.fail(vpath, f"must be a non-empty list of strings, got {kind(values)}")
    elif len(set(values)) != len(values):
        ck.fail(vpath, "must be distinct, got a value twice")
    else:
        return tuple(values)
    return None


def _buckets(ck: Any, raw: Mapping[str, Any], path: str, value: Any, join: Any, kind: Any
             ) -> tuple[float, ...] | None:
    bpath = join(path, "buckets")
    if "buckets" not in raw:
        if value == "bucket":
            ck.fail(bpath, "required with value 'bucket'")
        return None
    buckets = raw["buckets"]
    if value != "bucket":
        ck.fail(bpath, "only with value 'bucket'")
    elif not isinstance(buckets, list) or not buckets or not all(
            isinstance(b, (int, float)) and not isinstance(b, bool) and _finite(b) for b in buckets):
        ck.fail(bpath, f"must be a non-empty list of finite numbers, got {kind(buckets)}")
    elif any(not a < b for a, b in zip(buckets, buckets[1:], strict=False)):
        ck.fail(bpath, "must be strictly increasing")
    else:
        return tuple(float(b) for b in buckets)
    return None


def _fits(ck: Any, path: str, value: str, params: ProtocolParams, values: Any, buckets: Sequence[float] | None,
          join: Any) -> None:
    """The mapping against the protocol: its class, the number of categories, ``clip`` for numbers (``values``:
    as given, ``None`` when left out)."""
    protocol, cls = params.protocol, value_class(params)
    vpath = join(path, "value")
    if cls is None:
        ck.fail(vpath, f"{protocol} has no OpenTelemetry mapping (only the protocols of one value do)")
        return
    if cls not in CLASSES_OF[value]:
        ck.fail(vpath, f"{value!r} gives {_NOUNS[value]}, which {protocol} does not encode (it takes {_NOUNS[cls]})")
        return
    size = params.domain_size
    if value == "any" and cls == "category" and size != 2:
        ck.fail(vpath, f"'any' gives a boolean: {protocol} needs domain_size 2 for it, got {size}")
    elif cls == "number" and getattr(params, "clip", None) is not True:
        ck.fail(vpath, f"{value!r} gives any number: set params.clip to true, so that {protocol} clips a value "
                       "outside its range instead of refusing it")
    elif value == "bucket" and buckets is not None and len(buckets) + 1 != size:
        ck.fail(join(path, "buckets"), f"{len(buckets)} bounds make {len(buckets) + 1} buckets: {protocol} has "
                                       f"domain_size {size}")
    elif value == "attribute" and cls == "category":
        if isinstance(values, list) and values and len(values) != size:
            ck.fail(join(path, "values"), f"{len(values)} values for {protocol}'s domain_size {size}")
        elif values is None and getattr(params, "labels", None) is None:
            ck.fail(join(path, "values"), f"required: {protocol} has no labels to name its categories")
    elif value == "attribute" and values is not None:
        ck.fail(join(path, "values"), f"only for a protocol of categories: {protocol} takes any string")


_NOUNS = {"any": "a boolean", "sum": "a number", "last": "a number", "mean": "a number", "bucket": "a category",
          "attribute": "a category or a string", "boolean": "a boolean", "category": "a category",
          "number": "a number", "string": "a string"}


def otel_lines(metrics: Sequence[Any], charge: Callable[[str], Any] | None = None) -> list[str]:
    """What ``ldp spec validate`` says of the OpenTelemetry instruments of ``metrics`` (the spec's
    :class:`~ldp.spec.schema.MetricSpec` s): one line per mapping, and what one window of them costs a device.
    ``charge``: what the ledger charges for one report of a metric, by name (the spec's
    :meth:`~ldp.spec.CollectionSpec.report_charge`: a ``two-aggregator`` metric's ``per_report``); by default the
    protocol's cost."""
    mapped = [m for m in metrics if m.otel is not None]
    if not mapped:
        return []
    cost = {m.name: charge(m.name) if charge is not None else m.params.privacy_cost for m in mapped}
    lines = ["OpenTelemetry instruments (a privatizing reader reports one value of each per window; every other "
             "instrument is dropped on the device):"]
    for m in sorted(mapped, key=lambda m: (m.otel.key, m.name)):
        o = m.otel
        how = (f"the {o.attribute!r} value counted most" if o.value == "attribute" else
               f"the bucket of bounds {list(o.buckets or ())} with most observations" if o.value == "bucket" else
               {"any": "whether it counted anything", "sum": "the window's sum", "last": "the last value",
                "mean": "the mean observation"}[o.value])
        shared = f", in Prio3 shares to two aggregators ({m.trust}: the reader needs its task)" \
            if m.trust.startswith("two-aggregator") else ""
        lines.append(f"  {o.instrument} ({o.kind}) -> {m.name}: {how}, by {m.protocol}{shared} ({cost[m.name]})")
    total = sum(c.epsilon for c in cost.values())
    delta = sum(c.delta for c in cost.values())
    lines.append(f"  one window of these costs a device at most ε={total:g}" + (f", δ={delta:g}" if delta else "")
                 + " (basic composition of one report each)")
    return lines
