"""RAPPOR, server side: the aggregate, per-cohort Bloom-bit estimates, exact simulation, Google's files.

The sufficient statistics are, per cohort ``c``, the number of reports ``N_c`` and, per bit
``i``, the number of reports with bit ``i`` set, ``c_ci``. Given the true number ``T_ci`` of those
clients whose Bloom filter has bit ``i`` set, ``c_ci ~ Bin(T_ci, q*) + Bin(N_c − T_ci, p*)``
(one report per client: each bit's PRR and IRR coins are independent of every other bit's), so

* ``t_ci = (c_ci − p*·N_c)/(q* − p*)`` is unbiased for ``T_ci``, with ``q* − p* = (1−f)(q−p)``;
* ``Var[t_ci] = (T_ci·q*(1−q*) + (N_c − T_ci)·p*(1−p*)) / (q* − p*)²`` exactly; the plug-in
  estimate uses ``T̂ = N_c·clip(t_ci/N_c, 0, 1)``.

(google/rappor ``EstimateBloomCounts`` uses the same ``t`` with the binomial plug-in
``N r(1−r)``, which adds ``N π(1−π)(q*−p*)²``; rappor-reference.md §3.2.)

Count recovery from candidate strings (lasso selection, least squares, tests) is in
:mod:`ldp.decoders.rappor_decode`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import add_ones_by_group, kernel_in_use
from ldp.batch.rappor_evidence import BitsTogether, cooccurrence_sizes
from ldp.batch.rappor_pair_bins import FREE_BITS, add_pair_bins, ones_bins, pair_bins_shape, pair_halves_shape
from ldp.batch.rappor_pairs import PairChoice, pair_cells_shape, pair_grid_shape
from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.rappor_decode import bit_count_variance
from ldp.encoders.rappor import RapporParams
from ldp.randomness import as_generator

__all__ = ["RapporAggregate", "BitEstimates", "bit_count_variance", "open_domain_counts", "OpenDomainCounts"]

S = TypeVar("S", str, bytes, str | bytes)
OpenDomainCounts = Mapping[S, int] | Sequence[int] | npt.NDArray[np.integer[Any]]
"""True counts of an open-domain protocol (strings of type ``S``): ``{string: clients}``, or counts aligned with
separate ``values``."""


@dataclass(frozen=True)
class BitEstimates:
    """Per-cohort unbiased estimates of the true Bloom-bit counts, shape (m, k), and their variances."""

    count: np.ndarray
    variance: np.ndarray
    cohort_n: np.ndarray

    @property
    def std_error(self) -> np.ndarray:
        return np.sqrt(self.variance)


class RapporAggregate(Aggregate):
    """Per-cohort report counts ``cohort_n`` (m,) and per-bit counts of ones ``ones`` (m, k); for the poisoning
    checks, the reports by number of 1s ``ones_hist`` (k + 1,) and the bits-set-together counts ``together``
    (:mod:`ldp.batch.rappor_evidence`)."""

    params_type: ClassVar[type] = RapporParams
    coin_fields: ClassVar[tuple[str, ...]] = ("pair_cells", "pair_halves")  # the pair test's split, the halves
    params: RapporParams
    cohort_n: npt.NDArray[np.int64]  # (m,), created by _init_state
    ones: npt.NDArray[np.int64]  # (m, k)
    ones_hist: npt.NDArray[np.int64]  # (k + 1,)
    together: npt.NDArray[np.int64]  # (1 + len(cooccurrence_sizes),)
    pair_cells: npt.NDArray[np.int64]  # (m, J, 4(k − 1)): ldp.batch.rappor_pairs
    pair_grid: npt.NDArray[np.int64]  # (m, k + 1, k + 1, k + 1): every pair's cells, ldp.batch.rappor_pairs
    pair_bins: npt.NDArray[np.int64]  # (m, B, (k + 1)(k + 2)/2): every pair's cells, L binned (rappor_pair_bins)
    pair_halves: npt.NDArray[np.int64]  # pair_bins over the reports of half A (m > 16 cohorts; rappor_pair_bins)
    keep_pairs: bool = False  # fill pair_bins above FREE_BITS bits too (the candidates will be tested)
    _together: BitsTogether | None = None  # the fold's choices of bits, made on the first fold
    _pairs: PairChoice | None = None  # the fold's choices of pairs (ldp.batch.rappor_pairs)

    @classmethod
    def state_layout(cls, params: RapporParams) -> StateLayout:
        m, k = params.num_cohorts, params.num_bloombits
        return {"cohort_n": (np.dtype(np.int64), (m,)), "ones": (np.dtype(np.int64), (m, k))}

    @classmethod
    def report_layout(cls, params: RapporParams) -> StateLayout:
        sizes = cooccurrence_sizes(params)
        return {"ones_hist": (np.dtype(np.int64), (params.num_bloombits + 1,)),
                "together": (np.dtype(np.int64), (1 + len(sizes),)),
                "pair_cells": (np.dtype(np.int64), pair_cells_shape(params)),
                "pair_grid": (np.dtype(np.int64), pair_grid_shape(params)),
                "pair_bins": (np.dtype(np.int64), pair_bins_shape(params)),
                "pair_halves": (np.dtype(np.int64), pair_halves_shape(params))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        """Count reports per cohort and ones per (cohort, bit), in place (:func:`~ldp.batch.bits.add_ones_by_group`),
        and the per-report statistics (:class:`~ldp.batch.rappor_evidence.BitsTogether`): with the compiled kernel,
        in one pass over the rows (:meth:`~ldp.batch.rappor_evidence.BitsTogether.fold`); ``pair_bins`` while
        ``k <=`` :data:`~ldp.batch.rappor_pair_bins.FREE_BITS` or :attr:`keep_pairs`
        (:func:`~ldp.batch.rappor_pair_bins.add_pair_bins`), with ``pair_halves`` by a coin of the fold's own."""
        if self._together is None:
            self._together = BitsTogether(self.params)
        if self._pairs is None:
            self._pairs = PairChoice(self.params)
        cohorts, rows = columns["cohort"], columns["bits"]
        self._pairs.add(cohorts, rows, self.pair_cells, self.pair_grid)
        k = self.params.num_bloombits
        if self.pair_bins.size and (k <= FREE_BITS or self.keep_pairs):
            halves = self._pairs.split(np.asarray(cohorts).size) if self.pair_halves.size else None
            add_pair_bins(cohorts, rows, k, ones_bins(self.params), self.pair_bins, halves, self.pair_halves)
        if kernel_in_use():
            self._together.fold(cohorts, rows, self.cohort_n, self.ones, self.ones_hist, self.together)
            return
        add_ones_by_group(cohorts, rows, self.cohort_n, self.ones)
        self._together.add(cohorts, rows, self.ones_hist, self.together)

    # -- step 1 of decoding --------------------------------------------------------------------
    def bit_estimates(self) -> BitEstimates:
        """``t_ci`` and the plug-in ``Var[t_ci]`` (module docstring); cohorts without reports give 0."""
        pr = self.params
        n = self.cohort_n.astype(np.float64)[:, None]
        d = pr.q_star - pr.p_star
        t = (self.ones - pr.p_star * n) / d
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(n > 0, np.clip(t / np.where(n > 0, n, 1), 0.0, 1.0), 0.0)
        var = bit_count_variance(pr, n, share * n)
        return BitEstimates(np.where(n > 0, t, 0.0), var, self.cohort_n.copy())

    # -- exact aggregate-level simulation ----------------------------------------------------------
    @classmethod
    def simulate(cls, params: RapporParams, true_counts: OpenDomainCounts[S], rng: Any = None, *,
                 values: Sequence[S] | None = None, cohorts: str = "uniform") -> RapporAggregate:
        """Exact draw of the aggregate of one report per client (module docstring).

        ``true_counts``: ``{string: clients}``, or counts aligned with ``values``. ``cohorts``:
        ``"uniform"`` (each client's cohort uniform, as deployed) or ``"balanced"`` (each value's
        clients split as evenly as possible over the cohorts: no cohort-sampling noise)."""
        from ldp.batch import check_candidates
        from ldp.batch.rappor import bloom_index_table

        strings, counts = open_domain_counts(true_counts, values)
        cands = check_candidates(strings)
        gen = as_generator(rng)
        m, k = params.num_cohorts, params.num_bloombits
        if cohorts == "uniform":
            per_cohort = gen.multinomial(counts, np.full(m, 1.0 / m)) if counts.size else np.zeros((0, m), np.int64)
        elif cohorts == "balanced":
            per_cohort = counts[:, None] // m + (np.arange(m)[None, :] < (counts % m)[:, None])
        else:
            raise ValueError(f"cohorts must be 'uniform' or 'balanced', got {cohorts!r}")
        # true_bits[c, i]: the clients of cohort c whose Bloom filter has bit i set, a bit two hashes of one value
        # set counted once (each value's hashes sorted, repeats dropped), summed over the values in one pass
        idx = np.sort(bloom_index_table(params, cands), axis=2)
        once = np.ones(idx.shape, dtype=bool)
        once[:, :, 1:] = idx[:, :, 1:] != idx[:, :, :-1]
        flat = np.zeros(m * k, dtype=np.int64)
        np.add.at(flat, (idx + (k * np.arange(m))[None, :, None])[once],
                  np.broadcast_to(per_cohort[:, :, None], idx.shape)[once].astype(np.int64))
        true_bits = flat.reshape(m, k)
        agg = cls(params)
        agg.cohort_n[:] = per_cohort.sum(axis=0)
        agg.ones[:] = gen.binomial(true_bits, params.q_star) + gen.binomial(agg.cohort_n[:, None] - true_bits,
                                                                            params.p_star)
        agg.n = int(counts.sum())
        return agg

    # -- Google's counts.csv -----------------------------------------------------------------------
    @classmethod
    def from_google_counts(cls, params: RapporParams, text: str) -> RapporAggregate:
        """Read Google's ``counts.csv``: m rows ``N_c, c_c0, ..., c_c(k-1)`` (no header)."""
        rows = [ln for ln in text.splitlines() if ln.strip()]
        m, k = params.num_cohorts, params.num_bloombits
        if len(rows) != m:
            raise ValueError(f"counts.csv must have one row per cohort (m={m}), got {len(rows)}")
        try:
            data = np.loadtxt(io.StringIO("\n".join(rows)), delimiter=",", dtype=np.int64, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"counts.csv must hold integers: {exc}") from None
        if data.shape != (m, k + 1):
            raise ValueError(f"counts.csv rows need 1 + k = {k + 1} columns, got {data.shape[1]}")
        if data.min() < 0 or (data[:, 1:] > data[:, :1]).any():
            raise ValueError("counts.csv: every bit count must be in [0, N_c] for its cohort")
        agg = cls(params)
        agg.cohort_n[:] = data[:, 0]
        agg.ones[:] = data[:, 1:]
        agg.n = int(data[:, 0].sum())
        return agg

    def to_google_counts(self) -> str:
        """This aggregate as Google's ``counts.csv`` (readable by google/rappor's analysis)."""
        table = np.column_stack([self.cohort_n, self.ones])
        return "".join(",".join(map(str, row)) + "\n" for row in table.tolist())

    def estimate(self, candidates: Any, **options: Any) -> Any:
        """Counts of ``candidates`` (strings or a :class:`~ldp.decoders.rappor_decode.CandidateMap`):
        see :func:`ldp.decoders.rappor_decode.decode` for the options."""
        from ldp.decoders.rappor_decode import decode

        return decode(self, candidates, **options)

    candidate_dictionary: ClassVar[str] = "required"

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Any:
        """:meth:`estimate` of the candidates with the test at ``alpha`` and ``selection`` (``top``: unused)."""
        if not candidates:
            raise ValueError("rappor estimates the counts of candidate strings: give them")
        return self.estimate(list(candidates), alpha=alpha, confidence=confidence, selection=selection)

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The least-squares count's exact variance over ``domain_size`` synthetic candidates
        (:func:`~ldp.decoders.rappor_decode.exact_count_covariance`), the others holding the rest evenly: its first
        diagonal element alone, ``‖L⁻¹e₀‖²`` for the Cholesky factor ``L`` of ``XᵀΣ⁻¹X`` (a sixth of the whole
        inverse's work, on one thread below :data:`~ldp.batch.threads.SMALL_WORK`; the inverse's element when the
        factorization fails)."""
        from scipy.linalg import LinAlgError, cho_factor, cho_solve

        from ldp.batch.threads import threads_for
        from ldp.decoders.rappor_decode import _exact_information, synthetic_map

        counts = np.full(domain_size, (n - count) / max(domain_size - 1, 1))
        counts[0] = count
        info = _exact_information(params, synthetic_map(params, domain_size), counts)
        first = np.zeros(domain_size)
        first[0] = 1.0
        with threads_for(float(domain_size) ** 3):  # one thread for a small factor (ldp.batch.threads)
            try:
                return float(cho_solve(cho_factor(info, lower=True, check_finite=False), first, check_finite=False)[0])
            except LinAlgError:  # not numerically positive definite: what the inverse gives
                return float(np.linalg.inv(info)[0, 0])

    report_loglik_types: ClassVar[tuple[type, ...]] = (RapporParams,)

    @classmethod
    def report_loglik(cls, params: RapporParams, columns: dict[str, np.ndarray], candidates: Sequence[str | bytes] = (),
                      other: bool = False) -> npt.NDArray[np.float64]:
        """Given the cohort, of each candidate's Bloom filter, and of "other" (``h`` uniform hash positions):
        :func:`ldp.decoders.rappor_likelihood.rappor_loglik`."""
        from ldp.decoders.rappor_likelihood import rappor_loglik

        return rappor_loglik(params, columns, candidates, other)

    @classmethod
    def simulate_estimates(cls, params: Any, true_counts: Any, rng: Any = None, *,
                           values: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each value's clients split evenly over the cohorts (``cohorts="balanced"``: no cohort-sampling noise),
        least squares over every value (``selection="none"``), and the diagonal of
        :func:`~ldp.decoders.rappor_decode.exact_count_covariance`, exact for that split."""
        from ldp.decoders.rappor_decode import CandidateMap, decode, exact_count_covariance

        if values is None:
            raise ValueError("RAPPOR simulates the strings `values` the counts are of")
        cmap = CandidateMap.from_candidates(params, values)
        counts = np.asarray(true_counts).tolist()
        agg = cls.simulate(params, counts, rng, values=cmap.candidates, cohorts="balanced")
        return decode(agg, cmap, selection="none").count, np.diag(exact_count_covariance(params, cmap, counts))


def open_domain_counts(true_counts: OpenDomainCounts[S],
                       values: Sequence[S] | None) -> tuple[list[S], npt.NDArray[np.int64]]:
    """``(strings, counts)`` from ``{string: count}`` or from counts aligned with ``values``."""
    raw: Sequence[int] | npt.NDArray[np.integer[Any]]
    if isinstance(true_counts, Mapping):
        if values is not None:
            raise ValueError("give either a {value: count} mapping or counts with `values`, not both")
        values, raw = list(true_counts), list(true_counts.values())
    else:
        if values is None:
            raise ValueError("open-domain counts need their strings: pass a {value: count} mapping or `values=`")
        raw = true_counts
    counts = np.asarray(raw)
    if counts.ndim != 1 or len(values) != counts.size:
        raise ValueError(f"need one count per value: {len(values)} values, counts of shape {counts.shape}")
    if counts.size and (counts.dtype.kind not in "iu" or counts.min() < 0):
        raise ValueError("true counts must be non-negative integers")
    return list(values), counts.astype(np.int64)
