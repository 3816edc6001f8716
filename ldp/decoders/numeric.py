"""Means of bounded numbers, server side: aggregates, unbiased estimators, exact variances, simulation.

Each report ``r`` has an unbiased value ``v(r)`` (``E[v(r) | x] = x``, up to the client's 2^-64 rounding
of the randomized-rounding probability φ, a bias below ``(high − low)·2^-64``):

* Duchi: ``v(bit) = low + (high − low)·(bit − q)/(1 − 2q)``;
  ``Var[v | x] = (high − low)²·P1(1 − P1)/(1 − 2q)²``, ``P1 = q + φ(1 − 2q)``;
* discrete PM: ``E[j | k] = c0 + β·k`` (:mod:`ldp.encoders.numeric`), so ``v(j) = low + (high − low)·(j − c0)/(β·M)``;
  ``Var[j | x] = E[j² | x] − (c0 + β·u)²`` with ``E[j² | k] = b·S2(G) + (a − b)·(S2(k + w) − S2(k))``,
  ``a = P_in/w``, ``b = (1 − P_in)/(G − w)``, ``S2(n) = Σ_{i<n} i²``, and k mixing ``⌊u⌋``, ``⌊u⌋ + 1``;
* Hybrid: ``v`` of the branch the report took; ``Var = α·Var_PM + (1 − α)·Var_D`` (both unbiased).

The mean estimate is ``Σ v(r)/n``, with ``exact_variance = Σ_i Var[v | x_i]/n²``. ``estimate()``'s
standard error is the plug-in ``s/√n`` with ``s²`` the sample variance of the ``v(r)`` (from the
histogram state): consistent, and conservative by the population variance of the true values
(``E[s²] = mean_i Var[v | x_i] + Var_pop(x)``).

Aggregate-level simulation draws the histogram from the exact laws: binomials per distinct value
(rounding, branch, window), then the cells of each grid index as multinomials (or, when there are
more distinct indices than reports to spread, each report's uniform cell).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.numeric import checked_values, grid_values, unit_values
from ldp.decoders.base import Aggregate, RejectHandler, StateLayout
from ldp.decoders.mean_results import MeanEstimate
from ldp.encoders.numeric import DuchiParams, HybridParams, NumericParams, PiecewiseParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["DuchiAggregate", "PiecewiseAggregate", "HybridAggregate", "duchi_values", "duchi_probability_one",
           "duchi_report_variance", "piecewise_values", "piecewise_cell_probabilities", "piecewise_report_variance",
           "hybrid_report_variance", "continuous_pm_variance", "mean_from_histogram"]

Floats = npt.NDArray[np.float64]
Counts = npt.NDArray[np.int64]


# -- Duchi -------------------------------------------------------------------------------------------
def _duchi_units(params: DuchiParams) -> Floats:
    """The unbiased values of bits 0 and 1 in units of the range: ``(bit − q)/(1 − 2q)``."""
    return (np.array([0.0, 1.0]) - params.q) / (1.0 - 2.0 * params.q)


def duchi_values(params: DuchiParams) -> Floats:
    """The unbiased values of the reports ``bit = 0`` and ``bit = 1``."""
    return params.low + (params.high - params.low) * _duchi_units(params)


def duchi_probability_one(params: DuchiParams, x: Floats) -> Floats:
    """``Pr[bit = 1 | x] = q + φ(1 − 2q)``."""
    return params.q + unit_values(params, np.asarray(x, dtype=np.float64)) * (1.0 - 2.0 * params.q)


def duchi_report_variance(params: DuchiParams, x: Floats) -> Floats:
    """``Var[v | x]`` of one Duchi report of each value in ``x``."""
    p1 = duchi_probability_one(params, x)
    return (params.high - params.low) ** 2 * p1 * (1.0 - p1) / (1.0 - 2.0 * params.q) ** 2


# -- discrete Piecewise ----------------------------------------------------------------------------
def _pm_constants(params: PiecewiseParams) -> tuple[float, float, float, float]:
    """``(a, b, β, c0)``: inside and outside cell probabilities, slope and intercept of ``E[j | k]``."""
    g, w, p = params.cells, params.window, params.p_in
    a, b = p / w, (1.0 - p) / (g - w)
    beta = p - (1.0 - p) * w / (g - w)
    c0 = p * (w - 1) / 2 + (1.0 - p) * (g * (g - 1) / 2 - w * (w - 1) / 2) / (g - w)
    return a, b, beta, c0


def _piecewise_units(params: PiecewiseParams) -> Floats:
    """The unbiased value of each cell in units of the range: ``(j − c0)/(β·M)``."""
    _, _, beta, c0 = _pm_constants(params)
    return (np.arange(params.cells, dtype=np.float64) - c0) / (beta * params.steps)


def piecewise_values(params: PiecewiseParams) -> Floats:
    """The unbiased value of each cell ``j``: ``low + (high − low)·(j − c0)/(β·M)``."""
    return params.low + (params.high - params.low) * _piecewise_units(params)


def _window_probabilities(params: PiecewiseParams, k: int) -> Floats:
    a, b, _, _ = _pm_constants(params)
    out = np.full(params.cells, b)
    out[k:k + params.window] = a
    return out


def piecewise_cell_probabilities(params: PiecewiseParams, x: float) -> Floats:
    """``Pr[cell = j | x]`` for every j (mixing the two grid indices x rounds to)."""
    k, frac = params.grid(float(x))
    probs = (1.0 - frac) * _window_probabilities(params, k)
    return probs + frac * _window_probabilities(params, k + 1) if frac > 0 else probs


def piecewise_report_variance(params: PiecewiseParams, x: Floats) -> Floats:
    """``Var[v | x]`` of one discrete-PM report of each value in ``x`` (module docstring)."""
    g, w, m = params.cells, params.window, params.steps
    a, b, beta, c0 = _pm_constants(params)
    k, frac = grid_values(params, np.asarray(x, dtype=np.float64))

    def s2(n: Any) -> Any:
        return (n - 1.0) * n * (2.0 * n - 1.0) / 6.0

    def m2(kk: Any) -> Any:
        return b * s2(g) + (a - b) * (s2(kk + w) - s2(kk))

    second = (1.0 - frac) * m2(k) + frac * m2(np.minimum(k + 1, m))
    var_j = np.maximum(second - (c0 + beta * (k + frac)) ** 2, 0.0)
    return var_j * ((params.high - params.low) / (beta * m)) ** 2


def continuous_pm_variance(epsilon: float, low: float, high: float, x: Floats) -> Floats:
    """Wang et al.'s continuous PM: ``Var[t* | t] = t²/(s − 1) + (s + 3)/(3(s − 1)²)``, ``s = e^{ε/2}``,
    for ``t ∈ [−1, 1]``, scaled to ``[low, high]``."""
    s1 = np.expm1(epsilon / 2)
    t = 2.0 * (np.asarray(x, dtype=np.float64) - low) / (high - low) - 1.0
    return (t**2 / s1 + (s1 + 4.0) / (3.0 * s1**2)) * ((high - low) / 2) ** 2


def hybrid_report_variance(params: HybridParams, x: Floats) -> Floats:
    """``α·Var_PM(x) + (1 − α)·Var_D(x)``."""
    var = (1.0 - params.alpha) * duchi_report_variance(params.duchi, x)
    return var + params.alpha * piecewise_report_variance(params.piecewise, x) if params.alpha > 0 else var


# -- shared ----------------------------------------------------------------------------------------
def mean_from_histogram(values: Floats, counts: Counts) -> tuple[float, float]:
    """``(mean, plug-in standard error)`` of reports whose unbiased values take ``values`` ``counts`` times
    (the aggregates pass values in units of the range, so that squares do not overflow)."""
    n = int(counts.sum())
    if n == 0:
        return float("nan"), float("nan")
    c = counts.astype(np.float64)
    mean = float(c @ values) / n
    if n == 1:
        return mean, float("nan")
    s2 = float(c @ (values - mean) ** 2) / (n - 1)
    return mean, float(np.sqrt(s2 / n))


_LAST_DISTINCT: tuple[Any, Floats, Counts] | None = None
"""The last float array :func:`_distinct` counted (its key, values, counts): a simulation draws collection after
collection of the same users' numbers."""


def _distinct(params: NumericParams, values: Any) -> tuple[Floats, Counts]:
    """The distinct values of :func:`~ldp.batch.numeric.checked_values` and their counts (of a float array
    counted last time: the same, remembered)."""
    global _LAST_DISTINCT
    key = None
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype == np.float64 and values.size <= 1 << 16:
        key = (np.array([params.low, params.high], np.float64).tobytes(), bool(params.clip), values.tobytes())
        last = _LAST_DISTINCT
        if last is not None and last[0] == key:
            return last[1].copy(), last[2].copy()
    x = checked_values(params, values)
    uniq, cnt = np.unique(x, return_counts=True)
    cnt = cnt.astype(np.int64)
    if key is not None:
        _LAST_DISTINCT = (key, uniq.copy(), cnt.copy())
    return uniq, cnt


def _duchi_counts(params: DuchiParams, uniq: Floats, cnt: Counts, gen: np.random.Generator) -> Counts:
    ones = int(gen.binomial(cnt, duchi_probability_one(params, uniq)).sum())
    return np.array([int(cnt.sum()) - ones, ones], dtype=np.int64)


def _pm_counts(params: PiecewiseParams, uniq: Floats, cnt: Counts, gen: np.random.Generator) -> Counts:
    """The exact cell histogram of ``cnt`` reports of each value in ``uniq``."""
    g, w, m = params.cells, params.window, params.steps
    k, frac = grid_values(params, uniq)
    up = gen.binomial(cnt, frac)
    per_k = np.zeros(m + 1, dtype=np.int64)
    np.add.at(per_k, k, cnt - up)
    np.add.at(per_k, np.minimum(k + 1, m), up)  # up = 0 where k = M (φ = 0)
    ks = np.flatnonzero(per_k)
    n_k = per_k[ks]
    n_in = gen.binomial(n_k, params.p_in)
    n_out = n_k - n_in
    total = np.zeros(g, dtype=np.int64)
    if ks.size * g <= int(n_k.sum()):  # few grid indices: multinomials per index
        rows = max(1, (1 << 22) // g)
        for s in range(0, ks.size, rows):
            kk = ks[s:s + rows, None]
            inside = gen.multinomial(n_in[s:s + rows], np.full(w, 1.0 / w))
            r = np.arange(g - w)
            outside = gen.multinomial(n_out[s:s + rows], np.full(g - w, 1.0 / (g - w)))
            total += np.bincount((kk + np.arange(w)).ravel(), inside.ravel(), g).astype(np.int64)
            total += np.bincount((r + w * (r >= kk)).ravel(), outside.ravel(), g).astype(np.int64)
        return total
    k_in, k_out = np.repeat(ks, n_in), np.repeat(ks, n_out)  # else each report's uniform cell
    r = gen.integers(0, g - w, size=k_out.size)
    total += np.bincount(k_in + gen.integers(0, w, size=k_in.size), minlength=g)
    total += np.bincount(r + w * (r >= k_out), minlength=g)
    return total


def _bincount(col: np.ndarray, size: int) -> Counts:
    out = np.zeros(size, dtype=np.int64)
    for start in range(0, col.size, 1 << 20):  # bounded temporaries (bincount widens to intp)
        out += np.bincount(col[start:start + (1 << 20)], minlength=size)
    return out


class _MeanAggregate(Aggregate):
    params: Any

    @abstractmethod
    def _units_and_counts(self) -> tuple[Floats, Counts]:
        """Each outcome's unbiased value in units of the range (``(v − low)/(high − low)``), and its count."""

    def estimate(self, confidence: float = 0.95) -> MeanEstimate:  # type: ignore[override]  # a mean, not counts
        """The unbiased mean with its plug-in standard error (module docstring) and a normal CI."""
        pr = self.params
        unit_mean, unit_se = mean_from_histogram(*self._units_and_counts())
        mean, se = pr.low + (pr.high - pr.low) * unit_mean, (pr.high - pr.low) * unit_se
        notes = ("standard error: plug-in sample variance of the per-report values (conservative by the "
                 "spread of the true values)",)
        return MeanEstimate(pr.protocol, self.n, mean, se, confidence, pr.privacy_cost, pr.low, pr.high, notes)

    @classmethod
    @abstractmethod
    def report_variance(cls, params: Any, x: Floats) -> Floats:
        """The exact variance of one report's unbiased value for users holding ``x``."""

    @classmethod
    def exact_variance(cls, params: Any, values: Any) -> float:
        """Exact variance of the mean estimate when the users hold ``values``: ``Σ Var[v | x_i]/n²``."""
        x = checked_values(params, values)
        return float(cls.report_variance(params, x).sum()) / x.size**2 if x.size else float("nan")


class DuchiAggregate(_MeanAggregate):
    """Sufficient statistics of Duchi's mechanism: the counts of bits 0 and 1."""

    params_type: ClassVar[type] = DuchiParams
    params: DuchiParams
    counts: Counts

    @classmethod
    def state_layout(cls, params: DuchiParams) -> StateLayout:
        return {"counts": (np.dtype(np.int64), (2,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self.counts += _bincount(columns["bit"], 2)

    def _units_and_counts(self) -> tuple[Floats, Counts]:
        return _duchi_units(self.params), self.counts

    @classmethod
    def report_variance(cls, params: DuchiParams, x: Floats) -> Floats:
        return duchi_report_variance(params, x)

    @classmethod
    def simulate(cls, params: DuchiParams, values: Any, rng: Any = None) -> DuchiAggregate:
        """Exact aggregate-level draw: ``ones = Σ_x Bin(n_x, P1(x))`` over the distinct values."""
        uniq, cnt = _distinct(params, values)
        agg = cls(params)
        agg.counts[:] = _duchi_counts(params, uniq, cnt, as_generator(rng))
        agg.n = int(cnt.sum())
        return agg


class PiecewiseAggregate(_MeanAggregate):
    """Sufficient statistics of the discrete PM: the count of each cell."""

    params_type: ClassVar[type] = PiecewiseParams
    params: PiecewiseParams
    counts: Counts

    @classmethod
    def state_layout(cls, params: PiecewiseParams) -> StateLayout:
        return {"counts": (np.dtype(np.int64), (params.cells,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self.counts += _bincount(columns["cell"], self.params.cells)

    def _units_and_counts(self) -> tuple[Floats, Counts]:
        return _piecewise_units(self.params), self.counts

    @classmethod
    def report_variance(cls, params: PiecewiseParams, x: Floats) -> Floats:
        return piecewise_report_variance(params, x)

    @classmethod
    def simulate(cls, params: PiecewiseParams, values: Any, rng: Any = None) -> PiecewiseAggregate:
        """Exact aggregate-level draw (module docstring)."""
        uniq, cnt = _distinct(params, values)
        agg = cls(params)
        agg.counts[:] = _pm_counts(params, uniq, cnt, as_generator(rng))
        agg.n = int(cnt.sum())
        return agg


class HybridAggregate(_MeanAggregate):
    """Sufficient statistics of the Hybrid Mechanism: Duchi's bit counts and the PM's cell counts."""

    params_type: ClassVar[type] = HybridParams
    params: HybridParams
    duchi: Counts
    cells: Counts

    @classmethod
    def state_layout(cls, params: HybridParams) -> StateLayout:
        return {"duchi": (np.dtype(np.int64), (2,)), "cells": (np.dtype(np.int64), (params.cells,))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        """One bincount of ``pm·G + out`` (validated rows: ``out < 2`` where ``pm = 0``), in bounded chunks."""
        pm, out, size = columns["pm"], columns["out"], self.params.cells
        total = np.zeros(2 * size, dtype=np.int64)
        for start in range(0, out.size, 1 << 20):
            idx = (pm[start:start + (1 << 20)] != 0).astype(np.uint32) * np.uint32(size)
            np.add(idx, out[start:start + (1 << 20)], out=idx, casting="unsafe")  # out < G: validated
            total += np.bincount(idx, minlength=2 * size)
        self.duchi += total[:2]
        self.cells += total[size:]

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """Rejects ``pm = 0`` rows whose ``out`` is not a bit (``out_of_range``), then the generic checks."""
        cols = batch.columns
        if batch.fingerprint == self.params.fingerprint and {"pm", "out"} <= set(cols):
            pm, out = np.asarray(cols["pm"]), np.asarray(cols["out"])
            if pm.shape == out.shape and pm.ndim == 1:
                bad = (pm == 0) & (out >= 2)
                if bad.any():  # the rest's rejects keep the row numbers of `batch`
                    return self._add_batch_without(batch, bad, "out_of_range", "out must be a bit when pm = 0",
                                                   on_reject, super()._add_batch)
        return super()._add_batch(batch, on_reject)

    def _units_and_counts(self) -> tuple[Floats, Counts]:
        pr = self.params
        # with α = 0 no PM report is ever made (and the PM's constants may not exist): its cells hold 0
        pm = _piecewise_units(pr.piecewise) if pr.alpha > 0 else np.zeros(pr.cells)
        return np.concatenate([_duchi_units(pr.duchi), pm]), np.concatenate([self.duchi, self.cells])

    @classmethod
    def report_variance(cls, params: HybridParams, x: Floats) -> Floats:
        return hybrid_report_variance(params, x)

    @classmethod
    def simulate(cls, params: HybridParams, values: Any, rng: Any = None) -> HybridAggregate:
        """Exact aggregate-level draw: ``Bin(n_x, α)`` PM reports per distinct value, the rest Duchi's."""
        uniq, cnt = _distinct(params, values)
        gen = as_generator(rng)
        n_pm = gen.binomial(cnt, params.alpha)
        agg = cls(params)
        agg.duchi[:] = _duchi_counts(params.duchi, uniq, cnt - n_pm, gen)
        if n_pm.any():
            agg.cells[:] = _pm_counts(params.piecewise, uniq, n_pm, gen)
        agg.n = int(cnt.sum())
        return agg
