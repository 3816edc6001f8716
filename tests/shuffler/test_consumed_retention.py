"""``ldp shuffle --originals-days``: the unshuffled chunks ``--keep-originals`` keeps under
``apps/<app>/shuffler/consumed/`` (batch ids, arrival windows, reports in arrival order) are deleted by every run once
their replica wrote them that long ago, kept before; a run without ``--keep-originals`` clears them too; a bad value
is refused (docs/privacy-rights.md)."""

from __future__ import annotations

from typing import Any

import pytest
from support import call_main
from test_stage import DAY, W0, batch, write

from ldp.shuffler import shuffle_app
from ldp.shuffler.consumed import chunk_time, consumed_prefix, prune_consumed
from ldp.storage import Store
from ldp.storage.local import LocalStore

CONSUMED = consumed_prefix("demo")


def test_kept_originals_stay_their_days_then_go(store: Store) -> None:
    first = write(store, "r1", 1, batch("a", 2), at=W0 + 60)
    shuffle_app(store, "demo", now=W0 + DAY + 400, keep_originals=True, min_reports=1, originals_seconds=3 * DAY)
    second = write(store, "r2", 1, batch("b", 2, window=W0 + DAY), at=W0 + DAY + 60)
    shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, keep_originals=True, min_reports=1, originals_seconds=3 * DAY)
    kept = [CONSUMED + k.split("/incoming/")[1] for k in (first, second)]
    assert store.list(CONSUMED) == kept
    # the first chunk was written at W0 + 60: kept through W0 + 60 + 3 days, gone after, the second still kept
    shuffle_app(store, "demo", now=W0 + 3 * DAY + 60, keep_originals=True, min_reports=1, originals_seconds=3 * DAY)
    assert store.list(CONSUMED) == kept
    run = shuffle_app(store, "demo", now=W0 + 3 * DAY + 61, min_reports=1, originals_seconds=3 * DAY)
    assert run.run_id is None and store.list(CONSUMED) == kept[1:]  # a run without --keep-originals clears too
    shuffle_app(store, "demo", now=W0 + 4 * DAY + 61, min_reports=1, originals_seconds=3 * DAY)
    assert store.list(CONSUMED) == []
    assert store.list("apps/demo/segments/closed/")  # what was mixed stays


def test_the_default_is_a_week_and_names_without_a_time_are_left(tmp_path) -> None:
    store = LocalStore(tmp_path / "s")
    key = write(store, "r1", 1, batch("a", 1), at=W0 + 60)
    shuffle_app(store, "demo", now=W0 + DAY + 400, keep_originals=True, min_reports=1)
    store.put(CONSUMED + "r1/README", b"not a chunk")
    shuffle_app(store, "demo", now=W0 + 7 * DAY + 60, min_reports=1)
    assert len(store.list(CONSUMED)) == 2
    shuffle_app(store, "demo", now=W0 + 7 * DAY + 61, min_reports=1)
    assert store.list(CONSUMED) == [CONSUMED + "r1/README"]
    assert chunk_time(key) == W0 + 60 and chunk_time("x/r1/README") is None and chunk_time("20241399T000000Z-") is None
    with pytest.raises(ValueError, match="before"):
        prune_consumed(store, "demo", float("nan"))


def test_bad_values_are_refused(tmp_path) -> None:
    store = LocalStore(tmp_path / "s")
    write(store, "r1", 1, batch("a", 1))
    bads: list[Any] = [0, -1.0, float("inf"), float("nan"), True, "7"]
    for bad in bads:
        with pytest.raises(ValueError, match="originals_seconds"):
            shuffle_app(store, "demo", now=W0 + DAY + 400, min_reports=1, originals_seconds=bad)
    for bad in ("0", "-2", "nan", "inf", "3651", "x"):
        code, out, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo",
                                    "--originals-days", bad])
        assert code == 2 and out == "" and err.splitlines()[-1].startswith("ldp shuffle: error: argument "
                                                                           "--originals-days: must be")
    assert store.list("apps/demo/shuffler/") == []  # refused before anything was written
    code, _, err = call_main(["shuffle", "--min-reports", "1", "--store", str(tmp_path / "s"), "--app", "demo",
                              "--originals-days", "0.5", "--keep-originals"])
    assert code == 0, err


def test_a_prune_that_lands_late_is_harmless(tmp_path) -> None:
    """The only store writes retention adds are deletes under ``consumed/``, which no run reads: a stale run's
    prune replayed after another run took over (its ``before`` older, the chunks already gone or newer) deletes
    nothing a current run kept within its retention, and replayed once more it finds nothing to delete."""
    store = LocalStore(tmp_path / "s")
    old = write(store, "r1", 1, batch("a", 1), at=W0 + 60)
    shuffle_app(store, "demo", now=W0 + DAY + 400, keep_originals=True, min_reports=1)
    new = write(store, "r2", 1, batch("b", 1, window=W0 + DAY), at=W0 + DAY + 60)
    shuffle_app(store, "demo", now=W0 + 2 * DAY + 400, keep_originals=True, min_reports=1)
    # the taking-over run pruned the old chunk; then the stale run's prune, computed at an earlier time, lands
    assert prune_consumed(store, "demo", W0 + 61 + DAY // 2) == [CONSUMED + old.split("/incoming/")[1]]
    assert prune_consumed(store, "demo", W0 + 61) == []  # late: the same cut again, nothing left to delete
    assert store.list(CONSUMED) == [CONSUMED + new.split("/incoming/")[1]]  # the newer chunk is within its days
    assert store.list("apps/demo/segments/closed/")  # and what was mixed is never touched
