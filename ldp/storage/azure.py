"""The Azure Blob Storage store (:mod:`ldp.storage`): ``az://container/prefix`` (also ``abfs://`` and ``abfss://``,
and ``az://container@account.blob.core.windows.net/prefix``), through the Azure SDK (``azure-storage-blob``, the
``azure`` extra).

**Why the SDK, not adlfs.** ``adlfs`` would make Azure one more ``fsspec`` protocol of
:class:`~ldp.storage.objects.ObjectStore`, but the three guarantees the collection rests on would then be what
``adlfs`` happens to send: its exclusive write goes through ``fsspec``'s ``mode="create"`` (whose mapping onto
``If-None-Match: *`` is adlfs's choice, release by release), its file object reads ranges without ``If-Match`` (an
object replaced while read would mix two versions), and its errors come out as ``OSError``s of its choosing. Each
is one call here, written down: ``create`` is ``Put Blob`` with ``If-None-Match: *`` (``upload_blob(overwrite=False)``:
``409 BlobAlreadyExists`` / ``412`` is ``False``), every block of :meth:`AzureStore.open` is a ranged ``Get Blob``
with ``If-Match`` the ETag seen when it was opened, and every failure is mapped from the SDK's exception types. The
SDK is synchronous (no event loop thread per process, as ``fsspec``'s async filesystems run) and brings fewer
dependencies (``azure-core``, ``isodate``; ``adlfs`` adds ``azure-datalake-store``, ``azure-identity``, ``aiohttp``).

**Operations.** ``put`` is one ``Put Blob`` (atomic: readers see the old blob or the new one; blobs past 64 MiB are
staged blocks committed at once); ``get`` one ``Get Blob``; ``stat`` ``Get Blob Properties`` (size,
``Last-Modified``, ``ETag``: a new one at every write, so ``version`` is the ETag); ``list`` ``List Blobs`` under the
prefix (lexicographic, as S3); ``delete`` ``Delete Blob`` (its snapshots too). A blob that is a hierarchical
namespace's folder (``hdi_isfolder``) is not an object.

**Credentials** (:func:`credentials`), first found: the options' ``connection_string``; ``account_key`` or
``sas_token`` (with ``account_name`` or ``account_url``); then the environment's ``AZURE_STORAGE_CONNECTION_STRING``,
``AZURE_STORAGE_KEY``, ``AZURE_STORAGE_SAS_TOKEN`` (``AZURE_STORAGE_ACCOUNT`` the account's name); then
``azure-identity``'s ``DefaultAzureCredential`` when it is installed (managed identity, workload identity, the
``az`` login); ``anonymous=true`` reads a public container. The ingest service's configuration file names the account
only (``account_name``, ``account_url``): secrets come from the environment.

**Timeouts** are short by default (connect 5 s, read 15 s, 2 attempts, 1 s apart): a store that is down or slow
makes the caller answer 503 quickly. ``connect_timeout``, ``read_timeout`` and ``max_attempts`` change them.
"""

from __future__ import annotations

import errno
import os
import re
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

__all__ = ["AZURE_CAPABILITIES", "AZURE_SCHEMES", "OPTIONS", "AzureStore", "credentials", "parse_url"]

AZURE_SCHEMES = ("az", "abfs", "abfss")
"""URL schemes of Azure Blob Storage (``abfs``/``abfss``: the Data Lake names of the same blobs)."""
OPTIONS = {"account_name": "the storage account (https://<name>.blob.core.windows.net)",
           "account_url": "the blob endpoint, e.g. http://127.0.0.1:10000/devstoreaccount1 (Azurite)",
           "connection_string": "a connection string (secret)", "account_key": "the account's key (secret)",
           "sas_token": "a shared access signature (secret)", "anonymous": "true: a public container, no credential",
           "connect_timeout": "seconds (5)", "read_timeout": "seconds (15)", "max_attempts": "tries per request (2)"}
"""The options of an ``az://`` store, and what each is."""
SECRETS = ("connection_string", "account_key", "sas_token")
"""Options that are secrets: from the environment or the command line, never a configuration file."""
AZURE_CAPABILITIES = Capabilities(conditional_create=True, versions=True, etags=True, pinned_reads=True,
                                  streaming_reads=True, distributed=True)
_CONTAINER = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}\Z")


def parse_url(url: str) -> tuple[str, str, str | None]:
    """``(container, prefix, account)`` of an Azure URL (``az://container/prefix``, ``abfs[s]://…``,
    ``az://container@account.blob.core.windows.net/prefix``); ``ValueError`` naming what is wrong."""
    scheme, sep, rest = url.partition("://")
    if scheme not in AZURE_SCHEMES or not sep:
        raise ValueError(f"an Azure store URL is az://container[/prefix], got {url!r}")
    head, _, prefix = rest.strip("/").partition("/")
    container, at, host = head.partition("@")
    account = host.split(".", 1)[0] if at else None
    if not _CONTAINER.match(container) or (at and not account):
        raise ValueError(f"an Azure store URL is az://container[/prefix] (a container is 3 to 63 of a-z, 0-9 and "
                         f"single '-'), got {url!r}")
    for part in prefix.split("/") if prefix else ():
        check_key(part)
    return container, prefix, account


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true", "yes")


def credentials(options: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """How to reach the account: ``{"connection_string": ...}`` or ``{"account_url": ..., "credential": ...}`` from
    ``options`` then ``environ`` (module docstring); ``ValueError`` when nothing names the account."""
    opts = {k: v for k, v in options.items() if v not in (None, "")}
    if "connection_string" in opts:
        return {"connection_string": str(opts["connection_string"])}
    name = opts.get("account_name") or environ.get("AZURE_STORAGE_ACCOUNT")
    url = opts.get("account_url")
    if url is None and name is None and environ.get("AZURE_STORAGE_CONNECTION_STRING"):
        return {"connection_string": environ["AZURE_STORAGE_CONNECTION_STRING"]}
    if url is None:
        if name is None:
            raise ValueError("an az:// store needs its account: account_name, account_url or a connection_string "
                             "(options), or AZURE_STORAGE_ACCOUNT / AZURE_STORAGE_CONNECTION_STRING (environment)")
        url = f"https://{name}.blob.core.windows.net"
    name = name or str(url).rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]  # Azurite: .../devstoreaccount1
    credential: Any
    if _flag(opts.get("anonymous", False)):
        credential = None
    elif "account_key" in opts or ("sas_token" not in opts and environ.get("AZURE_STORAGE_KEY")):
        credential = {"account_name": name, "account_key": opts.get("account_key") or environ["AZURE_STORAGE_KEY"]}
    elif "sas_token" in opts or environ.get("AZURE_STORAGE_SAS_TOKEN"):
        credential = str(opts.get("sas_token") or environ["AZURE_STORAGE_SAS_TOKEN"]).lstrip("?")
    else:
        try:
            from azure.identity import DefaultAzureCredential  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError:
            raise ValueError(f"no credential for the Azure account at {url}: give account_key or sas_token (options, "
                             "or AZURE_STORAGE_KEY / AZURE_STORAGE_SAS_TOKEN), a connection string, anonymous=true "
                             "for a public container, or install azure-identity for a managed identity") from None
        credential = DefaultAzureCredential()
    return {"account_url": str(url), "credential": credential}


class AzureStore:
    """The blobs under ``url`` (``az://container[/prefix]``) with ``options`` (:data:`OPTIONS`; module docstring)."""

    capabilities = AZURE_CAPABILITIES
    fence: int | None = None
    lease: LeaseHolder | None = None

    def __init__(self, url: str, options: Mapping[str, Any] | None = None) -> None:
        from ldp.extras import require_extra

        container, prefix, account = parse_url(url)
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            hint = "; an S3 endpoint_url is account_url here" if "endpoint_url" in unknown else ""
            raise ValueError(f"unknown option(s) {', '.join(unknown)} of an az:// store (known: "
                             f"{', '.join(OPTIONS)}){hint}")
        if account and "account_name" not in opts and "account_url" not in opts:
            opts["account_name"] = account
        require_extra("Azure Blob Storage", "azure", ("azure.storage.blob",))
        from azure.storage.blob import BlobServiceClient, LinearRetry

        self.options = dict(opts)  # as given (and the URL's account): another process opens the same store with them
        attempts = int(opts.get("max_attempts", 2))
        if attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {attempts}")
        settings: dict[str, Any] = {"connection_timeout": float(opts.get("connect_timeout", 5)),
                                    "read_timeout": float(opts.get("read_timeout", 15)),
                                    "retry_policy": LinearRetry(backoff=1, retry_total=attempts - 1,
                                                                random_jitter_range=0)}
        how = credentials(opts)
        if "connection_string" in how:
            service = BlobServiceClient.from_connection_string(how["connection_string"], **settings)
        else:
            service = BlobServiceClient(how["account_url"], credential=how["credential"], **settings)
        self.service = service
        self.container = service.get_container_client(container)
        self.root = prefix
        self.url = f"az://{container}" + (f"/{prefix}" if prefix else "")

    # -- the declared interface ------------------------------------------------------------------------------
    def spec(self) -> StoreSpec:
        return StoreSpec(self.url, dict(self.options))

    def unwrap(self) -> Store:
        return self

    def _name(self, key: str) -> str:
        return f"{self.root}/{key}" if self.root else key

    def _fail(self, what: str, key: str, exc: BaseException) -> StorageError:
        status, code = getattr(exc, "status_code", None), getattr(exc, "error_code", None)
        detail = str(getattr(code, "value", code) or type(exc).__name__) + (f" (HTTP {status})" if status else "")
        message = (str(getattr(exc, "message", None) or exc).splitlines() or [""])[0]
        return StorageError(errno.EIO, f"{self.url}: cannot {what} {key}: {detail}: {message}")

    def _missing(self, key: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"{self.url}: no object {key}")

    # -- objects ---------------------------------------------------------------------------------------------
    def put(self, key: str, data: bytes) -> None:
        blob = self.container.get_blob_client(self._name(check_key(key)))
        try:
            blob.upload_blob(bytes(data), overwrite=True)
        except Exception as exc:
            raise self._fail("write", key, exc) from exc

    def create(self, key: str, data: bytes) -> bool:
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

        blob = self.container.get_blob_client(self._name(check_key(key)))
        try:
            blob.upload_blob(bytes(data), overwrite=False)  # If-None-Match: *
        except (ResourceExistsError, ResourceModifiedError):
            return False
        except Exception as exc:
            raise self._fail("create", key, exc) from exc
        return True

    def get(self, key: str) -> bytes:
        from azure.core.exceptions import ResourceNotFoundError

        blob = self.container.get_blob_client(self._name(check_read_key(key)))
        try:
            return bytes(blob.download_blob(max_concurrency=1).readall())
        except ResourceNotFoundError:
            raise self._missing(key) from None
        except Exception as exc:
            raise self._fail("read", key, exc) from exc

    def _properties(self, key: str, what: str) -> Any:
        """The blob's properties; ``FileNotFoundError`` if none (or a hierarchical namespace's folder)."""
        from azure.core.exceptions import ResourceNotFoundError

        blob = self.container.get_blob_client(self._name(check_read_key(key)))
        try:
            props = blob.get_blob_properties()
        except ResourceNotFoundError:
            raise self._missing(key) from None
        except Exception as exc:
            raise self._fail(what, key, exc) from exc
        if str((props.metadata or {}).get("hdi_isfolder", "")).lower() == "true":
            raise self._missing(key)
        return props

    def stat(self, key: str) -> ObjectStat:
        props = self._properties(key, "stat")
        mtime_ns = int(round(props.last_modified.timestamp() * 1e9)) if props.last_modified else 0
        etag = str(props.etag or "")
        return ObjectStat(int(props.size), mtime_ns, etag or f"{mtime_ns:x}-{int(props.size):x}", etag)

    def open(self, key: str) -> BinaryIO:
        props = self._properties(key, "read")
        blob = self.container.get_blob_client(self._name(key))
        return reader(_Blocks(blob, int(props.size), props.etag), lambda exc: self._fail_read(key, exc))

    def _fail_read(self, key: str, exc: BaseException) -> BaseException:
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        if isinstance(exc, (ResourceModifiedError, ResourceNotFoundError)):
            return StorageError(errno.ESTALE, f"{self.url}: cannot read {key}: it was replaced or removed while it "
                                              "was read (If-Match its ETag failed)")
        return self._fail("read", key, exc)

    def exists(self, key: str) -> bool:
        try:
            self._properties(key, "check")
        except FileNotFoundError:
            return False
        return True

    def list(self, prefix: str = "") -> list[str]:
        part = prefix.strip("/")
        if part:
            check_read_key(part)
        start = self._name(f"{part}/") if part else (f"{self.root}/" if self.root else None)
        cut = len(self.root) + 1 if self.root else 0
        try:
            found = [b.name[cut:] for b in self.container.list_blobs(name_starts_with=start, include=["metadata"])
                     if str((b.metadata or {}).get("hdi_isfolder", "")).lower() != "true"]
        except Exception as exc:
            from azure.core.exceptions import ResourceNotFoundError

            if isinstance(exc, ResourceNotFoundError) and getattr(exc, "error_code", "") == "ContainerNotFound":
                return []
            raise self._fail("list", prefix or "/", exc) from exc
        return sorted(found)

    def delete(self, key: str) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        blob = self.container.get_blob_client(self._name(check_key(key)))
        try:
            blob.delete_blob(delete_snapshots="include")
        except ResourceNotFoundError:
            return
        except Exception as exc:
            raise self._fail("delete", key, exc) from exc

    def root_exists(self) -> bool:
        try:
            return bool(self.container.exists())
        except Exception as exc:
            raise self._fail("check", self.container.container_name, exc) from exc

    def retention_warning(self, prefix: str) -> str | None:
        """Why blobs deleted under ``prefix`` may outlive their deletion, or ``None``: read from what the container
        holds there (a listing with deleted blobs and versions: the settings themselves are the account's, which a
        container's SAS cannot read): a soft-deleted blob (soft delete on: kept its retention days), or an earlier
        version (versioning on: kept until a lifecycle rule deletes it)."""
        part = prefix.strip("/")
        start = self._name(f"{part}/") if part else (f"{self.root}/" if self.root else None)
        soft = versions = 0
        try:
            for i, b in enumerate(self.container.list_blobs(name_starts_with=start, include=["deleted", "versions"])):
                soft += bool(getattr(b, "deleted", False))
                versions += getattr(b, "is_current_version", None) is False
                if i >= 5000:
                    break
        except Exception as exc:
            return (f"could not list the deleted blobs and versions under {start or '/'} of {self.url} "
                    f"({type(exc).__name__}): if blob soft delete or versioning is on, chunks deleted there stay "
                    "readable; check the storage account's data protection settings (docs/scale-out.md)")
        if not soft and not versions:
            return None
        kept = " and ".join(x for x, n in (("soft delete", soft), ("versioning", versions)) if n)
        return (f"{self.url}: {kept} keeps blobs the shuffler deleted under {start or '/'} ({soft} soft-deleted, "
                f"{versions} earlier versions): unshuffled chunks with their batch ids stay readable; turn blob soft "
                "delete and versioning off for this account, or keep the collection in an account without them "
                "(docs/scale-out.md)")

    def __repr__(self) -> str:
        return f"AzureStore({self.url!r})"


class _Blocks:
    """A blob read :data:`~ldp.storage.base.READ_BLOCK` bytes per request, each ``If-Match`` the ETag it was opened
    at: a blob replaced meanwhile fails the next block (``ResourceModifiedError``) instead of mixing two versions."""

    def __init__(self, blob: Any, size: int, etag: str) -> None:
        self.blob, self.size, self.etag = blob, size, etag
        self.pos = 0
        self.buf = memoryview(b"")

    def read(self, n: int = -1) -> bytes:
        if not self.buf:
            if self.pos >= self.size:
                return b""
            from azure.core import MatchConditions

            length = min(READ_BLOCK, self.size - self.pos)
            data = self.blob.download_blob(offset=self.pos, length=length, etag=self.etag,
                                           match_condition=MatchConditions.IfNotModified, max_concurrency=1).readall()
            if not data:
                raise StorageError(errno.EIO, f"an empty answer at byte {self.pos} of {self.size}")
            self.pos += len(data)
            self.buf = memoryview(bytes(data))
        n = len(self.buf) if n is None or n < 0 else n
        out, self.buf = bytes(self.buf[:n]), self.buf[n:]
        return out

    def close(self) -> None:
        self.buf = memoryview(b"")
