"""Several attributes per user (``multi``), server side: aggregate, estimators, exact variances, simulation.

The aggregate holds one sub-aggregate per attribute (the component protocol's own), fed with the
sub-reports, and ``reports[j]``: how many reports carried attribute j (``n`` in split mode; ``N_j`` in
sample mode). Its state is the components' arrays with prefixed names, so it merges and serializes as
every aggregate does. ``estimate()`` returns ``{name: the attribute's estimate}``.

Split mode: each attribute's estimate is its protocol's at ``ε/d`` over all ``n`` reports, with its exact
variance.

Sample mode: attribute j is seen by ``N_j ~ Bin(n, 1/d)`` reports, a uniform random subset ``S_j`` of the
users given ``N_j = m``. Write ``θ̂_S = (1/m)·Σ_{i∈S} v_i`` for the protocol's estimate over ``S`` in
per-user units (``v_i`` the unbiased per-report value: of the user's value for a mean, of the indicator
``[x_i = v]`` for the count of item v). Given m it is unbiased for the population's ``θ`` (a uniform
subset's mean is unbiased), so the count estimate scaled to the population, ``ĉ_v = (n/m)·ĉ_v(S)``,
and the mean ``μ̂ = μ̂(S)`` are unbiased given ``N_j = m >= 1``, and

    ``Var[θ̂ | m] = σ̄²/m + S²·(1/m − 1/n)``,

``σ̄²`` the mean over users of the protocol's per-report variance ``Var[v_i | x_i]`` and
``S² = Σ(x_i − x̄)²/(n − 1)`` the population variance of the true per-user quantity (sampling without
replacement). Since ``E[θ̂ | m] = θ`` for every m, ``Var[θ̂] = E[Var[θ̂ | m]]``:

    ``Var[θ̂] = (σ̄² + S²)·E[1/N_j | N_j >= 1] − S²/n``     (exact; counts: times ``n²``),

with ``E[1/N_j | N_j >= 1]`` summed over the binomial law (:func:`inverse_moment`, ≈ ``d/n``). For counts
``S² = n·π(1 − π)/(n − 1)``, ``π = f_v/n``, and ``σ̄² = π·c_self + (1 − π)·c_other`` from the protocol's
exact variance (one user's contribution to item v's variance when its value is v, or not). In split mode
the variance is ``σ̄²(ε/d)/n`` (counts: ``n·σ̄²``). So sampling trades the noise of ε/d for a factor ≈ d
fewer reports plus the sampling term: it wins unless ε is large enough that ``σ̄²(ε/d)`` falls below
``d·(σ̄²(ε) + S²)`` (see docs/protocols/multidimensional.md). ``estimate()``'s standard errors are the
plug-ins of these formulas given the observed ``N_j`` (the mean's, ``s/√N_j`` with ``s`` the sample
standard deviation of the per-report values, is conservative by ``S²/n``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.base import Aggregate, RejectHandler, StateLayout
from ldp.decoders.mean_results import MeanEstimate
from ldp.decoders.results import Estimates
from ldp.decoders.tabular import ResultTable, columns_of
from ldp.encoders.base import ProtocolParams
from ldp.encoders.multi import MultiParams
from ldp.encoders.numeric import NumericParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["MultiAggregate", "MultiEstimates", "inverse_moment", "attribute_variance", "multi_variance",
           "recommend_mode"]

Floats = npt.NDArray[np.float64]
Estimate = Estimates | MeanEstimate


def _aggregate_type(params: ProtocolParams) -> Any:
    from ldp.protocols import get_protocol

    return get_protocol(params.protocol).aggregate_type


def inverse_moment(n: int, p: float) -> float:
    """``E[1/N | N >= 1]`` for ``N ~ Bin(n, p)``: the binomial sum over mean ± 40 standard deviations."""
    from scipy.stats import binom

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if p >= 1.0:
        return 1.0 / n
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    m = np.arange(max(1, math.floor(mean - 40 * sd)), min(n, math.ceil(mean + 40 * sd)) + 1)
    return float((binom.pmf(m, n, p) / m).sum() / -math.expm1(n * math.log1p(-p)))


# -- exact variance ------------------------------------------------------------------------------
def _count_terms(comp: ProtocolParams) -> tuple[Floats, Floats]:
    """``(c_self, c_other)`` per item: one user's contribution to ``Var[ĉ_v]`` when it holds v, or not,
    from the protocol's exact variance at unit counts (items exchangeable beyond the first two, as in
    GRR and dBitFlip; binary RR has only two)."""
    k, var = comp.domain_size, _aggregate_type(comp).exact_variance
    assert k is not None
    e0, e1 = np.zeros(k, np.int64), np.zeros(k, np.int64)
    e0[0] = e1[1] = 1
    row0, row1 = np.asarray(var(comp, e0), np.float64), np.asarray(var(comp, e1), np.float64)
    c_self = np.full(k, row0[0])
    c_self[1] = row1[1]
    c_other = row0.copy()
    c_other[0] = row1[0]
    return c_self, c_other


def attribute_variance(comp: ProtocolParams, truth: Any, mode: str, d: int) -> Floats | float:
    """Exact variance of one attribute's estimate (module docstring): counts per item for a fixed-domain
    ``comp`` with ``truth`` its true counts (may be fractional; ``n`` is their sum), the mean for a numeric
    one with ``truth`` the users' values. ``comp`` is the component as the mode builds it."""
    if comp.domain_size is not None:
        f = np.asarray(truth, dtype=np.float64)
        n = float(f.sum())
        pi = f / n
        c_self, c_other = _count_terms(comp)
        sigma2 = pi * c_self + (1.0 - pi) * c_other
        if mode == "split":
            return n * sigma2
        between = pi * (1.0 - pi) / (n - 1.0) if n > 1 else np.zeros_like(pi)
        return n * n * ((sigma2 + n * between) * inverse_moment(round(n), 1.0 / d) - between)
    from ldp.batch.numeric import checked_values

    assert isinstance(comp, NumericParams)  # the components without a domain are the numeric ones
    x = checked_values(comp, truth)
    noise = float(_aggregate_type(comp).report_variance(comp, x).mean())
    if mode == "split":
        return noise / x.size
    s2 = float(x.var(ddof=1)) if x.size > 1 else 0.0
    return (noise + s2) * inverse_moment(x.size, 1.0 / d) - s2 / x.size


def _default_truth(comp: ProtocolParams, n: int) -> Any:
    """Uniform counts (fixed domain), or every user at the midpoint of the range (numeric)."""
    if comp.domain_size is not None:
        return np.full(comp.domain_size, n / comp.domain_size)
    assert isinstance(comp, NumericParams)  # the components without a domain are the numeric ones
    return np.full(n, (comp.low + comp.high) / 2)


def _variances(params: MultiParams, truth: Mapping[str, Any] | None, n: int | None) -> dict[str, Any]:
    out = {}
    for name, comp in zip(params.names, params.components, strict=True):
        t = truth[name] if truth is not None and name in truth else _default_truth(comp, _need(n))
        out[name] = attribute_variance(comp, t, params.mode, params.d)
    return out


def _need(n: int | None) -> int:
    if n is None:
        raise ValueError("give n, or the truth of every attribute")
    return n


def multi_variance(epsilon: float, attributes: Sequence[Any], n: int | None = None,
                   truth: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{name: {"split": variance, "sample": variance}}`` of each attribute's estimate (counts per item, or the
    mean) for ``n`` users; ``truth[name]`` gives an attribute's true counts or values (default: uniform
    counts, or every user at the midpoint)."""
    split = _variances(MultiParams(epsilon, "split", tuple(attributes)), truth, n)
    sample = _variances(MultiParams(epsilon, "sample", tuple(attributes)), truth, n)
    return {name: {"split": split[name], "sample": sample[name]} for name in split}


def recommend_mode(epsilon: float, attributes: Sequence[Any], n: int | None = None,
                   truth: Mapping[str, Any] | None = None) -> str:
    """``"sample"`` or ``"split"``: the mode with the lower geometric mean over attributes of the total
    variance (summed over items); ties go to ``"sample"``."""
    var = multi_variance(epsilon, attributes, n, truth)
    log_ratio = sum(math.log(float(np.sum(v["sample"])) / float(np.sum(v["split"]))) for v in var.values())
    return "sample" if log_ratio <= 0 else "split"


class MultiEstimates(ResultTable, dict[str, Estimate]):
    """``{name: estimate}`` of a multi aggregate, which is also a result table: one row per attribute and item
    (``item`` = ``mean`` for a mean), printed as one table per attribute; its JSON holds each attribute's own
    document under ``attributes`` and the rows under ``rows``."""

    def rows(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name, est in self.items():
            if isinstance(est, MeanEstimate):
                out.append({"attribute": name, "item": "mean", "estimate": est.mean, "std_error": est.std_error,
                            "ci_low": est.ci_low, "ci_high": est.ci_high})
                continue
            for i, item in enumerate(est.items):
                out.append({"attribute": name, "item": item, "estimate": float(est.count[i]),
                            "std_error": float(est.std_error[i]), "ci_low": float(est.ci_low[i]),
                            "ci_high": float(est.ci_high[i])})
        return out

    def columns(self) -> dict[str, list[Any]]:
        rows = self.rows()
        return columns_of(rows) if rows else {k: [] for k in _MULTI_COLUMNS}

    def metadata(self) -> dict[str, Any]:
        return {"attributes": {name: json.loads(est.to_json()) for name, est in self.items()}, "notes": []}

    def title(self) -> str:
        return f"multi: {len(self)} attribute{'s' * (len(self) != 1)} ({', '.join(self)})"

    def table(self, max_rows: int | None = 40) -> str:
        """The title, then one table per attribute, each of at most ``max_rows`` rows."""
        return "\n\n".join([self.title(), *(f"{name}:\n{est.table(max_rows)}" for name, est in self.items())])


_MULTI_COLUMNS = ("attribute", "item", "estimate", "std_error", "ci_low", "ci_high")


# -- the aggregate -------------------------------------------------------------------------------
class MultiAggregate(Aggregate):
    """One sub-aggregate per attribute, and ``reports[j]``: the reports that carried attribute j."""

    params_type: ClassVar[type] = MultiParams
    params: MultiParams
    reports: npt.NDArray[np.int64]
    parts: tuple[Aggregate, ...]

    @classmethod
    def state_layout(cls, params: MultiParams) -> StateLayout:
        layout: StateLayout = {"reports": (np.dtype(np.int64), (params.d,))}
        for pre, comp in zip(params.prefixes, params.components, strict=True):
            layout.update((pre + k, v) for k, v in _aggregate_type(comp).state_layout(comp).items())
        return layout

    def _init_state(self) -> None:
        """The sub-aggregates; their arrays are this aggregate's state, under prefixed names (the same arrays)."""
        self.reports = np.zeros(self.params.d, np.int64)
        self.parts = tuple(_aggregate_type(c)(c) for c in self.params.components)
        for pre, part in zip(self.params.prefixes, self.parts, strict=True):
            for name, arr in part._state().items():
                if hasattr(type(self), pre + name):
                    raise ValueError(f"attribute name {pre[:-1]!r} makes a state array that shadows {pre + name!r}")
                setattr(self, pre + name, arr)

    def part(self, name: str | int) -> Aggregate:
        """Attribute ``name``'s (or index's) sub-aggregate, its ``n`` the reports that carried it."""
        j = self.params.names.index(name) if isinstance(name, str) else name
        agg = self.parts[j]
        agg.n = int(self.reports[j])
        return agg

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        pr = self.params
        attr = np.asarray(columns["attr"]) if pr.mode == "sample" else None
        for j, (pre, comp, part) in enumerate(zip(pr.prefixes, pr.components, self.parts, strict=True)):
            rows = None if attr is None else attr == j
            # np.compress, not a boolean index: the same rows, several times faster on narrow columns
            sub = {f.name: columns[pre + f.name] if rows is None else np.compress(rows, columns[pre + f.name], axis=0)
                   for f in comp.schema}
            count = len(sub[comp.schema[0].name])
            if count:
                part._fold(sub)
                self.reports[j] += count

    def _rule_breakers(self, batch: ReportBatch) -> tuple[np.ndarray, list[str]] | None:
        """Rows that fit the schema but break the multi rule (sample mode: zero fields outside the sampled
        attribute) or their attribute's protocol rules, with each row's reason (``None``: the base rejects
        the batch whole, or checks it)."""
        pr = self.params
        got = {f.name: f for f in batch.schema}
        if (batch.protocol, batch.fingerprint) != (pr.protocol, pr.fingerprint) or set(got) != {
                f.name for f in pr.schema} or any(got[f.name].kind != f.kind or (
                f.kind == "bits" and got[f.name].size != f.size) for f in pr.schema):
            return None
        cols = batch.columns
        bad = np.zeros(batch.n, bool)
        reasons = [""] * batch.n
        attr = np.asarray(cols["attr"]) if pr.mode == "sample" else None
        for j, (pre, comp) in enumerate(zip(pr.prefixes, pr.components, strict=True)):
            agg_type = _aggregate_type(comp)
            ruled = agg_type._add_batch is not Aggregate._add_batch  # a rule beyond the schema's
            if attr is None:
                if not ruled:
                    continue
                rows = np.ones(batch.n, bool)
            else:
                rows = attr == j
                nonzero = np.zeros(batch.n, bool)
                for f in comp.schema:
                    c = np.asarray(cols[pre + f.name])
                    nonzero |= (c != 0) if c.ndim == 1 else (c != 0).any(axis=1)
                if (nonzero > rows).any():  # a field set outside its attribute's rows (rare: look closer)
                    self._flag(bad, reasons, np.flatnonzero(~rows & (attr < pr.d) & nonzero), "bad_value")
            if not ruled:
                continue
            idx = np.flatnonzero(rows & ~bad)
            sub = ReportBatch(comp.protocol, comp.fingerprint, tuple(replace(got[pre + f.name], name=f.name)
                                                                     for f in comp.schema),
                              {f.name: np.asarray(cols[pre + f.name])[idx] for f in comp.schema})
            found: list[tuple[int, str]] = []
            agg_type(comp)._add_batch(sub, lambda item, err, found=found: found.append(
                (item if isinstance(item, int) else -1, err.reason)))
            for i, reason in found:
                self._flag(bad, reasons, idx if i < 0 else idx[i:i + 1], reason)
        return bad, reasons

    @staticmethod
    def _flag(bad: np.ndarray, reasons: list[str], rows: np.ndarray, reason: str) -> None:
        for i in rows:
            if not bad[i]:
                bad[i], reasons[i] = True, reason

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """Rejects the rows :meth:`_rule_breakers` finds (each with its reason), then the base's checks."""
        found = self._rule_breakers(batch)
        if found is None or not found[0].any():
            return super()._add_batch(batch, on_reject)
        bad, reasons = found
        return self._add_batch_without(batch, bad, reasons, "breaks the multi or its attribute's rules", on_reject,
                                       super()._add_batch)

    # -- estimates -------------------------------------------------------------------------------
    def estimate(self, confidence: float = 0.95) -> MultiEstimates:  # type: ignore[override]  # one per attribute
        """``{name: estimate}``: counts (:class:`Estimates`) or a mean (:class:`MeanEstimate`); in sample mode
        counts are scaled to the whole population, with the standard errors of the module docstring."""
        pr, n = self.params, self.n
        out = MultiEstimates()
        for j, name in enumerate(pr.names):
            est = self.part(j).estimate(confidence)
            m = int(self.reports[j])
            note = (f"multi ({pr.mode}, d={pr.d}): attribute {name!r} by {est.protocol} at "
                    f"ε={pr.component_epsilon:.6g}, seen by {m} of {n} reports")
            if pr.mode == "sample" and isinstance(est, Estimates):
                est = _scaled(est, n, m)
            out[name] = replace(est, n=n, privacy=pr.privacy_cost, notes=(*est.notes, note))
        return out

    @staticmethod
    def exact_variance(params: MultiParams, truth: Mapping[str, Any]) -> dict[str, Any]:
        """``{name: exact variance}`` under ``params``'s mode: counts per item for ``truth[name]`` = true counts,
        or the mean for ``truth[name]`` = the users' values (module docstring)."""
        _check_truth(params, truth)
        return _variances(params, truth, None)

    @classmethod
    def simulate(cls, params: MultiParams, truth: Mapping[str, Any], rng: Any = None) -> MultiAggregate:
        """An exact draw of each attribute's sub-aggregate by its protocol's own ``simulate``: split mode on all
        users; sample mode with ``N ~ Mult(n, 1/d)`` and attribute j on a uniform ``N_j``-subset of the users
        (multivariate hypergeometric). Each attribute's law is exact; the dependence between attributes
        through the partition of users is not modelled (counts do not carry the joint distribution)."""
        n = _check_truth(params, truth)
        gen, agg = as_generator(rng), cls(params)
        sizes = [n] * params.d if params.mode == "split" else gen.multinomial(n, np.full(params.d, 1.0 / params.d))
        for j, (name, comp) in enumerate(zip(params.names, params.components, strict=True)):
            t, m = truth[name], int(sizes[j])
            if params.mode == "sample":
                t = _subset(comp, t, m, gen)
            sub = _aggregate_type(comp).simulate(comp, t, gen)
            for key, arr in sub._state().items():
                agg.parts[j]._state()[key][...] = arr
            agg.reports[j] = m
        agg.n = n
        return agg


def _check_truth(params: MultiParams, truth: Mapping[str, Any]) -> int:
    """The common number of users of ``truth`` (``{name: counts or values}`` for exactly the attributes)."""
    if not isinstance(truth, Mapping) or set(truth) != set(params.names):
        got = sorted(map(str, truth)) if isinstance(truth, Mapping) else type(truth).__name__
        raise ValueError(f"truth must map exactly the attributes {list(params.names)}, got {got}")
    sizes = {name: int(np.asarray(truth[name]).sum()) if c.domain_size is not None else np.asarray(truth[name]).size
             for name, c in zip(params.names, params.components, strict=True)}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"every attribute needs the same users: numbers of users {sizes} differ")
    return next(iter(sizes.values()))


def _subset(comp: ProtocolParams, truth: Any, m: int, gen: np.random.Generator) -> Any:
    """The truth of a uniform ``m``-subset of the users: counts, or values."""
    if comp.domain_size is not None:
        return gen.multivariate_hypergeometric(np.asarray(truth, np.int64), m)
    uniq, cnt = np.unique(np.asarray(truth, np.float64), return_counts=True)
    return np.repeat(uniq, gen.multivariate_hypergeometric(cnt.astype(np.int64), m))


def _scaled(est: Estimates, n: int, m: int) -> Estimates:
    """Counts over ``m`` sampled reports scaled to ``n`` users: ``(n/m)·ĉ``, with the plug-in standard error
    ``n·sqrt(σ̄²/m + π(1 − π)(n − m)/(m(n − 1)))`` (module docstring)."""
    if m == 0:
        nan = np.full(len(est.items), np.nan)
        return replace(est, count=nan, std_error=nan)
    factor = n / m
    count = est.count * factor
    pi = np.clip(count / n, 0.0, 1.0)
    between = pi * (1.0 - pi) * (n - m) / (m * (n - 1)) if n > 1 else 0.0
    return replace(est, count=count, std_error=np.sqrt((factor * est.std_error) ** 2 + n * n * between))
