"""The store contract (issue 70, item 5): the checks every :class:`~ldp.storage.Store` passes, in the spirit of
scikit-learn's ``check_estimator``. A new backend (or a new S3-compatible server, a new emulator) runs::

    from ldp.storage.checks import check_store
    check_store(lambda: open_store(f"az://container/t{uuid4().hex}", options))            # a fresh empty store each
    check_store(make_store, outage=relay.down_for_a_while)                               # and with the service down

:func:`check_store` runs every check, each on a fresh store from ``make_store()``, and raises one
``AssertionError`` naming every check that failed (the first failure chained). :func:`store_checks` lists them, for
a test suite to parametrize over (``@pytest.mark.parametrize("check", store_checks(), ids=str)`` then
``check(make_store)``). Library code: the standard library and :mod:`ldp.storage` only, no ``pytest``. The checks
are written in :mod:`ldp.storage.check_objects` (the object operations) and :mod:`ldp.storage.check_layers` (the
lease and the roles on top), and re-exported here.

**The checks** (:data:`CHECKS`, in order; what the store declares in :attr:`Store.capabilities` is checked, never
assumed):

* ``interface``: every member of :class:`~ldp.storage.Store` is there; :attr:`~Store.capabilities`,
  :meth:`~Store.spec` (its URL), :meth:`~Store.unwrap`, :meth:`~Store.retention_warning`, ``fence``/``lease``;
  the store starts empty; :meth:`~Store.root_exists` once an object is written.
* ``round_trip``: put, get (empty and binary objects), exists, delete (twice: nothing there is no error), a missing
  key ``FileNotFoundError``.
* ``list``: keys sorted (code-point order, as S3 and Azure list), by prefix — with or without its ``/``, a prefix is
  whole parts (``a/`` does not list ``ab``), an unknown one lists nothing.
* ``stat``: size and time of an object; a missing key and a prefix are ``FileNotFoundError``; an ETag where
  declared.
* ``create_exclusive``: create, then create again refused (``False``, the first bytes kept); again after delete.
* ``create_race``: :data:`RACERS` threads create one key at once, three times over: exactly one wins each time and
  the object holds the winner's bytes.
* ``overwrite``: put replaces (content and size).
* ``versions``: where declared, the version changes whenever other content is put; etags likewise.
* ``streaming_read``: ``open`` reads an object over several :data:`~ldp.storage.READ_BLOCK` blocks, in pieces, the
  same bytes; the stream closes with ``with``; a missing key or a prefix is ``FileNotFoundError``.
* ``pinned_read``: an object of two and a half blocks replaced after the first byte is read: on a store declaring
  ``pinned_reads`` the read fails with :class:`~ldp.errors.StorageError`; on any store it never returns a mixture of
  the two versions.
* ``keys``: :func:`~ldp.storage.check_key` refusals on every write (``..``, empty parts, hidden names, NUL, …),
  :func:`~ldp.storage.check_read_key` refusals on every read and listing, as ``ValueError`` and before anything is
  written; valid keys of every allowed character round trip.
* ``outage`` (only given ``outage``: a callable returning a context manager inside which the service is
  unreachable): every operation raises :class:`~ldp.errors.StorageError` — not ``FileNotFoundError``, not a bug's
  exception, not an answer — and the store works again afterwards.
* ``lease``: :class:`~ldp.storage.lease.Lease` on the store, with fake clocks: acquire; a second holder refused
  naming the first; taken over once expired (the old holder's writes through a
  :class:`~ldp.storage.lease.FencedStore` then refused); :meth:`~ldp.storage.lease.Lease.check_exclusive`; four
  holders at once, exactly one wins.
* ``roles``: :class:`~ldp.storage.roles.RoleStore` refuses each role what is not its own before anything reaches
  the store, and lets each do its job (a replica creates a chunk, the shuffler reads it and creates a segment, an
  analyst reads the segment).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ldp.storage.base import Store
from ldp.storage.check_layers import check_lease, check_roles
from ldp.storage.check_objects import (
    BAD_READ_KEYS,
    BAD_WRITE_KEYS,
    GOOD_KEYS,
    RACERS,
    Outage,
    check_create_exclusive,
    check_create_race,
    check_interface,
    check_keys,
    check_list,
    check_outage,
    check_overwrite,
    check_pinned_read,
    check_round_trip,
    check_stat,
    check_streaming_read,
    check_versions,
    expect,
)

__all__ = ["BAD_READ_KEYS", "BAD_WRITE_KEYS", "CHECKS", "GOOD_KEYS", "RACERS", "Outage", "StoreCheck",
           "check_create_exclusive", "check_create_race", "check_interface", "check_keys", "check_lease", "check_list",
           "check_outage", "check_overwrite", "check_pinned_read", "check_roles", "check_round_trip", "check_stat",
           "check_store", "check_streaming_read", "check_versions", "store_checks"]

MakeStore = Callable[[], Store]
"""Returns a fresh, empty store (a new prefix of a bucket, a new folder) at each call."""


@dataclass(frozen=True)
class StoreCheck:
    """One check of the contract: ``check(make_store, outage=None)`` runs it on a fresh store (``AssertionError``
    naming the check on failure); ``str`` is its name."""

    name: str
    function: Callable[..., None]
    needs_outage: bool = False

    def __call__(self, make_store: MakeStore, outage: Outage | None = None) -> None:
        if self.needs_outage and outage is None:
            raise ValueError(f"the {self.name} check needs a way to make the service unavailable (outage=...)")
        store = make_store()
        try:
            expect(store.list() == [], "make_store() must return an empty store, got one holding "
                    f"{store.list()[:5]}")
            if self.needs_outage:
                self.function(store, outage)
            else:
                self.function(store)
        except AssertionError as exc:
            raise AssertionError(f"store check {self.name} failed on {store.url}: {exc}") from exc
        except Exception as exc:
            raise AssertionError(f"store check {self.name} failed on {store.url}: {type(exc).__name__}: {exc}"
                                 ) from exc

    def __str__(self) -> str:
        return self.name


CHECKS: tuple[StoreCheck, ...] = (
    StoreCheck("interface", check_interface), StoreCheck("round_trip", check_round_trip),
    StoreCheck("list", check_list), StoreCheck("stat", check_stat),
    StoreCheck("create_exclusive", check_create_exclusive), StoreCheck("create_race", check_create_race),
    StoreCheck("overwrite", check_overwrite), StoreCheck("versions", check_versions),
    StoreCheck("streaming_read", check_streaming_read), StoreCheck("pinned_read", check_pinned_read),
    StoreCheck("keys", check_keys), StoreCheck("outage", check_outage, needs_outage=True),
    StoreCheck("lease", check_lease), StoreCheck("roles", check_roles))
"""Every check, in the order :func:`check_store` runs them."""


def store_checks(*, outage: bool = True) -> list[StoreCheck]:
    """The checks, for a test suite's parametrization (``ids=str``); without ``outage``, those that need no way to
    make the service unavailable."""
    return [c for c in CHECKS if outage or not c.needs_outage]


def check_store(make_store: MakeStore, *, outage: Outage | None = None) -> list[str]:
    """Run every check (:data:`CHECKS`; ``outage`` only when given), each on a fresh empty store from
    ``make_store()``; the names of the checks run. ``AssertionError`` naming every check that failed, with its
    message (the first failure chained)."""
    failures: list[tuple[str, AssertionError]] = []
    ran = []
    for check in store_checks(outage=outage is not None):
        ran.append(check.name)
        try:
            check(make_store, outage)
        except AssertionError as exc:
            failures.append((check.name, exc))
    if failures:
        names = ", ".join(name for name, _ in failures)
        lines = "\n".join(f"  {exc}" for _, exc in failures)
        raise AssertionError(f"{len(failures)} of {len(ran)} store checks failed ({names}):\n{lines}"
                             ) from failures[0][1]
    return ran
