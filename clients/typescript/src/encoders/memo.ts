/**
 * Memoized (permanent) responses derived from the metric secret, for the longitudinal protocols (`lgrr`, `loue`,
 * `memo-dbitflip`, `memo-mean`): Python's `_SecretEncoder` (`ldp/encoders/longitudinal_memo.py`),
 * docs/conformance.md "Memoized protocols".
 *
 * The permanent response of index `i` is drawn from `KeyedRandomSource(secret, "ldp/longitudinal/prr/v1\0" ‖ fp ‖
 * uint32_BE(i))` — the same every time, so repeating a value reveals nothing new — and its charge is memoized per
 * `i` under `memo_key = HMAC-SHA256(secret, "ldp/longitudinal/memo/v1\0" ‖ fp ‖ uint32_BE(i))`. With `prrRng`
 * (audits only) each response is drawn from that source once and kept.
 */
import { concatBytes, uint32BE, utf8Encode } from "../bytes.js";
import { hmacSha256 } from "../hash/sha256.js";
import { log1p, exp } from "../pymath.js";
import { KeyedRandomSource, RandomSource } from "../random.js";
import type { PrivacyCost } from "../params/base.js";
import type { EncoderOptions, MemoizedCharge } from "./base.js";

/** Permanent responses kept in memory per encoder (each recomputable from the secret). */
export const MEMO_ENTRIES = 4096;
/** Most reports `memoReportCharge` examines before it falls back to the cap (`MAX_CHARGE_REPORTS`). */
export const MAX_CHARGE_REPORTS = 64;

const PRR_DOMAIN = utf8Encode("ldp/longitudinal/prr/v1\0");
const MEMO_DOMAIN = utf8Encode("ldp/longitudinal/memo/v1\0");
const AUDIT_SECRET = utf8Encode("audit");

/** The permanent responses of one encoder and their memo keys. */
export class Memo<T> {
  private readonly secret: Uint8Array;
  private readonly prrRng: RandomSource | undefined;
  private readonly fp: Uint8Array;
  private readonly memo = new Map<number, T>();

  /** `protocol` names the encoder in the `TypeError` when the metric secret is missing. */
  constructor(protocol: string, fingerprint: string, options: EncoderOptions) {
    this.prrRng = options.prrRng;
    const secret = options.secret ?? (this.prrRng !== undefined ? AUDIT_SECRET : undefined);
    if (secret === undefined) {
      throw new TypeError(`${protocol} needs the metric secret (options.secret): its permanent responses derive from it`);
    }
    if (!(secret instanceof Uint8Array) || secret.length === 0) throw new TypeError("the key must be a non-empty Uint8Array");
    this.secret = Uint8Array.from(secret);
    this.fp = utf8Encode(fingerprint);
  }

  private message(domain: Uint8Array, index: number): Uint8Array {
    return concatBytes(domain, this.fp, uint32BE(index));
  }

  /** The permanent response of `index`: drawn by `draw` from the keyed stream of the secret (or, in an audit, from
   * the audit source, once), then kept. */
  get(index: number, draw: (src: RandomSource) => T): T {
    const known = this.memo.get(index);
    if (known !== undefined) return known;
    const value = draw(this.prrRng ?? new KeyedRandomSource(this.secret, this.message(PRR_DOMAIN, index)));
    if (this.prrRng !== undefined || this.memo.size < MEMO_ENTRIES) this.memo.set(index, value);
    return value;
  }

  /** The memo key of `index`. */
  key(index: number): Uint8Array {
    return hmacSha256(this.secret, this.message(MEMO_DOMAIN, index));
  }

  /** `charging = "min"`: `one` per report, at most `cap` in all for `index`. */
  charge(index: number, one: PrivacyCost, cap: PrivacyCost): MemoizedCharge {
    return { key: this.key(index), first: one, then: one, cap };
  }

  /** The audit source of permanent values, if any (a protocol drawing more than one kind of permanent value draws
   * them all from it in an audit). */
  get auditRng(): RandomSource | undefined {
    return this.prrRng;
  }

  /** The metric secret (for protocols that derive more than the permanent responses from it). */
  get metricSecret(): Uint8Array {
    return this.secret;
  }
}

/**
 * The per-report charge of `charging="min"` (Python's `memo_report_charge`): `max_{t≤T} L(t)/t` (at least `one`),
 * with `T` the first `t` at which `t·c ≥ cap`; `cap` when there is none within `MAX_CHARGE_REPORTS`. `leakage(t)` is
 * the exact worst-case ε of `t` reports of one value.
 */
export function memoReportCharge(one: PrivacyCost, cap: PrivacyCost, leakage: (t: number) => number): PrivacyCost {
  let c = one.epsilon;
  for (let t = 1; t <= MAX_CHARGE_REPORTS; t++) {
    c = Math.max(c, leakage(t) / t);
    if (t * c >= cap.epsilon) return { epsilon: Math.min(c, cap.epsilon), delta: 0.0 };
  }
  return cap;
}

/** `log(e^a + e^b)` as Python's `_logaddexp`: `max + log1p(exp(min − max))`. */
export function logaddexp(a0: number, b0: number): number {
  const a = Math.max(a0, b0), b = Math.min(a0, b0);
  return b === -Infinity ? a : a + log1p(exp(b - a));
}
