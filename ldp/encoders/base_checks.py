"""Checking what a protocol's parameters and encoder are given: ``ε``, integer fields, string values, and a
memoizing client's secret (drawn when none is given). Re-exported by :mod:`ldp.encoders.base`."""

from __future__ import annotations

import math
from typing import Any

from ldp.randomness import RandomSource

__all__ = ["SECRET_BYTES", "check_epsilon", "check_int", "check_string_value", "client_secret"]

SECRET_BYTES = 32
"""Bytes of a client secret drawn when none is given (the keyed, memoized responses derive from it)."""


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """``float(epsilon)`` if it is a finite real > 0, else ``ValueError`` naming the rule."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(epsilon).__name__}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"{name} must be finite and > 0, got {epsilon}")
    return float(epsilon)


def check_int(value: int, name: str, low: int, high: int | None = None) -> int:
    """``value`` if it is an int in ``[low, high]``, else a ``TypeError``/``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_string_value(value: Any, protocol: str) -> Any:
    """``value`` if it is str or bytes (what the string protocols hash), else a ``TypeError``."""
    if not isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"{protocol} values must be str or bytes, got {type(value).__name__}")
    return value


def client_secret(secret: bytes | bytearray | str | None, rng: RandomSource) -> bytes:
    """The client secret of a memoizing encoder: ``secret`` (str is UTF-8 encoded), or :data:`SECRET_BYTES`
    fresh bytes from ``rng`` (the CSPRNG unless seeded); ``TypeError`` unless non-empty bytes or str."""
    if secret is None:
        return rng.token_bytes(SECRET_BYTES)
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not isinstance(secret, (bytes, bytearray)) or not secret:
        raise TypeError("secret must be non-empty bytes (or str)")
    return bytes(secret)
