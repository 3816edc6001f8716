/**
 * Projective Geometry Response and its hybrid, client side (`ldp/encoders/projective_geometry.py`,
 * `ldp/encoders/projective_layout.py`; Feldman, Nelson, Nguyen & Talwar, ICML 2022, §3 and §4).
 *
 * PGR (`pgr`): the d values are the first d points of PG(t−1, q) (`projective-space.ts`), q prime and t ≥ 2 the
 * smallest with K = P_t ≥ d. HPG (`hpg`): the values are dealt into h blocks of b = P_t points (value x is point
 * x mod b of block ⌊x/b⌋), t the smallest with h·b ≥ d, K = h·b. A report is j in [0, K): with probability
 * γ = realized(K/(K + (e^ε − 1)·s)) uniform, else uniform on the value's own set, its hyperplane in its block
 * (s = P_{t−1} points). ε* = ln(1 + K(1 − γ)/(γ·s)) of the realized γ, exactly; charged max(ε, ε*).
 *
 * `q` (and hpg's `blocks`) left out (null) is the layout of least variance for a rare value (`bestPgrField`,
 * `bestHpgLayout`: Python's float search, in Python's order of operations, so the choice and the fingerprint are the
 * same); the resolved values are part of the parameters. A layout whose K exceeds the aggregate limit or whose decode
 * would take more than `MAX_DECODE_WORK` steps (K·q·t) is refused (`param_limit`); when the search finds none
 * feasible, the refusal names the least excess of its candidates (`leastExcess`), and `hpg` given a `q` that holds the
 * whole domain in one block is refused `two_blocks`. Where no feasible candidate's γ is inside (0, 1), the search
 * takes the first feasible one and ε is refused as `epsilon_too_large`/`epsilon_too_small`.
 *
 * Draws: `B(γ)`, then `R(K)` if true; else `R(s)`, the index of a point of the value's hyperplane
 * (`hyperplanePoint`).
 */
import { LdpValueError, exactInt } from "../errors.js";
import { expm1 } from "../pymath.js";
import { RandomSource, realizedProbability } from "../random.js";
import { fraction, logRatio } from "../rational.js";
import {
  Field, MAX_AGGREGATE_CELLS, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkParams, relation,
} from "../params/base.js";
import { HPG_PARAMS, PGR_PARAMS } from "../params/tables.js";
import { DomainEncoder, ProtocolEntry, Report, checkLabels, withFrozenLabels } from "../encoders/base.js";
import { MAX_FIELD, hyperplanePoint, isPrime, pointIndex, pointVector, points, primesUpTo } from "./projective-space.js";

/** The most steps (K·q·t, the decoder's dynamic programme) a decode may take (`MAX_DECODE_WORK`). */
export const MAX_DECODE_WORK = 2 ** 32;

// ---------------------------------------------------------------------------------------------------------------
// The layout (`projective_layout.py`). Every integer below is exact as a number: d ≤ 2^32 and the loops stop once
// h·P_t ≥ d, so h·P_t < q·d + h < 2^49; a feasible layout has K ≤ 2^28.

/** `dimension`: t, the smallest t ≥ 2 with h·P_t ≥ d. */
export function dimension(q: number, blocks: number, domainSize: number): number {
  let t = 2;
  for (let p = q + 1; blocks * p < domainSize; p = p * q + 1) t++;
  return t;
}

/** `own_share`: γ = K/(K + (e^ε − 1)·s) before rounding, 0 past ε = 700. */
export function ownShare(epsilon: number, order: number, setSize: number): number {
  return epsilon > 700.0 ? 0.0 : order / (order + expm1(epsilon) * setSize);
}

/** Within the aggregate limit (K ≤ 2^28) and the decode limit (K·q·t ≤ 2^32). The product may round past 2^53, but
 * only far above 2^32, so the comparison is exact. */
function feasible(q: number, t: number, blocks: number): boolean {
  const order = blocks * points(q, t);
  return order <= MAX_AGGREGATE_CELLS && order * q * t <= MAX_DECODE_WORK;
}

/** `term_variance`: Var[α·A + β·T] of one user, A ⊆ T. */
function termVariance(a: number, b: number, pa: number, pt: number): number {
  return a * a * pa * (1.0 - pa) + b * b * pt * (1.0 - pt) + 2.0 * a * b * pa * (1.0 - pt);
}

/** `rare_variance`: per-user Var[ĉ_x]/n of a value nobody holds in a full block, the other users spread evenly over
 * the other d − 1 values, at the unrounded γ (Infinity where γ is not inside (0, 1)). The operations in Python's
 * order, so that the search compares the same doubles. */
export function rareVariance(epsilon: number, q: number, t: number, blocks: number, domainSize: number): number {
  const b = points(q, t), s = points(q, t - 1), c = points(q, t - 2), k = blocks * b;
  const g = ownShare(epsilon, k, s);
  if (!(g > 0.0 && g < 1.0)) return Infinity;
  // `coefficients`: α = 1/((1−γ)(1 − c/s)), β = −α·c/s
  const alpha = 1.0 / ((1.0 - g) * (1.0 - c / s)), beta = (-alpha * c) / s;
  // `report_classes`: (Pr[A], Pr[T]) of a user of another value of the block, and of another block
  const uniformA = (g * s) / k, uniformT = g / blocks;
  const same = termVariance(alpha, beta, uniformA + ((1.0 - g) * c) / s, uniformT + 1.0 - g);
  const other = termVariance(alpha, beta, uniformA, uniformT);
  const share = (Math.min(b, domainSize) - 1) / (domainSize - 1);
  return share * same + (1 - share) * other;
}

/** `field_candidates`: the primes q ≤ 2(e^ε − 1) + 6, at most `MAX_FIELD` (every prime up to it from ε ≈ 10.4; ε is
 * taken at most 700, so the bound stays finite). */
export function fieldCandidates(epsilon: number): number[] {
  const bound = 2.0 * expm1(Math.min(epsilon, 700.0)) + 6.0;
  return primesUpTo(bound >= MAX_FIELD ? MAX_FIELD : Math.floor(bound));
}

/** `least_excess`: `[limit, got, max]` of the `param_limit` refusal when none of `layouts` ([q, h] pairs) is feasible:
 * the fewest outputs of any, against `MAX_AGGREGATE_CELLS`, when every one has too many; else the least decode work
 * among those within it, against `MAX_DECODE_WORK`. Exact as numbers: h·P_t < 2^49 (see above), and K·q·t < 2^49
 * where K ≤ 2^28. `layouts` must not be empty. */
export function leastExcess(domainSize: number, layouts: readonly (readonly [number, number])[]):
  ["aggregate_cells" | "decode_work", number, number] {
  let fewest = Infinity, least = Infinity;
  for (const [q, blocks] of layouts) {
    const t = dimension(q, blocks, domainSize), order = blocks * points(q, t);
    fewest = Math.min(fewest, order);
    if (order <= MAX_AGGREGATE_CELLS) least = Math.min(least, order * q * t);
  }
  return least === Infinity ? ["aggregate_cells", fewest, MAX_AGGREGATE_CELLS] : ["decode_work", least, MAX_DECODE_WORK];
}

/** `_best`: the first (q, h) of `layouts` of least `rareVariance` (a later one must beat it by a relative 1e-12)
 * among the feasible ones; the first feasible one when none has a finite variance (ε so large or so small that γ is
 * 0 or 1 for every one: its params then refuse ε for what it is, `epsilon_too_large`/`epsilon_too_small`); null
 * when none is feasible. */
function best(epsilon: number, domainSize: number, layouts: Iterable<[number, number]>): [number, number] | null {
  let chosen: [number, number] | null = null, least = Infinity;
  for (const [q, blocks] of layouts) {
    const t = dimension(q, blocks, domainSize);
    if (!feasible(q, t, blocks)) continue;
    const v = rareVariance(epsilon, q, t, blocks, domainSize);
    if (chosen === null || v < least * (1 - 1e-12)) {
      chosen = [q, blocks];
      least = v;
    }
  }
  return chosen;
}

/** `pgr_layouts`: the [q, 1] `bestPgrField` chooses among, q of `fieldCandidates`. */
export function pgrLayouts(epsilon: number): [number, number][] {
  return fieldCandidates(epsilon).map((q): [number, number] => [q, 1]);
}

/** `best_pgr_field`: the q of `fieldCandidates` of least `rareVariance` (the smallest on a near tie) among the
 * feasible ones (the first feasible one when no variance is finite); null when none is feasible. */
export function bestPgrField(epsilon: number, domainSize: number): number | null {
  const chosen = best(epsilon, domainSize, pgrLayouts(epsilon));
  return chosen === null ? null : chosen[0];
}

/** `hpg_layouts`: the [q, h] `bestHpgLayout` chooses among, h ≥ 2: for each candidate q (or the given one), the given
 * `blocks`, or h = ⌈d/P_t⌉ for each t ≥ 2 with P_t < d and P_t ≤ 2^28, in increasing q then t. Empty only when `q` is
 * given, `blocks` is not and P_2 = q + 1 ≥ d (`two_blocks`). */
export function hpgLayouts(epsilon: number, domainSize: number, q: number | null = null,
  blocks: number | null = null): [number, number][] {
  const layouts: [number, number][] = [];
  for (const qq of q !== null ? [q] : fieldCandidates(epsilon)) {
    if (blocks !== null) {
      if (blocks >= 2) layouts.push([qq, blocks]);
      continue;
    }
    // ⌈d/b⌉ of doubles is exact: d ≤ 2^32, so d/b is within 2^-20/b of its value and 1/b from the next integer
    for (let b = qq + 1; b < domainSize && b <= MAX_AGGREGATE_CELLS; b = b * qq + 1) {
      const h = Math.ceil(domainSize / b);
      if (h >= 2) layouts.push([qq, h]);
    }
  }
  return layouts;
}

/** `best_hpg_layout`: [q, h] of least `rareVariance` (the first on a near tie, in increasing q then t) among the
 * feasible ones of `hpgLayouts` (the first feasible one when no variance is finite); null when none is feasible. */
export function bestHpgLayout(epsilon: number, domainSize: number, q: number | null = null,
  blocks: number | null = null): [number, number] | null {
  return best(epsilon, domainSize, hpgLayouts(epsilon, domainSize, q, blocks));
}

// ---------------------------------------------------------------------------------------------------------------
// The parameters.

type Protocol = "pgr" | "hpg";

function notPrime(protocol: Protocol, q: number): LdpValueError {
  return relation("prime_field", ["q"], `q=${q} is not prime: ${protocol} needs the field F_q`);
}

/** `_no_layout`: the search found no layout among `layouts`, its candidates. None at all (hpg's `q` given, and every
 * t at it holds the domain in one block): `two_blocks`; else `param_limit` with the least excess of any
 * (`leastExcess`). */
function noLayout(protocol: Protocol, values: ParamsDict, layouts: readonly [number, number][]): LdpValueError {
  if (layouts.length === 0) {
    return relation("two_blocks", ["domain_size", "q"], `hpg over F_${values.q} holds domain_size=${values.domain_size} ` +
      "in one block: give blocks, or use pgr");
  }
  const [limit, got, max] = leastExcess(values.domain_size as number, layouts);
  return new LdpValueError("param_limit", { limit, got, max },
    `no ${protocol} layout at epsilon=${values.epsilon} over domain_size=${values.domain_size} values stays within ` +
    `the limit of ${max} ${limit === "aggregate_cells" ? "outputs" : "decode steps"} (the least: ${got})`);
}

/** PGR's `q` when it is left out: the checks that precede it, then `bestPgrField` (Python's `__post_init__` sets the
 * field, so `toDict` and the fingerprint carry it). */
function resolvePgr(given: ParamsDict): ParamsDict {
  const values: ParamsDict = { ...given, q: given.q ?? null };
  if (values.q !== null) return values;
  checkParams(values, PGR_PARAMS, "epsilon", "domain_size");
  const epsilon = values.epsilon as number;
  const q = bestPgrField(epsilon, values.domain_size as number);
  if (q === null) throw noLayout("pgr", values, pgrLayouts(epsilon));
  return { ...values, q };
}

/** HPG's `q` and `blocks` when either is left out: the checks that precede them, then `bestHpgLayout`. */
function resolveHpg(given: ParamsDict): ParamsDict {
  const values: ParamsDict = { ...given, q: given.q ?? null, blocks: given.blocks ?? null };
  if (values.q !== null && values.blocks !== null) return values;
  checkParams(values, HPG_PARAMS, "epsilon", "blocks", { blocks: () => values.domain_size as number });
  const epsilon = values.epsilon as number, d = values.domain_size as number, q = values.q as number | null;
  if (q !== null && !isPrime(q)) throw notPrime("hpg", q);
  const layouts = hpgLayouts(epsilon, d, q, values.blocks as number | null);
  const layout = best(epsilon, d, layouts); // `bestHpgLayout`, its candidates kept for the refusal
  if (layout === null) throw noLayout("hpg", values, layouts);
  return { ...values, q: layout[0], blocks: layout[1] };
}

/** What PGR and HPG share (Python's `_ProjectiveParams`): the layout (q, t, blocks), the law and its privacy. The
 * subclass constructor resolves what was left out before `super`, then calls `checkLayout`. */
export abstract class ProjectiveParams extends ProtocolParams {
  abstract override readonly protocol: Protocol;
  private t = 0;
  private b = 0;
  private s = 0;
  private g = NaN;
  private labels_: readonly string[] | null = null;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  /** `_check_layout`, then the labels and the limits, in Python's order (the table's rows up to `last` first: they
   * were checked already when the layout was resolved, and the first refusal is the same). */
  protected checkLayout(last: "q" | "blocks"): void {
    const v = this.values, d = v.domain_size as number;
    checkParams(v, this.fieldSpecs, "epsilon", last, { blocks: () => d });
    const { protocol, q, blocks } = this;
    if (!isPrime(q)) throw notPrime(protocol, q);
    this.t = dimension(q, blocks, d);
    this.b = points(q, this.t);
    this.s = points(q, this.t - 1);
    const work = BigInt(this.order) * BigInt(q * this.t); // K < 2^49 here, but K·q·t may pass 2^53
    if (work > BigInt(MAX_DECODE_WORK)) {
      throw new LdpValueError("param_limit", { limit: "decode_work", got: exactInt(work), max: MAX_DECODE_WORK },
        `${protocol} with q=${q}, t=${this.t} and ${blocks} block(s) (K=${this.order}) would take ${work} steps to ` +
        `decode, over the limit of ${MAX_DECODE_WORK}: choose another q${blocks === 1 ? " or hpg" : ""}`);
    }
    this.g = realizedProbability(ownShare(this.epsilon, this.order, this.s));
    const params = ["epsilon", "domain_size", "q"];
    if (this.g <= 0.0) {
      throw relation("epsilon_too_large", params, `epsilon=${this.epsilon} is too large for ${protocol} with q=${q}: ` +
        "the uniform branch rounds to probability 0 at the client's resolution, so reports would not be private");
    }
    if (this.g >= 1.0) {
      throw relation("epsilon_too_small", params, `epsilon=${this.epsilon} is too small for ${protocol} with q=${q}: ` +
        "the uniform branch rounds to probability 1, so reports would carry no information");
    }
    this.labels_ = checkLabels(v.labels, d);
    checkCollectable(protocol, this.schema, this.aggregateCells);
  }

  get epsilon(): number {
    return this.values.epsilon as number;
  }

  override get domainSize(): number {
    return this.values.domain_size as number;
  }

  /** q, the field order (resolved). */
  get q(): number {
    return this.values.q as number;
  }

  /** h, the blocks (1 for PGR). */
  abstract get blocks(): number;

  get labels(): readonly string[] | null {
    return this.labels_;
  }

  /** t: points are lines of F_q^t. */
  get dimension(): number {
    return this.t;
  }

  /** b = P_t: the points of one block (all of them for PGR). */
  get blockPoints(): number {
    return this.b;
  }

  /** K = h·b: reports are j in [0, K). */
  get order(): number {
    return this.blocks * this.b;
  }

  /** s = P_{t−1}: the points of a hyperplane, a value's own set. */
  get setSize(): number {
    return this.s;
  }

  /** γ: the realized probability of the uniform branch. */
  get gamma(): number {
    return this.g;
  }

  /** ln(1 + K(1 − γ)/(γ·s)) of the realized γ, exactly: with γ = a/A, the ratio (a·s + K(A − a))/(a·s) in lowest
   * terms, then log(numerator) − log(denominator) as Python takes them. */
  get effectiveEpsilon(): number {
    const [a, A] = fraction(this.g), s = BigInt(this.s);
    return logRatio([a * s + BigInt(this.order) * (A - a), a * s]);
  }

  /** max(epsilon, effectiveEpsilon). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) this.cost = Object.freeze({ epsilon: Math.max(this.epsilon, this.effectiveEpsilon), delta: 0.0 });
    return this.cost;
  }

  get aggregateCells(): number {
    return this.order;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) this.fields_ = Object.freeze([{ name: "j", kind: "uint", size: this.order }] as Field[]);
    return this.fields_;
  }

  /** The name of value `index`: its label, else the index. */
  labelOf(index: number): string {
    return this.labels_ !== null ? this.labels_[index] : String(index);
  }
}

/** Projective Geometry Response at `epsilon` over `domain_size` values over the field of `q` elements (null:
 * `bestPgrField`), optionally named by `labels` (Python's `PGRParams`). */
export class PGRParams extends ProjectiveParams {
  static readonly className = "PGRParams";
  static readonly fields = PGR_PARAMS;
  readonly protocol = "pgr";

  constructor(values: ParamsDict) {
    super(resolvePgr(withFrozenLabels(values)));
    this.checkLayout("q");
  }

  get blocks(): number {
    return 1;
  }
}

/** Hybrid Projective Geometry Response at `epsilon` over `domain_size` values in `blocks` ≥ 2 blocks over the field
 * of `q` elements (either null: `bestHpgLayout`), optionally named by `labels` (Python's `HPGParams`). */
export class HPGParams extends ProjectiveParams {
  static readonly className = "HPGParams";
  static readonly fields = HPG_PARAMS;
  readonly protocol = "hpg";

  constructor(values: ParamsDict) {
    super(resolveHpg(withFrozenLabels(values)));
    this.checkLayout("blocks");
  }

  /** h (resolved). */
  get blocks(): number {
    return this.values.blocks as number;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The report.

/** `own_point`: the report of the own-set branch, value `value`'s block offset plus the index of the `r`-th point of
 * its hyperplane. */
export function ownPoint(params: ProjectiveParams, value: number, r: number): number {
  const { blockPoints: b, q, dimension: t } = params;
  const point = value % b, offset = value - point;
  return offset + pointIndex(hyperplanePoint(pointVector(point, q, t), r, q), q);
}

/** The reported j of value `index`. */
export function drawProjective(params: ProjectiveParams, index: number, rng: RandomSource): number {
  if (rng.bernoulli(params.gamma)) return rng.randbelow(params.order);
  return ownPoint(params, index, rng.randbelow(params.setSize));
}

/** Client encoder for `PGRParams` and `HPGParams`; values are labels or indices in [0, d). */
export class ProjectiveEncoder<P extends ProjectiveParams> extends DomainEncoder<P> {
  randomize(prepared: number): Report {
    return this.report([["j", drawProjective(this.params, prepared, this.rng)]]);
  }
}

export const pgr: ProtocolEntry<PGRParams, number> = {
  name: "pgr",
  Params: PGRParams,
  makeEncoder: (params, options) => new ProjectiveEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};

export const hpg: ProtocolEntry<HPGParams, number> = {
  name: "hpg",
  Params: HPGParams,
  makeEncoder: (params, options) => new ProjectiveEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
