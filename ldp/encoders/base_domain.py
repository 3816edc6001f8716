"""A fixed domain of values named by an index or a label: the parameters' :class:`LabeledDomain` and the
encoders' :class:`DomainPrepare`, shared by GRR, the unary encodings, local hashing, Hadamard Response and
Subset Selection. Re-exported by :mod:`ldp.encoders.base`."""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

__all__ = ["LabeledDomain", "DomainPrepare"]


class LabeledDomain:
    """A fixed domain of ``domain_size`` values, optionally named by distinct string ``labels``: what GRR,
    the unary encodings, local hashing, Hadamard Response and Subset Selection share. A value is a label
    (when there are labels) or an int index in ``[0, domain_size)``."""

    domain_size: int
    labels: tuple[str, ...] | None
    protocol: ClassVar[str]

    def _check_labels(self) -> None:
        """``labels`` (if any): ``domain_size`` distinct strings, stored as a tuple."""
        if self.labels is None:
            return
        if not isinstance(self.labels, (list, tuple)):
            raise TypeError(f"labels must be a list of domain_size={self.domain_size} distinct strings (or None), "
                            f"got {type(self.labels).__name__}")
        labels = tuple(self.labels)
        if len(labels) != self.domain_size:
            raise ValueError(f"labels must have domain_size={self.domain_size} entries, got {len(labels)}")
        if not all(isinstance(s, str) for s in labels):
            raise TypeError("labels must be strings")
        if len(set(labels)) != len(labels):
            raise ValueError("labels must be distinct")
        object.__setattr__(self, "labels", labels)

    @property
    def aggregate_cells(self) -> int:
        return self.domain_size

    @cached_property
    def _index(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels or ())}

    def index_of(self, value: Any) -> int:
        """Domain index of a label (or of an int index), with a clear error outside the domain."""
        d = self.domain_size
        if isinstance(value, str) and self.labels is not None:
            try:
                return self._index[value]
            except KeyError:
                raise ValueError(f"value {value!r} is not one of the {d} declared labels") from None
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < d:
                raise ValueError(f"value index must be in [0, {d}), got {value}")
            return value
        kind = "a label or an int index" if self.labels is not None else "an int index in [0, domain_size)"
        raise TypeError(f"{self.protocol} values must be {kind}, got {type(value).__name__}")

    def label_of(self, index: int) -> str:
        return self.labels[index] if self.labels is not None else str(index)


class DomainPrepare:
    """``prepare`` for an encoder of a :class:`LabeledDomain`: the value's index, an in-range int checked inline
    (the common case), anything else through ``params.index_of`` (labels, clear errors). Listed before
    :class:`Encoder` in the bases."""

    params: Any

    def prepare(self, value: Any) -> int:
        if type(value) is int and 0 <= value < self.params.domain_size:
            return value
        index: int = self.params.index_of(value)
        return index
