"""What each parameter of a protocol means and the ranges its check enforces: the declarations the parameter tables
are generated from (:mod:`ldp.conformance.param_tables`, into each other-language client's source, and the
protocol pages).

A params class declares :class:`ParamInfo` for its own fields in ``param_info``; a field it does not declare takes
:data:`COMMON_PARAMS`' entry of its name (ε, the domain, the labels, a numeric range, ...), so most classes declare
a few. ``ranges`` lists the checks of the field's value in the order the class's check makes them (each one a
``param_range`` refusal with exactly its :meth:`Range.fields`); a bound that follows from another parameter (``d``
at most the number of buckets) is :attr:`Range.dynamic`: the table names it in words and the client computes it.
``tests/conformance/test_param_tables.py`` checks every declaration against the check it describes. Standard
library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Range", "ParamInfo", "COMMON_PARAMS", "EPSILON", "PROBABILITY"]


@dataclass(frozen=True)
class Range:
    """One range check of a number (``param_range``): ``min`` ≤ x ≤ ``max`` (strict where ``min_exclusive``,
    ``max_exclusive``), and finite when ``finite``. ``dynamic``: the bound (``max`` unless said) follows from other
    parameters; ``min``/``max`` then hold only the static part, and ``dynamic`` says in words what the rest is."""

    min: int | float | None = None
    max: int | float | None = None
    min_exclusive: bool = False
    max_exclusive: bool = False
    finite: bool = False
    dynamic: str | None = None

    def fields(self) -> dict[str, Any]:
        """The bounds a ``param_range`` refusal of this check carries (those that apply; ``dynamic`` ones
        excluded)."""
        out: dict[str, Any] = {}
        for name in ("min", "max"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("min_exclusive", "max_exclusive", "finite"):
            if getattr(self, name):
                out[name] = True
        return out

    def holds(self, x: float) -> bool:
        """Whether ``x`` passes this check (its static part)."""
        if self.finite and not (x == x and abs(x) != float("inf")):
            return False
        if self.min is not None and (x <= self.min if self.min_exclusive else x < self.min):
            return False
        return not (self.max is not None and (x >= self.max if self.max_exclusive else x > self.max))


@dataclass(frozen=True)
class ParamInfo:
    """One parameter: what it means (``doc``: one sentence, no trailing period), its value's range checks, in
    order (:class:`Range`; empty for a parameter that is not a number or has no range of its own), and the strings it
    may be (``choices``, a ``param_choice`` refusal otherwise; empty when it is not a choice)."""

    doc: str
    ranges: tuple[Range, ...] = ()
    choices: tuple[str, ...] = ()


EPSILON = ParamInfo("the privacy budget ε of one report", (Range(min=0, min_exclusive=True, finite=True),))
"""An ε > 0, finite (:func:`~ldp.encoders.base_checks.check_epsilon`)."""

PROBABILITY = Range(min=0, max=1)
"""A probability's range, [0, 1]."""

_DOMAIN = Range(min=2, max=2**32)
_FINITE = Range(finite=True)

COMMON_PARAMS: Mapping[str, ParamInfo] = {
    "epsilon": EPSILON,
    "domain_size": ParamInfo("the number d of distinct values, reported as indices 0 … d − 1", (_DOMAIN,)),
    "labels": ParamInfo("the names of the d values, in index order, or null (values are then indices)"),
    "seed_range": ParamInfo("the number of hash seeds a report draws from (each seed names a hash function)",
                            (Range(min=1, max=2**32),)),
    "low": ParamInfo("the lowest value of the numeric range", (_FINITE,)),
    "high": ParamInfo("the highest value of the numeric range (above low)", (_FINITE,)),
    "clip": ParamInfo("whether a value outside the range is clipped to it (else refused)"),
    "edges": ParamInfo("the bucket edges, strictly increasing: bucket i holds [edges[i], edges[i + 1])"),
    "cells": ParamInfo("the number of cells of the server's histogram of the range", (Range(min=2, max=65536),)),
    "num_hashes": ParamInfo("the number k of hash functions (rows of the sketch)", (Range(min=1, max=65536),)),
    "width": ParamInfo("the width m of each row of the sketch", (Range(min=2, max=2**24),)),
    "truncate": ParamInfo("whether a value over the length limit is cut to it (else refused)"),
    "gamma": ParamInfo("the memoized response's flip probability γ of the second round (0: none)",
                       (PROBABILITY, Range(min=0, max=0.5, max_exclusive=True))),
}
"""The parameters many protocols share, by name: used where a class declares no :class:`ParamInfo` of its own."""
