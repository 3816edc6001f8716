/**
 * Means of bounded numbers, client side (`ldp/encoders/numeric.py`): Duchi's 1-bit mechanism (`duchi`), the discrete
 * Piecewise Mechanism (`piecewise`) and the Hybrid Mechanism (`hybrid`).
 *
 * Every mechanism draws only through the exact primitives (`bernoulli` at 2^-64 resolution, `randbelow` exactly
 * uniform), the stated cost is the ε of the *realized* probabilities (never above the requested ε: a probability is
 * moved by one representable step when rounding would put it above), and a report is plain `uint` fields.
 *
 * - duchi: round x to an end (`bernoulli(φ)`, φ = (x − low)/(high − low)), then flip with q = 1/(1 + e^ε).
 * - piecewise: on a grid of G = `cells` outputs with window w = round(G/(e^{ε/2} + 1)), round x at random to a grid
 *   index k in [0, G − w]; with probability P_in = w·e^ε/(w·e^ε + G − w) the cell is uniform in [k, k + w), else
 *   uniform among the G − w others.
 * - hybrid: with probability α = 1 − e^{−ε/2} (for ε above `HYBRID_THRESHOLD`, else 0) the piecewise cell (pm = 1),
 *   else Duchi's bit (pm = 0), both at the full ε.
 */
import { PyFloat } from "../canonical.js";
import { LdpTypeError, LdpValueError, exactInt, kindOf } from "../errors.js";
import { exp, expm1, log, log1p } from "../pymath.js";
import { RandomSource, bernoulliThreshold, realizedProbability } from "../random.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, logisticTail, relation,
} from "../params/base.js";
import { DUCHI_PARAMS, HYBRID_PARAMS, PIECEWISE_PARAMS } from "../params/tables.js";
import { Encoder, ProtocolEntry, Report } from "../encoders/base.js";

/** The mean protocols of this client (Python's `MEAN_PROTOCOLS` also has `memo-mean`). */
export const MEAN_PROTOCOLS = ["duchi", "piecewise", "hybrid"] as const;
/** Most output cells of the discrete Piecewise Mechanism. */
export const MAX_CELLS = 1 << 16;

/** ε* = 2 ln s* for the real root s* of 3s³ − s² + s − 7, by bisection (as Python computes it). */
function hybridThreshold(): number {
  let lo = 1.0, hi = 2.0;
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (mid === lo || mid === hi) break;
    if (3 * mid ** 3 - mid ** 2 + mid - 7 < 0) lo = mid;
    else hi = mid;
  }
  return 2.0 * log(lo);
}

/** ε* ≈ 0.6094: the Hybrid Mechanism mixes in PM (α > 0) only above it. */
export const HYBRID_THRESHOLD = hybridThreshold();

/** The next double after `x` towards +∞ (`up`) or −∞ (`math.nextafter(x, ±big)`), for finite x. */
function nextAfter(x: number, up: boolean): number {
  if (x === 0) return up ? Number.MIN_VALUE : -Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, (x > 0) === up ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/** The next probability the client realizes above (`up`) or below `p`: one 2^-64 step below 2^-11, one double step
 * above (`_next_probability`). */
function nextProbability(p: number, up: boolean): number {
  if (p < 2.0 ** -11) return Number(bernoulliThreshold(p) + (up ? 1n : -1n)) * 2 ** -64;
  return nextAfter(p, up);
}

/** What every mean mechanism shares: `epsilon`, the bounds `low < high` (finite) and `clip` (clip out-of-range
 * values to the bounds instead of refusing them). The constructor runs `_check_common`; a subclass checks the rest of
 * its table (from the row after `clip`). */
export abstract class NumericParams extends ProtocolParams {
  readonly epsilon: number;
  readonly low: number;
  readonly high: number;
  readonly clip: boolean;
  private cost: PrivacyCost | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values, rows = this.fieldSpecs;
    checkParams(v, rows, "epsilon", "high");
    this.epsilon = v.epsilon as number;
    const low = v.low as number, high = v.high as number;
    if (!(low < high)) {
      throw relation("low<high", ["low", "high"], `the bounds need low < high, got low=${low}, high=${high}`);
    }
    if (!Number.isFinite(high - low)) {
      throw relation("width_finite", ["low", "high"], `high - low must be finite, got low=${low}, high=${high}`);
    }
    checkParams(v, rows, "clip", "clip");
    this.clip = v.clip as boolean;
    this.low = low;
    this.high = high;
  }

  /** The exact ε of the probabilities the client realizes. */
  abstract get realizedEpsilon(): number;

  /** The counters the server aggregate keeps. */
  abstract get aggregateCells(): number;

  /** The realized ε (never above the requested `epsilon`). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: this.realizedEpsilon, delta: 0.0 });
    return this.cost;
  }

  /** `value` as a number in [low, high]: `TypeError` for a bool, string or non-number, `ValueError` for NaN, ±inf
   * or a value outside the bounds (clipped instead if `clip`). */
  checkValue(value: unknown): number {
    if (value instanceof PyFloat) value = value.value; // a number the caller marked as Python's float
    if (typeof value !== "number" && typeof value !== "bigint") {
      throw new LdpTypeError("value_type", { expected: "float", got: kindOf(value) });
    }
    let x = Number(value);
    const bounds = { min: this.low, max: this.high };
    if (!Number.isFinite(x)) throw new LdpValueError("value_range", { got: exactInt(value), ...bounds, finite: true });
    if (!(this.low <= x && x <= this.high)) {
      if (!this.clip) {
        throw new LdpValueError("value_range", { got: exactInt(value), ...bounds },
          `${this.protocol} value ${x} is outside [low, high] = [${this.low}, ${this.high}] (pass clip: true in the ` +
          "params to clip instead)");
      }
      x = Math.min(Math.max(x, this.low), this.high);
    }
    return x;
  }

  /** (x − low)/(high − low) in [0, 1] (clamped against rounding). */
  unit(x: number): number {
    return Math.min(Math.max((x - this.low) / (this.high - this.low), 0.0), 1.0);
  }
}

/** ln((1 − q)/q) of a flip probability q (`DuchiParams._epsilon_of`). */
function duchiEpsilonOf(q: number): number {
  return q > 0 ? log1p((1.0 - 2.0 * q) / q) : Infinity;
}

/** Duchi et al.'s 1-bit mechanism (1BitMean): one bit per report. */
export class DuchiParams extends NumericParams {
  static readonly className = "DuchiParams";
  static readonly fields = DUCHI_PARAMS;
  readonly protocol = "duchi";
  /** The realized flip probability 1/(1 + e^ε) (moved up a step if rounding gave more than ε). */
  readonly q: number;

  constructor(values: ParamsDict) {
    super(values);
    let q = realizedProbability(logisticTail(this.epsilon));
    while (q > 0.0 && q < 0.5 && duchiEpsilonOf(q) > this.epsilon) q = realizedProbability(nextProbability(q, true));
    this.q = q;
    if (!(q > 0.0 && q < 0.5)) {
      const what = q >= 0.5 ? "small: the flip probability rounds to 1/2"
        : "large: the flip probability 1/(1+e^ε) is below the client's 2^-64 resolution";
      throw relation(q >= 0.5 ? "epsilon_too_small" : "epsilon_too_large", ["epsilon"],
        `epsilon=${this.epsilon} is too ${what}, so reports would not be private or informative`);
    }
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** ln((1 − q)/q) of the realized q. */
  get realizedEpsilon(): number {
    return duchiEpsilonOf(this.q);
  }

  get schema(): readonly Field[] {
    return [{ name: "bit", kind: "uint", size: 2 }];
  }

  get aggregateCells(): number {
    return 2;
  }
}

/** The discrete Piecewise Mechanism on `cells` output cells (2 <= cells <= 2^16). */
export class PiecewiseParams extends NumericParams {
  static readonly className = "PiecewiseParams";
  static readonly fields = PIECEWISE_PARAMS;
  readonly protocol = "piecewise";
  readonly cells: number;
  /** w = round(G/(e^{ε/2} + 1)) in [1, G − 1]: the high-probability band. */
  readonly window: number;
  /** Realized Pr[cell in the window] = w·e^ε/(w·e^ε + G − w) (a step lower if rounding gave more than ε). */
  readonly pIn: number;

  constructor(values: ParamsDict) {
    super(values);
    checkParams(this.values, PIECEWISE_PARAMS, "cells");
    const g = this.values.cells as number;
    this.cells = g;
    const w = Math.min(Math.max(Math.floor(g * logisticTail(this.epsilon / 2) + 0.5), 1), g - 1);
    this.window = w;
    let p = realizedProbability(1.0 / (1.0 + ((g - w) / w) * exp(-this.epsilon)));
    while (p > 0.0 && p < 1.0 && this.epsilonOf(p) > this.epsilon) p = realizedProbability(nextProbability(p, false));
    this.pIn = p;
    if (this.pIn >= 1.0) {
      throw relation("epsilon_too_large", ["epsilon", "cells"], `epsilon=${this.epsilon} is too large for cells=${g}: ` +
        "the window probability rounds to 1, so reports would not be private");
    }
    if (!(this.realizedEpsilon > 0)) {
      throw relation("epsilon_too_small", ["epsilon", "cells"], `epsilon=${this.epsilon} is too small for cells=${g}: ` +
        "inside and outside cells are equally likely at the client's resolution, so reports carry no information");
    }
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  private epsilonOf(p: number): number {
    const g = this.cells, w = this.window;
    return p < 1.0 ? log1p((p * g - w) / ((1.0 - p) * w)) : Infinity;
  }

  /** M = G − w: the input grid is 0..M. */
  get steps(): number {
    return this.cells - this.window;
  }

  /** ln((P_in/w)/((1 − P_in)/(G − w))) of the realized P_in. */
  get realizedEpsilon(): number {
    return this.epsilonOf(this.pIn);
  }

  /** `[k, φ]`: u = unit(x)·M = k + φ with 0 <= φ < 1 (k = M, φ = 0 at `high`). */
  grid(x: number): [number, number] {
    const m = this.steps;
    const u = this.unit(x) * m;
    const k = Math.min(Math.floor(u), m);
    return [k, k < m ? u - k : 0.0];
  }

  get schema(): readonly Field[] {
    return [{ name: "cell", kind: "uint", size: this.cells }];
  }

  get aggregateCells(): number {
    return this.cells;
  }
}

/** The Hybrid Mechanism: the discrete PM with probability α, else Duchi, both at ε. */
export class HybridParams extends NumericParams {
  static readonly className = "HybridParams";
  static readonly fields = HYBRID_PARAMS;
  readonly protocol = "hybrid";
  readonly cells: number;
  /** Duchi's branch at the same ε, bounds and clip. */
  readonly duchi: DuchiParams;
  /** Realized Pr[pm = 1]: 1 − e^{−ε/2} above `HYBRID_THRESHOLD`, else 0. */
  readonly alpha: number;
  private pm: PiecewiseParams | undefined;

  constructor(values: ParamsDict) {
    super(values);
    checkParams(this.values, HYBRID_PARAMS, "cells");
    this.cells = this.values.cells as number;
    // the branches' checks apply: Duchi's always, the piecewise one's when α > 0
    this.duchi = new DuchiParams({ epsilon: this.epsilon, low: this.low, high: this.high, clip: this.clip });
    this.alpha = this.epsilon > HYBRID_THRESHOLD ? realizedProbability(-expm1(-this.epsilon / 2)) : 0.0;
    if (this.alpha > 0) void this.piecewise.pIn;
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** The piecewise branch at the same ε, bounds, clip and cells (made on first use). */
  get piecewise(): PiecewiseParams {
    if (this.pm === undefined) {
      this.pm = new PiecewiseParams({ epsilon: this.epsilon, low: this.low, high: this.high, clip: this.clip, cells: this.cells });
    }
    return this.pm;
  }

  /** The larger branch's realized ε (Duchi's alone when α = 0). */
  get realizedEpsilon(): number {
    const d = this.duchi.realizedEpsilon;
    return this.alpha > 0 ? Math.max(d, this.piecewise.realizedEpsilon) : d;
  }

  get schema(): readonly Field[] {
    return [{ name: "pm", kind: "uint", size: 2 }, { name: "out", kind: "uint", size: this.cells }];
  }

  get aggregateCells(): number {
    return this.cells + 2;
  }
}

/** Duchi's bit for x: round to an end, then flip with probability q (draws: `bernoulli(φ)`, `bernoulli(q)`). */
export function duchiBit(params: DuchiParams, x: number, rng: RandomSource): number {
  return rng.bernoulli(params.unit(x)) !== rng.bernoulli(params.q) ? 1 : 0;
}

/** The discrete PM's cell for x: randomized rounding to the grid, then window or outside. */
export function piecewiseCell(params: PiecewiseParams, x: number, rng: RandomSource): number {
  let [k, frac] = params.grid(x);
  if (rng.bernoulli(frac)) k += 1;
  const w = params.window;
  if (rng.bernoulli(params.pIn)) return k + rng.randbelow(w);
  const r = rng.randbelow(params.cells - w);
  return r < k ? r : r + w;
}

abstract class NumericEncoder<P extends NumericParams> extends Encoder<P, number> {
  prepare(value: unknown): number {
    return this.params.checkValue(value);
  }
}

/** Client encoder for `DuchiParams`; values are numbers in [low, high]. */
export class DuchiEncoder extends NumericEncoder<DuchiParams> {
  randomize(prepared: number): Report {
    return this.report([["bit", duchiBit(this.params, prepared, this.rng)]]);
  }
}

/** Client encoder for `PiecewiseParams`; values are numbers in [low, high]. */
export class PiecewiseEncoder extends NumericEncoder<PiecewiseParams> {
  randomize(prepared: number): Report {
    return this.report([["cell", piecewiseCell(this.params, prepared, this.rng)]]);
  }
}

/** Client encoder for `HybridParams`; values are numbers in [low, high]. */
export class HybridEncoder extends NumericEncoder<HybridParams> {
  randomize(prepared: number): Report {
    const pr = this.params;
    if (this.rng.bernoulli(pr.alpha)) return this.report([["pm", 1], ["out", piecewiseCell(pr.piecewise, prepared, this.rng)]]);
    return this.report([["pm", 0], ["out", duchiBit(pr.duchi, prepared, this.rng)]]);
  }
}

export const duchi: ProtocolEntry<DuchiParams, number> = {
  name: "duchi",
  Params: DuchiParams,
  makeEncoder: (params, options) => new DuchiEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const piecewise: ProtocolEntry<PiecewiseParams, number> = {
  name: "piecewise",
  Params: PiecewiseParams,
  makeEncoder: (params, options) => new PiecewiseEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const hybrid: ProtocolEntry<HybridParams, number> = {
  name: "hybrid",
  Params: HybridParams,
  makeEncoder: (params, options) => new HybridEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
