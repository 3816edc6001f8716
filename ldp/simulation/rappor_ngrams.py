"""Simulated collections of RAPPOR with unknown strings (``rappor-ngrams``): discovery (recall of the top
strings, false strings) and the full-string estimates of the population's strings against their exact variance.

Each trial draws the reports of the same true counts (:func:`ldp.simulation.simulate`, either path), runs
:meth:`~ldp.decoders.rappor_ngrams.RapporNgramsAggregate.discover` and scores every population string with
the full-string RAPPOR's least squares over all of them (``selection="none"``), whose exact variance is
:func:`~ldp.decoders.rappor_decode.exact_count_covariance` (as for ``rappor``). The default strings are
:func:`ngram_candidates`: distinct pseudo-random strings of ``max_length`` characters, so every n-gram
position carries information (the shortlex words of :func:`~ldp.simulation.default_candidates` would be
mostly pads). :class:`RapporNgramsSimulation` is what :func:`ldp.simulation.accuracy` and
:func:`ldp.simulation.default_candidates` ask for rappor-ngrams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.decoders.rappor_ngrams import CANDIDATE_SEED as CANDIDATE_SEED, RapporNgramsAggregate, ngram_candidates
from ldp.encoders.rappor_ngrams import RapporNgramsParams
from ldp.randomness import as_generator
from ldp.simulation.base import Simulation, check_trials, population_strings, simulate_counts
from ldp.simulation.pem import PEMAccuracyResult, _discovery_stats
from ldp.simulation.population import Population
from ldp.simulation.rappor import RapporSimulation
from ldp.simulation.result import AccuracyResult

__all__ = ["NgramsAccuracyResult", "RapporNgramsSimulation", "ngrams_accuracy", "ngram_candidates"]



class NgramsAccuracyResult(PEMAccuracyResult):
    """:class:`~ldp.simulation.AccuracyResult` of the full-string estimates, with discovery: mean ``recall``
    at each k, ``false_strings`` and ``found`` per trial, and ``detected``, how often each string was found
    (the fields and summary of :class:`~ldp.simulation.pem.PEMAccuracyResult`)."""


def ngrams_accuracy(params: RapporNgramsParams, population: Population, n: int, *, trials: int = 20,
                    method: str = "aggregate", rng: Any = None, confidence: float = 0.95,
                    candidates: Sequence[str] | None = None, progress: bool | None = None, discover: bool = True,
                    **discovery: Any) -> NgramsAccuracyResult | AccuracyResult:
    """Accuracy of rappor-ngrams over ``trials`` collections of ``n`` users (one fixed draw of the true counts
    over the population's strings: ``candidates``, the population's labels or :func:`ngram_candidates`):
    an :class:`NgramsAccuracyResult`. ``discovery``: options of
    :func:`~ldp.decoders.rappor_ngrams_discovery.discover` (``alpha``, ``gram_alpha``, ``max_grams``, ...)."""
    from ldp.display.progress import iterate

    check_trials(trials)
    cands = population_strings(population, candidates, lambda: ngram_candidates(params, population.d))
    scoring = RapporSimulation().scoring(params.full, cands)  # the full-string RAPPOR's least squares
    encoded = [params.unpad(params.padded(s)) for s in cands]  # the client's checks: alphabet, length, empty
    if encoded != cands:
        raise ValueError("rappor-ngrams simulates strings as the client encodes them: give them within "
                         f"max_length={params.max_length}, not truncated")
    gen = as_generator(rng)
    truth = population.counts(n, gen)
    est = np.empty((trials, truth.size))
    covered = np.zeros(truth.size)
    found: list[list[str]] = []
    for i in iterate(range(trials), desc="simulate rappor-ngrams", enabled=progress, unit="trial"):
        agg = simulate_counts(params, truth, method=method, rng=gen, values=cands)
        assert isinstance(agg, RapporNgramsAggregate)  # the protocol registry pairs the two
        # every population string is a candidate: no client is outside them: no background column, no n-gram check
        e = agg.estimate(scoring.decoder_input, confidence=confidence, background=False, check=False,
                         **scoring.options)
        est[i] = e.count
        covered += (e.ci_low <= truth) & (truth <= e.ci_high)
        if discover:
            found.append(list(agg.discover(confidence=confidence, rng=gen, **discovery).strings.items))
    shown = ", ".join(f"{k}={v}" for k, v in sorted(discovery.items())) or "the decoder's defaults"
    base = AccuracyResult.from_trials(list(cands), truth, est, covered, np.sqrt(scoring.variance(truth)), confidence,
                                      ("estimates: the full-string RAPPOR's least squares over every population string "
                                       "(selection='none'); theory ignores the cohort-sampling noise",
                                       f"discovery: {shown}"))
    return NgramsAccuracyResult.from_base(base, _discovery_stats(cands, truth, found)) if discover else base


class RapporNgramsSimulation(Simulation):
    """rappor-ngrams' simulation: pseudo-random strings of ``max_length`` characters by default
    (:func:`ngram_candidates`), the accuracy of the full-string estimates and of the discovery
    (:func:`ngrams_accuracy`)."""

    params_type = RapporNgramsParams

    def candidates(self, params: Any, d: int) -> list[str]:
        return ngram_candidates(params, d)

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> NgramsAccuracyResult | AccuracyResult:
        assert isinstance(population, Population) and n is not None  # ldp.simulation.accuracy checked the kind
        return ngrams_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                               candidates=candidates, progress=progress, discover=discover)
