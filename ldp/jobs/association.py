"""Association pairs from deployed data: the two row-aligned column sets :func:`~ldp.decoders.association.associate`
takes, read from report files with the parser of ``ldp fold`` (:class:`~ldp.jobs.fold.Folder`).

* :func:`multi_pairs`: two attributes of a **split** ``multi`` metric. One envelope carries every attribute of
  one user, so the server pairs them without linking envelopes (which carry no client identifier, by
  design). The pair costs what the report costs: the sum of its components' ε (sequential composition,
  already charged by the client's ledger for the one report). A **sample**-mode report carries one attribute:
  nothing to pair, refused. (A metric's attributes are what its params' ``attribute_parts`` give, and
  ``check_parts_together`` says whether one report carries them all.)
* :func:`aligned_pairs`: two files of two metrics whose row ``i`` is client ``i``'s (research and simulation:
  :func:`~ldp.batch.association.simulate_pairs` written with :mod:`ldp.jobs.formats`). A row rejected in
  either file drops that client; files of different lengths are refused. The pair costs the sum of the two
  reports' costs (:func:`~ldp.decoders.association.pair_cost`).

Rejected reports are counted by reason exactly as ``ldp fold`` counts them; valid reports of other
metrics are counted and skipped.
"""

from __future__ import annotations

import io
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.association import Association, Variable, associate, joint_protocols, pair_cost
from ldp.decoders.base import Aggregate
from ldp.encoders.base import ProtocolParams
from ldp.jobs.fold import Folder, Key
from ldp.privacy.accountant import PrivacyCost
from ldp.reports import ReportBatch
from ldp.spec import CollectionSpec, MetricSpec

__all__ = ["Pairs", "multi_pairs", "aligned_pairs"]

Int = npt.NDArray[np.int64]
Columns = dict[str, npt.NDArray[Any]]


def __getattr__(name: str) -> Any:
    """``PAIRABLE_COMPONENTS`` (deprecated, kept for one release): the ``multi`` component protocols association
    analysis supports (those of :func:`~ldp.decoders.association.joint_protocols`), computed on first use."""
    if name == "PAIRABLE_COMPONENTS":
        from ldp.encoders.multi import COMPONENT_PROTOCOLS

        return tuple(p for p in COMPONENT_PROTOCOLS if p in joint_protocols())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Pairs:
    """Two variables' row-aligned report columns (row ``i`` of each: one client) and what reading them found."""

    a: Variable
    b: Variable
    names: tuple[str, str]
    columns_a: Columns
    columns_b: Columns
    records: int  # records read (all inputs; both files for aligned pairs)
    rejected: Counter[str]  # records rejected, by reason (as ldp fold)
    other_metrics: int  # valid reports of other metrics, skipped
    unpaired: int  # valid reports whose partner row was rejected (aligned pairs)
    privacy_cost: PrivacyCost  # per client, for its pair
    cost_note: str

    @property
    def n(self) -> int:
        """The number of pairs (clients)."""
        return len(next(iter(self.columns_a.values())))

    def associate(self, **options: Any) -> Association:
        """:func:`~ldp.decoders.association.associate` on these pairs, with this pair's privacy cost."""
        res = associate(self.a, self.b, self.columns_a, self.columns_b, **options)
        return replace(res, privacy_cost=self.privacy_cost)


# -- reading: the aggregate job's folder, keeping the rows of the wanted metrics -----------------------------
class _Chunk:
    """Validated columns of one fold, and their record numbers (``None``: in record order, resolved later)."""

    def __init__(self, columns: Columns) -> None:
        self.columns = columns
        self.records: Int | None = None


class _Keep(Aggregate):
    """Mixed in before an aggregate type: validation as that type's, but the valid columns are kept."""

    sink: list[_Chunk]

    def _fold(self, columns: dict[str, np.ndarray]) -> None:
        self.sink.append(_Chunk({k: np.asarray(v) for k, v in columns.items()}))


@cache
def _keeper_type(base: type[Aggregate]) -> type[_Keep]:
    return type(f"Kept{base.__name__}", (_Keep, base), {})


class _Discard(io.StringIO):
    """A rejects stream that keeps nothing (the folder then logs every rejected record number)."""

    def write(self, text: str) -> int:
        return len(text)


class _PairFolder(Folder):
    """A :class:`Folder` that keeps the valid rows of the metrics ``wanted`` with their record numbers, and
    notes every rejected record number."""

    def __init__(self, specs: dict[str, CollectionSpec], wanted: set[str], source: str) -> None:
        super().__init__(specs, source=source, rejects=_Discard(), cap=sys.maxsize)
        self.wanted = wanted
        self.bad: list[Int] = []
        self._batch: Int | None = None

    def aggregate(self, metric: MetricSpec, window: int) -> Aggregate:
        if metric.name not in self.wanted:
            return super().aggregate(metric, window)
        key = (metric.name, metric.params_fingerprint, None)
        agg = self.aggregates.get(key)
        if agg is None:
            from ldp.protocols import get_protocol

            base = get_protocol(metric.protocol).aggregate_type
            if base is None:
                raise ValueError(f"protocol {metric.protocol!r} has no server aggregate")
            keep = _keeper_type(base)(metric.params)
            keep.sink = []
            agg = self.aggregates[key] = keep
        return agg

    def log(self, record: int, reason: str, detail: str, raw: Any, records: int = 1, offset: int | None = None) -> None:
        super().log(record, reason, detail, raw, records, offset)
        whole = records > 1 and self._batch is not None and len(self._batch) == records  # a whole batch rejected
        self.bad.append(self._batch if whole and self._batch is not None else
                        np.arange(record, record + records, dtype=np.int64))

    def fold_batch(self, metric: MetricSpec, window: int, batch: ReportBatch, records: np.ndarray | int,
                   raw_of: Callable[[int], Any], offset: int | None = None) -> None:
        rec = (np.arange(records, records + batch.n, dtype=np.int64) if isinstance(records, int)
               else np.asarray(records, dtype=np.int64))
        agg, seen = self.aggregate(metric, window), len(self.bad)
        before = len(agg.sink) if isinstance(agg, _Keep) else 0
        self._batch = rec
        try:
            super().fold_batch(metric, window, batch, records, raw_of, offset)
        finally:
            self._batch = None
        if isinstance(agg, _Keep) and len(agg.sink) > before:
            gone = np.concatenate(self.bad[seen:]) if len(self.bad) > seen else np.empty(0, np.int64)
            agg.sink[-1].records = rec[~np.isin(rec, gone)]

    def kept(self) -> dict[Key, _Keep]:
        return {k: a for k, a in self.aggregates.items() if isinstance(a, _Keep) and a.n}


def _read(specs: dict[str, CollectionSpec], wanted: set[str], path: str | os.PathLike[str],
          fmt: str | None) -> _PairFolder:
    from ldp.jobs.readers import read_batches

    folder = _PairFolder(specs, wanted, os.fspath(path))
    folder.consume(read_batches(path, fmt, folder.options))
    folder.close()
    return folder


def _columns(chunks: list[_Chunk]) -> Columns:
    return {k: np.concatenate([c.columns[k] for c in chunks]) for k in chunks[0].columns}


def _ordered(folder: _PairFolder, keep: _Keep, source: str) -> tuple[Columns, Int]:
    """The kept columns in record order and each row's record number. Rows folded one by one (not by the
    vectorized path) come in record order: theirs are the record numbers neither folded by batch nor rejected."""
    chunks = keep.sink
    if folder.blank:
        raise ValueError(f"{source}: {folder.blank} blank line(s): in a row-aligned file row i is client i, and a "
                         "blank line would shift the clients after it")
    known = [c.records for c in chunks if c.records is not None]
    taken = np.concatenate(known + folder.bad) if known or folder.bad else np.empty(0, np.int64)
    rest = np.setdiff1d(np.arange(1, folder.records + 1, dtype=np.int64), taken)
    pos = 0
    parts = []
    for c in chunks:
        size = len(next(iter(c.columns.values())))
        if c.records is None:
            parts.append(rest[pos:pos + size])
            pos += size
        else:
            parts.append(c.records)
    records = np.concatenate(parts)
    order = np.argsort(records, kind="stable")
    return {k: v[order] for k, v in _columns(chunks).items()}, records[order]


# -- split multi metrics ----------------------------------------------------------------------------------
def _metric_versions(specs: dict[str, CollectionSpec], metric: str) -> list[MetricSpec]:
    found = [s.metrics[metric] for s in specs.values() if metric in s.metrics]
    if not found:
        names = sorted({m for s in specs.values() for m in s.metrics})
        raise ValueError(f"no metric {metric!r} in the spec(s) given (metrics: {', '.join(names)})")
    return found


def _check_multi(m: MetricSpec, attributes: tuple[str, str]) -> None:
    parts = m.params.attribute_parts
    if not parts:
        raise ValueError(f"metric {m.name!r} is {m.protocol}, not a multi metric: to pair two metrics from "
                         "row-aligned files use --pair METRIC_A METRIC_B")
    try:
        m.params.check_parts_together()
    except ValueError as err:
        raise ValueError(f"metric {m.name!r} is {err}") from None
    a, b = attributes
    if a == b:
        raise ValueError(f"give two different attributes, got {a!r} twice")
    for name in attributes:
        if name not in parts:
            raise ValueError(f"metric {m.name!r} has no attribute {name!r} (attributes: {', '.join(parts)})")
        proto = parts[name][0].protocol
        if proto not in joint_protocols():
            raise ValueError(f"attribute {name!r} of {m.name!r} uses {proto}: association analysis supports "
                             f"{', '.join(joint_protocols())}")


def multi_pairs(specs: Any, metric: str, attributes: Sequence[str], inputs: Sequence[str | os.PathLike[str]], *,
                fmt: str | None = None) -> Pairs:
    """The pairs of two attributes of a split ``multi`` metric, from report files (or folders of them) in any
    format ``ldp fold`` reads; ``specs``: a spec, a path or several (every version deployed)."""
    from ldp.jobs.job import expand_inputs, spec_index

    index = spec_index(specs)
    if len(attributes) != 2:
        raise ValueError(f"give two attributes, got {len(attributes)}")
    pair = (str(attributes[0]), str(attributes[1]))
    for m in _metric_versions(index, metric):
        _check_multi(m, pair)
    rejected: Counter[str] = Counter()
    records = accepted = 0
    chunks: dict[str, list[_Chunk]] = {}
    params: dict[str, ProtocolParams] = {}
    for path in expand_inputs(list(inputs)):
        folder = _read(index, {metric}, path, fmt)
        rejected.update(folder.rejected)
        records, accepted = records + folder.records, accepted + folder.accepted
        for (_, fp, _), keep in folder.kept().items():
            params[fp] = keep.params
            chunks.setdefault(fp, []).extend(keep.sink)
    if len(chunks) > 1:
        raise ValueError(f"the reports of {metric!r} were made under {len(chunks)} parameter versions "
                         f"({', '.join(sorted(chunks))}): pair one version at a time (give only its spec)")
    if not chunks:
        raise ValueError(f"no valid report of {metric!r} (rejected: {dict(rejected) or 'none'})")
    (fp, parts), = chunks.items()
    pr, cols = params[fp], _columns(parts)
    attrs = pr.attribute_parts
    sides = []
    for name in pair:
        comp, pre = attrs[name]
        sides.append((Variable(comp), {f.name: cols[pre + f.name] for f in comp.schema}))
    n = len(next(iter(cols.values())))
    each = ", ".join(f"{name} ε={c.privacy_cost.epsilon:.4g}" for name, (c, _) in attrs.items())
    note = (f"one split multi report per client carries both attributes: its cost is the report's, the sum of "
            f"its {len(attrs)} attributes' ({each}; sequential composition)")
    return Pairs(sides[0][0], sides[1][0], (f"{metric}.{pair[0]}", f"{metric}.{pair[1]}"), sides[0][1], sides[1][1],
                 records, rejected, accepted - n, 0, pr.privacy_cost, note)


# -- two metrics, row-aligned files -----------------------------------------------------------------------
def _check_pairable(m: MetricSpec) -> None:
    if m.params.attribute_parts:
        raise ValueError(f"metric {m.name!r} is a multi: pair two of its attributes with --metric {m.name} "
                         "--attributes A B")
    if m.protocol not in joint_protocols():
        raise ValueError(f"metric {m.name!r} uses {m.protocol}: association analysis supports "
                         f"{', '.join(joint_protocols())}")


def _variable(m: MetricSpec, spec: CollectionSpec, candidates: Any, other: bool) -> Variable:
    from ldp.jobs.decode import load_candidates

    _check_pairable(m)
    if m.params.domain_size is not None:  # a fixed domain: its values are in the aggregate
        if candidates is not None:
            raise ValueError(f"candidates are for RAPPOR (open-domain) metrics; {m.name!r} is {m.protocol}, a "
                             "fixed domain")
        return Variable(m.params)
    cands = (list(candidates) if candidates is not None and not isinstance(candidates, (str, os.PathLike))
             else load_candidates(spec, m.name, candidates))
    if cands is None and not other:
        raise ValueError(f"{m.protocol} metric {m.name!r} needs candidates: the spec has none (give a file)")
    return Variable(m.params, cands or [], other=other)


def _side(index: dict[str, CollectionSpec], metric: str, path: str | os.PathLike[str],
          fmt: str | None) -> tuple[_PairFolder, CollectionSpec, MetricSpec, Columns, Int]:
    folder = _read(index, {metric}, path, fmt)
    kept = folder.kept()
    source = os.fspath(path)
    if len(kept) > 1:
        raise ValueError(f"{source}: the reports of {metric!r} were made under {len(kept)} parameter versions: a "
                         "row-aligned file holds one")
    if not kept:
        raise ValueError(f"{source}: no valid report of {metric!r} (rejected: {dict(folder.rejected) or 'none'})")
    (key, keep), = kept.items()
    if folder.accepted != keep.n:
        raise ValueError(f"{source}: {folder.accepted - keep.n} report(s) of other metrics: a row-aligned file "
                         f"holds one metric (row i: client i)")
    spec = next(s for s in index.values() if metric in s.metrics and s.metrics[metric].params_fingerprint == key[1])
    cols, rec = _ordered(folder, keep, source)
    return folder, spec, spec.metrics[metric], cols, rec


def aligned_pairs(specs: Any, metric_a: str, metric_b: str, file_a: str | os.PathLike[str],
                  file_b: str | os.PathLike[str], *, candidates_a: Any = None, candidates_b: Any = None,
                  other: bool = False, fmt: str | None = None) -> Pairs:
    """Pairs of two metrics from two row-aligned files (row ``i`` of each: client ``i``; module docstring).

    ``candidates_*``: a RAPPOR (open-domain) metric's candidates (a sequence, or a file; default the spec's);
    ``other``: add ``"(other)"`` to the open-domain variables."""
    from ldp.jobs.job import spec_index

    index = spec_index(specs)
    versions = {name: _metric_versions(index, name) for name in (metric_a, metric_b)}
    for ms in versions.values():
        for m in ms:
            _check_pairable(m)
    if other and not any(m.params.domain_size is None for ms in versions.values() for m in ms):
        raise ValueError("'other' is for RAPPOR (open-domain) variables; neither metric is one")
    fa, sa, ma, ca, ra = _side(index, metric_a, file_a, fmt)
    fb, sb, mb, cb, rb = _side(index, metric_b, file_b, fmt)
    if fa.records + fa.blank != fb.records + fb.blank:
        raise ValueError(f"row-aligned files must have the same length (row i of each is client i): "
                         f"{os.fspath(file_a)} has {fa.records} records, {os.fspath(file_b)} {fb.records}")
    common, ia, ib = np.intersect1d(ra, rb, assume_unique=True, return_indices=True)
    if not common.size:
        raise ValueError("no client has a valid report in both files")
    va = _variable(ma, sa, candidates_a, other and ma.params.domain_size is None)
    vb = _variable(mb, sb, candidates_b, other and mb.params.domain_size is None)
    cost = pair_cost(ma.params, mb.params)
    note = (f"each client sent two reports, {metric_a} (ε={ma.params.privacy_cost.epsilon:.4g}) and {metric_b} "
            f"(ε={mb.params.privacy_cost.epsilon:.4g}): the pair costs their sum (sequential composition)")
    return Pairs(va, vb, (metric_a, metric_b), {k: v[ia] for k, v in ca.items()}, {k: v[ib] for k, v in cb.items()},
                 fa.records + fb.records, fa.rejected + fb.rejected, 0, ra.size + rb.size - 2 * common.size, cost, note)
