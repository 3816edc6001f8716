"""The job's manifest: which inputs were folded, with their checksums, counts and partial aggregates.

``OUT/manifest.json`` holds the settings (spec fingerprints, ``by_window``) and one entry per input
(real path, size, SHA-256, counts, its partial aggregates file and rejects file). Each input
finished since is appended to ``OUT/journal.jsonl`` (one fsynced line, after its files are in
place; a renamed input's line names its old path in ``moved_from``), and the journal is folded
into the manifest at the end of a run, which then replaces it atomically. A crash leaves at worst
a torn last journal line: that input was not committed and is folded again on resume.
``OUT/.lock`` keeps a second job out of the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ldp.errors import JobError
from ldp.jobs.filelock import FileLock
from ldp.jobs.store import fsync_dir, write_atomic

__all__ = ["JOB_FORMAT", "Manifest", "JobError"]

JOB_FORMAT = "ldp-aggregate-job/1"


class Manifest:
    """The committed inputs of an output folder, keyed by real path; :meth:`commit` adds one durably."""

    def __init__(self, out_dir: str | os.PathLike[str], specs: list[str], by_window: bool) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock: FileLock | None = _lock(self.dir / ".lock")
        self.path, self.journal = self.dir / "manifest.json", self.dir / "journal.jsonl"
        self.settings = {"format": JOB_FORMAT, "specs": sorted(specs), "by_window": bool(by_window)}
        self.entries: dict[str, dict[str, Any]] = {}
        try:
            if self.path.exists():
                self._load()
            self._replay()
        except BaseException:  # a folder this job cannot use: let it go at once, not when collected
            self.close()
            raise

    def _load(self) -> None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            entries = doc["inputs"]
        except (ValueError, KeyError, TypeError) as exc:
            raise JobError(f"{self.path} is damaged ({exc}); move the folder away to start over") from None
        for key in ("format", "specs", "by_window"):
            if doc.get(key) != self.settings[key]:
                raise JobError(f"{self.dir} was made with {key}={doc.get(key)!r}, this job has {self.settings[key]!r}: "
                               "use another output folder (aggregates of different settings must not mix)")
        self.entries = {e["path"]: e for e in entries}

    def _replay(self) -> None:
        if not self.journal.exists():
            return
        lines = self.journal.read_bytes().split(b"\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                moved = entry.pop("moved_from", None)
                if moved is not None:
                    self.entries.pop(moved, None)
                self.entries[entry["path"]] = entry
            except (ValueError, KeyError, TypeError):
                if i < len(lines) - 1 and any(x.strip() for x in lines[i + 1:]):
                    raise JobError(f"{self.journal} is damaged at line {i + 1}; move the folder away") from None
                # a torn last line: that input was not committed, and will be folded again

    def commit(self, entry: dict[str, Any]) -> None:
        """Record one finished input durably (its part and rejects files must already be in place)."""
        if not self.path.exists():
            self.save()
        with open(self.journal, "ab") as fh:
            fh.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.entries[entry["path"]] = entry

    def move(self, old_path: str, new_path: str, source: str) -> dict[str, Any]:
        """Record durably that the input committed as ``old_path`` is now ``new_path`` (same
        content: a rename); its counts, part and rejects files stay. Returns the new entry."""
        entry = {**self.entries[old_path], "path": new_path, "source": source}
        with open(self.journal, "ab") as fh:
            fh.write(json.dumps({**entry, "moved_from": old_path}, separators=(",", ":")).encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        del self.entries[old_path]
        self.entries[new_path] = entry
        return entry

    def save(self) -> None:
        """Fold the journal into ``manifest.json`` (atomically), then remove the journal."""
        doc = {**self.settings, "inputs": [self.entries[k] for k in sorted(self.entries)]}
        write_atomic(self.path, (json.dumps(doc, indent=1) + "\n").encode())
        self.journal.unlink(missing_ok=True)
        fsync_dir(self.dir)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _lock(path: Path) -> FileLock:
    """An exclusive lock on ``path`` (:class:`~ldp.jobs.filelock.FileLock`), held until closed."""
    lock = FileLock(path)
    if not lock.acquire():
        raise JobError(f"another job is running on {path.parent} (it holds {path.name})")
    return lock
