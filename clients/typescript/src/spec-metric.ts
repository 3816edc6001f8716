/**
 * One metric of a collection spec (`ldp/spec/schema.py`, `ldp/spec/collection.py`): its protocol and parameters
 * (checked by the protocol's own params class), its budgets, where the server finds its candidates, whom its
 * guarantee trusts, and the OpenTelemetry instrument that feeds it (`MetricSpec`); `parseMetric` reads one.
 */
import { LdpRefusal, costText, showValue as num } from "./errors.js";
import type { ProtocolEntry } from "./encoders/base.js";
import { ParamsDict, PrivacyCost, ProtocolParams, fromDict } from "./params/base.js";
import { Checker, METRIC_RE, fitsWithin, join, kind, sortedKeys } from "./spec-check.js";

/** Whom a metric's guarantee trusts (`TRUST_MODELS` of ldp/spec/schema.py): `local` (no one: each report is
 * randomized on the device; the default), `shuffle` (the shuffler, for a central ε by amplification),
 * `two-aggregator` (two non-colluding aggregators: the value secret-shared with Prio3, or a `poplar1` string with
 * Poplar1, noised centrally; the only model of `poplar1`, which has no local randomizer: its params' `trustRefusal`) and
 * `two-aggregator+local` (the same, randomized on the device first). This client records `local` and `shuffle`
 * metrics, and two-aggregator ones given their tasks (`ldp-telemetry-client/dap`; without, `trust_model`). */
export const TRUST_MODELS = ["local", "shuffle", "two-aggregator", "two-aggregator+local"] as const;
export type TrustModel = (typeof TRUST_MODELS)[number];
/** The protocols whose reports fit in Prio3, so in the two-aggregator modes (Python: `params.prio3_fit()`; pgr and
 * hpg as a Prio3Histogram of their K outputs). */
const PRIO3_FITS = ["rr", "grr", "sue", "oue", "pgr", "hpg"];

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

/** The protocol named `protocolName` (from `table`) and its params `raw` checked by its params class; `null` when
 * either is refused (the problems recorded in `ck`, under `path`). */
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
    if (params.localRandomizer !== false) void params.privacyCost;
    return [entry, params];
  } catch (err) {
    if (!(err instanceof LdpRefusal)) throw err;
    const name = err.fields.param;
    ck.fail(name !== undefined && fields.some((f) => f.name === name) ? join(ppath, name) : ppath, err.message);
    return null;
  }
}

/** The metric `name` of the spec, `raw` checked (every problem recorded in `ck`): `null` when it has any. `total`:
 * the collection's budget, which its per-report cost must fit. */
export function parseMetric(ck: Checker, name: string, raw: unknown, total: Budget,
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
    if (params !== null && params.localRandomizer !== false && budget.per_report !== undefined &&
      !fitsWithin(params.privacyCost, budget.per_report)) {
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
  } else if (params?.trustRefusal) {
    const why = params.trustRefusal(trust as string);
    if (why) ck.fail(tpath, why);
  } else if ((trust as string).startsWith("two-") && params !== null && !PRIO3_FITS.includes(params.protocol)) {
    ck.fail(tpath, `${params.protocol} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): ` +
      "no two-aggregator mode for it");
  }
  if (parsed === null || params === null || budget === null || budget.per_report === undefined) return null;
  return { name, entry: parsed[0], params, budget, candidates: typeof candidates === "string" ? candidates : null,
    description: typeof description === "string" ? description : "", trust: trust as TrustModel };
}
