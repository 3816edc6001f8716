"""``ldp shuffle --engine dask`` (issue 56, item 4) on a LocalCluster of worker processes, over a local folder and
a real S3-compatible server: the same outputs as the local engine — per window, the multiset of the local segment's
lines is the union of the Dask parts' lines — with the same anonymity sets and duplicates; a run killed after
staging finished by the next Dask run with nothing twice and nothing lost; the parts of a window counted as one
segment by the fold's anonymity sets."""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from test_stage import DAY, SPECS, W0, Dying, Killed, batch, write  # noqa: E402

from ldp.pipeline.amplification import segment_counts, segment_of, window_segments  # noqa: E402
from ldp.shuffler import ChunkBatch, dask_engine, dask_tasks, shuffle_app  # noqa: E402
from ldp.shuffler.stage import shuffler_lease  # noqa: E402
from ldp.storage import Store, open_store  # noqa: E402

CLOSED = "apps/demo/segments/closed/"
PART_BYTES = 1500  # a window of a few KB in several parts


@pytest.fixture(scope="module")
def scheduler(dask_scheduler: str) -> str:
    """The session's cluster (tests/conftest.py: 2 worker processes, one thread and 1 GiB each)."""
    return dask_scheduler


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_engine, "PART_BYTES", PART_BYTES)


@pytest.fixture(params=["local", "s3"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def new_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, name: str) -> Store:
    if kind == "local":
        return open_store(tmp_path / name)
    s3 = request.getfixturevalue("s3")
    return open_store(f"{s3.bucket('ldp-shuffler-dask')}/{name}{time.monotonic_ns()}", s3.options())


def first_chunks(store: Store) -> None:
    write(store, "r1", 1, batch("a", 5), batch("b", 7, metric="n"))


def second_chunks(store: Store) -> None:
    """Several replicas; ``a`` again (mixed by the earlier run), ``c`` and ``d`` twice across replicas; two windows,
    and a third of one report, past its hold."""
    write(store, "r2", 1, batch("a", 5), batch("c", 30), at=W0 + DAY + 500)
    write(store, "r3", 1, batch("c", 30), batch("d", 20, window=W0 + DAY), batch("e", 25, window=W0 + DAY,
                                                                                  metric="n"), at=W0 + DAY + 600)
    write(store, "r1", 2, batch("d", 20, window=W0 + DAY), batch("f", 3, window=W0 + DAY), at=W0 + DAY + 700)
    write(store, "r1", 3, batch("g", 1, window=W0 - 10 * DAY), at=W0 - 10 * DAY + 5)


def lines_of(store: Store, entry: dict[str, Any]) -> Counter[bytes]:
    """The lines a window's entry points at: its segment, or all its parts."""
    seg = entry.get("segment")
    if seg is None:
        return Counter()
    if "parts" not in entry:
        return Counter(store.get(seg).splitlines())
    stem = seg.removesuffix(".jsonl")
    parts = [k for k in store.list(CLOSED) if segment_of(k) == seg]
    assert parts == [f"{stem}-p{k:05d}.jsonl" for k in range(entry["parts"])]
    return Counter(ln for k in parts for ln in store.get(k).splitlines())


def run_both(store: Store, engine: str, scheduler: str) -> list[Any]:
    runs = []
    first_chunks(store)
    runs.append(shuffle_app(store, "demo", now=W0 + DAY + 400, engine=engine,
                            scheduler=scheduler if engine == "dask" else None, min_reports=1))
    second_chunks(store)
    runs.append(shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, min_reports=3, specs=SPECS, engine=engine,
                            scheduler=scheduler if engine == "dask" else None))
    return runs


def test_the_same_outputs_as_the_local_engine(kind: str, tmp_path: Path, request: pytest.FixtureRequest,
                                              scheduler: str) -> None:
    local, dask = new_store(kind, tmp_path, request, "l"), new_store(kind, tmp_path, request, "d")
    ran = {"local": run_both(local, "local", scheduler), "dask": run_both(dask, "dask", scheduler)}
    for lr, dr in zip(ran["local"], ran["dask"], strict=True):
        assert lr.duplicates == dr.duplicates and list(lr.windows) == list(dr.windows)
        assert len(lr.chunks) == len(dr.chunks)
        for window, le in lr.windows.items():
            de = dr.windows[window]
            assert {k: v for k, v in le.items() if k != "segment"} == {k: v for k, v in de.items()
                                                                        if k not in ("segment", "parts")}
            assert (le["segment"] is None) == (de["segment"] is None)
            assert lines_of(local, le) == lines_of(dask, de), window
            if de["segment"] is not None:  # the rule: ceil(bytes / PART_BYTES) parts, those left empty not written
                assert 1 <= de["parts"] <= math.ceil(sum(len(ln) + 1 for ln in lines_of(dask, de).elements())
                                                     / PART_BYTES)
    second = ran["dask"][1]
    assert second.duplicates == 3  # a (mixed before), c and d (across replicas)
    assert sorted((w["reports"], w["parts"] > 1, bool(w.get("withheld"))) for w in second.windows.values()) == [
        (1, False, True), (30, True, False), (48, True, False)]
    assert sum(e["parts"] for r in ran["dask"] for e in r.windows.values()) == len(dask.list(CLOSED))
    for store, engine in ((local, "local"), (dask, "dask")):
        assert store.list("apps/demo/incoming/") == [] and store.list("apps/demo/shuffler/staging/") == []
        again = shuffle_app(store, "demo", now=W0 + 2 * DAY + 500, engine=engine,
                            scheduler=scheduler if engine == "dask" else None, min_reports=1)
        assert again.run_id is None and again.held == {}
    recs = [json.loads(dask.get(k)) for k in dask.list("apps/demo/shuffler/runs/")]
    assert [(r["state"], r["engine"]) for r in recs] == [("closed", "dask")] * 2
    assert {k.split("/")[4] for k in dask.list("apps/demo/shuffler/seen/")} == {r["id"] for r in recs}


class DiesAt(Dying):
    """A store that dies (raises) at its ``after``-th write or delete of a key holding ``where``."""

    def __init__(self, inner: Store, where: str, after: int) -> None:
        super().__init__(inner, after)
        self.where = where

    def put(self, key: str, data: bytes) -> None:
        if self.where in key:
            self._tick()
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        if self.where in key:
            self._tick()
        return self.inner.create(key, data)

    def delete(self, key: str) -> None:
        if self.where in key:
            self._tick()
        self.inner.delete(key)


@pytest.fixture(scope="module")
def after_a_first_run(tmp_path_factory: pytest.TempPathFactory, scheduler: str) -> Path:
    """A local folder after the first chunks' Dask run (closed, its ids recorded), run once for the module: the
    killed-run cases each start from a copy of it."""
    root = tmp_path_factory.mktemp("first-run") / "s"
    store = open_store(root)
    first_chunks(store)
    with pytest.MonkeyPatch.context() as mp:  # the parts' size the function-scoped fixture sets
        mp.setattr(dask_engine, "PART_BYTES", PART_BYTES)
        shuffle_app(store, "demo", now=W0 + DAY + 400, engine="dask", scheduler=scheduler, min_reports=1)
    return root


@pytest.mark.parametrize("where, after", [("/segments/closed/", 1), ("/windows/", 2), ("/shuffler/seen/", 0),
                                          ("/shuffler/staging/", 5)],
                         ids=["publishing", "marking", "recording-ids", "dropping-staging"])
def test_a_run_killed_after_staging_is_finished_by_the_next(tmp_path: Path, scheduler: str, where: str,
                                                             after: int, after_a_first_run: Path) -> None:
    """Killed while publishing the parts (one out), between two windows' markers (the withheld window's and the
    first's written), recording the ids, or dropping the staging of the closed run: the next Dask run finishes it,
    every kept line once, nothing lost."""
    shutil.copytree(after_a_first_run, tmp_path / "s")  # each case on its own copy of the same folder
    store = open_store(tmp_path / "s")
    second_chunks(store)
    expected = Counter((batch("c", 30).lines + batch("d", 20).lines + batch("e", 25, metric="n").lines
                        + batch("f", 3).lines).splitlines())
    before = Counter(ln for k in store.list(CLOSED) for ln in store.get(k).splitlines())
    with pytest.raises(Killed):
        shuffle_app(DiesAt(store, where, after), "demo", now=W0 + 2 * DAY + 400, specs=SPECS,  # type: ignore[arg-type]
                    min_reports=3, engine="dask", scheduler=scheduler, lease=shuffler_lease(store, "demo"))
    key = store.list("apps/demo/shuffler/runs/")[-1]
    rec = json.loads(store.get(key))
    assert rec["state"] == ("closed" if where == "/shuffler/staging/" else "started")
    assert store.list("apps/demo/shuffler/staging/") != []
    if rec["state"] == "started":  # its outputs are named as the dask engine writes them
        with pytest.raises(ValueError, match="--engine dask"):
            shuffle_app(store, "demo", now=W0 + 2 * DAY + 450, min_reports=1)
    again = shuffle_app(store, "demo", now=W0 + 2 * DAY + 500, engine="dask", scheduler=scheduler, min_reports=1)
    assert again.resumed == ([] if rec["state"] == "closed" else [rec["id"]]) and again.run_id is None
    got = Counter(ln for k in store.list(CLOSED) for ln in store.get(k).splitlines()) - before
    assert got == expected
    done = json.loads(store.get(key))
    assert done["state"] == "closed" and done["duplicates"] == 3
    assert sorted(w["reports"] for w in done["anonymity"].values()) == [1, 30, 48]
    assert store.list("apps/demo/incoming/") == [] and store.list("apps/demo/shuffler/staging/") == []
    assert len({k.split("/")[4] for k in store.list("apps/demo/shuffler/seen/")}) == 2


@pytest.mark.parametrize("damage", ["a part lost", "a line twice, another missing"])
def test_parts_that_do_not_hold_their_window_are_never_published(tmp_path: Path, scheduler: str, damage: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts' counts and multiset checksums are checked against the window's kept batches before its marker is
    written: a mismatch (as parts mixed with other keys after a worker was lost would be) publishes nothing, and the
    next run mixes the window again."""
    store = open_store(tmp_path / "s")
    first_chunks(store)
    mix = dask_engine.DaskEngine._mix

    def damaged(self: Any, *args: Any) -> Any:
        out = mix(self, *args)
        return out.iloc[1:] if damage == "a part lost" else out.assign(h1=out["h1"] + [1] + [0] * (len(out) - 1))

    monkeypatch.setattr(dask_engine.DaskEngine, "_mix", damaged)
    with pytest.raises(RuntimeError, match="do not hold exactly its kept lines"):
        shuffle_app(store, "demo", now=W0 + DAY + 400, engine="dask", scheduler=scheduler, min_reports=1)
    assert store.list(CLOSED) == [] and [k for k in store.list("apps/demo/shuffler/staging/") if "windows" in k] == []
    monkeypatch.setattr(dask_engine.DaskEngine, "_mix", mix)
    again = shuffle_app(store, "demo", now=W0 + DAY + 500, engine="dask", scheduler=scheduler, min_reports=1)
    assert len(again.resumed) == 1 and store.list("apps/demo/shuffler/staging/") == []
    got = Counter(ln for k in store.list(CLOSED) for ln in store.get(k).splitlines())
    assert got == Counter((batch("a", 5).lines + batch("b", 7, metric="n").lines).splitlines())


def test_workers_write_only_to_their_staging(tmp_path: Path) -> None:
    spec = dask_engine.store_spec(open_store(tmp_path / "s"))
    view = dask_tasks._WorkerStore(spec, "apps/demo/shuffler/staging/r/")
    view.put("apps/demo/shuffler/staging/r/x", b"1")
    for write_op in (lambda: view.put("apps/demo/segments/closed/x.jsonl", b"1"),
                     lambda: view.create("apps/demo/shuffler/staging/r/y", b"1"),
                     lambda: view.delete("apps/demo/shuffler/staging/r/x")):
        with pytest.raises(PermissionError):
            write_op()
    assert view.get("apps/demo/shuffler/staging/r/x") == b"1"
    with pytest.raises(TypeError, match="open the store themselves"):
        dask_engine.store_spec(object())


def test_object_store_options_reach_the_workers(s3: Any) -> None:
    store = open_store(f"{s3.bucket('ldp-shuffler-dask')}/o", s3.options())
    url, options = dask_engine.store_spec(store)
    assert url == store.url and json.loads(options) == s3.options()


def test_the_parts_of_a_window_count_as_one_segment(tmp_path: Path) -> None:
    """The fold's anonymity sets (:mod:`ldp.pipeline.amplification`): a window's parts are one shuffled segment,
    their counts summed; another shuffled segment and an old unshuffled one stay apart."""
    fp = "0123456789abcdef"
    stem = "/s/apps/demo/segments/closed/20241004T000000Z-00112233445566ff-f2"
    inputs = [{"path": f"{stem}-p{k:05d}.jsonl", "n_by_key": {f"m.{fp}.w20000": n}}
              for k, n in enumerate([3, 4, 5])]
    inputs += [{"path": "/s/apps/demo/segments/closed/20241004T000000Z-aabbccddeeff0011.jsonl",
                "n_by_key": {f"m.{fp}.w20000": 2}},
               {"path": "/s/apps/demo/segments/closed/20241004T000000Z-000001.jsonl", "n_by_key": {f"m.{fp}": 9}}]
    (tmp_path / "manifest.json").write_text(json.dumps({"inputs": inputs}))
    assert sorted(segment_counts(tmp_path)[("m", fp)]) == [(False, 9), (True, 2), (True, 12)]
    assert sorted(window_segments(tmp_path)[("m", fp)][20000]) == [(True, 2), (True, 12)]
    assert segment_of(f"{stem}-p00007.jsonl") == f"{stem}.jsonl"
    assert segment_of("/s/20241004T000000Z-000001-p00007.jsonl") == "/s/20241004T000000Z-000001-p00007.jsonl"


def test_a_fold_of_the_parts_sees_one_segment_per_window(tmp_path: Path, scheduler: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: the parts the Dask engine wrote, folded, give each metric one shuffled segment holding all of
    the window's reports of it."""
    from support import ROOT

    from ldp.jobs.job import fold_files
    from ldp.spec import CollectionSpec

    monkeypatch.setattr(dask_engine, "PART_BYTES", 3000)
    spec = CollectionSpec.load(ROOT / "examples" / "collection.json")
    good = [ln for ln in (ROOT / "examples" / "reports.jsonl").read_bytes().splitlines(keepends=True)
            if ln.startswith(b'{"spec":"' + spec.fingerprint.encode())][:120]
    store = open_store(tmp_path / "s")
    write(store, "r1", 1, ChunkBatch("g1", DAY, DAY, b"".join(good[:60])))
    write(store, "r2", 1, ChunkBatch("g2", DAY, DAY, b"".join(good[60:])))
    run = shuffle_app(store, "demo", now=3 * DAY, engine="dask", scheduler=scheduler, min_reports=1)
    (w,) = run.windows.values()
    assert w["parts"] > 3 and w["reports"] == 120
    summary = fold_files([tmp_path / "s" / CLOSED], spec, tmp_path / "job", by_window=True, progress=False)
    assert summary.inputs == w["parts"]
    counts = segment_counts(tmp_path / "job")
    assert counts and all(len(v) == 1 and v[0][0] for v in counts.values())  # one shuffled segment per metric
    assert sum(v[0][1] for v in counts.values()) == summary.accepted > 100


def test_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--engine dask`` with a cluster of its own; ``--scheduler`` only with it; the extra named when missing."""
    import importlib

    from support import call_main

    store = open_store(tmp_path / "s")
    first_chunks(store)
    code, out, err = call_main(["shuffle", "--min-reports", "1",
                                "--store", str(tmp_path / "s"), "--app", "demo", "--engine", "dask"])
    assert code == 0, err
    assert "0 duplicate batches dropped" in out and "12 reports from 2 batches of 1 replica(s)" in out
    assert "-p*.jsonl (" in out
    code, _, err = call_main(["shuffle", "--min-reports", "1",
                              "--store", str(tmp_path / "s"), "--app", "demo", "--scheduler", "tcp://x:1"])
    assert code == 2 and "--engine dask" in err.splitlines()[-1]
    # distributed missing (None in sys.modules: not importable, nor found), the module imported anew, here: the
    # modules it imports before are loaded already (a subprocess spent a second loading them); both restored after
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.delitem(sys.modules, "ldp.shuffler.dask_engine")
    with pytest.raises(ImportError) as gone:
        importlib.import_module("ldp.shuffler.dask_engine")
    assert "needs the 'dask' extra" in str(gone.value) and "ldp-telemetry[dask]" in str(gone.value)


def test_canonical_lines_and_withheld_metrics_as_the_local_engine(tmp_path: Path, scheduler: str) -> None:
    """Older chunks in other formattings and a metric below its threshold: the Dask engine writes the same canonical
    lines as the local one, none of the withheld metric's, and records the same anonymity sets (issue 57)."""
    from ingest.test_canonical_door import random_formatting
    from test_no_leaks import STRICT, W1, of_metric, put

    from ldp.pipeline.canonical import canonical_line

    a, b = of_metric("homepage", STRICT), of_metric("dark_mode", STRICT)
    rng = random.Random(57)
    odd = [random_formatting(ln[:-1], rng) + b"\n" for ln in a[:60]]
    ran = {}
    for engine in ("local", "dask"):
        store = open_store(tmp_path / engine)
        put(store, "r1", 1, ChunkBatch("a1", W1, DAY, b"".join(odd + a[60:])), ChunkBatch("b1", W1, DAY,
                                                                                           b"".join(b[:30])))
        put(store, "r2", 1, ChunkBatch("a2", W1, DAY, b"".join(a[:50])), ChunkBatch("b2", W1, DAY, b"".join(b[30:60])))
        run = shuffle_app(store, "demo", now=W1 + DAY + 400, engine=engine, specs={STRICT.fingerprint: STRICT},
                          scheduler=scheduler if engine == "dask" else None, min_reports=1)
        (w,) = run.windows.values()
        ran[engine] = ({k: v for k, v in w.items() if k not in ("segment", "parts")}, lines_of(store, w))
    assert ran["local"] == ran["dask"]
    entry, lines = ran["dask"]
    specs = {STRICT.fingerprint: STRICT}
    assert lines == Counter([ln[:-1] for ln in a + a[:50]])
    assert all(canonical_line(ln, specs) == ln for ln in lines)
    assert entry["withheld_metrics"] == {f"{STRICT.fingerprint}/dark_mode": [60, 100]}
    assert entry["lines"] == {"rewritten": 60} and entry["reports"] == 250
