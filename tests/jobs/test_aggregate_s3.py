"""``ldp fold s3://bucket/prefix`` (issue 50): inputs in object storage, on a real S3-compatible server (moto in
server mode, its own process), folded locally and on a ``dask.distributed`` LocalCluster — the same aggregate and
rejects bytes as the same files folded from a folder; resumable, idempotent, renames and vanished objects noted.
Objects are read through the store interface (:class:`ldp.jobs.inputs.InputStores` over :mod:`ldp.storage`,
issue 60)."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings, strategies as st

distributed = pytest.importorskip("distributed")
pytest.importorskip("s3fs")
pytest.importorskip("pyarrow")

from support import call_main  # noqa: E402
from test_server import agg_bytes, envelopes, fuzzed_lines, make_sections, server_spec, write_lines  # noqa: E402,F401

from ldp.errors import InputChangedError  # noqa: E402
from ldp.jobs import fold_files, write_binary, write_csv, write_parquet  # noqa: E402
from ldp.jobs.inputs import InputStores, list_remote  # noqa: E402
from ldp.storage import open_store  # noqa: E402


@pytest.fixture(scope="module")
def cluster(dask_scheduler):
    """Two worker processes (the session's cluster, tests/conftest.py): each reads the objects itself (credentials
    through the options)."""
    client = distributed.Client(dask_scheduler)
    yield client
    client.close()


@pytest.fixture
def files(spec, tmp_path):  # noqa: F811
    """Inputs of every format, hostile lines included, in a local folder."""
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        write_lines(folder / f"up{i}-0123456789abcdef.jsonl", fuzzed_lines(spec, 300 + i, n=15))
    secs = make_sections(spec, 150, seed=31)
    write_binary(folder / "a.ldpe", secs)
    write_parquet(folder / "b.parquet", secs[:6])
    write_csv(folder / "sub" / "d.csv" if (folder / "sub").mkdir() is None else None, envelopes(secs[:3]))
    (folder / "notes.txt").write_text("not an input")
    return folder


def upload(s3, folder) -> tuple[str, dict]:
    """The folder's files as objects under a fresh prefix; its URL and the store options."""
    url = f"{s3.bucket('agg')}/{uuid.uuid4().hex}"
    store = open_store(url, s3.options())
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            store.put(f.relative_to(folder).as_posix(), f.read_bytes())
    return url, s3.options()


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_objects_fold_to_the_bytes_of_the_same_files_in_a_folder(spec, tmp_path, files, s3, cluster, engine):
    url, opts = upload(s3, files)
    local = fold_files([files], spec, tmp_path / "local", by_window=True)
    remote = fold_files([url + "/"], spec, tmp_path / "remote", by_window=True, engine=engine,
                             scheduler=cluster if engine == "dask" else None, storage_options=opts)
    assert agg_bytes(tmp_path / "local") == agg_bytes(tmp_path / "remote") and len(agg_bytes(tmp_path / "local")) >= 6
    assert (tmp_path / "local" / "rejects.jsonl").read_bytes().count(b"\n") == remote.records - remote.accepted
    assert (local.records, local.accepted, local.rejected, local.blank) == (
        remote.records, remote.accepted, remote.rejected, remote.blank)
    assert any("notes.txt" in w for w in remote.warnings)
    manifest = json.loads((tmp_path / "remote" / "manifest.json").read_text())
    paths = sorted(e["path"] for e in manifest["inputs"])
    assert all(p.startswith(url + "/") for p in paths) and len(paths) == 6
    sizes = {e["path"].rsplit("/", 1)[-1]: e["size"] for e in manifest["inputs"]}
    assert sizes["a.ldpe"] == (files / "a.ldpe").stat().st_size
    again = fold_files([url], spec, tmp_path / "remote", by_window=True, engine=engine,
                            scheduler=cluster if engine == "dask" else None, storage_options=opts)
    assert again.processed == [] and len(again.skipped) == 6 and agg_bytes(tmp_path / "remote") == agg_bytes(
        tmp_path / "local")


def test_new_objects_are_folded_once_and_gone_ones_stay_counted(spec, tmp_path, files, s3):
    url, opts = upload(s3, files)
    first = fold_files([url], spec, tmp_path / "job", storage_options=opts)
    store = open_store(url, opts)
    later = (files / "up0-0123456789abcdef.jsonl").read_bytes().replace(b"\n", b"\n\n", 1)  # new content
    store.put("later.jsonl", later)
    (tmp_path / "later.jsonl").write_bytes(later)
    alone = fold_files([tmp_path / "later.jsonl"], spec, tmp_path / "alone")
    store.delete("up1-0123456789abcdef.jsonl")
    second = fold_files([url], spec, tmp_path / "job", storage_options=opts)
    assert second.processed == [f"{url}/later.jsonl"]
    assert [v["source"] for v in second.vanished] == [f"{url}/up1-0123456789abcdef.jsonl"]
    assert second.run["records"] == alone.records  # the vanished object stays counted:
    assert (second.records, second.blank) == (first.records + alone.records, first.blank + alone.blank)


def test_a_renamed_object_is_not_counted_again(spec, tmp_path, files, s3):
    url, opts = upload(s3, files)
    fold_files([url], spec, tmp_path / "job", storage_options=opts)
    before = agg_bytes(tmp_path / "job")
    store = open_store(url, opts)
    store.put("moved/a.ldpe", store.get("a.ldpe"))
    store.delete("a.ldpe")
    run = fold_files([url], spec, tmp_path / "job", storage_options=opts)
    assert run.processed == [] and run.renamed == [{"from": f"{url}/a.ldpe", "to": f"{url}/moved/a.ldpe"}]
    assert agg_bytes(tmp_path / "job") == before


def test_listing_and_fetching(s3, tmp_path):
    url = f"{s3.bucket('agg')}/{uuid.uuid4().hex}"
    opts = s3.options()
    with pytest.raises(FileNotFoundError):
        list_remote(url, opts)
    store = open_store(url, opts)
    store.put("x/a.jsonl", b"{}\n")
    store.fs.pipe_file(f"{store.root}/x/.hidden.jsonl", b"{}\n")  # a name the store itself would refuse
    assert list_remote(url, opts) == [f"{url}/x/a.jsonl"]
    assert list_remote(f"{url}/x/a.jsonl", opts) == [f"{url}/x/a.jsonl"]
    stores = InputStores(opts)
    version = stores.stat(f"{url}/x/a.jsonl")
    assert version.size == 3 and version.etag and version.mtime_ns > 0 and version.version == version.etag
    with stores.fetched(f"{url}/x/a.jsonl") as (local, got, digest):
        assert local.read_bytes() == b"{}\n" and got == version
        assert digest == "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356"  # SHA-256 of b"{}\n"
    assert not local.exists()  # the private copy is gone


def test_an_object_replaced_while_fetched_is_refused(s3, monkeypatch):
    url = f"{s3.bucket('agg')}/{uuid.uuid4().hex}"
    opts = s3.options()
    store = open_store(url, opts)
    store.put("a.jsonl", b"{}\n")
    stores = InputStores(opts)
    inputs_store, _ = stores.locate(f"{url}/a.jsonl")
    real = inputs_store.stat
    calls = []

    def replaced(key):
        calls.append(key)
        if len(calls) == 2:  # between the two looks, another writer replaces it
            store.put("a.jsonl", b"{}\n{}\n")
        return real(key)

    monkeypatch.setattr(inputs_store, "stat", replaced)
    with pytest.raises(InputChangedError, match="changed while it was read"), stores.fetched(f"{url}/a.jsonl"):
        pass


def test_the_cli_reads_object_storage(spec, tmp_path, files, s3, run_ldp):
    url, opts = upload(s3, files)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec.to_dict()))
    args = ["aggregate", url, "--spec", str(spec_file), "--out", str(tmp_path / "job"), "--json", "-q"]
    args += [x for k, v in opts.items() for x in ("--store-option", f"{k}={v}")]
    code, out, err = run_ldp(*args)
    assert code == 0, err
    assert json.loads(out)["records"] == fold_files([files], spec, tmp_path / "local").records
    code, _, err = call_main(["aggregate", url, "--spec", str(spec_file), "--out", str(tmp_path / "j2"),
                              "--store-option", "nokeyvalue"])
    assert code == 2 and "KEY=VALUE" in err


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), st.text(max_size=20))
def test_store_options_are_key_value_or_refused(key, value):
    import argparse

    from ldp.cli.support import store_option
    from ldp.jobs.inputs import is_remote

    text = f"{key}={value}"
    name, _, rest = text.partition("=")  # the first "=" splits
    if name.strip():
        assert store_option(text) == (name.strip(), rest)
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            store_option(text)
    with pytest.raises(argparse.ArgumentTypeError):
        store_option(key.replace("=", ""))  # no "=" at all
    assert is_remote(f"s3://{key}") and not is_remote(f"file://{key}") and is_remote(key) == ("://" in key and not key.startswith("file://"))


def test_a_rerun_checks_folded_objects_by_etag_without_reading_them(spec, tmp_path, files, s3, monkeypatch):
    from ldp.storage.objects import ObjectStore

    url, opts = upload(s3, files)
    fold_files([url], spec, tmp_path / "job", storage_options=opts)

    def no_reading(*args):
        raise AssertionError("a folded, unchanged object was read again")

    monkeypatch.setattr(ObjectStore, "open", no_reading)
    monkeypatch.setattr(ObjectStore, "get", no_reading)
    again = fold_files([url], spec, tmp_path / "job", storage_options=opts)
    assert again.processed == [] and len(again.skipped) == 6
    monkeypatch.undo()
    store = open_store(url, opts)
    store.put("a.ldpe", store.get("a.ldpe")[:-1])  # replaced with other content: a new ETag
    with pytest.raises(InputChangedError, match="a.ldpe changed since it was aggregated"):
        fold_files([url], spec, tmp_path / "job", storage_options=opts)
    redone = fold_files([url], spec, tmp_path / "job", storage_options=opts, on_change="reprocess")
    assert redone.processed == [f"{url}/a.ldpe"]
