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
 *
 * The validator's rules are `spec-check.ts`; a metric and how one is read, `spec-metric.ts`; the metrics' `otel`
 * keys, `spec-otel.ts`.
 */
import { PyFloat, canonicalJson, sha256Hex16 } from "./canonical.js";
import { showValue as num } from "./errors.js";
import type { ProtocolEntry } from "./encoders/base.js";
import { PrivacyCost, ProtocolParams } from "./params/base.js";
import { Checker, SpecError, isObject, kind, sortedKeys } from "./spec-check.js";
import { parseMetric } from "./spec-metric.js";
import type { Budget, MetricSpec } from "./spec-metric.js";

export const SPEC_VERSION = 1;
/** The longest window or upload interval: the ledger clock's range (to year 9999). */
export const MAX_SECONDS = 253402300799;
export const MAX_BATCH = 1 << 20;
const SECONDS_WHY = "the clock's range ends in year 9999";
const NAME_RE = /^[a-z][a-z0-9_.-]{0,63}$/;

/** How a spec is read: its name in error messages, and the protocols its metrics may name. */
export interface SpecOptions {
  /** What the errors call the document (default `"spec"`). */
  readonly source?: string;
  /** The protocols this spec's metrics may use, e.g. `[grr, olh]` from `ldp-telemetry-client/protocols`. The main
   * entry's `CollectionSpec` defaults to every protocol; the `lite` entry's to none. */
  readonly protocols?: Iterable<ProtocolEntry>;
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
