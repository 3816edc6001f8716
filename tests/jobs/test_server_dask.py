"""The Dask backend on a local ``distributed`` cluster started here: the same bytes as one process.

Skipped only when dask/distributed are not installed (the ``test`` extra installs them)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")
dask_bag = pytest.importorskip("dask.bag")
pytest.importorskip("pyarrow")

from test_server import agg_bytes, envelopes, fuzzed_lines, make_sections, server_spec, write_lines  # noqa: E402,F401

from ldp.jobs import (  # noqa: E402  # noqa: E402
    fold_bag,
    fold_dataframe,
    fold_files,
    key_name,
    write_binary,
    write_csv,
    write_parquet,
)
from ldp.jobs.store import canonical_bytes  # noqa: E402


def by_name(result) -> dict[str, bytes]:
    return {f"{key_name(k)}.agg": canonical_bytes(a) for k, a in result.aggregates.items()}


@pytest.fixture(scope="module")
def client():
    # the dashboard on any free port: two clusters at once never race for 8787
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def inputs(spec, tmp_path):  # noqa: F811
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"up{i}.jsonl")
        write_lines(paths[-1], fuzzed_lines(spec, 200 + i, n=15))
    secs = make_sections(spec, 200, seed=30)
    write_binary(tmp_path / "a.ldpe", secs)
    write_parquet(tmp_path / "b.parquet", secs[:6])
    write_parquet(tmp_path / "c.parquet", secs[6:])
    write_csv(tmp_path / "d.csv", envelopes(secs[:3]))
    return paths + [tmp_path / "a.ldpe", tmp_path / "b.parquet", tmp_path / "c.parquet", tmp_path / "d.csv"]


@pytest.mark.parametrize("by_window", [False, True])
def test_dask_engine_gives_the_single_process_bytes(spec, tmp_path, inputs, client, by_window):  # noqa: F811
    local = fold_files(inputs, spec, tmp_path / "local", by_window=by_window)
    remote = fold_files(inputs, spec, tmp_path / "dask", by_window=by_window, engine="dask", scheduler=client)
    assert agg_bytes(tmp_path / "local") == agg_bytes(tmp_path / "dask") and len(agg_bytes(tmp_path / "local")) >= 6
    assert (tmp_path / "local" / "rejects.jsonl").read_bytes() == (tmp_path / "dask" / "rejects.jsonl").read_bytes()
    assert (local.records, local.accepted, local.rejected) == (remote.records, remote.accepted, remote.rejected)
    again = fold_files(inputs, spec, tmp_path / "dask", by_window=by_window, engine="dask", scheduler=client)
    assert again.processed == [] and agg_bytes(tmp_path / "dask") == agg_bytes(tmp_path / "local")


def test_bag_partitions_tree_merge_to_the_same_bytes(spec, tmp_path, inputs, client):  # noqa: F811
    jsonl = inputs[:3]
    local = fold_files(jsonl, spec, tmp_path / "lj", by_window=True)
    bag = dask_bag.read_text([str(p) for p in jsonl], blocksize=4096, errors="surrogateescape")
    assert bag.npartitions > 8
    result = fold_bag(bag, spec, by_window=True, split_every=3, client=client)
    assert by_name(result) == agg_bytes(tmp_path / "lj")
    assert (result.records, result.accepted, result.rejected, result.blank) == (
        local.records, local.accepted, local.rejected, local.blank)
    assert len(result.rejects) == sum(local.rejected.values())


def test_dataframe_partitions_tree_merge_to_the_same_bytes(spec, tmp_path, inputs, client):  # noqa: F811
    dask_dataframe = pytest.importorskip("dask.dataframe")
    parquet = inputs[4:6]
    fold_files(parquet, spec, tmp_path / "lp")
    frame = dask_dataframe.read_parquet([str(p) for p in parquet])
    assert frame.npartitions >= 2
    result = fold_dataframe(frame, spec, split_every=2, client=client)
    assert by_name(result) == agg_bytes(tmp_path / "lp")
    assert result.rejected == {} and result.accepted == 200 * 12
