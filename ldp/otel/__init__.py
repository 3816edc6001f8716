"""OpenTelemetry on the device: :class:`~ldp.otel.reader.PrivatizingMetricReader` turns the instruments a spec
declares into locally private reports (docs/opentelemetry.md). Needs the ``otel`` extra (``opentelemetry-sdk``);
:mod:`ldp.otel.window` (the window's tally) is standard library only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldp.otel.reader import PrivatizingMetricReader

__all__ = ["PrivatizingMetricReader"]


def __getattr__(name: str) -> Any:
    if name == "PrivatizingMetricReader":
        from ldp.otel.reader import PrivatizingMetricReader

        return PrivatizingMetricReader
    raise AttributeError(name)
