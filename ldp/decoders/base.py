"""What every protocol's server side shares: the mergeable aggregate and ingestion with rejects.

An aggregate follows the DataSketches pattern: ``add`` reports (one, many, a columnar batch, binary
frames or JSON lines), ``merge`` another aggregate of the same parameters, ``to_bytes`` /
``from_bytes``. Reports that fail validation are never silently dropped: each is counted in
``rejected`` under its :class:`~ldp.reports.ReportError` reason and passed to ``on_reject`` if given.
"""

from __future__ import annotations

import json
import struct
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from itertools import islice
from typing import Any, Callable, ClassVar, Iterable, Iterator, TypeVar

import numpy as np

from ldp.encoders.base import ProtocolParams
from ldp.reports import Frame, Report, ReportBatch, ReportError, parse_json, scan_frames

__all__ = ["Aggregate", "RejectHandler", "frame_to_batch"]

RejectHandler = Callable[[Any, ReportError], None]
"""Called with (the rejected item: a Report, a raw line, or a batch row index; the error)."""

_MAGIC = b"LDPA"
_CHUNK = 1 << 16
_VERSION = 1
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


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class Aggregate(ABC):
    """Streaming, mergeable sufficient statistics of one protocol under one parameter set."""

    params_type: ClassVar[type[ProtocolParams]]

    def __init__(self, params: ProtocolParams) -> None:
        if not isinstance(params, self.params_type):
            kinds = self.params_type if isinstance(self.params_type, tuple) else (self.params_type,)
            names = " or ".join(t.__name__ for t in kinds)
            raise TypeError(f"{type(self).__name__} needs {names}, got {type(params).__name__}")
        self.params = params
        self.n = 0
        self.rejected: Counter[str] = Counter()
        self._init_state()

    # -- protocol-specific ---------------------------------------------------------------------
    @abstractmethod
    def _init_state(self) -> None:
        """Create the empty sufficient statistics."""

    @abstractmethod
    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        """Fold already-validated columns (one array per payload field) into the statistics."""

    @abstractmethod
    def _state(self) -> dict[str, np.ndarray]:
        """The sufficient statistics as named arrays (serialized and merged element-wise by sum)."""

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        for name, arr in state.items():
            getattr(self, name)[...] = arr

    # -- ingestion -----------------------------------------------------------------------------
    def add(self, reports: Report | ReportBatch | Frame | Iterable[Report], on_reject: RejectHandler | None = None) -> int:
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
        counted once per report it declared; reading resumes after it (see ``scan_frames``)."""
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
                raw = b"".join(r.payload[f.name].tobytes() for r in reports)
                cols[f.name] = np.frombuffer(raw, dtype=np.uint8).reshape(len(reports), -1)
        return cols

    def _add_batch(self, batch: ReportBatch, on_reject: RejectHandler | None) -> int:
        p = self.params
        if batch.protocol != p.protocol or batch.fingerprint != p.fingerprint:
            reason = "wrong_protocol" if batch.protocol != p.protocol else "wrong_fingerprint"
            self._reject(batch, ReportError(reason, f"batch of {batch.protocol}/{batch.fingerprint}"), on_reject, batch.n)
            return 0
        got = {f.name: f for f in batch.schema}
        if set(got) != {f.name for f in p.schema} or any(got[f.name].kind != f.kind for f in p.schema):
            self._reject(batch, ReportError("payload_mismatch", "batch fields differ from the protocol's"), on_reject, batch.n)
            return 0
        ok = np.ones(batch.n, dtype=bool)
        for f in p.schema:
            col = batch.columns[f.name]
            if f.kind == "uint":
                bad, reason = (col >= f.size) | (col < 0), "out_of_range"
            elif got[f.name].size != f.size:
                self._reject(batch, ReportError("bad_length", f"{f.name}: {got[f.name].size} bits"), on_reject, batch.n)
                return 0
            else:
                pad = (-f.size) % 8
                bad, reason = ((col[:, -1] >> (8 - pad)) != 0 if pad else np.zeros(batch.n, bool)), "bad_value"
            bad &= ok
            if bad.any():
                for i in np.flatnonzero(bad) if on_reject else ():
                    on_reject(int(i), ReportError(reason, f"row {i}: {f.name}"))
                self.rejected[reason] += int(bad.sum())
                ok &= ~bad
        cols = batch.columns if ok.all() else {k: v[ok] for k, v in batch.columns.items()}
        accepted = int(ok.sum())
        if accepted:
            self._fold(dict(cols))
            self.n += accepted
        return accepted

    # -- merge and serialization -----------------------------------------------------------------
    def _check_compatible(self, other: "Aggregate") -> None:
        if type(other) is not type(self) or other.params.fingerprint != self.params.fingerprint:
            raise ValueError(
                f"cannot merge {type(other).__name__}[{other.params.fingerprint}] into "
                f"{type(self).__name__}[{self.params.fingerprint}]: parameters differ"
            )

    def merge(self: A, other: A) -> A:
        """Fold ``other`` (same protocol and parameters) into this aggregate; returns ``self``."""
        self._check_compatible(other)
        for name, arr in other._state().items():
            getattr(self, name)[...] += arr
        self.n += other.n
        self.rejected.update(other.rejected)
        return self

    def copy(self: A) -> A:
        return type(self).from_bytes(self.to_bytes())  # type: ignore[return-value]

    def to_bytes(self) -> bytes:
        """``LDPA`` | version | u32 header length | JSON header | little-endian arrays | u32 CRC-32."""
        state = self._state()
        header = {
            "protocol": self.params.protocol, "params": self.params.to_dict(), "fingerprint": self.params.fingerprint,
            "n": self.n, "rejected": dict(self.rejected),
            "arrays": [[k, v.dtype.newbyteorder("<").str, list(v.shape)] for k, v in state.items()],
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        body = b"".join(np.ascontiguousarray(v, dtype=v.dtype.newbyteorder("<")).tobytes() for v in state.values())
        blob = _MAGIC + bytes([_VERSION]) + struct.pack("<I", len(head)) + head + body
        return blob + struct.pack("<I", zlib.crc32(blob))

    @staticmethod
    def from_bytes(data: bytes) -> "Aggregate":
        """Rebuild any protocol's aggregate from :meth:`to_bytes` output; ``ValueError`` if damaged."""
        data = bytes(data)
        if len(data) < 13 or data[:4] != _MAGIC or data[4] != _VERSION:
            raise ValueError("not a serialized ldp aggregate (bad magic or version)")
        if zlib.crc32(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
            raise ValueError("aggregate bytes are damaged (CRC-32 mismatch)")
        try:
            return Aggregate._load(data[:-4])
        except (KeyError, TypeError, IndexError, AttributeError, struct.error) as exc:
            raise ValueError(f"corrupt aggregate: {exc!r}") from None

    @staticmethod
    def _load(data: bytes) -> "Aggregate":
        from ldp.protocols import get_protocol

        (hlen,) = struct.unpack("<I", data[5:9])
        header = json.loads(data[9:9 + hlen])
        proto = get_protocol(header["protocol"])
        agg = proto.aggregate_type(proto.params_type.from_dict(header["params"]))
        if agg.params.fingerprint != header["fingerprint"]:
            raise ValueError("aggregate fingerprint does not match its parameters")
        expected = agg._state()
        pos, state = 9 + hlen, {}
        for name, dtype, shape in header["arrays"]:
            want = expected.get(name)
            if want is None or np.dtype(dtype) != want.dtype.newbyteorder("<") or tuple(shape) != want.shape:
                raise ValueError(f"aggregate array {name!r} does not match the protocol's state")
            size = want.size * want.dtype.itemsize
            if pos + size > len(data):
                raise ValueError("truncated aggregate")
            state[name] = np.frombuffer(data[pos:pos + size], dtype=np.dtype(dtype)).reshape(want.shape)
            pos += size
        if pos != len(data) or set(state) != set(expected):
            raise ValueError("aggregate arrays do not match the protocol's state")
        n, rejected = header["n"], header["rejected"]
        if not (isinstance(n, int) and n >= 0 and isinstance(rejected, dict)
                and all(isinstance(v, int) and v >= 0 for v in rejected.values())):
            raise ValueError("aggregate header has a bad report count")
        agg._set_state(state)
        agg.n, agg.rejected = n, Counter(rejected)
        return agg

    def __repr__(self) -> str:
        rej = sum(self.rejected.values())
        return f"{type(self).__name__}(n={self.n}, rejected={rej}, params={self.params})"
