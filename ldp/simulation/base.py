"""What the simulation layer asks of a protocol, with the answers for counts: :class:`Simulation`.

A simulated collection draws the reports of users whose true values are known, by one of two honest paths
(DESIGN.md §3):

* **per report**: every simulated client encodes with the protocol's vectorized ``encode_batch`` and the
  server folds the batches into an aggregate, as a deployment would;
* **aggregate level**: the aggregate's exact distribution is sampled directly (``Aggregate.simulate``: sums
  of independent Bernoullis are binomials), so 10^9 users take milliseconds.

The defaults here are those of a protocol counting values (:attr:`~ldp.encoders.base.ProtocolParams.population_kind`
``"counts"``): a fixed domain's true counts, or an open domain's counts of ``d`` candidate strings. A protocol
simulated otherwise subclasses :class:`Simulation` in its own module of :mod:`ldp.simulation` (named after its
family: :mod:`ldp.simulation.pem`, :mod:`ldp.simulation.numeric`, ...) and sets :attr:`Simulation.params_type`;
:func:`ldp.simulation.collect.simulation_for` finds it by scanning the package, as the registry finds the
encoders and aggregates, so the simulation layer names no protocol.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ldp.decoders.base import Aggregate
from ldp.decoders.candidates import synthetic_candidates
from ldp.encoders.base import ProtocolParams
from ldp.protocols import get_protocol
from ldp.randomness import as_generator
from ldp.simulation.population import Population, check_domain_size
from ldp.simulation.result import AccuracyResult

__all__ = ["METHODS", "MAX_CANDIDATES", "CandidateScoring", "Simulation", "check_candidate_count", "check_trials",
           "population_strings", "shortlex_words", "simulate_counts"]

METHODS = ("aggregate", "per_report")
MAX_CANDIDATES = 1_000_000  # open-domain simulations hold every candidate string in memory


def check_trials(trials: int) -> int:
    """``trials`` if it is an int >= 1, else ``ValueError``."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    return trials


def check_candidate_count(d: int) -> int:
    """``int(d)`` if an open-domain simulation can hold ``d`` candidate strings (``1 <= d <=``
    :data:`MAX_CANDIDATES`), else ``ValueError``."""
    d = check_domain_size(d)
    if d > MAX_CANDIDATES:
        raise ValueError(f"an open-domain simulation holds its d candidates in memory: d must be <= "
                         f"{MAX_CANDIDATES:,}, got {d:,}")
    return d


def shortlex_words(alphabet: str, length: int, d: int, protocol: str) -> list[str]:
    """The first ``d`` words of at most ``length`` symbols of ``alphabet`` in shortlex order (``a, b, …, z, aa,
    ab, …``); ``ValueError`` naming ``protocol`` when there are fewer."""
    spelled = ("".join(t) for size in range(1, length + 1) for t in itertools.product(alphabet, repeat=size))
    words = list(itertools.islice(spelled, d))
    if len(words) < d:
        raise ValueError(f"{protocol} words have at most {length} symbols of {alphabet!r}: fewer than d={d} of them")
    return words


def population_strings(population: Population, given: Sequence[str] | None, default: Callable[[], list[str]],
                       what: str = "candidates") -> list[str]:
    """The strings an open-domain simulation gives the population's values: ``given``, else the population's
    labels, else ``default()``; ``ValueError`` unless one distinct string per value."""
    strings = list(given if given is not None else population.labels if population.labels is not None
                   else default())
    if len(strings) != population.d or len(set(strings)) != len(strings):
        raise ValueError(f"need {population.d} distinct {what} (one per population value), got {len(strings)} "
                         f"with {len(set(strings))} distinct")
    return strings


def simulate_counts(params: Any, true_counts: Any, *, method: str = "aggregate", rng: Any = None,
                    chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Aggregate:
    """One collection from users with ``true_counts[v]`` holding value ``v``, by either path (module docstring).

    Open-domain protocols (``params.domain_size is None``) take ``{string: count}`` or counts with their strings
    in ``values``."""
    proto = get_protocol(params.protocol)
    gen = as_generator(rng)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if params.domain_size is None:
        from ldp.decoders.rappor import open_domain_counts

        strings, counts = open_domain_counts(true_counts, values)
        if method == "aggregate":
            return proto.aggregate_type.simulate(params, counts, gen, values=strings)
        encoder, kwargs = proto.encoder_type(params), {"candidates": strings}
    else:
        counts = np.asarray(true_counts, dtype=np.int64)
        if counts.shape != (params.domain_size,) or (counts.size and counts.min() < 0):
            raise ValueError(f"true counts must be {params.domain_size} non-negative integers, "
                             f"got shape {counts.shape}")
        if method == "aggregate":
            return proto.aggregate_type.simulate(params, counts, gen)
        encoder, kwargs = proto.encoder_type(params), {}
    agg: Aggregate = proto.aggregate_type(params)
    values_idx = np.repeat(np.arange(counts.size, dtype=np.min_scalar_type(max(counts.size - 1, 0))), counts)
    for start in range(0, values_idx.size, chunk_size):
        agg.add(encoder.encode_batch(values_idx[start:start + chunk_size], gen, **kwargs))
    return agg


@dataclass(frozen=True)
class CandidateScoring:
    """How an open-domain simulation scores its candidate strings: what the aggregate's ``estimate`` takes for
    them (``decoder_input``) with ``options``, the exact variance of their estimates given their true counts,
    and a note on what is estimated."""

    decoder_input: Any
    variance: Callable[[np.ndarray], np.ndarray]
    note: str
    options: Mapping[str, Any] = field(default_factory=dict)


class Simulation:
    """The simulation layer's questions to a protocol, answered for one counting values (fixed domain or open).

    A protocol simulated otherwise subclasses this in its own module of :mod:`ldp.simulation` and sets
    :attr:`params_type`; the methods take the protocol's params."""

    params_type: ClassVar[type[ProtocolParams] | tuple[type[ProtocolParams], ...]] = ()
    """The params types these answers are for (none here: the answers for every other protocol). A subclass of a
    params type listed is served too, unless another simulation lists it."""

    def simulate(self, params: Any, truth: Any, *, method: str = "aggregate", rng: Any = None,
                 chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Aggregate:
        """One simulated collection of users holding ``truth`` (:func:`simulate_counts`)."""
        return simulate_counts(params, truth, method=method, rng=rng, chunk_size=chunk_size, values=values)

    def candidates(self, params: Any, d: int) -> list[str]:
        """The ``d`` strings (``d`` already checked by :func:`check_candidate_count`) an open-domain protocol is
        simulated on when none are given: ``item0 … item{d-1}``."""
        return synthetic_candidates(d)

    def scoring(self, params: Any, candidates: list[str]) -> CandidateScoring:
        """How the candidates' estimates are made (open domain): the aggregate's ``estimate`` of the candidate
        list, and its ``exact_variance``."""
        aggregate_type = get_protocol(params.protocol).aggregate_type
        return CandidateScoring(candidates, functools.partial(aggregate_type.exact_variance, params),
                                "estimates: the aggregate's counts of the candidates")

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> Any:
        """``trials`` collections of ``n`` users (one fixed draw of true counts from ``population``): each value's
        estimates against the truth and the exact variance (an :class:`~ldp.simulation.result.AccuracyResult`).

        Open-domain protocols are simulated on ``candidates``: by default the population's labels, else
        :meth:`candidates`; their estimates and variance are :meth:`scoring`'s. ``discover``: whether a simulation
        that runs a discovery in each trial (PEM, rappor-ngrams) runs it; nothing to discover here."""
        from ldp.display.progress import iterate

        assert isinstance(population, Population) and n is not None  # ldp.simulation.accuracy checked the kind
        check_trials(trials)
        open_domain = params.domain_size is None
        if not open_domain and population.d != params.domain_size:
            raise ValueError(f"population has {population.d} values, protocol domain has {params.domain_size}")
        if not open_domain and candidates is not None:
            raise ValueError(f"candidates are for open-domain protocols; {params.protocol} has a fixed domain")
        values: list[str] | None = None
        scoring: CandidateScoring | None = None
        if open_domain:
            values = population_strings(population, candidates,
                                        lambda: self.candidates(params, check_candidate_count(population.d)))
            scoring = self.scoring(params, values)
            variance: Callable[[np.ndarray], np.ndarray] = scoring.variance
            notes: tuple[str, ...] = (scoring.note,)
        else:
            variance = functools.partial(get_protocol(params.protocol).aggregate_type.exact_variance, params)
            notes = ()
        gen = as_generator(rng)
        truth = population.counts(n, gen)
        est = np.empty((trials, truth.size))
        covered = np.zeros(truth.size)
        for i in iterate(range(trials), desc=f"simulate {params.protocol}", enabled=progress, unit="trial"):
            agg = self.simulate(params, truth, method=method, rng=gen, values=values)
            if scoring is not None:
                e = agg.estimate(scoring.decoder_input, confidence=confidence, **scoring.options)
            else:
                e = agg.estimate(confidence)
            est[i] = e.count
            covered += (e.ci_low <= truth) & (truth <= e.ci_high)
        return AccuracyResult.from_trials(e.items, truth, est, covered, np.sqrt(variance(truth)), confidence, notes)
