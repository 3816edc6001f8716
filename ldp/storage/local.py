"""The local-folder store (:mod:`ldp.storage`): objects are files under a root folder.

``put`` writes a temporary file in the object's folder, fsyncs it, renames it over the name and fsyncs the folder,
so a crash leaves the old object or the new one, never a part. ``create`` links the fsynced temporary file to the
name (``link(2)`` fails with ``EEXIST`` when the name exists, atomically, even across processes), then fsyncs the
folder. Temporary files start with ``.`` and are never listed; one left by a crash is removed by
:meth:`LocalStore.sweep`.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from ldp.errors import StorageError
from ldp.storage.base import check_key

__all__ = ["LocalStore", "fsync_dir"]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename in ``path`` durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class LocalStore:
    """Objects as files under ``root`` (created if missing)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.url = f"file://{self.root.resolve()}"

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def _temp(self, path: Path, data: bytes) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return Path(tmp)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            tmp = self._temp(path, bytes(data))
            try:
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            fsync_dir(path.parent)
        except OSError as exc:
            raise StorageError(exc.errno, f"{self.url}: cannot write {key}: {exc.strerror or exc}") from exc

    def create(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        try:
            tmp = self._temp(path, bytes(data))
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                tmp.unlink(missing_ok=True)
            fsync_dir(path.parent)
            return True
        except OSError as exc:
            raise StorageError(exc.errno, f"{self.url}: cannot create {key}: {exc.strerror or exc}") from exc

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise
        except IsADirectoryError:
            raise FileNotFoundError(errno.ENOENT, f"{self.url}: no object {key}") from None
        except OSError as exc:
            raise StorageError(exc.errno, f"{self.url}: cannot read {key}: {exc.strerror or exc}") from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if not base.is_dir():
            return []
        out = []
        try:
            for folder, dirs, files in os.walk(base):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                rel = Path(folder).relative_to(self.root).as_posix()
                out += [n if rel == "." else f"{rel}/{n}" for n in files if not n.startswith(".")]
        except OSError as exc:
            raise StorageError(exc.errno, f"{self.url}: cannot list {prefix!r}: {exc.strerror or exc}") from exc
        return sorted(out)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(exc.errno, f"{self.url}: cannot delete {key}: {exc.strerror or exc}") from exc

    def root_exists(self) -> bool:
        return self.root.is_dir()

    def sweep(self) -> int:
        """Remove the temporary files a crash left (names starting with ``.`` and ending ``.tmp``); their count."""
        n = 0
        for tmp in self.root.rglob(".*.tmp") if self.root.is_dir() else ():
            tmp.unlink(missing_ok=True)
            n += 1
        return n

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"
