/**
 * The main entry of the ldp TypeScript client (`ldp-telemetry-client`): the whole client with every protocol.
 * Browser-safe: nothing here imports `node:*` (the Node file store is `ldp-telemetry-client/node`). `CollectionSpec`
 * here knows every protocol by default; a page that wants to ship only the protocols it uses imports
 * `ldp-telemetry-client/lite` and `ldp-telemetry-client/protocols` instead.
 */
import type { ProtocolEntry } from "./encoders/base.js";
import { ALL_PROTOCOLS } from "./protocols/index.js";
import { CollectionSpec as LiteSpec, SpecOptions } from "./spec.js";

export * from "./lite.js";
export * from "./protocols/index.js";

function withAll(options: string | SpecOptions): SpecOptions {
  const opts = typeof options === "string" ? { source: options } : options;
  return opts.protocols === undefined ? { ...opts, protocols: ALL_PROTOCOLS as readonly ProtocolEntry[] } : opts;
}

/** The collection spec (`spec.ts`), knowing every protocol unless `SpecOptions.protocols` says otherwise. */
export class CollectionSpec extends LiteSpec {
  static override loads(text: string, options: string | SpecOptions = {}): LiteSpec {
    return LiteSpec.loads(text, withAll(options));
  }

  static override fromDict(data: unknown, options: string | SpecOptions = {}): LiteSpec {
    return LiteSpec.fromDict(data, withAll(options));
  }
}
