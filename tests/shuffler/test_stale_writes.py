"""Every stale write of a shuffler run is harmless (issue 70, item 1), through the cases of
``simulations/stale_writes.py``.

For each kind of store write a run makes — its run record (created, then ``done``, then ``closed``), a segment or a
Dask part, a seen record, a chunk delete, the Dask engine's staging record and window markers — a run is paused
*after* its lease check and *before* that write; a second run takes the lease over and finishes; the first wakes and
its write lands. Then the shuffler runs twice more: every report is in the segments exactly once, the later runs
succeed, and the stale run fails naming the lost lease. Both engines, over a folder and over a real S3-compatible
server. The run record's creation is the one write that did harm before (a ``started`` record naming chunks the
taker had consumed stopped every later run): such a record is recognised as superseded and closed as ``void``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.scripts import load_script

from ldp.storage import Store, open_store

stale = load_script("stale_writes")


@pytest.fixture(params=["local", "s3"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "local":
        return lambda: open_store(tmp_path / f"store{time.monotonic_ns()}")
    s3 = request.getfixturevalue("s3")
    return lambda: open_store(f"{s3.bucket('ldp-stale-writes')}/t{time.monotonic_ns()}", s3.options())


@pytest.mark.parametrize("kind", list(stale.KINDS))
def test_every_stale_write_of_the_local_engine_is_harmless(new_store: Callable[[], Store], kind: str) -> None:
    case = stale.stale_write_case(new_store(), stale.KINDS[kind])
    assert case["failures"] == []
    voided = [r for r in case["records"] if r["state"] == "void"]
    if kind == "run record created":  # the stale record landed after the taker consumed its chunks
        (rec,) = voided
        assert rec["fence"] < rec["void"]["fence"] and "chunks are gone" in rec["void"]["reason"]
        assert case["later"][0].voided == [rec["id"]]
    else:
        assert voided == []


def test_the_cases_fail_when_a_stale_write_does_harm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the superseded check, the stale record stops every later run: the case says so (it can fail)."""
    from ldp.shuffler import stage

    monkeypatch.setattr(stage, "superseded", lambda *a: None)
    with pytest.raises(FileNotFoundError):
        stale.stale_write_case(open_store(tmp_path / "s"), stale.KINDS["run record created"])


def test_a_superseded_record_with_every_chunk_still_there_is_resumed_not_voided(tmp_path: Path) -> None:
    """A record of an older fence whose chunks are all there is an interrupted run (chunks go only once it is
    done): resumed, never voided; nor is a record of the current fence."""
    from ldp.shuffler.stage import superseded

    store = open_store(tmp_path / "s")
    stale.scenario(store)
    chunks = store.list("apps/demo/incoming/")
    rec = {"fence": 1, "chunks": chunks}
    newer = type("F", (), {"fence": 2, "exists": store.exists})()
    assert superseded(newer, "demo", rec) is None
    store.delete(chunks[0])
    assert "1 of its 3 chunks are gone" in str(superseded(newer, "demo", rec))
    same = type("F", (), {"fence": 1, "exists": store.exists})()
    assert superseded(same, "demo", rec) is None


distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler(dask_scheduler: str) -> str:
    """The session's cluster (tests/conftest.py: 2 worker processes, one thread and 1 GiB each)."""
    return dask_scheduler


DASK_ON_S3 = ("run record created", "segment created", "staging record", "window marker")
"""The kinds also tried on S3 with the Dask engine (the others write through the same code as the local engine's,
tried on S3 above): a Dask run costs seconds, and the suite's time is shared."""


@pytest.mark.parametrize("kind, where", [(k, "local") for k in stale.DASK_KINDS] + [(k, "s3") for k in DASK_ON_S3])
def test_every_stale_write_of_the_dask_engine_is_harmless(kind: str, where: str, scheduler: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    if where == "local":
        store = open_store(tmp_path / "store")
    else:
        s3: Any = request.getfixturevalue("s3")
        store = open_store(f"{s3.bucket('ldp-stale-writes')}/d{time.monotonic_ns()}", s3.options())
    case = stale.stale_write_case(store, stale.DASK_KINDS[kind], engine="dask", scheduler=scheduler)
    assert case["failures"] == []
    assert [r["state"] for r in case["records"]].count("void") == (kind == "run record created")


def test_a_workers_late_staging_write_is_removed_and_read_by_none(tmp_path: Path, scheduler: str) -> None:
    """A Dask worker writes without the lease, under its run's own staging prefix only: a part or an ids object of
    a stale run landing after its run was finished (or voided) is read by no run (only a marker the lease holder
    wrote names a part) and removed by the next run's prune; the segments do not change."""
    from ldp.shuffler import shuffle_app

    store = open_store(tmp_path / "store")
    case = stale.stale_write_case(store, stale.DASK_KINDS["window marker"], engine="dask", scheduler=scheduler)
    assert case["failures"] == []
    before = {k: store.get(k) for k in store.list("apps/demo/segments/")}
    run_id = case["records"][0]["id"]
    for key in (f"apps/demo/shuffler/staging/{run_id}/0badc0de/1728000000-86400/00000-0badc0de.part",
                f"apps/demo/shuffler/staging/{run_id}/0badc0de/ids/3.ids"):
        store.put(key, b"late\n")  # as a stale worker would, after the run closed
    again = shuffle_app(store, "demo", now=stale.NOW + 600, min_reports=1, engine="dask", scheduler=scheduler)
    assert again.run_id is None and store.list("apps/demo/shuffler/staging/") == []
    assert {k: store.get(k) for k in store.list("apps/demo/segments/")} == before
