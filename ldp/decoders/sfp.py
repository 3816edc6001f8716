"""Sequence Fragment Puzzle server: the aggregate (apple-and-theory.md §3.2).

State: one word sketch and one fragment sketch per position (CMS or HCMS sufficient statistics,
integers, so merging is exact). :meth:`SfpAggregate.estimate` queries the word sketch for given
words; :meth:`SfpAggregate.discover` reconstructs the popular words from the sketches
(:mod:`ldp.decoders.sfp_discovery`), with both of its tests peeled given the fixed hash family
(:mod:`ldp.decoders.sfp_peeling`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.results import Estimates
from ldp.decoders.sfp_discovery import FALSE_RECORDS_PER_HASH, SfpDiscovery, reconstruct, record_grid
from ldp.decoders.sfp_peeling import PEEL_LIMIT, peeled_oracle
from ldp.decoders.sketch import SketchAggregate, even_f2, sketch_counts, sketch_variance
from ldp.encoders.sfp import SfpParams
from ldp.errors import CandidateLimitError
from ldp.randomness import as_generator

if TYPE_CHECKING:
    from ldp.decoders.rappor import OpenDomainCounts

__all__ = ["SfpAggregate", "SfpDiscovery", "CandidateLimitError", "record_grid", "peeled_oracle",
           "FALSE_RECORDS_PER_HASH", "PEEL_LIMIT"]


class SfpAggregate(Aggregate):
    """Word sketch (``word_row_n``, ``word_sums``) and per-position fragment sketches
    (``fragment_row_n`` (P, k'), ``fragment_sums`` (P, k', m')) of SFP reports."""

    params_type: ClassVar[Any] = SfpParams
    params: SfpParams
    word_row_n: npt.NDArray[np.int64]  # (k,), created by _init_state
    word_sums: npt.NDArray[np.int64]  # (k, m)
    fragment_row_n: npt.NDArray[np.int64]  # (P, k')
    fragment_sums: npt.NDArray[np.int64]  # (P, k', m')

    @classmethod
    def state_layout(cls, params: SfpParams) -> StateLayout:
        word = SketchAggregate.state_layout(params.word_params)
        frag = SketchAggregate.state_layout(params.fragment_params)
        P = params.num_positions
        return {"word_row_n": word["row_n"], "word_sums": word["sums"],
                "fragment_row_n": (frag["row_n"][0], (P, *frag["row_n"][1])),
                "fragment_sums": (frag["sums"][0], (P, *frag["sums"][1]))}

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        pr = self.params
        w, f = pr.word_params, pr.fragment_params
        word = {k[5:]: v for k, v in columns.items() if k.startswith("word_")}
        sketch_counts(w, word["hash"], word, w.num_hashes, out=(self.word_row_n, self.word_sums))
        frag = {k[9:]: v for k, v in columns.items() if k.startswith("fragment_")}
        G = pr.num_positions * f.num_hashes
        gtype: np.dtype[np.integer[Any]] = np.dtype(np.uint16) if G <= 65535 else np.dtype(np.int64)
        groups = columns["position"].astype(gtype) * gtype.type(f.num_hashes) + frag["hash"].astype(gtype)
        out = (_view(self.fragment_row_n, (G,)), _view(self.fragment_sums, (G, f.width)))  # group = position·k' + hash
        sketch_counts(f, groups, frag, G, out=out)

    # -- the sketches ---------------------------------------------------------------------------------
    def word_sketch(self) -> SketchAggregate:
        """The whole-word sketch as a :class:`SketchAggregate` (a copy): query any word's count."""
        agg = SketchAggregate(self.params.word_params)
        agg.row_n[:], agg.sums[:], agg.n = self.word_row_n, self.word_sums, self.n
        return agg

    def fragment_sketch(self, position: int) -> SketchAggregate:
        """Position ``position``'s fragment sketch (a copy); its ``n`` is that position's reports."""
        if not 0 <= position < self.params.num_positions:
            raise ValueError(f"position must be in [0, {self.params.num_positions}), got {position}")
        agg = SketchAggregate(self.params.fragment_params)
        agg.row_n[:], agg.sums[:] = self.fragment_row_n[position], self.fragment_sums[position]
        agg.n = int(self.fragment_row_n[position].sum())
        return agg

    def estimate(self, words: Sequence[str], confidence: float = 0.95, alpha: float = 0.05) -> Estimates:
        """Word-sketch estimates of given words (as the client encodes them: replaced, truncated)."""
        prepared = [self.params.prepare_word(w).word for w in words]
        return self._as_sfp(self.word_sketch().estimate(prepared, confidence=confidence, alpha=alpha))

    candidate_dictionary: ClassVar[str] = "optional"

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Estimates:
        """:meth:`estimate` of the candidates, else the words :meth:`discover` finds (``selection``: unused)."""
        if candidates:
            return self.estimate(list(candidates), confidence=confidence, alpha=alpha)
        return self.discover(top=top, alpha=alpha, confidence=confidence).words

    def _as_sfp(self, est: Estimates) -> Estimates:
        """Word-sketch estimates labelled with what the collection cost: ``sfp``, ε_word + ε_fragment."""
        return replace(est, protocol=self.params.protocol, privacy=self.params.privacy_cost,
                       notes=est.notes + ("counts from the word sketch; the cost is ε_word + ε_fragment",))

    # -- puzzle reconstruction -------------------------------------------------------------------------
    def discover(self, top: int | None = None, alpha: float | None = 0.05, confidence: float = 0.95,
                 max_candidates: int = 1_000_000, max_grid: int = 1 << 22, *,
                 false_records: float | None = None, peel: bool = True,
                 progress: bool | None = None) -> SfpDiscovery:
        """Reconstruct popular words (:mod:`ldp.decoders.sfp_discovery`).

        ``alpha``: the expected number of false words reported (words nobody holds). Each of the
        ``C`` candidates scored in the word sketch is tested at level ``alpha/C`` (at most 1/2), so
        ``E[false words] ≤ alpha`` and ``P(any false word) ≤ alpha``, over random hash families.
        ``None``: no tests at all (every scored candidate is reported; needs ``top``).
        ``false_records``: the expected number of records nobody holds kept per position (the
        fragment stage only proposes candidates, so this buys power, not false words): a record is
        kept when its estimate exceeds ``z_{1−q/N}·sd₀`` with ``q = false_records`` and ``N =
        2^hash_bits·|Σ|^r`` the grid (level ``q/N`` per record, at most 1/2). ``None``: ``100`` per
        256 hashes (:data:`~ldp.decoders.sfp_discovery.FALSE_RECORDS_PER_HASH` · ``2^hash_bits``; 100 with
        the 8-bit hash). ``peel``: peel heavy records off the sketches
        (:func:`~ldp.decoders.sfp_peeling.peeled_oracle`) in both tests, which removes the bias that the
        one fixed hash family gives absent records and chimeras sharing rows with heavy ones (``False``:
        the raw estimates, calibrated only over hash families).
        ``top``: keep at most the ``top`` largest detected records per position (``None``, the
        default: every detected record; with ``alpha=None``, the ``top`` largest with no test).
        ``max_candidates`` and ``max_grid`` bound the work, with a clear error (the grid's bucket
        table takes ``4·k'`` bytes per record: 1 GiB at the default cap, k' = 64).
        ``progress``: a bar over the positions on stderr (``None``: when stderr is a terminal)."""
        return reconstruct(self, top, alpha, confidence, max_candidates, max_grid, false_records=false_records,
                           peel=peel, progress=progress)

    # -- exact aggregate-level simulation ----------------------------------------------------------------
    @classmethod
    def simulate(cls, params: SfpParams, true_counts: OpenDomainCounts[str], rng: Any = None, *,
                 values: Sequence[str] | None = None) -> SfpAggregate:
        """Exact draw of the aggregate: each word's users split over positions by a multinomial,
        then the word sketch and every position's fragment sketch drawn by
        :meth:`SketchAggregate.simulate` (a user's word and fragment reports are independent given
        the word, so the parts are independent given the counts)."""
        from ldp.batch.sfp import prepare_words
        from ldp.decoders.rappor import open_domain_counts

        words, counts = open_domain_counts(true_counts, values)
        gen = as_generator(rng)
        prepared = prepare_words(params, words)
        counts = counts.astype(np.int64)
        agg = cls(params)
        agg.n = int(counts.sum())
        word_counts: dict[str, int] = {}
        for p, c in zip(prepared, counts.tolist(), strict=True):
            word_counts[p.word] = word_counts.get(p.word, 0) + c
        ws = SketchAggregate.simulate(params.word_params, word_counts, gen)
        agg.word_row_n[:], agg.word_sums[:] = ws.row_n, ws.sums
        P = params.num_positions
        split = gen.multinomial(counts, np.full(P, 1.0 / P)) if counts.size else np.zeros((0, P), np.int64)
        for pos in range(P):
            rec: dict[bytes, int] = {}
            for p, c in zip(prepared, split[:, pos].tolist(), strict=True):
                key = params.fragment_record(p.hash, params.fragment_at(p.padded, pos))
                rec[key] = rec.get(key, 0) + c
            fs = SketchAggregate.simulate(params.fragment_params, rec, gen)
            agg.fragment_row_n[pos], agg.fragment_sums[pos] = fs.row_n, fs.sums
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The word sketch's :func:`~ldp.decoders.sketch.sketch_variance`."""
        f2 = even_f2(n, count, domain_size) if f2 is None else f2
        return float(sketch_variance(params.word_params, count, n, f2))


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (state arrays are C-contiguous), to be added to in place."""
    v = a.reshape(shape)
    if not np.may_share_memory(v, a):
        raise RuntimeError("state array is not contiguous: an in-place fold would be lost")
    return v
