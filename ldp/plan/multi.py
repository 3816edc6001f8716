"""The planner for several attributes per report (``multi``): split ε across the attributes or sample one.

Every number is :func:`ldp.decoders.multi.multi_variance`'s exact variance of each attribute's estimate in
both modes (a count: root mean square over the attribute's items, users spread uniformly over its values by
default; a mean: every user at the midpoint of its range by default), and the recommendation is
:func:`ldp.decoders.multi.recommend_mode`'s: the mode with the lower geometric mean over the attributes of
the variance ratio.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp.decoders.tabular import ResultTable
from ldp.display.tables import Column, render
from ldp.privacy.accountant import PrivacyCost

__all__ = ["MultiPlan", "plan_multi"]


@dataclass(frozen=True, repr=False)
class MultiPlan(ResultTable):
    """Both modes of a multi collection: each attribute's standard error, the report's ε, the recommendation."""

    epsilon: float
    n: int
    attributes: tuple[tuple[str, str, bool], ...]
    """``(name, protocol, is a mean)`` per attribute."""
    std_error: dict[str, dict[str, float]]
    """``{name: {"split": SE, "sample": SE}}`` (a count's SE: root mean square over the items)."""
    variance: dict[str, dict[str, Any]]
    """``{name: {"split": variance, "sample": variance}}`` as :func:`~ldp.decoders.multi.multi_variance` gives them."""
    epsilon_per_report: dict[str, PrivacyCost]
    recommended: str

    def to_dict(self) -> dict[str, Any]:
        plain = lambda v: np.asarray(v, dtype=np.float64).tolist()  # noqa: E731
        return {"protocol": "multi", "epsilon": self.epsilon, "n": self.n, "recommended": self.recommended,
                "attributes": [{"name": a, "protocol": p, "mean": m, "std_error": self.std_error[a],
                                "variance": {k: plain(v) for k, v in self.variance[a].items()}}
                               for a, p, m in self.attributes],
                "epsilon_per_report": {k: v.to_dict() for k, v in self.epsilon_per_report.items()}}

    def columns(self) -> dict[str, list[Any]]:
        """One row per attribute: its protocol, estimate kind, SE in each mode and their variance ratio."""
        att = self.attributes
        split = [self.std_error[a]["split"] for a, _, _ in att]
        sample = [self.std_error[a]["sample"] for a, _, _ in att]
        return {"attribute": [a for a, _, _ in att], "protocol": [p for _, p, _ in att],
                "estimate": ["mean" if m else "count" for _, _, m in att], "std_error_split": split,
                "std_error_sample": sample,
                "sample_split_variance": [(b / a) ** 2 if a else math.nan for a, b in zip(split, sample, strict=True)]}

    def metadata(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "n": self.n, "recommended": self.recommended,
                "epsilon_per_report": {k: v.to_dict() for k, v in self.epsilon_per_report.items()}, "notes": []}

    def title(self) -> str:
        return (f"multi at ε={self.epsilon:g}, n={self.n:,}, d={len(self.attributes)} attributes "
                f"(split: ε/{len(self.attributes)} each, ε per report {self.epsilon_per_report['split']}; "
                f"sample: one at ε, {self.epsilon_per_report['sample']})")

    def result_notes(self) -> tuple[str, ...]:
        return ()

    def table(self, max_rows: int | None = 40) -> str:
        """One row per attribute (SE in each mode, the sample/split variance ratio), then the recommendation."""
        cols = [Column("attribute", align="left"), Column("protocol", align="left"), Column("estimate", align="left"),
                Column("SE split", ".4g"), Column("SE sample", ".4g"), Column("sample/split variance", ".3f")]
        c = self.columns()
        rows = zip(*c.values(), strict=True)
        return "\n".join([render(cols, rows, title=self.title(), max_rows=max_rows),
                          f"recommended mode: {self.recommended}"])


def plan_multi(epsilon: float, attributes: Sequence[Any], n: int,
               truth: Mapping[str, Any] | None = None) -> MultiPlan:
    """Plan a multi collection of ``n`` users at ``epsilon``: each attribute's SE when splitting ε and when
    sampling one attribute per report, and the recommended mode (``truth``: as
    :func:`~ldp.decoders.multi.multi_variance`)."""
    from ldp.decoders.multi import multi_variance, recommend_mode
    from ldp.encoders.multi import MultiParams

    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"need n >= 2, got {n}")
    params = {mode: MultiParams(epsilon, mode, tuple(attributes)) for mode in ("split", "sample")}
    var = multi_variance(epsilon, attributes, int(n), truth)
    se = {name: {mode: math.sqrt(float(np.mean(v[mode]))) for mode in ("split", "sample")} for name, v in var.items()}
    attrs = tuple((name, proto, comp.domain_size is None) for (name, proto, _), comp in
                  zip(params["split"].attributes, params["split"].components, strict=True))
    return MultiPlan(float(epsilon), int(n), attrs, se, var, {m: p.privacy_cost for m, p in params.items()},
                     recommend_mode(epsilon, attributes, int(n), truth))
