/**
 * A metric's `otel` key (`ldp/spec/otel.py`): which OpenTelemetry instrument feeds the metric, and how one window of
 * its measurements becomes one value. `otelKey` checks it on its own and against the metric's protocol, with the
 * Python validator's rules and in its order, so that an instrument whose window value the protocol could not encode
 * is refused when the spec is read, before anything is measured:
 *
 * ```json
 * "otel": {"instrument": "app.screen.views", "kind": "counter", "value": "attribute", "attribute": "screen"}
 * ```
 *
 * | `value`     | `kind`                  | the window's value                                    | protocols             |
 * |-------------|-------------------------|-------------------------------------------------------|-----------------------|
 * | `any`       | counter, histogram      | whether anything was counted (sum, or count, > 0)     | rr; a 2-value one     |
 * | `sum`       | counter, updown_counter | the window's sum                                      | numbers (`clip: true`)|
 * | `last`      | gauge                   | the last value observed                               | numbers (`clip: true`)|
 * | `mean`      | histogram               | sum / count of the window's observations              | numbers (`clip: true`)|
 * | `bucket`    | histogram               | the bucket of `buckets` holding most observations     | categories            |
 * | `attribute` | counter, histogram      | the value of `attribute` counted most (`values`: the  | categories, strings   |
 * |             |                         | categories, by default the protocol's labels)         |                       |
 *
 * Ties go to the lowest bucket or category, or the smallest string.
 *
 * `CollectionSpec` here is the spec of `spec.ts` that also reads the metrics' `otel` keys: the main entry's
 * `CollectionSpec` is one (with every protocol by default), and so is `ldp-telemetry-client/otel`'s (with the
 * protocols a page names, as the `lite` entry's). The `lite` entry's own `CollectionSpec` refuses the key (an unknown
 * key), so that a page that does not use OpenTelemetry ships none of this. Browser-safe.
 */
import { PyFloat } from "./canonical.js";
import type { ProtocolEntry } from "./encoders/base.js";
import type { ProtocolParams } from "./params/base.js";
import { CollectionSpec as LiteSpec } from "./spec.js";
import type { SpecOptions } from "./spec.js";
import { Checker, SpecError, isObject, join, kind, sortedKeys } from "./spec-check.js";
import { parseParams } from "./spec-metric.js";
import type { MetricSpec, OtelKind, OtelSource, OtelValue } from "./spec-metric.js";

/** The instrument kinds a mapping names (`KINDS`). */
export const OTEL_KINDS: readonly OtelKind[] = ["counter", "updown_counter", "histogram", "gauge"];
/** How one window of an instrument becomes one value (`VALUES`). */
export const OTEL_VALUES: readonly OtelValue[] = ["any", "sum", "last", "mean", "bucket", "attribute"];

/** What a protocol encodes, as the `otel` key sees it: a boolean, a category (an index or label of a fixed
 * domain), a number (in `[low, high]`) or a string. */
export type OtelValueClass = "boolean" | "category" | "number" | "string";

const classOf = (cls: OtelValueClass, protocols: string) => protocols.split(" ").map((p) => [p, cls] as const);

/** What each built-in protocol encodes (`VALUE_CLASSES`); `multi` and other packages' protocols have no mapping. */
export const OTEL_VALUE_CLASSES: Readonly<Record<string, OtelValueClass>> = Object.freeze(Object.fromEntries([
  ...classOf("boolean", "rr"),
  ...classOf("category", "grr oue sue olh blh hr hr-block ss thresh lgrr loue pgr hpg"),
  ...classOf("number", "duchi hybrid piecewise memo-mean bucket-grr bucket-oue dbitflip memo-dbitflip hh"),
  ...classOf("string", "cms hcms rappor rappor-ngrams pem sfp"),
]));

/** The instrument kinds each `value` reads (`KINDS_OF`). */
const KINDS_OF: Readonly<Record<OtelValue, readonly OtelKind[]>> = {
  any: ["counter", "histogram"], sum: ["counter", "updown_counter"], last: ["gauge"], mean: ["histogram"],
  bucket: ["histogram"], attribute: ["counter", "histogram"],
};

/** The protocol classes each `value` can feed (`CLASSES_OF`; `any` a category only of 2 values). */
const CLASSES_OF: Readonly<Record<OtelValue, readonly OtelValueClass[]>> = {
  any: ["boolean", "category"], sum: ["number"], last: ["number"], mean: ["number"], bucket: ["category"],
  attribute: ["category", "string"],
};

const NOUNS: Readonly<Record<string, string>> = {
  any: "a boolean", sum: "a number", last: "a number", mean: "a number", bucket: "a category",
  attribute: "a category or a string", boolean: "a boolean", category: "a category", number: "a number",
  string: "a string",
};

/** OpenTelemetry's instrument names: a letter, then up to 254 letters, digits, `_`, `.`, `-` or `/` (matched
 * case-insensitively, as the SDKs do). */
export const INSTRUMENT_RE = /^[A-Za-z][A-Za-z0-9_./-]{0,254}$/;
/** The longest `attribute` key, in characters (code points). */
export const MAX_ATTRIBUTE_LENGTH = 255;

/** What the protocol of `params` encodes (`value_class`); `undefined`: no mapping. */
export function otelValueClass(params: ProtocolParams): OtelValueClass | undefined {
  return Object.prototype.hasOwnProperty.call(OTEL_VALUE_CLASSES, params.protocol) ?
    OTEL_VALUE_CLASSES[params.protocol] : undefined;
}

/** The protocol's `labels`, if it has them (`getattr(params, "labels", None)`). */
function labelsOf(params: ProtocolParams): readonly string[] | null {
  const labels = params.values.labels;
  return Array.isArray(labels) ? (labels as string[]) : null;
}

/** The attribute values of the categories of `source`'s metric, in index order (`values`, else the protocol's
 * labels); `null` for a protocol that takes any string (or one without labels). */
export function otelCategories(source: OtelSource, params: ProtocolParams): readonly string[] | null {
  return source.values ?? labelsOf(params);
}

const has = (raw: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(raw, key);
const shown = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : kind(v));
const isValue = (v: unknown): v is OtelValue => OTEL_VALUES.includes(v as OtelValue);
const isKind = (v: unknown): v is OtelKind => OTEL_KINDS.includes(v as OtelKind);

/**
 * Reads the `otel` key at `path` (a metric's), checked on its own and against `params` (`null`: the params were
 * refused, so only the key's own rules are checked), as Python's `parse_otel`: every problem goes to `ck`, in
 * Python's order; the normalized mapping, or `null` when there was one.
 */
export function parseOtel(ck: Checker, raw: unknown, path: string, params: ProtocolParams | null): OtelSource | null {
  const o = ck.obj(raw, path, ["instrument", "kind", "value"], ["attribute", "values", "buckets"]);
  if (o === null) return null;
  const before = ck.errors.length;
  const { instrument, kind: k, value } = o;
  if (has(o, "instrument") && !(typeof instrument === "string" && INSTRUMENT_RE.test(instrument))) {
    ck.fail(join(path, "instrument"), "instrument names match [A-Za-z][A-Za-z0-9_./-]{0,254} (OpenTelemetry's " +
      `rule), got ${shown(instrument)}`);
  }
  if (has(o, "kind") && !isKind(k)) ck.fail(join(path, "kind"), `must be one of ${OTEL_KINDS.join(", ")}, got ${shown(k)}`);
  if (has(o, "value") && !isValue(value)) {
    ck.fail(join(path, "value"), `must be one of ${OTEL_VALUES.join(", ")}, got ${shown(value)}`);
  } else if (isValue(value) && isKind(k) && !KINDS_OF[value].includes(k)) {
    ck.fail(join(path, "value"), `'${value}' reads a ${KINDS_OF[value].join(" or ")} instrument, got kind '${k}'`);
  }
  const attribute = readAttribute(ck, o, path, value);
  const buckets = readBuckets(ck, o, path, value);
  const values = readValues(ck, o, path, value);
  if (params !== null && isValue(value)) fits(ck, path, value, params, has(o, "values") ? o.values : null, buckets);
  if (ck.errors.length !== before) return null;
  return {
    instrument: instrument as string, kind: k as OtelKind, value: value as OtelValue,
    ...(attribute !== null && { attribute }), ...(values !== null && { values }), ...(buckets !== null && { buckets }),
  };
}

function readAttribute(ck: Checker, o: Record<string, unknown>, path: string, value: unknown): string | null {
  const apath = join(path, "attribute");
  if (!has(o, "attribute")) {
    if (value === "attribute") ck.fail(apath, "required with value 'attribute'");
    return null;
  }
  const attribute = o.attribute;
  if (value !== "attribute") {
    ck.fail(apath, "only with value 'attribute'");
  } else if (typeof attribute !== "string" || attribute.length === 0 || [...attribute].length > MAX_ATTRIBUTE_LENGTH) {
    ck.fail(apath, `must be an attribute key of 1 to ${MAX_ATTRIBUTE_LENGTH} characters, got ${shown(attribute)}`);
  } else {
    return attribute;
  }
  return null;
}

function readValues(ck: Checker, o: Record<string, unknown>, path: string, value: unknown): readonly string[] | null {
  if (!has(o, "values")) return null;
  const vpath = join(path, "values"), values = o.values;
  if (value !== "attribute") {
    ck.fail(vpath, "only with value 'attribute'");
  } else if (!Array.isArray(values) || !values.length || !values.every((v) => typeof v === "string")) {
    ck.fail(vpath, `must be a non-empty list of strings, got ${kind(values)}`);
  } else if (new Set(values).size !== values.length) {
    ck.fail(vpath, "must be distinct, got a value twice");
  } else {
    return Object.freeze([...values] as string[]);
  }
  return null;
}

function readBuckets(ck: Checker, o: Record<string, unknown>, path: string, value: unknown): readonly number[] | null {
  const bpath = join(path, "buckets");
  if (!has(o, "buckets")) {
    if (value === "bucket") ck.fail(bpath, "required with value 'bucket'");
    return null;
  }
  const buckets = o.buckets;
  if (value !== "bucket") {
    ck.fail(bpath, "only with value 'bucket'");
  } else if (!Array.isArray(buckets) || !buckets.length ||
    !buckets.every((b) => (typeof b === "number" && Number.isFinite(b)) || typeof b === "bigint")) {
    ck.fail(bpath, `must be a non-empty list of finite numbers, got ${kind(buckets)}`);
  } else {
    const bounds = buckets.map(Number);
    if (!bounds.every(Number.isFinite)) {
      ck.fail(bpath, `must be a non-empty list of finite numbers, got ${kind(buckets)}`);
    } else if (bounds.some((b, i) => i > 0 && !(bounds[i - 1] < b))) {
      ck.fail(bpath, "must be strictly increasing");
    } else {
      return Object.freeze(bounds);
    }
  }
  return null;
}

/** `_fits`: the mapping against the protocol: its class, the number of categories, `clip` for numbers (`values`:
 * as given, `null` when left out). */
function fits(ck: Checker, path: string, value: OtelValue, params: ProtocolParams, values: unknown,
  buckets: readonly number[] | null): void {
  const protocol = params.protocol, cls = otelValueClass(params), vpath = join(path, "value");
  if (cls === undefined) {
    ck.fail(vpath, `${protocol} has no OpenTelemetry mapping (only the protocols of one value do)`);
    return;
  }
  if (!CLASSES_OF[value].includes(cls)) {
    ck.fail(vpath, `'${value}' gives ${NOUNS[value]}, which ${protocol} does not encode (it takes ${NOUNS[cls]})`);
    return;
  }
  const size = params.domainSize;
  if (value === "any" && cls === "category" && size !== 2) {
    ck.fail(vpath, `'any' gives a boolean: ${protocol} needs domain_size 2 for it, got ${size}`);
  } else if (cls === "number" && params.values.clip !== true) {
    ck.fail(vpath, `'${value}' gives any number: set params.clip to true, so that ${protocol} clips a value ` +
      "outside its range instead of refusing it");
  } else if (value === "bucket" && buckets !== null && buckets.length + 1 !== size) {
    ck.fail(join(path, "buckets"), `${buckets.length} bounds make ${buckets.length + 1} buckets: ${protocol} has ` +
      `domain_size ${size}`);
  } else if (value === "attribute" && cls === "category") {
    if (Array.isArray(values) && values.length && values.length !== size) {
      ck.fail(join(path, "values"), `${values.length} values for ${protocol}'s domain_size ${size}`);
    } else if (values === null && labelsOf(params) === null) {
      ck.fail(join(path, "values"), `required: ${protocol} has no labels to name its categories`);
    }
  } else if (value === "attribute" && values !== null) {
    ck.fail(join(path, "values"), `only for a protocol of categories: ${protocol} takes any string`);
  }
}

/** `source` as the canonical form writes it (Python's `to_dict()`: the bounds as floats). */
function otelJson(source: OtelSource): Record<string, unknown> {
  return { ...source, ...(source.buckets && { buckets: source.buckets.map((b) => new PyFloat(b)) }) };
}

/** Whether `error` (`path: message`) is at the path `metric` or inside it. */
function under(error: string, metric: string): boolean {
  return [": ", ".", "["].some((after) => error.startsWith(metric + after));
}

/**
 * The collection spec of `spec.ts`, reading the metrics' `otel` keys too, as Python's validator does: each after
 * the metric's other keys (its errors after theirs, before the next metric's), checked against the metric's
 * protocol, normalized into `MetricSpec.otel` and fingerprinted. Its metrics may name the protocols given
 * (`SpecOptions.protocols`: none by default, as the `lite` entry's spec; the main entry's `CollectionSpec`, a
 * subclass, gives every protocol).
 */
export class CollectionSpec extends LiteSpec {
  static override fromDict(data: unknown, options: string | SpecOptions = {}): LiteSpec {
    const opts = typeof options === "string" ? { source: options } : options;
    const rawMetrics = isObject(data) && isObject(data.metrics) ? data.metrics : null;
    if (rawMetrics === null) return LiteSpec.fromDict(data, opts);
    // The `otel` keys are taken out for the spec of spec.ts, which reads the rest, and read here.
    const keys = new Map<string, unknown>();
    const stripped = Object.fromEntries(Object.entries(rawMetrics).map(([name, m]) => {
      if (!isObject(m) || !Object.prototype.hasOwnProperty.call(m, "otel")) return [name, m];
      const { otel, ...rest } = m;
      keys.set(name, otel);
      return [name, rest];
    }));
    if (keys.size === 0) return LiteSpec.fromDict(data, opts);
    const table = new Map<string, ProtocolEntry>();
    for (const e of opts.protocols ?? []) table.set(e.name, e);
    const sources = new Map<string, OtelSource>(), failed = new Map<string, string[]>();
    for (const [name, raw] of keys) {
      const m = rawMetrics[name] as Record<string, unknown>, path = join("metrics", name);
      const parsed = "protocol" in m && "params" in m ? parseParams(new Checker(), m.protocol, m.params, path, table) : null;
      const ck = new Checker();
      const source = parseOtel(ck, raw, join(path, "otel"), parsed === null ? null : parsed[1]);
      if (ck.errors.length) failed.set(name, ck.errors);
      else if (source !== null) sources.set(name, source);
    }
    let spec: LiteSpec;
    try {
      spec = LiteSpec.fromDict({ ...(data as Record<string, unknown>), metrics: stripped }, opts);
    } catch (err) {
      if (!(err instanceof SpecError) || failed.size === 0) throw err;
      throw new SpecError(merged(err.errors, Object.keys(rawMetrics), failed), opts.source);
    }
    if (failed.size) throw new SpecError(merged([], Object.keys(rawMetrics), failed), opts.source);
    const metrics = new Map<string, MetricSpec>();
    for (const [name, m] of spec.metrics) {
      const otel = sources.get(name);
      metrics.set(name, otel === undefined ? m : { ...m, otel });
    }
    return new CollectionSpec(spec.name, spec.budget, metrics, spec.windowSeconds, { ...spec.upload }, spec.description);
  }

  override canonicalDict(): Record<string, unknown> {
    const out = super.canonicalDict();
    const metrics = out.metrics as Record<string, Record<string, unknown>>;
    for (const [name, m] of this.metrics) if (m.otel !== undefined) metrics[name].otel = otelJson(m.otel);
    return out;
  }
}

/** The errors of the spec of spec.ts with each metric's `otel` errors after the metric's own: the order of Python's
 * validator, which reads the metrics in order, each metric's `otel` key last. */
function merged(errors: readonly string[], names: readonly string[], otel: ReadonlyMap<string, string[]>): string[] {
  const paths = sortedKeys(names).map((name) => [name, join("metrics", name)] as const);
  const owner = (error: string) => paths.find(([, p]) => under(error, p))?.[0];
  const out = errors.filter((e) => owner(e) === undefined);
  for (const [name] of paths) out.push(...errors.filter((e) => owner(e) === name), ...(otel.get(name) ?? []));
  return out;
}
