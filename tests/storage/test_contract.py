"""The store contract (:mod:`ldp.storage.checks`, issue 70, item 5): the folder store and S3 (a real S3-compatible
server, moto, with its service cut by a relay) pass it, each in one line; and the suite catches broken stores — a
create that is not exclusive, an unsorted or prefix-blind listing, a version that does not change, a read that mixes
two versions, a key let through, a bug's exception where the service is down, a role that lets everything pass —
failing each time naming the check."""

from __future__ import annotations

import contextlib
import io
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from support.s3_server import Outage

from ldp.errors import StorageError
from ldp.storage import ObjectStat, Store, StoreWrapper, open_store
from ldp.storage.checks import CHECKS, check_store, store_checks
from ldp.storage.local import LocalStore
from ldp.storage.roles import RoleStore

FAST = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 2, "retries": {"max_attempts": 1}}}


def test_a_folder_passes_the_store_contract(tmp_path: Path) -> None:
    assert check_store(lambda: open_store(tmp_path / uuid.uuid4().hex)) == [c.name for c in store_checks(outage=False)]


def test_s3_passes_the_store_contract_with_its_service_down_too(s3: Any, relay: Outage) -> None:
    check_store(lambda: open_store(f"{s3.bucket('ldp-contract')}/t{uuid.uuid4().hex}", {**s3.options(), **FAST,
                                                                                       "endpoint_url": relay.endpoint}),
                outage=relay.cut)


@pytest.fixture
def relay(s3: Any) -> Iterator[Outage]:
    relay = Outage(s3.port)
    yield relay
    relay.down()


def test_the_checks_are_listed_for_parametrization() -> None:
    names = [str(c) for c in store_checks()]
    assert names == [c.name for c in CHECKS] and len(set(names)) == len(names) and "outage" in names
    assert "outage" not in [c.name for c in store_checks(outage=False)]
    with pytest.raises(ValueError, match="outage"):
        CHECKS[names.index("outage")](lambda: open_store(Path("/nonexistent")))


@pytest.mark.parametrize("name", ["checks", "check_objects", "check_layers"])
def test_ldp_storage_checks_is_library_code(name: str) -> None:
    """No pytest at module level: the contract runs wherever ``ldp.storage`` does."""
    import ast
    import importlib

    module = importlib.import_module(f"ldp.storage.{name}")
    tree = ast.parse(Path(module.__file__ or "").read_text())
    top = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    top |= {n.module.split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
    assert "pytest" not in top and top <= {"__future__", "contextlib", "threading", "traceback", "collections",
                                           "dataclasses", "typing", "ldp"}


# -- broken stores: each fails the suite, naming the check ----------------------------------------------------------
class NotExclusive(LocalStore):
    """create() overwrites (an S3-compatible server that ignores If-None-Match)."""

    def create(self, key: str, data: bytes) -> bool:
        self.put(key, data)
        return True


class CheckThenPut(LocalStore):
    """create() looks, then writes: right one at a time, wrong under a race."""

    def create(self, key: str, data: bytes) -> bool:
        if self.exists(key):
            return False
        time.sleep(0.01)
        self.put(key, data)
        return True


class Unsorted(LocalStore):
    def list(self, prefix: str = "") -> list[str]:
        return list(reversed(super().list(prefix)))


class PrefixBlind(LocalStore):
    """list('l/a/') also lists l/ab: a string prefix, not whole parts."""

    def list(self, prefix: str = "") -> list[str]:
        parent = prefix.rstrip("/").rpartition("/")[0]
        return [k for k in super().list(parent) if k.startswith(prefix.rstrip("/"))]


class SameVersion(LocalStore):
    def stat(self, key: str) -> ObjectStat:
        info = super().stat(key)
        return info._replace(version="v1")


class Mixing(LocalStore):
    """open() reads the object anew at each block: a replacement mid-read mixes two versions."""

    def open(self, key: str) -> BinaryIO:
        self.stat(key)
        outer = self

        class Fresh(io.RawIOBase):
            pos = 0

            def readable(self) -> bool:
                return True

            def readinto(self, buffer: Any) -> int:
                data = outer.get(key)[self.pos:self.pos + len(buffer)]
                buffer[:len(data)] = data
                self.pos += len(data)
                return len(data)

        return io.BufferedReader(Fresh(), buffer_size=1 << 20)


class PinnedLiar(LocalStore):
    """Declares pinned reads, but a folder's read ends with the old content."""

    capabilities = LocalStore.capabilities.__class__(**{**LocalStore.capabilities.__dict__, "pinned_reads": True})


class LaxKeys(LocalStore):
    def _read_path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))


class Swallowing(LocalStore):
    """get() with the service down answers 'not there' (a FileNotFoundError): the caller would take it for an
    absent object."""

    down = False

    def get(self, key: str) -> bytes:
        if self.down:
            raise FileNotFoundError(key)
        return super().get(key)

    def _guard(self) -> None:
        if self.down:
            raise StorageError(5, "down")

    def put(self, key: str, data: bytes) -> None:
        self._guard()
        super().put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._guard()
        return super().create(key, data)

    def stat(self, key: str) -> ObjectStat:
        self._guard()
        return super().stat(key)

    def open(self, key: str) -> BinaryIO:
        self._guard()
        return super().open(key)

    def exists(self, key: str) -> bool:
        self._guard()
        return super().exists(key)

    def list(self, prefix: str = "") -> list[str]:
        self._guard()
        return super().list(prefix)

    def delete(self, key: str) -> None:
        self._guard()
        super().delete(key)


class OpenRoles(StoreWrapper):
    """A 'role' wrapper that lets everything pass: the roles check runs RoleStore, so this one breaks RoleStore."""


BROKEN: dict[str, tuple[type[LocalStore], list[str]]] = {
    "not exclusive": (NotExclusive, ["create_exclusive", "create_race", "lease"]),  # a lease rests on it
    "check then put": (CheckThenPut, ["create_race", "lease"]),
    "unsorted": (Unsorted, ["list", "keys"]), "prefix blind": (PrefixBlind, ["list", "keys"]),  # keys lists them
    "same version": (SameVersion, ["versions"]), "mixing reads": (Mixing, ["pinned_read"]),
    "pinned liar": (PinnedLiar, ["pinned_read"]), "lax keys": (LaxKeys, ["keys"])}
"""Each broken store, and the checks it fails: its own, and those resting on what it broke."""


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_suite_catches_a_broken_store_naming_the_check(tmp_path: Path, name: str) -> None:
    kind, checks = BROKEN[name]
    make: Callable[[], Store] = lambda: kind(tmp_path / uuid.uuid4().hex)  # noqa: E731
    with pytest.raises(AssertionError, match=rf"{len(checks)} of \d+ store checks failed") as err:
        check_store(make)
    failed = str(err.value).split("(", 1)[1].split(")", 1)[0].split(", ")
    assert failed == checks, str(err.value)
    assert f"store check {checks[0]} failed on file://" in str(err.value)
    # the same kind of folder, unbroken, passes: test_a_folder_passes_the_store_contract (once, not per break)


def test_the_suite_catches_a_wrong_error_with_the_service_down(tmp_path: Path) -> None:
    stores: list[Swallowing] = []

    def make() -> Store:
        stores.append(Swallowing(tmp_path / uuid.uuid4().hex))
        return stores[-1]

    @contextlib.contextmanager
    def outage() -> Iterator[None]:
        stores[-1].down = True
        try:
            yield
        finally:
            stores[-1].down = False

    with pytest.raises(AssertionError, match=r"\(outage\):\n.*get\(\) with the service down raised FileNotFoundError"):
        check_store(make, outage=outage)


def test_the_suite_catches_a_role_store_that_lets_everything_pass(tmp_path: Path, monkeypatch: Any) -> None:
    for name in ("get", "put", "create", "list", "delete", "stat", "open"):
        monkeypatch.setattr(RoleStore, name, getattr(OpenRoles, name))
    with pytest.raises(AssertionError, match=r"(?s)1 of \d+ store checks failed \(roles\).*replica get of its chunk"):
        check_store(lambda: LocalStore(tmp_path / uuid.uuid4().hex))


def test_a_bug_in_a_store_is_a_failure_naming_the_check(tmp_path: Path) -> None:
    class Buggy(LocalStore):
        def stat(self, key: str) -> ObjectStat:
            raise TypeError("a bug")

    with pytest.raises(AssertionError, match=r"store check stat failed on file://.*TypeError: a bug"):
        check_store(lambda: Buggy(tmp_path / uuid.uuid4().hex))


def test_a_store_that_is_not_empty_is_refused(tmp_path: Path) -> None:
    LocalStore(tmp_path).put("left/over", b"")
    with pytest.raises(AssertionError, match="must return an empty store"):
        check_store(lambda: LocalStore(tmp_path))


def test_checks_run_one_by_one(tmp_path: Path) -> None:
    for check in store_checks(outage=False):
        check(lambda: LocalStore(tmp_path / uuid.uuid4().hex))
    lock = threading.Lock()
    assert lock.acquire(blocking=False)  # nothing left holding a lock of the test's
