"""The store split by role (issue 57): who may touch which prefix of a collection's store, enforced in the code.

Whoever can read the store can undo the shuffle — the unshuffled chunks, their batch ids and arrival times, the
shuffler's run records and dedup index — so a collection's store is three prefixes per app, each for one role:

=================================  ==============================  ===========================================
prefix                             written by                      read by
=================================  ==============================  ===========================================
``apps/<app>/incoming/<replica>/``  that replica (create only)      the shuffler (then deleted)
``replicas/<replica>/``             that replica (its claim)        that replica
``apps/<app>/shuffler/``            the shuffler (lease, runs,      the shuffler
                                    dedup index, staging, kept
                                    originals)
``apps/<app>/segments/``            the shuffler (create only)      analysts (``ldp fold``, an ingest service's
                                                                    ``[storage] watch``)
``aggregators/leader/``             the two-aggregator mode's       the leader only
                                    leader (its own store)
``aggregators/helper/``             the helper (its own store)      the helper only
=================================  ==============================  ===========================================

Nothing under ``segments/`` names a batch, a replica, a chunk or an arrival time finer than the window: a segment is
``<UTC window start>-<random>-f<shuffler fence>[-p<part>].jsonl`` and holds canonical report lines only.

:class:`RoleStore` wraps a store for one role and refuses, before any request, an operation outside it
(:class:`PermissionError` naming the role, the operation and the key): the replica, the shuffler and the
analysts' readers each open the store through it, so a code path that strays (``--keep-originals`` writing beside
the segments, a reader listing ``incoming/``) fails in every deployment, not only in one with IAM policies. The IAM
policies of ``docs/scale-out.md`` state the same split to the object store (tested on moto with its IAM
enforcement).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO

from ldp.storage.base import ObjectStat, Store, StoreWrapper

__all__ = ["Role", "RoleStore", "replica_role", "shuffler_role", "analyst_role", "incoming", "shuffler_prefix",
           "segments_prefix", "AGGREGATOR_ROLES", "aggregator_prefix", "aggregator_role"]


def incoming(app: str, replica: str | None = None) -> str:
    """``apps/<app>/incoming/`` (every replica's chunks), or one replica's."""
    return f"apps/{app}/incoming/" + (f"{replica}/" if replica else "")


def shuffler_prefix(app: str) -> str:
    """``apps/<app>/shuffler/``: the shuffler's own (lease, runs, seen, staging, consumed)."""
    return f"apps/{app}/shuffler/"


def segments_prefix(app: str) -> str:
    """``apps/<app>/segments/``: what analysts read."""
    return f"apps/{app}/segments/"


@dataclass(frozen=True)
class Role:
    """A role's prefixes per kind of operation: ``read`` (get, stat, open, exists, list), ``write`` (put,
    create), ``remove`` (delete). A prefix may hold ``*`` for one path segment (``apps/*/incoming/r1/``: every app)."""

    name: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()

    def allows(self, op: str, key: str) -> bool:
        """Whether ``op`` (``read``, ``write``, ``remove``) of ``key`` (or listing the prefix ``key``) is this
        role's."""
        return any(_pattern(p).match(key) for p in getattr(self, op))


def _pattern(prefix: str) -> re.Pattern[str]:
    return re.compile("".join("[^/]+" if part == "*" else re.escape(part) for part in re.split(r"(\*)", prefix)))


def replica_role(replica: str) -> Role:
    """An ingest service replica's: its chunks of any app (created, never read back) and its own claim."""
    own = f"replicas/{replica}/"
    return Role(f"replica {replica}", read=(own,), write=(own, f"apps/*/incoming/{replica}/"), remove=(own,))


def shuffler_role(app: str) -> Role:
    """The shuffler's of ``app``: the replicas' chunks (read, then removed), its own prefix, segments created."""
    mine = shuffler_prefix(app)
    return Role(f"shuffler of {app}", read=(incoming(app), mine), write=(mine, segments_prefix(app)),
                remove=(incoming(app), mine))


def analyst_role(app: str | None = None) -> Role:
    """An analyst's (of ``app``, or of every app): segments, read only."""
    return Role(f"analyst of {app or 'every app'}", read=(segments_prefix(app or "*"),))


AGGREGATOR_ROLES = ("leader", "helper")
"""The two aggregators of the two-aggregator mode (:mod:`ldp.aggregators`)."""


def aggregator_prefix(role: str) -> str:
    """``aggregators/<role>/``: everything one aggregator keeps (its reports, jobs, collections)."""
    if role not in AGGREGATOR_ROLES:
        raise ValueError(f"an aggregator is the leader or the helper, got {role!r}")
    return f"aggregators/{role}/"


def aggregator_role(role: str) -> Role:
    """The leader's or the helper's: its own prefix, and nothing else: neither reads the other's shares, even when
    both are given one store (each normally has its own store and credentials, in its own organisation)."""
    mine = aggregator_prefix(role)
    return Role(f"{role} aggregator", read=(mine,), write=(mine,), remove=(mine,))


class RoleStore(StoreWrapper):
    """``store`` as ``role`` may use it: every operation outside the role's prefixes is refused before it is sent
    (:class:`PermissionError`). Listing is allowed for a prefix the role reads, or one inside it. What is not an
    operation on objects (:meth:`spec`, :meth:`retention_warning`, :meth:`unwrap`: the store without the role's
    checks, for the code that owns it) is the inner store's."""

    def __init__(self, store: Store, role: Role) -> None:
        super().__init__(store)
        self.role = role

    def _check(self, op: str, key: str, verb: str) -> None:
        if not self.role.allows(op, key):
            allowed = ", ".join(getattr(self.role, op)) or "nothing"
            raise PermissionError(f"the {self.role.name} does not {verb} {key!r} in {self.url}: outside its prefixes "
                                  f"({verb}: {allowed}); the store is split by role (docs/scale-out.md)")

    def put(self, key: str, data: bytes) -> None:
        self._check("write", key, "write")
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        self._check("write", key, "write")
        return self.inner.create(key, data)

    def get(self, key: str) -> bytes:
        self._check("read", key, "read")
        return self.inner.get(key)

    def stat(self, key: str) -> ObjectStat:
        self._check("read", key, "read")
        return self.inner.stat(key)

    def open(self, key: str) -> BinaryIO:
        self._check("read", key, "read")
        return self.inner.open(key)

    def exists(self, key: str) -> bool:
        self._check("read", key, "read")
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> list[str]:
        self._check("read", prefix, "list")
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self._check("remove", key, "delete")
        self.inner.delete(key)

    def __repr__(self) -> str:
        return f"RoleStore({self.inner!r}, {self.role.name})"
