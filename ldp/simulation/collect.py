"""Simulated collections: populations, and the two honest simulation paths (DESIGN.md §3).

* **per report**: every simulated client encodes with the protocol's vectorized
  ``encode_batch`` and the server folds the batches into an aggregate, as a deployment would;
* **aggregate level**: the aggregate's exact distribution is sampled directly
  (``Aggregate.simulate``: sums of independent Bernoullis are binomials), so 10^9 users take
  milliseconds.

Both paths work for any protocol in :mod:`ldp.protocols` whose aggregate defines ``simulate``; the
mean protocols take numbers (:mod:`ldp.simulation.numeric`), ``multi`` a truth per attribute
(:mod:`ldp.simulation.multi`).
Open-domain protocols (RAPPOR, CMS, HCMS, SFP, PEM, rappor-ngrams) are simulated on ``d`` candidate
strings (:func:`default_candidates`), and their accuracy is that of the candidates' estimates; PEM's and
rappor-ngrams' also that of their discovery (:mod:`ldp.simulation.pem`, :mod:`ldp.simulation.ngrams`).
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

import functools
import itertools
import math
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from ldp.decoders.base import Aggregate
from ldp.decoders.tabular import ResultTable, columns_of
from ldp.protocols import get_protocol
from ldp.randomness import as_generator
from ldp.simulation.numeric import (
    MEAN_PROTOCOLS,
    MeanAccuracyResult,
    NumericPopulation,
    is_mean_protocol,
    mean_accuracy,
    simulate_mean,
)

if TYPE_CHECKING:
    from ldp.simulation.multi import MultiAccuracyResult

__all__ = [
    "POPULATIONS", "AccuracyResult", "MeanAccuracyResult", "NumericPopulation", "Population", "accuracy",
    "default_candidates", "exponential", "from_counts", "gaussian", "make_population", "simulate", "uniform", "zipf",
]

METHODS = ("aggregate", "per_report")
MAX_CANDIDATES = 1_000_000  # open-domain simulations hold every candidate string in memory


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


def _check_d(d: int) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"domain size d must be an int >= 1, got {d!r}")
    return int(d)


def uniform(d: int) -> Population:
    """Every value equally likely."""
    return _pmf("uniform", np.ones(_check_d(d)))


def zipf(d: int, s: float = 1.0) -> Population:
    """Zipf(s): value i (0-based) has weight ``1/(i+1)^s``."""
    if not (s >= 0 and math.isfinite(s)):
        raise ValueError(f"zipf exponent s must be finite and >= 0, got {s}")
    return _pmf(f"zipf{s:g}", 1.0 / np.arange(1, _check_d(d) + 1) ** s)


def exponential(d: int, rate: float | None = None) -> Population:
    """Weight ``exp(-rate·i)``; the default rate ``10/d`` gives the last value e^-10 of the first's weight."""
    d = _check_d(d)
    rate = 10.0 / d if rate is None else rate
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"exponential rate must be finite and > 0, got {rate}")
    return _pmf("exponential", np.exp(-rate * np.arange(d)))


def gaussian(d: int, mean: float | None = None, sd: float | None = None) -> Population:
    """A Gaussian discretized to the integers ``0..d-1`` (default: centred, sd = d/6)."""
    d = _check_d(d)
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


def simulate(params: Any, true_counts: Any, *, method: str = "aggregate", rng: Any = None,
             chunk_size: int = 1 << 20, values: Sequence[Any] | None = None) -> Aggregate:
    """Simulate a collection from users with ``true_counts[v]`` holding value ``v``; for the mean
    protocols (``duchi``, ``piecewise``, ``hybrid``, ``memo-mean``) ``true_counts`` is the users' values,
    for ``multi`` ``{attribute: counts or values}``.

    Open-domain protocols (RAPPOR: ``params.domain_size is None``) take ``{string: count}`` or
    counts with their strings in ``values``."""
    if is_mean_protocol(params):  # values, not counts
        return simulate_mean(params, true_counts, method=method, rng=rng, chunk_size=chunk_size)
    if params.protocol == "multi":
        from ldp.simulation.multi import simulate_multi

        return simulate_multi(params, true_counts, method=method, rng=rng)
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
    agg = proto.aggregate_type(params)
    values_idx = np.repeat(np.arange(counts.size, dtype=np.min_scalar_type(max(counts.size - 1, 0))), counts)
    for start in range(0, values_idx.size, chunk_size):
        agg.add(encoder.encode_batch(values_idx[start:start + chunk_size], gen, **kwargs))
    return agg


@dataclass(frozen=True, repr=False)
class AccuracyResult(ResultTable):
    """Accuracy of a protocol over repeated simulated collections, beside its exact theory: one row per
    item (:meth:`rows`), the :meth:`summary` in the metadata."""

    json_rows = "items"

    items: list[str]
    true_count: np.ndarray
    mean_estimate: np.ndarray
    empirical_sd: np.ndarray
    theoretical_sd: np.ndarray
    coverage: np.ndarray
    trials: int
    n: int
    confidence: float
    notes: tuple[str, ...] = ()
    mse: np.ndarray | None = None  # per item, the mean over trials of (estimate − truth)²

    @classmethod
    def from_trials(cls, items: list[str], truth: np.ndarray, est: np.ndarray, covered: np.ndarray,
                    theoretical_sd: np.ndarray, confidence: float, notes: tuple[str, ...] = ()) -> AccuracyResult:
        """The result of ``est``, one row of estimates per trial, against ``truth``: the mean, the sample
        SD (``ddof = 1``; NaN for one trial, where it is undefined), the MSE over trials and the coverage
        from ``covered``, the number of trials whose CI held the truth."""
        trials = est.shape[0]
        truth = np.asarray(truth)
        sd = est.std(axis=0, ddof=1) if trials > 1 else np.full(truth.size, np.nan)
        mse = ((est - truth) ** 2).mean(axis=0)
        return cls(items, truth, est.mean(axis=0), sd, theoretical_sd, covered / trials, trials, int(truth.sum()),
                   confidence, notes, mse)

    def summary(self) -> dict[str, float]:
        """``rmse_count``: √ of the MSE over trials and items (defined for one trial too; without a
        recorded MSE, from the sample SD and the bias)."""
        err2 = self.mse if self.mse is not None else self.empirical_sd**2 + (self.mean_estimate - self.true_count) ** 2
        return {
            "n": self.n, "trials": self.trials, "items": len(self.items),
            "rmse_count": float(np.sqrt(err2.mean())),
            "theoretical_rmse_count": float(np.sqrt((self.theoretical_sd**2).mean())),
            "rmse_fraction": float(np.sqrt(err2.mean())) / self.n,
            "coverage": float(self.coverage.mean()), "nominal_coverage": self.confidence,
        }

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"item": it, "true_count": int(t), "mean_estimate": float(m), "empirical_sd": float(e),
             "theoretical_sd": float(s), "coverage": float(c)}
            for it, t, m, e, s, c in zip(self.items, self.true_count, self.mean_estimate, self.empirical_sd,
                                          self.theoretical_sd, self.coverage, strict=True)
        ]

    def columns(self) -> dict[str, list[Any]]:
        rows = self.rows()
        return columns_of(rows) if rows else {k: [] for k in _ACCURACY_COLUMNS}

    def metadata(self) -> dict[str, Any]:
        return {"summary": self.summary(), "notes": list(self.notes)}

    def title(self) -> str:
        s = self.summary()
        return (f"{s['trials']} simulated collection{'s' * (s['trials'] != 1)} of n={s['n']:,}: RMSE (counts) "
                f"{s['rmse_count']:.4g} vs theory {s['theoretical_rmse_count']:.4g}, CI coverage "
                f"{s['coverage']:.3f} (nominal {s['nominal_coverage']})")


_ACCURACY_COLUMNS = ("item", "true_count", "mean_estimate", "empirical_sd", "theoretical_sd", "coverage")


def default_candidates(params: Any, d: int) -> list[str]:
    """The ``d`` strings an open-domain protocol is simulated on: ``item0 … item{d-1}``; for SFP,
    whose words are spelled in its alphabet, the first ``d`` words in shortlex order
    (``a, b, …, z, aa, ab, …`` with the default alphabet); for PEM the same over ``a–z`` up to its
    ``max_length``; for rappor-ngrams pseudo-random strings of ``max_length`` characters
    (:func:`~ldp.simulation.ngrams.ngram_candidates`)."""
    d = _check_d(d)
    if d > MAX_CANDIDATES:
        raise ValueError(f"an open-domain simulation holds its d candidates in memory: d must be <= "
                         f"{MAX_CANDIDATES:,}, got {d:,}")
    alphabet: str | None = getattr(params, "alphabet", None)
    length: int = getattr(params, "length", 0) or getattr(params, "max_length", 0)
    if params.protocol == "pem":
        alphabet, length = string.ascii_lowercase, params.max_length
    if params.protocol == "rappor-ngrams":
        from ldp.simulation.ngrams import ngram_candidates

        return ngram_candidates(params, d)
    if alphabet is None:
        return [f"item{i}" for i in range(d)]
    spelled = ("".join(t) for size in range(1, length + 1) for t in itertools.product(alphabet, repeat=size))
    words = list(itertools.islice(spelled, d))
    if len(words) < d:
        raise ValueError(f"{params.protocol} words have at most {length} symbols of {alphabet!r}: "
                         f"fewer than d={d} of them")
    return words


def _open_domain(params: Any, population: Population,
                 candidates: Sequence[str] | None) -> tuple[list[str], Any, Callable[[np.ndarray], np.ndarray], str]:
    """For an open-domain protocol: ``(candidates, what its decoder takes, exact variance of the
    candidates' estimates given their true counts, a note on what is estimated)``."""
    from ldp.decoders.sketch import SketchAggregate

    cands = list(candidates if candidates is not None else
                 population.labels if population.labels is not None else default_candidates(params, population.d))
    if len(cands) != population.d or len(set(cands)) != len(cands):
        raise ValueError(f"need {population.d} distinct candidates (one per population value), got {len(cands)} "
                         f"with {len(set(cands))} distinct")
    if params.protocol == "rappor":
        from ldp.decoders.rappor_decode import CandidateMap, exact_count_covariance

        cmap = CandidateMap.from_candidates(params, cands)
        if cmap.duplicates:
            raise ValueError(f"RAPPOR with k·m = {params.num_bloombits}·{params.num_cohorts} Bloom rows cannot tell "
                             f"{len(cands)} candidates apart; raise num_bloombits or num_cohorts")
        note = ("estimates: least squares over every candidate (decode with selection='none'); theory ignores "
                "the cohort-sampling noise")
        return cands, cmap, lambda t: np.diag(exact_count_covariance(params, cmap, t)), note
    if params.protocol == "sfp":
        prepared = [params.prepare_word(w).word for w in cands]
        if len(set(prepared)) != len(prepared):
            raise ValueError("two candidates become the same SFP word once replaced or truncated")
        return (cands, cands, lambda t: SketchAggregate.exact_variance(params.word_params, t),
                "estimates: the word sketch's counts of the candidate words")
    return (cands, cands, lambda t: SketchAggregate.exact_variance(params, t),
            "estimates: the de-biased sketch's counts of the candidates; theory averages over hash functions")


@overload
def accuracy(params: Any, population: Mapping[str, Population | NumericPopulation] | None, n: int, *,
             trials: int = ..., method: str = ..., rng: Any = ..., confidence: float = ...,
             candidates: Sequence[str] | None = ..., progress: bool | None = ...) -> MultiAccuracyResult: ...


@overload
def accuracy(params: Any, population: Population, n: int, *, trials: int = ..., method: str = ..., rng: Any = ...,
             confidence: float = ..., candidates: Sequence[str] | None = ...,
             progress: bool | None = ...) -> AccuracyResult: ...


@overload
def accuracy(params: Any, population: NumericPopulation, n: int | None, *, trials: int = ..., method: str = ...,
             rng: Any = ..., confidence: float = ..., candidates: Sequence[str] | None = ...,
             progress: bool | None = ...) -> MeanAccuracyResult: ...


def accuracy(params: Any, population: Population | NumericPopulation | Mapping[str, Population | NumericPopulation]
             | None, n: int | None, *, trials: int = 20, method: str = "aggregate", rng: Any = None,
             confidence: float = 0.95, candidates: Sequence[str] | None = None,
             progress: bool | None = None) -> AccuracyResult | MeanAccuracyResult | MultiAccuracyResult:
    """Simulate ``trials`` collections of ``n`` users (one fixed draw of true counts) and compare
    the estimates with the truth and with the exact variance formula.

    Open-domain protocols (``params.domain_size is None``) are simulated on ``candidates``: by
    default the population's labels, else :func:`default_candidates`; the error is that of the
    candidates' estimates (RAPPOR: the decoder's least squares over every candidate; CMS/HCMS: the
    de-biased sketch; SFP: the word sketch). PEM returns a :class:`~ldp.simulation.pem.PEMAccuracyResult`:
    its last group's estimates, and its discovery's recall and false strings (:func:`~ldp.simulation.pem.pem_accuracy`);
    rappor-ngrams likewise (:func:`~ldp.simulation.ngrams.ngrams_accuracy`: the full-string estimates).
    ``progress``: a bar over the trials on stderr (``None``: when stderr is a terminal; :mod:`ldp.display.progress`).

    The mean mechanisms take a :class:`~ldp.simulation.numeric.NumericPopulation` and return a
    :class:`~ldp.simulation.numeric.MeanAccuracyResult` (:func:`~ldp.simulation.numeric.mean_accuracy`);
    ``multi`` takes ``{attribute: population}`` (``None`` or missing attributes: Zipf over a domain, uniform
    numbers) and returns a :class:`~ldp.simulation.multi.MultiAccuracyResult`."""
    from ldp.display.progress import iterate

    if params.protocol == "multi" or isinstance(population, Mapping):
        if not (params.protocol == "multi" and (population is None or isinstance(population, Mapping))):
            raise ValueError("multi takes {attribute: population} (or None for the defaults), and only it does")
        from ldp.simulation.multi import multi_accuracy

        assert n is not None
        return multi_accuracy(params, population, n, trials=trials, method=method, rng=rng,
                              confidence=confidence, progress=progress)
    if is_mean_protocol(params) or isinstance(population, NumericPopulation):
        if not (is_mean_protocol(params) and isinstance(population, NumericPopulation)):
            raise ValueError(f"the mean protocols ({', '.join(MEAN_PROTOCOLS)}) take a population of numbers "
                             "(ldp.simulation.numeric), and only they do")
        return mean_accuracy(params, population, n, trials=trials, method=method, rng=rng,
                             confidence=confidence, progress=progress)
    assert isinstance(population, Population) and n is not None  # the other kinds returned above

    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    open_domain = params.domain_size is None
    if not open_domain and population.d != params.domain_size:
        raise ValueError(f"population has {population.d} values, protocol domain has {params.domain_size}")
    if not open_domain and candidates is not None:
        raise ValueError(f"candidates are for open-domain protocols; {params.protocol} has a fixed domain")
    if params.protocol == "rappor-ngrams":
        from ldp.simulation.ngrams import ngrams_accuracy

        return ngrams_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                               candidates=candidates, progress=progress)
    if params.protocol == "pem":
        from ldp.simulation.pem import pem_accuracy

        return pem_accuracy(params, population, n, trials=trials, method=method, rng=rng, confidence=confidence,
                            candidates=candidates, progress=progress)
    proto = get_protocol(params.protocol)
    values: list[str] | None = None
    notes: tuple[str, ...] = ()
    variance: Callable[[np.ndarray], np.ndarray]
    if open_domain:
        values, decoder_input, variance, note = _open_domain(params, population, candidates)
        notes = (note,)
    else:
        variance = functools.partial(proto.aggregate_type.exact_variance, params)
    gen = as_generator(rng)
    truth = population.counts(n, gen)
    est = np.empty((trials, truth.size))
    covered = np.zeros(truth.size)
    for i in iterate(range(trials), desc=f"simulate {params.protocol}", enabled=progress, unit="trial"):
        if open_domain:
            agg = simulate(params, truth, method=method, rng=gen, values=values)
            options = {"selection": "none"} if params.protocol == "rappor" else {}
            e = agg.estimate(decoder_input, confidence=confidence, **options)
        else:
            e = simulate(params, truth, method=method, rng=gen).estimate(confidence)
        est[i] = e.count
        covered += (e.ci_low <= truth) & (truth <= e.ci_high)
    return AccuracyResult.from_trials(e.items, truth, est, covered, np.sqrt(variance(truth)), confidence, notes)


def _csv_cell(v: Any) -> Any:
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        v = v.item()
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else f"{v:.6g}"))
    return "" if v is None else v


def write_rows_csv(path: Any, columns: Sequence[str], rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts) as CSV with the given ``columns`` (missing keys empty, other keys
    ignored); floats with 6 significant digits, ``nan``/``inf`` spelled out. The experiment
    scripts in ``simulations/`` share it."""
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: _csv_cell(r.get(c)) for c in columns})


def comma_list(kind: type = float) -> Callable[[str], list[Any]]:
    """An argparse type for ``"a,b,c"`` lists of ``float`` (``"1/3"`` accepted), ``int``
    (``"1e6"`` accepted) or ``str``: the experiment scripts' shared option parser."""
    def parse(text: str) -> list[Any]:
        out: list[Any] = []
        for t in (t.strip() for t in text.split(",")):
            if not t:
                continue
            if kind is float:
                num, sep, den = t.partition("/")
                out.append(float(num) / float(den) if sep else float(t))
            elif kind is int:
                value = float(t)
                if value != int(value):
                    raise ValueError(f"not an integer: {t!r}")
                out.append(int(value))
            else:
                out.append(kind(t))
        return out

    parse.__name__ = f"{kind.__name__}_list"  # argparse names the type in its error messages
    return parse


def save_png(fig: Any, path: Any, dpi: int = 100) -> None:
    """Save a matplotlib figure and close it; with Pillow (a matplotlib dependency) as a 256-colour
    palette PNG, about a quarter of the size, which keeps figures committed to docs/img small."""
    import io
    from pathlib import Path

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow ships with matplotlib
        Path(path).write_bytes(buf.getvalue())
        return
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(path, optimize=True)
