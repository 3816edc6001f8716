"""A histogram's buckets: the ``edges`` (checked), each bucket's label, the bucket of a number (or a clear
error), and what the histogram protocols' params share (``_Buckets``). Re-exported by
:mod:`ldp.encoders.histogram` (its docstring says how numbers fall into buckets)."""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, ClassVar, Self

from ldp.encoders.base_checks import check_bool, refuse_range, refuse_relation, refuse_type
from ldp.errors import RefusalValueError
from ldp.reports import Field, Report, ReportError

__all__ = ["MAX_BUCKETS", "check_edges", "bucket_labels", "bucket_index"]

MAX_BUCKETS = 1 << 15
"""Most buckets a histogram may have (its edges must fit an aggregate file's 1 MiB header)."""


def check_edges(edges: Any) -> tuple[float, ...]:
    """``edges`` as a tuple of floats: at least 3 (2 buckets), finite, strictly increasing."""
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Sequence):
        raise refuse_type(f"edges must be a sequence of numbers, got {type(edges).__name__}", edges, "list", "edges")
    if not 3 <= len(edges) <= MAX_BUCKETS + 1:
        raise RefusalValueError(f"edges must have between 3 and {MAX_BUCKETS + 1} entries (2 to {MAX_BUCKETS} "
                                f"buckets), got {len(edges)}", "param_length", param="edges", got=len(edges), min=3,
                                max=MAX_BUCKETS + 1)
    out: list[float] = []
    for i, e in enumerate(edges):
        if isinstance(e, bool) or not isinstance(e, numbers.Real):
            raise refuse_type(f"edges must be real numbers, got {type(e).__name__} at position {i}", e, "float",
                              "edges", index=i)
        f = float(e)
        if not math.isfinite(f):
            raise refuse_range(f"edges must be finite, got {e!r} at position {i}", e, "edges", finite=True, index=i)
        if out and f <= out[-1]:
            raise refuse_relation(f"edges must be strictly increasing, got {out[-1]!r} then {f!r} at position {i}",
                                  "edges_increasing", "edges")
        out.append(f)
    return tuple(out)


def _edge_text(e: float) -> str:
    return str(int(e)) if e.is_integer() and abs(e) < 1e16 else repr(e)


def bucket_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """``"[a, b)"`` for each bucket, ``"[a, b]"`` for the last (closed) one."""
    k = len(edges) - 1
    return tuple(f"[{_edge_text(edges[i])}, {_edge_text(edges[i + 1])}{']' if i == k - 1 else ')'}"
                 for i in range(k))


def bucket_index(edges: Sequence[float], value: Any, clip: bool) -> int:
    """The bucket of a real ``value`` (``TypeError``/``ValueError`` naming the rule otherwise)."""
    if type(value) is float and edges[0] <= value <= edges[-1]:  # the common case: finite, in range
        return min(bisect.bisect_right(edges, value) - 1, len(edges) - 2)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise refuse_type(f"histogram values must be real numbers, got {type(value).__name__}", value, "float")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int or Fraction beyond a double's range is finite
        finite = True
    if not finite:
        raise refuse_range(f"histogram values must be finite, got {value!r}", value, min=edges[0], max=edges[-1],
                           finite=True)
    k = len(edges) - 1
    below, above = value < edges[0], not value <= edges[k]  # exact comparisons, even for ints beyond 2^53
    if not (below or above):
        return min(bisect.bisect_right(edges, value) - 1, k - 1)
    if clip:
        return 0 if below else k - 1
    raise refuse_range(f"value {value!r} is outside the histogram's range [{edges[0]!r}, {edges[k]!r}] "
                       "(pass clip=True in the params to clip it)", value, min=edges[0], max=edges[k])


class _Buckets:
    """What both histogram protocols' params share: ``edges``, ``clip``, the buckets and their labels."""

    edges: tuple[float, ...]
    clip: bool
    refusal_rules: ClassVar[Mapping[str, str]] = {"edges_increasing": "the edges must be strictly increasing"}

    def _check_buckets(self) -> None:
        object.__setattr__(self, "edges", check_edges(self.edges))
        check_bool(self.clip, "clip")

    @cached_property
    def num_buckets(self) -> int:
        return len(self.edges) - 1

    @property
    def domain_size(self) -> int:
        return self.num_buckets

    @cached_property
    def labels(self) -> tuple[str, ...]:
        return bucket_labels(self.edges)

    def bucket_of(self, value: Any) -> int:
        """The bucket index of a number (see :func:`bucket_index`)."""
        return bucket_index(self.edges, value, self.clip)

    @classmethod
    def examples(cls) -> list[Self]:
        """Three buckets of unequal widths, and four (conformance suite)."""
        return [cls(1.0, (0.0, 1.0, 2.0, 4.0)), cls(2.0, (-1.0, 0.0, 0.5, 1.0, 3.0))]  # type: ignore[call-arg]

    def audit_inputs(self) -> list[float]:
        """The middle of every bucket: the numbers the client is given, one per bucket."""
        e = self.edges
        return [(e[i] + e[i + 1]) / 2 for i in range(self.num_buckets)]

    def batch_values(self, values: list[Any]) -> list[int]:
        """``encode_batch`` takes bucket indices (:meth:`bucket_of` of each number)."""
        return [self.bucket_of(v) for v in values]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> Self:
        """The planner's choice: ``ε`` over the buckets ``edges = 0, 1, …, domain_size``."""
        return cls(epsilon, tuple(range(domain_size + 1)))  # type: ignore[call-arg]  # each subclass's fields


class _SampledBits(_Buckets):
    """dBitFlip's wire, shared by ``dbitflip`` and ``memo-dbitflip``: ``sampled`` (``k`` bits, exactly ``d`` ones)
    and ``bits`` (``k`` bits, zero outside ``sampled``)."""

    d: int

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("sampled", "bits", self.num_buckets), Field("bits", "bits", self.num_buckets))

    @property
    def aggregate_cells(self) -> int:
        return 2 * self.num_buckets

    def validate(self, report: Report) -> None:
        """The schema's checks, then dBitFlip's rule: exactly ``d`` sampled buckets, no 1 outside them."""
        super().validate(report)  # type: ignore[misc]  # ProtocolParams.validate, next in the params' MRO
        sampled, bits = report.payload["sampled"], report.payload["bits"]
        assert not isinstance(sampled, int) and not isinstance(bits, int)  # bit strings: checked by the schema
        if sampled.count() != self.d:
            raise ReportError("bad_value", f"sampled must have exactly d={self.d} ones, got {sampled.count()}")
        if (bits & ~sampled).any():
            raise ReportError("bad_value", "bits has a 1 outside the sampled buckets")
