"""A privatizing ``MetricReader`` for the OpenTelemetry Python SDK: what an app measures with plain OpenTelemetry
code leaves the device only as locally private reports of the instruments its spec declares.

Added to an existing setup in one line::

    provider = MeterProvider(metric_readers=[
        PeriodicExportingMetricReader(OTLPMetricExporter()),              # the app's own, if any
        PrivatizingMetricReader("collection.json", "telemetry.db", url=URL, token=TOKEN),  # this line
    ])

**Where it makes sense.** OpenTelemetry aggregates per process; local privacy needs one report per person per
window. So the reader is for apps where one process is one person: mobile, desktop and command-line apps, a
browser tab (``clients/typescript``'s reader). On a server that serves many people it would report the server.

**What it does.** Every instrument the spec does not declare (:mod:`ldp.spec.otel`: a metric's ``otel`` key) is
dropped inside the SDK: this reader asks for the drop aggregation for it, so its measurements are not even added
up for this reader (the app's other readers are not affected). A declared instrument of another kind than the
spec says is dropped too, and named in :attr:`PrivatizingMetricReader.misfits` and the log. The declared ones are
collected with delta temporality every ``collect_seconds`` and at each window's end, and added to the window's tally
(:class:`~ldp.otel.window.WindowTally`). When the spec's window ends, each metric's value of the window is
recorded through :class:`ldp.client.TelemetryClient`: validated, charged to the device's budget ledger at the
metric's per-report cost, randomized, and queued; the queue is uploaded to ``url`` when the spec's upload interval
allows. A window's reports carry that window (the client's clock is set to the window's last millisecond while they
are recorded; the ledger never reopens a window it has moved past, so a report is never charged to an earlier
window than any charge before it).

**Stopping mid-window.** The tally is saved next to the state file (``<state>.otel.json``, mode 0600, replaced
atomically; not fsynced: a power cut loses a part of a window, unreported and uncharged) at each collection, so a
process that stops mid-window continues it at its next start, and a window that ended while nothing ran is
reported at that start (a command-line app's day of runs is one report).
``report_on_shutdown=True`` instead reports the window at shutdown and drops the rest of it (for a process that
runs once per window). A window that ends is saved as over before its reports are recorded: a process killed
then loses them, and never sends a window twice; one killed between a charge and its report loses the report, never
the charge (:mod:`ldp.client.runtime`). Uploads are tried at each collection when the interval allows.

**Budget.** Each window costs at most the sum of the declared metrics' charges for one report
(:meth:`~ldp.spec.CollectionSpec.report_charge`); a metric whose budget is spent is skipped for the window (logged),
never reported twice. Needs the ``otel`` extra (``opentelemetry-sdk``).

**Two-aggregator metrics** (``trust`` ``two-aggregator`` or ``two-aggregator+local``, docs/two-aggregators.md): the
reader is given each declared one's task file (``tasks={metric: path, document or Task}``), which it hands to the
client, and is refused at construction without it. The window's value is the one the table of
:mod:`ldp.spec.otel` gives, a boolean or a category index: the protocol's value, which the client turns into the
task's Prio3 measurement (:mod:`ldp.client.dap`), charges and queues as a DAP report line. ``upload`` with ``url``
and ``token`` sends these reports to their tasks' leaders first; without them, a reader given tasks still sends
them (``TelemetryClient.upload()`` without an ingest service, which sends nothing while a report for the ingest
service waits in the state file: give ``url`` and ``token`` when the reader also reports local metrics).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ldp.errors import BudgetExceeded, OptedOutError, OutboxFull, Refusal
from ldp.otel.endpoint import check_ingest_url, shown_url, upload_failure
from ldp.otel.window import MIN_COLLECT_SECONDS, Declared, WindowTally, next_collection_in
from ldp.otel.worker import ClientThread
from ldp.spec import CollectionSpec
from ldp.spec.otel import value_class

try:
    from opentelemetry.sdk.metrics import (
        Counter,
        Histogram,
        ObservableCounter,
        ObservableGauge,
        ObservableUpDownCounter,
        UpDownCounter,
        _Gauge,  # the synchronous gauge's class (public in the API, not in the SDK), the key the reader maps
    )
    from opentelemetry.sdk.metrics.export import (
        AggregationTemporality,
        Gauge,
        Histogram as HistogramData,
        MetricReader,
        MetricsData,
        Sum,
    )
    from opentelemetry.sdk.metrics.view import (
        Aggregation,
        DefaultAggregation,
        DropAggregation,
        ExplicitBucketHistogramAggregation,
    )
except ImportError:  # pragma: no cover - the extra is missing
    from ldp.extras import install_hint

    raise ImportError(f"ldp.otel needs the OpenTelemetry SDK: {install_hint('opentelemetry-sdk', 'otel')}") from None

__all__ = ["PrivatizingMetricReader", "declared_metrics", "check_tasks", "DEFAULT_COLLECT_SECONDS"]

logger = logging.getLogger(__name__)
"""Events and counts only (windows reported, instruments dropped as misfits): never a value or a report."""

DEFAULT_COLLECT_SECONDS = 60.0
"""How often the reader collects by default: the tally on disk is at most this old."""
_SYNC_CLASSES: Mapping[str, tuple[type, ...]] = {
    "counter": (Counter, ObservableCounter), "updown_counter": (UpDownCounter, ObservableUpDownCounter),
    "histogram": (Histogram,), "gauge": (_Gauge, ObservableGauge)}
"""The SDK's instrument classes of each kind a mapping names."""
_ALL_CLASSES = (Counter, UpDownCounter, Histogram, _Gauge, ObservableCounter, ObservableUpDownCounter, ObservableGauge)
"""Every instrument class, as ``MetricReader`` keys its preferences (a synchronous gauge left out would keep the
SDK's cumulative temporality: its last ``set`` repeated in every later window)."""


def declared_metrics(spec: CollectionSpec, instruments: Sequence[str] | None = None) -> dict[str, list[Declared]]:
    """The metrics each declared instrument feeds, by its name in lowercase. ``instruments``: the names the app
    means to privatize (``None``: every instrument the spec declares); ``ValueError`` naming each one the spec does
    not declare, and when nothing at all is declared."""
    out: dict[str, list[Declared]] = {}
    for name, m in sorted(spec.metrics.items()):
        if m.otel is not None:
            cls = value_class(m.params)
            assert cls is not None  # the spec refuses an otel key on a protocol without a class
            out.setdefault(m.otel.key, []).append(Declared(name, m.otel, cls, m.otel.categories(m.params)
                                                           if cls == "category" else None))
    if instruments is not None:
        missing = sorted({i for i in instruments if i.lower() not in out})
        if missing:
            raise ValueError(f"no metric of spec {spec.name!r} declares instrument(s) {', '.join(missing)}: add an "
                             "\"otel\" key naming each to the metric it feeds (docs/opentelemetry.md)")
        out = {k: v for k, v in out.items() if k in {i.lower() for i in instruments}}
    if not out:
        raise ValueError(f"spec {spec.name!r} declares no OpenTelemetry instrument: give a metric an \"otel\" key "
                         "(docs/opentelemetry.md)")
    return out


def check_tasks(spec: CollectionSpec, declared: Mapping[str, Sequence[Declared]],
                tasks: Mapping[str, Any] | None) -> None:
    """``ValueError`` naming each ``declared`` metric collected in the two-aggregator mode that ``tasks`` holds no
    task for: its reports are sealed to its task's aggregators, so without it each window of it would be refused
    (``trust_model``), charged nothing and never sent. (The client checks each task given against the spec.)"""
    missing = sorted(d.metric for ds in declared.values() for d in ds
                     if spec.metric(d.metric).trust.startswith("two-aggregator") and d.metric not in (tasks or {}))
    if missing:
        named = ", ".join(f"{m!r} (trust {spec.metric(m).trust!r})" for m in missing)
        raise ValueError(f"spec {spec.name!r} collects {named} in the two-aggregator mode, and no task was given "
                         f"for it: PrivatizingMetricReader(..., tasks={{{missing[0]!r}: '{missing[0]}.task.json'}}), "
                         "the file `ldp collect task --leader-config ... --helper-config ...` wrote "
                         "(docs/two-aggregators.md)")


def _kind_of(instrument: Any) -> str | None:
    for kind, classes in _SYNC_CLASSES.items():
        if isinstance(instrument, classes):
            return kind
    return None


class _SpecAggregation(Aggregation):
    """The reader's aggregation for every instrument class: the drop aggregation for an instrument the spec does
    not declare (or declares as another kind), the SDK's default for a declared one, with the spec's bucket bounds
    (all of them, merged) for a histogram mapped to buckets."""

    def __init__(self, reader: PrivatizingMetricReader) -> None:
        self.reader = reader

    def _create_aggregation(self, instrument: Any, attributes: Any, reservoir_factory: Any,
                            start_time_unix_nano: int) -> Any:
        declared = self.reader.declared.get(instrument.name.lower())
        kind = _kind_of(instrument)
        if declared is None or any(d.source.kind != kind for d in declared):
            if declared is not None:
                self.reader._misfit(instrument.name, f"declared as a {declared[0].source.kind}, measured by a "
                                                     f"{kind or type(instrument).__name__}")
            return DropAggregation()._create_aggregation(instrument, attributes, reservoir_factory,
                                                         start_time_unix_nano)
        bounds = sorted({b for d in declared for b in (d.source.buckets or ())})
        how: Aggregation = ExplicitBucketHistogramAggregation(bounds) if bounds else DefaultAggregation()
        return how._create_aggregation(instrument, attributes, reservoir_factory, start_time_unix_nano)


class PrivatizingMetricReader(MetricReader):
    """A ``MetricReader`` that turns each window of the instruments ``spec`` declares into one locally private
    report per metric, recorded and uploaded by :class:`ldp.client.TelemetryClient` (the module says how).

    ``spec``: a :class:`~ldp.spec.CollectionSpec` or its path; ``state_path``: the client's state file (one per
    device); ``url``: the ingest service's upload endpoint, ``https://<host>/v1/reports`` (the path ``ldp serve``
    takes reports on, after any prefix a proxy adds; a list: replicas, as :meth:`~ldp.client.TelemetryClient.upload`
    takes), refused when it is not one (:func:`~ldp.otel.endpoint.check_ingest_url`: the service's base URL is
    refused); ``token``: the app's upload token (both ``None``: record only, the app uploads with its own
    :class:`~ldp.client.TelemetryClient`); an upload that fails is logged (``ldp.otel.reader``, a warning with the
    HTTP status and the URL) and tried again at the next collection; ``instruments``: the instrument names the
    app means to privatize, each checked against the spec now (``None``: all the spec declares).
    ``collect_seconds``: how often to collect (0: only on ``force_flush`` and shutdown); ``report_on_shutdown``:
    report the window at shutdown (see the module). ``clock``, ``rng`` and ``simulation`` go to the client (tests
    and simulations); ``upload_options`` to :meth:`~ldp.client.TelemetryClient.upload`. ``tasks``: the task of each
    two-aggregator metric (the client's ``tasks``: per metric, its task file's path, its parsed document or a
    :class:`~ldp.aggregators.task.Task`).

    Refused at construction, with a :class:`ValueError` that says why: a spec that declares none of the
    instruments (or not one named in ``instruments``), a bad period, a ``url`` that is not an upload endpoint (or
    ``url`` without ``token``, or the reverse), a declared two-aggregator metric without its
    task (or a task that is not the metric's under the spec). The spec itself refuses a mapping whose window value
    its protocol cannot encode (:class:`~ldp.errors.SpecError`)."""

    def __init__(self, spec: CollectionSpec | str | os.PathLike[str], state_path: str | os.PathLike[str], *,
                 url: str | Sequence[str] | None = None, token: str | None = None,
                 instruments: Sequence[str] | None = None, collect_seconds: float = DEFAULT_COLLECT_SECONDS,
                 report_on_shutdown: bool = False, clock: Callable[[], float] = time.time, rng: Any = None,
                 simulation: bool = False, upload_options: Mapping[str, Any] | None = None,
                 tasks: Mapping[str, Any] | None = None) -> None:
        self.spec = spec if isinstance(spec, CollectionSpec) else CollectionSpec.load(spec)
        self.declared = declared_metrics(self.spec, instruments)
        check_tasks(self.spec, self.declared, tasks)
        if isinstance(collect_seconds, bool) or not isinstance(collect_seconds, (int, float)) or not (
                collect_seconds == 0 or MIN_COLLECT_SECONDS <= collect_seconds < float("inf")):
            raise ValueError(f"collect_seconds must be 0 or a number of seconds >= {MIN_COLLECT_SECONDS}, "
                             f"got {collect_seconds!r}")
        if (url is None) != (token is None):
            raise ValueError("give url and token together (or neither, to record only)")
        if url is not None:
            check_ingest_url(url)
        self.state_path = Path(state_path)
        self.tally_path = self.state_path.with_name(self.state_path.name + ".otel.json")
        self.url, self.token = url, token
        self._dap = bool(tasks)
        self.report_on_shutdown = bool(report_on_shutdown)
        self.upload_options = dict(upload_options or {})
        self._misfit_keys: set[str] = set()
        self.misfits: dict[str, str] = {}
        """Instruments dropped because they do not fit their declaration: name -> why."""
        self.reported: list[tuple[int, dict[str, str]]] = []
        """Per window reported: its index and, per metric, ``"recorded"`` or why not (``budget``, ``refused``)."""
        self._clock = clock
        self._backdate: float | None = None
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._worker = ClientThread()  # owns the client
        from ldp.client import TelemetryClient

        def client_clock() -> float:
            return self._backdate if self._backdate is not None else clock()

        try:
            self._client = self._worker.submit(TelemetryClient, self.spec, self.state_path, clock=client_clock,
                                               rng=rng, simulation=simulation, tasks=tasks).result()
        except BaseException:  # e.g. a task that is not its metric's: no thread is left behind
            self._worker.stop()
            raise
        self._all = [d for ds in self.declared.values() for d in ds]
        self._tally = self._load_tally()
        aggregation = _SpecAggregation(self)
        super().__init__(preferred_temporality={c: AggregationTemporality.DELTA for c in _ALL_CLASSES},
                         preferred_aggregation={c: aggregation for c in _ALL_CLASSES})
        self._roll(self._window())  # a window that ended while nothing ran is reported now
        self._timer: threading.Thread | None = None
        if collect_seconds:
            self._timer = threading.Thread(target=self._every, args=(float(collect_seconds),), daemon=True,
                                           name="ldp-otel-collect")
            self._timer.start()

    # -- the SDK's side -----------------------------------------------------------------------------------------
    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        with self._lock:
            for rm in metrics_data.resource_metrics if metrics_data is not None else ():
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        self._add(metric)
            self._save_tally()

    def _add(self, metric: Any) -> None:
        declared = self.declared.get(metric.name.lower())
        if declared is None:
            return  # an app's own view may aggregate an undeclared instrument: dropped here all the same
        data = metric.data
        kind = ("histogram" if isinstance(data, HistogramData) else "gauge" if isinstance(data, Gauge) else
                ("counter" if data.is_monotonic else "updown_counter") if isinstance(data, Sum) else None)
        if kind is None or any(d.source.kind != kind for d in declared):
            self._misfit(metric.name, f"declared as a {declared[0].source.kind}, collected as "
                                      f"{kind or type(data).__name__}")
            return
        for d in declared:
            self._tally.add(d, kind, data.data_points)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Collect now (and report a window that has ended)."""
        self._tick(timeout_millis)
        return True

    def _tick(self, timeout_millis: float = 10_000) -> None:
        """Collect into the current window's tally, then report it if its window has ended (what was measured
        since the last collection counts in the window it began in); upload what waits when the interval allows
        (a failed upload is tried again at the next collection)."""
        self.collect(timeout_millis=timeout_millis)
        with self._lock:
            self._roll(self._window())
        self._worker.submit(self._upload).result()

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Collect a last time, report the window if ``report_on_shutdown``, save the tally, close the client."""
        if self._done.is_set():
            return
        self._done.set()
        try:
            self._tick(timeout_millis)
            if self.report_on_shutdown:
                self.close_window()
        finally:
            if self._timer is not None:
                self._timer.join(timeout=max(timeout_millis / 1000, 0.1))
            self._worker.submit(self._client.close).result()
            self._worker.stop()

    # -- what the device holds ------------------------------------------------------------------------------------
    def pending(self) -> list[str]:
        """The report lines waiting for upload: each two-aggregator report's line first
        (:func:`ldp.client.dap.dap_line`: its task ID and the sealed DAP report its leader gets), then the next batch
        for the ingest service (the exact bytes that will leave the device, one envelope each)."""
        def lines() -> list[str]:
            dap = [line for _, _, line in self._client._outbox.dap_pending(1 << 62)]  # all of them
            return dap + [item.line for item in self._client.pending()]

        return self._worker.submit(lines).result()

    def spent(self, metric: str | None = None, period: str = "window") -> Any:
        """What the device's ledger has charged (:meth:`ldp.client.TelemetryClient.spent`: one ``metric`` or all,
        this ``"window"`` or the ``"lifetime"``)."""
        return self._worker.submit(self._client.spent, metric, period).result()

    # -- windows -----------------------------------------------------------------------------------------------
    def close_window(self) -> dict[str, str]:
        """Report the current window now and drop the rest of it (what it measures later is not reported): for a
        process that runs once per window. Returns what :attr:`reported` records for it."""
        self._tick()
        with self._lock:
            if self._tally.closed:
                return {}
            ended, self._tally = self._tally, WindowTally(self._tally.window, closed=True)
            self._save_tally()  # first: a crash from here on loses the window's reports, never sends them twice
            return self._report(ended, backdate=False)

    def _window(self) -> int:
        return int(self._clock() // self.spec.window_seconds)

    def _roll(self, now: int) -> None:
        """Report the tally's window if ``now`` is a later one, and start a tally of ``now``."""
        if self._tally.window < now:
            ended, self._tally = self._tally, WindowTally(now)
            self._save_tally()  # first: a crash from here on loses the window's reports, never sends them twice
            if not ended.closed:
                self._report(ended, backdate=True)

    def _report(self, tally: WindowTally, *, backdate: bool) -> dict[str, str]:
        """Record each declared metric's value of ``tally``'s window, then upload if due (on the client's thread)."""
        values = tally.values([d for d in self._all if d.source.key not in self._misfit_keys])
        last_ms = (tally.window + 1) * self.spec.window_seconds - 0.001
        outcome = self._worker.submit(self._record, values, last_ms if backdate else None).result()
        self.reported.append((tally.window, outcome))
        logger.info("window %d: %d metric(s) recorded, %d skipped, %d point(s) unfit", tally.window,
                    sum(v == "recorded" for v in outcome.values()),
                    sum(v != "recorded" for v in outcome.values()), tally.unfit)
        return outcome

    def _record(self, values: Mapping[str, Any], at: float | None) -> dict[str, str]:
        outcome: dict[str, str] = {}
        self._backdate = at
        try:
            for metric, value in sorted(values.items()):
                try:
                    self._client.record(metric, value)
                    outcome[metric] = "recorded"
                except BudgetExceeded:
                    outcome[metric] = "budget"
                except OptedOutError:
                    outcome[metric] = "opted out"
                except OutboxFull:
                    outcome[metric] = "outbox full"
                except Refusal as exc:  # e.g. a string an SFP alphabet does not hold: nothing charged
                    outcome[metric] = f"refused: {getattr(exc, 'code', 'value')}"
        finally:
            self._backdate = None
        self._upload()
        return outcome

    def _upload(self) -> None:
        """Upload when reports wait and the interval allows: to ``url`` (the two-aggregator reports first, to their
        leaders), or without ``url`` the two-aggregator reports only, when the reader was given tasks."""
        if (self.url is None and not self._dap) or not self._client.has_pending():
            return
        if self._client.next_upload_at() > self._clock():
            return
        try:
            self._client.upload(self.url, self.token, **self.upload_options)
        except Exception as exc:  # noqa: BLE001 - the reports stay in the outbox for the next try
            urls = [self.url] if isinstance(self.url, str) else self.url
            where = ", ".join(map(shown_url, urls)) if urls is not None else "the tasks' leaders"
            logger.warning("upload to %s failed: %s; the reports stay queued", where, upload_failure(exc))

    def _every(self, seconds: float) -> None:
        """Collect every ``seconds``, and at each window's end (:func:`~ldp.otel.window.next_collection_in`)."""
        while not self._done.wait(next_collection_in(self._clock(), self.spec.window_seconds, seconds)):
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - a collection failing must not stop the next
                logger.exception("collection failed")

    def _misfit(self, name: str, why: str) -> None:
        """Drop instrument ``name`` (its metrics are not reported while it does not fit)."""
        self._misfit_keys.add(name.lower())
        if name not in self.misfits:
            self.misfits[name] = why
            logger.error("instrument %s dropped: %s (fix the app or the spec's otel key)", name, why)

    # -- the tally on disk --------------------------------------------------------------------------------------
    def _load_tally(self) -> WindowTally:
        try:
            doc = json.loads(self.tally_path.read_text(encoding="utf-8"))
            if doc.get("spec") != self.spec.fingerprint:
                raise ValueError("another spec's tally")
            return WindowTally.from_json(doc)
        except FileNotFoundError:
            return WindowTally(self._window())
        except (ValueError, AttributeError) as exc:
            logger.warning("%s set aside (%s): starting the window anew", self.tally_path, exc)
            self.tally_path.replace(self.tally_path.with_name(self.tally_path.name + ".bad"))
            return WindowTally(self._window())

    def _save_tally(self) -> None:
        doc = {**self._tally.to_json(), "spec": self.spec.fingerprint}
        tmp = self.tally_path.with_name(self.tally_path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:  # no fsync: a tally lost with the power is a part of a
            json.dump(doc, f)                             # window unreported (nothing charged), never a wrong one
        os.replace(tmp, self.tally_path)
