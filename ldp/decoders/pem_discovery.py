"""PEM's discovery: the frequent strings found round by round (:meth:`~ldp.decoders.pem.PEMAggregate.discover`).

Round 0 scores every ``b_0``-bit prefix in group 0; round ``j`` extends each prefix kept in round ``j−1`` by
every ``b_j − b_{j−1}``-bit pattern and scores them in group ``j``
(:meth:`~ldp.decoders.pem.PEMAggregate.score`). Candidates no client can hold are pruned first: a first
byte NUL (empty string), a non-NUL byte after a NUL (the pad is a suffix), and, with ``alphabet``, a
complete non-NUL byte outside its UTF-8 bytes. A round keeps the candidates whose estimate exceeds
``z_{1−q/C}·n·√(V0/N_j)`` (``C`` scored, ``q = false_prefixes`` expected absent prefixes kept, level at
most 1/2; :func:`~ldp.decoders.pem_estimator.null_threshold`), at most ``top_k`` of them, the largest.
The last round reports every candidate above ``z_{1−α/C}`` of its null standard error: the expected
number of strings nobody holds that are reported is at most ``alpha``. With ``false_prefixes=None`` /
``alpha=None`` a round keeps the ``top_k`` largest with no test (the paper's rule). What was found is a
:class:`PEMDiscovery`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.pem_estimator import null_threshold
from ldp.decoders.results import Estimates, column_rows
from ldp.decoders.tabular import ResultTable, jsonable, to_frame

if TYPE_CHECKING:
    import pandas as pd

    from ldp.decoders.pem import PEMAggregate

__all__ = ["PEMDiscovery", "discover"]


@dataclass(frozen=True, repr=False)
class PEMDiscovery(ResultTable):
    """What :meth:`PEMAggregate.discover` found: ``strings`` (reported, largest first), ``candidates``
    (every candidate of the last round, scored) and per round ``bits``, ``candidates`` (scored),
    ``pruned``, ``kept`` and ``threshold``."""

    strings: Estimates
    candidates: Estimates
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        per = "; ".join(f"{r['bits']} bits: {r['candidates']} scored, {r['kept']} kept" for r in self.rounds)
        return f"PEM discovery: {per}; {len(self.strings.items)} strings reported"

    json_rows = "strings"

    def _part(self, part: str) -> Estimates:
        if part not in ("strings", "candidates"):
            raise ValueError(f"part must be 'strings' or 'candidates', got {part!r}")
        return self.strings if part == "strings" else self.candidates

    def columns(self) -> dict[str, Any]:
        """The reported strings' columns (the candidates: :meth:`to_dicts` and :meth:`to_pandas`)."""
        return self.strings.columns()

    def metadata(self) -> dict[str, Any]:
        """The strings' :meth:`~ldp.decoders.results.Estimates.metadata` and the ``rounds``."""
        return {**self.strings.metadata(), "rounds": jsonable(self.rounds)}

    def title(self) -> str:
        return self.summary()

    def result_notes(self) -> tuple[str, ...]:
        return self.strings.notes

    def to_dicts(self, part: str = "strings") -> list[dict[str, Any]]:
        """Rows of ``"strings"`` or ``"candidates"``."""
        est = self._part(part)
        return column_rows(est.columns(), len(est.items))

    def to_pandas(self, part: str = "strings") -> pd.DataFrame:
        """``part`` (as in :meth:`to_dicts`) as a DataFrame with typed columns, the :meth:`metadata` in
        ``attrs``. Needs pandas."""
        return to_frame(self._part(part).columns(), self.metadata())


def _decode(prefix: int, bits: int) -> str:
    """A full-length candidate as text: its bytes less the NUL padding, UTF-8, with invalid bytes and
    non-printable characters escaped (``\\x01``), so a table never hides part of a string."""
    text = prefix.to_bytes(bits // 8, "big").rstrip(b"\x00").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _possible(prefix: int, bits: int, allowed: frozenset[int] | None) -> bool:
    """Could a client's padded string start with this prefix? (module docstring: pruning)"""
    whole, rest = divmod(bits, 8)
    data = (prefix >> rest).to_bytes(whole, "big")
    if whole and data[0] == 0:
        return False
    nul = data.find(b"\x00")
    if nul >= 0 and (data[nul:].strip(b"\x00") or (rest and prefix & ((1 << rest) - 1))):
        return False
    body = data if nul < 0 else data[:nul]
    return allowed is None or all(b in allowed for b in body)


def discover(agg: PEMAggregate, top_k: int | None = None, alpha: float | None = 0.05,
             false_prefixes: float | None = 5.0, alphabet: str | bytes | None = None,
             confidence: float = 0.95) -> PEMDiscovery:
    """The rounds of :meth:`PEMAggregate.discover <ldp.decoders.pem.PEMAggregate.discover>` on ``agg`` (its
    docstring gives the options; module docstring)."""
    pr = agg.params
    top = pr.top_k if top_k is None else top_k
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top_k must be a positive int, got {top!r}")
    for name, v in (("alpha", alpha), ("false_prefixes", false_prefixes)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf):
            raise ValueError(f"{name} is an expected number of false findings: a finite number > 0 or None, "
                             f"got {v!r}")
    if agg.n == 0:
        raise ValueError("no reports to discover from (the aggregate is empty)")
    allowed = None if alphabet is None else frozenset(
        alphabet.encode("utf-8") if isinstance(alphabet, str) else bytes(alphabet)) - {0}
    rounds: list[dict[str, Any]] = []
    kept: list[int] = [0]
    prev_bits = 0
    count = se = np.zeros(0)
    cands: list[int] = []
    for j in range(pr.groups):
        bits = pr.prefix_bits(j)
        step = bits - prev_bits
        formed = [(c << step) | e for c in kept for e in range(1 << step)]
        cands = [c for c in formed if _possible(c, bits, allowed)]
        last = j == pr.groups - 1
        level_of = alpha if last else false_prefixes
        if not cands:
            rounds.append({"bits": bits, "candidates": 0, "pruned": len(formed), "kept": 0, "threshold": math.nan})
            break
        count, se = agg.score(j, cands)
        threshold = -math.inf
        if level_of is not None:
            threshold = null_threshold(pr, agg.n, int(agg.group_n[j]), min(level_of / len(cands), 0.5), j)
        order = [int(i) for i in np.argsort(-count, kind="stable") if count[i] > threshold]
        if not last or level_of is None:
            order = order[:top]
        rounds.append({"bits": bits, "candidates": len(cands), "pruned": len(formed) - len(cands),
                       "kept": len(order), "threshold": threshold})
        kept, prev_bits = [cands[i] for i in order], bits
        if not kept:
            break
    return _discovery(agg, rounds, cands, count, se, kept, confidence)


def _discovery(agg: PEMAggregate, rounds: list[dict[str, Any]], cands: list[int], count: npt.NDArray[np.float64],
               se: npt.NDArray[np.float64], kept: list[int], confidence: float) -> PEMDiscovery:
    pr = agg.params
    finished = len(rounds) == pr.groups and rounds[-1]["candidates"] > 0
    if not finished:  # stopped early: nothing reaches the last round
        cands, count, se, kept = [], np.zeros(0), np.zeros(0), []
    thr = rounds[-1]["threshold"] if rounds else math.nan
    note = (f"PEM over {pr.oracle_summary}, {pr.groups} groups; counts from the last group scaled by n/N_j",)
    cand = Estimates(pr.protocol, [_decode(c, pr.total_bits) for c in cands], agg.n, count, se, confidence,
                     pr.privacy_cost, {"detected": count > thr}, note)
    where = {c: i for i, c in enumerate(cands)}
    idx = np.array([where[c] for c in kept], np.int64)
    found = Estimates(pr.protocol, [cand.items[i] for i in idx], agg.n, count[idx], se[idx], confidence,
                      pr.privacy_cost, {}, note)
    return PEMDiscovery(found, cand, rounds)
