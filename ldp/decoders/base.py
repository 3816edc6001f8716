"""What every protocol's server side shares: the mergeable aggregate and ingestion with rejects.

An aggregate follows the DataSketches pattern: ``add`` reports (one, many, a columnar batch, binary
frames or JSON lines), ``merge`` another aggregate of the same parameters, ``to_bytes`` /
``from_bytes``. Reports that fail validation are never silently dropped: each is counted in
``rejected`` under its :class:`~ldp.reports.ReportError` reason and passed to ``on_reject`` if given.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

import numpy as np

from ldp.decoders.aggregate_file import (
    MAX_COUNT,
    MAX_HEADER,
    AggregateFormatError,
    StateLayout,
    _clip,
    _count,
    _read_header,
    _typed,
    read_state,
    unframe,
    write_aggregate,
)
from ldp.encoders.base import ProtocolParams
from ldp.lazy import package_classes
from ldp.reports import Frame, Report, ReportBatch, ReportError, parse_json, scan_frames

if TYPE_CHECKING:
    from bitarray import frozenbitarray

    from ldp.decoders.results import Estimates

__all__ = ["Aggregate", "AggregateFormatError", "RejectHandler", "StateLayout", "frame_to_batch", "MAX_HEADER",
           "MAX_COUNT"]

RejectHandler = Callable[[Any, ReportError], None]
"""Called with (the rejected item: a Report, a raw line, or a batch row index; the error)."""

_CHUNK = 1 << 16
A = TypeVar("A", bound="Aggregate")


def frame_to_batch(frame: Frame) -> ReportBatch:
    """View a binary frame's columns as numpy arrays (no copy, no Python loop per record)."""
    from ldp.reports import Field

    columns, schema = {}, []
    for name, kind, width in frame.layout:
        raw = frame.columns[name]
        if kind == "uint":
            columns[name] = np.frombuffer(raw, dtype=f"<u{width}")
            schema.append(Field(name, "uint", 1 << (8 * width)))
        else:
            columns[name] = np.frombuffer(raw, dtype=np.uint8).reshape(frame.count, (width + 7) // 8)
            schema.append(Field(name, "bits", width))
    return ReportBatch(frame.protocol, frame.fingerprint, tuple(schema), columns)


def _all_below(col: np.ndarray, size: int) -> bool:
    """Every value of an integer column is in ``[0, size)``: one or two reductions, no temporary."""
    if col.size == 0:
        return True
    if col.dtype.kind not in "ui":
        return False  # the elementwise check decides
    return (col.dtype.kind == "u" or int(col.min()) >= 0) and int(col.max()) < size


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class Aggregate(ABC):
    """Streaming, mergeable sufficient statistics of one protocol under one parameter set."""

    params_type: ClassVar[type[ProtocolParams]]
    coin_fields: ClassVar[tuple[str, ...]] = ()  # arrays the fold's own coins fill (ldp.jobs.store.same_reports)

    def __init__(self, params: ProtocolParams) -> None:
        if not isinstance(params, self.params_type):
            kinds = self.params_type if isinstance(self.params_type, tuple) else (self.params_type,)
            names = " or ".join(t.__name__ for t in kinds)
            raise TypeError(f"{type(self).__name__} needs {names}, got {type(params).__name__}")
        self.params = params
        self.n = 0
        self.rejected: Counter[str] = Counter()
        self._init_state()

    @classmethod
    def from_sums(cls: type[A], params: Any, sums: Any, n: int, *, noisy: bool = False) -> A:
        """The aggregate of ``n`` reports whose summed Prio3 measurements are ``sums`` — the two-aggregator mode's
        result (:mod:`ldp.encoders.base_vdaf`): the state array the protocol's :meth:`~ldp.encoders.base.
        ProtocolParams.prio3_fit` names, filled; the same aggregate folding those reports makes (tested).
        ``ValueError`` for a protocol that does not fit, sums of the wrong length, or counts outside ``[0, n]``.
        ``noisy``: the sums carry the aggregators' central noise (:mod:`ldp.privacy.share_noise`), so a sum may be
        below 0 or above ``n`` and a histogram's need not add up to ``n``: only their size is checked; the
        protocol's estimator is linear in them, so its estimate stays unbiased (its standard errors then lack the
        noise's variance: :mod:`ldp.aggregators.collect` adds it)."""
        fit = params.prio3_fit()
        if fit is None:
            raise ValueError(f"{params.protocol} does not fit in Prio3: no two-aggregator aggregate")
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_COUNT:
            raise ValueError(f"n must be an int in [0, {MAX_COUNT}], got {n!r}")
        values = np.asarray(sums, dtype=object)
        agg = cls(params)
        state = getattr(agg, fit.state)
        if values.shape != (fit.length,) or state.shape != (fit.length,):
            raise ValueError(f"{fit.vdaf} sums of {params.protocol} hold {fit.length} entries, got {values.shape}")
        low, high = (-MAX_COUNT, MAX_COUNT) if noisy else (0, n)
        if any(not isinstance(v, int | np.integer) or not low <= int(v) <= high for v in values):
            bounds = f"[{low}, {high}]" if noisy else f"[0, n={n}]"
            raise ValueError(f"each sum must be an integer in {bounds} (a debiased share? a wrap-around?)")
        if not noisy and fit.vdaf == "Prio3Histogram" and sum(int(v) for v in values) != n:
            raise ValueError(f"a Prio3Histogram of n={n} one-hot reports sums to n, got {sum(int(v) for v in values)}")
        state[:] = np.asarray([int(v) for v in values], dtype=state.dtype)
        agg.n = n
        return agg

    # -- protocol-specific ---------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def state_layout(cls, params: Any) -> StateLayout:
        """Name → (dtype, shape) of each statistic under ``params``, computed without allocating.

        The statistics are these arrays, created as zeros and kept as attributes of the same names;
        :meth:`from_bytes` checks a file's declared arrays and size against this before allocating."""

    @classmethod
    def report_layout(cls, params: Any) -> StateLayout:
        """Name → (dtype, shape) of the per-report statistics the fold keeps for the poisoning checks (none by
        default): summed like the others, but a simulated aggregate or an older file lacks them (zeros)."""
        return {}

    @abstractmethod
    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        """Fold already-validated columns (one array per payload field) into the statistics."""

    def _init_state(self) -> None:
        """Create the empty sufficient statistics (zeros, as :meth:`state_layout` says)."""
        for name, (dtype, shape) in self._full_layout().items():
            setattr(self, name, np.zeros(shape, dtype=dtype))

    def _full_layout(self) -> StateLayout:
        """:meth:`state_layout` then :meth:`report_layout`: every array the aggregate keeps."""
        return {**self.state_layout(self.params), **self.report_layout(self.params)}

    def _state(self) -> dict[str, np.ndarray]:
        """The sufficient statistics as named arrays (serialized and merged element-wise by sum)."""
        return {name: getattr(self, name) for name in self._full_layout()}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        for name, arr in state.items():
            getattr(self, name)[...] = arr

    # -- what every protocol defines, each with its own arguments (typed loosely here) ------------
    @abstractmethod
    def estimate(self, *args: Any, **options: Any) -> Estimates:
        """The counts (with standard errors and CIs) the aggregate's reports support."""

    @classmethod
    @abstractmethod
    def simulate(cls: type[A], params: Any, true_counts: Any, rng: Any = None, *args: Any, **options: Any) -> A:
        """An exact draw of the aggregate of users holding ``true_counts`` (no report is made)."""

    @classmethod
    def count_variance(cls, params: Any, n: float, count: float, domain_size: int, f2: float | None = None) -> float:
        """Exact ``Var`` of item :attr:`count_variance_item`'s count estimate when ``count`` of ``n`` users hold it
        and the others hold the other ``domain_size − 1`` values evenly (``F2``, the sum of squared counts of the
        others, where it matters: given, or that even spread): the planner's; ``NotImplementedError`` if unplanned."""
        raise NotImplementedError(f"{cls.__name__} has no count variance for the planner")

    count_variance_item: ClassVar[int] = 0  # 0: the items are exchangeable (binary RR's is 1, "yes")

    candidate_dictionary: ClassVar[str] = "none"
    """What :meth:`decode` does with a dictionary of candidate strings: ``"none"`` (a fixed domain or a mean: all is
    in the aggregate, candidates are ignored), ``"required"`` (it estimates the candidates' counts) or
    ``"optional"`` (it scores given candidates, else discovers the strings)."""

    def decode(self, candidates: Sequence[str] | None = None, *, confidence: float = 0.95, alpha: float = 0.05,
               top: int | None = None, selection: str = "auto") -> Any:
        """The estimates ``ldp decode`` writes, with the :attr:`candidate_dictionary` when there is one; ``alpha``,
        ``top`` and ``selection`` are the options of a protocol's test, discovery and model selection. Default:
        :meth:`estimate` at ``confidence``."""
        return self.estimate(confidence=confidence)

    @classmethod
    def simulate_estimates(cls, params: Any, true_counts: Any, rng: Any = None, *,
                           values: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(estimated counts, their exact variances)`` of every value in one exact simulated collection from users
        holding ``true_counts`` (of ``values``: the strings an open-domain protocol hashes; a fixed domain's values
        are its indices). Default: :meth:`simulate`, ``estimate().count`` (an open domain's: ``estimate(values)``)
        and the aggregate's ``exact_variance``; a protocol that decodes otherwise overrides this, one that counts
        no values or has no exact variance raises ``NotImplementedError``."""
        exact_variance = getattr(cls, "exact_variance", None)
        if exact_variance is None or getattr(params, "population_kind", "counts") != "counts":
            raise NotImplementedError(f"{cls.__name__} has no exact variance of counts")
        if params.domain_size is not None:
            est = cls.simulate(params, true_counts, rng).estimate()
        elif values is None:
            raise ValueError(f"{params.protocol} is open-domain: pass the strings the counts are of as `values`")
        else:
            est = cls.simulate(params, true_counts, rng, values=values).estimate(values)
        return est.count, exact_variance(params, true_counts)

    report_loglik_types: ClassVar[tuple[type[ProtocolParams], ...]] = ()
    """Params types whose ``log Pr[report | value]`` the ``report_loglik`` classmethod gives (association EM)."""

    # -- ingestion -----------------------------------------------------------------------------
    def add(self, reports: Report | ReportBatch | Frame | Iterable[Report],
            on_reject: RejectHandler | None = None) -> int:
        """Validate and fold reports in; return how many were accepted."""
        if isinstance(reports, Frame):
            reports = frame_to_batch(reports)
        if isinstance(reports, ReportBatch):
            return self._add_batch(reports, on_reject)
        if isinstance(reports, Report):
            reports = (reports,)
        total = 0
        for chunk in _chunks(reports, _CHUNK):
            accepted: list[Report] = []
            for r in chunk:
                try:
                    if not isinstance(r, Report):
                        raise ReportError("not_object", f"expected a Report, got {type(r).__name__}")
                    self.params.validate(r)
                except ReportError as err:
                    self._reject(r, err, on_reject)
                    continue
                accepted.append(r)
            if accepted:
                self._fold(self._columns_of(accepted))
                self.n += len(accepted)
                total += len(accepted)
        return total

    def add_json_lines(self, lines: Iterable[str | bytes], on_reject: RejectHandler | None = None) -> int:
        """Parse JSON lines (blank lines skipped) and add the valid reports; count the rest.

        Streams: memory stays bounded by a chunk of lines whatever the input's size."""
        total = 0
        for chunk in _chunks(lines, _CHUNK):
            good: list[Report] = []
            for line in chunk:
                if not line.strip():
                    continue
                try:
                    good.append(parse_json(line))
                except ReportError as err:
                    self._reject(line, err, on_reject)
            total += self.add(good, on_reject)
        return total

    def add_bytes(self, data: bytes, on_reject: RejectHandler | None = None) -> int:
        """Add every report of concatenated binary frames. A damaged frame is rejected whole and
        counted once per report it declared; reading resumes after it (see ``scan_frames``).
        Nothing is copied: each frame's CRC-32 is taken over a view of ``data``, its columns are
        numpy views of it, and valid columns are folded as they are (one reduction checks each)."""
        total = 0
        for item in scan_frames(data):
            if isinstance(item, ReportError):
                self._reject(item, item, on_reject, item.records)
            else:
                total += self.add(item, on_reject)
        return total

    def _reject(self, item: Any, err: ReportError, on_reject: RejectHandler | None, count: int = 1) -> None:
        self.rejected[err.reason] += count
        if on_reject is not None:
            on_reject(item, err)

    def _columns_of(self, reports: list[Report]) -> dict[str, np.ndarray]:
        cols: dict[str, np.ndarray] = {}
        for f in self.params.schema:
            if f.kind == "uint":
                cols[f.name] = np.fromiter((r.payload[f.name] for r in reports), dtype=np.uint64, count=len(reports))
            else:
                # validated against the schema: a "bits" field holds a frozenbitarray
                raw = b"".join(cast("frozenbitarray", r.payload[f.name]).tobytes() for r in reports)
                cols[f.name] = np.frombuffer(raw, dtype=np.uint8).reshape(len(reports), -1)
        return cols

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        p = self.params
        if batch.protocol != p.protocol or batch.fingerprint != p.fingerprint:
            reason = "wrong_protocol" if batch.protocol != p.protocol else "wrong_fingerprint"
            err = ReportError(reason, f"batch of {batch.protocol}/{batch.fingerprint}")
            self._reject(batch, err, on_reject, batch.n)
            return 0
        got = {f.name: f for f in batch.schema}
        if set(got) != {f.name for f in p.schema} or any(got[f.name].kind != f.kind for f in p.schema):
            err = ReportError("payload_mismatch", "batch fields differ from the protocol's")
            self._reject(batch, err, on_reject, batch.n)
            return 0
        ok: np.ndarray | None = None  # None while every row is valid (checked by one reduction per column)
        for f in p.schema:
            col = batch.columns[f.name]
            if f.kind == "uint":
                if _all_below(col, f.size):
                    continue
                bad, reason = (col >= f.size) | (col < 0), "out_of_range"
            elif got[f.name].size != f.size:
                self._reject(batch, ReportError("bad_length", f"{f.name}: {got[f.name].size} bits"), on_reject, batch.n)
                return 0
            else:
                pad = (-f.size) % 8
                if not pad or _all_below(col[:, -1], 1 << (8 - pad)):
                    continue
                bad, reason = (col[:, -1] >> (8 - pad)) != 0, "bad_value"
            if ok is not None:
                bad &= ok
            if bad.any():
                if on_reject:
                    for i in np.flatnonzero(bad):
                        on_reject(int(i), ReportError(reason, f"row {i}: {f.name}"))
                self.rejected[reason] += int(bad.sum())
                ok = ~bad if ok is None else ok & ~bad
        cols = batch.columns if ok is None else {k: v[ok] for k, v in batch.columns.items()}
        accepted = batch.n if ok is None else int(ok.sum())
        if accepted:
            self._fold(dict(cols))
            self.n += accepted
        return accepted

    def _add_batch_without(self, batch: ReportBatch, bad: np.ndarray, reasons: str | Sequence[str], detail: str,
                           on_reject: RejectHandler | None,
                           then: Callable[[ReportBatch, RejectHandler | None], int]) -> int:
        """Reject the rows ``bad`` of a batch (a protocol's own rule: ``reasons``, one or one per row, with
        ``row i: detail``), then ``then`` (the next ``_add_batch``) on the rest, whose rejects are reported
        with the row numbers of ``batch``."""
        for i in np.flatnonzero(bad).tolist():
            reason = reasons if isinstance(reasons, str) else reasons[i]
            self.rejected[reason] += 1
            if on_reject is not None:
                on_reject(i, ReportError(reason, f"row {i}: {detail}"))
        keep = np.flatnonzero(~bad)
        rest = ReportBatch(batch.protocol, batch.fingerprint, batch.schema,
                           {name: np.asarray(col)[keep] for name, col in batch.columns.items()})
        if on_reject is None:
            return then(rest, None)
        report = on_reject

        def renumber(item: Any, err: ReportError) -> None:  # row numbers of `rest` -> of `batch`
            report(int(keep[item]) if isinstance(item, int) else item, err)

        return then(rest, renumber)

    # -- merge and serialization -----------------------------------------------------------------
    def _check_compatible(self, other: Aggregate) -> None:
        if type(other) is not type(self) or other.params.fingerprint != self.params.fingerprint:
            raise ValueError(
                f"cannot merge {type(other).__name__}[{other.params.fingerprint}] into "
                f"{type(self).__name__}[{self.params.fingerprint}]: parameters differ"
            )

    def merge(self: A, other: A) -> A:
        """Fold ``other`` (same protocol and parameters) into this aggregate; returns ``self``."""
        self._check_compatible(other)
        if self.n + other.n > MAX_COUNT or any(self.rejected[k] + v > MAX_COUNT for k, v in other.rejected.items()):
            raise ValueError(f"merging would count more than {MAX_COUNT} reports, beyond what an aggregate holds")
        for name, arr in other._state().items():
            getattr(self, name)[...] += arr
        self.n += other.n
        self.rejected.update(other.rejected)
        return self

    def copy(self: A) -> A:
        return type(self).from_bytes(self.to_bytes())  # type: ignore[return-value]

    def to_bytes(self) -> bytes:
        """``LDPA`` | version | u32 header length | JSON header | little-endian arrays | u32 CRC-32."""
        return write_aggregate(self.params, self.n, self.rejected, self._full_layout(), self._state())

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Aggregate:
        """Rebuild any protocol's aggregate from :meth:`to_bytes` output.

        The bytes may come from anywhere: the header is parsed within :data:`MAX_HEADER`, its
        arrays must be exactly the parameters' :meth:`state_layout`, and their size must be the
        payload's before anything is allocated. Whatever is wrong raises
        :class:`AggregateFormatError` (a ``ValueError``)."""
        view = unframe(data)
        try:
            return Aggregate._load(view)
        except AggregateFormatError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
            raise AggregateFormatError(f"corrupt aggregate: {_clip(exc)}") from None

    @staticmethod
    def _load(data: memoryview) -> Aggregate:
        header = _read_header(data)
        name = _typed(header, "protocol", str)
        known = _aggregates()
        if name not in known:
            raise ValueError(f"unknown protocol {name!r}; known: {', '.join(known)}")
        params_type, cls = known[name]
        try:
            params = params_type.from_dict(_typed(header, "params", dict))
        except (TypeError, ValueError) as exc:
            raise AggregateFormatError(f"aggregate header has bad {name} parameters: {exc}") from None
        if params.fingerprint != header["fingerprint"]:
            raise AggregateFormatError("aggregate fingerprint does not match its parameters")
        load_state = getattr(cls, "_load_state", None)
        if load_state is not None:  # a state the parameters do not size (PEM keeps its reports)
            return load_state(data, header, params)
        state = read_state(data, header, cls.state_layout(params), cls.report_layout(params))  # views, no copy
        n, rejected = _count(header["n"], "n"), _typed(header, "rejected", dict)
        for reason, count in rejected.items():
            _count(count, f"rejected[{_clip(reason)}]")
        agg = cls(params)  # allocates the state: exactly the payload's size, checked above
        agg._set_state(state)
        agg.n, agg.rejected = n, Counter(rejected)
        return agg

    def __repr__(self) -> str:
        rej = sum(self.rejected.values())
        return f"{type(self).__name__}(n={self.n}, rejected={rej}, params={self.params})"


@cache
def _aggregates() -> dict[str, tuple[type[ProtocolParams], type[Aggregate]]]:
    """``{protocol: (params type, aggregate)}``, by name: the concrete :class:`Aggregate` subclasses defined in
    the modules of :mod:`ldp.decoders` (imported on the first call), under the protocols of their ``params_type``.

    What :meth:`Aggregate.from_bytes` reads a header's protocol with; the registry uses the same scanner
    (:func:`ldp.lazy.package_classes`: also other distributions' aggregates, entry-point group ``ldp.decoders``)."""
    found: dict[str, tuple[type[ProtocolParams], type[Aggregate]]] = {}
    for agg in package_classes(__name__.rpartition(".")[0], Aggregate):  # type: ignore[type-abstract]  # a base
        kinds = agg.params_type if isinstance(agg.params_type, tuple) else (agg.params_type,)
        found.update((params_type.protocol, (params_type, agg)) for params_type in kinds)
    return dict(sorted(found.items()))
