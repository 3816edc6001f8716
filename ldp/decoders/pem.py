"""PEM, server side: the aggregate of the per-group reports, its estimator and its discovery.

:class:`PEMAggregate` keeps every report (``group``, ``seed``, ``y``): candidates are known only at
discovery. :meth:`PEMAggregate.score` is the scaled OLH or GRR estimator of a group, whose exact variance
and null thresholds are :mod:`ldp.decoders.pem_estimator`'s; :meth:`PEMAggregate.discover` finds the
frequent strings round by round (:mod:`ldp.decoders.pem_discovery`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

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
from ldp.decoders.pem_discovery import PEMDiscovery, _decode, discover
from ldp.decoders.pem_estimator import (
    null_threshold,
    pem_detectable_share,
    pem_expected_variance,
    pem_group_n,
    pem_null_se,
    pem_variance,
)
from ldp.decoders.results import Estimates
from ldp.encoders.pem import PEMParams, prefix_key
from ldp.randomness import as_generator
from ldp.reports import ReportBatch

__all__ = ["PEMAggregate", "PEMDiscovery", "pem_variance", "pem_group_n",
           "pem_null_se", "pem_detectable_share", "null_threshold"]


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
        """``(F̂, standard error)`` of ``b_group``-bit prefixes (ints) among all users
        (:mod:`ldp.decoders.pem_estimator`)."""
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

    candidate_dictionary: ClassVar[str] = "optional"

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Estimates:
        """:meth:`estimate` of the candidates, else the strings :meth:`discover` finds (``top``: its ``top_k``;
        ``selection``: unused)."""
        if candidates:
            return self.estimate(list(candidates), confidence=confidence)
        return self.discover(top_k=top, alpha=alpha, confidence=confidence).strings

    def discover(self, top_k: int | None = None, alpha: float | None = 0.05, false_prefixes: float | None = 5.0,
                 alphabet: str | bytes | None = None, confidence: float = 0.95) -> PEMDiscovery:
        """Find the frequent strings round by round (:mod:`ldp.decoders.pem_discovery`). ``top_k``: prefixes
        kept per round (default ``params.top_k``); ``alpha``: expected strings nobody holds reported;
        ``false_prefixes``: expected absent prefixes kept per round; ``alphabet``: the bytes a string may hold
        (a pruning rule of the server only)."""
        return discover(self, top_k, alpha, false_prefixes, alphabet, confidence)

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
        """``Var[F̂]`` of ``n`` users, averaged over the last group's binomial size
        (:func:`~ldp.decoders.pem_estimator.pem_expected_variance`): what a simulation of ``n`` users measures."""
        return float(pem_expected_variance(params, [count], max(round(n), 2))[0])
