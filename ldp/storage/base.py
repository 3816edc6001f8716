"""The store interface of :mod:`ldp.storage`, its object keys, what :meth:`Store.stat` answers and the streaming
reader :meth:`Store.open` returns."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any, BinaryIO, NamedTuple, Protocol, runtime_checkable

__all__ = ["READ_BLOCK", "ObjectStat", "Store", "check_key", "check_read_key", "join", "reader"]

READ_BLOCK = 4 << 20
"""Bytes per request of a streaming read (:meth:`Store.open`): an object is read this much at a time."""

_KEY_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]{0,199}\Z")
"""One part of a key: a letter or digit, then letters, digits and ``._=+-`` (no ``..``, no hidden names)."""


def check_key(key: str) -> str:
    """``key`` if it is a valid object key — 1 to 16 ``/``-separated parts, each matching
    ``[A-Za-z0-9][A-Za-z0-9._=+-]*`` and not ``..``-like — else ``ValueError`` naming it. Keys never escape the
    store's root. Every key the package writes is one."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"an object key must be a non-empty string, got {key!r}")
    parts = key.split("/")
    if len(parts) > 16 or any(not _KEY_PART.match(p) or ".." in p for p in parts):
        raise ValueError(f"invalid object key {key!r}: '/'-separated parts of letters, digits and ._=+- "
                         "(each starting with a letter or digit), at most 16 parts")
    return key


def check_read_key(key: str) -> str:
    """``key`` if it may name an object to read (:meth:`Store.get`, :meth:`Store.stat`, :meth:`Store.open`,
    :meth:`Store.exists`): objects written by others (an analyst's bucket of uploads) have any names, so any
    ``/``-separated parts are taken — but none empty, ``.`` or ``..``, and no NUL, so a key still names one place
    under the store's root (and a role's prefix, :mod:`ldp.storage.roles`, means what it says) — at most 1,024
    bytes of UTF-8 (S3's limit); else ``ValueError`` naming it."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"an object key must be a non-empty string, got {key!r}")
    if "\x00" in key or any(p in ("", ".", "..") for p in key.split("/")) or len(key.encode("utf-8", "replace")) > 1024:
        raise ValueError(f"invalid object key {key!r}: '/'-separated parts, none empty, '.' or '..', no NUL, "
                         "at most 1024 bytes")
    return key


def join(*parts: str) -> str:
    """The key of ``parts`` joined by ``/`` (each checked)."""
    return check_key("/".join(p.strip("/") for p in parts if p))


class ObjectStat(NamedTuple):
    """What a store tells of an object without reading it (:meth:`Store.stat`).

    ``version`` changes whenever the object is replaced by other content: an object store's ETag (S3: the MD5 of a
    single-part upload, so equal content keeps its tag), else ``<mtime ns>-<size>[-<inode>]`` in hex (a folder:
    every :meth:`Store.put` is a new file, its mtime later than the one it replaces). ``etag`` is the object
    store's own content tag, ``""`` where there is none (a folder, a filesystem without one): a reader may trust
    an unchanged ``etag`` without reading the object again, not an unchanged time."""

    size: int
    mtime_ns: int
    version: str
    etag: str = ""


@runtime_checkable
class Store(Protocol):
    """An object store (:mod:`ldp.storage`). ``url`` says where it is, for logs and errors."""

    url: str

    def put(self, key: str, data: bytes) -> None:
        """Write ``data`` at ``key`` atomically and durably (replacing an object there)."""

    def create(self, key: str, data: bytes) -> bool:
        """Write ``data`` at ``key`` only if there is no object there: ``True`` if written, ``False`` if it was."""

    def get(self, key: str) -> bytes:
        """The object at ``key`` (``FileNotFoundError`` if none)."""

    def stat(self, key: str) -> ObjectStat:
        """The object's size, modification time and version, without reading it (``FileNotFoundError`` naming it
        if there is no object at ``key``, a prefix included)."""

    def open(self, key: str) -> BinaryIO:
        """The object at ``key`` opened for reading as a stream (a binary file, closed by ``with``), fetched
        :data:`READ_BLOCK` bytes at a time, never whole (``FileNotFoundError`` naming it if none). Failures while
        reading are :class:`~ldp.errors.StorageError`; on S3 every block is read with ``If-Match`` the ETag seen
        when opened, so an object replaced meanwhile fails instead of mixing two versions."""

    def exists(self, key: str) -> bool:
        """Whether an object is at ``key``."""

    def list(self, prefix: str = "") -> list[str]:
        """The keys under ``prefix`` (a key prefix ending at a ``/``, or ``""`` for all), sorted."""

    def delete(self, key: str) -> None:
        """Remove the object at ``key`` (nothing if there is none)."""

    def root_exists(self) -> bool:
        """Whether the store itself is there (the folder; the bucket), whatever it holds."""


class _Raw(io.RawIOBase):
    """A store's underlying file read as raw bytes, its failures translated by ``fail``."""

    def __init__(self, raw: Any, fail: Callable[[BaseException], BaseException]) -> None:
        super().__init__()
        self._raw, self._fail = raw, fail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._raw.read(len(buffer))
        except Exception as exc:
            raise self._fail(exc) from exc
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._raw.close()
            except Exception:
                pass  # read-only: nothing to lose
        super().close()


def reader(raw: Any, fail: Callable[[BaseException], BaseException], block: int = READ_BLOCK) -> BinaryIO:
    """``raw`` (a file opened for reading) as the stream :meth:`Store.open` returns: buffered by ``block`` bytes,
    each failure of a read raised as ``fail(exc)``."""
    return io.BufferedReader(_Raw(raw, fail), buffer_size=block)
