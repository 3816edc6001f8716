"""Group commit: every item written exactly once, in batches that grow with concurrency, failures handed to the
submitters of the failed batch only."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ldp.aggregators.commit import GroupCommit


def test_every_item_written_once_and_batched_under_concurrency() -> None:
    batches: list[list[int]] = []
    gate = threading.Event()

    def write(items: list[int]) -> None:
        if not batches:
            gate.wait(5)  # the first write is slow: the others queue behind it
        batches.append(items)

    commit = GroupCommit(write)
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(commit.submit, i) for i in range(64)]
        gate.set()
        for f in futures:
            f.result()
    assert sorted(i for b in batches for i in b) == list(range(64))
    assert len(batches) < 64


def test_a_failed_write_fails_its_batch_only() -> None:
    def write(items: list[int]) -> None:
        if 13 in items:
            raise OSError("disk full")

    commit = GroupCommit(write, max_items=1)
    with pytest.raises(OSError, match="disk full"):
        commit.submit(13)
    commit.submit(14)
    with pytest.raises(ValueError):
        GroupCommit(write, max_items=0)


def test_a_write_that_gives_each_items_outcome_fails_those_items_alone() -> None:
    """A batch whose write refuses some items (a report uploaded twice at once: the copies after the first) fails
    exactly those submitters; the others return. A write giving the wrong number of outcomes fails its batch."""
    from concurrent.futures import ThreadPoolExecutor

    gate = threading.Event()
    batches: list[list[int]] = []

    def write(items: list[int]) -> list[BaseException | None]:
        if not batches:
            gate.wait(5)  # the first write is slow: the others queue behind it, into one batch
        batches.append(items)
        return [KeyError(i) if i % 2 else None for i in items]

    commit = GroupCommit(write)
    with ThreadPoolExecutor(8) as pool:
        futures = {i: pool.submit(commit.submit, i) for i in range(32)}
        gate.set()
        for i, f in futures.items():
            if i % 2:
                with pytest.raises(KeyError):
                    f.result()
            else:
                assert f.result() is None
    assert len(batches) < 32

    short = GroupCommit(lambda items: [None] * (len(items) - 1))
    with pytest.raises(RuntimeError, match="outcomes"):
        short.submit(1)
