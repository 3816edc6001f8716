"""The offline jobs: read upload envelopes at scale, validate, fold, merge, decode.

* :func:`fold_files` (``ldp fold``): JSONL, CSV, Parquet or binary inputs, streamed in
  chunks, validated against the collection spec(s), folded into one aggregate per metric (and
  window), every rejected record written with its reason; idempotent and resumable (a manifest
  of inputs and their SHA-256); ``engine="dask"`` runs past one machine.
* :func:`read_batches`: any input as one iterator of batches (:mod:`ldp.jobs.batches`), which a
  :class:`Folder` consumes; :func:`read_input` folds a file into a folder in one call.
* :func:`merge_files` (``ldp merge``) and :func:`decode_file` (``ldp decode``).
* :func:`fold_bag` / :func:`fold_dataframe`: the same on Dask collections (Dask is
  imported only when they are called).
* writers for every format, for simulations and tests.

See ``docs/jobs.md`` for the formats byte for byte and the guarantees.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from typing import TYPE_CHECKING

from ldp._moved import renamed_attributes
from ldp.lazy import lazy_exports

_EXPORTS = {
    "ldp.cli.jobs": ("JOB_COMMANDS", "add_job_arguments", "job_command"),
    "ldp.jobs.batches": ("Batch", "ColumnBatch", "ReadOptions"),
    "ldp.jobs.dask_engine": ("DaskResult", "fold_bag", "fold_dataframe"),
    "ldp.jobs.decode": ("decode_aggregate", "decode_file", "find_metric", "load_candidates", "write_estimates"),
    "ldp.jobs.fold": ("Folder", "Key", "key_name", "parse_key_name"),
    "ldp.jobs.formats": ("FORMATS", "Section", "detect_format", "sections_from_envelopes", "write_binary",
                           "write_csv", "write_jsonl", "write_parquet"),
    "ldp.jobs.job": ("InputChangedError", "JobError", "JobSummary", "fold_files", "fold_input", "spec_index"),
    "ldp.jobs.readers": ("InputError", "read_batches", "read_input"),
    "ldp.jobs.store": ("merge_files", "read_aggregate", "write_aggregate"),
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
_lazy, __dir__ = lazy_exports(__name__, _EXPORTS, globals())  # so that ``import ldp.jobs`` stays light
__getattr__ = renamed_attributes(__name__, {  # issue 83: the job folds; "aggregate" is what it makes
    "aggregate_files": "fold_files", "aggregate_bag": "fold_bag", "aggregate_dataframe": "fold_dataframe",
    "SERVER_COMMANDS": "JOB_COMMANDS", "add_server_arguments": "add_job_arguments", "server_command": "job_command"},
    _lazy)

if TYPE_CHECKING:  # the lazy names, for type checkers and linters (`X as X`: re-exported)
    from ldp.cli.jobs import (
        JOB_COMMANDS as JOB_COMMANDS,
        add_job_arguments as add_job_arguments,
        job_command as job_command,
    )
    from ldp.jobs.batches import Batch as Batch, ColumnBatch as ColumnBatch, ReadOptions as ReadOptions
    from ldp.jobs.dask_engine import (
        DaskResult as DaskResult,
        fold_bag as fold_bag,
        fold_dataframe as fold_dataframe,
    )
    from ldp.jobs.decode import (
        decode_aggregate as decode_aggregate,
        decode_file as decode_file,
        find_metric as find_metric,
        load_candidates as load_candidates,
        write_estimates as write_estimates,
    )
    from ldp.jobs.fold import Folder as Folder, Key as Key, key_name as key_name, parse_key_name as parse_key_name
    from ldp.jobs.formats import (
        FORMATS as FORMATS,
        Section as Section,
        detect_format as detect_format,
        sections_from_envelopes as sections_from_envelopes,
        write_binary as write_binary,
        write_csv as write_csv,
        write_jsonl as write_jsonl,
        write_parquet as write_parquet,
    )
    from ldp.jobs.job import (
        InputChangedError as InputChangedError,
        JobError as JobError,
        JobSummary as JobSummary,
        fold_files as fold_files,
        fold_input as fold_input,
        spec_index as spec_index,
    )
    from ldp.jobs.readers import InputError as InputError, read_batches as read_batches, read_input as read_input
    from ldp.jobs.store import (
        merge_files as merge_files,
        read_aggregate as read_aggregate,
        write_aggregate as write_aggregate,
    )
