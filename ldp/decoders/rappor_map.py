"""RAPPOR candidate maps: each candidate string's Bloom bits in every cohort, and Google's ``map.csv``.

A :class:`CandidateMap` is the design the decoder (:func:`ldp.decoders.rappor_decode.decode`) fits: a
sparse 0/1 pattern with one row per (cohort, Bloom bit), cohort-major, and one column per candidate.
Candidates whose Bloom bits coincide in every cohort cannot be told apart: each names the first of its
group as its ``representative`` (:attr:`CandidateMap.duplicates` lists the groups).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ldp.batch import check_candidates
from ldp.batch.rappor import bloom_index_table
from ldp.encoders.rappor import RapporParams

if TYPE_CHECKING:  # scipy loads only when a map is built
    import scipy.sparse as sp

__all__ = ["CandidateMap"]


def _name(c: str | bytes) -> str:
    return c if isinstance(c, str) else c.decode("utf-8", "backslashreplace")


def _pattern_rows(params: RapporParams, cands: Sequence[str | bytes]) -> np.ndarray:
    """``int64 (d, m·h)``: row ``c·k + bit`` of each hash of each candidate, cohort-major."""
    rows = bloom_index_table(params, cands)
    rows += np.arange(params.num_cohorts)[None, :, None] * params.num_bloombits
    return rows.reshape(len(cands), params.num_cohorts * params.num_hashes)


@dataclass(frozen=True)
class CandidateMap:
    """Candidate strings and their Bloom bits in every cohort: a sparse 0/1 pattern (m·k × d)."""

    params: RapporParams
    candidates: list[str | bytes]
    pattern: sp.csc_matrix
    representative: np.ndarray  # first candidate with the identical pattern (itself if unique)

    @classmethod
    def from_candidates(cls, params: RapporParams, candidates: Sequence[str | bytes]) -> CandidateMap:
        cands = check_candidates(candidates)
        return cls._from_rows(params, cands, _pattern_rows(params, cands))

    @classmethod
    def _from_rows(cls, params: RapporParams, cands: list, rows: np.ndarray) -> CandidateMap:
        """The map from each candidate's ``m·h`` pattern rows ``(d, m·h)``, built without a loop per candidate.

        Column ``v`` holds the distinct rows of ``rows[v]`` (hashes that collide within a cohort
        set one bit), ascending. Its representative is the first candidate with the same set."""
        import scipy.sparse as sp

        d = len(cands)
        nrows = params.num_cohorts * params.num_bloombits
        srt = np.sort(rows.astype(np.int32 if nrows < 2**31 else np.int64), axis=1)
        repeat = np.zeros(srt.shape, dtype=bool)
        repeat[:, 1:] = srt[:, 1:] == srt[:, :-1]
        indptr = np.concatenate([[0], np.cumsum(srt.shape[1] - repeat.sum(axis=1))])
        indices = srt[~repeat]
        pattern = sp.csc_matrix((np.ones(indices.size), indices, indptr), shape=(nrows, d))
        # identical sets <=> identical sorted rows once repeats are blanked (to -1) and moved first
        collided = np.flatnonzero(repeat.any(axis=1))
        if collided.size:
            srt[collided] = np.sort(np.where(repeat[collided], -1, srt[collided]), axis=1)
        rep = np.arange(d, dtype=np.int64)
        if d:
            keys = srt.view(np.dtype((np.void, srt.shape[1] * srt.itemsize))).ravel()
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)  # first occurrences
            rep = first[inverse.ravel()].astype(np.int64)
        return cls(params, cands, pattern, rep)

    @classmethod
    def from_google_map(cls, params: RapporParams, text: str) -> CandidateMap:
        """Read Google's ``map.csv``: ``string, idx...`` with m·h 1-based rows ``c·k + bit + 1``.
        Lines may end in ``\n``, ``\r\n`` or ``\r``; any malformed line raises ``ValueError`` naming it."""
        m, k, h = params.num_cohorts, params.num_bloombits, params.num_hashes
        cohort = np.repeat(np.arange(m), h)
        names: list[str] = []
        rows: list[np.ndarray] = []
        first: dict[str, int] = {}  # candidate -> its line
        reader = csv.reader(io.StringIO(text, newline=""))  # the csv module splits the lines itself
        while True:
            try:
                rec = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise ValueError(f"map.csv line {reader.line_num}: not valid CSV ({exc})") from None
            if not rec:
                continue
            if len(rec) != 1 + m * h:
                raise ValueError(f"map.csv line {reader.line_num}: expected 1 + m·h = {1 + m * h} fields, "
                                 f"got {len(rec)}")
            try:
                idx = [int(x) for x in rec[1:]]
            except ValueError:
                raise ValueError(f"map.csv line {reader.line_num}: row indices must be integers") from None
            if not all(1 <= i <= m * k for i in idx):  # before int64: 2^63 and beyond would overflow
                raise ValueError(f"map.csv line {reader.line_num}: row index outside 1..m·k = {m * k}")
            r = np.array(idx, dtype=np.int64) - 1
            if (r < cohort * k).any() or (r >= (cohort + 1) * k).any():
                raise ValueError(f"map.csv line {reader.line_num}: index outside its cohort's rows c·k+1..(c+1)·k")
            if rec[0] in first:
                raise ValueError(f"map.csv line {reader.line_num}: candidate {rec[0]!r} repeats line {first[rec[0]]}")
            first[rec[0]] = reader.line_num
            names.append(rec[0])
            rows.append(r)
        cands = check_candidates(names)
        return cls._from_rows(params, cands, np.array(rows, dtype=np.int64).reshape(len(cands), m * h))

    def to_google_map(self) -> str:
        """This map as Google's ``map.csv`` (1-based rows; collided hashes repeat their row)."""
        rows = _pattern_rows(self.params, self.candidates) + 1
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)  # csv leaves a lone \r bare
        for c, r in zip(self.candidates, rows.tolist(), strict=True):
            name = _name(c)
            (quoted if "\r" in name else writer).writerow([name, *r])
        return buf.getvalue()

    @property
    def duplicates(self) -> list[list[str]]:
        """Groups of candidates with identical Bloom bits in every cohort (indistinguishable), in
        candidate order (groups by their first member)."""
        rep = self.representative
        shared = np.isin(rep, rep[rep != np.arange(rep.size)])  # members of groups of two or more
        groups: dict[int, list[str]] = {}
        for v in np.flatnonzero(shared).tolist():
            groups.setdefault(int(rep[v]), []).append(_name(self.candidates[v]))
        return list(groups.values())
