"""A fake ``fsspec`` filesystem, ``ldpfake://``, for the tests of the store interface (:mod:`ldp.storage`) and of
the fold's reads through it (issue 60, item 3): objects in memory (no ETag, like a plain filesystem), and it
counts what happens to it.

* :attr:`CountingFS.opened` — how many filesystems were made (``fsspec.filesystem``: never cached, each one counts);
* :attr:`CountingFS.reads` — the size asked by every ``read`` of a file it opened;
* :func:`through_the_store` — while on, every call into the filesystem must come from inside a method of
  :class:`~ldp.storage.objects.ObjectStore` (``stat``, ``open``, ``list``, ``exists``, ``get``, ...), and bytes of
  an object are only opened by ``open`` (``get`` for whole objects): a read that goes around the store fails.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

PROTOCOL = "ldpfake"

_OP: contextvars.ContextVar[str | None] = contextvars.ContextVar("store_op", default=None)
_GUARD = contextvars.ContextVar("guard", default=False)
STORE_METHODS = ("put", "create", "get", "stat", "open", "exists", "list", "delete", "root_exists")


class _Counted:
    """A file the filesystem opened: its reads recorded."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def read(self, n: int = -1) -> bytes:
        CountingFS.reads.append(n)
        return bytes(self.raw.read(n))

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CountingFS(MemoryFileSystem):
    """An in-memory filesystem of its own (not ``memory://``'s), counting the filesystems made and the reads."""

    protocol = (PROTOCOL,)
    cachable = False  # every fsspec.filesystem(...) makes one: the count is the number of opens
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    opened: ClassVar[int] = 0
    options: ClassVar[list[dict[str, Any]]] = []
    reads: ClassVar[list[int]] = []

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        type(self).opened += 1
        type(self).options.append(dict(options))

    @staticmethod
    def _check(*allowed: str) -> None:
        if _GUARD.get():
            op = _OP.get()
            assert op is not None, "the filesystem was used outside the store interface"
            assert not allowed or op in allowed, f"object bytes opened by Store.{op}, not through Store.open"

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self._check()
        return dict(super().info(path, **kwargs))

    def find(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return super().find(path, *args, **kwargs)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        self._check()
        return super().ls(path, detail, **kwargs)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode:
            self._check("open")
            return _Counted(super()._open(path, mode, *args, **kwargs))
        self._check()
        return super()._open(path, mode, *args, **kwargs)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        self._check("get")
        return bytes(super().cat_file(path, start, end, **kwargs))

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        self._check()
        super().pipe_file(path, value, mode=mode, **kwargs)

    @classmethod
    def reset(cls) -> None:
        """Empty and uncounted."""
        cls.store.clear()
        cls.pseudo_dirs[:] = [""]
        cls.opened = 0
        cls.options.clear()
        cls.reads.clear()


@contextlib.contextmanager
def through_the_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within: every use of the fake filesystem must come from a method of ``ObjectStore`` (each method marks
    itself while it runs)."""
    from ldp.storage.objects import ObjectStore

    for name in STORE_METHODS:
        real = getattr(ObjectStore, name)

        def marked(self: Any, *args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            token = _OP.set(_name)
            try:
                return _real(self, *args, **kwargs)
            finally:
                _OP.reset(token)

        monkeypatch.setattr(ObjectStore, name, marked)
    token = _GUARD.set(True)
    try:
        yield
    finally:
        _GUARD.reset(token)


@pytest.fixture
def fakefs() -> Iterator[type[CountingFS]]:
    """``ldpfake://`` registered, empty and uncounted."""
    fsspec.register_implementation(PROTOCOL, CountingFS, clobber=True)
    CountingFS.reset()
    yield CountingFS
    CountingFS.reset()


def put(url: str, data: bytes) -> None:
    """Write an object of the fake filesystem directly (``ldpfake://bucket/key``), as another writer would."""
    CountingFS.store["/" + url.removeprefix(f"{PROTOCOL}://").strip("/")] = _memory_file(url, data)


def _memory_file(url: str, data: bytes) -> Any:
    from fsspec.implementations.memory import MemoryFile

    return MemoryFile(None, url, data)
