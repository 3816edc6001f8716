"""The declared store interface (issue 70, item 4): every member a caller uses is on :class:`~ldp.storage.Store`,
what a store can do is declared (:class:`~ldp.storage.Capabilities`), and the wrappers (a role's store, a fenced
store) implement the protocol explicitly — forwarding each member, never ``__getattr__``."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from ldp.storage import Capabilities, Store, StoreSpec, StoreWrapper, open_store
from ldp.storage.lease import FencedStore, Lease
from ldp.storage.local import LocalStore
from ldp.storage.roles import RoleStore, analyst_role, shuffler_role

MEMBERS = {"url", "capabilities", "options", "spec", "fence", "lease", "unwrap", "retention_warning", "put", "create",
           "get", "stat", "open", "exists", "list", "delete", "root_exists"}
"""What callers use (``ldp.shuffler``, ``ldp.ingest``, ``ldp.cli``, ``ldp.jobs``): each declared."""


def test_the_protocol_declares_every_member_callers_use() -> None:
    declared = {n for n in dir(Store) if not n.startswith("_")} | set(typing.get_type_hints(Store))
    assert MEMBERS <= declared, MEMBERS - declared


def wrapped(store: Store, tmp_path: Path) -> dict[str, Store]:
    role = RoleStore(store, shuffler_role("demo"))
    lease = Lease(store, "apps/demo/shuffler/lease/", "shuffler of demo")
    return {"plain": store, "role": role, "fenced": FencedStore(role, lease)}


def test_every_store_and_wrapper_has_every_member(store: Store, tmp_path: Path) -> None:
    for name, s in wrapped(store, tmp_path).items():
        assert isinstance(s, Store), name
        assert isinstance(s.capabilities, Capabilities) and s.capabilities == store.capabilities, name
        assert s.spec() == store.spec() and isinstance(s.spec(), StoreSpec), name
        assert s.unwrap() is store and s.url == store.url, name
        assert s.retention_warning("apps/demo/incoming/") is None, name  # a fresh folder, a bucket never versioned
        assert isinstance(s.options, dict), name
    assert store.fence is None and store.lease is None


def test_spec_opens_the_same_store(store: Store) -> None:
    store.put("a/b", b"1")
    again = open_store(*store.spec())
    assert type(again) is type(store) and again.url == store.url and again.get("a/b") == b"1"
    assert again.capabilities == store.capabilities and again.spec() == store.spec()
    assert store.capabilities.distributed


def test_a_folder_declares_what_it_does(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert store.options == {} and store.spec() == StoreSpec(f"file://{tmp_path.resolve()}", {})
    caps = store.capabilities
    assert caps.conditional_create and caps.versions and not caps.etags and not caps.pinned_reads
    assert caps.streaming_reads and caps.distributed


def test_object_storage_declares_by_protocol(s3: Any) -> None:
    store = open_store(f"{s3.bucket('ldp-stores')}/caps", s3.options())
    assert store.capabilities == Capabilities(conditional_create=True, versions=True, etags=True, pinned_reads=True,
                                              streaming_reads=True, distributed=True)
    assert store.options == s3.options() and store.spec() == StoreSpec("s3://ldp-stores/caps", s3.options())
    memory = open_store("memory://ldp-caps/x")
    assert not memory.capabilities.distributed and not memory.capabilities.versions  # one process's, time-stamped


def test_the_fenced_store_declares_its_lease_and_token(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    lease = Lease(store, "replicas/r1/lease/", "replica r1")
    fenced = FencedStore(store, lease)
    assert fenced.lease is lease and fenced.fence is None
    with lease.hold():
        assert fenced.fence == lease.token == 1
        fenced.put("replicas/r1/x", b"1")
    outer = RoleStore(fenced, analyst_role("demo"))  # a wrapper around the fenced store forwards both
    assert outer.lease is lease and outer.fence is None and outer.unwrap() is store


def test_wrappers_forward_nothing_implicitly(tmp_path: Path) -> None:
    """A member that is not declared is not there: no ``__getattr__`` hands a caller the inner store's internals."""
    store = LocalStore(tmp_path)
    for s in (RoleStore(store, analyst_role()), FencedStore(store, Lease(store, "l/", "x"))):
        assert isinstance(s, StoreWrapper) and s.inner is store
        assert not hasattr(type(s), "__getattr__")
        with pytest.raises(AttributeError):
            s.root  # type: ignore[attr-defined]  # noqa: B018
        with pytest.raises(AttributeError):
            s.sweep()  # type: ignore[attr-defined]


def test_a_role_store_still_checks_what_it_forwards(tmp_path: Path) -> None:
    analyst = RoleStore(LocalStore(tmp_path), analyst_role("demo"))
    with pytest.raises(PermissionError):
        analyst.stat("apps/demo/incoming/r1/a.chunk")
    with pytest.raises(PermissionError):
        analyst.create("apps/demo/segments/x", b"")
    assert analyst.root_exists() and analyst.unwrap().list("") == []  # the owner's own view, unchecked
