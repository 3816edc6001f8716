"""Sequence Fragment Puzzle server: puzzle reconstruction (apple-and-theory.md §3.2).

State: one word sketch and one fragment sketch per position (CMS or HCMS sufficient statistics,
integers, so merging is exact). :meth:`SfpAggregate.discover`:

1. hashes the full grid of records ``h ‖ fragment`` (``2^bits·|Σ|^r``) once and scores it in
   every position's fragment sketch (:meth:`~ldp.decoders.sketch.SketchAggregate.oracle`);
2. keeps per position the ``top`` records by estimated count, or only those above the
   variance-derived detection threshold (``alpha``, Bonferroni over the grid), or both;
3. for each hash with a kept record at every position, forms the cartesian product of the kept
   fragments in position order (a cap, ``max_candidates``, stops a blow-up before it happens);
4. prunes candidates whose padding is not a suffix, or whose word hash is not the ``h`` they
   were glued under (a chimera of fragments that cannot come from one word), and scores the rest
   in the word sketch: the discovered words are those detected there, ranked by estimated count.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.murmur import bucket_table
from ldp.batch.sketch import sketch_buckets
from ldp.decoders.base import Aggregate, StateLayout
from ldp.decoders.results import Estimates, column_rows, to_frame
from ldp.decoders.sketch import SketchAggregate, sketch_counts
from ldp.encoders.sfp import SfpParams
from ldp.randomness import as_generator

if TYPE_CHECKING:
    import pandas as pd

    from ldp.decoders.rappor import OpenDomainCounts

logger = logging.getLogger(__name__)

__all__ = ["SfpAggregate", "SfpDiscovery", "CandidateLimitError", "record_grid"]


class CandidateLimitError(ValueError):
    """Reconstruction would form more candidate words than ``max_candidates``."""


def record_grid(params: SfpParams) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """``(hash, fragment symbol indices (N, r), record bytes)`` of every (hash, fragment) pair,
    hash-major, in :meth:`~ldp.encoders.sfp.SfpParams.fragment_record`'s encoding."""
    r, s = params.fragment_length, len(params.symbols)
    frag = np.indices((s,) * r).reshape(r, -1).T  # (s^r, r), lexicographic
    hashes = np.repeat(np.arange(1 << params.hash_bits), frag.shape[0])
    symbols = np.tile(frag, (1 << params.hash_bits, 1))
    hb, sb = params.hash_bytes, params.symbol_bytes
    cols = [(hashes >> (8 * (hb - 1 - i))) & 0xFF for i in range(hb)]
    cols += [(symbols[:, c] >> (8 * (sb - 1 - i))) & 0xFF for c in range(r) for i in range(sb)]
    raw = np.stack(cols, axis=1).astype(np.uint8) if cols else np.zeros((hashes.size, 0), np.uint8)
    width = raw.shape[1]
    blob = raw.tobytes()
    return hashes, symbols, [blob[i:i + width] for i in range(0, len(blob), width)]


@lru_cache(maxsize=1)
def _grid_table(hash_seed: int, num_hashes: int, width: int, hash_bits: int, symbols: str,
                fragment_length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid and its fragment-sketch buckets (d × k'), cached: it depends only on the hash
    family and the grid, not on ε, so repeated reconstructions (budget sweeps) hash it once."""
    from ldp.encoders.cms import CmsParams

    params = SfpParams(1.0, 1.0, alphabet=symbols[:-1], pad=symbols[-1], length=fragment_length,
                       fragment_length=fragment_length, hash_bits=hash_bits)
    hashes, symbols_idx, records = record_grid(params)
    table = sketch_buckets(CmsParams(1.0, num_hashes, width, hash_seed), records)  # buckets depend on seeds, m only
    for a in (hashes, symbols_idx, table):
        a.setflags(write=False)
    return hashes, symbols_idx, table


@dataclass(frozen=True)
class SfpDiscovery:
    """What :meth:`SfpAggregate.discover` found.

    ``words``: the discovered words (detected in the word sketch), ranked by estimated count.
    ``candidates``: every candidate that survived pruning, with its word-sketch estimate.
    ``fragments``: per position, the kept records (``hash``, ``fragment``, ``count``, ``std_error``).
    ``stats``: ``grid`` (records scored per position), ``hashes_complete`` (hashes with a kept
    record at every position), candidates ``formed``, ``pruned_padding``, ``pruned_hash``,
    ``scored`` and ``discovered``."""

    words: Estimates
    candidates: Estimates
    fragments: list[dict[str, Any]]
    stats: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        s = self.stats
        kept = ", ".join(str(len(f["hash"])) for f in self.fragments)
        return (f"SFP reconstruction: grid {s['grid']} records per position; kept [{kept}]; "
                f"{s['hashes_complete']} hashes with a record at every position; {s['formed']} candidates formed, "
                f"{s['pruned_padding']} pruned (padding), {s['pruned_hash']} pruned (hash mismatch), "
                f"{s['scored']} scored in the word sketch, {s['discovered']} discovered")

    def to_dicts(self, part: str = "words") -> list[dict[str, Any]]:
        """Rows of ``part``: ``"words"``, ``"candidates"`` or ``"fragments"`` (one row per kept
        record: ``position``, ``hash``, ``fragment``, ``count``, ``std_error``)."""
        cols = self._columns(part)
        return column_rows(cols, len(cols["count"]))

    def to_pandas(self, part: str = "words") -> pd.DataFrame:
        """``part`` (as in :meth:`to_dicts`) as a DataFrame with typed columns; ``attrs`` holds the
        words' :meth:`~ldp.decoders.results.Estimates.metadata` and ``stats``. Needs pandas."""
        return to_frame(self._columns(part), {**self.words.metadata(), "stats": dict(self.stats)})

    def _columns(self, part: str) -> dict[str, Any]:
        if part in ("words", "candidates"):
            return (self.words if part == "words" else self.candidates).columns()
        if part != "fragments":
            raise ValueError(f"part must be 'words', 'candidates' or 'fragments', got {part!r}")
        frags = self.fragments

        def cat(key: str, dtype: type) -> np.ndarray:
            return np.concatenate([np.asarray(f[key], dtype) for f in frags] or [np.zeros(0, dtype)])

        return {"position": np.repeat(np.arange(len(frags), dtype=np.int64), [len(f["count"]) for f in frags]),
                "hash": cat("hash", np.int64), "fragment": [w for f in self.fragments for w in f["fragment"]],
                "count": cat("count", np.float64), "std_error": cat("std_error", np.float64)}


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

    def _as_sfp(self, est: Estimates) -> Estimates:
        """Word-sketch estimates labelled with what the collection cost: ``sfp``, ε_word + ε_fragment."""
        return replace(est, protocol=self.params.protocol, privacy=self.params.privacy_cost,
                       notes=est.notes + ("counts from the word sketch; the cost is ε_word + ε_fragment",))

    # -- puzzle reconstruction -------------------------------------------------------------------------
    def discover(self, top: int | None = 20, alpha: float | None = 0.05, confidence: float = 0.95,
                 max_candidates: int = 1_000_000, max_grid: int = 1 << 22, *,
                 progress: bool | None = None) -> SfpDiscovery:
        """Reconstruct popular words (module docstring). ``top``: records kept per position
        (``None``: no limit); ``alpha``: keep only records above the detection threshold and report
        only words detected in the word sketch (``None``: no test; every scored candidate is
        reported). ``max_candidates`` and ``max_grid`` bound the work, with a clear error (the
        grid's bucket table takes ``4·k'`` bytes per record: 1 GiB at the default cap, k' = 64).
        ``progress``: a bar over the positions on stderr (``None``: when stderr is a terminal)."""
        from ldp.progress import iterate

        pr = self.params
        if self.n == 0:
            raise ValueError("no reports to reconstruct from (the aggregate is empty)")
        if top is None and alpha is None:
            raise ValueError("give top=, alpha= or both: keeping every record of the grid is never useful")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ValueError(f"top must be a positive int or None, got {top!r}")
        if pr.num_records > max_grid:
            table_gib = pr.num_records * pr.fragment_num_hashes * 4 / 2**30
            raise ValueError(f"the (hash, fragment) grid has {pr.num_records} records, above max_grid={max_grid} "
                             f"(its bucket table would take {table_gib:.1f} GiB); lower hash_bits or "
                             "fragment_length, or raise max_grid")
        hashes, symbols, table = _grid_table(pr.fragment_params.hash_seed, pr.fragment_num_hashes,
                                             pr.fragment_width, pr.hash_bits, pr.symbols, pr.fragment_length)
        positions = iterate(range(pr.num_positions), desc="sfp discover", enabled=progress, unit="position")
        fragments = [self._keep(pos, table, hashes, symbols, top, alpha) for pos in positions]
        mats, complete, stats = self._candidates(fragments, max_candidates)
        stats["grid"] = pr.num_records
        words = self._words(mats, complete, stats)
        test_alpha = 0.05 if alpha is None else alpha
        scored = self.word_sketch().estimate(words, confidence=confidence, alpha=test_alpha)
        order = np.argsort(-scored.count, kind="stable")
        scored = _subset(scored, order)
        scored = self._as_sfp(scored)
        found = scored if alpha is None else _subset(scored, np.flatnonzero(scored.extra["detected"]))
        stats.update(scored=len(scored.items), discovered=len(found.items))
        logger.info("sfp discover: n=%d, %d hash(es) complete at every position, %d candidate word(s) formed, "
                    "%d scored, %d discovered", self.n, stats["hashes_complete"], stats["formed"], stats["scored"],
                    stats["discovered"])
        return SfpDiscovery(found, scored, fragments, stats)

    def _keep(self, position: int, table: np.ndarray, hashes: np.ndarray, symbols: np.ndarray,
              top: int | None, alpha: float | None) -> dict[str, Any]:
        agg = self.fragment_sketch(position)
        count, se, threshold = agg.oracle(table, 0.05 if alpha is None else alpha)
        keep = np.flatnonzero(count > threshold) if alpha is not None else np.arange(count.size)
        keep = keep[np.argsort(-count[keep], kind="stable")][:top]
        chars = np.array(list(self.params.symbols))
        return {"hash": hashes[keep], "symbols": symbols[keep], "count": count[keep], "std_error": se[keep],
                "fragment": ["".join(chars[row]) for row in symbols[keep]]}

    def _candidates(self, fragments: list[dict[str, Any]],
                    cap: int) -> tuple[list[np.ndarray], list[int], dict[str, int]]:
        """The hashes with a kept record at every position and, per hash, the (C, L) symbol
        matrix of the product of its kept fragments."""
        P = len(fragments)
        common = set(fragments[0]["hash"].tolist())
        for f in fragments[1:]:
            common &= set(f["hash"].tolist())
        complete = sorted(common)
        groups = [[f["symbols"][f["hash"] == h] for f in fragments] for h in complete]
        formed = sum(int(np.prod([len(p) for p in parts])) for parts in groups)
        if formed > cap:
            raise CandidateLimitError(
                f"reconstruction would form {formed} candidate words (max_candidates={cap}) from "
                f"{len(groups)} hashes; lower top or alpha, or raise max_candidates")
        mats = []
        for parts in groups:
            grid = np.indices([len(p) for p in parts]).reshape(P, -1)  # every choice, position-major order
            mats.append(np.concatenate([parts[pos][grid[pos]] for pos in range(P)], axis=1))
        return mats, complete, {"hashes_complete": len(groups), "formed": formed}

    def _words(self, mats: list[np.ndarray], complete: list[int], stats: dict[str, int]) -> list[str]:
        """Candidate words (pad stripped) whose padding is a suffix and whose hash matches."""
        pr = self.params
        pad = len(pr.symbols) - 1
        if not mats:
            stats.update(pruned_padding=0, pruned_hash=0)
            return []
        mat = np.concatenate(mats)
        expected = np.concatenate([np.full(len(m), h) for m, h in zip(mats, complete, strict=True)])
        is_pad = mat == pad
        suffix = np.cumsum(is_pad[:, ::-1], axis=1)[:, ::-1] == np.arange(pr.length, 0, -1)  # pad from here on
        ok = ~(is_pad & ~suffix).any(axis=1) & ~is_pad[:, 0]
        stats["pruned_padding"] = int((~ok).sum())
        chars = np.array(list(pr.symbols))[mat[ok]]
        words = [w.rstrip(pr.pad) for w in chars.view(f"<U{pr.length}").ravel().tolist()] if ok.any() else []
        if not words:
            stats["pruned_hash"] = 0
            return []
        got = bucket_table(words, 1 << pr.hash_bits, [pr.word_hash_seed])[:, 0]
        match = got == expected[ok]
        stats["pruned_hash"] = int((~match).sum())
        return [w for w, m in zip(words, match, strict=True) if m]

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


def _subset(est: Estimates, idx: np.ndarray) -> Estimates:
    return Estimates(est.protocol, [est.items[i] for i in idx], est.n, est.count[idx], est.std_error[idx],
                     est.confidence, est.privacy, {k: v[idx] for k, v in est.extra.items()}, est.notes)


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (state arrays are C-contiguous), to be added to in place."""
    v = a.reshape(shape)
    if not np.may_share_memory(v, a):
        raise RuntimeError("state array is not contiguous: an in-place fold would be lost")
    return v
