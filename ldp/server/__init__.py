"""Server aggregation jobs: read upload envelopes at scale, validate, fold, merge, decode.

* :func:`aggregate_files` (``ldp aggregate``): JSONL, CSV, Parquet or binary inputs, streamed in
  chunks, validated against the collection spec(s), folded into one aggregate per metric (and
  window), every rejected record written with its reason; idempotent and resumable (a manifest
  of inputs and their SHA-256); ``engine="dask"`` runs past one machine.
* :func:`read_batches`: any input as one iterator of batches (:mod:`ldp.server.batches`), which a
  :class:`Folder` consumes; :func:`read_input` folds a file into a folder in one call.
* :func:`merge_files` (``ldp merge``) and :func:`decode_file` (``ldp decode``).
* :func:`aggregate_bag` / :func:`aggregate_dataframe`: the same on Dask collections (Dask is
  imported only when they are called).
* writers for every format, for simulations and tests.

See ``docs/server.md`` for the formats byte for byte and the guarantees.
"""

from __future__ import annotations

import ldp._server  # noqa: F401  (first: names the 'server' extra if it is missing)

# isort: split

from typing import TYPE_CHECKING

from ldp.lazy import lazy_exports

_EXPORTS = {
    "ldp.cli.server": ("SERVER_COMMANDS", "add_server_arguments", "server_command"),
    "ldp.server.batches": ("Batch", "ColumnBatch", "ReadOptions"),
    "ldp.server.dask_engine": ("DaskResult", "aggregate_bag", "aggregate_dataframe"),
    "ldp.server.decode": ("decode_aggregate", "decode_file", "find_metric", "load_candidates", "write_estimates"),
    "ldp.server.fold": ("Folder", "Key", "key_name", "parse_key_name"),
    "ldp.server.formats": ("FORMATS", "Section", "detect_format", "sections_from_envelopes", "write_binary",
                           "write_csv", "write_jsonl", "write_parquet"),
    "ldp.server.job": ("InputChangedError", "JobError", "JobSummary", "aggregate_files", "fold_input", "spec_index"),
    "ldp.server.readers": ("InputError", "read_batches", "read_input"),
    "ldp.server.store": ("merge_files", "read_aggregate", "write_aggregate"),
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())  # so that ``import ldp.server`` stays light

if TYPE_CHECKING:  # the lazy names, for type checkers and linters (`X as X`: re-exported)
    from ldp.cli.server import (
        SERVER_COMMANDS as SERVER_COMMANDS,
        add_server_arguments as add_server_arguments,
        server_command as server_command,
    )
    from ldp.server.batches import Batch as Batch, ColumnBatch as ColumnBatch, ReadOptions as ReadOptions
    from ldp.server.dask_engine import (
        DaskResult as DaskResult,
        aggregate_bag as aggregate_bag,
        aggregate_dataframe as aggregate_dataframe,
    )
    from ldp.server.decode import (
        decode_aggregate as decode_aggregate,
        decode_file as decode_file,
        find_metric as find_metric,
        load_candidates as load_candidates,
        write_estimates as write_estimates,
    )
    from ldp.server.fold import Folder as Folder, Key as Key, key_name as key_name, parse_key_name as parse_key_name
    from ldp.server.formats import (
        FORMATS as FORMATS,
        Section as Section,
        detect_format as detect_format,
        sections_from_envelopes as sections_from_envelopes,
        write_binary as write_binary,
        write_csv as write_csv,
        write_jsonl as write_jsonl,
        write_parquet as write_parquet,
    )
    from ldp.server.job import (
        InputChangedError as InputChangedError,
        JobError as JobError,
        JobSummary as JobSummary,
        aggregate_files as aggregate_files,
        fold_input as fold_input,
        spec_index as spec_index,
    )
    from ldp.server.readers import InputError as InputError, read_batches as read_batches, read_input as read_input
    from ldp.server.store import (
        merge_files as merge_files,
        read_aggregate as read_aggregate,
        write_aggregate as write_aggregate,
    )
