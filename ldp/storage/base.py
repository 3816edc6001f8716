"""The store interface of :mod:`ldp.storage`, its object keys, what :meth:`Store.stat` answers and the streaming
reader :meth:`Store.open` returns.

Every member a caller uses is declared on :class:`Store`, and what a store can do is declared too, never probed:
:attr:`Store.capabilities` (:class:`Capabilities`: an exclusive create, versions, ETags, reads pinned to a
version, streaming reads, reopening in another process), :meth:`Store.spec` (its URL and options: another process
opens the same store with ``open_store(*store.spec())``), :meth:`Store.retention_warning` (``None`` where nothing
outlives a deletion), :attr:`Store.fence` and :attr:`Store.lease` (``None`` unless writes are fenced by a lease),
and :meth:`Store.unwrap` (the innermost store). A wrapper (:class:`StoreWrapper`: a role's store, a fenced store)
implements the protocol explicitly, forwarding each member to :attr:`StoreWrapper.inner` — never ``__getattr__``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple, Protocol, runtime_checkable

__all__ = ["READ_BLOCK", "Capabilities", "LeaseHolder", "ObjectStat", "Store", "StoreSpec", "StoreWrapper", "check_key",
           "check_read_key", "join", "reader"]

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
    single-part upload, so equal content keeps its tag; Azure: a new tag at every write), else
    ``<mtime ns>-<size>[-<inode>]`` in hex (a folder: every :meth:`Store.put` is a new file, its mtime later than
    the one it replaces). ``etag`` is the object store's own tag, ``""`` where there is none (a folder, a
    filesystem without one): a reader may trust an unchanged ``etag`` without reading the object again, not an
    unchanged time."""

    size: int
    mtime_ns: int
    version: str
    etag: str = ""


@dataclass(frozen=True)
class Capabilities:
    """What a store can do, declared by the store (never probed by its callers; :mod:`ldp.storage.checks` checks
    each declaration against the store's behaviour)."""

    conditional_create: bool = True
    """:meth:`Store.create` is exclusive, across processes: of several creates of one key exactly one returns
    ``True`` (a folder's ``link(2)``; S3's and Azure's ``If-None-Match: *``). A lease needs it."""
    versions: bool = True
    """:meth:`Store.stat`'s ``version`` changes whenever the object is replaced by other content."""
    etags: bool = False
    """:meth:`Store.stat`'s ``etag`` is the store's own tag of the object (never ``""``): an unchanged one means
    unchanged content."""
    pinned_reads: bool = False
    """:meth:`Store.open` reads every block of the version seen when it was opened (``If-Match`` its ETag): an
    object replaced while it is read fails the read with :class:`~ldp.errors.StorageError`. Every store, pinned or
    not, never returns a mixture of two versions."""
    streaming_reads: bool = True
    """:meth:`Store.open` fetches the object :data:`READ_BLOCK` bytes at a time, never whole."""
    distributed: bool = False
    """Another process opens this very store from :meth:`Store.spec` (``open_store(*store.spec())``): object
    storage, or a folder at the same path on every machine (a shared mount). A store in one process's memory is
    not."""


class StoreSpec(NamedTuple):
    """Where a store is and how it is opened: ``open_store(*spec)`` opens it again (another process, a Dask
    worker). ``options`` are those it was opened with (``{}`` for a folder), secrets included when given there."""

    url: str
    options: dict[str, Any]


class LeaseHolder(Protocol):
    """What a fenced store's :attr:`Store.lease` is (a :class:`~ldp.storage.lease.Lease`): its fencing token while
    held, :meth:`ensure` (held for sure, else :class:`~ldp.errors.LeaseLostError`) and :meth:`start` (take it again
    and renew it)."""

    token: int | None

    def ensure(self) -> None: ...

    def start(self) -> int: ...


@runtime_checkable
class Store(Protocol):
    """An object store (:mod:`ldp.storage`). ``url`` says where it is, for logs and errors."""

    url: str

    @property
    def capabilities(self) -> Capabilities:
        """What this store can do (:class:`Capabilities`)."""

    @property
    def options(self) -> dict[str, Any]:
        """The options it was opened with (``{}`` for a folder): a copy."""

    def spec(self) -> StoreSpec:
        """Its URL and options: ``open_store(*store.spec())`` opens the same store (in another process where
        :attr:`Capabilities.distributed`). A wrapper's is its innermost store's: whoever reopens it wraps it again."""

    @property
    def fence(self) -> int | None:
        """The fencing token every object written through this store carries (:class:`~ldp.storage.lease.FencedStore`:
        its lease's), ``None`` for a store whose writes are not fenced."""

    @property
    def lease(self) -> LeaseHolder | None:
        """The lease its writes are fenced by (:class:`~ldp.storage.lease.FencedStore`), else ``None``."""

    def unwrap(self) -> Store:
        """The innermost store: itself, or under its wrappers (a role's store, a fenced one) the store they wrap, with
        none of their checks."""

    def retention_warning(self, prefix: str) -> str | None:
        """Why objects deleted under ``prefix`` may outlive their deletion in this store (versioning, soft delete),
        or ``None`` (a folder: a deleted file is gone)."""

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


class StoreWrapper:
    """A store around another (:attr:`inner`), implementing :class:`Store` by forwarding every member to it; a
    subclass overrides what it adds (:class:`~ldp.storage.roles.RoleStore` checks each operation,
    :class:`~ldp.storage.lease.FencedStore` each write). Nothing is forwarded implicitly: a member that is not
    declared here is not there."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.url = inner.url

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def options(self) -> dict[str, Any]:
        return self.inner.options

    def spec(self) -> StoreSpec:
        return self.inner.spec()

    @property
    def fence(self) -> int | None:
        return self.inner.fence

    @property
    def lease(self) -> LeaseHolder | None:
        return self.inner.lease

    def unwrap(self) -> Store:
        return self.inner.unwrap()

    def retention_warning(self, prefix: str) -> str | None:
        return self.inner.retention_warning(prefix)

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        return self.inner.create(key, data)

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def stat(self, key: str) -> ObjectStat:
        return self.inner.stat(key)

    def open(self, key: str) -> BinaryIO:
        return self.inner.open(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> list[str]:
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def root_exists(self) -> bool:
        return self.inner.root_exists()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


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
