"""Simulated PEM collections: discovery (recall of the top strings, false strings) and the estimates of
the population's strings against their exact variance.

Each trial draws the reports of the same true counts (:func:`ldp.simulation.simulate`, either path), runs
:meth:`~ldp.decoders.pem.PEMAggregate.discover` and scores every population string with
:meth:`~ldp.decoders.pem.PEMAggregate.estimate` (the last group). The theoretical variance is
:func:`~ldp.decoders.pem.pem_variance` averaged over the last group's size ``N ~ Bin(n, 1/G)`` given
``N ≥ 1``: the variance is ``A·(1/N) + B`` (linear in ``1/N``), so the average is ``A·E[1/N] + B``. Both
follow the parameters' oracle choice (``oracle``: each group's reports and the last group's variance are
its own oracle's, OLH or GRR). The default strings are :func:`pem_candidates`; :class:`PEMSimulation` is what
:func:`ldp.simulation.accuracy` and :func:`ldp.simulation.default_candidates` ask for PEM.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.pem import PEMAggregate
from ldp.decoders.pem_estimator import pem_expected_variance
from ldp.encoders.pem import PEMParams
from ldp.randomness import as_generator
from ldp.simulation.base import (
    Simulation,
    check_candidate_count,
    check_trials,
    population_strings,
    shortlex_words,
    simulate_counts,
)
from ldp.simulation.population import Population
from ldp.simulation.result import AccuracyResult

__all__ = ["PEMAccuracyResult", "PEMSimulation", "pem_accuracy", "pem_candidates", "pem_theoretical_variance",
           "RECALL_AT"]

_R = TypeVar("_R", bound="PEMAccuracyResult")

RECALL_AT = (10, 50, 100)
"""The ``k`` of recall@k (those at most the number of strings users hold; else that number)."""


@dataclass(frozen=True)
class _Discovery:
    """Discovery over the trials: mean recall@k, false strings and strings found per trial, and how
    often each population string was found."""

    recall: dict[int, float]
    false_strings: npt.NDArray[np.int64]
    found: npt.NDArray[np.int64]
    detected: npt.NDArray[np.float64]


@dataclass(frozen=True, repr=False)
class PEMAccuracyResult(AccuracyResult):
    """:class:`~ldp.simulation.AccuracyResult` of the strings' estimates, with discovery: mean ``recall``
    at each k, ``false_strings`` and ``found`` per trial, and ``detected``, how often each string was found."""

    recall: dict[int, float] = field(default_factory=dict)
    false_strings: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    found: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    detected: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def from_base(cls: type[_R], base: AccuracyResult, disc: _Discovery) -> _R:
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(AccuracyResult)}
        return cls(**fields, recall=disc.recall, false_strings=disc.false_strings, found=disc.found,
                   detected=disc.detected)

    def summary(self) -> dict[str, float]:
        out = super().summary()
        out.update({f"recall@{k}": v for k, v in self.recall.items()})
        out.update(false_strings_mean=float(self.false_strings.mean()), false_strings_max=int(self.false_strings.max()),
                   strings_found_mean=float(self.found.mean()))
        return out

    def rows(self) -> list[dict[str, Any]]:
        return [{**r, "detected": float(d)} for r, d in zip(super().rows(), self.detected, strict=True)]


def pem_candidates(params: PEMParams, d: int) -> list[str]:
    """The ``d`` strings PEM is simulated on by default: the first ``d`` words over ``a–z`` of at most
    ``max_length`` letters, in shortlex order (``a, b, …, z, aa, ab, …``)."""
    return shortlex_words(string.ascii_lowercase, params.max_length, d, params.protocol)


pem_theoretical_variance = pem_expected_variance
"""The exact variance of the estimates over the last group's size (0.2's name; defined in the estimator:
:func:`~ldp.decoders.pem_estimator.pem_expected_variance`)."""


def _recall_ks(held: int) -> list[int]:
    ks = [k for k in RECALL_AT if k <= held]
    return ks or ([held] if held else [])


def _discovery_stats(items: Sequence[str], truth: npt.NDArray[np.int64], found: list[list[str]]) -> _Discovery:
    held = {s for s, c in zip(items, truth, strict=True) if c > 0}
    order = [items[i] for i in np.argsort(-truth, kind="stable") if truth[i] > 0]
    ks = _recall_ks(len(order))
    recall = {k: float(np.mean([len(set(order[:k]) & set(f)) / k for f in found])) for k in ks}
    false = np.array([sum(s not in held for s in f) for f in found], np.int64)
    detected = np.array([np.mean([s in f for f in found]) for s in items], np.float64)
    return _Discovery(recall, false, np.array([len(f) for f in found], np.int64), detected)


def pem_accuracy(params: PEMParams, population: Population, n: int, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, top_k: int | None = None, alpha: float | None = 0.05,
                 false_prefixes: float | None = 5.0, alphabet: str | bytes | None = "auto",
                 discover: bool = True) -> PEMAccuracyResult | AccuracyResult:
    """Accuracy of PEM over ``trials`` collections of ``n`` users (one fixed draw of the true counts over
    the population's strings: ``candidates``, the population's labels or :func:`pem_candidates`): a
    :class:`PEMAccuracyResult`. ``top_k``, ``alpha``, ``false_prefixes``, ``alphabet``: discovery's
    (``"auto"``: ``a–z`` when the strings are spelled in it, as the default ones are, else their characters: a
    pruning rule the server may know)."""
    from ldp.display.progress import iterate

    check_trials(trials)
    cands = population_strings(population, candidates,
                               lambda: pem_candidates(params, check_candidate_count(population.d)), "strings")
    padded = [params.padded(s) for s in cands]  # the client's checks: too long, empty, NUL
    if len(set(padded)) != len(padded):
        raise ValueError("two strings become the same PEM value once truncated")
    if alphabet == "auto":
        chars = {c for s in cands for c in s}
        alphabet = string.ascii_lowercase if chars <= set(string.ascii_lowercase) else "".join(sorted(chars))
    gen = as_generator(rng)
    truth = population.counts(n, gen)
    est = np.empty((trials, truth.size))
    covered = np.zeros(truth.size)
    found: list[list[str]] = []
    for i in iterate(range(trials), desc="simulate pem", enabled=progress, unit="trial"):
        agg = simulate_counts(params, truth, method=method, rng=gen, values=cands)
        assert isinstance(agg, PEMAggregate)  # the protocol registry pairs "pem" with PEMAggregate
        if agg.group_n[-1] == 0:
            raise ValueError(f"n={n} users left the last of {params.groups} groups empty: raise n")
        e = agg.estimate(cands, confidence)
        est[i] = e.count
        covered += (e.ci_low <= truth) & (truth <= e.ci_high)
        if discover:
            found.append(list(agg.discover(top_k, alpha, false_prefixes, alphabet, confidence).strings.items))
    theory = np.sqrt(pem_theoretical_variance(params, truth, int(truth.sum())))
    notes = ("estimates: the last group's counts of the population's strings, scaled by n/N; theory averages "
             "the exact variance over the group's size",
             f"discovery: top_k={params.top_k if top_k is None else top_k}, alpha={alpha}, "
             f"false_prefixes={false_prefixes}, alphabet={alphabet!r}; oracles by group: {params.oracle_summary}")
    base = AccuracyResult.from_trials(list(cands), truth, est, covered, theory, confidence, notes)
    return PEMAccuracyResult.from_base(base, _discovery_stats(cands, truth, found)) if discover else base


class PEMSimulation(Simulation):
    """PEM's simulation: strings over ``a–z`` by default (:func:`pem_candidates`), the accuracy of the last group's
    estimates and of the discovery (:func:`pem_accuracy`)."""

    params_type = PEMParams

    def candidates(self, params: Any, d: int) -> list[str]:
        return pem_candidates(params, d)

    def accuracy(self, params: Any, population: Any, n: int | None, *, trials: int = 20, method: str = "aggregate",
                 rng: Any = None, confidence: float = 0.95, candidates: Sequence[str] | None = None,
                 progress: bool | None = None, discover: bool = True) -> PEMAccuracyResult | AccuracyResult:
        assert isinstance(population, Population) and n is not None  # ldp.simulation.accuracy checked the kind
        return pem_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                            candidates=candidates, progress=progress, discover=discover)
