"""The store contract (:mod:`ldp.storage`), the same tests on a local folder and on a real S3-compatible server
(moto in server mode): whole-object writes, the conditional write under contention, listing, deletion, key
validation (a property test), a store that is down answering :class:`StorageError` quickly, and S3 stores sharing
botocore's parsed data files but not their sessions."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ldp.storage import StorageError, Store, check_key, join, open_store
from ldp.storage.local import LocalStore


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        return open_store(tmp_path / "data")
    s3 = request.getfixturevalue("s3")
    bucket = s3.bucket("ldp-stores")
    return open_store(f"{bucket}/t{time.monotonic_ns()}", s3.options())


def test_put_get_list_delete(store: Store) -> None:
    assert isinstance(store, Store) and store.list() == [] and not store.exists("a/b.json")
    store.put("a/b.json", b"one")
    store.put("a/c/d.bin", b"\x00\xff" * 1000)
    store.put("e", b"")
    assert store.get("a/b.json") == b"one" and store.get("a/c/d.bin") == b"\x00\xff" * 1000 and store.get("e") == b""
    assert store.list() == ["a/b.json", "a/c/d.bin", "e"] and store.list("a/") == ["a/b.json", "a/c/d.bin"]
    assert store.list("a/c") == ["a/c/d.bin"] and store.list("nothing/") == []
    store.put("a/b.json", b"two")  # put replaces
    assert store.get("a/b.json") == b"two"
    store.delete("a/b.json")
    store.delete("a/b.json")  # nothing there: no error
    assert not store.exists("a/b.json") and store.list("a") == ["a/c/d.bin"]
    with pytest.raises(FileNotFoundError):
        store.get("a/b.json")


def test_create_is_exclusive(store: Store) -> None:
    assert store.create("ids/x", b"first") is True
    assert store.create("ids/x", b"second") is False
    assert store.get("ids/x") == b"first"


def test_create_under_contention_has_one_winner(store: Store) -> None:
    """Eight threads create the same key at once: exactly one wins, and the object is the winner's."""
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def race(i: int) -> None:
        barrier.wait()
        if store.create("race/key", str(i).encode()):
            wins.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and store.get("race/key") == str(wins[0]).encode()


@pytest.mark.parametrize("key", ["", "/a", "a/", "a//b", "../a", "a/../b", ".hidden", "a/.b", "a b", "a\\b",
                                 "é", "/".join(["a"] * 17), "a" * 201])
def test_bad_keys_are_refused(store: Store, key: str) -> None:
    with pytest.raises(ValueError, match="key"):
        store.put(key, b"x")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/.-_=+Z9 é\\\x00"), max_size=30))
def test_a_valid_key_stays_under_the_root(key: str) -> None:
    """Any string is refused or maps to a path under the root (no escape, no hidden name)."""
    root = Path("/nonexistent/root")
    try:
        check_key(key)
    except ValueError:
        return
    path = LocalStore(root)._path(key)
    assert root in path.parents and not any(p.startswith(".") for p in key.split("/"))
    assert join(key) == key


def test_local_put_leaves_no_temporary_file_and_sweep_removes_crash_leftovers(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("a/b", b"x")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]
    (tmp_path / "a" / ".b.123.tmp").write_bytes(b"partial")  # what a crash mid-put leaves
    assert store.list() == ["a/b"] and store.sweep() == 1 and not (tmp_path / "a" / ".b.123.tmp").exists()


def test_local_errors_are_storage_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    store = LocalStore(tmp_path / "file")
    with pytest.raises(StorageError, match="cannot write"):
        store.put("a", b"x")


def test_a_store_that_is_down_fails_fast_with_a_storage_error(tmp_path: Path) -> None:
    """Nothing listens on the endpoint: every operation raises StorageError within the timeouts."""
    pytest.importorskip("s3fs")
    from support.s3_server import free_port

    store = open_store("s3://ldp-down/x", {"endpoint_url": f"http://127.0.0.1:{free_port()}", "key": "k",
                                          "secret": "s", "config_kwargs": {"connect_timeout": 1, "read_timeout": 1,
                                                                           "retries": {"max_attempts": 1}}})
    t0 = time.monotonic()
    for op in (lambda: store.put("a", b"x"), lambda: store.create("a", b"x"), lambda: store.get("a"),
               lambda: store.list(), lambda: store.exists("a")):
        with pytest.raises(StorageError):
            op()
    assert time.monotonic() - t0 < 30


def test_open_store_picks_the_implementation(tmp_path: Path) -> None:
    assert isinstance(open_store(tmp_path), LocalStore) and isinstance(open_store(str(tmp_path)), LocalStore)
    assert isinstance(open_store(f"file://{tmp_path}"), LocalStore)
    with pytest.raises(ValueError, match="no options"):
        open_store(tmp_path, {"endpoint_url": "x"})
    with pytest.raises(ValueError, match="protocol://bucket"):
        open_store("s3://")


def test_s3_stores_share_botocore_data_but_not_sessions(s3) -> None:
    """Each S3 store has its own botocore session (its credentials and configuration), but botocore's data files
    (the S3 model) are parsed once per process; a session given in the options is used as it is."""
    from aiobotocore.session import AioSession

    a, b = (open_store(f"{s3.bucket('ldp-stores')}/t{time.monotonic_ns()}", s3.options()) for _ in range(2))
    assert a.fs.session is not b.fs.session
    assert a.fs.session.get_component("data_loader") is b.fs.session.get_component("data_loader")
    a.put("x", b"1")
    assert b.list() == [] and a.get("x") == b"1" and a.stat("x").size == 1
    own = AioSession()
    c = open_store(f"{s3.bucket('ldp-stores')}/t{time.monotonic_ns()}", {**s3.options(), "session": own})
    assert c.fs.session is own
    c.put("y", b"22")
    assert c.get("y") == b"22"
    missing = open_store("s3://b/p", {**s3.options(), "profile": "ldp-no-such-profile"})  # no session to share
    with pytest.raises(StorageError, match="ProfileNotFound"):
        missing.put("z", b"")
