"""The local-folder store (:mod:`ldp.storage`): objects are files under a root folder; and the package's one atomic
write (:func:`write_atomic`), which the store and every file the server and the ingest service replace go through.

``put`` writes a temporary file in the object's folder, fsyncs it, renames it over the name and fsyncs the folder,
so a crash leaves the old object or the new one, never a part. ``create`` links the fsynced temporary file to the
name (``link(2)`` fails with ``EEXIST`` when the name exists, atomically, even across processes), then fsyncs the
folder. Temporary files start with ``.`` and are never listed; one left by a crash is removed by
:meth:`LocalStore.sweep`. An object's version (:meth:`LocalStore.stat`) is its mtime, size and inode: a put makes a
new file whose mtime is later than the one it replaces.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from ldp.errors import StorageError
from ldp.storage.base import Capabilities, LeaseHolder, ObjectStat, Store, StoreSpec, check_key, check_read_key, reader

__all__ = ["LocalStore", "fsync_dir", "write_atomic"]


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


def write_atomic(path: str | os.PathLike[str], data: bytes | bytearray | memoryview, *, exclusive: bool = False
                 ) -> bool:
    """Write ``data`` to ``path`` atomically and durably; ``True`` once written.

    A temporary file beside it (``.<name>.<random>.tmp``, its folder made if missing) is written and fsynced, then
    renamed over ``path`` (``os.replace``) — or, with ``exclusive``, linked to ``path`` (``link(2)`` fails when the
    name exists: then ``False`` and nothing written) — and the folder is fsynced. A reader sees the old file or the
    new one, never a part; after a crash, the old one or the new one and at most a temporary file. The new file's
    mtime is later than that of the file it replaces (set one nanosecond past it if the clock has not moved), so
    (mtime, size, inode) tells every version apart. ``OSError`` as the system raises it; no temporary file stays."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if not exclusive:
                _later_than(fh.fileno(), tmp, path)
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                tmp.unlink(missing_ok=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return True


def _later_than(fd: int, tmp: Path, path: Path) -> None:
    """Set the mtime of ``tmp`` (open at ``fd``) past that of ``path`` if the clock has not moved since that was
    written (a coarse file clock: two writes in one tick)."""
    try:
        old = os.stat(path).st_mtime_ns
    except OSError:
        return
    now = os.fstat(fd)
    if now.st_mtime_ns <= old:
        os.utime(fd if os.utime in os.supports_fd else tmp, ns=(now.st_atime_ns, old + 1))


class LocalStore:
    """Objects as files under ``root`` (created if missing)."""

    capabilities = Capabilities(conditional_create=True, versions=True, etags=False, pinned_reads=False,
                                streaming_reads=True, distributed=True)
    """``link(2)`` is exclusive; a version is (mtime, size, inode); a read keeps the file it opened (a replacement
    is a new file: the read ends with the old content whole, it does not fail); another process opens the folder at
    the same path (a shared mount on another machine)."""
    fence: int | None = None
    lease: LeaseHolder | None = None

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.url = f"file://{self.root.resolve()}"

    @property
    def options(self) -> dict[str, Any]:
        """A folder takes no options."""
        return {}

    def spec(self) -> StoreSpec:
        return StoreSpec(self.url, {})

    def unwrap(self) -> Store:
        return self

    def retention_warning(self, prefix: str) -> str | None:
        """``None``: a file deleted is gone (a snapshot of the filesystem is the operator's own)."""
        return None

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def _read_path(self, key: str) -> Path:
        return self.root.joinpath(*check_read_key(key).split("/"))

    def _fail(self, what: str, key: str, exc: OSError) -> StorageError:
        return StorageError(exc.errno, f"{self.url}: cannot {what} {key}: {exc.strerror or exc}")

    def _missing(self, key: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"{self.url}: no object {key}")

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            write_atomic(path, bytes(data))
        except OSError as exc:
            raise self._fail("write", key, exc) from exc

    def create(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        try:
            return write_atomic(path, bytes(data), exclusive=True)
        except OSError as exc:
            raise self._fail("create", key, exc) from exc

    def get(self, key: str) -> bytes:
        path = self._read_path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise
        except IsADirectoryError:
            raise self._missing(key) from None
        except OSError as exc:
            raise self._fail("read", key, exc) from exc

    def stat(self, key: str) -> ObjectStat:
        path = self._read_path(key)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            raise self._missing(key) from None
        except OSError as exc:
            raise self._fail("stat", key, exc) from exc
        if not stat.S_ISREG(st.st_mode):
            raise self._missing(key)
        return ObjectStat(st.st_size, st.st_mtime_ns, f"{st.st_mtime_ns:x}-{st.st_size:x}-{st.st_ino:x}")

    def open(self, key: str) -> BinaryIO:
        path = self._read_path(key)
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a folder; a device or a pipe may block or never end
                raise self._missing(key)
            raw = open(path, "rb", buffering=0)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise self._missing(key) from None
        except OSError as exc:
            raise self._fail("read", key, exc) from exc
        return reader(raw, lambda exc: self._fail("read", key, exc) if isinstance(exc, OSError) else exc)

    def exists(self, key: str) -> bool:
        return self._read_path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        base = self._read_path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if not base.is_dir():
            return []
        out = []
        try:
            for folder, dirs, files in os.walk(base):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                rel = Path(folder).relative_to(self.root).as_posix()
                out += [n if rel == "." else f"{rel}/{n}" for n in files if not n.startswith(".")]
        except OSError as exc:
            raise self._fail("list", repr(prefix), exc) from exc
        return sorted(out)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise self._fail("delete", key, exc) from exc

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
