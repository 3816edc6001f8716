"""The shuffler stage (``ldp shuffle``): the chunks every replica wrote become anonymized segments, one per arrival
window, in which a report hides among *all* the reports of its window, whichever replica took them.

One run, for one app (Prochlo's Encode–Shuffle–Analyze; Apple's ingestion, thesis 004 §5.2.1):

1. **Finish** any earlier run that stopped midway (its record in ``apps/<app>/shuffler/runs/`` says ``started``).
2. **Plan** (:mod:`ldp.shuffler.plan`). Read every chunk under ``apps/<app>/incoming/`` (:mod:`ldp.pipeline.chunks`),
   every line made canonical (:mod:`ldp.shuffler.lines`). A window is *ready* ``grace`` seconds past its end and
   released when all the chunks holding it are consumed (so it is mixed whole). Thresholds are per (window, metric):
   a metric below its own ``min_reports`` is withheld on its own (its lines written to no segment); a window whose
   every metric is below is held for late chunks, then withheld whole. The run's record — the chunks, a fresh
   random name per released window, the metrics withheld — is written before anything else.
3. **Mix.** Per window, the lines of its batches, each batch id once: a retry stored by two replicas (the answer
   lost, the device sent it again elsewhere) or twice by one is kept once, and an id already mixed by an earlier
   run within the dedup horizon is dropped. What linked a report to its sender — batch id, replica, arrival
   order and time finer than the window — is not written: the lines go out in a uniformly random order from the
   OS CSPRNG (:func:`ldp.pipeline.shuffle.shuffle_lines`), named ``<UTC window start>-<16 random hex>.jsonl``
   under ``apps/<app>/segments/closed/`` (the names the ingest service's shuffled storage uses), each written with
   :meth:`~ldp.storage.Store.create`.
4. **Record** the ids mixed (``shuffler/seen/<run>.json``, for later runs' deduplication), then the run as
   ``done`` with the anonymity set it achieved per window — reports in all, per metric, replicas, batches,
   duplicates dropped — and only then delete the chunks (or move them under ``apps/<app>/shuffler/consumed/`` with
   ``keep_originals``, where each run deletes those older than ``originals_seconds``: :mod:`ldp.shuffler.consumed`),
   and mark the run ``closed``.

**Killed at any point, a rerun is idempotent**: before the record, nothing was written; after it, the chunks are
still there until the run is done, a window's segment is either whole or absent (objects are written whole), so the
rerun writes the missing ones from the same chunks, with the same deduplication (its own ids excluded), and counts
the same anonymity set.

**Stale writes are harmless** (issue 70). The lease is checked before every write, but a write may still land after
the lease is lost: a process paused between the check and the request, or a request still in the client's retries.
Each kind of write is harmless then: segments and parts are created if absent under names the run record fixed,
seen records and staging are per run, chunk deletes and record updates repeat what the taker did — but for the run
record itself. A stale ``started`` record can land after a newer holder consumed the chunks it names: it is
recognised as **superseded** (its fence older than the current lease's token, and chunks it names gone: a run that
was merely interrupted still has every chunk, since they are deleted only once it is ``done``) and closed as
``void``, never resumed. A process that finds its lease lost after its last write exits with
:class:`~ldp.errors.LeaseLostError` all the same, so that its operator hears of the pause.

**Attempts are counted.** A run record counts the times it was tried (``attempts``: its first run, then each
resumption, counted before the try, so a run whose process is killed every time counts too) and keeps its last
failures. A run still unfinished after ``1 + max_resumptions`` attempts is **set aside** (``set_aside``, with its
reason): its chunks stay where they are, left out of every later plan, so the app's other windows go on; ``ldp
shuffle`` reports it at every run until the operator puts it back (``--retry RUN``), and so does the status it
publishes for the analysts' dashboard (:func:`publish_status`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ldp.errors import LeaseLostError, NoThresholdError, StorageError
from ldp.pipeline.chunks import CHUNK_SUFFIX, ChunkBatch, incoming_prefix
from ldp.pipeline.shuffle import closed_name
from ldp.pipeline.status import STATUS_FORMAT, status_key
from ldp.shuffler.consumed import DEFAULT_ORIGINALS_SECONDS, consumed_prefix, prune_consumed
from ldp.shuffler.engine import ENGINES, Engine, each
from ldp.shuffler.lines import LineRules
from ldp.shuffler.local_engine import LocalEngine
from ldp.shuffler.plan import Plan, Thresholds, plan_run, window_key
from ldp.storage import Store
from ldp.storage.absent import missing_root
from ldp.storage.lease import DEFAULT_TTL_SECONDS, FencedStore, Lease
from ldp.storage.roles import RoleStore, shuffler_prefix, shuffler_role

if TYPE_CHECKING:
    from ldp.spec import CollectionSpec

__all__ = ["RUN_FORMAT", "ShuffleRun", "shuffle_app", "shuffler_lease", "check_app_store", "Plan", "plan_run",
           "start_run", "complete_run", "finish_interrupted", "superseded", "DEFAULT_GRACE_SECONDS",
           "DEFAULT_DEDUP_SECONDS", "DEFAULT_HOLD_SECONDS", "DEFAULT_MAX_RESUMPTIONS", "DEFAULT_ORIGINALS_SECONDS",
           "NoThresholdError",
           "retry_set_aside", "publish_status", "open_engine"]

logger = logging.getLogger(__name__)
RUN_FORMAT = "ldp-shuffle-run/1"
DEFAULT_GRACE_SECONDS = 300.0
"""How long past a window's end its chunks may still arrive before it is mixed."""
DEFAULT_DEDUP_SECONDS = 7 * 86400.0
"""How long a mixed batch id is remembered (a retry later than this would be counted twice)."""
DEFAULT_HOLD_SECONDS = 7 * 86400.0
"""How long a window below ``min_reports`` waits for late chunks before it is withheld for good."""
DEFAULT_MAX_RESUMPTIONS = 3
"""Resumptions of an unfinished run before it is set aside (module docstring)."""
FAILURES_KEPT = 5
"""The last failures a run record keeps."""


@dataclass
class ShuffleRun:
    """What one run did: its id, the chunks consumed, per released window its segment and anonymity set, the
    windows held (not ready), duplicates dropped, and whether it finished an earlier run."""

    run_id: str | None
    chunks: list[str] = field(default_factory=list)
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    resumed: list[str] = field(default_factory=list)
    voided: list[str] = field(default_factory=list)
    set_aside: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run_id, "chunks": len(self.chunks), "windows": self.windows, "held": self.held,
                "duplicates": self.duplicates, "resumed": self.resumed, "voided": self.voided,
                "set_aside": self.set_aside}


def _runs(app: str) -> str:
    return f"apps/{app}/shuffler/runs/"


def shuffler_lease(store: Store, app: str, ttl: float = DEFAULT_TTL_SECONDS) -> Lease:
    """The lease that makes one ``ldp shuffle`` of ``app`` run at a time (:mod:`ldp.storage.lease`), under
    ``apps/<app>/shuffler/lease/``."""
    return Lease(store, f"apps/{app}/shuffler/lease/", f"shuffler of {app}", ttl=ttl)


def check_app_store(store: Store, app: str) -> None:
    """Refuse a store (or an app) that is not there, naming what is missing, before anything is written to it: a
    typo in a timer's ``--store`` or ``--app`` must fail, not report "nothing to mix" for months. The app is there
    once a replica wrote a chunk of it or a shuffler ran for it."""
    if store.list(incoming_prefix(app)) or store.list(shuffler_prefix(app)):
        return
    if not store.root_exists():
        raise FileNotFoundError(missing_root(store.url))
    try:  # the apps there, when this process may list them (the shuffler's role alone may not)
        others = sorted({k.split("/")[1] for k in store.unwrap().list("apps/") if k.count("/") >= 2})
        seen = f"apps there: {', '.join(others[:10])}" if others else "it holds no app at all"
    except (PermissionError, OSError):
        seen = "the other apps there are not listed (no access)"
    raise FileNotFoundError(f"{store.url} holds nothing of app {app!r} (no apps/{app}/incoming/ chunks, no "
                            f"apps/{app}/shuffler/ records): a wrong --store or --app? {seen}")


def shuffle_app(store: Store, app: str, *, now: float | None = None, grace_seconds: float = DEFAULT_GRACE_SECONDS,
                dedup_seconds: float = DEFAULT_DEDUP_SECONDS, keep_originals: bool = False,
                min_reports: int | None = None, hold_seconds: float = DEFAULT_HOLD_SECONDS,
                lease_seconds: float = DEFAULT_TTL_SECONDS, lease: Lease | None = None, engine: str = "local",
                scheduler: str | None = None, specs: Mapping[str, CollectionSpec] | None = None,
                max_resumptions: int = DEFAULT_MAX_RESUMPTIONS, retry: Sequence[str] = (),
                originals_seconds: float = DEFAULT_ORIGINALS_SECONDS) -> ShuffleRun:
    """One run of the stage for ``app`` (module docstring); what it did. Thresholds are per (window, metric), in
    devices (:mod:`ldp.shuffler.plan`): a metric from fewer devices than its threshold — its spec's
    ``release.min_reports`` in ``specs``, at least ``min_reports`` — is withheld on its own, its lines written
    nowhere; a window in which every metric is below its threshold is held for late chunks, up to ``hold_seconds``,
    then withheld whole. There is no run without a threshold: :class:`NoThresholdError` unless ``min_reports`` is
    given or every metric of ``specs`` has its own (``min_reports=1`` states that any count is released); a metric
    of a spec not given has ``min_reports`` alone. Every line mixed is checked canonical and written anew when not
    (:mod:`ldp.shuffler.lines`: exactly for the metrics of ``specs``, ``{fingerprint: CollectionSpec}``; the
    envelope's shape only for the others); a line that is no report is dropped.

    The run holds the app's shuffler lease (:func:`shuffler_lease`, ``lease_seconds`` long, renewed while it runs;
    or ``lease``, not yet acquired) and writes only through it: :class:`~ldp.errors.LeaseHeldError` if another run
    holds it, :class:`~ldp.errors.LeaseLostError` (nothing more written) if this one loses it, also when it finds
    it lost after its last write. A store or app that is not there is :class:`FileNotFoundError`
    (:func:`check_app_store`). ``engine``: ``"local"`` (this process) or ``"dask"``
    (:mod:`ldp.shuffler.dask_engine`, on the cluster at ``scheduler``, or a local one of its own). An unfinished
    run is resumed at most ``max_resumptions`` times, then set aside; ``retry`` names set-aside runs to put back
    first (``"all"``: every one). Every run deletes the chunks ``keep_originals`` kept that their replica wrote more
    than ``originals_seconds`` ago (:mod:`ldp.shuffler.consumed`)."""
    now = time.time() if now is None else float(now)
    _check_options(engine, scheduler, grace_seconds, dedup_seconds, hold_seconds, originals_seconds, max_resumptions)
    threshold = _thresholds(specs, min_reports)
    rules = LineRules(specs)
    store = store if isinstance(store, RoleStore) else RoleStore(store, shuffler_role(app))  # its prefixes only
    check_app_store(store, app)
    lease = lease if lease is not None else shuffler_lease(store, app, lease_seconds)
    with lease.hold():
        fenced = FencedStore(store, lease)
        if retry:
            retry_set_aside(fenced, app, retry)
        try:
            run = _run(fenced, app, now, grace_seconds, dedup_seconds, keep_originals, min_reports, hold_seconds,
                       engine, scheduler, rules, threshold, max_resumptions, originals_seconds)
        except Exception as exc:  # after the lease was lost, a read may find what the taker removed: say why
            if not isinstance(exc, LeaseLostError):
                try:
                    lease.ensure()
                except LeaseLostError as lost:
                    raise lost from exc
            raise
        lease.ensure()  # a pause during the last write: it landed, harmless, but this process must say so
        return run


def _check_options(engine: str, scheduler: str | None, grace_seconds: float, dedup_seconds: float,
                   hold_seconds: float, originals_seconds: float, max_resumptions: int) -> None:
    """``ValueError`` for an option of :func:`shuffle_app` out of its range (before the store is touched)."""
    if engine not in ENGINES or (scheduler is not None and engine != "dask"):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} (a scheduler only with 'dask'), got "
                         f"{engine!r}")
    if not (grace_seconds >= 0 and dedup_seconds > 0 and hold_seconds >= 0):
        raise ValueError(f"grace_seconds and hold_seconds must be >= 0 and dedup_seconds > 0, got {grace_seconds}, "
                         f"{hold_seconds}, {dedup_seconds}")
    if isinstance(originals_seconds, bool) or not isinstance(originals_seconds, (int, float)) \
            or not 0 < originals_seconds < math.inf:
        raise ValueError(f"originals_seconds (how long a kept original chunk stays) must be a finite number of "
                         f"seconds > 0, got {originals_seconds!r}")
    if isinstance(max_resumptions, bool) or not isinstance(max_resumptions, int) or max_resumptions < 0:
        raise ValueError(f"max_resumptions must be an int >= 0, got {max_resumptions!r}")


def _thresholds(specs: Mapping[str, CollectionSpec] | None, min_reports: int | None) -> Thresholds:
    """Each metric's release threshold, in devices; :class:`NoThresholdError` unless ``min_reports`` is given or
    every metric of ``specs`` has its own."""
    threshold = Thresholds((specs or {}).values(), min_reports)
    if min_reports is None and (not specs or threshold.missing()):
        raise NoThresholdError(
            "no release threshold" + (f" for {', '.join(threshold.missing())} (no release.min_reports in its spec)"
                                      if specs else " (no spec given)")
            + ": give each metric's spec with release.min_reports, or --min-reports N (the least number of devices "
              "a metric's reports in a window must come from to be released; --min-reports 1 releases any count)")
    return threshold


def open_engine(name: str, store: FencedStore, app: str, rules: LineRules, scheduler: str | None = None) -> Engine:
    """The engine ``name`` for one run of ``app`` over ``store`` (``scheduler``: the Dask scheduler's address, for
    ``"dask"`` only); ``ValueError`` for another name."""
    if name not in ENGINES or (scheduler is not None and name != "dask"):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} (a scheduler only with 'dask'), got {name!r}")
    if name == "dask":
        from ldp.shuffler.dask_engine import DaskEngine

        return DaskEngine(store, app, scheduler, rules)
    return LocalEngine(store, app, rules)


def _run(store: FencedStore, app: str, now: float, grace_seconds: float, dedup_seconds: float,
         keep_originals: bool, min_reports: int | None, hold_seconds: float, engine: str, scheduler: str | None,
         rules: LineRules, threshold: Thresholds, max_resumptions: int,
         originals_seconds: float = DEFAULT_ORIGINALS_SECONDS) -> ShuffleRun:
    """:func:`shuffle_app` once the lease is held: every write through ``store`` checks it first."""
    with open_engine(engine, store, app, rules, scheduler) as eng:  # every engine: the same plan, record and completion
        eng.prune(now - 2 * dedup_seconds)
        prune_consumed(store, app, now - originals_seconds)
        past = finish_interrupted(store, app, now, dedup_seconds, keep_originals, eng, max_resumptions)
        eng.drop_staging(past.resumed + past.voided)
        aside = set(past.aside_chunks)
        index, reports = eng.plan_inputs([k for k in store.list(incoming_prefix(app))
                                          if k.endswith(CHUNK_SUFFIX) and k not in aside])
        plan = plan_run(index, reports, now, grace_seconds, hold_seconds, threshold)
        if not plan.consumed:
            done = ShuffleRun(None, held=plan.held)
        else:
            rec = start_run(store, app, now, plan, min_reports, eng.engine)
            done = _attempt(store, app, rec, now, dedup_seconds, keep_originals, eng)
            eng.drop_staging([rec["id"]])
            done.held = plan.held
        done.resumed, done.voided, done.set_aside = past.resumed, past.voided, past.set_aside
        publish_status(store, app, now, past.aside_status)
        return done


@dataclass
class Past:
    """What :func:`finish_interrupted` found of earlier runs: those it finished, those it closed as void
    (superseded), those set aside (``{run: reason}``) and the chunks these hold (left out of the plan)."""

    resumed: list[str] = field(default_factory=list)
    voided: list[str] = field(default_factory=list)
    set_aside: dict[str, str] = field(default_factory=dict)
    aside_chunks: list[str] = field(default_factory=list)
    aside_status: list[dict[str, Any]] = field(default_factory=list)

    def aside(self, rec: Mapping[str, Any], reason: str) -> None:
        """Count ``rec`` set aside for ``reason``."""
        self.set_aside[rec["id"]] = reason
        self.aside_chunks += rec["chunks"]
        failures = rec.get("failures") or []
        self.aside_status.append({"run": rec["id"], "since": rec["set_aside"]["at"], "attempts": rec.get("attempts"),
                                  "error": failures[-1]["error"].split(":", 1)[0] if failures else "stopped",
                                  "windows": sorted({w.split(":", 1)[0] for w in rec.get("outputs", {})})})


def finish_interrupted(store: FencedStore, app: str, now: float, dedup_seconds: float, keep: bool,
                       mix: Engine, max_resumptions: int = DEFAULT_MAX_RESUMPTIONS) -> Past:
    """Finish every run an earlier process left unfinished (its record neither ``closed``, ``void`` nor
    ``set_aside``), each attempt counted first; close a superseded one as ``void`` (:func:`superseded`); set aside
    one tried ``1 + max_resumptions`` times. A run recorded by another engine is refused (its outputs are named as
    that engine writes them): run that engine."""
    past = Past()
    for key in store.list(_runs(app)):
        rec = json.loads(store.get(key))
        if rec.get("format") != RUN_FORMAT:
            raise ValueError(f"{store.url}/{key} is not an {RUN_FORMAT} record")
        state = rec["state"]
        if state in ("closed", "void"):
            continue
        if state == "set_aside":
            past.aside(rec, str(rec["set_aside"]["reason"]))
            continue
        if state == "started" and (why := superseded(store, app, rec)):
            _put(store, app, {**rec, "state": "void", "void": {"at": now, "fence": store.fence, "reason": why}})
            logger.warning("shuffler run %s of %s closed as void: %s", rec["id"], app, why)
            past.voided.append(rec["id"])
            continue
        attempts = int(rec.get("attempts", 1))
        if attempts > max_resumptions:
            failures = rec.get("failures") or []
            reason = (f"{attempts} attempts did not finish it; the last failed with {failures[-1]['error']}"
                      if failures else f"{attempts} attempts did not finish it (each process stopped: killed?)")
            rec = {**rec, "state": "set_aside", "set_aside": {"at": now, "reason": reason, "state": state}}
            _put(store, app, rec)
            logger.error("shuffler run %s of %s set aside: %s", rec["id"], app, reason)
            past.aside(rec, reason)
            continue
        rec = {**rec, "attempts": attempts + 1}
        _put(store, app, rec)
        _attempt(store, app, rec, now, dedup_seconds, keep, mix)
        past.resumed.append(rec["id"])
    return past


def superseded(store: Store, app: str, rec: Mapping[str, Any]) -> str | None:
    """Why the ``started`` record ``rec`` is stale, or ``None``: its fence is older than the lease's current token
    (``store.fence``) and some chunk it names is gone — consumed by a newer holder after this record's writer lost
    the lease (a run merely interrupted still has every chunk: they are removed only once it is ``done``)."""
    fence, current = rec.get("fence"), store.fence
    if fence is None or current is None or int(fence) >= int(current):
        return None
    gone = [k for k, there in zip(rec["chunks"], each(store, store.exists, list(rec["chunks"])), strict=True)
            if not there]
    if not gone:
        return None
    return (f"written under lease token {fence} (now {current}) after its chunks were consumed by a newer run: "
            f"{len(gone)} of its {len(rec['chunks'])} chunks are gone")


def retry_set_aside(store: FencedStore, app: str, runs: Sequence[str]) -> list[str]:
    """Put the set-aside runs ``runs`` (``"all"``: every one) back as they were, their attempts counted anew; their
    ids. ``ValueError`` naming a run that is not set aside (nothing changed then)."""
    found: dict[str, dict[str, Any]] = {}
    for key in store.list(_runs(app)):
        rec = json.loads(store.get(key))
        if rec.get("state") == "set_aside":
            found[rec["id"]] = rec
    wanted = sorted(found) if "all" in runs else list(dict.fromkeys(runs))
    if missing := [r for r in wanted if r not in found]:
        raise ValueError(f"no set-aside shuffler run {', '.join(missing)} of {app}"
                       + (f" (set aside: {', '.join(sorted(found))})" if found else " (none is set aside)"))
    for r in wanted:
        rec = dict(found[r])
        aside = rec.pop("set_aside")
        _put(store, app, {**rec, "state": aside["state"], "attempts": 0,
                          "retried": [*rec.get("retried", []), aside]})
    return wanted


def publish_status(store: FencedStore, app: str, now: float, aside: list[dict[str, Any]]) -> None:
    """Write the app's shuffler status (:mod:`ldp.pipeline.status`) when there is something to say or to take back:
    the runs set aside ``aside``. The shuffler never reads ``segments/``: what it published last is kept in its own
    prefix too, to compare."""
    doc = json.dumps({"format": STATUS_FORMAT, "checked_at": now, "set_aside": aside}, sort_keys=True).encode()
    mine = f"{shuffler_prefix(app)}status.json"  # what was published last: the shuffler never reads segments/
    try:
        old = json.loads(store.get(mine))
    except FileNotFoundError:
        old = None
    if old is None and not aside or old is not None and old.get("set_aside") == aside:
        return
    store.put(status_key(app), doc)
    store.put(mine, doc)


def _put(store: FencedStore, app: str, rec: Mapping[str, Any]) -> None:
    """Replace the run record of ``rec``."""
    store.put(f"{_runs(app)}{rec['id']}.json", json.dumps(rec, sort_keys=True).encode())


def _attempt(store: FencedStore, app: str, rec: dict[str, Any], now: float, dedup_seconds: float, keep: bool,
             mix: Engine) -> ShuffleRun:
    """:func:`complete_run`, its failure kept in the record (the last :data:`FAILURES_KEPT`) and raised: a lost lease
    or a store that failed is not the run's failure, and is raised alone (nothing more written)."""
    try:
        return complete_run(store, app, rec, now, dedup_seconds, keep, mix)
    except (LeaseLostError, StorageError):
        raise
    except Exception as exc:
        failures = [*rec.get("failures", []), {"at": now, "attempt": int(rec.get("attempts", 1)),
                                                "error": f"{type(exc).__name__}: {exc}"[:500]}]
        with contextlib.suppress(LeaseLostError, StorageError):
            _put(store, app, {**json.loads(store.get(f"{_runs(app)}{rec['id']}.json")),
                              "failures": failures[-FAILURES_KEPT:]})
        raise


def start_run(store: FencedStore, app: str, now: float, plan: Plan, min_reports: int | None,
              engine: str) -> dict[str, Any]:
    """Record a new run of ``plan`` (``started``): its chunks, a fresh random segment name per released window
    (``None`` for a withheld one), the lease token, the engine. Written create-if-absent before anything else."""
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-{secrets.token_hex(4)}"
    rec = {"format": RUN_FORMAT, "id": run_id, "state": "started", "at": now, "chunks": plan.consumed,
           "fence": store.fence, "engine": engine, "attempts": 1,
           "outputs": {window_key(w): None if w in plan.withheld else closed_name(w[0], store.fence)
                       for w in plan.released}, "min_reports": min_reports,
           "drop": {window_key(w): d for w, d in plan.drop.items()}}
    if not store.create(f"{_runs(app)}{run_id}.json", json.dumps(rec, sort_keys=True).encode()):
        raise StorageError(0, f"{store.url}: a shuffler run {run_id} is already recorded (never overwritten)")
    return rec


def complete_run(store: FencedStore, app: str, rec: dict[str, Any], now: float, dedup_seconds: float, keep: bool,
                 mix: Engine, chunks: Mapping[str, list[ChunkBatch]] | None = None) -> ShuffleRun:
    """Do (or finish) the run ``rec``: ``mix`` (segments, ids), the record ``done``, then remove the chunks and
    mark it ``closed``. Everything it computes depends only on the chunks and the earlier runs' ids."""
    run_id, keys = rec["id"], list(rec["chunks"])
    engine = rec.get("engine", "local")
    if rec["state"] == "started" and engine != mix.engine:
        raise ValueError(f"shuffler run {run_id} was started by the {engine} engine and is unfinished: finish it with "
                         f"ldp shuffle --engine {engine}")
    result = ShuffleRun(run_id, keys)
    if rec["state"] == "started":
        anonymity, duplicates = mix(store, app, rec, dedup_seconds, chunks)
        rec = {**rec, "state": "done", "anonymity": anonymity, "duplicates": duplicates, "finished": now,
               "finished_fence": store.fence}
        _put(store, app, rec)
    result.windows, result.duplicates = dict(rec["anonymity"]), int(rec["duplicates"])

    def consume(key: str) -> None:
        if keep and store.exists(key):  # kept where only the shuffler reads: never beside the segments
            store.put(f"{consumed_prefix(app)}{key[len(incoming_prefix(app)):]}", store.get(key))
        store.delete(key)

    each(store, consume, keys)
    _put(store, app, {**rec, "state": "closed"})
    return result


