/**
 * The buckets of the histogram protocols (`ldp/encoders/histogram_buckets.py`): the `edges` checked, bucket labels,
 * the bucket of a number, and what every histogram protocol's params share (`BucketParams`).
 *
 * Bucket i is [edges[i], edges[i+1]), the last one closed; a number outside [edges[0], edges[k]] is refused unless
 * `clip` puts it in the first or last bucket.
 */
import { PyFloat, pyFloatRepr } from "../canonical.js";
import { LdpTypeError, LdpValueError, exactInt, kindOf, showValue } from "../errors.js";
import { ParamsDict, ProtocolParams, checkFinite, checkParams, relation } from "../params/base.js";
import { Encoder } from "../encoders/base.js";

/** Most buckets a histogram may have (`MAX_BUCKETS`: its edges must fit an aggregate file's header). */
export const MAX_BUCKETS = 1 << 15;

/** `check_edges`: `edges` as doubles: a list of 3 to MAX_BUCKETS + 1 finite real numbers, strictly increasing. */
export function checkEdges(edges: unknown): number[] {
  if (!Array.isArray(edges)) throw new LdpTypeError("param_type", { param: "edges", expected: "list", got: kindOf(edges) });
  if (!(edges.length >= 3 && edges.length <= MAX_BUCKETS + 1)) {
    throw new LdpValueError("param_length", { param: "edges", got: edges.length, min: 3, max: MAX_BUCKETS + 1 },
      `edges must have between 3 and ${MAX_BUCKETS + 1} entries (2 to ${MAX_BUCKETS} buckets), got ${edges.length}`);
  }
  const out: number[] = [];
  for (const [i, e] of edges.entries()) {
    checkFinite(e, "edges", { index: i });
    if (out.length && e <= out[out.length - 1]) {
      throw relation("edges_increasing", ["edges"], `edges must be strictly increasing, got ${out[out.length - 1]} ` +
        `then ${e} at index ${i}`);
    }
    out.push(e);
  }
  return out;
}

/** An edge in a label: an integral edge below 1e16 as digits, anything else as Python's float repr. */
function edgeText(e: number): string {
  return Number.isInteger(e) && Math.abs(e) < 1e16 ? String(Math.trunc(e)) : pyFloatRepr(e);
}

/** `bucket_labels`: `"[a, b)"` per bucket, `"[a, b]"` for the last (closed) one. */
export function bucketLabels(edges: readonly number[]): string[] {
  const k = edges.length - 1;
  return Array.from({ length: k }, (_, i) => `[${edgeText(edges[i])}, ${edgeText(edges[i + 1])}${i === k - 1 ? "]" : ")"}`);
}

/**
 * `bucket_index`: the bucket of a real value (a number, a bigint compared exactly with the edges, or a `PyFloat`)
 * among the buckets of `edges`; a value out of range is clipped to the first or last bucket when `clip`, else refused
 * with Python's text, which names the value as Python would: an integral number as an int (`7`), a `PyFloat` as a
 * float (`7.0`).
 */
export function bucketIndex(edges: readonly number[], given: unknown, clip: boolean): number {
  const value = given instanceof PyFloat ? given.value : given;
  if (typeof value !== "number" && typeof value !== "bigint") {
    throw new LdpTypeError("value_type", { expected: "float", got: kindOf(given) });
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new LdpValueError("value_range", { got: value, min: edges[0], max: edges[edges.length - 1], finite: true });
  }
  const k = edges.length - 1;
  // number and bigint compare exactly in JS, as Python compares an int with a float
  const below = value < edges[0], above = value > edges[k];
  if (!below && !above) {
    let lo = 0, hi = edges.length; // bisect_right: the number of edges <= value
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (value < edges[mid]) hi = mid;
      else lo = mid + 1;
    }
    return Math.min(lo - 1, k - 1);
  }
  if (clip) return below ? 0 : k - 1;
  throw new LdpValueError("value_range", { got: exactInt(value), min: edges[0], max: edges[k] },
    `value ${showValue(given)} is outside the histogram's range [${edges[0]}, ${edges[k]}] (pass clip: true in the ` +
    "params to clip it)");
}

/** `values` with a list of `edges` copied and frozen (Python's `from_dict` makes it a tuple), so a caller's later
 * change to its array cannot change the parameters or their fingerprint. */
function withFrozenEdges(values: ParamsDict): ParamsDict {
  return Array.isArray(values.edges) ? { ...values, edges: Object.freeze([...values.edges]) } : values;
}

/**
 * What every histogram protocol's params share (Python's `_Buckets`): `epsilon`, the checked `edges`, `clip`, the
 * buckets and their labels. A leaf class's constructor calls `checkBuckets` first, as Python's `__post_init__`.
 */
export abstract class BucketParams extends ProtocolParams {
  private edges_: readonly number[] = [];
  private clip_ = false;
  private labels_: readonly string[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenEdges(values));
  }

  /** `check_epsilon`, then `_check_buckets`: the edges, then `clip`. */
  protected checkBuckets(): void {
    const v = this.values, rows = this.fieldSpecs;
    checkParams(v, rows, "epsilon", "epsilon");
    this.edges_ = Object.freeze(checkEdges(v.edges));
    checkParams(v, rows, "clip", "clip");
    this.clip_ = v.clip as boolean;
  }

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  /** The edges as doubles. */
  get edges(): readonly number[] {
    return this.edges_;
  }

  /** Whether numbers outside the edges go to the first or last bucket (else they are refused). */
  get clip(): boolean {
    return this.clip_;
  }

  /** k, the number of buckets. */
  get numBuckets(): number {
    return this.edges_.length - 1;
  }

  override get domainSize(): number {
    return this.numBuckets;
  }

  /** Each bucket's label (`"[0, 1)"`, …, the last `"[a, b]"`). */
  get labels(): readonly string[] {
    if (this.labels_ === undefined) this.labels_ = Object.freeze(bucketLabels(this.edges_));
    return this.labels_;
  }

  /** The bucket of a number (`bucketIndex`). */
  bucketOf(value: unknown): number {
    return bucketIndex(this.edges_, value, this.clip_);
  }
}

/** An encoder whose values are numbers, prepared as their bucket. */
export abstract class BucketEncoder<P extends BucketParams> extends Encoder<P, number> {
  prepare(value: unknown): number {
    return this.params.bucketOf(value);
  }
}
