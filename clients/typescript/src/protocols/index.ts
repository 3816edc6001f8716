/**
 * The protocols this client implements, by name (the `protocol` of a spec's metric). The Python client has more
 * (docs/client.md lists 24); a spec naming one of the others is refused by `CollectionSpec` with a clear error.
 */
import type { ProtocolEntry } from "../encoders/base.js";
import { rr, grr } from "./randomized-response.js";
import { sue, oue } from "./unary.js";
import { olh, blh } from "./local-hashing.js";
import { hr } from "./hadamard-response.js";
import { ss } from "./subset-selection.js";
import { rappor } from "./rappor.js";
import { cms, hcms } from "./sketches.js";
import { pem } from "./pem.js";
import { duchi, piecewise, hybrid } from "./numeric.js";
import { lgrr } from "./lgrr.js";
import { loue } from "./loue.js";
import { memoMean } from "./memo-mean.js";
import { thresh } from "./thresh.js";

/** Every protocol of this client, by name. */
export const PROTOCOLS: Readonly<Record<string, ProtocolEntry>> = Object.freeze(
  Object.fromEntries(
    ([
      rr, grr, sue, oue, olh, blh, hr, ss, rappor, cms, hcms, duchi, piecewise, hybrid,
      pem,
      lgrr, loue, memoMean, thresh,
    ] as ProtocolEntry[]).map(
      (e) => [e.name, e],
    ),
  ),
);

/** The protocol called `name`, or `undefined`. */
export function protocol(name: string): ProtocolEntry | undefined {
  return Object.prototype.hasOwnProperty.call(PROTOCOLS, name) ? PROTOCOLS[name] : undefined;
}
