"""Which inputs an ``ldp fold`` job folds: files found under folders, known by content, and the plan of a run.

:func:`expand_inputs` lists the input files (a folder: its files of known extensions, recursively). An input is
identified by its content (SHA-256, :func:`sha256_file`), checked against the job's manifest by
:func:`plan_inputs`, which decides for each input: fold it (new, or changed in place with
``on_change="reprocess"``), skip it (already folded), record a rename (folded content at a new path, the old
path gone or changed) or skip it as a duplicate (the content of another input, folded or in this run, with
``duplicates="once"``). The job (:mod:`ldp.jobs.job`) then folds the :class:`InputTask` of the plan.

An input is a local file (a :class:`~pathlib.Path`, keyed by its real path) or an object-storage URL (a ``str``,
``s3://bucket/key``, ``az://container/key`` or any ``fsspec`` protocol but ``file://``, keyed by itself:
:func:`is_remote`). Objects are read through the store interface (:class:`ldp.storage.Store`): :class:`InputStores`
opens one store per protocol and bucket (:func:`ldp.storage.open_store`: an
:class:`~ldp.storage.objects.ObjectStore`, an :class:`~ldp.storage.azure.AzureStore` for ``az://``) with the job's
``storage_options`` (for S3, ``endpoint_url`` and ``region_name`` go to the client; for Azure ``account_name`` or
``account_url``; credentials come from the environment), once for the job,
and lists (:meth:`Store.list`), identifies (:meth:`Store.stat`: size, time, ETag) and streams
(:meth:`Store.open`) the objects through it. :func:`input_key`, :func:`input_stat`, :func:`input_sha256` and
:func:`input_exists` answer for both kinds, given the job's :class:`InputStores`.

Folding fetches an object to a private temporary file first (:meth:`InputStores.fetched`, hashing it on the way)
and folds that copy, so every reader, fast path and format of the local engine runs unchanged on the same bytes:
the aggregates are byte for byte those of the same files folded from a folder. The object's version is read
before and after the fetch (and S3 serves every block ``If-Match`` the ETag seen when it was opened); an object
replaced meanwhile is :class:`~ldp.errors.InputChangedError`, as a local file changed while read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.errors import InputChangedError, StorageError
from ldp.jobs.formats import EXTENSIONS, detect_format
from ldp.jobs.manifest import Manifest
from ldp.storage import READ_BLOCK, ObjectStat, Store, open_store
from ldp.storage.roles import Role, RoleStore

__all__ = ["ON_CHANGE", "DUPLICATES", "InputPlan", "InputRef", "InputStores", "InputTask", "Stores", "expand_inputs",
           "input_exists", "input_key", "input_sha256", "input_stat", "is_remote", "list_remote", "plan_inputs",
           "sha256_file", "shared_stores"]

InputRef = Path | str
"""An input: a local file, or an object-storage URL."""

ON_CHANGE = ("error", "reprocess")
"""What to do with an input whose path is in the manifest but whose content changed."""
DUPLICATES = ("once", "count")
"""What to do with a new input holding the content of another input."""


def is_remote(path: object) -> bool:
    """Whether an input names an object-storage URL (``protocol://…``, not ``file://``)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


class InputStores:
    """The object stores a job's inputs are in: one :class:`~ldp.storage.Store` per protocol and bucket, opened
    with ``options`` (the job's ``storage_options``) the first time an input there is named, then kept — its
    filesystem opened once for the job, whatever the number of objects. Every read of an object goes through it.
    ``scopes`` (``{root URL: role}``): inputs under a root are read through that root's store as the role may
    (an ingest service's fold reads a shared store as an analyst: :func:`ldp.storage.roles.analyst_role`)."""

    def __init__(self, options: Mapping[str, Any] | None = None, scopes: Mapping[str, Role] | None = None) -> None:
        self.options = dict(options or {})
        self.scopes = {root.rstrip("/"): role for root, role in (scopes or {}).items()}
        self._stores: dict[str, Store] = {}  # by protocol://bucket, or a scope's root

    def _root(self, url: str) -> tuple[str, str]:
        """The store root ``url`` is read from — a scope's root (``s3://bucket/prod``) when ``url`` is under one,
        else its ``protocol://bucket`` — and the key under it."""
        for root in self.scopes:
            if url.rstrip("/") == root or url.startswith(root + "/"):
                return root, url[len(root):].strip("/")
        return _split(url)

    def locate(self, url: str) -> tuple[Store, str]:
        """The store holding ``url`` (``protocol://bucket[/key]``) and the key in it (``""``: the whole bucket).
        Under a scope's root, the store is that root's, as its role may use it (a
        :class:`~ldp.storage.roles.RoleStore`: a read outside the role's prefixes is refused before it is sent)."""
        root, key = self._root(url)
        store = self._stores.get(root)
        if store is None:
            store = open_store(root, self.options or None)
            if root in self.scopes:
                store = RoleStore(store, self.scopes[root])
            self._stores[root] = store
        return store, key

    def list(self, url: str, warnings: list[str] | None = None) -> list[str]:
        """The input URLs at ``url``: the object itself, or the objects of known extensions under it as a prefix
        (recursively, sorted; hidden names skipped; the others named in ``warnings``). ``FileNotFoundError`` when
        there is nothing at all there."""
        store, key = self.locate(url)
        base = self._root(url)[0]
        if key:
            try:
                store.stat(key)
                return [f"{base}/{key}"]
            except (FileNotFoundError, StorageError):
                pass  # a prefix, nothing, or a HEAD this reader may not send (S3 answers 403 outside GetObject's)
        found = store.list(f"{key}/" if key else "")
        if not found:
            raise FileNotFoundError(f"no such input object or prefix: {url}")
        files = [k for k in found if not k.rsplit("/", 1)[-1].startswith(".")]
        out = [f"{base}/{k}" for k in files if Path(k).suffix.lower() in EXTENSIONS]
        other = [k.rsplit("/", 1)[-1] for k in files if Path(k).suffix.lower() not in EXTENSIONS]
        if other and warnings is not None:
            warnings.append(f"{len(other)} object(s) under {url} not read (unknown extension): "
                            + ", ".join(other[:5]) + (" ..." if len(other) > 5 else ""))
        return out

    def stat(self, url: str) -> ObjectStat:
        """The object's size, modification time and version (``FileNotFoundError`` naming it if it is gone)."""
        store, key = self.locate(url)
        return store.stat(_object_key(url, key))

    def exists(self, url: str) -> bool:
        """Whether the object is still there."""
        store, key = self.locate(url)
        return bool(key) and store.exists(key)

    def sha256(self, url: str) -> str:
        """The SHA-256 of the object's bytes, streamed."""
        store, key = self.locate(url)
        h = hashlib.sha256()
        with store.open(_object_key(url, key)) as fh:
            while block := fh.read(READ_BLOCK):
                h.update(block)
        return h.hexdigest()

    @contextmanager
    def fetched(self, url: str) -> Iterator[tuple[Path, ObjectStat, str]]:
        """A private temporary copy of the object (same name), the version it holds and its SHA-256, streamed
        from the store and removed afterwards; ``InputChangedError`` when the object was replaced while it was
        read."""
        store, key = self.locate(url)
        key = _object_key(url, key)
        before = store.stat(key)
        with tempfile.TemporaryDirectory(prefix="ldp-fetch-") as tmp:
            local, h = Path(tmp) / key.rsplit("/", 1)[-1], hashlib.sha256()
            try:
                with store.open(key) as src, open(local, "wb") as out:
                    while block := src.read(READ_BLOCK):
                        h.update(block)
                        out.write(block)
            except (StorageError, FileNotFoundError):
                if _replaced(store, key, before):  # S3 refuses a block of another version: say what happened
                    raise InputChangedError(f"{url} changed while it was read; run the job again") from None
                raise
            if _replaced(store, key, before) or local.stat().st_size != before.size:
                raise InputChangedError(f"{url} changed while it was read; run the job again")
            yield local, before, h.hexdigest()


def _split(url: str) -> tuple[str, str]:
    """``protocol://bucket`` and the key under it of an object-storage URL."""
    protocol, sep, rest = url.partition("://")
    path = rest.strip("/")
    if not sep or not protocol or not path:
        raise ValueError(f"an object-storage input is protocol://bucket/key, got {url!r}")
    bucket, _, key = path.partition("/")
    return f"{protocol}://{bucket}", key


def _object_key(url: str, key: str) -> str:
    if not key:
        raise FileNotFoundError(f"{url} is a bucket, not an object")
    return key


def _replaced(store: Store, key: str, before: ObjectStat) -> bool:
    """Whether the object at ``key`` is no longer the version ``before`` (or is gone)."""
    try:
        return store.stat(key) != before
    except FileNotFoundError:
        return True


Stores = InputStores | Mapping[str, Any] | None
"""Where a function reads objects: the job's :class:`InputStores`, or ``storage_options`` to open stores with."""


def _stores(stores: Stores) -> InputStores:
    return stores if isinstance(stores, InputStores) else InputStores(stores)


@functools.lru_cache(maxsize=8)
def _shared(options_json: str) -> InputStores:
    return InputStores(json.loads(options_json))


def shared_stores(options: Mapping[str, Any] | None) -> InputStores:
    """The :class:`InputStores` of ``options`` kept for this process: a Dask worker folding many objects opens
    each store once, not once per object."""
    return _shared(json.dumps(dict(options or {}), sort_keys=True, default=str))


def list_remote(url: str, stores: Stores = None, warnings: list[str] | None = None) -> list[str]:
    """The input URLs at ``url`` (:meth:`InputStores.list`), with the job's stores or ``storage_options``."""
    return _stores(stores).list(url, warnings)


def expand_inputs(paths: Sequence[str | os.PathLike[str]], warnings: list[str] | None = None,
                  stores: Stores = None) -> list[InputRef]:
    """Files as given, and the files of known extensions under each folder (recursively, sorted);
    the other files of a folder are named in ``warnings``. A URL (``s3://bucket/prefix``) is an object or
    the objects under a prefix, likewise (:meth:`InputStores.list`)."""
    out: list[InputRef] = []
    sources = _stores(stores)
    for given in paths:
        if is_remote(given):
            out += sources.list(str(given), warnings)
            continue
        p = Path(str(given).removeprefix("file://")) if isinstance(given, str) else Path(given)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
            out += [f for f in files if f.suffix.lower() in EXTENSIONS]
            other = [f.name for f in files if f.suffix.lower() not in EXTENSIONS]
            if other and warnings is not None:
                warnings.append(f"{len(other)} file(s) in {os.fspath(p)} not read (unknown extension): "
                                + ", ".join(other[:5]) + (" ..." if len(other) > 5 else ""))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such input file or folder: {os.fspath(p)}")
    return out


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of the file's bytes, as hex: an input's identity."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def input_key(f: InputRef) -> str:
    """An input's key in the manifest: a file's real path, an object's URL."""
    return f if isinstance(f, str) and is_remote(f) else os.path.realpath(f)


def input_stat(f: InputRef, stores: Stores = None) -> tuple[int, int]:
    """An input's size and modification time (ns)."""
    if isinstance(f, str) and is_remote(f):
        return _stores(stores).stat(f)[:2]
    st = os.stat(f)
    return st.st_size, st.st_mtime_ns


def input_sha256(f: InputRef, stores: Stores = None) -> str:
    """The SHA-256 of an input's bytes."""
    return _stores(stores).sha256(f) if isinstance(f, str) and is_remote(f) else sha256_file(f)


def _unchanged(f: InputRef, old: Mapping[str, Any], stores: InputStores) -> bool:
    """Whether a folded input still holds what was folded: same size and SHA-256 — or, for an object whose entry
    has its ETag, the same size, time and ETag (an object is replaced whole, never changed in place, and rereading
    every folded object to hash it would cost its whole size again at every run)."""
    if isinstance(f, str) and is_remote(f) and old.get("etag"):
        st = stores.stat(f)
        return (st.size, st.mtime_ns, st.etag) == (old["size"], old["mtime_ns"], old["etag"])
    return input_stat(f, stores)[0] == old["size"] and input_sha256(f, stores) == old["sha256"]


def input_exists(key: str, stores: Stores = None) -> bool:
    """Whether the input of manifest key ``key`` is still there."""
    return _stores(stores).exists(key) if is_remote(key) else os.path.exists(key)


@dataclass(frozen=True)
class InputTask:
    """One input to fold: its ``path``, its name as given (``source``), its format, its old manifest entry (when
    its content changed in place) and what was hashed while planning."""

    path: InputRef
    source: str
    fmt: str
    old: dict[str, Any] | None
    known: tuple[int, int, str] | None = None  # (size, mtime_ns, SHA-256) when hashed while planning


@dataclass
class InputPlan:
    """A run's plan: the inputs to fold, those skipped, the renames and the duplicates noted."""

    tasks: list[InputTask]
    skipped: list[str]
    renamed: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)



def plan_inputs(files: Sequence[InputRef], manifest: Manifest, fmt: str | None, on_change: str, duplicates: str,
                stores: Stores = None) -> InputPlan:
    """What to fold, skip, rename in the manifest (same content at a new path, the old one gone or
    changed) or skip as a duplicate. Known paths are checked by SHA-256 (as ever); a new path is
    hashed here only when another input or folded input has its size (then the digest is reused).
    Objects are read through ``stores`` (the job's :class:`InputStores`, or ``storage_options``)."""
    opts = _stores(stores)
    inputs: dict[str, InputRef] = {}
    for f in files:
        inputs.setdefault(input_key(f), f)
    changed, new, plan = set(), [], InputPlan([], [])
    for real, f in inputs.items():
        old = manifest.entries.get(real)
        if old is None:
            new.append(real)
        elif _unchanged(f, old, opts):
            plan.skipped.append(os.fspath(f))
        else:
            changed.add(real)
    stats = {r: input_stat(inputs[r], opts) for r in new}
    sizes = Counter([e["size"] for e in manifest.entries.values()] + [st[0] for st in stats.values()])
    known = {r: (*st, input_sha256(inputs[r], opts)) for r, st in stats.items() if sizes[st[0]] > 1}
    folded: dict[str, list[str]] = {}
    for path, e in sorted(manifest.entries.items()):
        folded.setdefault(e["sha256"], []).append(path)
    moves: list[tuple[str, str]] = []
    planned: dict[str, str] = {}
    for real in new:
        source = os.fspath(inputs[real])
        digest = known[real][2] if real in known else None
        if digest is not None:  # hashed: its size is shared, so it may be a rename or a duplicate
            gone = [p for p in folded.get(digest, ()) if p in changed or p not in inputs and not input_exists(p, opts)]
            if gone:  # renamed: its old path is gone, or holds other content now
                moves.append((gone[0], real))
                folded[digest].remove(gone[0])
                plan.renamed.append({"from": manifest.entries[gone[0]]["source"], "to": source})
                plan.skipped.append(source)
                planned.setdefault(digest, source)
                continue
            same = folded.get(digest) or ([] if digest not in planned else [planned[digest]])
            if same and duplicates == "once":
                other = manifest.entries[same[0]]["source"] if same[0] in manifest.entries else same[0]
                plan.duplicates.append({"path": source, "same_as": other, "sha256": digest})
                continue
            planned.setdefault(digest, source)
        plan.tasks.append(InputTask(inputs[real], source, fmt or detect_format(inputs[real]), None, known.get(real)))
    moved_away = {old for old, _ in moves}
    for real in sorted(changed - moved_away, key=list(inputs).index):
        if on_change == "error":
            raise InputChangedError(f"{os.fspath(inputs[real])} changed since it was aggregated (SHA-256 differs from "
                                    "the manifest's); pass --on-change reprocess to fold it again in place of its old "
                                    "content, or give it another name if it holds new reports")
    for old_path, real in moves:
        manifest.move(old_path, real, os.fspath(inputs[real]))
    for real in sorted(changed, key=list(inputs).index):  # moved away: new content at an old path
        f = inputs[real]
        plan.tasks.append(InputTask(f, os.fspath(f), fmt or detect_format(f), manifest.entries.get(real)))
    return plan
