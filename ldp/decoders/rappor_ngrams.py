"""RAPPOR with unknown strings, server side: the aggregate that keeps the paired n-gram reports.

:class:`RapporNgramsAggregate` keeps the full-string RAPPOR counts (per cohort ``N_c`` and ones per bit,
exactly :class:`~ldp.decoders.rappor.RapporAggregate`'s state: :meth:`~RapporNgramsAggregate.full_aggregate`)
and every accepted report's n-gram part as arrays (``gram_cohort``, ``pos_a``, ``pos_b``, ``gram_a``,
``gram_b``): the association EM needs each client's two n-gram reports together, so they cannot be
summed into counts. Serialized in the aggregate format with the arrays at their real length (as
:class:`~ldp.decoders.pem.PEMAggregate`), so :meth:`Aggregate.from_bytes` reads it through the
``_load_state`` hook. A report with ``pos_a >= pos_b`` is rejected as ``bad_value``.

Discovery (finding the strings nobody listed) is :func:`ldp.decoders.rappor_ngrams_discovery.discover`,
also :meth:`RapporNgramsAggregate.discover`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.bits import add_ones_by_group, row_padding_mask
from ldp.decoders.aggregate_file import (
    AggregateFormatError,
    StateLayout,
    _count,
    _read_header,
    read_state,
    write_aggregate,
)
from ldp.decoders.base import Aggregate, RejectHandler
from ldp.decoders.rappor import RapporAggregate, open_domain_counts
from ldp.encoders.rappor_ngrams import RapporNgramsParams
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

if TYPE_CHECKING:
    from ldp.decoders.rappor_decode import RapporEstimates
    from ldp.decoders.rappor_ngrams_discovery import NgramDiscovery

__all__ = ["CANDIDATE_SEED", "RapporNgramsAggregate", "ngram_candidates"]

CANDIDATE_SEED = 20_160_718
"""The fixed seed of :func:`ngram_candidates` (the same strings in every run)."""

_U8 = np.dtype(np.uint8)


class RapporNgramsAggregate(Aggregate):
    """Full-string counts ``cohort_n`` (m,), ``ones`` (m, k) and the n-gram reports as arrays (module docstring)."""

    params_type: ClassVar[Any] = RapporNgramsParams
    params: RapporNgramsParams
    cohort_n: npt.NDArray[np.int64]  # (m,), created by _init_state
    ones: npt.NDArray[np.int64]  # (m, k)
    _COLUMNS: ClassVar[tuple[tuple[str, Any], ...]] = (
        ("gram_cohort", np.uint16), ("pos_a", np.uint8), ("pos_b", np.uint8), ("gram_a", np.uint8),
        ("gram_b", np.uint8))

    @classmethod
    def state_layout(cls, params: RapporNgramsParams) -> StateLayout:
        m, k = params.num_cohorts, params.num_bloombits
        return {"cohort_n": (np.dtype(np.int64), (m,)), "ones": (np.dtype(np.int64), (m, k))}

    def _init_state(self) -> None:
        super()._init_state()
        self._parts: list[tuple[npt.NDArray[Any], ...]] = []
        self._joined: tuple[npt.NDArray[Any], ...] | None = None
        self._derived: tuple[tuple[npt.NDArray[Any], ...] | None, dict[Any, Any]] = (None, {})

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        add_ones_by_group(columns["cohort"], columns["bits"], self.cohort_n, self.ones)
        self._parts.append(tuple(np.asarray(columns[name]).astype(dt) for name, dt in self._COLUMNS))
        self._joined = None

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """The base's checks, after rejecting (``bad_value``) the rows with ``pos_a >= pos_b``."""
        p = self.params
        names = {f.name for f in batch.schema}
        if (batch.protocol, batch.fingerprint) != (p.protocol, p.fingerprint) or not {"pos_a", "pos_b"} <= names:
            return super()._add_batch(batch, on_reject)  # rejected whole by the base
        bad = np.asarray(batch.columns["pos_a"]).astype(np.int64) >= np.asarray(batch.columns["pos_b"])
        if not bad.any():
            return super()._add_batch(batch, on_reject)
        return self._add_batch_without(batch, bad, "bad_value", "pos_a must be < pos_b", on_reject,
                                       super()._add_batch)

    def reports(self) -> dict[str, npt.NDArray[Any]]:
        """The n-gram columns of every accepted report, in arrival order."""
        if self._joined is None:
            w = (self.params.gram_bloombits + 7) // 8
            empty = [np.zeros((0, w) if name.startswith("gram_") and name != "gram_cohort" else 0, dt)
                     for name, dt in self._COLUMNS]
            self._joined = tuple(np.concatenate([p[i] for p in self._parts]) if self._parts else empty[i]
                                 for i in range(len(self._COLUMNS)))
            self._parts = [self._joined]
        return dict(zip([c for c, _ in self._COLUMNS], self._joined, strict=True))

    def _derived_value(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, a pure function of the n-gram reports, computed once per state of those reports (kept
        with the joined columns of :meth:`reports`, which every fold or merge replaces): the n-gram check reads
        each position's complete-dictionary fit, the same for every candidate list it checks."""
        self.reports()
        tag, values = self._derived
        if tag is not self._joined:  # the reports changed (or never cached): drop what came from the old ones
            values = {}
            self._derived = (self._joined, values)
        if key not in values:
            values[key] = compute()
        return values[key]

    def merge(self, other: RapporNgramsAggregate) -> RapporNgramsAggregate:
        super().merge(other)
        self._parts.extend(other._parts)
        self._joined = None
        return self

    # -- the parts the analysis reads ------------------------------------------------------------------
    def full_aggregate(self) -> RapporAggregate:
        """The full-string reports as a :class:`~ldp.decoders.rappor.RapporAggregate` (a copy)."""
        agg = RapporAggregate(self.params.full)
        agg.cohort_n[:], agg.ones[:], agg.n = self.cohort_n, self.ones, self.n
        return agg

    def position_aggregate(self, position: int) -> RapporAggregate:
        """Every n-gram report at ``position`` (from either slot) as a RAPPOR aggregate of the n-gram parameters."""
        r = self.reports()
        agg = RapporAggregate(self.params.gram)
        for pos, bits in ((r["pos_a"], r["gram_a"]), (r["pos_b"], r["gram_b"])):
            sel = pos == position
            add_ones_by_group(r["gram_cohort"][sel], bits[sel], agg.cohort_n, agg.ones)
            agg.n += int(sel.sum())
        return agg

    def pair_columns(self, a: int, b: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The report columns (``cohort``, ``bits``) of the n-grams at ``a`` and at ``b`` of the clients that
        reported the pair ``(a, b)``, row ``i`` of both from client ``i``
        (for :func:`ldp.decoders.association.associate`)."""
        r = self.reports()
        sel = (r["pos_a"] == a) & (r["pos_b"] == b)
        cohort = r["gram_cohort"][sel].astype(np.int64)
        return {"cohort": cohort, "bits": r["gram_a"][sel]}, {"cohort": cohort, "bits": r["gram_b"][sel]}

    def estimate(self, candidates: Any, *, check: bool = True, check_alpha: float = 0.01,
                 **options: Any) -> RapporEstimates:
        """Counts of full-string ``candidates`` (:func:`ldp.decoders.rappor_decode.decode` and its options), with
        the clients holding other strings fitted as a background (``background=True`` unless given): candidates
        proposed by discovery rarely hold every client, and without it the others' Bloom bits inflate the
        candidates sharing them (docs/protocols/rappor-ngrams.md). ``check``: then test the counts against the
        n-gram reports at ``check_alpha`` and widen the errors when they do not fit
        (:func:`ldp.decoders.rappor_ngrams_fit.checked`)."""
        from ldp.decoders.rappor_decode import decode
        from ldp.decoders.rappor_ngrams_fit import checked

        est = decode(self.full_aggregate(), candidates, **{"background": True, **options})
        return checked(self, est, check_alpha) if check else est

    candidate_dictionary: ClassVar[str] = "optional"

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Any:
        """The full-string estimates of the candidates (test at ``alpha``, ``selection``), else the strings
        :meth:`discover` finds (``top``: unused)."""
        if candidates:
            return self.estimate(list(candidates), alpha=alpha, confidence=confidence, selection=selection)
        return self.discover(alpha=alpha, confidence=confidence).strings

    def discover(self, **options: Any) -> NgramDiscovery:
        """Find the frequent strings from the n-gram reports (:func:`ldp.decoders.rappor_ngrams_discovery.discover`)."""
        from ldp.decoders.rappor_ngrams_discovery import discover

        return discover(self, **options)

    @classmethod
    def simulate(cls, params: RapporNgramsParams, true_counts: Any, rng: Any = None, *,
                 values: list[Any] | None = None) -> RapporNgramsAggregate:
        """The aggregate of one report from each client holding ``true_counts`` (``{string: count}``, or counts
        with ``values``), drawn with the client's law in batch (:func:`ldp.batch.rappor_ngrams.ngrams_encode_batch`)."""
        from ldp.batch.rappor_ngrams import ngrams_encode_batch

        words, counts = open_domain_counts(true_counts, values)
        idx = np.repeat(np.arange(len(words)), counts)
        gen, agg = as_generator(rng), cls(params)
        for start in range(0, idx.size, 1 << 20):
            agg._fold(ngrams_encode_batch(params, idx[start:start + (1 << 20)], gen, candidates=words))
        agg.n = int(idx.size)
        return agg

    # -- serialization: the base format with the report arrays at their real length ------------------
    def _layout(self) -> StateLayout:
        w = (self.params.gram_bloombits + 7) // 8
        cols = {name: (np.dtype(dt), (self.n, w) if name in ("gram_a", "gram_b") else (self.n,))
                for name, dt in self._COLUMNS}
        return {**self.state_layout(self.params), **cols}

    def to_bytes(self) -> bytes:
        """The aggregate file format (:func:`~ldp.decoders.base.write_aggregate`), the reports at their length."""
        state = {"cohort_n": self.cohort_n, "ones": self.ones, **self.reports()}
        return write_aggregate(self.params, self.n, self.rejected, self._layout(), state)

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> RapporNgramsAggregate:
        """The aggregate of :meth:`to_bytes` (the checks of :meth:`Aggregate.from_bytes`)."""
        agg = Aggregate.from_bytes(data)
        if not isinstance(agg, RapporNgramsAggregate):
            raise AggregateFormatError(f"not a rappor_ngrams aggregate ({type(agg).__name__})")
        return agg

    @classmethod
    def _load_state(cls, data: memoryview, header: dict[str, Any], params: RapporNgramsParams) -> RapporNgramsAggregate:
        """The aggregate of a checked header (parameters and fingerprint verified) and its arrays."""
        _read_header(data)  # the generic loader read it already; cheap, and keeps this callable alone
        agg = cls(params)
        agg.n = _count(header["n"], "n")
        state = {k: v.copy() for k, v in read_state(data, header, agg._layout()).items()}
        _check_state(params, agg.n, state)
        agg.cohort_n[:], agg.ones[:] = state["cohort_n"], state["ones"]
        agg._parts = [tuple(state[name].astype(dt) for name, dt in cls._COLUMNS)]
        agg.rejected = Counter({str(k): _count(v, f"rejected[{k}]") for k, v in dict(header["rejected"]).items()})
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The full-string RAPPOR's least-squares variance over the ``domain_size`` (at least 2) strings a
        simulation uses by default (:func:`ngram_candidates`), the others holding the rest evenly."""
        from ldp.decoders.rappor_decode import exact_count_covariance
        from ldp.decoders.rappor_map import CandidateMap

        d = max(domain_size, 2)
        counts = np.full(d, (n - count) / (d - 1))
        counts[0] = count
        cmap = CandidateMap.from_candidates(params.full, ngram_candidates(params, d))
        return float(exact_count_covariance(params.full, cmap, counts)[0, 0])


def ngram_candidates(params: RapporNgramsParams, d: int) -> list[str]:
    """``d`` distinct strings of exactly ``max_length`` characters of the alphabet, drawn uniformly with a
    fixed seed (:data:`CANDIDATE_SEED`); ``ValueError`` when there are fewer than ``d`` such strings."""
    alphabet, length = params.alphabet, params.max_length
    if len(alphabet) ** length < 2 * d:  # a small space: enumerate it, then shuffle
        space = ["".join(t) for t in itertools.product(alphabet, repeat=length)]
        if len(space) < d:
            raise ValueError(f"rappor-ngrams strings of {length} characters of {alphabet!r}: fewer than d={d}")
        order = np.random.default_rng(CANDIDATE_SEED).permutation(len(space))[:d]
        return [space[i] for i in order]
    gen = np.random.default_rng(CANDIDATE_SEED)
    chars = np.array(list(alphabet))
    out: dict[str, None] = {}
    while len(out) < d:
        for row in gen.integers(0, len(alphabet), size=(d, length)):
            out.setdefault("".join(chars[row]), None)
            if len(out) == d:
                break
    return list(out)


def _check_state(params: RapporNgramsParams, n: int, s: dict[str, npt.NDArray[Any]]) -> None:
    """``AggregateFormatError`` unless the loaded arrays could come from ``n`` valid reports."""
    cn, ones = s["cohort_n"], s["ones"]
    if (cn < 0).any() or int(cn.sum()) != n or (ones < 0).any() or (ones > cn[:, None]).any():
        raise AggregateFormatError("aggregate full-string counts are inconsistent (negative, over N_c, or not n)")
    if n and (int(s["gram_cohort"].max()) >= params.gram_cohorts or int(s["pos_b"].max()) >= params.positions
              or (s["pos_a"] >= s["pos_b"]).any()):
        raise AggregateFormatError("aggregate n-gram reports are out of range for their parameters")
    pad = row_padding_mask(params.gram_bloombits)
    if n and ((s["gram_a"] & ~pad).any() or (s["gram_b"] & ~pad).any()):
        raise AggregateFormatError("aggregate n-gram reports set bits past the Bloom filter")
