"""Each aggregator's store opened with its role: neither reads, writes, lists nor deletes the other's prefix (nor
anything of the collection's), whatever store they are given."""

from __future__ import annotations

from pathlib import Path

import pytest

from ldp.storage import open_store
from ldp.storage.roles import RoleStore, aggregator_prefix, aggregator_role


@pytest.mark.parametrize("me, other", [("leader", "helper"), ("helper", "leader")])
def test_an_aggregator_touches_its_own_prefix_only(tmp_path: Path, me: str, other: str) -> None:
    inner = open_store(tmp_path)
    inner.put(f"{aggregator_prefix(other)}t/jobs/job-x.json", b"{}")
    inner.put("apps/a/segments/s.jsonl", b"")
    store = RoleStore(inner, aggregator_role(me))
    mine = f"{aggregator_prefix(me)}t/jobs/job-y.json"
    assert store.create(mine, b"{}") and store.get(mine) == b"{}"
    assert store.list(aggregator_prefix(me)) == [mine]
    for op in (lambda: store.get(f"{aggregator_prefix(other)}t/jobs/job-x.json"),
               lambda: store.list(aggregator_prefix(other)),
               lambda: store.list(""),
               lambda: store.put(f"{aggregator_prefix(other)}t/x", b""),
               lambda: store.delete(f"{aggregator_prefix(other)}t/jobs/job-x.json"),
               lambda: store.get("apps/a/segments/s.jsonl")):
        with pytest.raises(PermissionError, match=f"the {me} aggregator"):
            op()


def test_only_two_roles() -> None:
    with pytest.raises(ValueError, match="leader or the helper"):
        aggregator_prefix("collector")
