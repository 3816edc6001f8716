/**
 * What the OpenTelemetry SDK is told, and asked, about a spec's instruments (`reader.ts` says how they are used): the
 * metrics each declared instrument feeds, the aggregation of each instrument type (the drop aggregation for a type no
 * declared metric uses), and the kind of instrument a collected metric's data says it came from.
 */
import { AggregationType, DataPointType, InstrumentType } from "@opentelemetry/sdk-metrics";
import type { AggregationOption, MetricData } from "@opentelemetry/sdk-metrics";
import type { TwoAggregatorMetrics } from "../dap-hooks.js";
import type { CollectionSpec } from "../spec.js";
import type { OtelKind } from "../spec-metric.js";
import { otelCategories, otelValueClass } from "../spec-otel.js";
import type { Declared } from "./window.js";

/** The metric kind each SDK instrument type aggregates as (the observable ones as their synchronous kin). */
const KIND_OF_TYPE: Readonly<Record<string, OtelKind>> = {
  [InstrumentType.COUNTER]: "counter", [InstrumentType.OBSERVABLE_COUNTER]: "counter",
  [InstrumentType.UP_DOWN_COUNTER]: "updown_counter", [InstrumentType.OBSERVABLE_UP_DOWN_COUNTER]: "updown_counter",
  [InstrumentType.HISTOGRAM]: "histogram", [InstrumentType.GAUGE]: "gauge", [InstrumentType.OBSERVABLE_GAUGE]: "gauge",
};

/**
 * The metrics each declared instrument feeds, by its name in lowercase (each list in the metrics' order).
 * `instruments`: the names the app means to privatize (default: every instrument the spec declares). A `RangeError`
 * naming each one the spec does not declare, and when nothing at all is declared.
 */
export function declaredMetrics(spec: CollectionSpec, instruments?: readonly string[]): Map<string, Declared[]> {
  let out = new Map<string, Declared[]>();
  for (const name of [...spec.metrics.keys()].sort()) {
    const m = spec.metric(name), source = m.otel;
    if (source === undefined) continue;
    const valueClass = otelValueClass(m.params);
    if (valueClass === undefined) continue; // the spec refuses an otel key on a protocol without a class
    const key = source.instrument.toLowerCase();
    const list = out.get(key) ?? [];
    list.push({ metric: name, source, valueClass,
      categories: valueClass === "category" ? otelCategories(source, m.params) : null });
    out.set(key, list);
  }
  if (instruments !== undefined) {
    const missing = [...new Set(instruments.filter((i) => !out.has(String(i).toLowerCase())))].sort();
    if (missing.length) {
      throw new RangeError(`no metric of spec ${JSON.stringify(spec.name)} declares instrument(s) ${missing.join(", ")}: ` +
        'add an "otel" key naming each to the metric it feeds (docs/opentelemetry.md)');
    }
    const wanted = new Set(instruments.map((i) => i.toLowerCase()));
    out = new Map([...out].filter(([k]) => wanted.has(k)));
  }
  if (out.size === 0) {
    throw new RangeError(`spec ${JSON.stringify(spec.name)} declares no OpenTelemetry instrument: give a metric an ` +
      '"otel" key (docs/opentelemetry.md)');
  }
  return out;
}

/**
 * A `RangeError` naming each `declared` metric collected in the two-aggregator mode (`trust` `two-aggregator` or
 * `two-aggregator+local`) that `twoAggregator` (`ClientOptions.twoAggregator`) holds no task for: its reports are
 * sealed to its task's aggregators, so without one each window of it would be refused (`trust_model`), charged
 * nothing and never sent. (`twoAggregatorMetrics` of `ldp-telemetry-client/dap` checks each task against the spec.)
 */
export function checkTasks(spec: CollectionSpec, declared: ReadonlyMap<string, readonly Declared[]>,
  twoAggregator: TwoAggregatorMetrics | undefined): void {
  const missing = [...declared.values()].flat().map((d) => d.metric)
    .filter((m) => spec.metric(m).trust.startsWith("two-aggregator") && !twoAggregator?.metrics.has(m)).sort();
  if (!missing.length) return;
  const named = missing.map((m) => `${JSON.stringify(m)} (trust ${spec.metric(m).trust})`).join(", ");
  throw new RangeError(`spec ${JSON.stringify(spec.name)} collects ${named} in the two-aggregator mode, and no task ` +
    `was given for it: new PrivatizingMetricReader({ ..., twoAggregator: twoAggregatorMetrics(spec, ` +
    `{ ${missing[0]}: taskFileText }) }) (ldp-telemetry-client/dap; the file \`ldp collect task --leader-config ... ` +
    "--helper-config ...` wrote; docs/two-aggregators.md)");
}

/** The SDK's aggregation for each instrument type (see the module): the drop aggregation for a type no declared
 * metric uses, the default one otherwise, with the spec's bucket bounds (all of them, merged) for histograms when a
 * metric reads buckets. */
export function aggregationFor(declared: ReadonlyMap<string, readonly Declared[]>): (type: InstrumentType) => AggregationOption {
  const all = [...declared.values()].flat();
  const kinds = new Set(all.map((d) => d.source.kind));
  const bounds = [...new Set(all.flatMap((d) => d.source.buckets ?? []))].sort((a, b) => a - b);
  return (type) => {
    const kind = KIND_OF_TYPE[type];
    if (kind === undefined || !kinds.has(kind)) return { type: AggregationType.DROP };
    if (kind === "histogram" && bounds.length) {
      return { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: bounds, recordMinMax: false } };
    }
    return { type: AggregationType.DEFAULT };
  };
}

/** What kind of instrument `metric`'s data says it came from (`null`: an exponential histogram). */
export function kindOfData(metric: MetricData): OtelKind | null {
  switch (metric.dataPointType) {
    case DataPointType.HISTOGRAM: return "histogram";
    case DataPointType.GAUGE: return "gauge";
    case DataPointType.SUM: return metric.isMonotonic ? "counter" : "updown_counter";
    default: return null;
  }
}
