"""Aggregate files: canonical bytes, atomic writes, the per-input container, and ``ldp merge``.

An aggregate file is exactly :meth:`Aggregate.to_bytes` (``docs/wire-format.md``) with the
rejection counts in sorted order, so equal aggregates give equal bytes whatever order they were
merged in. Files are named by their key: ``metric.fingerprint[.wWINDOW].agg``. Every write goes
to a temporary file in the same folder, is flushed to disk, and replaces the target
(``os.replace``): a reader sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import logging
import os
import stat
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ldp.decoders.base import Aggregate, AggregateFormatError
from ldp.server.fold import Key, key_name, parse_key_name
from ldp.storage.local import fsync_dir

__all__ = ["AGG_SUFFIX", "canonical_bytes", "write_atomic", "write_all", "write_aggregate", "read_aggregate",
           "pack_parts", "unpack_parts", "merge_into", "merge_files", "aggregate_files_in"]

logger = logging.getLogger(__name__)

AGG_SUFFIX = ".agg"
_PARTS_MAGIC = b"LDPS"
_PARTS_VERSION = 1


def canonical_bytes(agg: Aggregate) -> bytes:
    """``agg.to_bytes()`` with ``rejected`` in sorted order (zero counts dropped): equal state, equal bytes."""
    agg.rejected = Counter({k: v for k, v in sorted(agg.rejected.items()) if v})
    return agg.to_bytes()


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temporary file, fsync, ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until every byte of ``data`` is written (a write may take only a part). On an ``OSError`` the
    bytes written before it stay in the file (a full disk takes what fits, then refuses): the caller cuts back to
    the size before (:mod:`ldp.collector.journal`)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_aggregate(path: str | os.PathLike[str], agg: Aggregate) -> None:
    write_atomic(path, canonical_bytes(agg))


def read_aggregate(path: str | os.PathLike[str]) -> Aggregate:
    """Load an aggregate file (:class:`AggregateFormatError` naming the file if it is not one or is damaged)."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # reading a device or a pipe may block or never end
        raise AggregateFormatError(f"{os.fspath(path)}: not a regular file")
    try:
        return Aggregate.from_bytes(Path(path).read_bytes())
    except ValueError as exc:
        raise AggregateFormatError(f"{os.fspath(path)}: {exc}") from None


def pack_parts(aggregates: Mapping[Key, Aggregate]) -> bytes:
    """Several keyed aggregates in one blob: ``LDPS`` | version u8 | count u32 | per aggregate
    (sorted by name): name length u16, name, length u64, aggregate bytes | CRC-32 u32."""
    out = [_PARTS_MAGIC, bytes([_PARTS_VERSION]), struct.pack("<I", len(aggregates))]
    for name, agg in sorted((key_name(k), a) for k, a in aggregates.items()):
        blob, raw = canonical_bytes(agg), name.encode("ascii")
        out += [struct.pack("<H", len(raw)), raw, struct.pack("<Q", len(blob)), blob]
    body = b"".join(out)
    return body + struct.pack("<I", zlib.crc32(body))


def unpack_parts(data: bytes | bytearray | memoryview, source: str = "parts") -> dict[Key, Aggregate]:
    """The aggregates of :func:`pack_parts` (:class:`AggregateFormatError` naming ``source`` if damaged).

    Every declared count and length is checked against the bytes present before it is used."""
    view = memoryview(data).cast("B")
    if len(view) < 13 or view[:4] != _PARTS_MAGIC or view[4] != _PARTS_VERSION:
        raise AggregateFormatError(f"{source}: not a partial-aggregates file (bad magic or version)")
    end = len(view) - 4
    if zlib.crc32(view[:end]) != int.from_bytes(view[end:], "little"):
        raise AggregateFormatError(f"{source}: damaged (CRC-32 mismatch)")
    count, pos, out = int.from_bytes(view[5:9], "little"), 9, {}
    try:
        for i in range(count):
            nlen = int.from_bytes(view[pos:_span(pos, 2, end, f"part {i}: name length")], "little")
            pos, stop = pos + 2, _span(pos + 2, nlen, end, f"part {i}: name")
            name = view[pos:stop].tobytes().decode("ascii")
            blen = int.from_bytes(view[stop:_span(stop, 8, end, f"part {i}: aggregate length")], "little")
            pos, stop = stop + 8, _span(stop + 8, blen, end, f"part {i} ({name}): aggregate")
            key = parse_key_name(name)
            if key in out:
                raise AggregateFormatError(f"part {name!r} appears twice")
            out[key] = Aggregate.from_bytes(view[pos:stop])
            pos = stop
    except ValueError as exc:  # AggregateFormatError, a bad name (UnicodeDecodeError, parse_key_name)
        raise AggregateFormatError(f"{source}: damaged: {str(exc)[:300]}") from None
    if pos != end:
        raise AggregateFormatError(f"{source}: damaged: {end - pos} bytes after the {count} declared parts")
    return out


def _span(pos: int, size: int, end: int, what: str) -> int:
    """``pos + size`` if ``size`` bytes remain before ``end`` (a declared length is checked before it is used)."""
    if size > end - pos:
        raise AggregateFormatError(f"{what} declares {size} bytes at offset {pos}, but only {end - pos} remain")
    return pos + size


def merge_into(target: dict[Key, Aggregate], other: Mapping[Key, Aggregate]) -> dict[Key, Aggregate]:
    """Merge ``other``'s aggregates into ``target`` by key (taking ownership of those it adopts)."""
    for key, agg in other.items():
        if key in target:
            target[key].merge(agg)
        else:
            target[key] = agg
    return target


def aggregate_files_in(path: str | os.PathLike[str]) -> list[Path]:
    """An aggregate file as given, or the ``.agg`` files of a folder (or of its ``aggregates/``)."""
    p = Path(path)
    if p.is_dir():
        folder = p / "aggregates" if (p / "aggregates").is_dir() else p
        return sorted(folder.glob(f"*{AGG_SUFFIX}"))
    if not p.exists():
        raise FileNotFoundError(f"no such aggregate file or folder: {os.fspath(path)}")
    return [p]


def merge_files(inputs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                all_windows: bool = False) -> dict[str, Path]:
    """``ldp merge``: merge aggregate files (or folders of them) from many jobs or machines.

    Files with the same name (``metric.fingerprint[.wWINDOW].agg``) are merged; with
    ``all_windows`` the window is dropped from the name first (all days of a metric into one).
    ``output`` is a folder for the merged files, or one ``.agg`` file when everything merges into
    one. Exact: integer sums, the same bytes in any order or grouping. Returns name → path."""
    files = [f for item in inputs for f in aggregate_files_in(item)]
    if not files:
        raise ValueError("nothing to merge: no .agg files among the inputs")
    merged: dict[str, Aggregate] = {}
    for f in files:
        name = f.name[:-len(AGG_SUFFIX)] if f.name.endswith(AGG_SUFFIX) else f.name
        try:
            key = parse_key_name(name)
            name = key_name((key[0], key[1], None)) if all_windows else name
        except ValueError:
            if all_windows:
                raise ValueError(f"{f}: --all-windows needs files named metric.fingerprint.wWINDOW.agg") from None
        agg = read_aggregate(f)
        if name in merged:
            try:
                merged[name].merge(agg)
            except ValueError as exc:
                raise ValueError(f"{f}: {exc}") from None
        else:
            merged[name] = agg
    logger.info("merge: %d file(s) into %d aggregate(s)", len(files), len(merged))
    out = Path(output)
    if out.suffix == AGG_SUFFIX and not out.is_dir():
        if len(merged) > 1:
            raise ValueError(f"the inputs hold {len(merged)} different aggregates ({', '.join(sorted(merged))}); "
                             "give a folder as the output")
        write_aggregate(out, next(iter(merged.values())))
        return {next(iter(merged)): out}
    paths = {}
    for name, agg in sorted(merged.items()):
        paths[name] = out / f"{name}{AGG_SUFFIX}"
        write_aggregate(paths[name], agg)
    return paths


def merge_all(aggregates: Iterable[Aggregate]) -> Aggregate:
    """One aggregate from many of the same parameters (a copy: the inputs are not changed)."""
    it = iter(aggregates)
    try:
        total = next(it).copy()
    except StopIteration:
        raise ValueError("nothing to merge") from None
    for agg in it:
        total.merge(agg)
    return total
