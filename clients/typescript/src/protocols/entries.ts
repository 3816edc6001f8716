/**
 * The registry: every protocol entry of this client, one line per module (a new protocol adds its entry here, once).
 * `index.ts` re-exports them and builds `ALL_PROTOCOLS` and `PROTOCOLS` from this module's exports, so nothing else
 * names a protocol.
 */
export { rr, grr } from "./randomized-response.js";
export { sue, oue } from "./unary.js";
export { olh, blh } from "./local-hashing.js";
export { hr } from "./hadamard-response.js";
export { ss } from "./subset-selection.js";
export { rappor } from "./rappor.js";
export { cms, hcms } from "./sketches.js";
export { duchi, piecewise, hybrid } from "./numeric.js";
export { sfp } from "./sfp.js";
export { rapporNgrams } from "./rappor-ngrams.js";
export { lgrr } from "./lgrr.js";
export { loue } from "./loue.js";
export { memoMean } from "./memo-mean.js";
export { thresh } from "./thresh.js";
export { pem } from "./pem.js";
export { bucketGrr, bucketOue, dbitflip } from "./histogram.js";
export { memoDbitflip } from "./dbitflip-memo.js";
export { hrBlock } from "./hadamard-block.js";
export { pgr, hpg } from "./projective-geometry.js";
export { hh } from "./range-tree.js";
export { multi } from "./multi.js";
