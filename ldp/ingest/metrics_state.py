"""What the ingest service's ``/metrics`` reads from the writer's state (:mod:`ldp.ingest.metrics`):
:class:`StateCollector` — the per-app counters (``AppStats``), refusals, queue and health, the bytes on disk (cached,
:class:`DiskUsage`) and the fold lag (from each app's ``estimates.json``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ldp.ingest.journal import coarse
from ldp.ingest.watch import estimates_path, load_estimates

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig
    from ldp.ingest.segments import SegmentWriter

__all__ = ["StateCollector", "DiskUsage", "DISK_PARTS", "DISK_CACHE_SECONDS", "WRITER_STATES", "BUFFERED_STEP",
           "publish_seconds", "PUBLISH_SECONDS_UNFOLDED"]

DISK_PARTS = ("segments_open", "segments_closed", "journal", "rejects", "other")
"""What ``ldp_collector_disk_bytes`` splits an app's folder into (``other``: the fold's job, estimates, ...)."""
WRITER_STATES = ("ok", "storage_error", "closing", "stopped")
"""The writer's states (``status`` of ``/healthz``'s details), one sample each in ``ldp_collector_writer_state``."""
_REJECTS_KEPT = (("rejects_left_out", "ldp_collector_rejects_left_out", "Rejected lines too long to store, kept as a "
                  "rejects/ entry (prefix and digest), by app."),
                 ("rejects_unkept", "ldp_collector_rejects_unkept", "Rejected lines only counted (the day's reject "
                  "budget was spent), by app."))
DISK_CACHE_SECONDS = 10.0
"""How long a measure of the bytes on disk is reused."""
BUFFERED_STEP = 2**20
"""``ldp_collector_buffered_bytes`` is rounded up to whole MiB: on a quiet ingest service, a scrape during an upload
would otherwise read that body's size. (The limit it is watched against, ``max_buffered_bytes``, is 256 MiB by
default.)"""



PUBLISH_SECONDS_UNFOLDED = 60.0
"""The publishing interval of an ingest service that does not fold: the default fold period, so that such a service's
page says no more than one that folds by default. (An app's window, a day by default, would leave alerts on
rejections or a stalled writer's counters a day late.)"""
_MIN_PUBLISH_SECONDS = 1.0
def publish_seconds(config: IngestConfig) -> float:
    """How often the families that move with uploads are published: the fold period (``[fold] every_seconds``, at
    least 1 s: the estimates move no faster), or :data:`PUBLISH_SECONDS_UNFOLDED` when folding is off."""
    every = config.fold_every_seconds
    return max(_MIN_PUBLISH_SECONDS, every) if every > 0 else PUBLISH_SECONDS_UNFOLDED




class DiskUsage:
    """The bytes of one app's folder by part (:data:`DISK_PARTS`). Closed segments never change, so each one
    is measured once (by name); the rest is walked at every :meth:`measure`."""

    def __init__(self, app_dir: Path) -> None:
        self.dir = app_dir
        self._closed: dict[str, int] = {}

    def measure(self) -> dict[str, int]:
        parts = dict.fromkeys(DISK_PARTS, 0)
        closed = self.dir / "segments" / "closed"
        seen: dict[str, int] = {}
        try:
            with os.scandir(closed) as it:
                for entry in it:
                    size = self._closed.get(entry.name)
                    if size is None:
                        size = _size(entry.path)
                    seen[entry.name] = size
        except FileNotFoundError:
            pass
        self._closed = seen
        parts["segments_closed"] = sum(seen.values())
        for root, dirs, files in os.walk(self.dir):
            rel = Path(root).relative_to(self.dir).parts
            if rel == ("segments",):
                dirs[:] = [d for d in dirs if d != "closed"]
            part = "other"
            if rel[:2] == ("segments", "open"):
                part = "segments_open"
            elif rel[:1] in (("journal",), ("rejects",)):
                part = rel[0]
            parts[part] += sum(_size(os.path.join(root, f)) for f in files)
        return parts


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:  # moved or removed meanwhile (a segment closing, a fold's temporary file)
        return 0


def _timestamp(iso: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 UTC time as ``utc_now`` writes it (``None`` if it is not one)."""
    if not isinstance(iso, str):
        return None
    try:
        return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _copy(counter: Mapping[str, int]) -> dict[str, int]:
    """A copy of a counter another thread may be adding to (``dict()`` of a dict runs without a thread switch;
    retried should that ever change)."""
    for _ in range(10):
        try:
            return dict(counter)
        except RuntimeError:
            continue
    return {}


class StateCollector:
    """The metrics read from the writer and the data folder (a ``prometheus_client`` custom collector): :meth:`collect`
    the live gauges, :meth:`uploads` the families that move with uploads (published once per ``interval`` by
    :class:`IngestMetrics`; the last batch's time is the start of its interval)."""

    def __init__(self, config: IngestConfig, writer: SegmentWriter, buffered: Callable[[], int], *,
                 disk_cache_seconds: float = DISK_CACHE_SECONDS, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, interval: float | None = None) -> None:
        self.config, self.writer, self.buffered = config, writer, buffered
        self.disk_cache_seconds, self.clock, self.wall = disk_cache_seconds, clock, wall
        self.interval = publish_seconds(config) if interval is None else interval
        self._lock = threading.Lock()  # two scrapes at once measure the disk once
        self._usage = {app: DiskUsage(config.app_dir(app)) for app in config.apps}
        self._disk: tuple[float, dict[str, dict[str, int]]] | None = None
        self._folds: dict[str, tuple[tuple[int, int, int], tuple[float | None, int | None]]] = {}
        self._poisoning: dict[str, dict[tuple[str, str], float]] = {}  # app -> (spec, metric) -> 1 if suspicious
        self._central: dict[str, dict[tuple[str, str], tuple[float | None, int]]] = {}  # -> (ε, windows withheld)

    def disk(self) -> dict[str, dict[str, int]]:
        """Bytes on disk per app and part, measured at most every ``disk_cache_seconds``."""
        with self._lock:
            now = self.clock()
            if self._disk is None or now - self._disk[0] >= self.disk_cache_seconds:
                self._disk = (now, {app: u.measure() for app, u in self._usage.items()})
            return self._disk[1]

    def fold(self, app: str) -> tuple[float | None, int | None]:
        """The app's last fold: its time (seconds since the epoch) and the reports it had accepted in all
        (``None``, ``None`` before the first); ``estimates.json`` is read again only when it changed."""
        path = estimates_path(self.config.data_dir, app)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None, None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            cached = self._folds.get(app)
        if cached is not None and cached[0] == key:
            return cached[1]
        doc = load_estimates(self.config.data_dir, app) or {}
        flags: dict[tuple[str, str], float] = {}
        central: dict[tuple[str, str], tuple[float | None, int]] = {}
        for m in doc.get("metrics") or []:
            c = m.get("central") if isinstance(m, dict) else None
            if isinstance(c, dict):
                eps = c.get("epsilon")
                central[(str(m.get("spec", "")), str(m.get("metric", "")))] = (
                    float(eps) if isinstance(eps, int | float) and not isinstance(eps, bool) else None,
                    len(c.get("withheld") or {}))
            windows = m.get("windows") or [] if isinstance(m, dict) else []
            ev = (windows[-1] or {}).get("poisoning") if windows and isinstance(windows[-1], dict) else None
            if isinstance(ev, dict) and ev.get("verdict") in ("ok", "suspicious"):
                flags[(str(m.get("spec", "")), str(m.get("metric", "")))] = float(ev["verdict"] == "suspicious")
        accepted = doc.get("accepted")
        value = (_timestamp(doc.get("checked_at")),
                 accepted if isinstance(accepted, int) and not isinstance(accepted, bool) else None)
        with self._lock:
            self._folds[app] = (key, value)
            self._poisoning[app] = flags
            self._central[app] = central
        return value

    def uploads(self) -> Iterator[Metric]:
        """The families that move when a batch comes: per-app counters, the last batch's time (the start of its
        interval), the reports waiting for a fold, refusals, bytes on disk."""
        w = self.writer
        accepted = CounterMetricFamily("ldp_collector_reports_accepted", "Reports accepted and stored, by app "
                                       "(rebuilt from the journal on start).", labels=["app"])
        rejected = CounterMetricFamily("ldp_collector_reports_rejected", "Report lines rejected (stored, not valid), "
                                       "by app and reason (rebuilt from the journal on start).",
                                       labels=["app", "reason"])
        batches = CounterMetricFamily("ldp_collector_batches", "Batches stored, by app (rebuilt from the journal on "
                                      "start).", labels=["app"])
        stored = CounterMetricFamily("ldp_collector_stored_bytes", "Bytes of batch bodies stored (after gunzip), by "
                                     "app (rebuilt from the journal on start).", labels=["app"])
        duplicates = CounterMetricFamily("ldp_collector_duplicate_batches", "Uploads of a batch id already stored "
                                         "(answered, not stored again), by app, since the start.", labels=["app"])
        pending = GaugeMetricFamily("ldp_collector_fold_pending_reports", "Reports accepted but not yet folded: "
                                    "accepted minus the accepted of estimates.json, at least 0.", labels=["app"])
        last = GaugeMetricFamily("ldp_collector_last_batch_timestamp_seconds", "When the app's last batch was stored: "
                                 f"the start of the {self.interval:g} s interval holding its window's start (seconds "
                                 "since the epoch); absent before the first.", labels=["app"])
        kept = {field: CounterMetricFamily(name, text, labels=["app"]) for field, name, text in _REJECTS_KEPT}
        for app, log in w.logs.items():
            s = log.stats
            n_accepted = s.accepted
            accepted.add_metric([app], n_accepted)
            for reason, n in sorted(_copy(s.rejected).items()):
                rejected.add_metric([app, reason], n)
            batches.add_metric([app], s.batches)
            stored.add_metric([app], s.bytes)
            duplicates.add_metric([app], s.duplicates)
            if s.last_batch_at is not None:
                last.add_metric([app], coarse(s.last_batch_at, self.interval))
            for field, family in kept.items():
                count = getattr(s, field, None)
                if count is not None:
                    family.add_metric([app], count)
            _, folded = self.fold(app)
            pending.add_metric([app], max(0, n_accepted - (folded or 0)))
        yield from (accepted, rejected, batches, stored, duplicates, last, *kept.values(), pending)
        refused = CounterMetricFamily("ldp_collector_refused_requests", "Upload requests refused (nothing stored), "
                                      "by reason (the error of the answer), since the start.", labels=["reason"])
        for reason, n in sorted(_copy(w.refused).items()):
            refused.add_metric([reason], n)
        yield refused
        disk = GaugeMetricFamily("ldp_collector_disk_bytes", "Bytes of the files in the app's folder, by part "
                                 f"(measured at most every {self.disk_cache_seconds:g} s).", labels=["app", "part"])
        for app, parts in self.disk().items():
            for part, size in parts.items():
                disk.add_metric([app, part], size)
        yield disk

    def collect(self) -> Iterator[Metric]:
        """The live gauges: the writer's queue, bodies held (rounded up to :data:`BUFFERED_STEP`) and state, and per
        app the fold's age and flags (which move with folds, not uploads)."""
        w = self.writer
        age = GaugeMetricFamily("ldp_collector_fold_age_seconds", "Seconds since the app's last fold (checked_at of "
                                "estimates.json); absent before the first fold.", labels=["app"])
        poisoned = GaugeMetricFamily("ldp_collector_poisoning_suspicious", "1 when the latest window's reports of a "
                                     "metric leave the law honest reports follow (family-wise false-alarm rate 0.01; "
                                     "docs/poisoning.md), 0 when they match it; absent when untested.",
                                     labels=["app", "spec", "metric"])
        central_eps = GaugeMetricFamily("ldp_collector_central_epsilon", "A device's cumulative central ε against the "
                                        "analyst over the windows of a metric released so far (composed privacy-loss "
                                        "distributions, at the central target's δ, else 1e-8; docs/shuffling.md); "
                                        "absent when nothing can be proven.", labels=["app", "spec", "metric"])
        central_held = CounterMetricFamily("ldp_collector_central_withheld_windows", "Windows of a metric withheld by "
                                           "its central target (release.central), as recorded in central.json.",
                                           labels=["app", "spec", "metric"])
        for app in w.logs:
            folded_at, _ = self.fold(app)
            with self._lock:
                flags = dict(self._poisoning.get(app, {}))
                central = dict(self._central.get(app, {}))
            for (spec, metric), flag in sorted(flags.items()):
                poisoned.add_metric([app, spec, metric], flag)
            for (spec, metric), (eps, held) in sorted(central.items()):
                if eps is not None:
                    central_eps.add_metric([app, spec, metric], eps)
                central_held.add_metric([app, spec, metric], held)
            if folded_at is not None:
                age.add_metric([app], max(0.0, self.wall() - folded_at))
        limits = self.config.limits
        yield GaugeMetricFamily("ldp_collector_write_queue_batches", "Batches queued for the writer thread, not yet "
                                f"taken (429 when {limits.max_pending_batches} are).", value=w.pending)
        held = self.buffered()
        yield GaugeMetricFamily("ldp_collector_buffered_bytes", "Bytes of request bodies held by all requests at once, "
                                f"received and inflated, rounded up to whole MiB (429 above "
                                f"{limits.max_buffered_bytes}).", value=-(-held // BUFFERED_STEP) * BUFFERED_STEP)
        yield GaugeMetricFamily("ldp_collector_writer_healthy", "1 while the writer stores batches (/healthz answers "
                                "200), else 0.", value=int(w.healthy))
        health = w.health()
        state = GaugeMetricFamily("ldp_collector_writer_state", "The writer's state, as /healthz details it: 1 for the "
                                  "current one, 0 for the others (storage_error: uploads refused until a write "
                                  "works).", labels=["state"])
        for name in dict.fromkeys((*WRITER_STATES, health["status"])):
            state.add_metric([name], int(name == health["status"]))
        yield state
        since = health.get("error_since")
        yield GaugeMetricFamily("ldp_collector_writer_error_seconds", "Seconds since the writer's storage error began "
                                "(0 without one; /healthz gives the error to the [metrics] token).",
                                value=max(0.0, self.wall() - since) if since is not None else 0.0)
        yield GaugeMetricFamily("ldp_collector_writer_warning", "1 while the last background chore (closing a segment, "
                                "writing ingest.json) failed and is tried again, else 0.",
                                value=int(health.get("warning") is not None))
        yield from (age, poisoned, central_eps, central_held)
