"""The ingest service's ``GET /metrics``: Prometheus text format through ``prometheus-client``.

:class:`IngestMetrics` holds one registry per app instance (never the library's global one, so many apps can
live in one process). The request path does one counter increment (and, for an upload answered 200, one
histogram observation); the writer thread observes each group commit through ``SegmentWriter.on_commit``.
Everything else is read by :class:`StateCollector`: the writer's per-app counters (``AppStats``), its refusals,
queue and health, the bytes on disk (cached, see :class:`DiskUsage`) and the fold lag (from each app's
``estimates.json``). Labels are app names, reasons, routes, status codes and fixed parts: never a token, a report
line or a batch id.

**Nothing on the page times a batch** (issue 57). ``/metrics`` is open to scrapers by default, and on a quiet
service a counter read every few seconds would say when each batch came and, by its step, how big it was. So
every family that moves when a batch comes (the request and refusal counters, the upload and commit histograms, the
per-app counters, the last batch's time, the reports waiting for a fold, the bytes on disk) is *published* once per
interval (:func:`publish_seconds`: the fold period, or 60 s without folding): :meth:`IngestMetrics.publish` takes
them as they are at each boundary of the wall clock, and the page shows that copy until the next. A scraper sees
sums over whole intervals, no finer than the estimates move anyway. The last batch's time is moreover the start of
its interval (and, as stored, of its window). Live are only the gauges of a moment: the writer's state, the queue,
the bodies held (in whole MiB: :data:`BUFFERED_STEP`), the fold's age and flags, the connections and the process."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ldp._moved import renamed_attributes
from ldp.ingest.metrics_state import (
    BUFFERED_STEP,
    DISK_CACHE_SECONDS,
    DISK_PARTS,
    PUBLISH_SECONDS_UNFOLDED,
    WRITER_STATES,
    DiskUsage,
    StateCollector,
    publish_seconds,
)

if TYPE_CHECKING:
    from ldp.ingest.config import IngestConfig
    from ldp.ingest.http import ConnectionStats
    from ldp.ingest.segments import SegmentWriter

__all__ = ["IngestMetrics", "StateCollector", "ConnectionsCollector", "DiskUsage", "UPLOAD_BUCKETS",
           "COMMIT_BUCKETS", "DISK_PARTS", "DISK_CACHE_SECONDS", "WRITER_STATES", "publish_seconds",
           "PUBLISH_SECONDS_UNFOLDED", "BUFFERED_STEP"]

UPLOAD_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the upload latency histogram: 1 ms to 10 s (the default body timeout)."""
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the group commit histogram (write and fsync of a segment and a journal)."""
class ConnectionsCollector:
    """The server's connections (``ldp.ingest.http.ConnectionStats``, kept by the HTTP protocol): open now,
    accepted, and closed by each deadline, since the start."""

    def __init__(self, stats: ConnectionStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        s = self.stats.snapshot()  # the counts of one moment (the page renders on another thread)
        yield GaugeMetricFamily("ldp_collector_connections_open", "TCP connections open now (idle ones included).",
                                value=s.open)
        yield CounterMetricFamily("ldp_collector_connections_accepted", "TCP connections accepted since the start.",
                                  value=s.accepted)
        yield CounterMetricFamily("ldp_collector_connections_idle_closed", "Connections closed after "
                                  "idle_timeout_seconds without a byte while no request was in progress.",
                                  value=s.idle_closed)
        yield CounterMetricFamily("ldp_collector_connections_header_timeouts", "Connections closed because a "
                                  "request's headers were not complete within header_timeout_seconds.",
                                  value=s.header_timeouts)


class IngestMetrics:
    """The metrics of one ingest service app, in a registry of their own (:attr:`registry`, the page). :meth:`count` and
    :meth:`upload` run on the request path; :meth:`committed` is the writer's ``on_commit``.

    The families that move with uploads live in :attr:`moving`, which the page does not read: it shows the copy
    :meth:`publish` took at the last boundary of :attr:`interval` (``create_app`` runs :meth:`publish_every_interval`
    for as long as the app runs; a page asked for before any publication publishes first)."""

    def __init__(self, config: IngestConfig, writer: SegmentWriter, *, buffered: Callable[[], int] = lambda: 0,
                 disk_cache_seconds: float = DISK_CACHE_SECONDS, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, interval: float | None = None) -> None:
        self.registry = r = CollectorRegistry()
        self.moving = m = CollectorRegistry()
        self.interval = publish_seconds(config) if interval is None else float(interval)
        self.replica = config.replica
        self.requests = Counter("ldp_collector_requests", "HTTP requests answered, by route and status code.",
                                ["route", "status"], registry=m)
        self.upload_seconds = Histogram("ldp_collector_upload_duration_seconds", "Time from the start of an upload "
                                        "to its answer, for uploads answered 200 (stored, or a duplicate).",
                                        buckets=UPLOAD_BUCKETS, registry=m)
        self.commit_seconds = Histogram("ldp_collector_commit_duration_seconds", "Time the writer thread spent "
                                        "writing and fsyncing one group commit of an app (its segment and journal).",
                                        ["app"], buckets=COMMIT_BUCKETS, registry=m)
        self._requests: dict[tuple[str, int], Any] = {}
        self._commits = {app: self.commit_seconds.labels(app) for app in config.apps}
        self.state = StateCollector(config, writer, buffered, disk_cache_seconds=disk_cache_seconds, clock=clock,
                                    wall=wall, interval=self.interval)
        m.register(_Uploads(self.state))
        r.register(self.state)
        r.register(_Published(self))
        ProcessCollector(registry=r)
        self._published: list[Metric] | None = None
        self.published_index: int | None = None
        """The interval (``floor(wall / interval)``) of the last publication."""
        self._publishing = threading.Lock()
        previous: Callable[[str, int, float], None] | None = getattr(writer, "on_commit", None)
        if previous is None:
            writer.on_commit = self.committed
        else:
            def both(app: str, batches: int, seconds: float) -> None:
                previous(app, batches, seconds)
                self.committed(app, batches, seconds)

            writer.on_commit = both

    def watch_connections(self, stats: ConnectionStats) -> None:
        """Export the server's connection counters too (``ldp serve`` calls this once it made them); they are live:
        a connection is seen by anyone on the network path anyway."""
        self.registry.register(ConnectionsCollector(stats))

    def count(self, route: str, status: int) -> None:
        """One request answered (called on the event loop's thread only)."""
        child = self._requests.get((route, status))
        if child is None:
            child = self._requests[(route, status)] = self.requests.labels(route, str(status))
        child.inc()

    def upload(self, status: int, seconds: float) -> None:
        """One upload answered after ``seconds``."""
        self.count("/v1/reports", status)
        if status == 200:
            self.upload_seconds.observe(seconds)

    def committed(self, app: str, batches: int, seconds: float) -> None:
        """The writer committed ``batches`` of ``app`` in ``seconds`` (called on the writer thread)."""
        child = self._commits.get(app)
        (child if child is not None else self.commit_seconds.labels(app)).observe(seconds)

    def publish(self) -> None:
        """Copy the families of :attr:`moving` as they are now: the page shows them until the next publication (runs
        the disk measure: call it off the event loop)."""
        with self._publishing:
            index = int(self.state.wall() // self.interval)
            self._published = list(self.moving.collect())
            self.published_index = index

    def published(self) -> list[Metric]:
        """The families of the last publication (published now if there was none)."""
        families = self._published
        if families is None:
            self.publish()
            families = self._published
        assert families is not None
        return families

    async def publish_every_interval(self) -> None:
        """Publish at each boundary of :attr:`interval` on the wall clock, until cancelled; at most once per interval,
        so that two publications are never less than an interval apart (a wake-up a little early waits again)."""
        while True:
            wall = self.state.wall()
            await asyncio.sleep(max(0.05, (int(wall // self.interval) + 1) * self.interval - wall))
            index = int(self.state.wall() // self.interval)
            if self.published_index is None or index > self.published_index:
                await asyncio.to_thread(self.publish)

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The page and its content type (OpenMetrics when ``accept`` asks for it, else the text format); with a
        ``replica`` name in the config, every sample carries the label ``replica``."""
        encoder, content_type = choose_encoder(accept or "")
        source = self.registry if self.replica is None else _Labelled(self.registry, "replica", self.replica)
        return encoder(source), content_type


class _Uploads:
    """:meth:`StateCollector.uploads` as an ingest service of :attr:`IngestMetrics.moving`."""

    def __init__(self, state: StateCollector) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        return self.state.uploads()


class _Published:
    """The page's copy of the families that move with uploads (:meth:`IngestMetrics.published`)."""

    def __init__(self, metrics: IngestMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self.metrics.published()


class _Labelled:
    """A registry's metrics with one more label on every sample (what ``encoder(registry)`` reads: ``collect``); the
    families are copied (a published one is shown again at the next scrape)."""

    def __init__(self, registry: CollectorRegistry, name: str, value: str) -> None:
        self.registry, self.name, self.value = registry, name, value

    def collect(self) -> Iterator[Any]:
        for family in self.registry.collect():
            labelled = copy.copy(family)
            labelled.samples = [s._replace(labels={**s.labels, self.name: self.value}) for s in family.samples]
            yield labelled


# issue 83's renames, the old names kept for one more release
__getattr__ = renamed_attributes(__name__, {"CollectorMetrics": "IngestMetrics"})
