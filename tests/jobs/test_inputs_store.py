"""The fold reads object-storage inputs through the store interface (issue 60, item 3), on a fake ``fsspec``
filesystem (``ldpfake://``: in memory, no ETag, counting what is done to it):

* every use of the filesystem during ``ldp fold`` comes from a method of the store
  (:class:`~ldp.storage.objects.ObjectStore`), and the objects' bytes only through :meth:`Store.open`;
* each store's filesystem is opened once per job (one per bucket), with the job's options; a Dask worker keeps
  its stores for the process;
* the aggregates are the bytes of the same files folded from a folder; a re-run folds nothing; an object replaced
  with other content is found (by its SHA-256: this filesystem has no ETag), an error or refolded with
  ``on_change="reprocess"``; errors name the object.

The same job on a real S3-compatible server is in ``test_aggregate_s3.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.fake_fs import CountingFS, fakefs, put, through_the_store  # noqa: F401
from test_server import agg_bytes, fuzzed_lines, make_sections, server_spec, write_lines  # noqa: F401

from ldp.errors import InputChangedError, StorageError
from ldp.jobs import fold_files, write_binary
from ldp.jobs.inputs import InputStores, list_remote, shared_stores
from ldp.jobs.job import fold_input

OPTIONS = {"flavour": "test"}
"""Options of the fake filesystem: they must reach every store the job opens."""


@pytest.fixture
def folders(spec: Any, tmp_path: Path) -> tuple[Path, Path]:  # noqa: F811
    """Two folders of inputs (JSONL and binary; a file of another kind too)."""
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "sub").mkdir(parents=True)
    two.mkdir()
    for i in range(3):
        write_lines(one / f"up{i}.jsonl", fuzzed_lines(spec, 500 + i, n=12))
    write_binary(one / "sub" / "a.ldpe", make_sections(spec, 80, seed=41))
    (one / "notes.txt").write_text("not an input")
    write_lines(two / "more.jsonl", fuzzed_lines(spec, 600, n=12))
    return one, two


def upload(folder: Path, url: str) -> None:
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            put(f"{url}/{f.relative_to(folder).as_posix()}", f.read_bytes())


def test_the_fold_reads_through_the_store_each_opened_once(spec: Any, tmp_path: Path, folders: tuple[Path, Path],
                                                            fakefs: type[CountingFS],  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = folders
    upload(one, "ldpfake://bucket1/in")
    upload(two, "ldpfake://bucket2/more")
    local = fold_files([one, two], spec, tmp_path / "local", by_window=True)
    urls = ["ldpfake://bucket1/in/", "ldpfake://bucket2/more"]
    with through_the_store(monkeypatch):
        remote = fold_files(urls, spec, tmp_path / "remote", by_window=True, storage_options=OPTIONS)
    assert fakefs.opened == 2 and fakefs.options == [OPTIONS, OPTIONS]  # one per bucket, for 5 objects
    assert agg_bytes(tmp_path / "local") == agg_bytes(tmp_path / "remote") and agg_bytes(tmp_path / "local")
    assert (remote.records, remote.accepted, remote.rejected) == (local.records, local.accepted, local.rejected)
    assert (tmp_path / "local" / "rejects.jsonl").read_bytes() != b"" and any("notes.txt" in w for w in remote.warnings)
    entries = json.loads((tmp_path / "remote" / "manifest.json").read_text())["inputs"]
    assert sorted(e["path"] for e in entries) == ["ldpfake://bucket1/in/sub/a.ldpe", "ldpfake://bucket1/in/up0.jsonl",
                                                  "ldpfake://bucket1/in/up1.jsonl", "ldpfake://bucket1/in/up2.jsonl",
                                                  "ldpfake://bucket2/more/more.jsonl"]
    assert all(e["etag"] == "" and e["size"] > 0 and e["mtime_ns"] > 0 for e in entries)  # no ETag here

    fakefs.opened = 0
    with through_the_store(monkeypatch):
        again = fold_files(urls, spec, tmp_path / "remote", by_window=True, storage_options=OPTIONS)
    assert again.processed == [] and len(again.skipped) == 5 and fakefs.opened == 2

    put("ldpfake://bucket1/in/up1.jsonl", (one / "up2.jsonl").read_bytes() + b"\n")  # replaced: other content
    with pytest.raises(InputChangedError, match="ldpfake://bucket1/in/up1.jsonl changed since it was aggregated"):
        fold_files(urls, spec, tmp_path / "remote", by_window=True, storage_options=OPTIONS)
    with through_the_store(monkeypatch):
        redone = fold_files(urls, spec, tmp_path / "remote", by_window=True, storage_options=OPTIONS,
                                 on_change="reprocess")
    assert redone.processed == ["ldpfake://bucket1/in/up1.jsonl"]


def test_errors_name_the_object(spec: Any, tmp_path: Path, fakefs: type[CountingFS]) -> None:  # noqa: F811
    put("ldpfake://bucket/x/a.jsonl", b"{}\n")
    with pytest.raises(FileNotFoundError, match="no such input object or prefix: ldpfake://bucket/nothing"):
        fold_files(["ldpfake://bucket/nothing"], spec, tmp_path / "job")
    fakefs.opened = 0
    stores = InputStores()
    with pytest.raises(FileNotFoundError, match="ldpfake://bucket: no object x/gone.jsonl"):
        stores.stat("ldpfake://bucket/x/gone.jsonl")
    with pytest.raises(FileNotFoundError, match="no object x/gone.jsonl"):
        with stores.fetched("ldpfake://bucket/x/gone.jsonl"):
            pass
    assert fakefs.opened == 1  # the same store for every call of one InputStores


def test_a_prefix_is_listed_when_a_head_of_its_name_is_refused(fakefs: type[CountingFS],  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An analyst may GetObject only under ``segments/``: S3 answers 403 to a HEAD of ``…/segments`` itself, which
    is then listed as a prefix (as the fold did before it read through the store)."""
    put("ldpfake://bucket/segments/closed/a.jsonl", b"{}\n")
    stores = InputStores()
    store, _ = stores.locate("ldpfake://bucket/segments")

    def forbidden(key: str) -> Any:
        raise StorageError(13, f"{store.url}: cannot stat {key}: ClientError: AccessDenied")

    monkeypatch.setattr(store, "stat", forbidden)
    assert list_remote("ldpfake://bucket/segments", stores) == ["ldpfake://bucket/segments/closed/a.jsonl"]
    with pytest.raises(FileNotFoundError, match="no such input object or prefix: ldpfake://bucket/other"):
        list_remote("ldpfake://bucket/other", stores)


def test_an_object_replaced_while_it_is_read_is_refused(fakefs: type[CountingFS],  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    put("ldpfake://bucket/a.jsonl", b"{}\n" * 1000)
    stores = InputStores()
    store, key = stores.locate("ldpfake://bucket/a.jsonl")
    real = store.open

    def open_then_replaced(k: str) -> Any:
        fh = real(k)
        put("ldpfake://bucket/a.jsonl", b"{}\n" * 999)  # another writer, once the copy has begun
        return fh

    monkeypatch.setattr(store, "open", open_then_replaced)
    with pytest.raises(InputChangedError, match="ldpfake://bucket/a.jsonl changed while it was read"):
        with stores.fetched("ldpfake://bucket/a.jsonl"):
            pass


def test_a_worker_keeps_its_stores_for_the_process(spec: Any, fakefs: type[CountingFS]) -> None:  # noqa: F811
    """``fold_input`` on a Dask worker gets ``storage_options``, not the job's stores: the worker opens each store
    once for all the objects it folds."""
    import ldp.jobs.inputs as inputs

    inputs._shared.cache_clear()
    lines = fuzzed_lines(spec, 700, n=6)
    for name in ("a", "b", "c"):
        put(f"ldpfake://bucket/{name}.jsonl", ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    docs = [spec.to_dict()]
    stats = [fold_input(f"ldpfake://bucket/{n}.jsonl", "jsonl", docs, True, n, storage_options=dict(OPTIONS))[1]
             for n in ("a", "b", "c")]
    assert fakefs.opened == 1 and shared_stores(OPTIONS) is shared_stores(dict(OPTIONS))
    assert len({s["sha256"] for s in stats}) == 1 and all(s["etag"] == "" for s in stats)
    inputs._shared.cache_clear()


def test_scoped_inputs_are_read_as_the_role_and_only_by_this_process(tmp_path: Path,
                                                                     fakefs: type[CountingFS]) -> None:  # noqa: F811
    """Inputs under a scope's root go through that root's RoleStore (keys relative to the root); a job with scopes
    on Dask workers, which would read without them, is refused. (``fakefs`` registers ``ldpfake://``: without it the
    test passed only after another test of the process had.)"""
    from ldp.jobs.job import fold_files
    from ldp.storage.roles import RoleStore, analyst_role

    stores = InputStores(None, {"ldpfake://bucket/prod/": analyst_role("demo")})
    store, key = stores.locate("ldpfake://bucket/prod/apps/demo/segments/closed/a.jsonl")
    assert isinstance(store, RoleStore) and key == "apps/demo/segments/closed/a.jsonl"
    with pytest.raises(PermissionError, match="analyst of demo"):
        store.get("apps/demo/incoming/r1/x.chunk")
    plain, key = stores.locate("ldpfake://bucket/other/a.jsonl")  # outside the scope: the bucket's own store
    assert not isinstance(plain, RoleStore) and key == "other/a.jsonl"
    with pytest.raises(ValueError, match="engine='local'"):
        fold_files([], [], tmp_path / "job", engine="dask", scopes={"s3://b/p": analyst_role("demo")})
