"""Continuous aggregation: fold an app's closed segments into its aggregates and cache decoded estimates.

:func:`fold_app` runs the ``ldp fold`` job (:func:`ldp.jobs.job.fold_files`: idempotent,
resumable by its manifest) on ``DATA/apps/<app>/segments/closed/`` into the job folder ``DATA/apps/<app>/job/``
(``job/aggregates/*.agg``, ``job/rejects.jsonl``, ``job/manifest.json``, as ``ldp fold --out`` writes),
decodes every aggregate with :mod:`ldp.jobs.decode` and writes ``DATA/apps/<app>/estimates.json``
atomically. :class:`Watcher` does that for every app every N seconds in a background thread.
Nothing here imports an HTTP stack.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ldp.errors import FoldBusyError
from ldp.ingest.central import decide, find_metric
from ldp.ingest.series import DEFAULT_WINDOWS, costs, decode_metrics, estimate_rows, privacy_entry, release_settings
from ldp.jobs.filelock import FileLock
from ldp.jobs.inputs import InputStores, is_remote, list_remote
from ldp.jobs.job import JobSummary, fold_files, spec_index
from ldp.jobs.store import write_atomic
from ldp.pipeline.amplification import segment_counts, shuffle_entry, window_segments
from ldp.spec import CollectionSpec
from ldp.storage.roles import Role, analyst_role

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig

__all__ = ["ESTIMATES_FORMAT", "JOB_DIR", "FoldBusyError", "Watcher", "app_dir", "estimate_rows", "estimates_path",
           "fold_app", "load_estimates", "privacy_entry", "utc_now"]

logger = logging.getLogger(__name__)

ESTIMATES_FORMAT = "ldp-estimates/1"
Specs = Union[CollectionSpec, str, "os.PathLike[str]", Sequence[Any], Mapping[str, CollectionSpec]]
"""An app's specs as :func:`ldp.jobs.job.spec_index` takes them: files, specs, or ``{fingerprint: spec}``."""
StoreSource = tuple[str, Mapping[str, Any]]
"""The shared storage of replicas: its URL (``s3://bucket/prefix`` or a folder) and its ``fsspec`` options."""


def app_dir(data_dir: str | os.PathLike[str], app: str) -> Path:
    """``DATA/apps/<app>``."""
    return Path(data_dir) / "apps" / app


def estimates_path(data_dir: str | os.PathLike[str], app: str) -> Path:
    """``DATA/apps/<app>/estimates.json``."""
    return app_dir(data_dir, app) / "estimates.json"


def utc_now() -> str:
    """The time now as ISO 8601 UTC to the second (``2026-01-31T12:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_estimates(data_dir: str | os.PathLike[str], app: str) -> dict[str, Any] | None:
    """The app's ``estimates.json`` (``None`` before its first fold, or if damaged: the next fold rewrites it)."""
    path = estimates_path(data_dir, app)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        logger.warning("%s is damaged (%s): ignored until the next fold rewrites it", path, exc)
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("metrics"), list) else None


def fold_app(data_dir: str | os.PathLike[str], app: str, specs: Specs, *, confidence: float = 0.95,
             alpha: float = 0.05, windows: int = DEFAULT_WINDOWS, every_seconds: float | None = None,
             segment_max_seconds: float | None = None, store: StoreSource | None = None) -> dict[str, Any]:
    """Fold the app's closed segments not folded yet, one aggregate per metric and window, decode every
    metric (the last ``windows`` windows, and all of them pooled), write ``estimates.json`` atomically and
    return what it holds: only what each metric's release thresholds let out (:mod:`ldp.jobs.release`;
    ``ldp decode JOB --no-release`` shows the rest to the data owner). Folding again with no new segment
    counts nothing twice (the job's manifest) and reuses the decoded estimates; a window whose count did not
    change is not decoded again.
    ``every_seconds`` and ``segment_max_seconds`` (the folding period and the ingest service's segment age, when
    known) go into ``schedule``, from which the dashboard tells when reports waiting will be folded.
    ``FoldBusyError`` when another fold of this app is running (a file lock, so also across processes).
    ``store``: ``(url, options)`` of the shared storage of ingest service replicas: the segments folded are then the
    anonymized ones the shuffler stage wrote there (``<url>/apps/<app>/segments/closed/``), and the central
    guarantee is computed from the reports each of them holds per window (its real anonymity set)."""
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"windows must be an int >= 1, got {windows!r}")
    base = app_dir(data_dir, app)
    index = spec_index(specs)
    fingerprints = sorted(index)
    settings = {"specs": fingerprints, "confidence": confidence, "alpha": alpha, "by_window": True,
                "windows": windows, "release": release_settings(index)}
    with _fold_lock(base):
        out = base / JOB_DIR
        _move_old_layout(base, out)
        _set_aside_if_other_settings(out, fingerprints)
        inputs, options = _closed_segments(base, app, store)
        summary = fold_files(inputs, index, out, by_window=True, progress=False, storage_options=options,
                                  scopes=_analyst(app, store))
        previous = load_estimates(data_dir, app)
        now = utc_now()
        # the central target's decisions, recorded (atomically) before estimates.json serves them
        by_window = window_segments(out)
        central = decide(base, index, by_window, time.time())
        metrics, folded_at = _decoded(out, index, summary, previous, settings, central, now)
        counts = segment_counts(out)
        for m in metrics:
            m["shuffle"] = _shuffle(index, counts, by_window, str(m.get("metric")), str(m.get("params_fingerprint")))
        raw = {"format": ESTIMATES_FORMAT, "app": app, "folded_at": folded_at, "checked_at": now,
               "settings": settings, "schedule": {"every_seconds": every_seconds,
                                                  "segment_max_seconds": segment_max_seconds},
               "specs": [_spec_entry(s) for s in index.values()],
               "segments": summary.inputs, "records": summary.records, "accepted": summary.accepted,
               "blank": summary.blank, "rejected": summary.rejected,
               "this_fold": {"segments": len(summary.processed), **summary.run},
               "warnings": summary.warnings + _shuffler_warnings(app, store), "metrics": metrics}
        doc: dict[str, Any] = _json_safe(raw)
        write_atomic(estimates_path(data_dir, app), (json.dumps(doc, indent=1, allow_nan=False) + "\n").encode())
    logger.info("fold %s: %d new segment(s), %d report(s) in total, %d metric(s) decoded", app,
                len(summary.processed), summary.records, len(metrics))
    return doc


def _decoded(out: Path, index: Mapping[str, CollectionSpec], summary: JobSummary, previous: dict[str, Any] | None,
             settings: dict[str, Any], central: Mapping[tuple[str, str], Mapping[str, Any]],
             now: str) -> tuple[list[dict[str, Any]], str]:
    """The metrics' entries and when they were folded: the previous ``estimates.json``'s when it has these
    ``settings``, nothing new was folded, no metric had an error and the central target decided as before (nothing
    decoded again); else decoded (:func:`ldp.ingest.series.decode_metrics`, reusing the unchanged windows of a
    previous fold with these settings)."""
    same = previous is not None and previous.get("settings") == settings
    if (same and previous is not None and not summary.processed
            and not any(m.get("error") for m in previous["metrics"])
            and all(m.get("central") == _json_safe(central.get((m.get("metric"), m.get("params_fingerprint"))))
                    for m in previous["metrics"])):
        return previous["metrics"], previous["folded_at"]  # nothing new: no decoding again
    metrics = decode_metrics(out / "aggregates", index, summary.aggregates,
                             previous["metrics"] if same and previous is not None else None,
                             confidence=settings["confidence"], alpha=settings["alpha"], keep=settings["windows"],
                             central=central)
    return metrics, now if summary.processed or previous is None else previous["folded_at"]


def _shuffle(index: Mapping[str, CollectionSpec], counts: Mapping[tuple[str, str], list[tuple[bool, int]]],
             by_window: Mapping[tuple[str, str], Mapping[int, list[tuple[bool, int]]]], metric: str, fp: str
             ) -> dict[str, Any] | None:
    """A metric's ``shuffle`` entry (:func:`ldp.pipeline.amplification.shuffle_entry`): the window figure of a
    device's reports in its smallest anonymity set, from the protocol's params (found by the params fingerprint) and
    the spec's per-window cap, as :mod:`ldp.ingest.central` composes them."""
    found = find_metric(index, metric, fp)
    if found is None:
        return None
    spec, m = found
    return shuffle_entry(m.params, counts.get((metric, fp), []), spec.reports_per_window(metric),
                         by_window.get((metric, fp)))


def _closed_segments(base: Path, app: str, store: StoreSource | None) -> tuple[list[str | Path], dict[str, Any] | None]:
    """The closed segments to fold (none yet: ``[]``) and the storage options to read them with."""
    if store is None:
        closed = base / "segments" / "closed"
        return ([closed] if closed.is_dir() else []), None
    url, options = store[0].rstrip("/") + f"/apps/{app}/segments/closed", dict(store[1]) or None
    if not is_remote(url):  # a folder: only its segments/closed/ is read, as files
        return ([Path(url)] if Path(url).is_dir() else []), None
    try:
        list_remote(url, InputStores(options, _analyst(app, store)))
    except FileNotFoundError:
        return [], options  # nothing shuffled yet
    return [url], options


def _analyst(app: str, store: StoreSource | None) -> dict[str, Role] | None:
    """The fold reads the replicas' shared store as an analyst of ``app`` (:func:`ldp.storage.roles.analyst_role`:
    ``segments/`` only, every read outside it refused before it is sent)."""
    return None if store is None or not is_remote(store[0]) else {store[0].rstrip("/"): analyst_role(app)}


def _shuffler_warnings(app: str, store: StoreSource | None) -> list[str]:
    """What the shuffler's status says of the app's runs set aside (:mod:`ldp.pipeline.status`), read as an analyst
    (the role that reads ``segments/``); nothing without shared storage, or when there is no status."""
    if store is None:
        return []
    from ldp.pipeline.status import status_key, status_warnings
    from ldp.storage import open_store
    from ldp.storage.roles import RoleStore

    try:
        analyst = RoleStore(open_store(store[0], dict(store[1]) or None), analyst_role(app))
        return status_warnings(analyst.get(status_key(app)))
    except FileNotFoundError:
        return []
    except OSError as exc:  # the store unreachable: the fold of the segments says so on its own
        logger.warning("fold %s: could not read the shuffler's status: %s", app, exc)
        return []


@contextmanager
def _fold_lock(base: Path) -> Iterator[None]:
    """An exclusive, non-blocking lock on ``<app>/.fold.lock`` (:class:`~ldp.jobs.filelock.FileLock`)."""
    base.mkdir(parents=True, exist_ok=True)
    lock = FileLock(base / ".fold.lock")
    if not lock.acquire():
        raise FoldBusyError(f"another fold of {base.name} is running (it holds {base / '.fold.lock'})")
    try:
        yield
    finally:
        lock.release()


JOB_DIR = "job"
"""The app's ``ldp fold`` job folder under ``DATA/apps/<app>/`` (its aggregates in ``job/aggregates/``)."""
_OLD_JOB_DIR = "aggregates"  # before 0.2: DATA/apps/<app>/aggregates/aggregates/*.agg


def _move_old_layout(base: Path, out: Path) -> None:
    """A data folder from before 0.2 kept the job in ``<app>/aggregates/``: move it to ``<app>/job/`` once
    (one ``os.replace``, so a crash leaves one or the other), so nothing is folded twice."""
    old = base / _OLD_JOB_DIR
    if not out.exists() and (old / "manifest.json").is_file():
        os.replace(old, out)
        logger.info("fold %s: moved the aggregate job folder %s to %s", base.name, old, out)


def _set_aside_if_other_settings(out: Path, fingerprints: list[str]) -> None:
    """The job refuses a folder made with other settings: when the app's spec list changed (a version
    deployed), or the folder was made without windows (before telemetry over time), move it to
    ``job.previous`` and fold every segment again (each closed segment is still there: nothing is lost,
    and the new folder counts each once)."""
    try:
        made = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        made_with, by_window = made.get("specs"), made.get("by_window")
    except (OSError, ValueError, AttributeError):
        return  # no manifest yet (or damaged: the job says so)
    if made_with == fingerprints and by_window is True:
        return
    old = out.with_name(out.name + ".previous")
    why = (f"the spec versions changed ({made_with} -> {fingerprints})" if made_with != fingerprints else
           "the aggregates were not per window")
    logger.warning("fold %s: %s: aggregating every segment again, one aggregate per window; the old aggregates "
                   "are in %s", out.parent.name, why, old)
    if old.exists():
        shutil.rmtree(old)
    os.replace(out, old)


def _spec_entry(spec: CollectionSpec) -> dict[str, Any]:
    return {"name": spec.name, "fingerprint": spec.fingerprint, "description": spec.description,
            "window_seconds": spec.window_seconds, "budget": costs(spec.budget.per_window, spec.budget.lifetime)}


def _json_safe(obj: Any) -> Any:
    """``obj`` with NaN and infinities as ``None`` (strict JSON) and numpy scalars as Python numbers."""
    from ldp.decoders.tabular import jsonable

    return jsonable(obj, strict=True)


class Watcher:
    """Run :func:`fold_app` for every app every ``every_seconds`` in a background thread.

    ``apps`` maps each app's name to its specs (files, or ``{fingerprint: spec}``); ``windows`` is how many
    windows each metric keeps decoded, ``segment_max_seconds`` the ingest service's segment age (both written to
    ``estimates.json`` with the period, while the thread runs, for the dashboard's next-fold time). A fold that
    fails is logged and retried at the next tick; folds never overlap (one at a time in this
    process; a file lock per app across processes). :meth:`startup_hook` and :meth:`shutdown_hook`
    are for :func:`ldp.ingest.app.create_app`'s ``on_startup`` and ``on_shutdown``."""

    def __init__(self, data_dir: str | os.PathLike[str], apps: Mapping[str, Specs], every_seconds: float, *,
                 fold: Callable[..., dict[str, Any]] = fold_app, confidence: float = 0.95,
                 alpha: float = 0.05, windows: int = DEFAULT_WINDOWS, segment_max_seconds: float | None = None,
                 store: StoreSource | None = None) -> None:
        if not every_seconds > 0:
            raise ValueError(f"every_seconds must be > 0, got {every_seconds!r}")
        self.data_dir, self.apps, self.every_seconds = Path(data_dir), dict(apps), float(every_seconds)
        self._fold = fold
        self._options: dict[str, Any] = {"confidence": confidence, "alpha": alpha, "windows": windows,
                                         "segment_max_seconds": segment_max_seconds}
        if store is not None:  # the shuffler's outputs in the replicas' shared storage
            self._options["store"] = store
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.after_fold: list[Callable[[dict[str, dict[str, Any] | None]], Any]] = []
        """Called with every app's estimates after each round of folds (the OTLP push); an error is logged."""
        self.folds = 0
        self.failures = 0
        self.last_error: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def fold_all(self) -> dict[str, dict[str, Any] | None]:
        """Fold every app once now (waiting for a fold under way to finish); ``None`` for an app that failed."""
        return self._fold_all(stoppable=False)

    def _fold_all(self, stoppable: bool) -> dict[str, dict[str, Any] | None]:
        out: dict[str, dict[str, Any] | None] = {}
        with self._lock:
            for app, specs in self.apps.items():
                if stoppable and self._stop.is_set():
                    break  # shutting down: the other apps wait for the next start
                try:
                    every = self.every_seconds if self.running else None  # by hand: no next fold promised
                    out[app] = self._fold(self.data_dir, app, specs, every_seconds=every, **self._options)
                    self.folds += 1
                except FoldBusyError as exc:
                    logger.info("fold %s skipped: %s", app, exc)
                    out[app] = None
                except Exception as exc:  # logged, never fatal: the next tick tries again
                    self.failures += 1
                    self.last_error = f"{app}: {type(exc).__name__}: {exc}"
                    logger.exception("fold %s failed (retried in %g s)", app, self.every_seconds)
                    out[app] = None
            for hook in self.after_fold:
                try:
                    hook(out)
                except Exception:  # logged, never fatal: the next round calls it again
                    logger.exception("after a fold: %r failed", hook)
        return out

    def start(self) -> None:
        """Start folding in a daemon thread (the first fold at once); a no-op when running."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="ldp-fold", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to stop and wait for it (a fold under way finishes first)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            self._fold_all(stoppable=True)
            self._stop.wait(max(0.0, self.every_seconds - (time.monotonic() - t0)))

    @classmethod
    def from_config(cls, config: IngestConfig, every_seconds: float | None = None) -> Watcher:
        """A watcher of every app of an ingest service config, every ``every_seconds`` (default: its
        ``[fold].every_seconds``, which must then be > 0)."""
        every = config.fold_every_seconds if every_seconds is None else every_seconds
        store = None if config.storage is None else (config.storage.url, dict(config.storage.options))
        return cls(config.data_dir, {name: app.specs for name, app in config.apps.items()}, every,
                   windows=config.fold_windows, segment_max_seconds=config.limits.segment_max_seconds, store=store)

    async def startup_hook(self, app: object = None) -> None:
        """An ``on_startup`` hook for :func:`ldp.ingest.app.create_app`: :meth:`start`."""
        self.start()

    async def shutdown_hook(self, app: object = None) -> None:
        """An ``on_shutdown`` hook: :meth:`stop`, waited for off the event loop (a fold may be under way)."""
        import asyncio

        await asyncio.to_thread(self.stop)

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

