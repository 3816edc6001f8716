//! The budget rules of the Python ledger (`ldp/privacy/ledger.py`, docs/client.md "Budgets").

use super::state::{find, find_mut, DeviceState, ScopeTotal};
use crate::bytes::{hex, hmac_sha256};
use crate::cost::PrivacyCost;
use crate::encoder::Charge;
use crate::error::{Error, Result, ALL_METRICS};
use crate::spec::CollectionSpec;

/// The last second of 9999-12-31 UTC: the latest clock reading a ledger accepts.
pub const MAX_CLOCK: f64 = 253_402_300_799.0;
const DELTA_MAX: f64 = 1.0 - 1.0 / (1u64 << 53) as f64;

/// What a charge did: the increment charged, its window, and the epoch of a [`Charge::Change`].
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// What was charged.
    pub increment: PrivacyCost,
    /// The window charged.
    pub window: i64,
    /// The stream's epoch (charge-on-change protocols).
    pub epoch: Option<u64>,
}

/// `reading` if it is a Unix time in `[0, MAX_CLOCK]`, else Python's `ClockError` text (a `ValueError`).
pub fn check_clock(reading: f64) -> Result<f64> {
    if !(0.0..=MAX_CLOCK).contains(&reading) {
        return Err(Error::value(format!(
            "clock reading {reading:?} is not a Unix time in [0, 253402300799] (year 9999); nothing was charged"
        )));
    }
    Ok(reading)
}

/// Moves the state's clock to `reading` if later; the current window.
pub(crate) fn advance(state: &mut DeviceState, reading: f64, window_seconds: i64) -> Result<i64> {
    let r = check_clock(reading)?;
    let clock = state.clock.map_or(r, |c| c.max(r));
    state.clock = Some(clock);
    Ok((clock / window_seconds as f64).floor() as i64)
}

/// The current window without moving the clock.
pub(crate) fn window_at(state: &DeviceState, reading: f64, window_seconds: i64) -> Result<i64> {
    let r = check_clock(reading)?;
    Ok((state.clock.map_or(r, |c| c.max(r)) / window_seconds as f64).floor() as i64)
}

fn keyed(state: &DeviceState, parts: &[&[u8]]) -> Result<String> {
    Ok(hex(&hmac_sha256(&state.keys()?.salt, parts)?))
}

/// Checks every cap for `charge` on `metric` and records it in `state` (or returns [`Error::BudgetExceeded`] with
/// nothing changed). The caps are checked in Python's order: the metric's window (for a two-aggregator metric, its
/// [`CollectionSpec::device_window_cap`]), its lifetime, the collection's
/// window, its lifetime; each with Python's relative slack of 1e-9. A memoized charge is cut so that one key's
/// total never exceeds its cap; a charge-on-change is charged only when the stream's value changes. Memo keys and
/// change values are stored as keyed hashes under the device's salt, never as they are.
pub(crate) fn charge(
    state: &mut DeviceState,
    spec: &CollectionSpec,
    metric: &str,
    charge: &Charge,
    window: i64,
) -> Result<Reservation> {
    let (inc, keys) = increment(state, metric, charge)?;
    let m = spec.metric(metric)?;
    // A two-aggregator metric's window cap is its task's k reports (`CollectionSpec::device_window_cap`).
    let per_window = spec.device_window_cap(metric)?;
    let scopes = [(metric, per_window, m.budget.lifetime), (ALL_METRICS, spec.budget.per_window, spec.budget.lifetime)];
    for (scope, per_window, lifetime) in scopes {
        check_caps(state, scope, per_window, lifetime, inc, window)?;
    }
    for (scope, _, _) in scopes {
        add_to_total(state, scope, inc, window)?;
    }
    let epoch = keys.record(state, inc);
    Ok(Reservation { increment: inc, window, epoch })
}

/// What a charge keeps besides the totals, as keyed hashes: the memo key it charged, or the change stream's key,
/// its value's and its epoch.
#[derive(Default)]
struct ChargeKeys {
    memo_key: Option<String>,
    change: Option<(String, String, u64)>,
}

impl ChargeKeys {
    /// Records the memo key's report and cost, or the stream's value and epoch (the epoch, returned).
    fn record(self, state: &mut DeviceState, inc: PrivacyCost) -> Option<u64> {
        if let Some(k) = self.memo_key {
            match find_mut(&mut state.memo, &k) {
                Some(v) => {
                    v.0 += 1;
                    v.1 += inc.epsilon;
                    v.2 += inc.delta;
                }
                None => state.memo.push((k, (1, inc.epsilon, inc.delta))),
            }
        }
        let mut epoch = None;
        if let Some((s, v, e)) = self.change {
            epoch = Some(e);
            match find_mut(&mut state.changes, &s) {
                Some(x) => *x = (v, e),
                None => state.changes.push((s, (v, e))),
            }
        }
        epoch
    }
}

/// What `charge` on `metric` costs now (a memoized key's cost cut to its cap, nothing for an unchanged stream), and
/// the keys to record with it. Changes nothing.
fn increment(state: &DeviceState, metric: &str, charge: &Charge) -> Result<(PrivacyCost, ChargeKeys)> {
    let mut prefix = metric.as_bytes().to_vec();
    prefix.push(0);
    let mut keys = ChargeKeys::default();
    let inc = match charge {
        Charge::Plain(c) => *c,
        Charge::Memoized { key, first, then, cap } => {
            let k = keyed(state, &[&prefix, key])?;
            let m = find(&state.memo, &k).copied();
            let step = if m.is_none_or(|m| m.0 == 0) { first } else { then };
            let (e, d) = m.map_or((0.0, 0.0), |m| (m.1, m.2));
            keys.memo_key = Some(k);
            PrivacyCost::new(0f64.max(step.epsilon.min(cap.epsilon - e)), 0f64.max(step.delta.min(cap.delta - d)))
        }
        Charge::Change { stream, value, cost } => {
            let s = keyed(state, &[b"stream\0", &prefix, stream])?;
            let v = keyed(state, &[b"value\0", &prefix, value])?;
            match find(&state.changes, &s) {
                Some((last, epoch)) if *last == v => {
                    keys.change = Some((s, v, *epoch));
                    PrivacyCost::ZERO
                }
                last => {
                    let epoch = last.map_or(0, |(_, e)| e + 1);
                    keys.change = Some((s, v, epoch));
                    *cost
                }
            }
        }
    };
    Ok((inc, keys))
}

/// [`Error::BudgetExceeded`] if `inc` would pass `scope`'s cap of its `window` or of its lifetime.
fn check_caps(
    state: &DeviceState,
    scope: &str,
    per_window: Option<PrivacyCost>,
    lifetime: Option<PrivacyCost>,
    inc: PrivacyCost,
    window: i64,
) -> Result<()> {
    let t = find(&state.totals, scope);
    let (we, wd) = t.filter(|t| t.window == window).map_or((0.0, 0.0), |t| (t.window_epsilon, t.window_delta));
    let (le, ld) = t.map_or((0.0, 0.0), |t| (t.lifetime_epsilon, t.lifetime_delta));
    for (cap, period, e, d) in [(per_window, "window", we, wd), (lifetime, "lifetime", le, ld)] {
        let Some(cap) = cap else { continue };
        let lim_e = cap.epsilon * (1.0 + 1e-9) + 1e-15;
        let lim_d = cap.delta * (1.0 + 1e-9) + 1e-15;
        if e + inc.epsilon > lim_e || (d + inc.delta).min(DELTA_MAX) > lim_d {
            return Err(Error::BudgetExceeded {
                scope: scope.to_string(),
                period: period.to_string(),
                requested: inc,
                spent: PrivacyCost::new(e, d),
                cap,
            });
        }
    }
    Ok(())
}

/// Adds `inc` to `scope`'s totals of `window` (a new window starts from zero) and of its lifetime.
fn add_to_total(state: &mut DeviceState, scope: &str, inc: PrivacyCost, window: i64) -> Result<()> {
    if find(&state.totals, scope).is_none() {
        state.totals.push((
            scope.to_string(),
            ScopeTotal { window, window_epsilon: 0.0, window_delta: 0.0, lifetime_epsilon: 0.0, lifetime_delta: 0.0 },
        ));
    }
    let t = find_mut(&mut state.totals, scope).ok_or_else(|| Error::Internal("a total vanished".into()))?;
    if t.window != window {
        t.window = window;
        t.window_epsilon = 0.0;
        t.window_delta = 0.0;
    }
    t.window_epsilon += inc.epsilon;
    t.window_delta = (t.window_delta + inc.delta).min(DELTA_MAX);
    t.lifetime_epsilon += inc.epsilon;
    t.lifetime_delta = (t.lifetime_delta + inc.delta).min(DELTA_MAX);
    Ok(())
}

/// The (ε, δ) spent on `scope` in `window`, or over the lifetime when `window` is `None`.
pub(crate) fn spent(state: &DeviceState, scope: &str, window: Option<i64>) -> PrivacyCost {
    let Some(t) = find(&state.totals, scope) else { return PrivacyCost::ZERO };
    match window {
        None => PrivacyCost::new(t.lifetime_epsilon, t.lifetime_delta),
        Some(w) if t.window == w => PrivacyCost::new(t.window_epsilon, t.window_delta),
        Some(_) => PrivacyCost::ZERO,
    }
}
