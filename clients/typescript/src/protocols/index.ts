/**
 * Every protocol of this client (the `protocol` of a spec's metric), as entries to hand to `CollectionSpec`
 * (`SpecOptions.protocols`): `import { grr, olh } from "ldp-telemetry-client/protocols"`. Each entry is a named,
 * side-effect-free export, so a bundler keeps only the ones a page imports; `ALL_PROTOCOLS` and `PROTOCOLS` (every
 * entry, by name) pull them all in. The entries are listed once, in `entries.ts`.
 */
import type { ProtocolEntry } from "../encoders/base.js";
import * as entries from "./entries.js";
import { poplar1 } from "./poplar1.js";

export * from "./entries.js";
export { poplar1 };

/** The metric kinds without a local randomizer (Python's `ldp.spec.kinds.shared_kinds`): `poplar1`, whose devices
 * share the exact string with Poplar1 between two aggregators (`ldp-telemetry-client/dap`). Not in `ALL_PROTOCOLS`
 * (they make no local report: no report vectors, no audit); the main entry's `CollectionSpec` knows them, a `lite`
 * page names them in `SpecOptions.protocols` as it names protocols. */
export const SHARED_KINDS: readonly ProtocolEntry[] = /* @__PURE__ */ Object.freeze([poplar1 as ProtocolEntry]);

/** Every protocol entry of this client (in the order of their export names). */
export const ALL_PROTOCOLS: readonly ProtocolEntry[] = /* @__PURE__ */ Object.freeze(
  /* @__PURE__ */ Object.values(entries) as ProtocolEntry[]);

/** Protocols of conformance/vectors this client does not implement yet (the docs print this list). */
export const NOT_YET: readonly string[] = /* @__PURE__ */ Object.freeze([]);

/** `list` by protocol name. */
function byName(list: readonly ProtocolEntry[]): Readonly<Record<string, ProtocolEntry>> {
  return Object.freeze(Object.fromEntries(list.map((e) => [e.name, e])));
}

/** Every protocol of this client, by name. */
export const PROTOCOLS: Readonly<Record<string, ProtocolEntry>> = /* @__PURE__ */ byName(ALL_PROTOCOLS);

/** The protocol called `name`, or `undefined`. */
export function protocol(name: string): ProtocolEntry | undefined {
  return Object.prototype.hasOwnProperty.call(PROTOCOLS, name) ? PROTOCOLS[name] : undefined;
}
