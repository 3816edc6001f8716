"""Aggregate files: canonical bytes, atomic writes, the per-input container, and ``ldp merge``.

An aggregate file is exactly :meth:`Aggregate.to_bytes` (``docs/wire-format.md``) with the
rejection counts in sorted order, so equal aggregates give equal bytes whatever order they were
merged in. Files are named by their key: ``metric.fingerprint[.wWINDOW].agg``. Every write goes
to a temporary file in the same folder, is flushed to disk, and replaces the target
(``os.replace``), the folder then flushed too: a reader sees the old file or the new one, never a mix. That
write is the package's one atomic write, :func:`ldp.storage.local.write_atomic` (the local store's ``put``),
re-exported here with :func:`~ldp.storage.local.fsync_dir` for the server and the ingest service.
"""

from __future__ import annotations

import logging
import os
import stat
import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ldp.decoders.base import Aggregate, AggregateFormatError
from ldp.jobs.fold import Key, key_name, parse_key_name, spec_index
from ldp.jobs.release import metric_policy, pool_windows
from ldp.spec import CollectionSpec
from ldp.storage.local import fsync_dir, write_atomic

__all__ = ["AGG_SUFFIX", "Merged", "canonical_bytes", "fsync_dir", "write_atomic", "write_all", "write_synced",
           "write_aggregate", "read_aggregate", "same_reports", "pack_parts", "unpack_parts", "merge_into",
           "merge_files", "aggregate_files_in"]

logger = logging.getLogger(__name__)

try:  # optional compiled helper (ldp/jobs/_synckernel.c, built on install where a C compiler is found)
    from ldp.jobs._synckernel import write_synced as _write_synced_compiled
except ImportError:  # pragma: no cover - exercised where no compiler was found
    _write_synced_compiled = None  # type: ignore[assignment]

AGG_SUFFIX = ".agg"
_PARTS_MAGIC = b"LDPS"
_PARTS_VERSION = 1


def canonical_bytes(agg: Aggregate) -> bytes:
    """``agg.to_bytes()`` with ``rejected`` in sorted order (zero counts dropped): equal state, equal bytes."""
    agg.rejected = Counter({k: v for k, v in sorted(agg.rejected.items()) if v})
    return agg.to_bytes()


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until every byte of ``data`` is written (a write may take only a part). On an ``OSError`` the
    bytes written before it stay in the file (a full disk takes what fits, then refuses): the caller cuts back to
    the size before (:mod:`ldp.ingest.journal`)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_synced(*pairs: tuple[int, bytes | bytearray | memoryview], compiled: bool | None = None) -> None:
    """Each ``(fd, data)`` pair in order: every byte of ``data`` written to ``fd`` (:func:`write_all`), then ``fd``
    fsynced; the next pair only after that fsync. An ``OSError`` at the first failing call, the bytes written
    before it left in the file (the caller cuts back).

    The ingest service's group commit (a segment, then its journal) goes through here: with the compiled helper
    (``ldp/jobs/_synckernel.c``, the default when built; ``compiled=False`` forces the Python path) the GIL is
    released once for all the writes and fsyncs, where ``os.write`` and ``os.fsync`` each take it back after their
    call and may wait up to the switch interval while the event loop thread holds it."""
    if compiled is None:
        compiled = _write_synced_compiled is not None
    if compiled:
        if _write_synced_compiled is None:
            raise ValueError("the compiled write_synced is not built here")
        _write_synced_compiled(*(x for pair in pairs for x in pair))
        return
    for fd, data in pairs:
        write_all(fd, data)
        os.fsync(fd)


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


def same_reports(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two aggregate files hold the same reports' statistics: the same bytes, or the same protocol,
    parameters, counts and refusals and every array equal but those the fold's own coins fill (the aggregate type's
    ``coin_fields``: RAPPOR's pair test split and its halves, fresh OS entropy each fold, so the same reports folded
    twice differ there)."""
    if Path(a).read_bytes() == Path(b).read_bytes():
        return True
    import numpy as np

    x, y = read_aggregate(a), read_aggregate(b)
    if type(x) is not type(y) or x.params != y.params or (x.n, x.rejected) != (y.n, y.rejected):
        return False
    return all(np.array_equal(getattr(x, name), getattr(y, name))
               for name in type(x).state_layout(x.params) if name not in type(x).coin_fields)


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


class Merged(dict[str, Path]):
    """What :func:`merge_files` wrote: name -> path. With ``all_windows``, also per metric (its name without a
    window) the windows merged (``pooled``: indices, ``None`` for a file without a window) and those left out
    (``left_out``: ``{"window", "n", "reason"}`` each); a metric whose every window was left out has no file, and is
    in ``left_out`` only."""

    def __init__(self) -> None:
        super().__init__()
        self.pooled: dict[str, list[int | None]] = {}
        self.left_out: dict[str, list[dict[str, Any]]] = {}


def merge_files(inputs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                all_windows: bool = False, specs: Any = None) -> Merged:
    """``ldp merge``: merge aggregate files (or folders of them) from many jobs or machines.

    Files with the same name (``metric.fingerprint[.wWINDOW].agg``) are merged: lossless, one window stays one
    window. ``output`` is a folder for the merged files, or one ``.agg`` file when everything merges into one.
    Exact: integer sums, the same bytes in any order or grouping. Returns name -> path (:class:`Merged`).

    ``all_windows`` merges each metric's windows into one aggregate (its name without a window) and needs
    ``specs`` (a spec, a path, several, or ``{fingerprint: spec}``: every version deployed), whose release thresholds
    judge each window (:func:`ldp.jobs.release.pool_windows`): a window of fewer than the metric's ``min_reports``
    reports (its files summed over the inputs) is left out of the file, and named in :attr:`Merged.left_out`.

    Why leave out rather than merge everything and mark the file: the merged file is a pooled view that anyone given
    it may decode, and its bytes (docs/wire-format.md) carry no per-window counts, so no decoder could apply the
    rule per window afterwards; had a withheld window gone in, the merged file's estimate minus a released window's
    would be that window's. A lossless merge across windows would be the window files themselves. The data owner who
    wants every window pooled decodes the job with ``ldp decode JOB --window all --no-release`` (nothing written)."""
    if all_windows and specs is None:
        raise ValueError("--all-windows needs --spec: the release thresholds decide which windows may be merged "
                         "(a window under min_reports is left out)")
    files = [f for item in inputs for f in aggregate_files_in(item)]
    if not files:
        raise ValueError("nothing to merge: no .agg files among the inputs")
    merged: dict[str, Aggregate] = {}
    for f in files:
        name = f.name[:-len(AGG_SUFFIX)] if f.name.endswith(AGG_SUFFIX) else f.name
        if all_windows:
            try:
                parse_key_name(name)
            except ValueError:
                raise ValueError(f"{f}: --all-windows needs files named metric.fingerprint.wWINDOW.agg") from None
        agg = read_aggregate(f)
        if name in merged:
            try:
                merged[name].merge(agg)
            except ValueError as exc:
                raise ValueError(f"{f}: {exc}") from None
        else:
            merged[name] = agg
    out_map = Merged()
    if all_windows:
        merged = _pool_windows(merged, spec_index(specs), out_map)
    logger.info("merge: %d file(s) into %d aggregate(s)", len(files), len(merged))
    out = Path(output)
    if out.suffix == AGG_SUFFIX and not out.is_dir():
        if len(merged) > 1:
            raise ValueError(f"the inputs hold {len(merged)} different aggregates ({', '.join(sorted(merged))}); "
                             "give a folder as the output")
        if not merged:
            name, left = next(iter(out_map.left_out.items()))
            raise ValueError(f"nothing to write: every window of {name} is left out (" + "; ".join(
                f"window {e['window']}: {e['reason']}" for e in left) + ")")
        write_aggregate(out, next(iter(merged.values())))
        out_map[next(iter(merged))] = out
        return out_map
    for name, agg in sorted(merged.items()):
        out_map[name] = out / f"{name}{AGG_SUFFIX}"
        write_aggregate(out_map[name], agg)
    return out_map


def _pool_windows(merged: Mapping[str, Aggregate], specs: Mapping[str, CollectionSpec], out: Merged
                  ) -> dict[str, Aggregate]:
    """``merged`` (one aggregate per window, by name) pooled per metric and parameters over the windows its release
    thresholds let out; the windows pooled and left out recorded in ``out``."""
    groups: dict[tuple[str, str], dict[int | None, Aggregate]] = {}
    for name, agg in merged.items():
        metric, fp, window = parse_key_name(name)
        groups.setdefault((metric, fp), {})[window] = agg
    pooled: dict[str, Aggregate] = {}
    for (metric, fp), windows in sorted(groups.items()):
        name = key_name((metric, fp, None))
        pooling = pool_windows({w: a.n for w, a in windows.items()}, metric_policy(specs, metric, fp))
        out.pooled[name], out.left_out[name] = list(pooling.pooled), [dict(e) for e in pooling.left_out]
        if pooling.pooled:
            pooled[name] = merge_all(windows[w] for w in pooling.pooled)
    return pooled


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
