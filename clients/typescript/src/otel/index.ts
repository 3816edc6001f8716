/**
 * The OpenTelemetry entry (`ldp-telemetry-client/otel`): `PrivatizingMetricReader`, a `MetricReader` for the
 * OpenTelemetry JS SDK that turns what an app measures with plain OpenTelemetry code into locally private reports of
 * the instruments its spec declares (the metrics' `otel` keys), recorded and uploaded by this package's client. One
 * line added to an existing setup turns it on:
 *
 * ```ts
 * import { MeterProvider } from "@opentelemetry/sdk-metrics";
 * import { CollectionSpec, PrivatizingMetricReader } from "ldp-telemetry-client/otel";
 * const provider = new MeterProvider({ readers: [new PrivatizingMetricReader({ spec, store, url, token })] });
 * ```
 *
 * Needs `@opentelemetry/sdk-metrics` and `@opentelemetry/api` (optional peer dependencies of the package: the other
 * entries never import them). Browser-safe: nothing here imports `node:*` (in Node, the store is the `FileStore` of
 * `ldp-telemetry-client/node`).
 *
 * `CollectionSpec` here is the spec that reads the metrics' `otel` keys, with the protocols a page names
 * (`SpecOptions.protocols`, as the `lite` entry's); the main entry's `CollectionSpec` reads them too, with every
 * protocol.
 */
export { CollectionSpec } from "../spec-otel.js";
export {
  INSTRUMENT_RE, MAX_ATTRIBUTE_LENGTH, OTEL_KINDS, OTEL_VALUES, OTEL_VALUE_CLASSES, otelCategories, otelValueClass,
} from "../spec-otel.js";
export type { OtelValueClass } from "../spec-otel.js";
export type { OtelKind, OtelSource, OtelValue } from "../spec-metric.js";
export type { SpecOptions } from "../spec.js";
export { declaredMetrics } from "./instruments.js";
export { INGEST_PATH, checkIngestUrl } from "./ingest-url.js";
export { DEFAULT_COLLECT_INTERVAL_MILLIS, DEFAULT_STORE_KEY, PrivatizingMetricReader } from "./reader.js";
export type { PrivatizingReaderOptions, RecordOutcome, WindowReport } from "./reader.js";
export { MIN_COLLECT_INTERVAL_MILLIS, TALLY_FORMAT, WindowTally, bucketMap, nextCollectionMillis } from "./window.js";
export type { Declared, HistogramValue, TallyDocument, TallyPoint, WindowValue } from "./window.js";
