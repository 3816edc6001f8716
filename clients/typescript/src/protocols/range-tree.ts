/**
 * Hierarchical histograms for range queries, HH_B (`hh`), client side (`ldp/encoders/range_tree.py`; Cormode,
 * Kulkarni & Srivastava, "Answering Range Queries Under Local Differential Privacy", PVLDB 12(10), 2019, §4).
 *
 * [low, high] is cut into D = branching^depth buckets of equal width (edges low + (high − low)·i/D, the last `high`;
 * the buckets of `histogram-buckets.ts`). The B-ary tree over them has levels 1..depth below the root, level l holding
 * B^l nodes. A report draws its level independently of the value (uniform, or by `level_weights`) and sends the index
 * of the value's node there through that level's frequency oracle at the full ε: GRR or OUE (`oracle`; "auto": per
 * level the smaller null variance q(1−q)/(p−q)², OUE on a tie or when GRR is not realizable). Charged the largest of
 * the oracles' costs.
 *
 * Draws: `R(depth)` (with weights: `R(Σw)`, the first level whose cumulative weight exceeds it); at a GRR level `B(p)`,
 * then `R(m−1)` if false; at an OUE level `BB(q, m)`, `B(1/2)`. Wire: `level` (0-based), `y` (the GRR node, 0 at an
 * OUE level; only when some level uses GRR), `bits` (D bits, the OUE bits in the first B^l positions; only when some
 * level uses OUE).
 */
import { LdpRefusal, LdpTypeError, LdpValueError, kindOf, showValue } from "../errors.js";
import { RandomSource } from "../random.js";
import {
  ChoiceOf, Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkInt, checkParams, relation,
} from "../params/base.js";
import { HH_PARAMS } from "../params/tables.js";
import { Encoder, ProtocolEntry, Report, bitsString } from "../encoders/base.js";
import { GRRParams } from "./randomized-response.js";
import { OUEParams, unaryDraw } from "./unary.js";
import { bucketIndex } from "./histogram-buckets.js";

/** `oracle`: per level the smaller null variance, OUE at every level, GRR at every level (its table's choices). */
export type HHOracle = ChoiceOf<typeof HH_PARAMS, "oracle">;
/** Most buckets (leaves) a tree may have (`MAX_LEAVES`). */
export const MAX_LEAVES = 1 << 16;

/** `null_variance`: V0 = q(1−q)/(p−q)², the variance per report of the count of a value nobody holds. */
export function nullVariance(p: number, q: number): number {
  return (q * (1.0 - q)) / (p - q) ** 2;
}

/** One level's frequency oracle over its B^l nodes, at the full ε. */
export type LevelOracle = GRRParams | OUEParams;

/** The oracle of `kind` over `m` nodes at `epsilon` ("auto": GRR when realizable and of smaller null variance). */
function levelOracle(epsilon: number, m: number, kind: string): LevelOracle {
  const values = { epsilon, domain_size: m, labels: null };
  if (kind === "grr") return new GRRParams(values);
  const oue = new OUEParams(values);
  if (kind === "oue") return oue;
  let grr: GRRParams | null = null;
  try {
    grr = new GRRParams(values);
  } catch (err) {
    if (!(err instanceof LdpValueError)) throw err;
  }
  return grr !== null && nullVariance(grr.p, grr.q) < nullVariance(oue.p, oue.q) ? grr : oue;
}

/** `low` or `high`: a finite real number (anything else a `ValueError`, as Python's check: its `param_type` here is a
 * `ValueError`, where the table's generic check would throw an `LdpTypeError`, so hh checks these two rows itself). */
function finiteBound(v: unknown, name: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) {
    const message = `${name} must be a finite number, got ${showValue(v)}`;
    if (typeof v !== "number") throw new LdpValueError("param_type", { param: name, expected: "float", got: kindOf(v) }, message);
    throw new LdpValueError("param_range", { param: name, got: v, finite: true }, message);
  }
  return v;
}

/** `values` with a list of `level_weights` copied and frozen (Python's `from_dict` makes it a tuple). */
function withFrozenWeights(values: ParamsDict): ParamsDict {
  const w = values.level_weights;
  return Array.isArray(w) ? { ...values, level_weights: Object.freeze([...w]) } : values;
}

/** HH_B parameters (Python's `HHParams`): ε per report, [low, high] cut into branching^depth equal buckets, one level
 * of the tree per report (uniform, or by `level_weights`), reported by `oracle`. */
export class HHParams extends ProtocolParams {
  static readonly className = "HHParams";
  static readonly fields = HH_PARAMS;
  readonly protocol = "hh";
  readonly epsilon: number;
  readonly low: number;
  readonly high: number;
  readonly branching: number;
  readonly depth: number;
  readonly clip: boolean;
  /** Each level's weight in the draw, levels 1..depth (all 1 without `level_weights`). */
  readonly weights: readonly number[];
  /** Whether the levels are drawn by `level_weights` (else uniformly). */
  readonly weighted: boolean;
  /** The bucket edges: low + (high − low)·i/D for i < D, then high. */
  readonly edges: readonly number[];
  /** Each level's oracle, levels 1..depth (index 0 is level 1). */
  readonly oracles: readonly LevelOracle[];
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(withFrozenWeights(values));
    const v = this.values;
    checkParams(v, HH_PARAMS, "epsilon", "epsilon");
    this.epsilon = v.epsilon as number;
    this.low = finiteBound(v.low, "low");
    this.high = finiteBound(v.high, "high");
    if (!(this.low < this.high)) {
      throw relation("low<high", ["low", "high"], `need low < high, got low=${this.low}, high=${this.high}`);
    }
    checkParams(v, HH_PARAMS, "branching", "depth");
    this.branching = v.branching as number;
    this.depth = v.depth as number;
    if (this.branching ** this.depth > MAX_LEAVES) {
      throw new LdpValueError("param_limit", { limit: "leaves", got: this.branching ** this.depth, max: MAX_LEAVES },
        `branching^depth = ${this.branching}^${this.depth} buckets is over the ${MAX_LEAVES} allowed`);
    }
    checkParams(v, HH_PARAMS, "oracle"); // the oracle, then clip (level_weights is parsed below, after them)
    const oracle = v.oracle as HHOracle;
    this.clip = v.clip as boolean;
    const w = v.level_weights;
    if (!Array.isArray(w)) throw new LdpTypeError("param_type", { param: "level_weights", expected: "list", got: kindOf(w) });
    if (w.length) {
      if (w.length !== this.depth) {
        throw new LdpValueError("param_length", { param: "level_weights", got: w.length, min: this.depth, max: this.depth },
          `level_weights must have depth=${this.depth} entries (levels 1..${this.depth}), got ${w.length}`);
      }
      w.forEach((x, i) => checkInt(x, "level_weights", 0, 2 ** 32, { index: i }));
      if (w[w.length - 1] === 0) {
        throw relation("leaf_weight", ["level_weights"], "level_weights must give the leaf level (the last) a weight " +
          "> 0: the buckets' counts are estimated from it");
      }
    }
    this.weighted = w.length > 0;
    this.weights = Object.freeze(this.weighted ? [...(w as number[])] : new Array<number>(this.depth).fill(1));
    const d = this.numBuckets, span = this.high - this.low;
    const edges = Array.from({ length: d }, (_, i) => this.low + (span * i) / d);
    edges.push(this.high);
    if (new Set(edges).size !== edges.length) {
      throw relation("distinct_edges", ["low", "high", "branching", "depth"], `[${this.low}, ${this.high}] is too ` +
        `narrow for ${d} distinct bucket edges`);
    }
    this.edges = Object.freeze(edges);
    this.oracles = Object.freeze(Array.from({ length: this.depth }, (_, l) => {
      try {
        return levelOracle(this.epsilon, this.levelSize(l + 1), oracle);
      } catch (err) {
        // a level's ε too large or too small for its B^l nodes: a rule of these parameters
        if (!(err instanceof LdpRefusal && err.code === "param_relation")) throw err;
        throw relation(err.fields.rule as string, ["epsilon", "branching", "depth", "oracle"], err.message);
      }
    }));
    checkCollectable(this.protocol, this.schema, this.aggregateCells);
  }

  /** D = branching^depth. */
  get numBuckets(): number {
    return this.branching ** this.depth;
  }

  override get domainSize(): number {
    return this.numBuckets;
  }

  /** B^l: the nodes at level l (1..depth). */
  levelSize(level: number): number {
    return this.branching ** level;
  }

  /** Whether some level reports by GRR (the payload has `y`). */
  get usesGrr(): boolean {
    return this.oracles.some((o) => o instanceof GRRParams);
  }

  /** Whether some level reports by OUE (the payload has `bits`). */
  get usesOue(): boolean {
    return this.oracles.some((o) => o instanceof OUEParams);
  }

  /** The largest of the oracles' costs (the level is drawn independently of the value). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      this.cost = Object.freeze({ epsilon: Math.max(...this.oracles.map((o) => o.privacyCost.epsilon)), delta: 0.0 });
    }
    return this.cost;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      const fields: Field[] = [{ name: "level", kind: "uint", size: this.depth }];
      const grrSizes = this.oracles.flatMap((o, l) => (o instanceof GRRParams ? [this.levelSize(l + 1)] : []));
      if (grrSizes.length) fields.push({ name: "y", kind: "uint", size: Math.max(...grrSizes) });
      if (this.usesOue) fields.push({ name: "bits", kind: "bits", size: this.numBuckets });
      this.fields_ = Object.freeze(fields);
    }
    return this.fields_;
  }

  get aggregateCells(): number {
    return this.depth * (this.numBuckets + 1);
  }

  /** The bucket of a number (`bucketIndex`). */
  bucketOf(value: unknown): number {
    return bucketIndex(this.edges, value, this.clip);
  }
}

/** A report's level, 0-based: `R(depth)`, or with weights `R(Σw)` and the first level whose cumulative weight exceeds
 * it. */
export function drawLevel(params: HHParams, rng: RandomSource): number {
  if (!params.weighted) return rng.randbelow(params.depth);
  let r = rng.randbelow(params.weights.reduce((a, b) => a + b, 0));
  let level = 0;
  while (r >= params.weights[level]) r -= params.weights[level++];
  return level;
}

/** Client encoder for `HHParams`; values are real numbers in [low, high]. */
export class HHEncoder extends Encoder<HHParams, number> {
  prepare(value: unknown): number {
    return this.params.bucketOf(value);
  }

  randomize(prepared: number): Report {
    const pr = this.params, rng = this.rng, d = pr.numBuckets;
    const level = drawLevel(pr, rng);
    const m = pr.levelSize(level + 1);
    const node = Math.floor(prepared / (d / m));
    const oracle = pr.oracles[level];
    const payload: Array<readonly [string, number | string]> = [["level", level]];
    if (oracle instanceof GRRParams) {
      let y = node;
      if (!rng.bernoulli(oracle.p)) {
        const other = rng.randbelow(m - 1);
        y = other + (other >= node ? 1 : 0);
      }
      payload.push(["y", y]);
      if (pr.usesOue) payload.push(["bits", "0".repeat(d)]);
    } else {
      const bits = unaryDraw(oracle.p, oracle.q, m, node, rng);
      if (pr.usesGrr) payload.push(["y", 0]);
      payload.push(["bits", bitsString(bits, d)]);
    }
    return this.report(payload);
  }
}

export const hh: ProtocolEntry<HHParams, number> = {
  name: "hh",
  Params: HHParams,
  makeEncoder: (params, options) => new HHEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
