"""What the fold reads with (issue 60, item 3): :meth:`Store.stat` and :meth:`Store.open` on a folder, on a real
S3-compatible server (moto) and on a fake ``fsspec`` filesystem; a version that changes whenever an object is
replaced by other content (a property, on a folder and on S3); streaming reads a block at a time; names written
by others readable, never escaping the root; a role's store refusing stat and open outside its prefixes; and the
package's one atomic write (:func:`ldp.storage.local.write_atomic`), its order of fsyncs and its mtimes."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support.fake_fs import CountingFS, fakefs, put  # noqa: F401

from ldp.errors import StorageError
from ldp.storage import READ_BLOCK, ObjectStat, Store, check_key, check_read_key, open_store
from ldp.storage.local import LocalStore, write_atomic
from ldp.storage.roles import RoleStore, analyst_role


def test_stat_and_open(store: Store) -> None:
    assert isinstance(store, Store)
    store.put("a/b.bin", b"\x00\xff" * 5000)
    info = store.stat("a/b.bin")
    assert isinstance(info, ObjectStat) and info.size == 10000 and info.mtime_ns > 0 and info.version
    assert (info.etag == info.version) if store.capabilities.etags else info.etag == ""  # declared, not guessed
    with store.open("a/b.bin") as fh:
        assert fh.read(3) == b"\x00\xff\x00" and fh.read() == b"\xff" + b"\x00\xff" * 4998
    assert fh.closed
    assert store.stat("a/b.bin") == info  # reading changes nothing
    for call in (store.stat, store.open):
        with pytest.raises(FileNotFoundError, match="no object a/none"):
            call("a/none")
        with pytest.raises(FileNotFoundError, match="no object a$"):
            call("a")  # a prefix is not an object
        with pytest.raises(ValueError, match="key"):
            call("a/../a/b.bin")


def test_names_written_by_others_are_read_but_never_escape(store: Store) -> None:
    """An analyst's bucket holds whatever names its writers chose: the read side takes them, the write side
    keeps to :func:`check_key`."""
    name = "up loads/2024-01-01 12:00/é report.jsonl"
    if isinstance(store, LocalStore):
        path = store.root / name
        path.parent.mkdir(parents=True)
        path.write_bytes(b"{}\n")
    elif store.url.startswith("az://"):
        store.container.upload_blob(f"{store.root}/{name}", b"{}\n")  # type: ignore[attr-defined]
    else:
        store.fs.pipe_file(f"{store.root}/{name}", b"{}\n")  # type: ignore[attr-defined]
    assert store.list("up loads/") == [name] and store.exists(name) and store.get(name) == b"{}\n"
    assert store.stat(name).size == 3
    with store.open(name) as fh:
        assert fh.read() == b"{}\n"
    with pytest.raises(ValueError, match="key"):
        store.put(name, b"x")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/.-_ é\\\x00:"), max_size=30))
def test_a_key_to_read_stays_under_the_root(key: str) -> None:
    """Any string is refused or names one place under the root: no empty, ``.`` or ``..`` part; every key the
    package writes is one to read."""
    try:
        check_read_key(key)
    except ValueError:
        with pytest.raises(ValueError):
            check_key(key)
        return
    root = Path("/nonexistent/root")
    path = LocalStore(root)._read_path(key)
    assert root in path.parents and os.path.normpath(path) == str(path)


def check_versions(store: Store, contents: list[bytes], etags: bool) -> None:
    """Put each content in turn at one key: stat and open answer the latest, and its version differs from that
    of every earlier content that is not equal to it (with an ETag: equal content, equal tag)."""
    key = f"v/{uuid.uuid4().hex}"
    seen: list[tuple[bytes, ObjectStat]] = []
    for data in contents:
        store.put(key, data)
        now = store.stat(key)
        assert now.size == len(data)
        with store.open(key) as fh:
            assert fh.read() == data
        for old, then in seen:
            if old != data:
                assert now.version != then.version, (old, data, then, now)
            elif etags:
                assert now.version == then.version and now.etag == then.etag
        seen.append((data, now))


@pytest.fixture(scope="module")
def folder_versions_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One folder store for every example (each writes a key of its own: :func:`check_versions`)."""
    return LocalStore(tmp_path_factory.mktemp("versions"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=24), min_size=2, max_size=10))
def test_a_folder_object_has_a_new_version_whenever_it_is_replaced(folder_versions_store: Store,
                                                                     contents: list[bytes]) -> None:
    """Versions, not durability (the order of fsyncs is
    :func:`test_the_atomic_write_fsyncs_the_file_then_renames_then_fsyncs_the_folder`'s):
    the fsyncs of each put are skipped here, where they were most of the test's time on a busy disk."""
    with mock.patch.object(os, "fsync", lambda fd: None):
        check_versions(folder_versions_store, contents, etags=False)


@pytest.fixture(scope="module")
def versions_store(s3: Any) -> Store:
    """One store on the bucket for every example (a bucket call and a new S3 client per example were most of the
    test's time): each example writes a key of its own (:func:`check_versions`)."""
    return open_store(f"{s3.bucket('ldp-versions')}/p", s3.options())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([b"", b"a", b"b", b"ab", b"ba", b"{}\n"]), min_size=2, max_size=6))
def test_an_s3_object_has_a_new_etag_whenever_its_content_changes(versions_store: Store, contents: list[bytes]
                                                                    ) -> None:
    check_versions(versions_store, contents, etags=True)


def test_open_streams_a_block_at_a_time(fakefs: type[CountingFS]) -> None:  # noqa: F811
    data = os.urandom(2 * READ_BLOCK + 12345)
    put("ldpfake://bkt/big.bin", data)
    store = open_store("ldpfake://bkt")
    assert store.stat("big.bin").size == len(data)
    got = bytearray()
    with store.open("big.bin") as fh:
        while block := fh.read(1 << 16):
            got += block
    assert got == data and max(fakefs.reads) <= READ_BLOCK and len(fakefs.reads) >= 3  # never the whole object
    assert fakefs.opened == 1  # the filesystem is opened with the store, once


def test_a_failure_while_reading_is_a_storage_error(fakefs: type[CountingFS], monkeypatch: Any) -> None:  # noqa: F811
    put("ldpfake://bkt/a.bin", b"x" * 100)
    store = open_store("ldpfake://bkt")
    with store.open("a.bin") as fh:
        monkeypatch.setattr(fh.raw._raw, "read", _broken)  # type: ignore[attr-defined]  # the connection drops
        with pytest.raises(StorageError, match="cannot read a.bin: ConnectionError"):
            fh.read()


def _broken(*args: Any) -> bytes:
    raise ConnectionError("reset by peer")


def test_a_role_store_refuses_stat_and_open_outside_its_prefixes(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path)
    inner.put("apps/demo/incoming/r1/a.chunk", b"unshuffled")
    inner.put("apps/demo/segments/closed/s.jsonl", b"{}\n")
    analyst = RoleStore(inner, analyst_role("demo"))
    for call in (analyst.stat, analyst.open):
        with pytest.raises(PermissionError, match="analyst of demo does not read 'apps/demo/incoming/r1/a.chunk'"):
            call("apps/demo/incoming/r1/a.chunk")
    assert analyst.stat("apps/demo/segments/closed/s.jsonl").size == 3
    with analyst.open("apps/demo/segments/closed/s.jsonl") as fh:
        assert fh.read() == b"{}\n"
    assert isinstance(analyst, Store)


# -- the one atomic write ------------------------------------------------------------------------------------------


def test_the_server_and_the_store_share_one_atomic_write(tmp_path: Path, monkeypatch: Any) -> None:
    import ldp.jobs.store
    import ldp.storage.local

    assert ldp.jobs.store.write_atomic is ldp.storage.local.write_atomic
    assert ldp.jobs.store.fsync_dir is ldp.storage.local.fsync_dir
    calls: list[str] = []
    real = ldp.storage.local.write_atomic
    monkeypatch.setattr(ldp.storage.local, "write_atomic", lambda *a, **k: calls.append("w") or real(*a, **k))
    store = LocalStore(tmp_path)
    store.put("a", b"1")
    assert store.create("b", b"2") and not store.create("b", b"3") and calls == ["w"] * 3


@pytest.mark.parametrize("exclusive", [False, True])
def test_the_atomic_write_fsyncs_the_file_then_renames_then_fsyncs_the_folder(tmp_path: Path, monkeypatch: Any,
                                                                            exclusive: bool) -> None:
    events: list[str] = []
    fsync, replace, link = os.fsync, os.replace, os.link

    def spy_fsync(fd: int) -> None:
        events.append("fsync folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("rename") or replace(a, b))
    monkeypatch.setattr(os, "link", lambda a, b: events.append("link") or link(a, b))
    target = tmp_path / "sub" / "x.json"
    assert write_atomic(target, b"data", exclusive=exclusive)
    assert events == ["fsync file", "link" if exclusive else "rename", "fsync folder"]
    assert target.read_bytes() == b"data" and [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: Any) -> None:
    target = tmp_path / "x.json"
    write_atomic(target, b"old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, b"new")
    with pytest.raises(StorageError, match="cannot write x.json: No space"):
        LocalStore(tmp_path).put("x.json", b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_replacement_is_always_newer_than_what_it_replaces(tmp_path: Path) -> None:
    """A coarse file clock gives two writes in one tick the same mtime: the replacement is set one ns past."""
    target = tmp_path / "x"
    write_atomic(target, b"one")
    future = os.stat(target).st_mtime_ns + 10**12
    os.utime(target, ns=(future, future))  # as if the clock had not moved since (or had gone back)
    write_atomic(target, b"two")
    assert os.stat(target).st_mtime_ns == future + 1
