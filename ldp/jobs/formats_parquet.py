"""The Parquet layout of the server's inputs (``docs/jobs.md``): its writer, :func:`write_parquet`, and its
verified reader, :func:`parquet_row_groups` (every page's CRC-32 checked and every row group decoded to the footer's
row count before any row is handed out), on which :mod:`ldp.jobs.arrow` folds. pyarrow is imported only when
they are called. The names are importable from :mod:`ldp.jobs.formats` too.

One envelope per row; columns ``spec``, ``metric``, ``protocol``, ``params`` (strings), ``window``, ``v``
(integers) and one column per payload field, ``payload.<field>``: an integer column for a ``uint`` field, a binary
column of the packed bits for a ``bits`` field (ceil(size/8) bytes, bit i in byte i//8 at position i%8). Rows of
other metrics hold nulls there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from ldp.errors import InputError
from ldp.extras import install_hint
from ldp.reports import Report, ReportBatch

if TYPE_CHECKING:
    from ldp.jobs.formats import Section

__all__ = ["PARQUET_KEYS", "PARQUET_VERIFY_IN_MEMORY", "parquet_row_groups", "write_parquet"]

PARQUET_KEYS = ("spec", "metric", "window", "v", "protocol", "params")


def write_parquet(target: str | os.PathLike[str] | IO[bytes], sections: Iterable[Section],
                  row_group_size: int = 1 << 20, compression: str = "zstd") -> int:
    """Write sections in the Parquet layout (``compression``: zstd, or ``"none"``), row groups of at
    most ``row_group_size`` rows, every page with its CRC-32 page checksum (needs pyarrow:
    ``pip install 'ldp-telemetry[parquet]'``); returns the rows written. Integer columns get the narrowest
    unsigned type that holds every value the sections' parameters allow."""
    import numpy as np

    pa, pq = _pyarrow()
    batches: list[tuple[Section, ReportBatch]] = []
    fields: dict[str, tuple[str, int]] = {}  # name: (kind, largest value)
    top_window = 0
    for s in sections:
        batch = s.reports if isinstance(s.reports, ReportBatch) else _batch_of(s.reports)
        for f in batch.schema:
            kind = ("uint", f.size - 1) if f.kind == "uint" else ("bits", 0)
            old = fields.setdefault(f.name, kind)
            if old[0] != kind[0]:
                raise ValueError(f"payload field {f.name!r} is uint in one metric and bits in another: "
                                 "write them to separate Parquet files")
            fields[f.name] = (kind[0], max(old[1], kind[1]))
        batches.append((s, batch))
        top_window = max(top_window, s.window)
    text = pa.dictionary(pa.int32(), pa.string())  # stored as Parquet strings, dictionary-encoded
    window = pa.from_numpy_dtype(np.min_scalar_type(top_window))
    schema = pa.schema([("spec", text), ("metric", text), ("window", window), ("v", pa.uint8()), ("protocol", text),
                        ("params", text)]
                       + [(f"payload.{k}", pa.from_numpy_dtype(np.min_scalar_type(top)) if kind == "uint"
                           else pa.binary()) for k, (kind, top) in fields.items()])
    total = 0
    with pq.ParquetWriter(target, schema, compression=compression, write_page_checksum=True) as writer:
        for s, batch in batches:
            for start in range(0, batch.n, row_group_size):
                cols = {k: v[start:start + row_group_size] for k, v in batch.columns.items()}
                writer.write_table(_section_table(pa, schema, s, batch, cols), row_group_size=row_group_size)
            total += batch.n
    return total

def _section_table(pa: Any, schema: Any, s: Section, batch: ReportBatch, cols: dict[str, Any]) -> Any:
    import numpy as np

    n = len(next(iter(cols.values())))
    kinds = {f.name: f.kind for f in batch.schema}
    zeros = pa.array(np.zeros(n, np.int32))

    def const(text: str) -> Any:
        return pa.DictionaryArray.from_arrays(zeros, pa.array([text], pa.string()))

    window_type = schema.field("window").type.to_pandas_dtype()
    arrays = [const(s.spec), const(s.metric), pa.array(np.full(n, s.window, window_type)),
              pa.array(np.ones(n, np.uint8)), const(batch.protocol), const(batch.fingerprint)]
    for name in schema.names[len(PARQUET_KEYS):]:
        field, kind = name[len("payload."):], schema.field(name).type
        if field not in kinds:
            arrays.append(pa.nulls(n, kind))
        elif kinds[field] == "uint":
            values, dtype = np.asarray(cols[field]), np.dtype(kind.to_pandas_dtype())
            if values.size and (values.min() < 0 or values.max() > np.iinfo(dtype).max):
                raise ValueError(f"field {field!r} has values outside its parameters' range; refusing to write them")
            arrays.append(pa.array(values.astype(dtype)))
        else:
            packed = np.ascontiguousarray(cols[field], dtype=np.uint8)
            width = packed.shape[1]
            offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
            arrays.append(pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                                 pa.py_buffer(packed.tobytes())]))
    return pa.Table.from_arrays(arrays, schema=schema)


def _batch_of(reports: Sequence[Report]) -> ReportBatch:
    """Reports of one protocol, parameters and fields as a columnar batch (uint fields sized by
    their largest value)."""
    import numpy as np

    from ldp.reports import Field

    first = reports[0]
    names = list(first.payload)
    if any(r.protocol != first.protocol or r.fingerprint != first.fingerprint or list(r.payload) != names
           for r in reports):
        raise ValueError("a section's reports must share protocol, parameters and payload fields")
    schema: list[Field] = []
    cols: dict[str, np.ndarray] = {}
    for name in names:
        value = first.payload[name]
        if isinstance(value, int):
            cols[name] = np.fromiter((r.payload[name] for r in reports), np.uint64, len(reports))
            schema.append(Field(name, "uint", int(cols[name].max()) + 1))
        else:
            size = len(value)
            bits = [b for r in reports if not isinstance(b := r.payload[name], int) and len(b) == size]
            if len(bits) != len(reports):
                raise ValueError(f"a section's {name!r} bit strings must all have {size} bits")
            raw = b"".join(b.tobytes() for b in bits)
            cols[name] = np.frombuffer(raw, np.uint8).reshape(len(reports), -1)
            schema.append(Field(name, "bits", size))
    return ReportBatch(first.protocol, first.fingerprint, tuple(schema), cols)


PARQUET_VERIFY_IN_MEMORY = 1 << 26
"""Row groups of at most this many (uncompressed) bytes are decoded whole, and verified, before any
row is folded; larger ones are decoded twice (a verifying pass first), so memory stays bounded."""


def parquet_row_groups(path: str | os.PathLike[str], batch_rows: int, source: str, *, unverified: bool = False,
                       check_schema: Callable[[Any], None] | None = None
                       ) -> Iterator[tuple[int, int, Iterable[Any] | str]]:
    """``(first record, rows, record batches)`` per row group of a Parquet file, each only once every
    page of the row group passed its checksum and decoded to the footer's row count; for a damaged
    row group, ``(first record, rows, why)``. ``InputError``: an unreadable footer, a schema that
    ``check_schema`` refuses, or pages without checksums (unless ``unverified``)."""
    pa, pq = _pyarrow()
    damage = (pa.ArrowException, OSError, ValueError, MemoryError)
    def open_file(text: list[str] | None) -> Any:  # no pre-buffering of row groups, one thread: flat memory
        return pq.ParquetFile(path, read_dictionary=text, pre_buffer=False, buffer_size=1 << 20,
                              page_checksum_verification=True)

    try:
        try:
            pf = open_file(["spec", "metric", "protocol", "params"])
        except KeyError:  # a text key column is missing: ``check_schema`` names it
            pf = open_file(None)
        meta, schema = pf.metadata, pf.schema_arrow
    except damage as exc:
        raise InputError(f"{source}: not a Parquet file, or its footer is damaged: {exc}") from None
    try:
        if check_schema is not None:
            check_schema(schema)
        unchecked = {} if unverified else _pages_without_checksum(path, meta)
        if unchecked and len(unchecked) == meta.num_row_groups:
            raise InputError(f"{source}: Parquet pages without checksums ({next(iter(unchecked.values()))}) cannot "
                             "be verified, so they are not folded; write the file with page checksums (ldp's "
                             "write_parquet, or pyarrow's write_page_checksum=True), or allow unverified Parquet files "
                             "explicitly")
        record = 1
        decoded: list[Any] | None  # None between row groups: never two alive at once
        held: Iterator[Any] | None
        for rg in range(meta.num_row_groups):
            info = meta.row_group(rg)
            rows = info.num_rows

            def batches(rg: int = rg) -> Iterator[Any]:
                return pf.iter_batches(batch_size=batch_rows, row_groups=[rg], use_threads=False)

            try:
                if rg in unchecked:  # the others have checksums: a page header without one is damaged
                    raise ValueError(f"page header without checksum in {unchecked[rg]}")
                if info.total_byte_size <= PARQUET_VERIFY_IN_MEMORY:
                    decoded = list(batches())
                    got, held = sum(b.num_rows for b in decoded), _drain(decoded)
                else:
                    got, held = sum(b.num_rows for b in batches()), _reread(batches, source)
                if got != rows:
                    raise ValueError(f"{got} rows decoded, the footer says {rows}")
            except damage as exc:
                yield record, rows, f"row group {rg} of {rows} rows: {str(exc)[:300]}"
            else:
                yield record, rows, held
            held = decoded = None  # never two row groups alive at once
            record += rows
    finally:
        pf.close()


def _drain(decoded: list[Any]) -> Iterator[Any]:
    """The batches of a verified row group, each let go as soon as it is handed out."""
    decoded.reverse()
    while decoded:
        yield decoded.pop()


def _reread(batches: Callable[[], Iterator[Any]], source: str) -> Iterator[Any]:
    """The second pass over a verified row group: a failure now means the file changed meanwhile."""
    pa, _ = _pyarrow()
    try:
        yield from batches()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{source}: a verified row group failed on its second reading: {exc}") from None


def _pages_without_checksum(path: str | os.PathLike[str], meta: Any) -> dict[int, str]:
    """The row groups with a column chunk whose first page header has no CRC (Thrift compact
    ``PageHeader``: fields 1 to 3 are i32, field 4 the optional ``crc``), and where."""
    out = {}
    with open(path, "rb") as fh:
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                chunk = meta.row_group(rg).column(c)
                offsets = [chunk.data_page_offset] + ([chunk.dictionary_page_offset]
                                                      if chunk.has_dictionary_page and chunk.dictionary_page_offset
                                                      else [])
                fh.seek(max(0, min(offsets)))
                if not _has_crc(fh.read(64)):
                    out[rg] = f"column {chunk.path_in_schema!r} of row group {rg}"
                    break
    return out


def _has_crc(head: bytes) -> bool:
    field, pos = 0, 0
    while pos < len(head):
        delta, kind = head[pos] >> 4, head[pos] & 0x0F
        if delta == 0 or kind != 5:  # not a short-form i32 field
            return False
        field += delta
        if field >= 4:
            return field == 4
        pos += 1
        while pos < len(head) and head[pos] & 0x80:  # skip the varint
            pos += 1
        pos += 1
    return False


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"Parquet needs pyarrow: {install_hint('pyarrow', 'parquet')}") from None
    return pa, pq

