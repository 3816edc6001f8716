/**
 * Apple's Sequence Fragment Puzzle, client side (`sfp`; Apple's Differential Privacy Team, "Learning with Privacy at
 * Scale", 2017; `ldp/encoders/sfp.py`).
 *
 * A word over `alphabet` (a character outside it replaced by `replacement`, or refused; a word longer than `length`
 * cut when `truncate`, else refused) is padded with `pad` to L symbols. One report carries a CMS or HCMS report of
 * the whole word and one of the fragment record `h ‖ fragment` at a position drawn uniformly from the L/r fragment
 * positions, `h` being a `hash_bits`-bit hash of the word that lets the server stitch fragments to words. Draws:
 * `R(L/r)` for the position, then the word sketch's draws, then the fragment sketch's. The cost is the sum of the two
 * sketches' ε (sequential composition).
 */
import { utf8Encode } from "../bytes.js";
import { LdpTypeError, LdpValueError, kindOf, showValue } from "../errors.js";
import { hash32 } from "../hash/murmur3.js";
import {
  Field, ParamsDict, PrivacyCost, ProtocolParams, RowName, checkCollectable, checkParams, relation, renaming,
} from "../params/base.js";
import { SFP_PARAMS } from "../params/tables.js";
import { Encoder, EncoderOptions, ProtocolEntry, Report, PayloadValue, bitsString } from "../encoders/base.js";
import { CmsEncoder, CmsParams, HcmsEncoder, HcmsParams, SketchParams } from "./sketches.js";

const WORD_NAMES: Record<string, string> = { hash: "word_hash", bits: "word_bits", row: "word_row", bit: "word_bit" };
const FRAGMENT_NAMES: Record<string, string> = {
  hash: "fragment_hash", bits: "fragment_bits", row: "fragment_row", bit: "fragment_bit",
};

/** The code points of `s`, each as a string (Python's characters). */
function chars(s: string): string[] {
  return [...s];
}

/** The sketch of one part (`"word"` or `"fragment"`), its errors prefixed with the part as Python's are. */
function sketchOf(part: string, kind: string, values: ParamsDict): SketchParams {
  const names = { epsilon: `${part}_epsilon`, num_hashes: `${part}_num_hashes`, width: `${part}_width` };
  return renaming(names, () => (kind === "cms" ? new CmsParams(values) : new HcmsParams(values)), {}, `${part} sketch: `);
}

/** `_check_symbols`: `value` a string of `low` to `high` symbols (code points), else a refusal with `message`. */
function checkSymbols(value: unknown, message: string, param: string, low: number, high?: number): string[] {
  if (typeof value !== "string") throw new LdpValueError("param_type", { param, expected: "string", got: kindOf(value) }, message);
  const cps = chars(value);
  if (cps.length < low || (high !== undefined && cps.length > high)) {
    throw new LdpValueError("param_length", { param, got: cps.length, min: low, ...(high === undefined ? {} : { max: high }) }, message);
  }
  return cps;
}

/** The alphabet (its symbols, distinct, at most 2^16 − 2) and the pad (one symbol not in it) of `values`, checked in
 * Python's order. */
function checkAlphabet(values: ParamsDict): [string[], string] {
  const alphabet = checkSymbols(values.alphabet, "alphabet must be a non-empty string of symbols", "alphabet", 1);
  if (new Set(alphabet).size !== alphabet.length) {
    throw relation("distinct", ["alphabet"], `alphabet has repeated symbols: ${JSON.stringify(values.alphabet)}`);
  }
  const padMessage = `pad must be one symbol that is not in the alphabet, got ${showValue(values.pad)}`;
  const pad = checkSymbols(values.pad, padMessage, "pad", 1, 1)[0];
  if (alphabet.includes(pad)) throw relation("pad_not_in_alphabet", ["pad", "alphabet"], padMessage);
  if (alphabet.length > 2 ** 16 - 2) {
    throw new LdpValueError("param_length", { param: "alphabet", got: alphabet.length, min: 1, max: 2 ** 16 - 2 },
      `alphabet size must be in [1, ${2 ** 16 - 2}], got ${alphabet.length}`);
  }
  return [alphabet, pad];
}

/** `replacement`: one symbol of `alphabet`, or `null` (none given). */
function checkReplacement(rep: unknown, alphabet: readonly string[]): string | null {
  if (rep === null || rep === undefined) return null;
  const message = `replacement must be one symbol of the alphabet (or null), got ${showValue(rep)}`;
  const replacement = checkSymbols(rep, message, "replacement", 1, 1)[0];
  if (!alphabet.includes(replacement)) throw relation("replacement_in_alphabet", ["replacement", "alphabet"], message);
  return replacement;
}

/** SFP parameters: the two sketches' ε and shapes, the alphabet and pad, L, r, the word-hash bits, the seed. */
export class SfpParams extends ProtocolParams {
  static readonly className = "SfpParams";
  static readonly fields = SFP_PARAMS;
  readonly protocol = "sfp";
  /** The alphabet's symbols, then the pad: a symbol's index in a fragment record is its place here. */
  readonly symbols: readonly string[];
  readonly pad: string;
  /** L, the padded word length, and r, the fragment length. */
  readonly length: number;
  readonly fragmentLength: number;
  readonly hashBits: number;
  readonly replacement: string | null;
  readonly truncate: boolean;
  readonly word: SketchParams;
  readonly fragment: SketchParams;
  private readonly index: ReadonlyMap<string, number>;
  private cost: PrivacyCost | undefined;
  private fields_: readonly Field[] | undefined;

  constructor(values: ParamsDict) {
    super(values);
    const v = this.values;
    // Python checks the table's rows in its own order, between its rules; the widths are the sketches' own checks
    const check = (from: RowName<typeof SFP_PARAMS>, to = from) => checkParams(v, SFP_PARAMS, from, to);
    check("word_epsilon", "fragment_epsilon");
    const wordEpsilon = v.word_epsilon as number, fragmentEpsilon = v.fragment_epsilon as number;
    const [alphabet, pad] = checkAlphabet(v);
    check("length");
    const length = v.length as number;
    checkParams(v, SFP_PARAMS, "fragment_length", "fragment_length", { fragment_length: () => length });
    const r = v.fragment_length as number;
    if (length % r !== 0) {
      throw relation("multiple_of_fragment_length", ["length", "fragment_length"], `length L=${length} must be a ` +
        `multiple of fragment_length r=${r} (fragments are the L/r non-overlapping substrings)`);
    }
    check("hash_bits", "word_sketch");
    check("fragment_sketch");
    check("hash_seed");
    check("word_num_hashes");
    check("fragment_num_hashes");
    const hashBits = v.hash_bits as number, seed = v.hash_seed as number;
    const wk = v.word_num_hashes as number, fk = v.fragment_num_hashes as number;
    if (seed + wk + fk > 0xffffffff) {
      throw relation("hash_seed_room", ["hash_seed", "word_num_hashes", "fragment_num_hashes"],
        "hash_seed leaves no room for the sketches' hash functions below 2**32");
    }
    const replacement = checkReplacement(v.replacement, alphabet);
    check("truncate");
    const truncate = v.truncate as boolean;
    this.symbols = Object.freeze([...alphabet, pad]);
    this.index = new Map(this.symbols.map((c, i) => [c, i]));
    this.pad = pad;
    this.length = length;
    this.fragmentLength = r;
    this.hashBits = hashBits;
    this.replacement = replacement;
    this.truncate = truncate;
    this.word = sketchOf("word", v.word_sketch as string,
      { epsilon: wordEpsilon, num_hashes: wk, width: v.word_width, hash_seed: seed });
    this.fragment = sketchOf("fragment", v.fragment_sketch as string,
      { epsilon: fragmentEpsilon, num_hashes: fk, width: v.fragment_width, hash_seed: seed + wk });
    const cells = (s: SketchParams) => s.numHashes * (s.width + 1);
    checkCollectable(this.protocol, this.schema, cells(this.word) + this.numPositions * cells(this.fragment));
  }

  /** L/r fragment positions. */
  get numPositions(): number {
    return this.length / this.fragmentLength;
  }

  /** The seed of the word hash `h`: after both sketches' seeds. */
  get wordHashSeed(): number {
    return this.word.hashSeed + this.word.numHashes + this.fragment.numHashes;
  }

  /** ε(word sketch) + ε(fragment sketch). */
  get privacyCost(): PrivacyCost {
    if (this.cost === undefined) {
      this.cost = Object.freeze({ epsilon: this.word.privacyCost.epsilon + this.fragment.privacyCost.epsilon, delta: 0.0 });
    }
    return this.cost;
  }

  /** `position`, then the word sketch's fields (`word_…`), then the fragment sketch's (`fragment_…`). */
  get schema(): readonly Field[] {
    if (this.fields_ === undefined) {
      const renamed = (s: SketchParams, names: Record<string, string>) => s.schema.map((f) => ({ ...f, name: names[f.name] }));
      this.fields_ = Object.freeze([
        { name: "position", kind: "uint", size: this.numPositions },
        ...renamed(this.word, WORD_NAMES),
        ...renamed(this.fragment, FRAGMENT_NAMES),
      ] as Field[]);
    }
    return this.fields_;
  }

  /** `prepare_word`: the word checked, its characters replaced and cut as the parameters say, padded to L symbol
   * indices, and its `hash_bits`-bit MurmurHash3 (seed `wordHashSeed`) of its UTF-8 bytes. */
  prepareWord(value: unknown): SfpWord {
    if (typeof value !== "string") throw new LdpTypeError("value_type", { expected: "string", got: kindOf(value) });
    if (value.length === 0) throw new LdpValueError("empty_value", {}, "SFP cannot encode the empty string");
    const ok = (c: string) => c !== this.pad && this.index.has(c);
    let cps = chars(value);
    const bad = cps.find((c) => !ok(c));
    if (bad !== undefined) {
      if (this.replacement === null) {
        throw new LdpValueError("not_in_alphabet", { char: bad }, `character ${JSON.stringify(bad)} of ` +
          `${JSON.stringify(value)} is not in the alphabet (set replacement to replace such characters)`);
      }
      const r = this.replacement;
      cps = cps.map((c) => (ok(c) ? c : r));
    }
    if (cps.length > this.length) {
      if (!this.truncate) {
        throw new LdpValueError("value_too_long", { got: cps.length, max: this.length, unit: "characters" },
          `${JSON.stringify(cps.join(""))} is longer than length=${this.length} (set truncate: true to cut it)`);
      }
      cps = cps.slice(0, this.length);
    }
    const data = utf8Encode(cps.join(""));
    const padded = Array.from({ length: this.length }, (_, i) => this.index.get(i < cps.length ? cps[i] : this.pad) as number);
    return { padded, hash: hash32(data, this.wordHashSeed) % 2 ** this.hashBits, data };
  }

  /** The fragment record at `position`: `h` big-endian in ceil(hash_bits/8) bytes, then each symbol's index (two
   * bytes, big-endian, when there are over 256 symbols). */
  fragmentRecord(word: SfpWord, position: number): Uint8Array {
    const hashBytes = Math.ceil(this.hashBits / 8);
    const two = this.symbols.length > 256;
    const r = this.fragmentLength;
    const out = new Uint8Array(hashBytes + (two ? 2 : 1) * r);
    let at = 0;
    for (let i = hashBytes - 1; i >= 0; i--) out[at++] = Math.floor(word.hash / 2 ** (8 * i)) & 0xff;
    for (let s = 0; s < r; s++) {
      const idx = word.padded[position * r + s];
      if (two) out[at++] = idx >> 8;
      out[at++] = idx & 0xff;
    }
    return out;
  }
}

/** A word as the client encodes it: its padded symbol indices, its hash, its UTF-8 bytes. */
export interface SfpWord {
  readonly padded: readonly number[];
  readonly hash: number;
  readonly data: Uint8Array;
}

/** Client encoder for `SfpParams`; values are words (strings). */
export class SfpEncoder extends Encoder<SfpParams, SfpWord> {
  private readonly wordSketch: CmsEncoder | HcmsEncoder;
  private readonly fragmentSketch: CmsEncoder | HcmsEncoder;

  constructor(params: SfpParams, options: EncoderOptions = {}) {
    super(params, options);
    const sub = (s: SketchParams) =>
      s instanceof CmsParams ? new CmsEncoder(s, { rng: this.rng }) : new HcmsEncoder(s as HcmsParams, { rng: this.rng });
    this.wordSketch = sub(params.word);
    this.fragmentSketch = sub(params.fragment);
  }

  /** The word checked, padded and hashed (a bad word fails here, before any charge). */
  prepare(value: unknown): SfpWord {
    return this.params.prepareWord(value);
  }

  randomize(prepared: SfpWord): Report {
    const pr = this.params;
    const position = this.rng.randbelow(pr.numPositions);
    const payload: Array<readonly [string, PayloadValue]> = [["position", position]];
    const sketch = (enc: CmsEncoder | HcmsEncoder, data: Uint8Array, names: Record<string, string>) => {
      if (enc instanceof CmsEncoder) {
        const [j, bits] = enc.draw(data);
        payload.push([names.hash, j], [names.bits, bitsString(bits, enc.params.width)]);
      } else {
        const [j, row, bit] = enc.draw(data);
        payload.push([names.hash, j], [names.row, row], [names.bit, bit]);
      }
    };
    sketch(this.wordSketch, prepared.data, WORD_NAMES);
    sketch(this.fragmentSketch, pr.fragmentRecord(prepared, position), FRAGMENT_NAMES);
    return this.report(payload);
  }
}

export const sfp: ProtocolEntry<SfpParams, SfpWord> = {
  name: "sfp",
  Params: SfpParams,
  makeEncoder: (params, options) => new SfpEncoder(params, options),
  needsSecret: false,
  assignedCohorts: () => 0,
};
