/**
 * The collection spec (`ldp/spec/schema.py`, `ldp/spec/collection.py`, docs/client.md "The collection spec"): one
 * JSON document naming every metric with its protocol, parameters and budgets. `CollectionSpec.fromDict` checks a
 * decoded document with the Python validator's rules (every problem, as `json.path: message`), and
 * normalizes it so that `fingerprint` is the Python spec's fingerprint, which every envelope carries.
 *
 * The protocols a spec may name are the ones it is given (`SpecOptions.protocols`): this module imports none, so a
 * page that names one protocol ships one. The package's main entry (`index.ts`) gives every protocol by default; the
 * `lite` entry gives none unless asked. A metric of a protocol not given is refused as an unknown protocol, naming
 * the ones given.
 */
import { PyFloat, canonicalJson, compareCodePoints, sha256Hex16 } from "./canonical.js";
import { LdpRefusal, costText, showValue as num } from "./errors.js";
import type { ProtocolEntry } from "./encoders/base.js";
import { ParamsDict, PrivacyCost, ProtocolParams, fromDict, isPyInt } from "./params/base.js";

export const SPEC_VERSION = 1;
/** The longest window or upload interval: the ledger clock's range (to year 9999). */
export const MAX_SECONDS = 253402300799;
export const MAX_BATCH = 1 << 20;
const MAX_MIN_REPORTS = 2 ** 62;
/** Longest planned horizon of `release.central.windows` (as the Python package's `MAX_TARGET_WINDOWS`). */
const MAX_TARGET_WINDOWS = 1_000_000;
const SECONDS_WHY = "the clock's range ends in year 9999";
const NAME_RE = /^[a-z][a-z0-9_.-]{0,63}$/;
export const METRIC_RE = /^[a-z][a-z0-9_]{0,31}$/;
const REL_TOL = 1e-9;

/** Whom a metric's guarantee trusts (`TRUST_MODELS` of ldp/spec/schema.py): `local` (no one: each report is
 * randomized on the device; the default), `shuffle` (the shuffler, for a central ε by amplification),
 * `two-aggregator` (two non-colluding aggregators: the value secret-shared with Prio3, noised centrally) and
 * `two-aggregator+local` (the same, randomized on the device first). This client records `local` and `shuffle`
 * metrics; it refuses to record a two-aggregator one (`trust_model`), whose reports it does not build yet. */
export const TRUST_MODELS = ["local", "shuffle", "two-aggregator", "two-aggregator+local"] as const;
export type TrustModel = (typeof TRUST_MODELS)[number];
/** The protocols whose reports fit in Prio3, so in the two-aggregator modes (Python: `params.prio3_fit()`; pgr and
 * hpg as a Prio3Histogram of their K outputs). */
const PRIO3_FITS = ["rr", "grr", "sue", "oue", "pgr", "hpg"];

/** An invalid spec: `errors` lists every problem as `json.path: message` (Python's `SpecError`). */
export class SpecError extends Error {
  override readonly name: string = "SpecError";
  readonly errors: string[];
  constructor(errors: string[], source = "spec") {
    super(`${source}: ${errors.length} error(s):\n  ${errors.join("\n  ")}`);
    this.errors = errors;
  }
}

/** `PrivacyCost.fits_within`: both parts at most the cap's, with a 1e-9 relative slack. */
export function fitsWithin(c: PrivacyCost, cap: PrivacyCost): boolean {
  const fits = (a: number, b: number) => a <= b * (1 + REL_TOL) + 1e-15;
  return fits(c.epsilon, cap.epsilon) && fits(c.delta, cap.delta);
}

function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** `_kind`: how the validator names a JSON value's type. */
export function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "string") return "a string";
  if (typeof v === "boolean") return "a boolean";
  if (typeof v === "object") return "an object";
  return `${isPyInt(v) ? "integer" : typeof v} ${num(v)}`;
}

/** `_join`: the JSON path of `key` inside `path`. */
export function join(path: string, key: string): string {
  if (!METRIC_RE.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === "$" ? key : `${path}.${key}`;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function sortedKeys(keys: Iterable<string>): string[] {
  return [...keys].sort(compareCodePoints);
}

/** The budget caps of the collection or of a metric (`None`: no cap at that level). */
export interface Budget {
  readonly per_window?: PrivacyCost;
  readonly lifetime?: PrivacyCost;
  readonly per_report?: PrivacyCost;
}

/** One metric: its protocol, params, budget and where the server finds its candidates. */
export interface MetricSpec {
  readonly name: string;
  /** The protocol's entry (its params class and encoder). */
  readonly entry: ProtocolEntry;
  readonly params: ProtocolParams;
  readonly budget: Budget;
  readonly candidates: string | null;
  readonly description: string;
  /** Whom its guarantee trusts (`"local"` when the spec leaves it out); fingerprinted when not `"local"`. */
  readonly trust: TrustModel;
  /** The OpenTelemetry instrument that feeds the metric and how one window of it becomes one value (the metric's
   * `otel` key, `ldp/spec/otel.py`); absent when the spec gives none. Fingerprinted when present. Read by the main
   * entry's `CollectionSpec` and by `ldp-telemetry-client/otel`'s (the `lite` entry's refuses the key). */
  readonly otel?: OtelSource;
}

/** The instrument kinds an `otel` key names: the observable instruments aggregate as their synchronous kin. */
export type OtelKind = "counter" | "updown_counter" | "histogram" | "gauge";

/** How one collection window of an instrument becomes one value (`ldp/spec/otel.py` has the table): `any`
 * (whether anything was counted: a boolean), `sum` (the window's sum), `last` (the gauge's last value), `mean`
 * (the histogram's sum / count), `bucket` (the index of the spec's bucket holding most observations), `attribute`
 * (the value of an attribute counted most: a category, or a string). */
export type OtelValue = "any" | "sum" | "last" | "mean" | "bucket" | "attribute";

/**
 * A metric's `otel` key as the spec normalized it (Python's `OtelSource.to_dict()`): which OpenTelemetry instrument
 * feeds the metric, and how. The optional members are present only when the spec gives them.
 */
export interface OtelSource {
  /** The instrument's name as the spec writes it (matched case-insensitively, as OpenTelemetry does). */
  readonly instrument: string;
  readonly kind: OtelKind;
  readonly value: OtelValue;
  /** The attribute whose values are counted (`value: "attribute"` only). */
  readonly attribute?: string;
  /** The attribute values naming the protocol's categories in index order (`value: "attribute"` with a protocol of
   * categories; left out: the protocol's `labels`). */
  readonly values?: readonly string[];
  /** The histogram's bucket bounds (`value: "bucket"`): bucket `i` holds `(b[i-1], b[i]]`, as OpenTelemetry's
   * explicit buckets; one fewer than the protocol's `domain_size`. */
  readonly buckets?: readonly number[];
}

/** The validator's error list (Python's `_Checker`): every problem as `json.path: message`. */
export class Checker {
  readonly errors: string[] = [];

  fail(path: string, msg: string): void {
    this.errors.push(`${path}: ${msg}`);
  }

  obj(value: unknown, path: string, required: string[], optional: string[]): Record<string, unknown> | null {
    if (!isObject(value)) {
      this.fail(path, `must be an object, got ${kind(value)}`);
      return null;
    }
    const allowed = new Set([...required, ...optional]);
    for (const key of sortedKeys(Object.keys(value).filter((k) => !allowed.has(k)))) {
      this.fail(join(path, key), `unknown key (expected one of ${sortedKeys(allowed).join(", ")})`);
    }
    for (const key of sortedKeys(required.filter((k) => !(k in value)))) this.fail(join(path, key), "required");
    return value;
  }

  int(value: unknown, path: string, low: number, high: number, why: string): number | null {
    if (typeof value !== "number" || !isPyInt(value)) {
      this.fail(path, `must be an integer, got ${kind(value)}`);
    } else if (value < low) {
      this.fail(path, `must be >= ${low}, got ${value}`);
    } else if (value > high) {
      this.fail(path, `must be <= ${thousands(high)} (${why}), got ${thousands(value)}`);
    } else {
      return value;
    }
    return null;
  }

  cost(value: unknown, path: string): PrivacyCost | null {
    let parts: Array<[unknown, string]>;
    let wanted: string;
    if (isObject(value)) {
      if (this.obj(value, path, ["epsilon"], ["delta"]) === null || !("epsilon" in value)) return null;
      parts = [[value.epsilon, join(path, "epsilon")], ["delta" in value ? value.delta : 0, join(path, "delta")]];
      wanted = "a finite number";
    } else {
      parts = [[value, path], [0, path]];
      wanted = 'a finite number (ε) or {"epsilon": ε, "delta": δ}';
    }
    for (const [v, p] of parts) {
      if (typeof v !== "number" || !Number.isFinite(v)) {
        this.fail(p, `must be ${wanted}, got ${kind(v)}`);
        return null;
      }
    }
    const [[eps, epsPath], [delta, deltaPath]] = parts as Array<[number, string]>;
    if (!(eps > 0)) this.fail(epsPath, `must be > 0, got ${num(eps)}`);
    else if (!(delta >= 0 && delta < 1)) this.fail(deltaPath, `must be in [0, 1), got ${num(delta)}`);
    else return { epsilon: eps, delta };
    return null;
  }

  release(value: unknown, path: string): void {
    const v = this.obj(value, path, [], ["min_reports", "min_z", "central"]);
    if (v === null) return;
    if ("central" in v) this.central(v.central, join(path, "central"));
    if ("min_reports" in v) this.int(v.min_reports, join(path, "min_reports"), 0, MAX_MIN_REPORTS, "a count of reports");
    if ("min_z" in v) {
      const z = v.min_z;
      if (typeof z !== "number" || !Number.isFinite(z)) this.fail(join(path, "min_z"), `must be a finite number >= 0, got ${kind(z)}`);
      else if (z < 0) this.fail(join(path, "min_z"), `must be >= 0, got ${num(z)}`);
    }
  }

  /** A central target: `epsilon` finite > 0, `delta` in (0, 1), `windows` an integer in [1, 1,000,000] (optional). */
  central(value: unknown, path: string): void {
    const v = this.obj(value, path, ["epsilon", "delta"], ["windows"]);
    if (v === null) return;
    for (const [key, rule] of [["epsilon", "> 0"], ["delta", "in (0, 1)"]] as const) {
      if (!(key in v)) continue;
      const x = v[key];
      if (typeof x !== "number" || !Number.isFinite(x)) this.fail(join(path, key), `must be a finite number ${rule}, got ${kind(x)}`);
      else if (!(key === "epsilon" ? x > 0 : x > 0 && x < 1)) this.fail(join(path, key), `must be ${rule}, got ${num(x)}`);
    }
    if ("windows" in v) this.int(v.windows, join(path, "windows"), 1, MAX_TARGET_WINDOWS, "a horizon the accountant composes");
  }

  le(small: PrivacyCost | undefined, big: PrivacyCost | undefined, path: string, what: string): void {
    if (small !== undefined && big !== undefined && !fitsWithin(small, big)) {
      this.fail(path, `${costText(small)} exceeds ${what} (${costText(big)})`);
    }
  }
}

/** How a spec is read: its name in error messages, and the protocols its metrics may name. */
export interface SpecOptions {
  /** What the errors call the document (default `"spec"`). */
  readonly source?: string;
  /** The protocols this spec's metrics may use, e.g. `[grr, olh]` from `ldp-telemetry-client/protocols`. The main
   * entry's `CollectionSpec` defaults to every protocol; the `lite` entry's to none. */
  readonly protocols?: Iterable<ProtocolEntry>;
}

export function parseParams(ck: Checker, protocolName: unknown, raw: unknown, path: string,
  table: ReadonlyMap<string, ProtocolEntry>): [ProtocolEntry, ProtocolParams] | null {
  const entry = typeof protocolName === "string" ? table.get(protocolName) : undefined;
  if (entry === undefined) {
    const shown = typeof protocolName === "string" ? JSON.stringify(protocolName) : String(protocolName);
    const known = table.size ? `known: ${sortedKeys(table.keys()).join(", ")}` :
      "none given: pass SpecOptions.protocols, or use the package's main entry, which knows them all";
    ck.fail(join(path, "protocol"), `unknown protocol ${shown} (${known})`);
    return null;
  }
  const fields = entry.Params.fields;
  const required = fields.filter((f) => !("default" in f)).map((f) => f.name);
  const optional = fields.filter((f) => "default" in f).map((f) => f.name);
  const ppath = join(path, "params");
  const obj = ck.obj(raw, ppath, required, optional);
  if (obj === null || !required.every((k) => k in obj) || !Object.keys(obj).every((k) => fields.some((f) => f.name === k))) {
    return null;
  }
  try {
    const params = fromDict(entry.Params, obj as ParamsDict);
    void params.privacyCost;
    return [entry, params];
  } catch (err) {
    if (!(err instanceof LdpRefusal)) throw err;
    const name = err.fields.param;
    ck.fail(name !== undefined && fields.some((f) => f.name === name) ? join(ppath, name) : ppath, err.message);
    return null;
  }
}

function parseMetric(ck: Checker, name: string, raw: unknown, total: Budget,
  table: ReadonlyMap<string, ProtocolEntry>): MetricSpec | null {
  const path = join("metrics", name);
  if (!METRIC_RE.test(name)) ck.fail(path, "metric names match [a-z][a-z0-9_]{0,31}");
  const m = ck.obj(raw, path, ["protocol", "params", "budget"], ["candidates", "description", "release", "trust"]);
  if (m === null) return null;
  const parsed = "protocol" in m && "params" in m ? parseParams(ck, m.protocol, m.params, path, table) : null;
  const params = parsed === null ? null : parsed[1];
  const bpath = join(path, "budget");
  let budget: Budget | null = null;
  if ("budget" in m && ck.obj(m.budget, bpath, ["per_report"], ["per_window", "lifetime"]) !== null) {
    const raw = m.budget as Record<string, unknown>;
    const costs: Record<string, PrivacyCost | undefined> = {};
    for (const k of ["per_report", "per_window", "lifetime"]) {
      if (k in raw) costs[k] = ck.cost(raw[k], join(bpath, k)) ?? undefined;
    }
    budget = { per_window: costs.per_window, lifetime: costs.lifetime, per_report: costs.per_report };
    ck.le(budget.per_report, budget.per_window, join(bpath, "per_report"), "the metric's per_window");
    ck.le(budget.per_window, budget.lifetime, join(bpath, "per_window"), "the metric's lifetime");
    ck.le(budget.per_report, budget.lifetime, join(bpath, "per_report"), "the metric's lifetime");
    ck.le(budget.per_report, total.per_window, join(bpath, "per_report"), "budget.per_window of the collection");
    ck.le(budget.per_report, total.lifetime, join(bpath, "per_report"), "budget.lifetime of the collection");
    if (params !== null && budget.per_report !== undefined && !fitsWithin(params.privacyCost, budget.per_report)) {
      ck.fail(join(bpath, "per_report"), `${costText(budget.per_report)} is less than what one ${params.protocol} report ` +
        `costs with these params (${costText(params.privacyCost)})`);
    }
  }
  const candidates = "candidates" in m ? m.candidates : null;
  const cpath = join(path, "candidates");
  if (candidates !== null && candidates !== undefined) {
    if (typeof candidates !== "string" || !candidates.trim()) {
      ck.fail(cpath, `must be a path relative to the spec file, or a URL; got ${kind(candidates)}`);
    } else if (!candidates.includes("://") && (candidates.startsWith("/") || candidates.startsWith("~"))) {
      ck.fail(cpath, `must be relative to the spec file (or a URL), got ${JSON.stringify(candidates)}`);
    } else if (params !== null && params.domainSize !== null) {
      const d = params.domainSize;
      ck.fail(cpath, `${params.protocol} has a fixed domain (domain_size=${d}); candidates are for open-domain protocols`);
    }
  }
  const description = "description" in m ? m.description : "";
  if (typeof description !== "string") ck.fail(join(path, "description"), `must be a string, got ${kind(description)}`);
  if ("release" in m) ck.release(m.release, join(path, "release"));
  const trust = "trust" in m ? m.trust : "local";
  const tpath = join(path, "trust");
  if (!TRUST_MODELS.includes(trust as TrustModel)) {
    ck.fail(tpath, `must be one of ${TRUST_MODELS.join(", ")}, got ${num(trust)}`);
  } else if ((trust as string).startsWith("two-") && params !== null && !PRIO3_FITS.includes(params.protocol)) {
    ck.fail(tpath, `${params.protocol} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): ` +
      "no two-aggregator mode for it");
  }
  if (parsed === null || params === null || budget === null || budget.per_report === undefined) return null;
  return { name, entry: parsed[0], params, budget, candidates: typeof candidates === "string" ? candidates : null,
    description: typeof description === "string" ? description : "", trust: trust as TrustModel };
}

function costJson(c: PrivacyCost): unknown {
  return c.delta === 0 ? new PyFloat(c.epsilon) : { epsilon: new PyFloat(c.epsilon), delta: new PyFloat(c.delta) };
}

function budgetJson(b: Budget): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["per_report", "per_window", "lifetime"] as const) if (b[k]) out[k] = costJson(b[k] as PrivacyCost);
  return out;
}

/** A validated collection spec: its metrics, budgets, window and upload policy, and its fingerprint. */
export class CollectionSpec {
  readonly name: string;
  readonly budget: Budget;
  readonly metrics: ReadonlyMap<string, MetricSpec>;
  readonly windowSeconds: number;
  readonly upload: { readonly min_interval_seconds: number; readonly max_batch: number };
  readonly description: string;
  private fp: string | undefined;

  protected constructor(name: string, budget: Budget, metrics: Map<string, MetricSpec>, windowSeconds: number,
    upload: { min_interval_seconds: number; max_batch: number }, description: string) {
    this.name = name;
    this.budget = budget;
    this.metrics = metrics;
    this.windowSeconds = windowSeconds;
    this.upload = upload;
    this.description = description;
  }

  /** Parse JSON text (a key repeated in one object is allowed by `JSON.parse`: the Python loader refuses it).
   * `options`: `SpecOptions`, or the document's name (`source`). */
  static loads(text: string, options: string | SpecOptions = {}): CollectionSpec {
    const opts = typeof options === "string" ? { source: options } : options;
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      throw new SpecError([`$: not valid JSON: ${(err as Error).message}`], opts.source ?? "spec");
    }
    return this.fromDict(data, opts);
  }

  /** Validate and normalize a decoded document; `SpecError` lists every problem. `options`: `SpecOptions` (the
   * protocols its metrics may name), or the document's name (`source`). */
  static fromDict(data: unknown, options: string | SpecOptions = {}): CollectionSpec {
    const opts = typeof options === "string" ? { source: options } : options;
    const source = opts.source ?? "spec";
    const table = new Map<string, ProtocolEntry>();
    for (const e of opts.protocols ?? []) table.set(e.name, e);
    const ck = new Checker();
    const d = ck.obj(data, "$", ["spec_version", "name", "budget", "metrics"], ["window_seconds", "upload", "description", "release"]);
    if (d === null) throw new SpecError(ck.errors, source);
    if ("spec_version" in d && d.spec_version !== SPEC_VERSION) {
      const v = d.spec_version;
      ck.fail("spec_version", `must be ${SPEC_VERSION}, got ${num(v)}`);
    }
    const name = d.name;
    if ("name" in d && !(typeof name === "string" && NAME_RE.test(name))) {
      ck.fail("name", `collection names match [a-z][a-z0-9_.-]{0,63}, got ${num(name)}`);
    }
    const window = ck.int("window_seconds" in d ? d.window_seconds : 86400, "window_seconds", 1, MAX_SECONDS, SECONDS_WHY);
    let total: Budget = {};
    if ("budget" in d && ck.obj(d.budget, "budget", ["per_window", "lifetime"], []) !== null) {
      const b = d.budget as Record<string, unknown>;
      total = {
        per_window: "per_window" in b ? ck.cost(b.per_window, "budget.per_window") ?? undefined : undefined,
        lifetime: "lifetime" in b ? ck.cost(b.lifetime, "budget.lifetime") ?? undefined : undefined,
      };
      ck.le(total.per_window, total.lifetime, "budget.per_window", "budget.lifetime");
    }
    let upload = { min_interval_seconds: 86400, max_batch: 1000 };
    const rawUp = "upload" in d ? d.upload : {};
    if (ck.obj(rawUp, "upload", [], ["min_interval_seconds", "max_batch"]) !== null) {
      const up = rawUp as Record<string, unknown>;
      const interval = ck.int("min_interval_seconds" in up ? up.min_interval_seconds : 86400, "upload.min_interval_seconds", 0,
        MAX_SECONDS, SECONDS_WHY);
      const batch = ck.int("max_batch" in up ? up.max_batch : 1000, "upload.max_batch", 1, MAX_BATCH,
        "a client holds one batch in memory");
      upload = { min_interval_seconds: interval ?? 86400, max_batch: batch || 1000 };
    }
    const description = "description" in d ? d.description : "";
    if (typeof description !== "string") ck.fail("description", `must be a string, got ${kind(description)}`);
    if ("release" in d) ck.release(d.release, "release");
    const metrics = new Map<string, MetricSpec>();
    const rawMetrics = d.metrics;
    const names = isObject(rawMetrics) ? Object.keys(rawMetrics) : [];
    if ("metrics" in d && ck.obj(rawMetrics, "metrics", [], names) !== null) {
      if (!names.length) ck.fail("metrics", "a collection needs at least one metric");
      for (const mname of sortedKeys(names)) {
        const m = parseMetric(ck, mname, (rawMetrics as Record<string, unknown>)[mname], total, table);
        if (m !== null) metrics.set(mname, m);
      }
    }
    if (ck.errors.length) throw new SpecError(ck.errors, source);
    return new CollectionSpec(name as string, total, metrics, window as number, upload, description as string);
  }

  /** The metric called `name` (a `RangeError` naming the known ones otherwise). */
  metric(name: string): MetricSpec {
    const m = this.metrics.get(name);
    if (m === undefined) {
      throw new RangeError(`no metric ${JSON.stringify(name)} in collection ${JSON.stringify(this.name)} (metrics: ${[...this.metrics.keys()].join(", ")})`);
    }
    return m;
  }

  /** The protocol parameters of metric `name`. */
  params(name: string): ProtocolParams {
    return this.metric(name).params;
  }

  /** The normalized document without release thresholds, with Python's number forms: what the fingerprint covers. */
  canonicalDict(): Record<string, unknown> {
    const metrics: Record<string, unknown> = {};
    for (const name of sortedKeys(this.metrics.keys())) {
      const m = this.metrics.get(name) as MetricSpec;
      const doc: Record<string, unknown> = { protocol: m.params.protocol, params: m.params.canonicalDict(), budget: budgetJson(m.budget) };
      if (m.candidates !== null) doc.candidates = m.candidates;
      if (m.description) doc.description = m.description;
      if (m.trust !== "local") doc.trust = m.trust; // left out: specs written before the key keep their fingerprints
      metrics[name] = doc;
    }
    const out: Record<string, unknown> = {
      spec_version: SPEC_VERSION, name: this.name, window_seconds: this.windowSeconds, budget: budgetJson(this.budget),
      upload: { min_interval_seconds: this.upload.min_interval_seconds, max_batch: this.upload.max_batch }, metrics,
    };
    if (this.description) out.description = this.description;
    return out;
  }

  /** `canonical_json(spec.to_dict(release=False))`. */
  canonical(): string {
    return canonicalJson(this.canonicalDict());
  }

  /** 16 hex digits of SHA-256 over the canonical document: names this exact spec; every envelope carries it. */
  get fingerprint(): string {
    if (this.fp === undefined) this.fp = sha256Hex16(this.canonical());
    return this.fp;
  }
}
