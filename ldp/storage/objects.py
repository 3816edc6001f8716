"""The object-storage store (:mod:`ldp.storage`): S3-compatible storage through ``fsspec`` and ``s3fs`` (the ``s3``
extra), or any ``fsspec`` filesystem that supports exclusive creation.

``put`` is one ``PutObject`` (atomic: readers see the old object or the new one); ``create`` is ``PutObject`` with
``If-None-Match: *`` (S3's conditional write, generally available since August 2024; ``s3fs``'s
``pipe_file(mode="create")``), which fails with ``412 Precondition Failed`` when the key exists — that is
``False``, every other failure :class:`~ldp.storage.StorageError`. Credentials come from the environment or the
``fsspec`` options (``key``/``secret``), never from the ingest service's configuration file.

``stat`` is one ``HeadObject`` (size, ``LastModified``, ``ETag``); ``open`` streams the object in ranged ``GetObject``
requests of :data:`~ldp.storage.base.READ_BLOCK` bytes, each with ``If-Match`` the ETag seen when it was opened
(``s3fs``), so a reader never mixes two versions of an object. The filesystem is opened once, when the store is;
each S3 store has its own botocore session, but botocore's data files are parsed once per process.

Timeouts are short by default (connect 5 s, read 15 s, 2 attempts): a store that is down or slow makes the caller
answer 503 quickly instead of holding a device's upload.
"""

from __future__ import annotations

import dataclasses
import errno
from collections.abc import Mapping
from typing import Any, BinaryIO

from ldp.errors import StorageError
from ldp.storage.base import (
    READ_BLOCK,
    Capabilities,
    LeaseHolder,
    ObjectStat,
    Store,
    StoreSpec,
    check_key,
    check_read_key,
    reader,
)

__all__ = ["ObjectStore", "DEFAULT_TIMEOUTS", "S3_CAPABILITIES", "FSSPEC_CAPABILITIES"]

S3_CAPABILITIES = Capabilities(conditional_create=True, versions=True, etags=True, pinned_reads=True,
                               streaming_reads=True, distributed=True)
"""S3 (``s3fs``): ``If-None-Match: *`` creates, ETags, every block read ``If-Match`` the ETag seen when opened."""
FSSPEC_CAPABILITIES = Capabilities(conditional_create=True, versions=False, etags=False, pinned_reads=False,
                                   streaming_reads=True, distributed=True)
"""Any other ``fsspec`` filesystem: its ``mode="create"`` write is taken as exclusive (a lease checks it when first
acquired), a version is a time and a size (two writes of one size in one tick look alike), reads are not pinned;
``memory://`` lives in one process (not distributed)."""

DEFAULT_TIMEOUTS = {"connect_timeout": 5, "read_timeout": 15, "retries": {"max_attempts": 2, "mode": "standard"}}
"""botocore settings of an S3 store unless ``config_kwargs`` says otherwise."""


_LOADERS: dict[Any, Any] = {}
"""botocore's data loaders by data path, shared by the stores of this process."""


def _botocore_session(kwargs: Mapping[str, Any]) -> Any:
    """The session ``s3fs`` would create for a filesystem (``AioSession(**kwargs)``, its own credentials and
    configuration), but reading botocore's data files (the S3 model, endpoint rules: about 0.15 s of CPU to parse)
    through a loader shared by the stores of the process. The loader is a read-only cache of the files shipped with
    botocore, as a session shares it between its own clients. ``None`` when the session's configuration cannot be
    read (a missing profile): ``s3fs`` then makes its own, and the store's first call fails as it always did."""
    from aiobotocore.session import AioSession  # type: ignore[import-untyped]

    session = AioSession(**kwargs)
    try:
        path = session.get_config_variable("data_path")
    except Exception:
        return None
    key = tuple(path) if isinstance(path, list) else path
    if key not in _LOADERS:
        _LOADERS[key] = session.get_component("data_loader")
    session.register_component("data_loader", _LOADERS[key])
    return session


class ObjectStore:
    """The objects under ``url`` (``protocol://bucket/prefix``). ``options`` go to the ``fsspec`` filesystem; for
    S3, ``endpoint_url`` (an S3-compatible server: MinIO, Ceph, moto) is moved into ``client_kwargs`` and
    ``region_name`` likewise."""

    def __init__(self, url: str, options: Mapping[str, Any] | None = None) -> None:
        from ldp.extras import require_extra

        protocol, sep, rest = url.partition("://")
        root = rest.strip("/")
        if not sep or not protocol or not root:
            raise ValueError(f"an object store URL is protocol://bucket[/prefix], got {url!r}")
        for part in root.split("/")[1:]:
            check_key(part)
        if protocol in ("s3", "s3a"):
            require_extra("object storage", "s3", ("fsspec", "s3fs"))
        else:
            require_extra("object storage", "s3", ("fsspec",))
        import fsspec

        opts = dict(options or {})
        self.options = dict(opts)  # as given: another process (a dask worker) opens the same store with them
        if protocol in ("s3", "s3a"):
            client = dict(opts.pop("client_kwargs", {}) or {})
            for name in ("endpoint_url", "region_name"):
                if name in opts:
                    client[name] = opts.pop(name)
            opts["client_kwargs"] = client
            opts["config_kwargs"] = {**DEFAULT_TIMEOUTS, **dict(opts.get("config_kwargs") or {})}
            opts.setdefault("skip_instance_cache", True)
            opts.setdefault("use_listings_cache", False)  # other processes write: a cached listing goes stale
            protocol = "s3"
        self.fs = fsspec.filesystem(protocol, **opts)
        if protocol == "s3" and getattr(self.fs, "session", False) is None:
            self.fs.session = _botocore_session(getattr(self.fs, "kwargs", {}))
        self.root = root
        self.url = f"{protocol}://{root}"
        self.capabilities = (S3_CAPABILITIES if protocol == "s3" else FSSPEC_CAPABILITIES if protocol != "memory"
                             else dataclasses.replace(FSSPEC_CAPABILITIES, distributed=False))

    fence: int | None = None
    lease: LeaseHolder | None = None

    def spec(self) -> StoreSpec:
        return StoreSpec(self.url, dict(self.options))

    def unwrap(self) -> Store:
        return self

    def _path(self, key: str) -> str:
        return f"{self.root}/{check_key(key)}"

    def _read_path(self, key: str) -> str:
        return f"{self.root}/{check_read_key(key)}"

    def _fail(self, what: str, key: str, exc: BaseException) -> StorageError:
        code = getattr(exc, "errno", None) or errno.EIO
        return StorageError(code, f"{self.url}: cannot {what} {key}: {type(exc).__name__}: {exc}")

    def _missing(self, key: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"{self.url}: no object {key}")

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            self.fs.pipe_file(path, bytes(data))
        except Exception as exc:
            raise self._fail("write", key, exc) from exc

    def create(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        try:
            self.fs.pipe_file(path, bytes(data), mode="create")
        except FileExistsError:
            return False
        except Exception as exc:
            raise self._fail("create", key, exc) from exc
        return True

    def get(self, key: str) -> bytes:
        path = self._read_path(key)
        try:
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise self._fail("read", key, exc) from exc

    def stat(self, key: str) -> ObjectStat:
        path = self._read_path(key)
        try:
            self.fs.invalidate_cache(path)
            info = self.fs.info(path)
        except (FileNotFoundError, IsADirectoryError):
            raise self._missing(key) from None
        except Exception as exc:
            raise self._fail("stat", key, exc) from exc
        if info.get("type") not in (None, "file"):
            raise self._missing(key)  # a prefix, not an object
        when = info.get("LastModified") or info.get("mtime") or info.get("created")
        stamp = when.timestamp() if hasattr(when, "timestamp") else float(when or 0)
        size, mtime_ns = int(info["size"]), int(round(stamp * 1e9))
        etag = str(info.get("ETag") or info.get("etag") or "")
        return ObjectStat(size, mtime_ns, etag or f"{mtime_ns:x}-{size:x}", etag)

    def open(self, key: str) -> BinaryIO:
        path = self._read_path(key)
        try:
            raw = self.fs.open(path, "rb", block_size=READ_BLOCK)
        except (FileNotFoundError, IsADirectoryError):
            raise self._missing(key) from None
        except Exception as exc:
            raise self._fail("read", key, exc) from exc
        details = getattr(raw, "details", None)
        if isinstance(details, dict) and details.get("type") not in (None, "file"):
            raw.close()
            raise self._missing(key)  # a prefix, not an object
        return reader(raw, lambda exc: self._fail("read", key, exc))

    def exists(self, key: str) -> bool:
        path = self._read_path(key)
        try:
            return bool(self.fs.info(path).get("type") == "file")
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise self._fail("check", key, exc) from exc

    def list(self, prefix: str = "") -> list[str]:
        base = self.root if not prefix.strip("/") else self._read_path(prefix.strip("/"))
        parent, _, last = base.rpartition("/")
        try:  # ListObjectsV2 of "<key>/" alone: never a HEAD of "<key>" (which a role's policy may forbid)
            found = self.fs.find(parent, prefix=f"{last}/") if parent else self.fs.find(base)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._fail("list", prefix or "/", exc) from exc
        start = len(self.root) + 1  # a filesystem that ignores find's prefix (not S3) answers more: cut to base
        paths = (str(p).lstrip("/") for p in found)
        return sorted(p[start:] for p in paths if p.startswith(base + "/"))

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._fail("delete", key, exc) from exc

    def root_exists(self) -> bool:
        bucket = self.root.split("/", 1)[0]
        try:
            return bool(self.fs.exists(bucket))
        except Exception as exc:
            raise self._fail("check", bucket, exc) from exc

    def retention_warning(self, prefix: str) -> str | None:
        """Why objects deleted under ``prefix`` may outlive their deletion here, or ``None``: an S3 bucket with
        versioning on (or suspended) keeps a deleted object as a noncurrent version — the shuffler's consumed chunks,
        unshuffled, would stay readable — unless a lifecycle rule covering ``prefix`` expires noncurrent versions
        within a day (``NoncurrentVersionExpiration.NoncurrentDays <= 1``)."""
        if not self.url.startswith("s3://"):
            return None
        bucket, _, root = self.root.partition("/")
        key = f"{root}/{prefix}" if root else prefix
        try:
            status = self.fs.call_s3("get_bucket_versioning", Bucket=bucket).get("Status")
        except Exception as exc:  # no s3:GetBucketVersioning: say so, it is the operator's to check
            return (f"could not read the versioning of bucket {bucket} ({type(exc).__name__}): if it is on, chunks "
                    f"deleted under {key} stay as noncurrent versions; grant s3:GetBucketVersioning to check")
        if status not in ("Enabled", "Suspended"):
            return None
        try:
            rules = self.fs.call_s3("get_bucket_lifecycle_configuration", Bucket=bucket).get("Rules", [])
        except Exception:  # no configuration (or no access to it): no rule known
            rules = []
        for rule in rules:
            where = (rule.get("Filter") or {}).get("Prefix", rule.get("Prefix", ""))
            days = (rule.get("NoncurrentVersionExpiration") or {}).get("NoncurrentDays")
            if rule.get("Status") == "Enabled" and key.startswith(where) and days is not None and days <= 1:
                return None
        return (f"bucket {bucket} has versioning {status.lower()}: every chunk the shuffler deletes under {key} "
                "stays readable as a noncurrent version (unshuffled, with its batch ids); turn versioning off or add "
                "a lifecycle rule expiring noncurrent versions of that prefix within 1 day (docs/scale-out.md)")

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"
