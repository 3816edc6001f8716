"""Inputs in object storage: ``ldp aggregate s3://bucket/prefix/`` (the ``s3`` extra: ``fsspec`` and ``s3fs``).

An input given as a URL (``s3://…``, or any other ``fsspec`` protocol but ``file://``) is listed, identified and
read through the filesystem that :class:`ldp.storage.ObjectStore` builds from the same options (for S3,
``endpoint_url`` and ``region_name`` go to the client; credentials come from the environment). An input is
identified by its URL (the manifest's ``path``) and its content (SHA-256), as a local file is by its real path and
its content. Folding fetches the object to a private temporary file first (:func:`fetched`) and folds that copy,
so every reader, fast path and format of the local engine runs unchanged on the same bytes: the aggregates are
byte for byte those of the same files folded from a folder. The object's ETag is read before and after the fetch;
an object replaced meanwhile is :class:`~ldp.errors.InputChangedError`, as a local file changed while read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ldp.server.formats import EXTENSIONS

__all__ = ["RemoteStat", "is_remote", "list_remote", "remote_stat", "remote_exists", "remote_sha256", "fetched"]


class RemoteStat(NamedTuple):
    """What identifies an object's version without reading it: size, modification time (ns) and ETag."""

    size: int
    mtime_ns: int
    etag: str


def is_remote(path: object) -> bool:
    """Whether an input names an object-storage URL (``protocol://…``, not ``file://``)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


@lru_cache(maxsize=16)
def _filesystem(protocol: str, bucket: str, options_json: str) -> Any:
    from ldp.storage.objects import ObjectStore

    return ObjectStore(f"{protocol}://{bucket}", json.loads(options_json)).fs


def _split(url: str, options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """The filesystem for ``url`` (one per protocol, bucket and options, kept) and the path inside it."""
    protocol, sep, rest = url.partition("://")
    path = rest.strip("/")
    if not sep or not protocol or not path:
        raise ValueError(f"an object-storage input is protocol://bucket/key, got {url!r}")
    opts = json.dumps(dict(options or {}), sort_keys=True, default=str)
    return _filesystem(protocol, path.split("/")[0], opts), path


def _url(url: str, path: str) -> str:
    return f"{url.partition('://')[0]}://{path}"


def list_remote(url: str, options: Mapping[str, Any] | None = None, warnings: list[str] | None = None) -> list[str]:
    """The input URLs under ``url``: the object itself, or the objects of known extensions under it as a prefix
    (recursively, sorted; hidden names skipped; the others named in ``warnings``). ``FileNotFoundError`` when
    there is nothing at all there."""
    fs, path = _split(url, options)
    if fs.isfile(path):
        return [url]
    found = sorted(str(p) for p in fs.find(path))
    files = [p for p in found if not p.rsplit("/", 1)[-1].startswith(".")]
    if not files and not fs.isdir(path):
        raise FileNotFoundError(f"no such input object or prefix: {url}")
    out = [_url(url, p) for p in files if Path(p).suffix.lower() in EXTENSIONS]
    other = [p.rsplit("/", 1)[-1] for p in files if Path(p).suffix.lower() not in EXTENSIONS]
    if other and warnings is not None:
        warnings.append(f"{len(other)} object(s) under {url} not read (unknown extension): "
                        + ", ".join(other[:5]) + (" ..." if len(other) > 5 else ""))
    return out


def remote_stat(url: str, options: Mapping[str, Any] | None = None) -> RemoteStat:
    """The object's size, modification time and ETag (``FileNotFoundError`` if it is gone)."""
    fs, path = _split(url, options)
    fs.invalidate_cache(path)
    info = fs.info(path)
    if info.get("type") not in (None, "file"):
        raise IsADirectoryError(f"{url} is a prefix, not an object")
    when = info.get("LastModified") or info.get("mtime") or info.get("created")
    stamp = when.timestamp() if hasattr(when, "timestamp") else float(when or 0)
    return RemoteStat(int(info["size"]), int(round(stamp * 1e9)), str(info.get("ETag") or info.get("etag") or ""))


def remote_exists(url: str, options: Mapping[str, Any] | None = None) -> bool:
    """Whether the object is still there."""
    try:
        remote_stat(url, options)
    except FileNotFoundError:
        return False
    return True


def remote_sha256(url: str, options: Mapping[str, Any] | None = None) -> str:
    """The SHA-256 of the object's bytes, read in blocks."""
    fs, path = _split(url, options)
    h = hashlib.sha256()
    with fs.open(path, "rb", block_size=1 << 22) as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


@contextmanager
def fetched(url: str, options: Mapping[str, Any] | None = None) -> Iterator[tuple[Path, RemoteStat]]:
    """A private temporary copy of the object (same name) and the version it holds, removed afterwards;
    ``InputChangedError`` when the object was replaced while it was fetched."""
    from ldp.errors import InputChangedError

    fs, path = _split(url, options)
    before = remote_stat(url, options)
    with tempfile.TemporaryDirectory(prefix="ldp-fetch-") as tmp:
        local = Path(tmp) / (path.rsplit("/", 1)[-1] or "input")
        fs.get_file(path, os.fspath(local))
        if remote_stat(url, options) != before or local.stat().st_size != before.size:
            raise InputChangedError(f"{url} changed while it was read; run the job again")
        yield local, before
