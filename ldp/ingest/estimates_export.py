"""Released estimates as metrics: Prometheus series on ``GET /metrics/estimates`` and, optionally, OTLP pushes.

Post-processing of what the dashboard shows (no privacy cost): per app and metric, the **latest released window**
of ``estimates.json`` (:mod:`ldp.ingest.watch`; a window the release thresholds withhold is never exported, and
neither is an item they withhold). One set of samples (:func:`estimate_samples`) feeds both exports:

=============================================  ======================  =============================================
series                                         labels                  value
=============================================  ======================  =============================================
``ldp_estimate``                               app, metric, item       the estimate (a count, a frequency, a mean)
``ldp_estimate_standard_error``                app, metric, item       its standard error
``ldp_estimate_lower``, ``ldp_estimate_upper`` app, metric, item       its interval at ``ldp_estimate_confidence``
``ldp_estimate_reports``                       app, metric             n, the window's reports
``ldp_estimate_confidence``                    app, metric             the intervals' level (0.95)
``ldp_estimate_central_epsilon``, ``_delta``   app, metric             the central guarantee the releases hold
``ldp_estimate_local_epsilon``                 app, metric             one report's ε on the device
``ldp_estimate_window_start_timestamp_seconds`` app, metric            the window's start (and ``_end_``)
``ldp_estimate_window_open``                   app, metric             1 while the window is still open
``ldp_estimate_items_withheld``                app, metric             items the release thresholds withheld
``ldp_estimate_items_omitted``                 app, metric             items beyond ``[export] max_items``
``ldp_estimate_metric_info``                   app, metric, protocol,  1
                                               kind, spec
``ldp_estimate_fold_timestamp_seconds``        app                     when the estimates were last folded
=============================================  ======================  =============================================

**Bounded cardinality.** Apps and metrics are the config's and the specs'; items are at most ``max_items`` per
metric (the largest estimates; the rest counted in ``ldp_estimate_items_omitted``). A metric name in two specs of
an app is exported once, from the later window. The OTLP push (:class:`OtlpPush`) sends the same samples as
gauges named with dots (``ldp.estimate``, ``ldp.estimate.standard_error``, ...), each data point stamped with the
fold's time and started at its window's start, through the OpenTelemetry SDK's own OTLP/HTTP exporter (the ``otel``
extra), which reads its headers from ``OTEL_EXPORTER_OTLP_METRICS_HEADERS`` as every OpenTelemetry exporter does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["Sample", "estimate_samples", "prometheus_families", "EstimatesCollector", "OtlpPush", "FAMILIES",
           "metrics_data", "otlp_name", "DEFAULT_MAX_ITEMS", "MAX_ITEMS"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_ITEMS = 100
"""Items exported per metric by default (``[export] max_items``)."""
MAX_ITEMS = 10_000
"""The most ``[export] max_items`` may be: a dashboard reads no more, and a scrape stays small."""
FAMILIES: Mapping[str, str] = {
    "ldp_estimate": "The latest released window's estimate of each item (a count, a frequency or a mean).",
    "ldp_estimate_standard_error": "The standard error of ldp_estimate.",
    "ldp_estimate_lower": "The lower bound of ldp_estimate's interval at ldp_estimate_confidence.",
    "ldp_estimate_upper": "The upper bound of ldp_estimate's interval at ldp_estimate_confidence.",
    "ldp_estimate_reports": "The reports (n) the latest released window's estimates are of.",
    "ldp_estimate_confidence": "The confidence level of ldp_estimate_lower and ldp_estimate_upper.",
    "ldp_estimate_central_epsilon": "The central epsilon the released windows of the metric hold against the analyst.",
    "ldp_estimate_central_delta": "The central delta beside ldp_estimate_central_epsilon.",
    "ldp_estimate_local_epsilon": "The epsilon of one report on the device (the local guarantee).",
    "ldp_estimate_window_start_timestamp_seconds": "The start of the window the estimates are of (Unix seconds).",
    "ldp_estimate_window_end_timestamp_seconds": "The end of the window the estimates are of (Unix seconds).",
    "ldp_estimate_window_open": "1 while the window is still open (its estimates move as reports come), else 0.",
    "ldp_estimate_items_withheld": "Items of the window the release thresholds withheld (not exported).",
    "ldp_estimate_items_omitted": "Released items not exported, beyond [export] max_items (the smallest estimates).",
    "ldp_estimate_metric_info": "The metric's protocol, kind of estimate and spec (value 1).",
    "ldp_estimate_fold_timestamp_seconds": "When the app's estimates were last folded (Unix seconds).",
}
"""Every exported family and its help text."""


@dataclass(frozen=True)
class Sample:
    """One value of a family: its labels, and (for the OTLP push) its window's start."""

    family: str
    labels: Mapping[str, str]
    value: float
    start: float | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    """More labels of an info family."""


def _seconds(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _dict(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _released_window(m: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The metric's latest window whose estimates were released (``None``: none): a damaged entry is none."""
    for w in reversed(_list(m.get("windows"))):
        if not isinstance(w, Mapping) or isinstance(w.get("window"), bool) or not isinstance(w.get("window"), int):
            continue
        if w.get("error") is None and _dict(w.get("release")).get("released") is True and _list(w.get("rows")):
            return w
    return None


def _order(w: Mapping[str, Any]) -> tuple[int, float]:
    return int(w["window"]), _number(w.get("n")) or 0.0


def estimate_samples(docs: Mapping[str, Mapping[str, Any] | None], max_items: int = DEFAULT_MAX_ITEMS
                     ) -> list[Sample]:
    """The samples of every app's ``estimates.json`` (``None``: not folded yet, exported as nothing)."""
    out: list[Sample] = []
    for app, doc in sorted(docs.items()):
        if not isinstance(doc, Mapping):
            continue
        folded = _seconds(doc.get("folded_at"))
        if folded is not None:
            out.append(Sample("ldp_estimate_fold_timestamp_seconds", {"app": app}, folded))
        chosen: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        for m in _list(doc.get("metrics")):
            w = _released_window(m) if isinstance(m, Mapping) else None
            name = m.get("metric") if w is not None else None
            if w is None or not isinstance(name, str):
                continue
            if name not in chosen or _order(w) > _order(chosen[name][1]):
                chosen[name] = (m, w)
        for name, (m, w) in sorted(chosen.items()):
            out.extend(_metric_samples(app, name, m, w, max_items))
    return out


def _metric_samples(app: str, name: str, m: Mapping[str, Any], w: Mapping[str, Any], max_items: int
                    ) -> Iterator[Sample]:
    labels = {"app": app, "metric": name}
    start, end = _seconds(w.get("start")), _seconds(w.get("end"))
    yield Sample("ldp_estimate_metric_info", labels, 1.0, start,
                 {"protocol": str(m.get("protocol", "")), "kind": str(w.get("kind", m.get("kind", ""))),
                  "spec": str(m.get("spec", ""))})
    rows = [r for r in _list(w.get("rows")) if isinstance(r, Mapping) and _number(r.get("estimate")) is not None]
    kept = sorted(sorted(range(len(rows)), key=lambda i: -float(rows[i]["estimate"]))[:max_items])
    for i in kept:
        row, item = rows[i], {**labels, "item": str(rows[i].get("item"))}
        for family, key in (("ldp_estimate", "estimate"), ("ldp_estimate_standard_error", "std_error"),
                            ("ldp_estimate_lower", "ci_low"), ("ldp_estimate_upper", "ci_high")):
            if (v := _number(row.get(key))) is not None:
                yield Sample(family, item, v, start)
    central = _dict(m.get("central"))
    privacy = _dict(_dict(m.get("privacy")).get("per_report"))
    per_metric = (("ldp_estimate_reports", w.get("n")), ("ldp_estimate_confidence", w.get("confidence")),
                  ("ldp_estimate_central_epsilon", central.get("epsilon")),
                  ("ldp_estimate_central_delta", central.get("delta")),
                  ("ldp_estimate_local_epsilon", privacy.get("epsilon")),
                  ("ldp_estimate_window_start_timestamp_seconds", start),
                  ("ldp_estimate_window_end_timestamp_seconds", end),
                  ("ldp_estimate_window_open", 1.0 if w.get("open") else 0.0),
                  ("ldp_estimate_items_withheld", _dict(w.get("release")).get("withheld_items", 0)),
                  ("ldp_estimate_items_omitted", len(rows) - len(kept)))
    for family, value in per_metric:
        if (v := _number(value)) is not None:
            yield Sample(family, labels, v, start)


def prometheus_families(samples: list[Sample]) -> list[Any]:
    """The samples as ``prometheus_client`` metric families (gauges, and the info family)."""
    from prometheus_client.metrics_core import GaugeMetricFamily, InfoMetricFamily

    families: dict[str, Any] = {}
    for s in samples:
        keys = list(s.labels)
        if s.family == "ldp_estimate_metric_info":
            fam = families.get(s.family)
            if fam is None:
                fam = families[s.family] = InfoMetricFamily("ldp_estimate_metric", FAMILIES[s.family],
                                                            labels=keys)
            fam.add_metric(list(s.labels.values()), dict(s.extra))
            continue
        fam = families.get(s.family)
        if fam is None:
            fam = families[s.family] = GaugeMetricFamily(s.family, FAMILIES[s.family], labels=keys)
        fam.add_metric(list(s.labels.values()), s.value)
    return [families[f] for f in FAMILIES if f in families]


class EstimatesCollector:
    """A ``prometheus_client`` collector of the released estimates: each scrape reads ``load()`` (every app's
    ``estimates.json``, as :func:`ldp.ingest.dashboard.load_state` gives them)."""

    def __init__(self, load: Any, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.load, self.max_items = load, max_items

    def collect(self) -> Iterator[Any]:
        yield from prometheus_families(estimate_samples(self.load(), self.max_items))


class OtlpPush:
    """Pushes the samples as OTLP metrics to ``endpoint`` (``http(s)://host:4318/v1/metrics``) with the OpenTelemetry
    SDK's OTLP/HTTP exporter; :meth:`push` sends an app's estimates when its fold time changed since the last push
    (the watcher calls it after each fold)."""

    def __init__(self, endpoint: str, *, max_items: int = DEFAULT_MAX_ITEMS, timeout: float = 10.0,
                 exporter: Any = None) -> None:
        if exporter is None:
            try:
                from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            except ImportError:
                from ldp.extras import install_hint

                raise ImportError("[export] otlp_endpoint needs the OTLP exporter: "
                                  f"{install_hint('opentelemetry-exporter-otlp-proto-http', 'otel')}") from None
            exporter = OTLPMetricExporter(endpoint=endpoint, timeout=timeout)
        self.endpoint, self.max_items, self.exporter = endpoint, max_items, exporter
        self.pushed: dict[str, Any] = {}
        """Each app's ``folded_at`` last pushed."""
        self.failures = 0

    def push(self, docs: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """Push the apps whose estimates changed (all of their samples); ``True`` when something was sent."""
        fresh = {app: doc for app, doc in docs.items()
                 if doc is not None and self.pushed.get(app) != doc.get("folded_at")}
        samples = estimate_samples(fresh, self.max_items)
        if not samples:
            return False
        from opentelemetry.sdk.metrics.export import MetricExportResult

        result = self.exporter.export(metrics_data(samples))
        if result != MetricExportResult.SUCCESS:
            self.failures += 1
            logger.warning("OTLP push of the estimates to %s failed (retried after the next fold)", self.endpoint)
            return False
        for app, doc in fresh.items():
            self.pushed[app] = doc.get("folded_at")
        return True

    def shutdown(self) -> None:
        self.exporter.shutdown()


def otlp_name(family: str) -> str:
    """``ldp_estimate_standard_error`` -> ``ldp.estimate.standard_error`` (OpenTelemetry's dotted namespaces; the
    unit goes to the metric's ``unit``)."""
    base = family.removesuffix("_timestamp_seconds").removesuffix("_info")
    head, _, rest = base.partition("_estimate")
    return f"{head}.estimate" + (f".{rest.lstrip('_')}" if rest else "")


def metrics_data(samples: list[Sample], now_ns: int | None = None) -> Any:
    """The samples as the SDK's ``MetricsData``: one gauge per family, a data point per sample."""
    import time

    from opentelemetry.sdk.metrics.export import (
        Gauge,
        Metric,
        MetricsData,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from ldp import __version__

    now = time.time_ns() if now_ns is None else now_ns
    by_family: dict[str, list[NumberDataPoint]] = {}
    for s in samples:
        attributes = {**s.labels, **s.extra}
        start = int(s.start * 1e9) if s.start is not None else now
        by_family.setdefault(s.family, []).append(NumberDataPoint(attributes=attributes,
                                                                  start_time_unix_nano=min(start, now),
                                                                  time_unix_nano=now, value=s.value))
    metrics = [Metric(name=otlp_name(f), description=FAMILIES[f], unit="s" if f.endswith("_seconds") else "1",
                      data=Gauge(data_points=points)) for f, points in by_family.items()]
    scope = ScopeMetrics(scope=InstrumentationScope("ldp.ingest", __version__), metrics=metrics, schema_url="")
    resource = Resource.create({"service.name": "ldp-collector"})
    return MetricsData(resource_metrics=[ResourceMetrics(resource=resource, scope_metrics=[scope], schema_url="")])
