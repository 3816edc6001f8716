/**
 * Several attributes in one report (`multi`; Wang et al., "Collecting and Analyzing Multidimensional Data with
 * Local Differential Privacy", ICDE 2019; Arcolezi et al. 2021; `ldp/encoders/multi.py`).
 *
 * `d ≥ 2` attributes, each `[name, protocol, {params without epsilon}]` with a fixed-domain or numeric protocol
 * (`rr`: symmetric binary RR at the attribute's ε). Mode `split` reports every attribute at ε/d and costs the
 * exactly rounded sum of their costs (`math.fsum`); mode `sample` draws one attribute `R(d)`, reports it at the full
 * ε with zeros in the others' fields, and costs the largest attribute's. Report fields are the attributes' own,
 * prefixed `name_`, after `attr` in `sample` mode.
 */
import { PyFloat } from "../canonical.js";
import { LdpTypeError, LdpValueError, kindOf, showValue } from "../errors.js";
import { fsum } from "../rational.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, checkCollectable, checkEpsilon, checkParams, fromDict,
  logisticTail, relation, renaming, sortedByCodePoint,
} from "../params/base.js";
import { MULTI_PARAMS } from "../params/tables.js";
import { Encoder, EncoderOptions, PayloadValue, ProtocolEntry, Report } from "../encoders/base.js";
import { grr, rr } from "./randomized-response.js";
import { bucketGrr, dbitflip } from "./histogram.js";
import { duchi, hybrid, piecewise } from "./numeric.js";

/** The most fields one report carries (the wire format's limit). */
export const MAX_FIELDS = 16;
/** The protocols an attribute may use. */
export const COMPONENTS = /* @__PURE__ */ Object.freeze(
  { rr, grr, "bucket-grr": bucketGrr, dbitflip, duchi, piecewise, hybrid } as Record<string, ProtocolEntry>,
);
const NAME_RE = /^[a-z][a-z0-9_]{0,30}$/;

type Attribute = readonly [string, string, Readonly<Record<string, unknown>>];

/** `attributes[i]` as `[name, protocol, params]`, checked (Python's `_normalized`). */
function normalized(a: unknown, i: number): Attribute {
  const where = { param: "attributes", index: i } as const;
  let name: unknown, proto: unknown, params: unknown;
  if (Array.isArray(a) && a.length === 3) {
    [name, proto, params] = a;
  } else if (kindOf(a) === "object") {
    const keys = sortedByCodePoint(Object.keys(a as object));
    if (keys.join(",") !== "name,params,protocol") {
      throw new LdpValueError("param_type", { ...where, expected: "attribute", got: "object" },
        `attributes[${i}] must have exactly the keys name, protocol, params; got ${JSON.stringify(keys)}`);
    }
    ({ name, protocol: proto, params } = a as Record<string, unknown>);
  } else {
    throw new LdpTypeError("param_type", { ...where, expected: "attribute", got: kindOf(a) },
      `attributes[${i}] must be [name, protocol, params] or an object of them, got ${kindOf(a)}`);
  }
  if (typeof name !== "string" || !NAME_RE.test(name)) {
    const message = `attributes[${i}]: names are [a-z][a-z0-9_]{0,30} (they prefix report fields), got ${showValue(name)}`;
    if (typeof name !== "string") throw new LdpValueError("param_type", { ...where, expected: "string", got: kindOf(name) }, message);
    throw relation("attribute_name", ["attributes"], message, { index: i });
  }
  const protocols = Object.keys(COMPONENTS);
  if (!(typeof proto === "string" && protocols.includes(proto))) {
    throw new LdpValueError("param_choice", { param: "attributes", choices: protocols, got: proto ?? null, index: i },
      `attributes[${i}] (${name}): protocol must be one of ${protocols.join(", ")}, got ${showValue(proto)}`);
  }
  if (kindOf(params) !== "object") {
    throw new LdpTypeError("param_type", { ...where, expected: "object", got: kindOf(params) },
      `attributes[${i}] (${name}): params must be an object, got ${kindOf(params)}`);
  }
  if ("epsilon" in (params as object)) {
    throw new LdpValueError("unknown_params", { params: ["epsilon"], attribute: name }, `attributes[${i}] (${name}): ` +
      "params must not carry epsilon (the multi's epsilon is split or given whole by the mode)");
  }
  return [name, proto as string, params as Record<string, unknown>];
}

/** An attribute's parameters at ε = `epsilon`. */
function build(proto: string, params: Readonly<Record<string, unknown>>, epsilon: number): ProtocolParams {
  if (proto === "rr") {
    const keys = Object.keys(params);
    if (keys.length) {
      const sorted = sortedByCodePoint(keys);
      throw new LdpValueError("unknown_params", { params: sorted },
        `rr attributes take no params (symmetric RR at the attribute's ε), got ${JSON.stringify(sorted)}`);
    }
    const eps = checkEpsilon(epsilon, "epsilon");
    const p = logisticTail(eps), q = logisticTail(-eps);
    if (q === 1.0) {
      throw relation("epsilon_too_large", ["epsilon"], `epsilon=${eps} is too large for binary RR: q = 1/(1+e^-ε) ` +
        "rounds to 1 in double precision, so reports would not be private");
    }
    return fromDict(rr.Params, { p, q });
  }
  return fromDict(COMPONENTS[proto].Params, { ...params, epsilon });
}

/** multi parameters: the total ε, the mode, the attributes. */
export class MultiParams extends ProtocolParams {
  static readonly className = "MultiParams";
  static readonly fields = MULTI_PARAMS;
  readonly protocol = "multi";
  readonly epsilon: number;
  readonly mode: "split" | "sample";
  readonly names: readonly string[];
  readonly protocols: readonly string[];
  /** Each attribute's parameters, at ε/d (`split`) or ε (`sample`). */
  readonly components: readonly ProtocolParams[];
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    checkParams(v, MULTI_PARAMS);
    this.epsilon = v.epsilon as number;
    this.mode = v.mode as "split" | "sample";
    const raw = v.attributes;
    if (!Array.isArray(raw)) {
      throw new LdpTypeError("param_type", { param: "attributes", expected: "list", got: kindOf(raw) });
    }
    if (raw.length < 2) {
      throw new LdpValueError("param_length", { param: "attributes", got: raw.length, min: 2 },
        `a multi report needs at least 2 attributes (use the protocol itself for one), got ${raw.length}`);
    }
    const attrs = raw.map(normalized);
    this.names = Object.freeze(attrs.map((a) => a[0]));
    if (new Set(this.names).size !== this.names.length) {
      throw relation("distinct", ["attributes"], `attribute names must be distinct, got ${JSON.stringify(this.names)}`);
    }
    this.protocols = Object.freeze(attrs.map((a) => a[1]));
    const each = this.mode === "split" ? this.epsilon / attrs.length : this.epsilon;
    this.components = Object.freeze(attrs.map(([name, proto, params], i) => {
      return renaming({}, () => build(proto, params, each), { attribute: name }, `attributes[${i}] (${name}): ${proto} at ε=${each}: `);
    }));
    const fieldNames = this.schema.map((f) => f.name);
    if (fieldNames.length > MAX_FIELDS) {
      throw new LdpValueError("param_limit", { limit: "fields", got: fieldNames.length, max: MAX_FIELDS },
        `a multi report carries at most ${MAX_FIELDS} fields (the wire format's limit); these attributes need ` +
        `${fieldNames.length}`);
    }
    const tooLong = fieldNames.filter((n) => [...n].length > 32);
    if (tooLong.length) {
      throw new LdpValueError("param_limit", { limit: "field_name_characters", got: Math.max(...tooLong.map((n) => [...n].length)), max: 32 },
        `report field names are at most 32 characters; shorten the attribute names of ${JSON.stringify(tooLong)}`);
    }
    if (new Set(fieldNames).size !== fieldNames.length) {
      throw relation("distinct_fields", ["attributes"], "attribute names make colliding report fields " +
        `${JSON.stringify(sortedByCodePoint(fieldNames))}; rename an attribute`);
    }
    const cells = this.components.reduce((n, c) => n + (c as unknown as { aggregateCells: number }).aggregateCells,
      this.components.length);
    checkCollectable(this.protocol, this.schema, cells);
  }

  /** `to_dict()`: the attributes as `[name, protocol, params]`. */
  override toDict(): ParamsDict {
    const attributes = this.names.map((n, i) => [n, this.protocols[i], this.attributeParams(i, false)]);
    return { epsilon: this.epsilon, mode: this.mode, attributes };
  }

  /** The fingerprinted form: each attribute's canonical params without its ε (`{}` for `rr`). */
  override canonicalDict(): ParamsDict {
    const attributes = this.names.map((n, i) => [n, this.protocols[i], this.attributeParams(i, true)]);
    return { epsilon: new PyFloat(this.epsilon), mode: this.mode, attributes };
  }

  private attributeParams(i: number, canonical: boolean): Record<string, unknown> {
    const c = this.components[i];
    if (c.protocol === "rr") return {};
    const d = canonical ? c.canonicalDict() : c.toDict();
    const { epsilon: _epsilon, ...rest } = d;
    return rest;
  }

  override get domainSize(): number | null {
    return null;
  }

  /** `split`: fsum of the attributes' ε; `sample`: the largest. */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      const costs = this.components.map((c) => c.privacyCost.epsilon);
      this.cost = Object.freeze({ epsilon: this.mode === "split" ? fsum(costs) : Math.max(...costs), delta: 0.0 });
    }
    return this.cost;
  }

  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      const out: Field[] = this.mode === "sample" ? [{ name: "attr", kind: "uint", size: this.components.length }] : [];
      this.components.forEach((c, i) => {
        for (const f of c.schema) out.push({ ...f, name: `${this.names[i]}_${f.name}` });
      });
      this.fields_ = Object.freeze(out);
    }
    return this.fields_;
  }
}

/** Client encoder for `MultiParams`; a value is an object `{name: value}` of every attribute. */
export class MultiEncoder extends Encoder<MultiParams, unknown[]> {
  private readonly parts: readonly Encoder[];

  constructor(params: MultiParams, options: EncoderOptions = {}) {
    super(params, options);
    // The parts draw from this encoder's source, in the documented order.
    this.parts = params.components.map((c, i) => COMPONENTS[params.protocols[i]].makeEncoder(c, { rng: this.rng }));
  }

  prepare(value: unknown): unknown[] {
    const names = this.params.names;
    const proto = value !== null && typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
    if (proto !== Object.prototype && proto !== null) { // a plain object only: not an array, bytes or a PyFloat
      throw new LdpTypeError("value_type", { expected: "object", got: kindOf(value) },
        `multi values must be an object {name: value} of the attributes ${JSON.stringify(names)}, got ${kindOf(value)}`);
    }
    const given = value as Record<string, unknown>;
    const missing = names.filter((n) => !Object.prototype.hasOwnProperty.call(given, n));
    if (missing.length) {
      throw new LdpValueError("missing_attributes", { attributes: missing },
        `multi value is missing attributes ${JSON.stringify(missing)} (every report needs all of ${JSON.stringify(names)})`);
    }
    const extra = Object.keys(given).filter((k) => !names.includes(k));
    if (extra.length) {
      throw new LdpValueError("unknown_attributes", { attributes: sortedByCodePoint(extra) },
        `multi value has unknown attributes ${JSON.stringify(extra.slice(0, 5))} (the attributes are ${JSON.stringify(names)})`);
    }
    return names.map((name, i) => renaming({}, () => this.parts[i].prepare(given[name]), { attribute: name },
      `attribute ${JSON.stringify(name)}: `));
  }

  randomize(prepared: unknown[]): Report {
    const pr = this.params;
    const payload: Array<readonly [string, PayloadValue]> = [];
    const part = (i: number) => {
      for (const [k, v] of this.parts[i].randomize(prepared[i]).payload) payload.push([`${pr.names[i]}_${k}`, v]);
    };
    if (pr.mode === "split") {
      pr.components.forEach((_, i) => part(i));
      return this.report(payload);
    }
    const j = this.rng.randbelow(pr.components.length);
    payload.push(["attr", j]);
    pr.components.forEach((c, i) => {
      if (i === j) return part(i);
      for (const f of c.schema) payload.push([`${pr.names[i]}_${f.name}`, f.kind === "uint" ? 0 : "0".repeat(f.size)]);
    });
    return this.report(payload);
  }
}

export const multi: ProtocolEntry<MultiParams, unknown[]> = {
  name: "multi",
  Params: MultiParams,
  makeEncoder: (params, options) => new MultiEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
