"""PGR and HPG through the server jobs (issue 74, item 1): the same reports as JSON lines, binary frames and
Parquet fold to byte-identical aggregates, on the local engine and on Dask; merged halves equal the whole; the
decoded estimates are the direct fold's; the aggregate round-trips its bytes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_server import WINDOW, agg_bytes, envelopes

from ldp.decoders.projective_geometry import PGAggregate
from ldp.jobs import (
    Section,
    decode_file,
    fold_files,
    merge_files,
    read_aggregate,
    spec_index,
    write_binary,
    write_jsonl,
    write_parquet,
)
from ldp.protocols import get_protocol
from ldp.spec import CollectionSpec

METRICS = {
    "screen": {"protocol": "pgr", "params": {"epsilon": 2.0, "domain_size": 300}, "budget": {"per_report": 2}},
    "route": {"protocol": "hpg", "params": {"epsilon": 6.0, "domain_size": 500}, "budget": {"per_report": 6}},
}


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> CollectionSpec:
    folder = tmp_path_factory.mktemp("pgspec")
    doc = {"spec_version": 1, "name": "projective", "budget": {"per_window": 100, "lifetime": 1000},
           "metrics": METRICS}
    (folder / "spec.json").write_text(json.dumps(doc))
    return CollectionSpec.load(folder / "spec.json")


def sections(spec: CollectionSpec, n: int, seed: int) -> list[Section]:
    rng = np.random.default_rng(seed)
    out = []
    for name, m in spec.metrics.items():
        enc = get_protocol(m.protocol).encoder_type(m.params)
        values = rng.zipf(1.3, n) % m.params.domain_size
        out.append(Section(spec.fingerprint, name, WINDOW, enc.encode_batch(values, rng)))
    return out


def test_every_format_and_engine_folds_the_same_aggregate(spec, tmp_path) -> None:
    secs = sections(spec, 3000, seed=1)
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", envelopes(secs))
    write_binary(tmp_path / "b.ldpe", secs)
    pytest.importorskip("pyarrow")
    write_parquet(tmp_path / "c.parquet", secs)
    outs = {}
    for name, path in (("jsonl", tmp_path / "in" / "a.jsonl"), ("binary", tmp_path / "b.ldpe"),
                       ("parquet", tmp_path / "c.parquet")):
        fold_files([path], spec, tmp_path / name)
        outs[name] = agg_bytes(tmp_path / name)
    assert outs["jsonl"] == outs["binary"] == outs["parquet"] and len(outs["jsonl"]) == 2
    for path in sorted((tmp_path / "jsonl" / "aggregates").glob("*.agg")):
        metric, est = decode_file(path, spec_index(spec))
        direct = PGAggregate(metric.params)
        direct.add(next(s.reports for s in secs if s.metric == metric.name))
        np.testing.assert_array_equal(est.count, direct.estimate().count)
        agg = read_aggregate(path)
        assert type(agg).from_bytes(agg.to_bytes()).to_bytes() == agg.to_bytes()


def test_merged_halves_are_the_whole(spec, tmp_path) -> None:
    write_binary(tmp_path / "h1.ldpe", sections(spec, 1000, seed=2))
    write_binary(tmp_path / "h2.ldpe", sections(spec, 1000, seed=3))
    fold_files([tmp_path / "h1.ldpe", tmp_path / "h2.ldpe"], spec, tmp_path / "all")
    fold_files([tmp_path / "h1.ldpe"], spec, tmp_path / "one")
    fold_files([tmp_path / "h2.ldpe"], spec, tmp_path / "two")
    merge_files([tmp_path / "one" / "aggregates", tmp_path / "two" / "aggregates"], tmp_path / "merged")
    merged = {p.name: p.read_bytes() for p in sorted((tmp_path / "merged").rglob("*.agg"))}
    assert merged == agg_bytes(tmp_path / "all") and len(merged) == 2


def test_dask_engine_folds_what_the_local_one_does(spec, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    secs = sections(spec, 1500, seed=3)
    write_binary(tmp_path / "a.ldpe", secs)
    fold_files([tmp_path / "a.ldpe"], spec, tmp_path / "local")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    try:
        with distributed.Client(cluster) as client:
            fold_files([tmp_path / "a.ldpe"], spec, tmp_path / "dask", engine="dask", scheduler=client)
    finally:
        cluster.close()
    assert agg_bytes(tmp_path / "dask") == agg_bytes(tmp_path / "local")
