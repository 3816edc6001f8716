"""A run that always fails is not retried forever (issue 70, item 2): its record counts its attempts and keeps its
last failures; after ``max_resumptions`` failed resumptions it is set aside with its reason, its chunks left where
they are and out of later plans, so the app's other windows go on; ``ldp shuffle`` reports it at every run, and
``--retry RUN`` puts it back."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import call_main
from test_stage import DAY, W0, batch, outputs, write

from ldp.shuffler import shuffle_app
from ldp.storage import Store
from ldp.storage.local import LocalStore

RUNS = "apps/demo/shuffler/runs/"


class Broken:
    """A store whose segment writes fail with a bug-like error (not a store failure) while :attr:`broken`."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.url, self.broken = inner, inner.url, True

    def create(self, key: str, data: bytes) -> bool:
        if self.broken and "/segments/closed/" in key:
            raise RuntimeError("a segment write that always fails")
        return self.inner.create(key, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def records(store: Store) -> list[dict[str, Any]]:
    return [json.loads(store.get(k)) for k in store.list(RUNS)]


def test_a_run_that_always_fails_is_set_aside_and_the_other_windows_go_on(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path / "s")
    store = Broken(inner)
    write(inner, "r1", 1, batch("a", 3), batch("b", 2))
    now = W0 + DAY + 400
    for attempt in range(1, 5):  # the first try, then three resumptions: each fails and is counted
        with pytest.raises(RuntimeError, match="always fails"):
            shuffle_app(store, "demo", now=now + attempt, min_reports=1, max_resumptions=3)  # type: ignore[arg-type]
        (rec,) = records(inner)
        assert rec["state"] == "started" and rec["attempts"] == attempt
        assert [f["attempt"] for f in rec["failures"]] == list(range(1, attempt + 1))[-5:]
    write(inner, "r2", 1, batch("c", 4, window=W0 + DAY), at=W0 + DAY + 10)  # the next day's reports
    run = shuffle_app(inner, "demo", now=W0 + 2 * DAY + 400, min_reports=1, max_resumptions=3)
    (aside,) = run.set_aside
    assert "4 attempts did not finish it" in run.set_aside[aside] and "always fails" in run.set_aside[aside]
    assert [w["reports"] for w in run.windows.values()] == [4]  # the other window went on
    assert len(inner.list("apps/demo/incoming/")) == 1  # the set-aside run's chunk waits where it was
    again = shuffle_app(inner, "demo", now=W0 + 2 * DAY + 500, min_reports=1)
    assert again.run_id is None and list(again.set_aside) == [aside]  # reported at every run, not tried
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo"])
    assert code == 0 and f"run {aside} is set aside" in err and f"--retry {aside}" in err
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo",
                              "--retry", "nope"])
    assert code == 2 and "no set-aside shuffler run nope" in err
    code, out, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo",
                                "--retry", aside, "--grace", "0"])  # the cause fixed: put back, finished
    assert code == 0 and f"finished the interrupted run {aside}" in out, err
    rec = next(r for r in records(inner) if r["id"] == aside)
    assert rec["state"] == "closed" and rec["retried"][0]["state"] == "started" and rec["attempts"] == 1
    got = Counter(ln for data in outputs(inner).values() for ln in data.splitlines())
    assert got == Counter((batch("a", 3).lines + batch("b", 2).lines + batch("c", 4).lines).splitlines())
    assert inner.list("apps/demo/incoming/") == []


def test_a_run_killed_every_time_is_set_aside_too(tmp_path: Path) -> None:
    """Its process dies each time (no failure recorded): the attempts counted before each try still add up."""
    from test_stage import Dying, Killed

    from ldp.shuffler.stage import shuffler_lease

    inner = LocalStore(tmp_path / "s")
    write(inner, "r1", 1, batch("a", 3))
    for attempt in range(2):
        with pytest.raises(Killed):  # dies at its first write after the record (or the attempts' update)
            shuffle_app(Dying(inner, 1), "demo", now=W0 + DAY + 400 + attempt,  # type: ignore[arg-type]
                        lease=shuffler_lease(inner, "demo"), min_reports=1, max_resumptions=1)
    (rec,) = records(inner)
    assert rec["attempts"] == 2 and "failures" not in rec  # the first try and one resumption
    run = shuffle_app(inner, "demo", now=W0 + DAY + 500, min_reports=1, max_resumptions=1)
    assert "2 attempts did not finish it (each process stopped: killed?)" in run.set_aside[rec["id"]]


def test_max_resumptions_is_checked() -> None:
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="max_resumptions"):
            shuffle_app(LocalStore(Path("/nonexistent")), "demo", min_reports=1, max_resumptions=bad)  # type: ignore


def test_the_dashboard_says_a_run_is_set_aside_and_nothing_finer(tmp_path: Path) -> None:
    """The status the shuffler publishes beside the segments: the fold of a replica that serves the dashboard turns
    it into a warning (run, attempts, error class, windows by day); it names no chunk, replica or batch; put back
    and finished, the warning goes."""
    from support import ROOT

    from ldp.ingest.watch import fold_app
    from ldp.pipeline.status import status_key
    from ldp.spec import CollectionSpec

    inner = LocalStore(tmp_path / "s")
    write(inner, "r1", 1, batch("a", 3))
    for attempt in range(2):
        with pytest.raises(RuntimeError):
            shuffle_app(Broken(inner), "demo", now=W0 + DAY + 400 + attempt, min_reports=1,  # type: ignore[arg-type]
                        max_resumptions=1)
    run = shuffle_app(inner, "demo", now=W0 + DAY + 500, min_reports=1, max_resumptions=1)
    (aside,) = run.set_aside
    status = inner.get(status_key("demo"))
    assert b"incoming" not in status and b"r1" not in status and b"chunk" not in status
    spec = CollectionSpec.load(ROOT / "examples" / "collection.json")
    doc = fold_app(tmp_path / "data", "demo", [spec], store=(f"file://{tmp_path / 's'}", {}))
    (warning,) = [w for w in doc["warnings"] if "set aside" in w]
    assert aside in warning and "after 2 attempts (RuntimeError)" in warning and "2024-10-04" in warning
    assert f"ldp shuffle --retry {aside}" in warning
    shuffle_app(inner, "demo", now=W0 + DAY + 600, min_reports=1, retry=[aside])
    assert json.loads(inner.get(status_key("demo")))["set_aside"] == []
    doc = fold_app(tmp_path / "data", "demo", [spec], store=(f"file://{tmp_path / 's'}", {}))
    assert not [w for w in doc["warnings"] if "set aside" in w]
