"""Where the collection's files live: one interface over a local folder (the embedded default), S3-compatible
object storage (through ``fsspec``/``s3fs``, the ``s3`` extra) and Azure Blob Storage (the Azure SDK, the ``azure``
extra).

A store holds immutable objects under ``/``-separated keys (``apps/demo/incoming/r1/….chunk``). Every operation
the ingest service, the shuffler and the aggregation need is one of:

* :meth:`Store.put` — write an object whole; when it returns, the object is durable and readers see all of it or,
  before, none of it (local: temporary file, fsync, rename, fsync of the folder; S3: one ``PutObject``);
* :meth:`Store.create` — the same, only if no object has that key: the conditional write (local: ``link(2)`` of a
  fsynced temporary file, which fails if the name exists; S3: ``PutObject`` with ``If-None-Match: *``), the one
  primitive two processes can agree with through the store alone;
* :meth:`Store.get`, :meth:`Store.exists`, :meth:`Store.list` (keys under a prefix, sorted), :meth:`Store.delete`;
* :meth:`Store.stat` — an object's size, modification time and version (:class:`ObjectStat`: S3's ETag; in a
  folder, mtime, size and inode), which changes when the object is replaced by other content, without reading it;
* :meth:`Store.open` — the object as a stream (a binary file), fetched :data:`READ_BLOCK` bytes at a time, never
  whole: ``ldp fold`` over ``s3://`` inputs reads, hashes and copies objects through it
  (:mod:`ldp.jobs.inputs`).

What a store can do is declared, never probed: :attr:`Store.capabilities` (:class:`Capabilities`), its
:meth:`Store.spec` (URL and options, to open it again in another process), :meth:`Store.retention_warning`,
:attr:`Store.fence` and :attr:`Store.lease` (a store fenced by a lease), :meth:`Store.unwrap` (under the wrappers).
:mod:`ldp.storage.checks` is the contract every store passes (``check_store(make_store)``).

Keys the package writes are checked by :func:`check_key` (letters, digits, ``._=+-``); a key to read may be any
name another writer gave an object (:func:`check_read_key`: no empty, ``.`` or ``..`` part). An object store
opens its filesystem (``fsspec``) once, when it is opened, and keeps it.

Failures of the store itself (a disk full, a server down or slow past its timeouts) raise :class:`StorageError`,
so that a caller can tell "the store did not take it" (answer 503, retry) from a bug. A key that is not there
raises ``FileNotFoundError`` (``get``) and nothing else.

:func:`open_store` picks the implementation from a URL: a path or ``file://`` → :class:`~ldp.storage.local.LocalStore`;
``az://container/prefix`` (``abfs://``, ``abfss://``) → :class:`~ldp.storage.azure.AzureStore` (the Azure SDK, the
``azure`` extra); ``s3://bucket/prefix`` (or any other ``fsspec`` protocol) → :class:`~ldp.storage.objects.ObjectStore`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ldp.errors import StorageError
from ldp.storage.base import (
    READ_BLOCK,
    Capabilities,
    LeaseHolder,
    ObjectStat,
    Store,
    StoreSpec,
    StoreWrapper,
    check_key,
    check_read_key,
    join,
)

__all__ = ["READ_BLOCK", "Capabilities", "LeaseHolder", "ObjectStat", "Store", "StoreSpec", "StoreWrapper",
           "StorageError", "check_key", "check_read_key", "join", "open_store"]


def open_store(url: str | Path, options: Mapping[str, Any] | None = None) -> Store:
    """The store at ``url``: a folder (a path or ``file://``), Azure Blob Storage (``az://container/prefix``, also
    ``abfs://`` and ``abfss://``: :class:`~ldp.storage.azure.AzureStore`, its options
    :data:`~ldp.storage.azure.OPTIONS`), or object storage through ``fsspec`` (``s3://bucket/prefix``, options passed
    to the filesystem, e.g. ``{"endpoint_url": ...}``)."""
    text = str(url)
    if isinstance(url, Path) or "://" not in text or text.startswith("file://"):
        from ldp.storage.local import LocalStore

        if options:
            raise ValueError(f"a local store takes no options, got {sorted(options)}")
        return LocalStore(Path(text.removeprefix("file://")))
    if text.partition("://")[0] in ("az", "abfs", "abfss"):
        from ldp.storage.azure import AzureStore

        return AzureStore(text, options)
    from ldp.storage.objects import ObjectStore

    return ObjectStore(text, dict(options or {}))
