/**
 * The client's exceptions, named and worded as Python's (`ldp/errors.py`), so a message a user sees is the same in
 * both clients. `LdpValueError` and `LdpTypeError` stand for Python's builtin `ValueError` and `TypeError`: their
 * `name` is the Python name and their `message` Python's text.
 */
import { pyFormatG, pyRepr } from "./pytext.js";

/** Python's `ValueError`: a value of the right type that is out of range or malformed. */
export class LdpValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ValueError";
  }
}

/** Python's `TypeError`: a value of the wrong type. */
export class LdpTypeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TypeError";
  }
}

/** An (ε, δ) cost as `BudgetExceeded` reports it (Python's `PrivacyCost`). */
export interface CostLike {
  readonly epsilon: number;
  readonly delta: number;
}

/** The scope of the budget across all metrics (Python's `ALL_METRICS`). */
export const ALL_METRICS = "*";

/** `str(PrivacyCost)`: `ε=<.6g>`, then `, δ=<.3g>` when δ is not 0 (`ldp/privacy/cost.py`). */
export function costText(cost: CostLike): string {
  return `ε=${pyFormatG(cost.epsilon, 6)}` + (cost.delta ? `, δ=${pyFormatG(cost.delta, 3)}` : "");
}

/**
 * A charge would exceed a cap; nothing was charged and no report may be produced (`ldp.errors.BudgetExceeded`).
 *
 * Fields as Python's: `scope` is the metric's name, or `"*"` (`ALL_METRICS`) for the collection's total; `period`
 * is `"window"` or `"lifetime"`; `requested`, `spent` and `cap` are costs; `index` says which charge of a batch was
 * refused (then nothing of the batch was charged). The message is Python's:
 * `privacy budget exceeded for metric 'm' (window): spent ε=1, requested ε=0.5, cap ε=1`.
 * `metric` (the metric's name, `null` for the total) and `cost` (= `requested`) are convenience aliases.
 */
export class BudgetExceeded extends Error {
  readonly scope: string;
  readonly period: string;
  readonly requested: CostLike;
  readonly spent: CostLike;
  readonly cap: CostLike;
  readonly index: number | null;

  constructor(scope: string, period: string, requested: CostLike, spent: CostLike, cap: CostLike,
              index: number | null = null) {
    const where = scope === ALL_METRICS ? "all metrics" : `metric ${pyRepr(scope)}`;
    const item = index === null ? "" : ` at charge ${index} of a batch (nothing of the batch was charged)`;
    super(`privacy budget exceeded for ${where} (${period})${item}: spent ${costText(spent)}, ` +
          `requested ${costText(requested)}, cap ${costText(cap)}`);
    this.name = "BudgetExceeded";
    this.scope = scope;
    this.period = period;
    this.requested = requested;
    this.spent = spent;
    this.cap = cap;
    this.index = index;
  }

  /** The metric whose cap was hit, or `null` when it is the collection's total (scope `"*"`). */
  get metric(): string | null {
    return this.scope === ALL_METRICS ? null : this.scope;
  }

  /** The refused charge (Python's `requested`). */
  get cost(): CostLike {
    return this.requested;
  }
}

/**
 * A report would take the outbox past `maxOutboxBytes` (`ClientOptions`): nothing was charged or stored. Uploading
 * frees room. `pendingBytes` wait for upload (in `recordMany`, with the batch's earlier items), the report needs
 * `needed` more, `cap` is the limit; `index` is the first item of a `recordMany` batch that did not fit (then nothing
 * of the batch was kept), `null` for `record`.
 */
export class OutboxFullError extends Error {
  override name = "OutboxFullError";

  constructor(readonly pendingBytes: number, readonly needed: number, readonly cap: number,
    readonly index: number | null = null) {
    super(`the outbox is full${index === null ? "" : ` at item ${index} of a batch (nothing of the batch was kept)`}: ` +
      `${pendingBytes} bytes of reports wait for upload, this report needs ${needed} more, maxOutboxBytes is ${cap}: ` +
      "upload to make room");
  }
}

/** The device opted out of collection (`TelemetryClient.optOut`): nothing is recorded or charged until `optIn`. */
export class OptedOutError extends Error {
  override name = "OptedOutError";
}

/**
 * A store whose state cannot be used: damaged, or missing while traces of it remain (reports charged to a budget
 * that cannot be known). Nothing was changed: the budget is never reset silently.
 */
export class StateError extends Error {
  override name = "StateError";
}

/** The result an `UploadError` carries: what was done before the failure (Python's `UploadResult`). */
export type UploadErrorResult = unknown;

/**
 * An upload stopped: the server refused the batch, or it could not be delivered in `maxAttempts`
 * (`ldp.errors.UploadError`). Nothing of the failed part was acknowledged. `status` is the last HTTP status (`null`:
 * no answer), `reason` the server's `error` field or a short description, `result` what was done before.
 */
export class UploadError extends Error {
  readonly status: number | null;
  readonly reason: string;
  readonly result: UploadErrorResult;

  constructor(message: string, options: { status: number | null; reason: string; result?: UploadErrorResult }) {
    super(message);
    this.name = "UploadError";
    this.status = options.status;
    this.reason = options.reason;
    this.result = options.result;
  }
}

/** A collector's 2xx answer that is not a sane answer of the upload protocol (`ldp.errors.UploadProtocolError`). */
export class UploadProtocolError extends UploadError {
  constructor(message: string, options: { status: number | null; reason: string; result?: UploadErrorResult }) {
    super(message, options);
    this.name = "UploadProtocolError";
  }
}

/**
 * A replayed stream drawn from in another order (another `k`) or beyond its end (`ldp.randomness.ReplayError`, an
 * `AssertionError` in Python): the client does not draw as the recording did.
 */
export class ReplayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplayError";
  }
}
