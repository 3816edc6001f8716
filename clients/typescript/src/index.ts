/**
 * The main entry of the ldp TypeScript client (`ldp-telemetry-client`): the whole client with every protocol.
 * Browser-safe: nothing here imports `node:*` (the Node file store is `ldp-telemetry-client/node`). `CollectionSpec`
 * here knows every protocol and the `poplar1` string kind (`SHARED_KINDS`) by default and reads the metrics' `otel`
 * keys; a page that wants to ship only the
 * protocols it uses imports `ldp-telemetry-client/lite` and `ldp-telemetry-client/protocols` instead.
 */
import { ALL_PROTOCOLS, SHARED_KINDS } from "./protocols/index.js";
import type { CollectionSpec as LiteSpec, SpecOptions } from "./spec.js";
import { CollectionSpec as OtelSpec } from "./spec-otel.js";

export * from "./lite.js";
export * from "./protocols/index.js";
export { INSTRUMENT_RE, OTEL_KINDS, OTEL_VALUES, OTEL_VALUE_CLASSES, otelCategories, otelValueClass } from "./spec-otel.js";
export type { OtelValueClass } from "./spec-otel.js";

function withAll(options: string | SpecOptions): SpecOptions {
  const opts = typeof options === "string" ? { source: options } : options;
  return opts.protocols === undefined ? { ...opts, protocols: [...ALL_PROTOCOLS, ...SHARED_KINDS] } : opts;
}

/** The collection spec (`spec.ts`), knowing every protocol unless `SpecOptions.protocols` says otherwise, and
 * reading the metrics' `otel` keys (`spec-otel.ts`). */
export class CollectionSpec extends OtelSpec {
  static override loads(text: string, options: string | SpecOptions = {}): LiteSpec {
    return OtelSpec.loads(text, withAll(options));
  }

  static override fromDict(data: unknown, options: string | SpecOptions = {}): LiteSpec {
    return OtelSpec.fromDict(data, withAll(options));
  }
}
