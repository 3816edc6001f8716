"""Which inputs an ``ldp aggregate`` job folds: files found under folders, known by content, and the plan of a run.

:func:`expand_inputs` lists the input files (a folder: its files of known extensions, recursively). An input is
identified by its content (SHA-256, :func:`sha256_file`), checked against the job's manifest by
:func:`plan_inputs`, which decides for each input: fold it (new, or changed in place with
``on_change="reprocess"``), skip it (already folded), record a rename (folded content at a new path, the old
path gone or changed) or skip it as a duplicate (the content of another input, folded or in this run, with
``duplicates="once"``). The job (:mod:`ldp.server.job`) then folds the :class:`InputTask` of the plan.

An input is a local file (a :class:`~pathlib.Path`, keyed by its real path) or an object-storage URL (a ``str``,
keyed by itself; :mod:`ldp.server.remote`): :func:`input_key`, :func:`input_stat`, :func:`input_sha256` and
:func:`input_exists` answer for both, with the job's ``storage_options``.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.errors import InputChangedError
from ldp.server.formats import EXTENSIONS, detect_format
from ldp.server.manifest import Manifest
from ldp.server.remote import is_remote, list_remote, remote_exists, remote_sha256, remote_stat

__all__ = ["ON_CHANGE", "DUPLICATES", "InputPlan", "InputRef", "InputTask", "expand_inputs", "input_exists",
           "input_key", "input_sha256", "input_stat", "plan_inputs", "sha256_file"]

InputRef = Path | str
"""An input: a local file, or an object-storage URL."""

ON_CHANGE = ("error", "reprocess")
"""What to do with an input whose path is in the manifest but whose content changed."""
DUPLICATES = ("once", "count")
"""What to do with a new input holding the content of another input."""


def expand_inputs(paths: Sequence[str | os.PathLike[str]], warnings: list[str] | None = None,
                  storage_options: Mapping[str, Any] | None = None) -> list[InputRef]:
    """Files as given, and the files of known extensions under each folder (recursively, sorted);
    the other files of a folder are named in ``warnings``. A URL (``s3://bucket/prefix``) is an object or
    the objects under a prefix, likewise (:func:`ldp.server.remote.list_remote`)."""
    out: list[InputRef] = []
    for given in paths:
        if is_remote(given):
            out += list_remote(str(given), storage_options, warnings)
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


def input_stat(f: InputRef, storage_options: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """An input's size and modification time (ns)."""
    if isinstance(f, str) and is_remote(f):
        return remote_stat(f, storage_options)[:2]
    st = os.stat(f)
    return st.st_size, st.st_mtime_ns


def input_sha256(f: InputRef, storage_options: Mapping[str, Any] | None = None) -> str:
    """The SHA-256 of an input's bytes."""
    return remote_sha256(f, storage_options) if isinstance(f, str) and is_remote(f) else sha256_file(f)


def _unchanged(f: InputRef, old: Mapping[str, Any], storage_options: Mapping[str, Any] | None) -> bool:
    """Whether a folded input still holds what was folded: same size and SHA-256 — or, for an object whose entry
    has its ETag, the same size, time and ETag (an object is replaced whole, never changed in place, and rereading
    every folded object to hash it would cost its whole size again at every run)."""
    if isinstance(f, str) and is_remote(f) and old.get("etag"):
        return tuple(remote_stat(f, storage_options)) == (old["size"], old["mtime_ns"], old["etag"])
    return input_stat(f, storage_options)[0] == old["size"] and input_sha256(f, storage_options) == old["sha256"]


def input_exists(key: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether the input of manifest key ``key`` is still there."""
    return remote_exists(key, storage_options) if is_remote(key) else os.path.exists(key)


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
                storage_options: Mapping[str, Any] | None = None) -> InputPlan:
    """What to fold, skip, rename in the manifest (same content at a new path, the old one gone or
    changed) or skip as a duplicate. Known paths are checked by SHA-256 (as ever); a new path is
    hashed here only when another input or folded input has its size (then the digest is reused)."""
    opts = storage_options
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
