/**
 * The protocol-agnostic core of the ldp TypeScript client: params and encoder bases, randomness, hashing, canonical
 * JSON, reports and envelopes, errors. Browser-safe (nothing imports `node:*`). No protocol is imported here: the
 * entries `index.ts` (every protocol) and `lite.ts` (the protocols a page names) add them.
 */
export {
  ALL_METRICS, BudgetExceeded, LdpRefusal, LdpTypeError, LdpValueError, OptedOutError, OutboxFullError, ReplayError,
  StateError, UploadError, UploadProtocolError, costText, kindOf,
} from "./errors.js";
export type { CostLike, ExpectedKind, RefusalCode, RefusalFields, UploadErrorResult, ValueKind } from "./errors.js";
export {
  bigIntToBytesLE, bytesEqual, bytesToBigIntLE, concatBytes, fromHex, namespaced, toHex, uint32BE, utf8Encode,
  valueBytes,
} from "./bytes.js";
export type { HashValue } from "./bytes.js";
export { MAX_SEED, bucket, bucketOfBytes, buckets, hash32 } from "./hash/murmur3.js";
export { HmacSha256, Sha256, hmacSha256, sha256 } from "./hash/sha256.js";
export { md5, md5Buckets } from "./hash/md5.js";
export {
  PyFloat, canonicalJson, compareCodePoints, fingerprint, pyFloatRepr, pyJsonString, sha256Hex16,
} from "./canonical.js";
export type { JsonValue } from "./canonical.js";
export {
  CryptoRandomSource, KeyedRandomSource, PRECISION_BITS, RandomSource, RecordingSource, ReplaySource,
  bernoulliThreshold, bitslicedBelow, checkProbability, checkResolvable, realizedProbability,
} from "./random.js";
export type { Draw, FillRandom } from "./random.js";
export { ProtocolParams, fromDict, isPyInt } from "./params/base.js";
export type { Field, FieldSpec, ParamsDict, PrivacyCost } from "./params/base.js";
export { Encoder, bitsString, envelopeJson, isMemoized, reportJson } from "./encoders/base.js";
export type { Charge, EncoderOptions, MemoizedCharge, PayloadValue, ProtocolEntry, Report } from "./encoders/base.js";
export { SpecError, fitsWithin } from "./spec-check.js";
export { TRUST_MODELS } from "./spec-metric.js";
export type { Budget, MetricSpec, OtelKind, OtelSource, OtelValue, TrustModel } from "./spec-metric.js";
export type { SpecOptions } from "./spec.js";
