"""``ldp fold``: fold input files into one aggregate per metric, idempotently and resumably.

The output folder holds ``manifest.json`` (see :mod:`ldp.jobs.manifest`), ``parts/`` (each
input's partial aggregates), ``rejects/`` (each input's rejects), and the results:
``aggregates/<metric>.<fingerprint>[.w<window>].agg``, ``rejects.jsonl`` (all rejects) and
``summary.json``. Guarantees:

* every record of every input is aggregated or rejected (with its reason, in the rejects files);
* an input is committed at once (its part and rejects files, then its manifest line), so a run
  killed at any point resumes where it stopped, and re-running skips inputs whose path and SHA-256
  are in the manifest: nothing is counted twice;
* the results are the merge of the committed parts (integer sums): the same bytes whatever the
  order, the grouping into runs, or the engine.

This module runs the job: it folds each planned input (:func:`fold_input`, locally or on Dask), commits it, and
merges the committed parts into the results (:class:`JobSummary`). Which inputs are folded, skipped, renamed or
duplicates is decided by :mod:`ldp.jobs.inputs`.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ldp._moved import renamed_attributes
from ldp.errors import InputChangedError, JobError
from ldp.jobs.fold import Folder, key_name, spec_index
from ldp.jobs.formats import FORMATS
from ldp.jobs.inputs import (
    DUPLICATES,
    ON_CHANGE,
    InputRef,
    InputStores,
    InputTask,
    expand_inputs,
    input_exists,
    input_key,
    input_stat,
    is_remote,
    plan_inputs,
    sha256_file,
    shared_stores,
)
from ldp.jobs.manifest import Manifest
from ldp.jobs.readers import CHUNK_BYTES, read_batches
from ldp.jobs.store import AGG_SUFFIX, merge_into, pack_parts, unpack_parts, write_aggregate, write_atomic
from ldp.spec import CollectionSpec
from ldp.storage.roles import Role

__all__ = ["fold_files", "fold_input", "expand_inputs", "spec_index", "JobSummary", "InputChangedError",
           "JobError"]

logger = logging.getLogger(__name__)

_hook: Callable[[str, dict[str, Any]], None] | None = None
"""Tests only: called at "part_written" (before an input's manifest line) and "input_done"."""


def fold_input(path: str, fmt: str, spec_docs: list[dict[str, Any]], by_window: bool, source: str,
               rejects_path: str | None = None, chunk_bytes: int = CHUNK_BYTES, fast: bool = True,
               progress: Callable[[int], None] | None = None,
               known: tuple[int, int, str] | None = None,
               parquet_unverified: bool = False,
               storage_options: dict[str, Any] | None = None,
               stores: InputStores | None = None) -> tuple[bytes, dict[str, Any], bytes | None]:
    """Fold one input file: ``(partial aggregates blob, stats, rejects bytes)``. Rejects go to
    ``rejects_path`` when given (then ``None`` is returned for them). Stats include the size and
    SHA-256 read before folding (``known``: (size, mtime_ns, SHA-256) hashed by the caller, used
    when the file still has that size and mtime); ``InputChangedError`` if the file changed
    meanwhile. Runs anywhere (a Dask worker): it takes spec documents, not spec objects. ``path`` may be
    an object-storage URL, read through ``stores`` (the job's :class:`~ldp.jobs.inputs.InputStores`; by default
    this process's stores of ``storage_options``): its copy, fetched and hashed in one pass
    (:meth:`InputStores.fetched <ldp.jobs.inputs.InputStores.fetched>`), is folded, the stats naming the
    object's size, time and ETag."""
    if is_remote(path):
        with (stores or shared_stores(storage_options)).fetched(path) as (local, version, digest):
            st = local.stat()
            blob, stats, rejects = fold_input(os.fspath(local), fmt, spec_docs, by_window, source, rejects_path,
                                              chunk_bytes, fast, progress, (st.st_size, st.st_mtime_ns, digest),
                                              parquet_unverified)
        return blob, {**stats, "size": version.size, "mtime_ns": version.mtime_ns, "etag": version.etag}, rejects
    specs = spec_index([CollectionSpec.from_dict(d) for d in spec_docs])
    before = os.stat(path)
    same = known is not None and (before.st_size, before.st_mtime_ns) == known[:2]
    digest = known[2] if same else sha256_file(path)  # type: ignore[index]
    out = open(rejects_path, "w", encoding="ascii") if rejects_path else io.StringIO()
    t0 = time.perf_counter()
    try:
        folder = Folder(specs, by_window=by_window, source=source, rejects=out, fast=fast)
        folder.consume(read_batches(path, fmt, folder.options, chunk_bytes=chunk_bytes, progress=progress,
                                    parquet_unverified=parquet_unverified))
        folder.close()
    finally:
        if rejects_path:
            out.close()
    after = os.stat(path)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise InputChangedError(f"{source} changed while it was read; run the job again")
    stats = {"size": before.st_size, "mtime_ns": before.st_mtime_ns, "sha256": digest, **folder.stats(),
             "n_by_key": dict(sorted((key_name(k), a.n) for k, a in folder.aggregates.items())),
             "seconds": round(time.perf_counter() - t0, 6)}
    rejects = None if rejects_path else out.getvalue().encode("ascii")  # type: ignore[union-attr]
    return pack_parts(folder.aggregates), stats, rejects


@dataclass
class JobSummary:
    """What a run did (``run``) and what the output folder now holds (the totals)."""

    out_dir: Path
    inputs: int
    processed: list[str]
    skipped: list[str]
    records: int
    accepted: int
    rejected: dict[str, int]
    blank: int
    run: dict[str, Any]
    aggregates: dict[str, dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    renamed: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    vanished: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out_dir"] = str(self.out_dir)
        return d

    def text(self) -> str:
        """The end-of-run summary: inputs, reports read / aggregated / rejected by reason, time."""
        r = self.run
        rate = f" ({r['records'] / r['seconds']:,.0f} reports/s)" if r["seconds"] > 0 and r["records"] else ""
        rej = sum(self.rejected.values())
        reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(self.rejected.items(), key=lambda kv: -kv[1]))
        lines = [f"inputs: {self.inputs} ({len(self.processed)} folded now, {len(self.skipped)} already done)",
                 f"reports read: {self.records:,}; aggregated: {self.accepted:,}; rejected: {rej:,}"
                 + (f" ({reasons})" if reasons else "") + (f"; blank lines: {self.blank:,}" if self.blank else ""),
                 f"this run: {r['records']:,} reports in {r['seconds']:.2f} s{rate}",
                 f"aggregates in {self.out_dir / 'aggregates'}:"]
        lines += [f"  {name}{AGG_SUFFIX}  {a['protocol']}  n={a['n']:,}" + (f"  rejected={a['rejected']:,}"
                                                                          if a["rejected"] else "")
                  for name, a in self.aggregates.items()]
        if rej:
            lines.append(f"rejects (with reasons): {self.out_dir / 'rejects.jsonl'}")
        lines += [f"note: {r['from']} was renamed to {r['to']} (already counted)" for r in self.renamed]
        lines += [f"warning: {d['path']} has the same content as {d['same_as']}, already counted: not counted again"
                  for d in self.duplicates]
        lines += [f"note: {v['source']} is gone from disk; its {v['records']:,} reports stay counted"
                  for v in self.vanished]
        return "\n".join(lines + [f"warning: {w}" for w in self.warnings])



def fold_files(inputs: Sequence[str | os.PathLike[str]], specs: Any, out_dir: str | os.PathLike[str], *,
                    by_window: bool = False, fmt: str | None = None, on_change: str = "error",
                    chunk_bytes: int = CHUNK_BYTES, engine: str = "local", scheduler: Any = None,
                    progress: bool | None = None, fast: bool = True, duplicates: str = "once",
                    parquet_unverified: bool = False, storage_options: dict[str, Any] | None = None,
                    scopes: Mapping[str, Role] | None = None) -> JobSummary:
    """Fold ``inputs`` (files or folders) into ``out_dir``, validated against ``specs`` (a spec,
    a path, or every deployed version). ``on_change``: what to do with an input whose path is in
    the manifest but whose content changed: ``"error"`` (default) or ``"reprocess"`` (its old
    part is replaced). Inputs are identified by content (SHA-256): a folded input found under a new
    path while its old path is gone (or holds other content) is a rename, skipped and noted; a new
    input with the content of another input, folded or in this run, is a duplicate: ``duplicates``
    ``"once"`` (default) skips it with a warning, ``"count"`` folds it again. Folded inputs gone
    from disk stay counted and are listed (``vanished``). ``parquet_unverified``: fold Parquet files
    without page checksums, which cannot be checked for damage (refused by default).
    ``engine="dask"`` folds the inputs on a Dask cluster (``scheduler``: an address or a
    ``distributed.Client``; ``None`` starts a local one). Inputs may be object-storage URLs
    (``s3://bucket/prefix``: the objects under it), read through stores opened once with ``storage_options``
    (:class:`ldp.jobs.inputs.InputStores`); ``scopes`` (``{root URL: role}``, the local engine only) reads the
    inputs under a root as that role may (:class:`~ldp.storage.roles.RoleStore`)."""
    _check_options(engine, fmt, on_change, duplicates, scopes)
    index = spec_index(specs)
    t0 = time.perf_counter()
    warnings: list[str] = []
    own = os.path.realpath(out_dir) + os.sep
    stores = InputStores(storage_options, scopes)  # each object store opened once, for the whole job
    files = [f for f in expand_inputs(inputs, warnings, stores)
             if not input_key(f).startswith(own)]  # not our output
    manifest = Manifest(out_dir, list(index), by_window)
    try:
        if not manifest.path.exists():
            manifest.save()
        plan = plan_inputs(files, manifest, fmt, on_change, duplicates, stores)
        tasks = plan.tasks
        logger.info("fold: %d input(s) given: %d to fold, %d skipped (already folded or renamed), "
                    "%d duplicate(s) not folded", len(files), len(tasks), len(plan.skipped), len(plan.duplicates))
        docs = [s.to_dict() for s in index.values()]
        run = _commit_all(manifest, _run(tasks, docs, by_window, chunk_bytes, fast, manifest.dir, engine, scheduler,
                                         progress, parquet_unverified, stores))
        summary = _finish(manifest, [t.source for t in tasks], plan.skipped, warnings)
        summary.renamed, summary.duplicates = plan.renamed, plan.duplicates
        summary.vanished = _vanished(manifest, files, stores)
        summary.run = {**run, "seconds": round(time.perf_counter() - t0, 6)}
        _log_summary(summary)
        write_atomic(manifest.dir / "summary.json", (_json(summary.to_dict()) + "\n").encode())
        return summary
    finally:
        manifest.close()


def _check_options(engine: str, fmt: str | None, on_change: str, duplicates: str,
                   scopes: Mapping[str, Role] | None) -> None:
    """``ValueError`` for an option :func:`fold_files` does not know, or scopes on another engine than the local
    one (they are enforced by this process's reads)."""
    if scopes and engine != "local":
        raise ValueError("scopes are enforced by this process's reads: aggregate with engine='local'")
    if on_change not in ON_CHANGE:
        raise ValueError(f"on_change must be one of {ON_CHANGE}, got {on_change!r}")
    if duplicates not in DUPLICATES:
        raise ValueError(f"duplicates must be one of {DUPLICATES}, got {duplicates!r}")
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def _commit_all(manifest: Manifest, results: Iterator[tuple[InputTask, Any]]) -> dict[str, int]:
    """Commit each input as its fold finishes (:func:`_commit`); this run's reports read, accepted and bytes."""
    run = {"records": 0, "accepted": 0, "bytes": 0}
    for task, (blob, stats, rejects) in results:
        _commit(manifest, task, blob, stats, rejects)
        logger.debug("folded %s (%s): %d reports, %d accepted, %d rejected in %.3f s", task.source, task.fmt,
                     stats["records"], stats["accepted"], sum(stats["rejected"].values()), stats["seconds"])
        run["records"] += stats["records"]
        run["accepted"] += stats["accepted"]
        run["bytes"] += stats["size"]
    return run


def _vanished(manifest: Manifest, files: list[InputRef], stores: InputStores) -> list[dict[str, Any]]:
    """The inputs folded in earlier runs that are neither given now nor on disk any more (they stay counted)."""
    given = {input_key(f) for f in files}
    return [{"path": path, "source": e["source"], "sha256": e["sha256"], "records": e["records"]}
            for path, e in sorted(manifest.entries.items()) if path not in given and not input_exists(path, stores)]


def _log_summary(summary: JobSummary) -> None:
    """The run at INFO: inputs processed, skipped, reports rejected (its notes and warnings too: they
    are also in the summary returned, which the command prints)."""
    run = summary.run
    logger.info("fold: %d input(s) processed, %d skipped; %d reports read, %d accepted, %d rejected in %.2f s",
                len(summary.processed), len(summary.skipped), run["records"], run["accepted"],
                run["records"] - run["accepted"], run["seconds"])
    if summary.rejected:
        logger.info("fold: in total %d rejected: %s", sum(summary.rejected.values()),
                    ", ".join(f"{reason} {n}" for reason, n in summary.rejected.items()))
    for line in summary.text().splitlines():
        if line.startswith(("note:", "warning:")):
            logger.info("fold: %s", line)


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, indent=1)



def _run(tasks: list[InputTask], docs: list[dict[str, Any]], by_window: bool, chunk_bytes: int, fast: bool,
         out: Path, engine: str, scheduler: Any, progress: bool | None, parquet_unverified: bool,
         stores: InputStores) -> Iterator[tuple[InputTask, Any]]:
    if engine == "dask":
        from ldp.jobs.dask_engine import fold_inputs_on_dask

        yield from fold_inputs_on_dask(tasks, docs, by_window, chunk_bytes, fast, scheduler, parquet_unverified,
                                       fold_input=fold_input, storage_options=stores.options or None)
        return
    if engine != "local":
        raise ValueError(f"engine must be 'local' or 'dask', got {engine!r}")
    bar = _progress_bar(sum(input_stat(t.path, stores)[0] for t in tasks), progress)
    try:
        for t in tasks:
            tmp = out / "rejects" / f".{_input_id(t.path)}.jsonl.tmp"
            tmp.parent.mkdir(parents=True, exist_ok=True)
            yield t, (*fold_input(os.fspath(t.path), t.fmt, docs, by_window, t.source, os.fspath(tmp), chunk_bytes,
                                  fast, bar.update if bar else None, t.known, parquet_unverified,
                                  stores=stores)[:2], tmp)
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(total: int, enabled: bool | None) -> Any:
    """A tqdm bar over input bytes (:func:`ldp.display.progress.progress`: when wanted, by default when stderr
    is a terminal, and tqdm is installed), else ``None``."""
    from ldp.display.progress import NoProgress, progress

    bar = progress(total, "aggregate", enabled, unit="B", unit_scale=True, leave=True)
    return None if isinstance(bar, NoProgress) else bar


def _input_id(path: InputRef) -> str:
    return hashlib.sha256(input_key(path).encode()).hexdigest()[:16]


def _commit(manifest: Manifest, task: InputTask, blob: bytes, stats: dict[str, Any], rejects: Any) -> None:
    """Put an input's part and rejects files in place, then append its manifest line."""
    name = f"{_input_id(task.path)}-{stats['sha256'][:16]}"
    part, rej = f"parts/{name}.ldps", f"rejects/{name}.jsonl"
    write_atomic(manifest.dir / part, blob)
    if isinstance(rejects, Path):
        os.replace(rejects, manifest.dir / rej)
    else:
        write_atomic(manifest.dir / rej, rejects or b"")
    entry = {"path": input_key(task.path), "source": task.source, "format": task.fmt, **stats,
             "part": part, "rejects": rej}
    if _hook is not None:
        _hook("part_written", entry)
    manifest.commit(entry)
    if task.old is not None:
        for key in ("part", "rejects"):
            if task.old[key] != entry[key]:
                (manifest.dir / task.old[key]).unlink(missing_ok=True)
    if _hook is not None:
        _hook("input_done", entry)


def _finish(manifest: Manifest, processed: list[str], skipped: list[str], warnings: list[str]) -> JobSummary:
    """Merge every committed part into ``aggregates/``, gather the rejects, fold the journal in."""
    merged: dict[Any, Any] = {}
    totals: dict[str, Any] = {"records": 0, "accepted": 0, "blank": 0, "rejected": {}}
    digests: dict[str, str] = {}
    for e in manifest.entries.values():
        merge_into(merged, unpack_parts((manifest.dir / e["part"]).read_bytes(), e["part"]))
        for k in ("records", "accepted", "blank"):
            totals[k] += e[k]
        for reason, n in e["rejected"].items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + n
        if e["sha256"] in digests:
            warnings.append(f"{e['source']} has the same content as {digests[e['sha256']]} (both are counted)")
        digests[e["sha256"]] = e["source"]
    agg_dir = manifest.dir / "aggregates"
    agg_dir.mkdir(exist_ok=True)
    names = {}
    for key, agg in sorted(merged.items(), key=lambda kv: key_name(kv[0])):
        name = key_name(key)
        write_aggregate(agg_dir / f"{name}{AGG_SUFFIX}", agg)
        names[name] = {"metric": key[0], "protocol": agg.params.protocol, "params": key[1], "window": key[2],
                       "n": agg.n, "rejected": sum(agg.rejected.values())}
    for stale in agg_dir.glob(f"*{AGG_SUFFIX}"):
        if stale.name[:-len(AGG_SUFFIX)] not in names:
            stale.unlink()
    _gather_rejects(manifest)
    manifest.save()
    keep = {manifest.dir / e[k] for e in manifest.entries.values() for k in ("part", "rejects")}
    for sub in ("parts", "rejects"):
        for f in (manifest.dir / sub).glob("*") if (manifest.dir / sub).is_dir() else ():
            if f not in keep:
                f.unlink()
    totals["rejected"] = dict(sorted(totals["rejected"].items()))
    return JobSummary(manifest.dir, len(manifest.entries), processed, skipped, totals["records"], totals["accepted"],
                      totals["rejected"], totals["blank"], {}, names, warnings)


def _gather_rejects(manifest: Manifest) -> None:
    tmp = manifest.dir / ".rejects.jsonl.tmp"
    with open(tmp, "wb") as out:
        for e in sorted(manifest.entries.values(), key=lambda e: e["path"]):
            with open(manifest.dir / e["rejects"], "rb") as fh:
                shutil.copyfileobj(fh, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, manifest.dir / "rejects.jsonl")


# issue 83's renames, the old names kept for one more release
__getattr__ = renamed_attributes(__name__, {"aggregate_files": "fold_files"})
