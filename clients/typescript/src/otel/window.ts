/**
 * One collection window of the instruments a spec declares, and the one value per metric it ends with (the Python
 * client's `ldp/otel/window.py`, the same rules).
 *
 * `WindowTally` adds up what a privatizing reader collects (delta temporality: each collection brings what was
 * measured since the last) for each metric whose `otel` key names an instrument, and `values` turns the window into
 * one value per metric, as the table of the spec's `otel` key says:
 *
 * - `any`: `true` when the counter's sum (the histogram's count) is above 0, else `false`; a window the process ran
 *   in always has one (index 1 or 0 for a protocol of two categories);
 * - `sum`: the window's sum (0 when nothing was counted);
 * - `last`: the gauge's last value (of the latest data point; none without a data point);
 * - `mean`: `sum / count` of the histogram's observations (none without one);
 * - `bucket`: the index of the spec's bucket that holds most observations, the lowest on a tie (none without one);
 * - `attribute`: the value of the attribute counted most (the counter's sum, the histogram's count), the lowest
 *   category or the smallest string (by code point) on a tie; a value outside the categories is not counted (none
 *   when nothing is).
 *
 * A histogram data point counts toward `bucket` only when the SDK's bucket bounds hold every bound of the spec (each
 * SDK bucket then lies in one spec bucket); the reader asks the SDK for such bounds. Points that cannot be mapped are
 * counted in `unfit` and never reported. The tally is plain JSON (`toJSON`), so that a process that stops mid-window
 * continues it at its next start. Nothing here imports OpenTelemetry: data points are read by their shape.
 */
import { compareCodePoints } from "../canonical.js";
import type { OtelKind, OtelSource } from "../spec-metric.js";
import type { OtelValueClass } from "../spec-otel.js";

/** The `format` of a saved tally (the Python client's name for the same document). */
export const TALLY_FORMAT = "ldp-otel-window/1";

/** A metric the reader feeds: its name, its `otel` mapping, what its protocol encodes, and (a protocol of
 * categories) the attribute values naming its categories in index order. */
export interface Declared {
  readonly metric: string;
  readonly source: OtelSource;
  readonly valueClass: OtelValueClass;
  readonly categories: readonly string[] | null;
}

/** An explicit-bucket histogram's value, as the OpenTelemetry SDK's data points give it. */
export interface HistogramValue {
  readonly count: number;
  readonly sum?: number;
  readonly buckets: { readonly boundaries: readonly number[]; readonly counts: readonly number[] };
}

/** A data point, as far as the tally reads it (the SDK's `DataPoint<number>` and `DataPoint<Histogram>` are
 * ones): its attributes, its value, and its end time (`[seconds, nanoseconds]`). */
export interface TallyPoint {
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly value: number | HistogramValue;
  readonly endTime: readonly [number, number];
}

/** The value of one window of a metric, as `TelemetryClient.record` takes it: a boolean (`rr`), an index (a
 * protocol of categories), a number or a string. */
export type WindowValue = boolean | number | string;

/**
 * For each SDK bucket (`sdkBounds.length + 1` of them, OpenTelemetry's `(b[i-1], b[i]]`), the spec bucket that holds
 * it: the number of spec bounds below its upper bound. `null` when some spec bound is not an SDK bound (an SDK bucket
 * would straddle two spec buckets).
 */
export function bucketMap(sdkBounds: readonly number[], specBounds: readonly number[]): number[] | null {
  const have = new Set(sdkBounds);
  if (!specBounds.every((b) => have.has(b))) return null;
  return [...sdkBounds, Infinity].map((upper) => specBounds.filter((s) => s < upper).length);
}

/** The shortest wait between two timed collections, in milliseconds. */
export const MIN_COLLECT_INTERVAL_MILLIS = 50;

/**
 * Milliseconds from `nowSeconds` (Unix seconds) to a reader's next timed collection: `intervalMillis`, or less, so
 * that one collection falls at the end of the window (`floor(now / windowSeconds)`). The SDK hands a reader what was
 * measured since its last collection as one delta, counted in the window of that last collection; collecting at each
 * window's end keeps a measurement in the window it was made in (up to the timer's delay). Never under
 * `MIN_COLLECT_INTERVAL_MILLIS` (a timer that fired a hair early, or a clock that does not move, must not spin). The
 * Python client's `next_collection_in`.
 */
export function nextCollectionMillis(nowSeconds: number, windowSeconds: number, intervalMillis: number): number {
  const left = (windowSeconds - (((nowSeconds % windowSeconds) + windowSeconds) % windowSeconds)) * 1000;
  return Math.max(Math.min(intervalMillis, left), MIN_COLLECT_INTERVAL_MILLIS);
}

const add = (map: Map<string, number>, key: string, amount: number) => map.set(key, (map.get(key) ?? 0) + amount);
const own = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key);

/** The key of the largest total, the least by `order` on a tie. */
function most<K>(tally: ReadonlyMap<string, number>, key: (k: string) => K, order: (a: K, b: K) => number): K {
  let best = -Infinity, out: K | undefined;
  for (const [k, c] of tally) {
    const candidate = key(k);
    if (c > best || (c === best && order(candidate, out as K) < 0)) [best, out] = [c, candidate];
  }
  return out as K;
}

function finite(v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw new TypeError(`not a finite number: ${String(v)}`);
  return v;
}

function record(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new TypeError(`${what} must be an object`);
  return v as Record<string, unknown>;
}

function numbers(v: unknown, what: string): Map<string, number> {
  return new Map(Object.entries(record(v, what)).map(([k, x]) => [k, finite(x)]));
}

/** A saved tally (`WindowTally.toJSON`): plain JSON. */
export interface TallyDocument {
  readonly format: typeof TALLY_FORMAT;
  readonly window: number;
  readonly closed: boolean;
  readonly unfit: number;
  readonly totals: Record<string, number>;
  readonly counts: Record<string, number>;
  /** Per `last` metric: [end time of the latest point in milliseconds, its value]. */
  readonly last: Record<string, [number, number]>;
  readonly tallies: Record<string, Record<string, number>>;
}

/** What one window of measurements added up to, per declared metric (see the module). */
export class WindowTally {
  /** `any` and `sum`: the sum (or count); `mean`: the sum, with `counts`. */
  private totals = new Map<string, number>();
  /** `mean`: the number of observations. */
  private counts = new Map<string, number>();
  /** `last`: [time in ms, value] of the latest gauge point. */
  private last = new Map<string, [number, number]>();
  /** `bucket`: count per spec bucket (its index as a string); `attribute`: total per attribute value. */
  private tallies = new Map<string, Map<string, number>>();
  /** Data points of declared instruments that could not be mapped (a bucket bound missing, a value not a category,
   * a non-string attribute, a histogram without its sum): never reported. */
  unfit = 0;
  /** The window's values were reported already (`PrivatizingMetricReader.closeWindow`): what comes later in it is
   * dropped. */
  closed = false;

  /** A tally of window `window` (`floor(unix seconds / window_seconds)`), empty. */
  constructor(readonly window: number) {}

  /** Whether nothing was added (or all was cleared). */
  get empty(): boolean {
    return !this.totals.size && !this.counts.size && !this.last.size && !this.tallies.size;
  }

  /** Add an SDK metric's data points (delta temporality) to the metric `declared`; `kind`: the metric's data as seen
   * (`counter`, `updown_counter`, `gauge` or `histogram`), already checked against the mapping's. */
  add(declared: Declared, kind: OtelKind, points: Iterable<TallyPoint>): void {
    if (this.closed) return;
    const name = declared.metric, src = declared.source;
    for (const p of points) {
      const h = kind === "histogram" ? (p.value as HistogramValue) : null;
      switch (src.value) {
        case "any":
        case "sum":
          add(this.totals, name, h !== null ? h.count : (p.value as number));
          break;
        case "last": {
          const t = p.endTime[0] * 1e3 + p.endTime[1] / 1e6, seen = this.last.get(name);
          if (seen === undefined || t >= seen[0]) this.last.set(name, [t, p.value as number]);
          break;
        }
        case "mean":
          if (h === null || !h.count) break;
          if (typeof h.sum !== "number") {
            this.unfit += 1; // the SDK leaves the sum out of a histogram of values that may be negative
          } else {
            add(this.totals, name, h.sum);
            add(this.counts, name, h.count);
          }
          break;
        case "bucket":
          if (h !== null) this.addBuckets(name, src, h);
          break;
        case "attribute":
          this.addAttribute(declared, h !== null ? h.count : (p.value as number), p.attributes);
          break;
      }
    }
  }

  private addBuckets(name: string, src: OtelSource, h: HistogramValue): void {
    if (!h.count) return;
    const where = bucketMap(h.buckets.boundaries, src.buckets ?? []);
    if (where === null || where.length !== h.buckets.counts.length) {
      this.unfit += 1;
      return;
    }
    let tally = this.tallies.get(name);
    if (tally === undefined) this.tallies.set(name, (tally = new Map()));
    where.forEach((bucket, i) => {
      const c = h.buckets.counts[i];
      if (c) add(tally as Map<string, number>, String(bucket), c);
    });
  }

  private addAttribute(declared: Declared, amount: number, attributes: Readonly<Record<string, unknown>>): void {
    if (!amount) return;
    const key = declared.source.attribute as string;
    const value = attributes && own(attributes, key) ? attributes[key] : undefined;
    if (value === undefined || value === null) return; // a point without the attribute says nothing of it
    if (typeof value !== "string" || (declared.categories !== null && !declared.categories.includes(value))) {
      this.unfit += 1;
      return;
    }
    let tally = this.tallies.get(declared.metric);
    if (tally === undefined) this.tallies.set(declared.metric, (tally = new Map()));
    add(tally, value, amount);
  }

  /** The window's value of each declared metric that has one (the module's rules), ready for
   * `TelemetryClient.record`, in the metrics' order. */
  values(declared: Iterable<Declared>): Map<string, WindowValue> {
    const out = new Map<string, WindowValue>();
    for (const d of declared) {
      const name = d.metric, tally = this.tallies.get(name);
      switch (d.source.value) {
        case "any": {
          const hit = (this.totals.get(name) ?? 0) > 0;
          out.set(name, d.valueClass === "boolean" ? hit : Number(hit));
          break;
        }
        case "sum":
          out.set(name, this.totals.get(name) ?? 0);
          break;
        case "last": {
          const seen = this.last.get(name);
          if (seen !== undefined) out.set(name, seen[1]);
          break;
        }
        case "mean": {
          const n = this.counts.get(name);
          if (n) out.set(name, (this.totals.get(name) as number) / n);
          break;
        }
        case "bucket":
          if (tally?.size) out.set(name, most(tally, Number, (a, b) => a - b));
          break;
        case "attribute":
          if (!tally?.size) break;
          if (d.categories !== null) {
            const categories = d.categories;
            out.set(name, most(tally, (v) => categories.indexOf(v), (a, b) => a - b));
          } else {
            out.set(name, most(tally, (v) => v, compareCodePoints));
          }
          break;
      }
    }
    return out;
  }

  /** Close the window: what it measured is dropped, and so is what comes later in it (`closed`). */
  close(): void {
    this.closed = true;
    this.clear();
  }

  /** Drop what was measured (the window and `closed` stay). */
  clear(): void {
    this.totals = new Map();
    this.counts = new Map();
    this.last = new Map();
    this.tallies = new Map();
  }

  /** The tally as plain JSON (`fromJSON` reads it back). */
  toJSON(): TallyDocument {
    const obj = <V>(m: Map<string, V>) => Object.fromEntries(m) as Record<string, V>;
    return {
      format: TALLY_FORMAT, window: this.window, closed: this.closed, unfit: this.unfit, totals: obj(this.totals),
      counts: obj(this.counts), last: obj(this.last),
      tallies: Object.fromEntries([...this.tallies].map(([k, t]) => [k, obj(t)])),
    };
  }

  /** The tally `toJSON` wrote; a `TypeError` for anything else. */
  static fromJSON(doc: unknown): WindowTally {
    const d = record(doc, "a window tally");
    if (d.format !== TALLY_FORMAT) throw new TypeError(`not a window tally (${JSON.stringify(d.format)})`);
    if (!Number.isSafeInteger(d.window)) throw new TypeError("a window tally's window must be an integer");
    if (typeof d.closed !== "boolean" || !Number.isSafeInteger(d.unfit)) throw new TypeError("not a window tally");
    const out = new WindowTally(d.window as number);
    out.closed = d.closed;
    out.unfit = d.unfit as number;
    out.totals = numbers(d.totals, "totals");
    out.counts = numbers(d.counts, "counts");
    out.last = new Map(Object.entries(record(d.last, "last")).map(([k, v]) => {
      if (!Array.isArray(v) || v.length !== 2) throw new TypeError("last must hold [time, value] pairs");
      return [k, [finite(v[0]), finite(v[1])]];
    }));
    out.tallies = new Map(Object.entries(record(d.tallies, "tallies")).map(([k, t]) => [k, numbers(t, "a tally")]));
    return out;
  }
}
