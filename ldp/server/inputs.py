"""Which inputs an ``ldp aggregate`` job folds: files found under folders, known by content, and the plan of a run.

:func:`expand_inputs` lists the input files (a folder: its files of known extensions, recursively). An input is
identified by its content (SHA-256, :func:`sha256_file`), checked against the job's manifest by
:func:`plan_inputs`, which decides for each input: fold it (new, or changed in place with
``on_change="reprocess"``), skip it (already folded), record a rename (folded content at a new path, the old
path gone or changed) or skip it as a duplicate (the content of another input, folded or in this run, with
``duplicates="once"``). The job (:mod:`ldp.server.job`) then folds the :class:`InputTask` of the plan.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp.errors import InputChangedError
from ldp.server.formats import EXTENSIONS, detect_format
from ldp.server.manifest import Manifest

__all__ = ["ON_CHANGE", "DUPLICATES", "InputPlan", "InputTask", "expand_inputs", "plan_inputs", "sha256_file"]

ON_CHANGE = ("error", "reprocess")
"""What to do with an input whose path is in the manifest but whose content changed."""
DUPLICATES = ("once", "count")
"""What to do with a new input holding the content of another input."""


def expand_inputs(paths: Sequence[str | os.PathLike[str]], warnings: list[str] | None = None) -> list[Path]:
    """Files as given, and the files of known extensions under each folder (recursively, sorted);
    the other files of a folder are named in ``warnings``."""
    out: list[Path] = []
    for p in map(Path, paths):
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


@dataclass(frozen=True)
class InputTask:
    """One input to fold: its ``path``, its name as given (``source``), its format, its old manifest entry (when
    its content changed in place) and what was hashed while planning."""

    path: Path
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



def plan_inputs(files: list[Path], manifest: Manifest, fmt: str | None, on_change: str, duplicates: str
                ) -> InputPlan:
    """What to fold, skip, rename in the manifest (same content at a new path, the old one gone or
    changed) or skip as a duplicate. Known paths are checked by SHA-256 (as ever); a new path is
    hashed here only when another input or folded input has its size (then the digest is reused)."""
    inputs: dict[str, Path] = {}
    for f in files:
        inputs.setdefault(os.path.realpath(f), f)
    changed, new, plan = set(), [], InputPlan([], [])
    for real, f in inputs.items():
        old = manifest.entries.get(real)
        if old is None:
            new.append(real)
        elif f.stat().st_size == old["size"] and sha256_file(f) == old["sha256"]:
            plan.skipped.append(os.fspath(f))
        else:
            changed.add(real)
    stats = {r: inputs[r].stat() for r in new}
    sizes = Counter([e["size"] for e in manifest.entries.values()] + [st.st_size for st in stats.values()])
    known = {r: (st.st_size, st.st_mtime_ns, sha256_file(inputs[r]))
             for r, st in stats.items() if sizes[st.st_size] > 1}
    folded: dict[str, list[str]] = {}
    for path, e in sorted(manifest.entries.items()):
        folded.setdefault(e["sha256"], []).append(path)
    moves: list[tuple[str, str]] = []
    planned: dict[str, str] = {}
    for real in new:
        source = os.fspath(inputs[real])
        digest = known[real][2] if real in known else None
        if digest is not None:  # hashed: its size is shared, so it may be a rename or a duplicate
            gone = [p for p in folded.get(digest, ()) if p in changed or p not in inputs and not os.path.exists(p)]
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
