/**
 * Every protocol of this client (the `protocol` of a spec's metric), as entries to hand to `CollectionSpec`
 * (`SpecOptions.protocols`): `import { grr, olh } from "ldp-telemetry-client/protocols"`. Each entry is a named,
 * side-effect-free export, so a bundler keeps only the ones a page imports; `ALL_PROTOCOLS` and `PROTOCOLS` (every
 * entry, by name) pull them all in. The entries are listed once, in `entries.ts`.
 */
import type { ProtocolEntry } from "../encoders/base.js";
import * as entries from "./entries.js";

export * from "./entries.js";

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
