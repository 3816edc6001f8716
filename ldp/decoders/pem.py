"""PEM, server side: the per-group reports, the scaled OLH or GRR estimator with its exact variance, discovery.

Estimator. Group ``j`` holds ``N_j`` reports. In an OLH group a report supports a ``b_j``-bit prefix ``c``
when ``lh_hash(key(c), seed, g) = y`` (:func:`ldp.batch.pem.key_support`); in a GRR group when ``y = c``.
Each oracle supports the true prefix with probability ``p`` and any other given prefix with ``q'`` (OLH:
``q' = 1/g``; GRR over ``d = 2^b_j``: ``q' = (1−p)/(d−1)``; :meth:`~ldp.encoders.pem.PEMParams.group_pq`).
With ``C`` supports, ``ĉ_j = (C − N_j·q')/(p − q')`` is the oracle's unbiased count of the group's users
holding ``c``, and

    ``F̂ = (n/N_j)·ĉ_j``

estimates the count ``F`` among all ``n`` users. Given ``N_j``, the group is a uniformly random subset of
the users (each client draws its group uniformly and independently), so its holders ``f_j`` are
hypergeometric: mean ``N_j·φ`` (``φ = F/n``), variance ``N_j·φ(1−φ)(n−N_j)/(n−1)``; the oracle adds,
given ``f_j``, ``N_j·V0 + f_j·a`` with ``V0 = q'(1−q')/(p−q')²``, ``a = (1−p−q')/(p−q')`` (the supports
are independent Bernoullis, ``p`` for holders and ``q'`` for the others; :mod:`ldp.decoders.local_hashing`).
Hence ``E[F̂ | N_j] = F`` and, exactly,

    ``Var[F̂ | N_j] = (n²/N_j)·(V0 + φ·a + φ(1−φ)·(n−N_j)/(n−1))``:

the oracle's variance of the group scaled by ``(n/N_j)²``, plus the sampling of the group. Standard errors
plug in ``φ̂ = clip(F̂/n, 0, 1)``; the null standard error (``φ = 0``) is ``n·√(V0/N_j)``. Prefixes over
32 bits are hashed to a 32-bit key: a candidate also gets the users of another prefix with its key
(probability 2^-32 per pair), which the variance leaves out.

Discovery (:meth:`PEMAggregate.discover`). Round 0 scores every ``b_0``-bit prefix in group 0; round
``j`` extends each prefix kept in round ``j−1`` by every ``b_j − b_{j−1}``-bit pattern and scores them
in group ``j``. Candidates no client can hold are pruned first: a first byte NUL (empty string), a
non-NUL byte after a NUL (the pad is a suffix), and, with ``alphabet``, a complete non-NUL byte outside
its UTF-8 bytes. A round keeps the candidates whose estimate exceeds ``z_{1−q/C}·n·√(V0/N_j)`` (``C``
scored, ``q = false_prefixes`` expected absent prefixes kept, level at most 1/2), at most ``top_k`` of
them, the largest. The last round reports every candidate above ``z_{1−α/C}`` of its null standard
error: the expected number of strings nobody holds that are reported is at most ``alpha``. With
``false_prefixes=None`` / ``alpha=None`` a round keeps the ``top_k`` largest with no test (the paper's rule).
Every function taking ``group`` uses that group's oracle; ``group=None`` is the last group (the estimates').
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ldp.batch.pem import key_support, pem_encode_batch
from ldp.decoders.aggregate_file import (
    AggregateFormatError,
    StateLayout,
    _count,
    read_state,
    write_aggregate,
)
from ldp.decoders.base import Aggregate, RejectHandler
from ldp.decoders.results import Estimates, column_rows
from ldp.decoders.tabular import ResultTable, jsonable, to_frame
from ldp.encoders.pem import PEMParams, null_variance, prefix_key
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PEMAggregate", "PEMDiscovery", "pem_variance", "pem_group_n",
           "pem_null_se", "pem_detectable_share", "null_threshold"]


def pem_group_n(params: PEMParams, n: float) -> int:
    """The reports of one group the planner assumes: ``n/G``, at least 1."""
    return max(1, round(n / params.groups))


def _group(params: PEMParams, group: int | None) -> int:
    return params.groups - 1 if group is None else group


def _terms(params: PEMParams, group: int | None) -> tuple[float, float]:
    """``(V0, a)``: the group's oracle's per-report variance of an absent prefix and its per-holder term."""
    p, q = params.group_pq(_group(params, group))
    return null_variance(p, q), (1.0 - p - q) / (p - q)


def pem_variance(params: PEMParams, true_counts: npt.ArrayLike, n: int, group_n: int,
                 group: int | None = None) -> npt.NDArray[np.float64]:
    """Exact ``Var[F̂ | N_j]`` of the counts ``F`` among ``n`` users from group ``group`` (default the last)
    of ``group_n`` reports."""
    v0, a = _terms(params, group)
    phi = np.asarray(true_counts, dtype=np.float64) / n
    return n * n / group_n * (v0 + phi * a + phi * (1.0 - phi) * (n - group_n) / max(n - 1, 1))


def pem_null_se(params: PEMParams, n: int, group_n: int, group: int | None = None) -> float:
    """``n·√(V0/N_j)``: the standard error of a prefix nobody holds."""
    return n * math.sqrt(_terms(params, group)[0] / group_n)


def null_threshold(params: PEMParams, n: int, group_n: int, level: float, group: int | None = None) -> float:
    """The count an absent prefix exceeds with probability at most ``level``: its support among the
    group's ``N_j`` reports is exactly ``Binomial(N_j, q')`` (OLH: each report's hash of it is uniform and
    independent of the value, ``q' = 1/g``; GRR: each report is it with ``q' = (1−p)/(d−1)``, every user
    holding another prefix), so the cutoff is that law's upper quantile ``c`` (``P(C > c) ≤ level``)
    mapped to a count, ``n/N_j·(c − N_j·q')/(p − q')``: exact, where the normal approximation
    ``z·`` :func:`pem_null_se` is anti-conservative in the binomial's right tail for small groups."""
    from scipy.stats import binom

    p, q = params.group_pq(_group(params, group))
    c = float(binom.isf(level, group_n, q))
    return n / group_n * (c - group_n * q) / (p - q)


def pem_detectable_share(params: PEMParams, n: int, alpha: float = 0.05, candidates: int | None = None) -> float:
    """The share of users a string needs to pass the last round's test, with groups of ``n/G`` reports:
    :func:`null_threshold` at level ``α/C`` over ``n`` (about ``z_{1−α/C}·√(G·V0/n)``); ``C`` defaults to
    ``top_k·2^(last step)``, the most the last round scores. (For the planner: the string must also survive
    every earlier round, whose prefixes are at least as frequent and whose thresholds are of the same order.)"""
    G = params.groups
    last = params.total_bits - (params.prefix_bits(G - 2) if G > 1 else 0)
    c = params.top_k << last if candidates is None else candidates
    group_n = max(round(n / G), 1)
    return null_threshold(params, n, group_n, min(alpha / max(c, 1), 0.5), G - 1) / n


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


def _bad_rows(params: PEMParams, grp: npt.NDArray[Any], seed: npt.NDArray[Any],
              y: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Rows (groups in range) whose ``y`` is outside their group's range, whose seed is outside the seed
    range, or whose seed is not 0 in a GRR group."""
    g = np.asarray(grp, np.int64)
    sizes = np.array([params.y_size(j) for j in range(params.groups)], np.int64)
    is_grr = np.array([o == "grr" for o in params.oracles])
    s, v = np.asarray(seed, np.int64), np.asarray(y, np.int64)
    return (v < 0) | (v >= sizes[g]) | (s < 0) | (s >= params.seed_range) | (is_grr[g] & (s != 0))


class PEMAggregate(Aggregate):
    """PEM's reports (``group``, ``seed``, ``y``, kept as arrays: candidates are known only at discovery)
    and ``group_n``, the reports per group. Serialized in the aggregate format with the arrays' real
    lengths, so :meth:`from_bytes` of this class reads it (module docstring of :mod:`ldp.decoders.base`)."""

    params_type: ClassVar[Any] = PEMParams
    params: PEMParams
    group_n: npt.NDArray[np.int64]  # (G,), created by _init_state
    _COLUMNS: ClassVar[tuple[tuple[str, Any], ...]] = (("group", np.uint16), ("seed", np.uint32), ("y", np.uint32))

    @classmethod
    def state_layout(cls, params: PEMParams) -> StateLayout:
        return {"group_n": (np.dtype(np.int64), (params.groups,))}

    def _init_state(self) -> None:
        super()._init_state()
        self._parts: list[tuple[npt.NDArray[Any], ...]] = []
        self._sorted: tuple[npt.NDArray[Any], ...] | None = None

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        cols = tuple(np.asarray(columns[name]).astype(dt) for name, dt in self._COLUMNS)
        self._parts.append(cols)
        self._sorted = None
        self.group_n += np.bincount(cols[0], minlength=self.params.groups)

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        """The base's checks, after rejecting (``out_of_range``) rows outside their own group's range: ``y``
        at least the group's ``y_size``, or a GRR group's seed not 0 (parameters mixing the oracles only)."""
        p = self.params
        names = {"group", "seed", "y"}
        if (p.oracle == "olh" or (batch.protocol, batch.fingerprint) != (p.protocol, p.fingerprint)
                or {f.name for f in batch.schema} != names or any(f.kind != "uint" for f in batch.schema)):
            return super()._add_batch(batch, on_reject)  # one range per field, or rejected whole by the base
        grp, seed, y = (np.asarray(batch.columns[k]) for k in ("group", "seed", "y"))
        inside = (grp >= 0) & (grp < p.groups)  # the other rows are the base's to reject
        bad = np.zeros(grp.shape, np.bool_)
        bad[inside] = _bad_rows(p, grp[inside], seed[inside], y[inside])
        if not bad.any():
            return super()._add_batch(batch, on_reject)
        return self._add_batch_without(batch, bad, "out_of_range", "y or seed out of its group's range", on_reject,
                                       super()._add_batch)

    def reports(self) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
        """``(group, seed, y)`` of every accepted report, sorted by group (stable)."""
        if self._sorted is None:
            cols = [np.concatenate([p[i] for p in self._parts]) if self._parts else np.zeros(0, dt)
                    for i, (_, dt) in enumerate(self._COLUMNS)]
            order = np.argsort(cols[0], kind="stable")
            self._sorted = tuple(c[order] for c in cols)
            self._parts = [self._sorted]
        g, s, y = self._sorted
        return g, s, y

    def merge(self, other: PEMAggregate) -> PEMAggregate:
        super().merge(other)
        self._parts.extend(other._parts)
        self._sorted = None
        return self

    # -- serialization: the base format with the report arrays at their real length -------------------------
    def _layout(self) -> StateLayout:
        return {**self.state_layout(self.params), **{name: (np.dtype(dt), (self.n,)) for name, dt in self._COLUMNS}}

    def _serial_state(self) -> dict[str, np.ndarray]:
        return {"group_n": self.group_n, **dict(zip([c for c, _ in self._COLUMNS], self.reports(), strict=True))}

    def to_bytes(self) -> bytes:
        """The aggregate file format (:func:`~ldp.decoders.base.write_aggregate`), the reports at their length."""
        return write_aggregate(self.params, self.n, self.rejected, self._layout(), self._serial_state())

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> PEMAggregate:
        """A PEM aggregate from :meth:`to_bytes`: :meth:`Aggregate.from_bytes` (every check, then
        :meth:`_load_state`), refusing another protocol's aggregate."""
        agg = Aggregate.from_bytes(data)
        if not isinstance(agg, PEMAggregate):
            raise AggregateFormatError(f"not a PEM aggregate (protocol {agg.params.protocol!r})")
        return agg

    @classmethod
    def _load_state(cls, data: memoryview, header: dict[str, Any], params: PEMParams) -> PEMAggregate:
        """The aggregate of a checked header (its parameters and fingerprint verified) and its arrays:
        the hook a generic loader can call for a state whose size the parameters do not fix."""
        agg = cls(params)
        agg.n = _count(header["n"], "n")
        state = {k: v.copy() for k, v in read_state(data, header, agg._layout()).items()}
        cols = tuple(state[name] for name, _ in cls._COLUMNS)
        if (cols[0].size and int(cols[0].max()) >= params.groups) or _bad_rows(params, *cols).any():
            raise AggregateFormatError("aggregate reports are out of range for their parameters")
        if not np.array_equal(np.bincount(cols[0], minlength=params.groups), state["group_n"]):
            raise AggregateFormatError("aggregate group counts do not match its reports")
        agg.group_n[:] = state["group_n"]
        agg._parts = [tuple(c.astype(dt) for c, (_, dt) in zip(cols, cls._COLUMNS, strict=True))]
        agg.rejected = Counter({str(k): _count(v, f"rejected[{k}]") for k, v in dict(header["rejected"]).items()})
        return agg

    # -- estimation ----------------------------------------------------------------------------------------
    def _group(self, j: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
        g, s, y = self.reports()
        start = int(self.group_n[:j].sum())
        end = start + int(self.group_n[j])
        return s[start:end], y[start:end]

    def score(self, group: int, prefixes: list[int]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(F̂, standard error)`` of ``b_group``-bit prefixes (ints) among all users (module docstring)."""
        pr = self.params
        bits, m = pr.prefix_bits(group), int(self.group_n[group])
        if m == 0:
            raise ValueError(f"group {group} has no reports: nothing to estimate from")
        seeds, ys = self._group(group)
        if pr.oracle_of(group) == "grr":  # a report supports the prefix it is
            support = np.bincount(ys, minlength=1 << bits)[np.asarray(prefixes, np.int64)].astype(np.float64)
        else:
            support = key_support(seeds, ys, [prefix_key(c, bits) for c in prefixes], pr.g).astype(np.float64)
        p, q = pr.group_pq(group)
        count = self.n / m * (support - m * q) / (p - q)
        se = np.sqrt(pem_variance(pr, np.clip(count, 0, self.n), self.n, m, group))
        return count, se

    def estimate(self, values: list[Any], confidence: float = 0.95) -> Estimates:
        """Counts of given strings (as the client pads them) from the last group, with standard errors."""
        pr = self.params
        last = pr.groups - 1
        prefixes = [int.from_bytes(pr.padded(v), "big") for v in values]
        count, se = self.score(last, prefixes)
        items = [_decode(c, pr.total_bits) for c in prefixes]
        return Estimates(pr.protocol, items, self.n, count, se, confidence, pr.privacy_cost,
                         notes=("counts from the last group, scaled by n/N_j",))

    def discover(self, top_k: int | None = None, alpha: float | None = 0.05, false_prefixes: float | None = 5.0,
                 alphabet: str | bytes | None = None, confidence: float = 0.95) -> PEMDiscovery:
        """Find the frequent strings round by round (module docstring). ``top_k``: prefixes kept per round
        (default ``params.top_k``); ``alpha``: expected strings nobody holds reported; ``false_prefixes``:
        expected absent prefixes kept per round; ``alphabet``: the bytes a string may hold (a pruning rule
        of the server only)."""
        pr = self.params
        top = pr.top_k if top_k is None else top_k
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise ValueError(f"top_k must be a positive int, got {top!r}")
        for name, v in (("alpha", alpha), ("false_prefixes", false_prefixes)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf):
                raise ValueError(f"{name} is an expected number of false findings: a finite number > 0 or None, "
                                 f"got {v!r}")
        if self.n == 0:
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
            count, se = self.score(j, cands)
            threshold = -math.inf
            if level_of is not None:
                threshold = null_threshold(pr, self.n, int(self.group_n[j]), min(level_of / len(cands), 0.5), j)
            order = [int(i) for i in np.argsort(-count, kind="stable") if count[i] > threshold]
            if not last or level_of is None:
                order = order[:top]
            rounds.append({"bits": bits, "candidates": len(cands), "pruned": len(formed) - len(cands),
                           "kept": len(order), "threshold": threshold})
            kept, prev_bits = [cands[i] for i in order], bits
            if not kept:
                break
        return self._discovery(rounds, cands, count, se, kept, confidence)

    def _discovery(self, rounds: list[dict[str, Any]], cands: list[int], count: npt.NDArray[np.float64],
                   se: npt.NDArray[np.float64], kept: list[int], confidence: float) -> PEMDiscovery:
        pr = self.params
        finished = len(rounds) == pr.groups and rounds[-1]["candidates"] > 0
        if not finished:  # stopped early: nothing reaches the last round
            cands, count, se, kept = [], np.zeros(0), np.zeros(0), []
        thr = rounds[-1]["threshold"] if rounds else math.nan
        note = (f"PEM over {pr.oracle_summary}, {pr.groups} groups; counts from the last group scaled by n/N_j",)
        cand = Estimates(pr.protocol, [_decode(c, pr.total_bits) for c in cands], self.n, count, se, confidence,
                         pr.privacy_cost, {"detected": count > thr}, note)
        where = {c: i for i, c in enumerate(cands)}
        idx = np.array([where[c] for c in kept], np.int64)
        found = Estimates(pr.protocol, [cand.items[i] for i in idx], self.n, count[idx], se[idx], confidence,
                          pr.privacy_cost, {}, note)
        return PEMDiscovery(found, cand, rounds)

    @classmethod
    def simulate(cls, params: PEMParams, true_counts: Any, rng: Any = None, *,
                 values: list[Any] | None = None) -> PEMAggregate:
        """The aggregate of users holding ``true_counts`` (``{string: count}``, or counts with ``values``),
        drawn with the client's law in batch (its cost is O(n))."""
        from ldp.decoders.rappor import open_domain_counts

        words, counts = open_domain_counts(true_counts, values)
        idx = np.repeat(np.arange(len(words)), counts)
        agg = cls(params)
        cols = pem_encode_batch(params, idx, as_generator(rng), candidates=words)
        agg._fold(cols)
        agg.n = int(idx.size)
        return agg

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """``Var[F̂]`` from the last group's ``n/G`` reports (:func:`pem_group_n`), scaled to the ``n`` users."""
        return float(pem_variance(params, [count], round(n), pem_group_n(params, n))[0])
