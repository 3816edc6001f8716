"""Simulated collections of several attributes per user (protocol ``multi``, :mod:`ldp.decoders.multi`).

The truth is per attribute: true counts over its domain (fixed-domain attributes, a :class:`~ldp.simulation.Population`)
or the users' values (numeric attributes, a :class:`~ldp.simulation.numeric.NumericPopulation`), all of the same
``n`` users. :func:`multi_accuracy` (which :func:`ldp.simulation.accuracy` calls for ``multi``, through
:class:`MultiSimulation`) draws them once, simulates ``trials`` collections and sets each attribute's empirical
standard error beside the exact one (``MultiAggregate.exact_variance``, in split or sample mode) with the CI
coverage, as the one-attribute results do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp.decoders.tabular import ResultTable, columns_of
from ldp.encoders.multi import MultiParams
from ldp.randomness import as_generator
from ldp.simulation.base import Simulation
from ldp.simulation.numeric import MeanAccuracyResult, NumericPopulation, make_numeric_population
from ldp.simulation.population import Population, make_population
from ldp.simulation.result import AccuracyResult

__all__ = ["MultiAccuracyResult", "MultiSimulation", "attribute_populations", "draw_truth", "multi_accuracy",
           "simulate_multi"]

AnyPopulation = Population | NumericPopulation


def attribute_populations(params: Any, populations: Mapping[str, AnyPopulation] | None = None, *,
                          categorical: str = "zipf", numeric: str = "uniform",
                          options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, AnyPopulation]:
    """Each attribute's population: ``populations[name]`` if given, else ``categorical`` (default Zipf) over a
    fixed-domain attribute's values or ``numeric`` (default uniform) on a numeric attribute's bounds;
    ``options["categorical"]`` / ``options["numeric"]`` are passed to those constructors."""
    given = dict(populations or {})
    if unknown := set(given) - set(params.names):
        raise ValueError(f"populations for unknown attributes {sorted(unknown)}; the attributes are "
                         f"{list(params.names)}")
    opts = options or {}
    out: dict[str, AnyPopulation] = {}
    for name, comp in zip(params.names, params.components, strict=True):
        if name in given:
            out[name] = given[name]
        elif comp.domain_size is not None:
            out[name] = make_population(categorical, comp.domain_size, **opts.get("categorical", {}))
        else:
            out[name] = make_numeric_population(numeric, comp.low, comp.high, **opts.get("numeric", {}))
    return out


def draw_truth(params: Any, populations: Mapping[str, AnyPopulation], n: int, rng: Any = None) -> dict[str, Any]:
    """``{name: true counts or values}`` of ``n`` users, one draw per attribute (numbers clipped when the
    attribute's params say ``clip``; otherwise outside the bounds is an error)."""
    gen = as_generator(rng)
    truth: dict[str, Any] = {}
    for name, comp in zip(params.names, params.components, strict=True):
        pop = populations[name]
        if comp.domain_size is not None:
            if not isinstance(pop, Population) or pop.d != comp.domain_size:
                raise ValueError(f"attribute {name!r} ({comp.protocol}) needs a population over its "
                                 f"{comp.domain_size} values")
            truth[name] = pop.counts(n, gen)
            continue
        if not isinstance(pop, NumericPopulation):
            raise ValueError(f"attribute {name!r} ({comp.protocol}) takes numbers: give a population of numbers")
        x = pop.draw(n, gen)
        if comp.clip:
            x = np.clip(x, comp.low, comp.high)
        elif x.min() < comp.low or x.max() > comp.high:
            raise ValueError(f"attribute {name!r}: values span [{x.min():g}, {x.max():g}], outside its bounds "
                             f"[{comp.low:g}, {comp.high:g}]")
        truth[name] = x
    return truth


def simulate_multi(params: Any, truth: Mapping[str, Any], *, method: str = "aggregate", rng: Any = None) -> Any:
    """One collection: the aggregate's exact draw (``MultiAggregate.simulate``), or with ``method="per_report"``
    every user's report encoded (users paired across attributes in a random order) and folded."""
    from ldp.decoders.multi import MultiAggregate
    from ldp.encoders.multi import MultiEncoder

    gen = as_generator(rng)
    if method == "aggregate":
        return MultiAggregate.simulate(params, truth, gen)
    if method != "per_report":
        raise ValueError(f"method must be 'aggregate' or 'per_report', got {method!r}")
    values = {}
    for name, comp in zip(params.names, params.components, strict=True):
        t = np.asarray(truth[name])
        values[name] = gen.permutation(np.repeat(np.arange(t.size), t) if comp.domain_size is not None else t)
    agg = MultiAggregate(params)
    agg.add(MultiEncoder(params).encode_batch(values, gen))
    return agg


@dataclass(frozen=True, repr=False)
class MultiAccuracyResult(ResultTable):
    """Each attribute's accuracy over repeated simulated multi collections: :class:`AccuracyResult` for counts,
    :class:`MeanAccuracyResult` for a mean."""

    mode: str
    n: int
    trials: int
    attributes: dict[str, AccuracyResult | MeanAccuracyResult]
    notes: tuple[str, ...] = ()

    def rows(self) -> list[dict[str, Any]]:
        """One row per attribute and item (``item`` = ``mean`` for a mean): truth, mean estimate, empirical
        and exact standard error, coverage."""
        out: list[dict[str, Any]] = []
        for name, res in self.attributes.items():
            if isinstance(res, MeanAccuracyResult):
                out.append({"attribute": name, "item": "mean", "truth": res.true_mean,
                            "mean_estimate": res.mean_estimate, "empirical_se": res.empirical_se,
                            "exact_se": res.exact_se, "coverage": res.coverage})
                continue
            out += [{"attribute": name, "item": r["item"], "truth": r["true_count"],
                     "mean_estimate": r["mean_estimate"], "empirical_se": r["empirical_sd"],
                     "exact_se": r["theoretical_sd"], "coverage": r["coverage"]} for r in res.rows()]
        return out

    def columns(self) -> dict[str, list[Any]]:
        rows = self.rows()
        return columns_of(rows) if rows else {k: [] for k in ("attribute", "item", "truth", "mean_estimate",
                                                              "empirical_se", "exact_se", "coverage")}

    def metadata(self) -> dict[str, Any]:
        return {"summary": self.summary(), "notes": list(self.notes)}

    def title(self) -> str:
        return (f"multi ({self.mode}): {self.trials} simulated collection{'s' * (self.trials != 1)} of "
                f"n={self.n:,}, {len(self.attributes)} attributes")

    def summary(self) -> dict[str, Any]:
        """Per attribute: the root-mean-square empirical and exact standard errors over its items (a mean: its
        own), their variance ratio and the mean CI coverage."""
        per: dict[str, Any] = {}
        for name in self.attributes:
            rows = [r for r in self.rows() if r["attribute"] == name]
            emp = math.sqrt(float(np.mean([r["empirical_se"] ** 2 for r in rows])))
            exact = math.sqrt(float(np.mean([r["exact_se"] ** 2 for r in rows])))
            per[name] = {"empirical_se": emp, "exact_se": exact,
                         "variance_ratio": (emp / exact) ** 2 if exact > 0 else math.nan,
                         "coverage": float(np.mean([r["coverage"] for r in rows]))}
        return {"mode": self.mode, "n": self.n, "trials": self.trials, "attributes": per}


def _count_result(truth: Any, est: np.ndarray, covered: np.ndarray, var: Any, items: list[str],
                  trials: int, confidence: float) -> AccuracyResult:
    t = np.asarray(truth, dtype=np.int64)
    return AccuracyResult.from_trials(items, t, est, covered, np.sqrt(np.asarray(var, dtype=np.float64)), confidence)


def multi_accuracy(params: Any, populations: Mapping[str, AnyPopulation] | None, n: int, *, trials: int = 20,
                   method: str = "aggregate", rng: Any = None, confidence: float = 0.95,
                   progress: bool | None = None) -> MultiAccuracyResult:
    """``trials`` multi collections of ``n`` users (one draw of every attribute's truth, from
    :func:`attribute_populations`): each attribute's estimates against the truth and the exact variance."""
    from ldp.decoders.multi import MultiAggregate
    from ldp.display.progress import iterate

    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    gen = as_generator(rng)
    pops = attribute_populations(params, populations)
    truth = draw_truth(params, pops, int(n), gen)
    exact = MultiAggregate.exact_variance(params, truth)
    counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    means: dict[str, tuple[np.ndarray, np.ndarray, list[int]]] = {}
    for name, comp in zip(params.names, params.components, strict=True):
        if comp.domain_size is not None:
            counts[name] = (np.empty((trials, comp.domain_size)), np.zeros(comp.domain_size))
        else:
            means[name] = (np.empty(trials), np.empty(trials), [0])
    items: dict[str, list[str]] = {}
    for i in iterate(range(trials), desc=f"simulate multi ({params.mode})", enabled=progress, unit="trial"):
        for name, e in simulate_multi(params, truth, method=method, rng=gen).estimate(confidence).items():
            if name in counts:
                est, covered = counts[name]
                est[i] = e.count
                covered += (e.ci_low <= truth[name]) & (truth[name] <= e.ci_high)
                items[name] = list(e.items)
            else:
                m, se, cov = means[name]
                m[i], se[i] = e.mean, e.std_error
                cov[0] += e.ci_low <= float(np.mean(truth[name])) <= e.ci_high
    results: dict[str, AccuracyResult | MeanAccuracyResult] = {}
    for name, comp in zip(params.names, params.components, strict=True):
        if name in counts:
            est, covered = counts[name]
            results[name] = _count_result(truth[name], est, covered, exact[name], items[name], trials,
                                          confidence)
        else:
            m, se, cov = means[name]
            results[name] = MeanAccuracyResult(
                comp.protocol, pops[name].name, int(n), trials, float(np.mean(truth[name])), float(m.mean()),
                float(m.std(ddof=1)) if trials > 1 else math.nan, math.sqrt(float(exact[name])), float(se.mean()),
                cov[0] / trials, confidence, estimates=m)
    notes = [f"{params.mode} mode, d={params.d} attributes at ε={params.component_epsilon:.4g} each; exact_se: "
             "MultiAggregate.exact_variance for this truth"]
    if params.mode == "sample":
        notes.append("sample mode: counts are scaled to all n users; exact_se includes the sampling of attributes")
    return MultiAccuracyResult(params.mode, int(n), trials, results, tuple(notes))


class MultiSimulation(Simulation):
    """``multi``'s simulation: a truth per attribute (:func:`simulate_multi`, :func:`multi_accuracy`)."""

    params_type = MultiParams

    def simulate(self, params: Any, truth: Any, *, method: str = "aggregate", rng: Any = None,
                 chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Any:
        """:func:`simulate_multi` of ``{attribute: counts or values}`` (``chunk_size``, ``values``: unused)."""
        return simulate_multi(params, truth, method=method, rng=rng)

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> MultiAccuracyResult:
        """:func:`multi_accuracy` of ``{attribute: population}`` (``None``: the defaults; ``candidates``: unused)."""
        assert n is not None
        return multi_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                              progress=progress)
