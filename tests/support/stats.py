"""The statistical tests' shared arithmetic: the family-wise z of a tolerance, and repeated simulated counts."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np


def z_family(checks: int, alpha: float = 1e-6) -> float:
    """The two-sided z that keeps the false-failure rate of ``checks`` normal checks at ``alpha`` in all
    (Bonferroni)."""
    return NormalDist().inv_cdf(1 - alpha / (2 * checks))


def simulated_counts(params: Any, truth: Any, trials: int, method: str, seed: int) -> np.ndarray:
    """The estimated counts of ``trials`` simulated collections of ``truth`` (one row per collection)."""
    from ldp.simulation.collect import simulate

    gen = np.random.default_rng(seed)
    return np.array([simulate(params, truth, method=method, rng=gen).estimate().count for _ in range(trials)])
