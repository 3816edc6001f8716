"""Simulated collections of numbers for the mean protocols (population kind ``"numbers"``: ``duchi``,
``piecewise``, ``hybrid``, the memoized ``memo-mean`` — one report per device per window — and any other the
registry holds).

A :class:`NumericPopulation` draws users' values in ``[low, high]``: uniform, a normal or an
exponential truncated to the bounds (drawn exactly, by rejection or by the inverse CDF), or given
values. :func:`mean_accuracy` (which :func:`ldp.simulation.accuracy` calls for these protocols)
simulates repeated collections from one fixed draw of values, by the aggregate's exact law
(``Aggregate.simulate``) or with every report encoded, and sets the empirical standard error of the
mean estimate beside the exact one (``exact_variance``), with the bias and the CI coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.tabular import OneRowResult
from ldp.encoders.numeric import NumericParams
from ldp.randomness import as_generator
from ldp.simulation.base import Simulation

__all__ = ["NUMERIC_POPULATIONS", "NumericPopulation", "NumericSimulation", "MeanAccuracyResult",
           "exponential_values", "given_values", "is_mean_protocol", "make_numeric_population", "mean_accuracy",
           "normal_values", "read_values", "simulate_mean", "uniform_values"]

Floats = npt.NDArray[np.float64]
Sampler = Callable[[int, np.random.Generator], Floats]


def is_mean_protocol(params: Any) -> bool:
    """Whether ``params`` (or a params type) are a mean protocol's: a simulation draws numbers in ``[low, high]``
    (:attr:`~ldp.encoders.base.ProtocolParams.population_kind` ``"numbers"``)."""
    return getattr(params, "population_kind", None) == "numbers"


@dataclass(frozen=True)
class NumericPopulation:
    """Users' values in ``[low, high]``: ``draw(n, rng)`` samples them, or ``values`` are given."""

    name: str
    low: float
    high: float
    sampler: Sampler | None = None
    values: Floats | None = None

    def draw(self, n: int | None, rng: Any = None) -> Floats:
        """``n`` users' values (given values: all of them, and ``n`` must be ``None`` or their number)."""
        if self.values is not None:
            if n is not None and n != self.values.size:
                raise ValueError(f"population {self.name!r} has {self.values.size} values, asked for {n}")
            return self.values.copy()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        assert self.sampler is not None  # one of the two is set by the constructors
        return self.sampler(int(n), as_generator(rng))


def _bounds(low: float, high: float) -> tuple[float, float]:
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the population's bounds need finite low < high, got low={low}, high={high}")
    return low, high


def _positive(value: float, name: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return float(value)


def uniform_values(low: float, high: float) -> NumericPopulation:
    """Uniform on ``[low, high]``."""
    low, high = _bounds(low, high)
    return NumericPopulation("uniform", low, high, lambda n, gen: gen.uniform(low, high, n))


def normal_values(low: float, high: float, loc: float | None = None, scale: float | None = None) -> NumericPopulation:
    """A normal (default: centred, sd a sixth of the range) truncated to ``[low, high]`` (by rejection)."""
    low, high = _bounds(low, high)
    mu = (low + high) / 2 if loc is None else float(loc)
    sd = _positive((high - low) / 6 if scale is None else scale, "the normal's scale (sd)")
    inside = math.erf((high - mu) / (sd * math.sqrt(2))) / 2 - math.erf((low - mu) / (sd * math.sqrt(2))) / 2
    if not inside > 1e-4:
        raise ValueError(f"a normal({mu:g}, {sd:g}) puts {inside:.2g} of its mass in [{low:g}, {high:g}]: "
                         "move loc or widen scale")

    def draw(n: int, gen: np.random.Generator) -> Floats:
        out = np.empty(0)
        while out.size < n:
            x = gen.normal(mu, sd, int((n - out.size) / inside * 1.1) + 16)
            out = np.concatenate([out, x[(x >= low) & (x <= high)]])
        return out[:n]

    return NumericPopulation("normal", low, high, draw)


def exponential_values(low: float, high: float, loc: float | None = None,
                       scale: float | None = None) -> NumericPopulation:
    """``loc`` (default ``low``) plus an exponential of mean ``scale`` (default a quarter of the range),
    truncated to ``[low, high]`` (exact inverse CDF)."""
    low, high = _bounds(low, high)
    start = low if loc is None else float(loc)
    if not low <= start < high:
        raise ValueError(f"the exponential's loc must be in [low, high), got {start}")
    beta = _positive((high - low) / 4 if scale is None else scale, "the exponential's scale")
    mass = -math.expm1(-(high - start) / beta)  # Pr[start + Exp(beta) <= high]

    def draw(n: int, gen: np.random.Generator) -> Floats:
        return np.minimum(start - beta * np.log1p(-gen.random(n) * mass), high)

    return NumericPopulation("exponential", low, high, draw)


def given_values(values: Sequence[float] | npt.ArrayLike, low: float, high: float) -> NumericPopulation:
    """Exactly these values (each in ``[low, high]``)."""
    low, high = _bounds(low, high)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("the values must be a non-empty list of finite numbers")
    if x.min() < low or x.max() > high:
        raise ValueError(f"the values span [{x.min():g}, {x.max():g}], outside the bounds [{low:g}, {high:g}] "
                         "(pass clip=True in the params and clip them, or widen the bounds)")
    return NumericPopulation("values", low, high, values=x)


NUMERIC_POPULATIONS: dict[str, Callable[..., NumericPopulation]] = {
    "uniform": uniform_values, "normal": normal_values, "exponential": exponential_values,
}


def make_numeric_population(name: str, low: float, high: float, **options: Any) -> NumericPopulation:
    """A named population of numbers in ``[low, high]`` (``uniform``, ``normal``, ``exponential``);
    ``options``: ``loc`` and ``scale`` of the normal and the exponential."""
    if name not in NUMERIC_POPULATIONS:
        raise ValueError(f"unknown numeric population {name!r}; known: {', '.join(NUMERIC_POPULATIONS)}, "
                         "or values from a file (--values FILE)")
    if name == "uniform" and options:
        raise ValueError(f"the uniform population takes no {', '.join(options)}")
    return NUMERIC_POPULATIONS[name](low, high, **options)


def read_values(path: str) -> list[float]:
    """Numbers from a text file: separated by commas, spaces or newlines (``#`` starts a comment)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read values from {path}: {exc}") from None
    out: list[float] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for token in line.split("#", 1)[0].replace(",", " ").split():
            try:
                out.append(float(token))
            except ValueError:
                raise ValueError(f"{path}:{lineno}: not a number: {token!r}") from None
    return out


@dataclass(frozen=True, repr=False)
class MeanAccuracyResult(OneRowResult):
    """Accuracy of a mean mechanism over repeated simulated collections, beside its exact theory (a one-row
    result table: :meth:`rows`)."""

    protocol: str
    population: str
    n: int
    trials: int
    true_mean: float
    mean_estimate: float
    empirical_se: float
    exact_se: float
    reported_se: float
    coverage: float
    confidence: float
    notes: tuple[str, ...] = ()
    estimates: np.ndarray | None = field(default=None, repr=False, compare=False)
    """Every trial's mean estimate (what the conformance battery's pooled variance test reads); not part of the
    row or its JSON."""

    @property
    def bias(self) -> float:
        return self.mean_estimate - self.true_mean

    def summary(self) -> dict[str, Any]:
        """The numbers as one dict (``variance_ratio`` = empirical/exact variance; ``bias_se`` the
        standard error of the measured bias, ``exact_se/√trials``)."""
        return {
            "n": self.n, "trials": self.trials, "true_mean": self.true_mean, "mean_estimate": self.mean_estimate,
            "bias": self.bias, "bias_se": self.exact_se / math.sqrt(self.trials),
            "empirical_se": self.empirical_se, "exact_se": self.exact_se,
            "variance_ratio": (self.empirical_se / self.exact_se) ** 2 if self.exact_se > 0 else math.nan,
            "mean_reported_se": self.reported_se, "coverage": self.coverage, "nominal_coverage": self.confidence,
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row (the summary), for tables and CSV."""
        return [{"protocol": self.protocol, "population": self.population, **self.summary()}]

    def row(self) -> dict[str, Any]:
        return self.rows()[0]

    def title(self) -> str:
        return (f"{self.protocol}: {self.trials} simulated collection{'s' * (self.trials != 1)} of n={self.n:,}, "
                f"population {self.population}")


def simulate_mean(params: Any, values: Any, *, method: str = "aggregate", rng: Any = None,
                  chunk_size: int = 1 << 20) -> Any:
    """One simulated collection of users holding ``values``: the aggregate's exact draw, or every report
    encoded by the vectorized encoder and folded (``method="per_report"``)."""
    from ldp.protocols import get_protocol

    proto, gen = get_protocol(params.protocol), as_generator(rng)
    if method == "aggregate":
        return proto.aggregate_type.simulate(params, values, gen)
    if method != "per_report":
        raise ValueError(f"method must be 'aggregate' or 'per_report', got {method!r}")
    x = np.asarray(values, dtype=np.float64).ravel()
    encoder, agg = proto.encoder_type(params), proto.aggregate_type(params)
    for start in range(0, x.size, chunk_size):
        agg.add(encoder.encode_batch(x[start:start + chunk_size], gen))
    return agg


def mean_accuracy(params: Any, population: NumericPopulation, n: int | None, *, trials: int = 20,
                  method: str = "aggregate", rng: Any = None, confidence: float = 0.95,
                  progress: bool | None = None) -> MeanAccuracyResult:
    """``trials`` collections of ``n`` users' values (one fixed draw): the mean estimates' average,
    bias, empirical SE against the exact SE (``Aggregate.exact_variance`` of those values), the mean
    reported (plug-in) SE and the CI coverage. ``progress``: a bar over the trials (:mod:`ldp.display.progress`)."""
    from ldp.display.progress import iterate
    from ldp.protocols import get_protocol, protocols_taking

    if not is_mean_protocol(params):
        name = getattr(params, "protocol", params)
        raise ValueError(f"mean_accuracy is for {', '.join(protocols_taking('numbers'))}; got {name!r}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    gen = as_generator(rng)
    x = population.draw(n, gen)
    if params.clip:
        x = np.clip(x, params.low, params.high)
    elif x.min() < params.low or x.max() > params.high:
        raise ValueError(f"the population's values span [{x.min():g}, {x.max():g}], outside the params' bounds "
                         f"[{params.low:g}, {params.high:g}] (pass clip=True in the params to clip them)")
    truth = float(x.mean())
    exact = math.sqrt(get_protocol(params.protocol).aggregate_type.exact_variance(params, x))
    means, ses, covered = np.empty(trials), np.empty(trials), 0
    for i in iterate(range(trials), desc=f"simulate {params.protocol}", enabled=progress, unit="trial"):
        est = simulate_mean(params, x, method=method, rng=gen).estimate(confidence)
        means[i], ses[i] = est.mean, est.std_error
        covered += est.ci_low <= truth <= est.ci_high
    sd = float(means.std(ddof=1)) if trials > 1 else math.nan
    notes = ("exact_se: the exact standard error for these values; the reported (plug-in) SE is conservative by "
             "the spread of the values",)
    return MeanAccuracyResult(params.protocol, population.name, int(x.size), trials, truth, float(means.mean()), sd,
                              exact, float(ses.mean()), covered / trials, confidence, notes, means)


class NumericSimulation(Simulation):
    """The mean mechanisms' simulation: users' values, not counts (:func:`simulate_mean`, :func:`mean_accuracy`)."""

    params_type = NumericParams

    def simulate(self, params: Any, truth: Any, *, method: str = "aggregate", rng: Any = None,
                 chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Any:
        """:func:`simulate_mean` of the users' values ``truth`` (``values``: unused, numbers have no strings)."""
        return simulate_mean(params, truth, method=method, rng=rng, chunk_size=chunk_size)

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> MeanAccuracyResult:
        """:func:`mean_accuracy` (``candidates``: unused)."""
        return mean_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                             progress=progress)
