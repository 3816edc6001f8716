"""How the spec's errors name a place and a value (``metrics.m.otel.kind``, ``a list``, ``int 5``), and which JSON
numbers are finite: one place for each, so that every part of the spec (:mod:`ldp.spec.schema`, :mod:`ldp.spec.otel`)
checks and says them alike (the other clients match these words)."""

from __future__ import annotations

import json
import math
from typing import Any

from ldp.spec.envelope import METRIC_RE

__all__ = ["join", "kind", "finite"]


def kind(v: Any) -> str:
    """What a JSON value is, for an error message: ``an object``, ``a string``, ``null``, ``int 5``..."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), f"{type(v).__name__} {v!r}")


def join(path: str, key: str) -> str:
    """``path.key``, or ``path["key"]`` when the key is not a plain name (``$`` is the document's root)."""
    if not METRIC_RE.match(key):
        return f"{path}[{json.dumps(key)}]"
    return key if path == "$" else f"{path}.{key}"


def finite(v: int | float) -> bool:
    """``math.isfinite`` that says ``False`` for an int beyond the double range (instead of raising)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False
