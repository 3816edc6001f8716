/**
 * The device's ledger (Python's `BudgetLedger._charge`): a charge checked against every cap that applies to it and
 * added to the totals of the device's state, inside the client's transaction. Budgets as docs/client.md "Budgets":
 * per window (`floor(unix seconds / window_seconds)`) and lifetime, for the collection and per metric (a
 * two-aggregator metric's window cap, `windowCap`, is its task's k reports: `dap/metric.ts`), with Python's 1e-9
 * relative slack;
 * memoized charges (RAPPOR's PRR) are cut so that one value's total never exceeds its cap.
 */
import { ALL_METRICS, BudgetExceeded } from "./errors.js";
import { toHex } from "./bytes.js";
import { Charge, isChange, isMemoized } from "./encoders/base.js";
import { PrivacyCost } from "./params/base.js";
import { CollectionSpec } from "./spec.js";
import { DeviceState } from "./state.js";

const REL_TOL = 1e-9;
const DELTA_MAX = 1 - 2 ** -53;

function limit(cap: PrivacyCost): [number, number] {
  return [cap.epsilon * (1 + REL_TOL) + 1e-15, cap.delta * (1 + REL_TOL) + 1e-15];
}

/** Check every cap and add the charge to the totals (Python's `BudgetLedger._charge`); the epoch of a change
 * charge (`thresh`: a new one when the value differs from the stream's last, charged; else the same, free).
 * `index`: the charge's item in a batch, which a `BudgetExceeded` names. */
export function chargeLedger(spec: CollectionSpec, state: DeviceState, metric: string, charge: Charge, window: number,
  index: number | null, windowCap?: PrivacyCost): number | undefined {
  let inc: PrivacyCost = charge as PrivacyCost;
  let memoKey: string | undefined;
  let change: { key: string; value: string; epoch: number } | undefined;
  if (isChange(charge)) {
    const key = `${metric}\0${toHex(charge.stream)}`, value = toHex(charge.value);
    const last = state.changes?.[key];
    const same = last !== undefined && last[0] === value;
    change = { key, value, epoch: last === undefined ? 0 : same ? last[1] : last[1] + 1 };
    inc = same ? { epsilon: 0, delta: 0 } : charge.cost;
  } else if (isMemoized(charge)) {
    memoKey = `${metric}\0${toHex(charge.key)}`;
    const [reports, e, d] = state.memo[memoKey] ?? [0, 0, 0];
    const step = reports === 0 ? charge.first : charge.then;
    inc = { epsilon: Math.max(0, Math.min(step.epsilon, charge.cap.epsilon - e)),
      delta: Math.max(0, Math.min(step.delta, charge.cap.delta - d)) };
  }
  const m = spec.metric(metric);
  const scopes: Array<[string, PrivacyCost | undefined, PrivacyCost | undefined]> = [
    [metric, windowCap ?? m.budget.per_window, m.budget.lifetime], [ALL_METRICS, spec.budget.per_window, spec.budget.lifetime]];
  for (const [scope, perWindow, lifetime] of scopes) {
    const t = state.totals[scope];
    const spent: [number, number] = t && t.window === window ? t.spent : [0, 0];
    const life: [number, number] = t ? t.lifetime : [0, 0];
    for (const [cap, total, period] of [[perWindow, spent, "window"], [lifetime, life, "lifetime"]] as const) {
      if (cap === undefined) continue;
      const [le, ld] = limit(cap);
      if (total[0] + inc.epsilon > le || Math.min(total[1] + inc.delta, DELTA_MAX) > ld) {
        throw new BudgetExceeded(scope, period, inc, { epsilon: total[0], delta: total[1] }, cap, index);
      }
    }
  }
  for (const [scope] of scopes) {
    const t = state.totals[scope] ?? { window, spent: [0, 0], lifetime: [0, 0] };
    if (t.window !== window) t.spent = [0, 0];
    t.window = window;
    t.spent = [t.spent[0] + inc.epsilon, Math.min(t.spent[1] + inc.delta, DELTA_MAX)];
    t.lifetime = [t.lifetime[0] + inc.epsilon, Math.min(t.lifetime[1] + inc.delta, DELTA_MAX)];
    state.totals[scope] = t;
  }
  if (memoKey !== undefined) {
    const [reports, e, d] = state.memo[memoKey] ?? [0, 0, 0];
    state.memo[memoKey] = [reports + 1, e + inc.epsilon, d + inc.delta];
  }
  if (change === undefined) return undefined;
  state.changes = { ...state.changes, [change.key]: [change.value, change.epoch] };
  return change.epoch;
}
