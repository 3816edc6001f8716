"""Simulated collections of any protocol: :func:`simulate`, :func:`accuracy` and :func:`default_candidates` ask
the protocol's :class:`~ldp.simulation.base.Simulation` (DESIGN.md §3; the two honest paths are described in
:mod:`ldp.simulation.base`).

Every protocol in :mod:`ldp.protocols` whose aggregate defines ``simulate`` is simulated; what a protocol takes is
its params' :attr:`~ldp.encoders.base.ProtocolParams.population_kind`: counts over its domain (a
:class:`~ldp.simulation.population.Population`), numbers (the mean protocols, a
:class:`~ldp.simulation.numeric.NumericPopulation`) or one population per attribute (``multi``).
Open-domain protocols (RAPPOR, CMS, HCMS, SFP, PEM, rappor-ngrams) are simulated on ``d`` candidate strings
(:func:`default_candidates`), and their accuracy is that of the candidates' estimates; PEM's and
rappor-ngrams' also that of their discovery (:mod:`ldp.simulation.pem`, :mod:`ldp.simulation.rappor_ngrams`).

The populations, :class:`~ldp.simulation.result.AccuracyResult` and the experiment scripts' helpers live in
:mod:`ldp.simulation.population`, :mod:`ldp.simulation.result` and :mod:`ldp.simulation.scripts`; their names
are importable from here too.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, overload

from ldp.decoders.base import Aggregate
from ldp.encoders.base import ProtocolParams
from ldp.lazy import subclasses_in
from ldp.simulation.base import MAX_CANDIDATES as MAX_CANDIDATES, METHODS as METHODS, Simulation, check_candidate_count
from ldp.simulation.numeric import MeanAccuracyResult, NumericPopulation
from ldp.simulation.population import (
    POPULATIONS,
    Population,
    exponential,
    from_counts,
    gaussian,
    make_population,
    uniform,
    zipf,
)
from ldp.simulation.result import AccuracyResult
from ldp.simulation.scripts import comma_list as comma_list, save_png as save_png, write_rows_csv as write_rows_csv

if TYPE_CHECKING:
    from ldp.simulation.multi import MultiAccuracyResult

__all__ = [
    "POPULATIONS", "AccuracyResult", "MeanAccuracyResult", "NumericPopulation", "Population", "accuracy",
    "default_candidates", "exponential", "from_counts", "gaussian", "make_population", "simulate", "simulation_for",
    "uniform", "zipf",
]

@cache
def simulations() -> dict[type[ProtocolParams], Simulation]:
    """The :class:`~ldp.simulation.base.Simulation` of every params type simulated otherwise than by the
    defaults, found in the modules of :mod:`ldp.simulation` (imported on the first call)."""
    found: dict[type[ProtocolParams], Simulation] = {}
    for cls in subclasses_in(__name__.rpartition(".")[0], Simulation):
        for params_type in cls.params_type if isinstance(cls.params_type, tuple) else (cls.params_type,):
            if params_type in found:
                raise RuntimeError(f"two simulations serve {params_type.__name__}")
            found[params_type] = cls()
    return found


def simulation_for(params: Any) -> Simulation:
    """The simulation of ``params`` (or of a params type): the one serving the nearest class of its type's MRO,
    or the defaults (counts)."""
    known = simulations()
    for cls in (params if isinstance(params, type) else type(params)).__mro__:
        if cls in known:
            return known[cls]
    return Simulation()


def simulate(params: Any, true_counts: Any, *, method: str = "aggregate", rng: Any = None,
             chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Aggregate:
    """Simulate a collection from users with ``true_counts[v]`` holding value ``v``; for the mean
    protocols (``duchi``, ``piecewise``, ``hybrid``, ``memo-mean``) ``true_counts`` is the users' values,
    for ``multi`` ``{attribute: counts or values}``.

    Open-domain protocols (RAPPOR: ``params.domain_size is None``) take ``{string: count}`` or
    counts with their strings in ``values``."""
    return simulation_for(params).simulate(params, true_counts, method=method, rng=rng, chunk_size=chunk_size,
                                           values=values)


def default_candidates(params: Any, d: int) -> list[str]:
    """The ``d`` strings an open-domain protocol is simulated on: ``item0 … item{d-1}``; for SFP,
    whose words are spelled in its alphabet, the first ``d`` words in shortlex order
    (``a, b, …, z, aa, ab, …`` with the default alphabet); for PEM the same over ``a–z`` up to its
    ``max_length``; for rappor-ngrams pseudo-random strings of ``max_length`` characters
    (:func:`~ldp.simulation.rappor_ngrams.ngram_candidates`). Each protocol's
    :meth:`~ldp.simulation.base.Simulation.candidates`."""
    return simulation_for(params).candidates(params, check_candidate_count(d))


def _population_kind(population: Any) -> str:
    """What a population is a population of: ``"attributes"`` (a mapping, or ``None`` for the defaults),
    ``"numbers"`` or ``"counts"``."""
    if population is None or isinstance(population, Mapping):
        return "attributes"
    return "numbers" if isinstance(population, NumericPopulation) else "counts"


def _check_population(params: Any, population: Any) -> None:
    """``ValueError`` unless ``population`` is of the kind the protocol takes, naming the protocols that take the
    kind other than counts involved."""
    given, wanted = _population_kind(population), getattr(params, "population_kind", "counts")
    if given == wanted:
        return
    from ldp.protocols import protocols_taking

    if "attributes" in (given, wanted):
        takers = ", ".join(protocols_taking("attributes"))
        raise ValueError(f"{takers} takes {{attribute: population}} (or None for the defaults), and only it does")
    raise ValueError(f"the mean protocols ({', '.join(protocols_taking('numbers'))}) take a population of numbers "
                     "(ldp.simulation.numeric), and only they do")


@overload
def accuracy(params: Any, population: Mapping[str, Population | NumericPopulation] | None, n: int, *,
             trials: int = ..., method: str = ..., rng: Any = ..., confidence: float = ...,
             candidates: Sequence[str] | None = ..., progress: bool | None = ...,
             discover: bool = ...) -> MultiAccuracyResult: ...


@overload
def accuracy(params: Any, population: Population, n: int, *, trials: int = ..., method: str = ..., rng: Any = ...,
             confidence: float = ..., candidates: Sequence[str] | None = ...,
             progress: bool | None = ..., discover: bool = ...) -> AccuracyResult: ...


@overload
def accuracy(params: Any, population: NumericPopulation, n: int | None, *, trials: int = ..., method: str = ...,
             rng: Any = ..., confidence: float = ..., candidates: Sequence[str] | None = ...,
             progress: bool | None = ..., discover: bool = ...) -> MeanAccuracyResult: ...


def accuracy(params: Any, population: Population | NumericPopulation | Mapping[str, Population | NumericPopulation]
             | None, n: int | None, *, trials: int = 20, method: str = "aggregate", rng: Any = None,
             confidence: float = 0.95, candidates: Sequence[str] | None = None,
             progress: bool | None = None,
             discover: bool = True) -> AccuracyResult | MeanAccuracyResult | MultiAccuracyResult:
    """Simulate ``trials`` collections of ``n`` users (one fixed draw of true counts) and compare
    the estimates with the truth and with the exact variance formula: the protocol's
    :meth:`~ldp.simulation.base.Simulation.accuracy`.

    Open-domain protocols (``params.domain_size is None``) are simulated on ``candidates``: by
    default the population's labels, else :func:`default_candidates`; the error is that of the
    candidates' estimates (RAPPOR: the decoder's least squares over every candidate; CMS/HCMS: the
    de-biased sketch; SFP: the word sketch). PEM returns a :class:`~ldp.simulation.pem.PEMAccuracyResult`:
    its last group's estimates, and its discovery's recall and false strings (:func:`~ldp.simulation.pem.pem_accuracy`);
    rappor-ngrams likewise (:func:`~ldp.simulation.rappor_ngrams.ngrams_accuracy`: the full-string estimates).
    ``progress``: a bar over the trials on stderr (``None``: when stderr is a terminal; :mod:`ldp.display.progress`).
    ``discover=False`` skips the discovery a protocol runs in each trial (PEM, rappor-ngrams: their result is then a
    plain :class:`~ldp.simulation.result.AccuracyResult` of the estimates), for when only the estimates matter.

    The mean mechanisms take a :class:`~ldp.simulation.numeric.NumericPopulation` and return a
    :class:`~ldp.simulation.numeric.MeanAccuracyResult` (:func:`~ldp.simulation.numeric.mean_accuracy`);
    ``multi`` takes ``{attribute: population}`` (``None`` or missing attributes: Zipf over a domain, uniform
    numbers) and returns a :class:`~ldp.simulation.multi.MultiAccuracyResult`."""
    _check_population(params, population)
    return simulation_for(params).accuracy(params, population, n, trials=trials, method=method, rng=rng,
                                           confidence=confidence, candidates=candidates, progress=progress,
                                           discover=discover)
