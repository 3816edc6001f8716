"""HH_B's simulation (:mod:`ldp.encoders.range_tree`): the buckets' consistent counts, as for any counting protocol,
and the accuracy of range queries beside their exact variance.

:class:`HHSimulation.accuracy` runs the collections of the default (every bucket's estimate against the truth and
the exact variance) and, on the same collections, answers ``RANGES`` random ranges of buckets (uniform over the pairs
``a ≤ b``, every length): the measured MSE of their counts over the trials is set beside the exact one
(:func:`~ldp.decoders.range_tree_queries.exact_cdf_covariance`), in the result's notes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.encoders.range_tree import HHParams
from ldp.simulation.base import Simulation, check_trials
from ldp.simulation.population import Population
from ldp.simulation.result import AccuracyResult

__all__ = ["HHSimulation", "RANGES", "range_mse"]

RANGES = 200
"""Random ranges answered per simulated collection."""


def range_mse(cov: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact ``Var`` of ranges ``[a, b]`` from the prefix counts' covariance ``cov`` (``P_{−1} = 0``)."""
    c = np.zeros((cov.shape[0] + 1,) * 2)
    c[1:, 1:] = cov
    return c[b + 1, b + 1] + c[a, a] - 2 * c[a, b + 1]


class HHSimulation(Simulation):
    """HH_B's answers (:class:`~ldp.simulation.base.Simulation`): the default counts, and range queries' accuracy."""

    params_type = HHParams

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Any = None,
                 progress: bool | None = None, discover: bool = True) -> AccuracyResult:
        """The buckets' accuracy (module docstring), with the range queries' in the notes."""
        from ldp.decoders.range_tree import HHAggregate
        from ldp.decoders.range_tree_queries import exact_cdf_covariance
        from ldp.display.progress import iterate
        from ldp.randomness import as_generator

        assert isinstance(population, Population) and n is not None
        check_trials(trials)
        if candidates is not None:
            raise ValueError(f"candidates are for open-domain protocols; {params.protocol} has a fixed domain")
        if population.d != params.domain_size:
            raise ValueError(f"population has {population.d} values, protocol domain has {params.domain_size}")
        gen = as_generator(rng)
        truth = population.counts(n, gen)
        D = truth.size
        a, b = gen.integers(0, D, RANGES), gen.integers(0, D, RANGES)
        a, b = np.minimum(a, b), np.maximum(a, b)
        prefix = np.concatenate([[0], np.cumsum(truth)])
        want = prefix[b + 1] - prefix[a]
        est, covered = np.empty((trials, D)), np.zeros(D)
        err2 = np.zeros(RANGES)
        for i in iterate(range(trials), desc=f"simulate {params.protocol}", enabled=progress, unit="trial"):
            agg = self.simulate(params, truth, method=method, rng=gen)
            e = agg.estimate(confidence)
            est[i] = e.count
            covered += (e.ci_low <= truth) & (truth <= e.ci_high)
            got = np.concatenate([[0.0], np.cumsum(e.count)])
            err2 += (got[b + 1] - got[a] - want) ** 2
        exact = range_mse(exact_cdf_covariance(params, truth), a, b) if D <= 2048 else None
        measured = float(err2.mean() / trials)
        note = (f"range queries: {RANGES} random ranges of buckets (every length), MSE of their counts "
                f"{measured:.6g} measured over {trials} trials")
        if exact is not None:
            note += f", {float(exact.mean()):.6g} exact (ratio {measured / float(exact.mean()):.3f})"
        sd = np.sqrt(HHAggregate.exact_variance(params, truth))
        return AccuracyResult.from_trials(e.items, truth, est, covered, sd, confidence,
                                          ("estimates: the buckets' consistent counts", note))
