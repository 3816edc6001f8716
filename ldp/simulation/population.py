"""Populations of users' values over a domain ``0..d-1``: the truth a simulated collection of counts is drawn from
(the mean protocols take numbers instead, :mod:`ldp.simulation.numeric`; ``multi`` one population per attribute,
:mod:`ldp.simulation.multi`)."""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.randomness import as_generator

__all__ = ["POPULATIONS", "Population", "check_domain_size", "exponential", "from_counts", "gaussian",
           "make_population", "uniform", "zipf"]


@dataclass(frozen=True)
class Population:
    """A distribution of users' values over the domain ``0..d-1`` (``pmf`` sums to 1)."""

    name: str
    pmf: np.ndarray
    labels: tuple[str, ...] | None = None
    fixed_counts: np.ndarray | None = field(default=None, repr=False)

    @property
    def d(self) -> int:
        return int(self.pmf.size)

    def counts(self, n: int, rng: Any = None, exact: bool = False) -> npt.NDArray[np.int64]:
        """True counts of ``n`` users: a multinomial draw, or with ``exact=True`` the
        largest-remainder rounding of ``n·pmf`` (deterministic). User-supplied counts are returned as given."""
        if self.fixed_counts is not None:
            if n != int(self.fixed_counts.sum()):
                raise ValueError(f"population {self.name!r} has {int(self.fixed_counts.sum())} users, asked for {n}")
            return self.fixed_counts.copy()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        if not exact:
            return as_generator(rng).multinomial(int(n), self.pmf).astype(np.int64)
        raw = self.pmf * n
        c = np.floor(raw).astype(np.int64)
        c[np.argsort(c - raw, kind="stable")[: int(n - c.sum())]] += 1
        return c


def _pmf(name: str, weights: np.ndarray, labels: Sequence[str] | None = None) -> Population:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size < 1 or not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise ValueError(f"population {name!r} needs non-negative finite weights with a positive sum")
    return Population(name, w / w.sum(), tuple(labels) if labels is not None else None)


def check_domain_size(d: int) -> int:
    """``int(d)`` if it is an int >= 1, else ``ValueError``."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"domain size d must be an int >= 1, got {d!r}")
    return int(d)


def uniform(d: int) -> Population:
    """Every value equally likely."""
    return _pmf("uniform", np.ones(check_domain_size(d)))


def zipf(d: int, s: float = 1.0) -> Population:
    """Zipf(s): value i (0-based) has weight ``1/(i+1)^s``."""
    if not (s >= 0 and math.isfinite(s)):
        raise ValueError(f"zipf exponent s must be finite and >= 0, got {s}")
    return _pmf(f"zipf{s:g}", 1.0 / np.arange(1, check_domain_size(d) + 1) ** s)


def exponential(d: int, rate: float | None = None) -> Population:
    """Weight ``exp(-rate·i)``; the default rate ``10/d`` gives the last value e^-10 of the first's weight."""
    d = check_domain_size(d)
    rate = 10.0 / d if rate is None else rate
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"exponential rate must be finite and > 0, got {rate}")
    return _pmf("exponential", np.exp(-rate * np.arange(d)))


def gaussian(d: int, mean: float | None = None, sd: float | None = None) -> Population:
    """A Gaussian discretized to the integers ``0..d-1`` (default: centred, sd = d/6)."""
    d = check_domain_size(d)
    mean = (d - 1) / 2 if mean is None else mean
    sd = d / 6 if sd is None else sd
    if not (sd > 0 and math.isfinite(sd)):
        raise ValueError(f"gaussian sd must be finite and > 0, got {sd}")
    return _pmf("gaussian", np.exp(-0.5 * ((np.arange(d) - mean) / sd) ** 2))


def from_counts(counts: Sequence[int], labels: Sequence[str] | None = None) -> Population:
    """A population with exactly these user counts per value."""
    c = np.asarray(counts)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer) or c.size == 0 or c.min() < 0 or c.sum() == 0:
        raise ValueError("counts must be a non-empty 1-D array of non-negative integers with a positive sum")
    pop = _pmf("counts", c, labels)
    return Population(pop.name, pop.pmf, pop.labels, c.astype(np.int64))


POPULATIONS: dict[str, Callable[..., Population]] = {
    "uniform": uniform, "zipf": zipf, "exponential": exponential, "gaussian": gaussian,
}


def make_population(name: str, d: int, **options: Any) -> Population:
    """A named population (``uniform``, ``zipf``, ``exponential``, ``gaussian``) over ``d`` values."""
    if name not in POPULATIONS:
        raise ValueError(f"unknown population {name!r}; known: {', '.join(POPULATIONS)}")
    return POPULATIONS[name](d, **options)
