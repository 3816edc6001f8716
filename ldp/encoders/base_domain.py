"""A fixed domain of values named by an index or a label: the parameters' :class:`LabeledDomain` and the
encoders' :class:`DomainPrepare`, shared by GRR, the unary encodings, local hashing, Hadamard Response and
Subset Selection. Re-exported by :mod:`ldp.encoders.base`."""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

from ldp.errors import RefusalTypeError, RefusalValueError, kind_of

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
            raise RefusalTypeError(f"labels must be a list of domain_size={self.domain_size} distinct strings (or "
                                   f"None), got {type(self.labels).__name__}", "param_type", param="labels",
                                   expected="labels", got=kind_of(self.labels))
        labels = tuple(self.labels)
        if len(labels) != self.domain_size:
            raise RefusalValueError(f"labels must have domain_size={self.domain_size} entries, got {len(labels)}",
                                    "param_length", param="labels", got=len(labels), min=self.domain_size,
                                    max=self.domain_size)
        if bad := [i for i, s in enumerate(labels) if not isinstance(s, str)]:
            raise RefusalTypeError("labels must be strings", "param_type", param="labels", expected="string",
                                   got=kind_of(labels[bad[0]]), index=bad[0])
        if len(set(labels)) != len(labels):
            raise RefusalValueError("labels must be distinct", "param_relation", params=["labels"], rule="distinct")
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
                raise RefusalValueError(f"value {value!r} is not one of the {d} declared labels", "unknown_label",
                                        got=value) from None
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < d:
                raise RefusalValueError(f"value index must be in [0, {d}), got {value}", "value_range", got=value,
                                        min=0, max=d, max_exclusive=True)
            return value
        kind = "a label or an int index" if self.labels is not None else "an int index in [0, domain_size)"
        raise RefusalTypeError(f"{self.protocol} values must be {kind}, got {type(value).__name__}", "value_type",
                               expected="label_or_index" if self.labels is not None else "index",
                               got=kind_of(value))

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
