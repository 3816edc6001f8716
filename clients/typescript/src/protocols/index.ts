/**
 * Every protocol of this client (the `protocol` of a spec's metric), as entries to hand to `CollectionSpec`
 * (`SpecOptions.protocols`): `import { grr, olh } from "ldp-telemetry-client/protocols"`. Each entry is a named,
 * side-effect-free export, so a bundler keeps only the ones a page imports; `ALL_PROTOCOLS` and `PROTOCOLS` (every
 * entry, by name) pull them all in.
 */
import type { ProtocolEntry } from "../encoders/base.js";
import { rr, grr } from "./randomized-response.js";
import { sue, oue } from "./unary.js";
import { olh, blh } from "./local-hashing.js";
import { hr } from "./hadamard-response.js";
import { ss } from "./subset-selection.js";
import { rappor } from "./rappor.js";
import { cms, hcms } from "./sketches.js";
import { duchi, piecewise, hybrid } from "./numeric.js";
import { sfp } from "./sfp.js";
import { rapporNgrams } from "./rappor-ngrams.js";
import { lgrr } from "./lgrr.js";
import { loue } from "./loue.js";
import { memoMean } from "./memo-mean.js";
import { thresh } from "./thresh.js";
import { pem } from "./pem.js";
import { bucketGrr, bucketOue, dbitflip, memoDbitflip } from "./histogram.js";
import { hrBlock } from "./hadamard-block.js";
import { hh } from "./range-tree.js";
import { multi } from "./multi.js";

export {
  rr, grr, sue, oue, olh, blh, hr, ss, rappor, cms, hcms, duchi, piecewise, hybrid, sfp, rapporNgrams, lgrr, loue,
  memoMean, thresh, pem, bucketGrr, bucketOue, dbitflip, memoDbitflip, hrBlock, hh, multi,
};

/** Every protocol entry of this client. */
export const ALL_PROTOCOLS: readonly ProtocolEntry[] = /* @__PURE__ */ Object.freeze([
  rr, grr, sue, oue, olh, blh, hr, ss, rappor, cms, hcms, duchi, piecewise, hybrid, sfp, rapporNgrams, lgrr, loue,
  memoMean, thresh, pem, bucketGrr, bucketOue, dbitflip, memoDbitflip, hrBlock, hh, multi,
] as ProtocolEntry[]);

/** Protocols of conformance/vectors this client does not implement yet (the docs print this list). */
export const NOT_YET: readonly string[] = /* @__PURE__ */ Object.freeze([]);

/** Every protocol of this client, by name. */
export const PROTOCOLS: Readonly<Record<string, ProtocolEntry>> = /* @__PURE__ */ Object.freeze({
  rr, grr, sue, oue, olh, blh, hr, ss, rappor, cms, hcms, duchi, piecewise, hybrid, sfp,
  "rappor-ngrams": rapporNgrams, lgrr, loue, "memo-mean": memoMean, thresh, pem, "bucket-grr": bucketGrr,
  "bucket-oue": bucketOue, dbitflip, "memo-dbitflip": memoDbitflip, "hr-block": hrBlock, hh, multi,
} as Record<string, ProtocolEntry>);

/** The protocol called `name`, or `undefined`. */
export function protocol(name: string): ProtocolEntry | undefined {
  return Object.prototype.hasOwnProperty.call(PROTOCOLS, name) ? PROTOCOLS[name] : undefined;
}
