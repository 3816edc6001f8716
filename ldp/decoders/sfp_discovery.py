"""SFP's puzzle reconstruction: the popular words found from the sketches (apple-and-theory.md §3.2).

:meth:`SfpAggregate.discover <ldp.decoders.sfp.SfpAggregate.discover>` runs :func:`reconstruct`, which:

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
of a deployment, both tests are peeled (:func:`~ldp.decoders.sfp_peeling.peeled_oracle`). What was
found is an :class:`SfpDiscovery`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ldp.batch.murmur import bucket_table
from ldp.batch.sketch import sketch_buckets
from ldp.decoders.results import Estimates, column_rows, to_frame
from ldp.decoders.sfp_peeling import peeled_oracle
from ldp.decoders.tabular import ResultTable, jsonable
from ldp.encoders.sfp import SfpParams
from ldp.errors import CandidateLimitError

if TYPE_CHECKING:
    import pandas as pd

    from ldp.decoders.sfp import SfpAggregate

logger = logging.getLogger("ldp.decoders.sfp")  # the family's logger: the records keep their name

__all__ = ["SfpDiscovery", "reconstruct", "record_grid", "FALSE_RECORDS_PER_HASH"]

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


def reconstruct(agg: SfpAggregate, top: int | None = None, alpha: float | None = 0.05, confidence: float = 0.95,
                max_candidates: int = 1_000_000, max_grid: int = 1 << 22, *, false_records: float | None = None,
                peel: bool = True, progress: bool | None = None) -> SfpDiscovery:
    """The puzzle reconstruction of :meth:`SfpAggregate.discover <ldp.decoders.sfp.SfpAggregate.discover>`
    (its docstring gives the options; module docstring)."""
    from ldp.display.progress import iterate

    pr = agg.params
    if agg.n == 0:
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
    fragments = [_keep(agg, pos, table, hashes, symbols, top, record_level, peel) for pos in positions]
    mats, complete, stats = _candidates(fragments, max_candidates)
    stats["grid"] = pr.num_records
    words = _words(pr, mats, complete, stats)
    word_level = 0.05 if alpha is None else min(float(alpha), max(len(words), 1) / 2)  # alpha/C, at most 1/2
    word_agg = agg.word_sketch()
    scored = word_agg.estimate(words, confidence=confidence, alpha=word_level)
    if alpha is not None and peel and words:
        count, se, threshold = peeled_oracle(word_agg, sketch_buckets(pr.word_params, words), word_level)
        scored = replace(scored, count=count, std_error=se,
                         extra={**scored.extra, "threshold": threshold, "detected": count > threshold})
    order = np.argsort(-scored.count, kind="stable")
    scored = agg._as_sfp(_subset(scored, order))
    if alpha is not None:
        scored = replace(scored, notes=scored.notes + (
            f"detection: {false_records:g} expected absent records per position, {alpha:g} expected false "
            f"words (levels {level / pr.num_records:.3g} per record, "
            f"{word_level / max(len(words), 1):.3g} per candidate)",))
    found = scored if alpha is None else _subset(scored, np.flatnonzero(scored.extra["detected"]))
    stats.update(scored=len(scored.items), discovered=len(found.items))
    logger.info("sfp discover: n=%d, %d hash(es) complete at every position, %d candidate word(s) formed, "
                "%d scored, %d discovered", agg.n, stats["hashes_complete"], stats["formed"], stats["scored"],
                stats["discovered"])
    return SfpDiscovery(found, scored, fragments, stats)


def _keep(agg: SfpAggregate, position: int, table: np.ndarray, hashes: np.ndarray, symbols: np.ndarray,
          top: int | None, level: float | None, peel: bool) -> dict[str, Any]:
    """Position ``position``'s kept records: above the (peeled) threshold at ``level`` expected
    absent records over the grid (``None``: no test, no peeling), the ``top`` largest of them."""
    sketch = agg.fragment_sketch(position)
    if level is None or not peel:
        count, se, threshold = sketch.oracle(table, 0.05 if level is None else level)
    else:
        count, se, threshold = peeled_oracle(sketch, table, level)
    keep = np.flatnonzero(count > threshold) if level is not None else np.arange(count.size)
    keep = keep[np.argsort(-count[keep], kind="stable")][:top]
    chars = np.array(list(agg.params.symbols))
    return {"hash": hashes[keep], "symbols": symbols[keep], "count": count[keep], "std_error": se[keep],
            "fragment": ["".join(chars[row]) for row in symbols[keep]]}


def _candidates(fragments: list[dict[str, Any]], cap: int) -> tuple[list[np.ndarray], list[int], dict[str, int]]:
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


def _words(pr: SfpParams, mats: list[np.ndarray], complete: list[int], stats: dict[str, int]) -> list[str]:
    """Candidate words (pad stripped) whose padding is a suffix and whose hash matches."""
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
