"""The store interface of :mod:`ldp.storage` and its object keys."""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

__all__ = ["Store", "check_key", "join"]

_KEY_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]{0,199}\Z")
"""One part of a key: a letter or digit, then letters, digits and ``._=+-`` (no ``..``, no hidden names)."""


def check_key(key: str) -> str:
    """``key`` if it is a valid object key — 1 to 16 ``/``-separated parts, each matching
    ``[A-Za-z0-9][A-Za-z0-9._=+-]*`` and not ``..``-like — else ``ValueError`` naming it. Keys never escape the
    store's root."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"an object key must be a non-empty string, got {key!r}")
    parts = key.split("/")
    if len(parts) > 16 or any(not _KEY_PART.match(p) or ".." in p for p in parts):
        raise ValueError(f"invalid object key {key!r}: '/'-separated parts of letters, digits and ._=+- "
                         "(each starting with a letter or digit), at most 16 parts")
    return key


def join(*parts: str) -> str:
    """The key of ``parts`` joined by ``/`` (each checked)."""
    return check_key("/".join(p.strip("/") for p in parts if p))


@runtime_checkable
class Store(Protocol):
    """An object store (module docstring). ``url`` says where it is, for logs and errors."""

    url: str

    def put(self, key: str, data: bytes) -> None:
        """Write ``data`` at ``key`` atomically and durably (replacing an object there)."""

    def create(self, key: str, data: bytes) -> bool:
        """Write ``data`` at ``key`` only if there is no object there: ``True`` if written, ``False`` if it was."""

    def get(self, key: str) -> bytes:
        """The object at ``key`` (``FileNotFoundError`` if none)."""

    def exists(self, key: str) -> bool:
        """Whether an object is at ``key``."""

    def list(self, prefix: str = "") -> list[str]:
        """The keys under ``prefix`` (a key prefix ending at a ``/``, or ``""`` for all), sorted."""

    def delete(self, key: str) -> None:
        """Remove the object at ``key`` (nothing if there is none)."""

    def root_exists(self) -> bool:
        """Whether the store itself is there (the folder; the bucket), whatever it holds."""
