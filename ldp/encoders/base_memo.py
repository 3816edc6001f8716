"""A bounded least-recently-used memo of what a client recomputes per value: :class:`BoundedMemo`.
Re-exported by :mod:`ldp.encoders.base`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from ldp.encoders.base_checks import check_int

__all__ = ["BoundedMemo"]

_V = TypeVar("_V")


class BoundedMemo(Generic[_V]):
    """A least-recently-used map of at most ``entries`` items, for what a client recomputes per value
    (RAPPOR's Bloom filter and PRR, SFP's prepared word). Keys are ``str`` or ``bytes`` values of at
    most ``max_len`` characters or bytes; others are never stored (:meth:`get` misses, :meth:`put`
    ignores them), so the memory it holds is bounded by ``entries`` values of ``max_len``.
    Safe to share between threads (each step is one atomic ``OrderedDict`` operation)."""

    def __init__(self, entries: int, max_len: int) -> None:
        self.entries, self.max_len = check_int(entries, "entries", 1), check_int(max_len, "max_len", 0)
        self._items: OrderedDict[str | bytes, _V] = OrderedDict()

    def get(self, key: object) -> _V | None:
        """The item stored for ``key`` (now the most recent), or ``None``."""
        if type(key) is not str and type(key) is not bytes:  # exact types: a subclass may redefine equality
            return None
        item = self._items.get(key)
        if item is not None:
            try:
                self._items.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile
                pass
        return item

    def put(self, key: object, item: _V) -> None:
        """Store ``item`` for ``key`` (if storable), evicting the least recently used beyond ``entries``."""
        if (type(key) is str or type(key) is bytes) and len(key) <= self.max_len:
            self._items[key] = item
            while len(self._items) > self.entries:
                try:
                    self._items.popitem(last=False)
                except KeyError:  # emptied by another thread meanwhile
                    break

    def __len__(self) -> int:
        return len(self._items)
