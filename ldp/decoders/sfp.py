"""Sequence Fragment Puzzle server: puzzle reconstruction (apple-and-theory.md §3.2).

State: one word sketch and one fragment sketch per position (CMS or HCMS sufficient statistics,
integers, so merging is exact). :meth:`SfpAggregate.discover`:

1. hashes the full grid of records ``h ‖ fragment`` (``N = 2^bits·|Σ|^r``) once and scores it in
   every position's fragment sketch (:meth:`~ldp.decoders.sketch.SketchAggregate.oracle`);
2. keeps per position the records above the detection threshold ``z_{1−q/N}·sd₀``, where ``q``
   (``false_records``) is the expected number of records nobody holds that a position keeps;
   ``top`` (off by default) then keeps only the largest of them;
3. for each hash with a kept record at every position, forms the cartesian product of the kept
   fragments in position order (a cap, ``max_candidates``, stops a blow-up before it happens);
4. prunes candidates whose padding is not a suffix, or whose word hash is not the ``h`` they
   were glued under (a chimera of fragments that cannot come from one word), and scores the rest
   in the word sketch, each at level ``alpha/C`` over the ``C`` scored candidates: the word
   sketch is independent of the fragment sketches given the counts, so the expected number of
   false words reported is at most ``alpha`` (Bonferroni's bound is the sum of the levels). The
   discovered words are those detected there, ranked by estimated count.

Both levels hold over random hash families (apple-and-theory.md §1.4). Given the one fixed family
of a deployment, a record or word sharing rows with heavy ones is biased upward (by thousands of
absent records per position on a heavy head), so both tests are peeled (:func:`peeled_oracle`):
the detected records are taken off the sketch and everything is scored again without them.
"""

from __future__ import annotations

import logging
import math
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
from ldp.decoders.sketch import SketchAggregate, even_f2, sketch_counts, sketch_variance
from ldp.decoders.tabular import ResultTable, jsonable
from ldp.encoders.sfp import SfpParams
from ldp.errors import CandidateLimitError
from ldp.randomness import as_generator

if TYPE_CHECKING:
    import pandas as pd

    from ldp.decoders.rappor import OpenDomainCounts

logger = logging.getLogger(__name__)

__all__ = ["SfpAggregate", "SfpDiscovery", "CandidateLimitError", "record_grid", "peeled_oracle",
           "FALSE_RECORDS_PER_HASH", "PEEL_LIMIT"]

PEEL_LIMIT = 5000
""":func:`peeled_oracle` peels from at most this many records above the threshold (the largest)."""

FALSE_RECORDS_PER_HASH = 100 / 256
""":meth:`SfpAggregate.discover`'s default ``false_records`` is this times ``2^hash_bits`` (100 at 8 bits):
about 0.4 absent records per hash and position, so they rarely complete a hash on their own and add
about ``1.4^P`` candidates to a real word's hash."""


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


@dataclass(frozen=True, repr=False)
class SfpDiscovery(ResultTable):
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

    json_rows = "words"

    def columns(self) -> dict[str, Any]:
        """The discovered words' columns (the other parts: :meth:`to_dicts` and :meth:`to_pandas`)."""
        return self._columns("words")

    def metadata(self) -> dict[str, Any]:
        """The words' :meth:`~ldp.decoders.results.Estimates.metadata` and ``stats``."""
        return {**self.words.metadata(), "stats": jsonable(self.stats)}

    def title(self) -> str:
        return self.summary()

    def result_notes(self) -> tuple[str, ...]:
        return self.words.notes

    def to_dicts(self, part: str = "words") -> list[dict[str, Any]]:
        """Rows of ``part``: ``"words"``, ``"candidates"`` or ``"fragments"`` (one row per kept
        record: ``position``, ``hash``, ``fragment``, ``count``, ``std_error``)."""
        cols = self._columns(part)
        return column_rows(cols, len(cols["count"]))

    def to_pandas(self, part: str = "words") -> pd.DataFrame:
        """``part`` (as in :meth:`to_dicts`) as a DataFrame with typed columns; ``attrs`` holds the
        :meth:`metadata`. Needs pandas."""
        return to_frame(self._columns(part), self.metadata())

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
    def discover(self, top: int | None = None, alpha: float | None = 0.05, confidence: float = 0.95,
                 max_candidates: int = 1_000_000, max_grid: int = 1 << 22, *,
                 false_records: float | None = None, peel: bool = True,
                 progress: bool | None = None) -> SfpDiscovery:
        """Reconstruct popular words (module docstring).

        ``alpha``: the expected number of false words reported (words nobody holds). Each of the
        ``C`` candidates scored in the word sketch is tested at level ``alpha/C`` (at most 1/2), so
        ``E[false words] ≤ alpha`` and ``P(any false word) ≤ alpha``, over random hash families.
        ``None``: no tests at all (every scored candidate is reported; needs ``top``).
        ``false_records``: the expected number of records nobody holds kept per position (the
        fragment stage only proposes candidates, so this buys power, not false words): a record is
        kept when its estimate exceeds ``z_{1−q/N}·sd₀`` with ``q = false_records`` and ``N =
        2^hash_bits·|Σ|^r`` the grid (level ``q/N`` per record, at most 1/2). ``None``: ``100`` per
        256 hashes (:data:`FALSE_RECORDS_PER_HASH` · ``2^hash_bits``; 100 with the 8-bit hash).
        ``peel``: peel heavy records off the sketches (:func:`peeled_oracle`) in both tests, which
        removes the bias that the one fixed hash family gives absent records and chimeras sharing
        rows with heavy ones (``False``: the raw estimates, calibrated only over hash families).
        ``top``: keep at most the ``top`` largest detected records per position (``None``, the
        default: every detected record; with ``alpha=None``, the ``top`` largest with no test).
        ``max_candidates`` and ``max_grid`` bound the work, with a clear error (the grid's bucket
        table takes ``4·k'`` bytes per record: 1 GiB at the default cap, k' = 64).
        ``progress``: a bar over the positions on stderr (``None``: when stderr is a terminal)."""
        from ldp.display.progress import iterate

        pr = self.params
        if self.n == 0:
            raise ValueError("no reports to reconstruct from (the aggregate is empty)")
        if top is None and alpha is None:
            raise ValueError("give top=, alpha= or both: keeping every record of the grid is never useful")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ValueError(f"top must be a positive int or None, got {top!r}")
        _check_expected("alpha", alpha, allow_none=True)
        if false_records is None:
            false_records = FALSE_RECORDS_PER_HASH * (1 << pr.hash_bits)
        _check_expected("false_records", false_records)
        if not isinstance(peel, bool):
            raise ValueError(f"peel must be True or False, got {peel!r}")
        if pr.num_records > max_grid:
            table_gib = pr.num_records * pr.fragment_num_hashes * 4 / 2**30
            raise ValueError(f"the (hash, fragment) grid has {pr.num_records} records, above max_grid={max_grid} "
                             f"(its bucket table would take {table_gib:.1f} GiB); lower hash_bits or "
                             "fragment_length, or raise max_grid")
        hashes, symbols, table = _grid_table(pr.fragment_params.hash_seed, pr.fragment_num_hashes,
                                             pr.fragment_width, pr.hash_bits, pr.symbols, pr.fragment_length)
        level = min(float(false_records), pr.num_records / 2)  # q/N per record, at most 1/2
        record_level = None if alpha is None else level
        positions = iterate(range(pr.num_positions), desc="sfp discover", enabled=progress, unit="position")
        fragments = [self._keep(pos, table, hashes, symbols, top, record_level, peel) for pos in positions]
        mats, complete, stats = self._candidates(fragments, max_candidates)
        stats["grid"] = pr.num_records
        words = self._words(mats, complete, stats)
        word_level = 0.05 if alpha is None else min(float(alpha), max(len(words), 1) / 2)  # alpha/C, at most 1/2
        word_agg = self.word_sketch()
        scored = word_agg.estimate(words, confidence=confidence, alpha=word_level)
        if alpha is not None and peel and words:
            count, se, threshold = peeled_oracle(word_agg, sketch_buckets(pr.word_params, words), word_level)
            scored = replace(scored, count=count, std_error=se,
                             extra={**scored.extra, "threshold": threshold, "detected": count > threshold})
        order = np.argsort(-scored.count, kind="stable")
        scored = self._as_sfp(_subset(scored, order))
        if alpha is not None:
            scored = replace(scored, notes=scored.notes + (
                f"detection: {false_records:g} expected absent records per position, {alpha:g} expected false "
                f"words (levels {level / pr.num_records:.3g} per record, "
                f"{word_level / max(len(words), 1):.3g} per candidate)",))
        found = scored if alpha is None else _subset(scored, np.flatnonzero(scored.extra["detected"]))
        stats.update(scored=len(scored.items), discovered=len(found.items))
        logger.info("sfp discover: n=%d, %d hash(es) complete at every position, %d candidate word(s) formed, "
                    "%d scored, %d discovered", self.n, stats["hashes_complete"], stats["formed"], stats["scored"],
                    stats["discovered"])
        return SfpDiscovery(found, scored, fragments, stats)

    def _keep(self, position: int, table: np.ndarray, hashes: np.ndarray, symbols: np.ndarray,
              top: int | None, level: float | None, peel: bool) -> dict[str, Any]:
        """Position ``position``'s kept records: above the (peeled) threshold at ``level`` expected
        absent records over the grid (``None``: no test, no peeling), the ``top`` largest of them."""
        agg = self.fragment_sketch(position)
        if level is None or not peel:
            count, se, threshold = agg.oracle(table, 0.05 if level is None else level)
        else:
            count, se, threshold = peeled_oracle(agg, table, level)
        keep = np.flatnonzero(count > threshold) if level is not None else np.arange(count.size)
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
                f"{len(groups)} hashes; lower false_records, set top= (records kept per position), "
                "or raise max_candidates")
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

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """The word sketch's :func:`~ldp.decoders.sketch.sketch_variance`."""
        f2 = even_f2(n, count, domain_size) if f2 is None else f2
        return float(sketch_variance(params.word_params, count, n, f2))


def peeled_oracle(agg: SketchAggregate, table: np.ndarray, level: float,
                  limit: int = PEEL_LIMIT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`~ldp.decoders.sketch.SketchAggregate.oracle` given the hash family: the heavy records
    are peeled off the sketch, and every record is scored again without them.

    Given the family, ``E[M[j, b]] = Σ_{x: h_j(x) = b} f(x)`` (CMS and HCMS alike), so a record
    sharing ``C`` of the ``k`` rows with a heavy one ``y`` is estimated at about ``m/(m−1)·(C/k −
    1/m)·f(y)`` more than its count (apple-and-theory.md §1.4: the estimator is unbiased only over
    the hash draw). Greedy, largest first (at most ``limit`` records above the threshold): a record
    is peeled when its estimate less that bias from the records already peeled is still above
    its threshold, at that value ``f̂``. With ``A`` the sketch of the peeled set ``S`` at ``f̂`` and
    ``F_S = Σ f̂``, the residual sketch ``M − A + F_S/m`` scores every record without ``S`` in one
    more pass over the table; a record of ``S`` gets its own ``f̂`` back. The threshold's ``F2``
    plug-in comes from the residual, so it no longer counts ``S``'s collisions either."""
    sk = agg.sketch()
    count, se, threshold = agg.oracle(table, level, sketch=sk)
    k, m = agg.params.num_hashes, agg.params.width
    above = np.flatnonzero(count > threshold)
    above = above[np.argsort(-count[above], kind="stable")][:limit]
    if above.size == 0:
        return count, se, threshold
    rows = table[above]
    peel: list[int] = []
    f: list[float] = []
    for i, x in enumerate(above.tolist()):
        est = float(count[x])
        if peel:
            shared = (rows[peel] == rows[i]).sum(axis=1)
            est -= m / (m - 1) * float(np.dot(shared / k - 1 / m, f))
        if est > threshold[x]:
            peel.append(i)
            f.append(est)
    idx, fs = above[peel], np.array(f)
    mass = np.zeros((k, m))
    for j in range(k):
        np.add.at(mass[j], table[idx, j], fs)
    count, se, threshold = agg.oracle(table, level, sketch=sk - mass + fs.sum() / m)
    count[idx] += fs
    return count, se, threshold


def _check_expected(name: str, value: float | None, allow_none: bool = False) -> None:
    """An expected number of false findings: a finite number > 0 (or ``None`` when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} is an expected number of false findings: a finite number > 0"
                         f"{' or None' if allow_none else ''}, got {value!r}")


def _subset(est: Estimates, idx: np.ndarray) -> Estimates:
    return Estimates(est.protocol, [est.items[i] for i in idx], est.n, est.count[idx], est.std_error[idx],
                     est.confidence, est.privacy, {k: v[idx] for k, v in est.extra.items()}, est.notes)


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (state arrays are C-contiguous), to be added to in place."""
    v = a.reshape(shape)
    if not np.may_share_memory(v, a):
        raise RuntimeError("state array is not contiguous: an in-place fold would be lost")
    return v
