//! Longitudinal GRR (`lgrr`; RAPPOR's PRR/IRR for a k-ary value, `ldp/encoders/longitudinal.py`): a permanent GRR
//! at `epsilon_perm` memoized per value from the metric secret, then a fresh GRR per report such that one report is
//! `epsilon`-LDP. Two GRRs compose to one with `λ = λ1·λ2`, so round 2 keeps with
//! `λ2 = expm1(ε)/(expm1(ε) + k)/(p1 − q1)`, i.e. a GRR at `ε2 = log1p(kλ2/(1 − λ2))`. Charged per report the
//! per-report charge bounding the exact leakage of t reports (Python's `memo_report_charge`), at most
//! `max(epsilon_perm, realized ε_perm)` per value.

use std::sync::Arc;

use serde_json::Value;

use super::memoized::{logaddexp, memo_report_charge, Memo};
use super::rr::{grr_draw, GrrParams};
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::random::RandomSource;
use crate::rational::Rational;
use crate::value::float_value;

fn grr_effective(g: &GrrParams) -> f64 {
    pymath::log(g.p * (g.d - 1) as f64 / (1.0 - g.p))
}

/// L-GRR's parameters.
#[derive(Debug)]
pub struct LgrrParams {
    values: ParamValues,
    fingerprint: String,
    /// The permanent round's ε.
    pub epsilon_perm: f64,
    /// One report's ε.
    pub epsilon: f64,
    /// Round 1, the memoized GRR at `epsilon_perm` (also the labels' index).
    pub permanent: GrrParams,
    /// Round 2, the fresh GRR of each report.
    pub instantaneous: GrrParams,
    cost: PrivacyCost,
    report_charge: PrivacyCost,
}

impl LgrrParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon_perm = values.float("epsilon_perm")?;
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        if !(epsilon < epsilon_perm) {
            return Err(Refusal::relation("epsilon<epsilon_perm", &["epsilon", "epsilon_perm"]).into());
        }
        let sub = |eps: f64, labels: Value| {
            let given = [("epsilon", float_value(eps)), ("domain_size", Value::from(d)), ("labels", labels)];
            ParamValues::of(tables::GRR, given)
        };
        let permanent = GrrParams::new(sub(epsilon_perm, values.get("labels").clone()))
            .map_err(|e| e.renamed(|n| (n == "epsilon").then(|| "epsilon_perm".to_string())))?;
        let q1 = (1.0 - permanent.p) / (d - 1) as f64;
        let lam = pymath::expm1(epsilon) / (pymath::expm1(epsilon) + d as f64) / (permanent.p - q1);
        if !(0.0 < lam && lam < 1.0) {
            return Err(Refusal::relation(
                "epsilon<realized_epsilon_perm",
                &["epsilon", "epsilon_perm", "domain_size"],
            )
            .into());
        }
        let eps2 = pymath::log1p(d as f64 * lam / (1.0 - lam));
        let instantaneous = GrrParams::new(sub(eps2, Value::Null)).map_err(|e| match e {
            Error::Refusal(r) if r.kind == RefusalKind::Value => {
                Refusal::relation("instantaneous_realizable", &["epsilon", "epsilon_perm", "domain_size"]).into()
            }
            other => other,
        })?;
        check_collectable("lgrr", &[PayloadField::uint("index", d)], d as u128)?;
        let (p1, p2, one, km1) =
            (Rational::of(permanent.p), Rational::of(instantaneous.p), Rational::int(1), Rational::int(d as i64 - 1));
        let ps = &(&p1 * &p2) + &(&(&(&one - &p1) * &(&one - &p2)) / &km1);
        let realized = (&(&ps * &km1) / &(&one - &ps)).log_ratio();
        let cost = PrivacyCost::pure(epsilon.max(realized));
        let fingerprint = fingerprint_of("lgrr", &values);
        let mut out = LgrrParams {
            values,
            fingerprint,
            epsilon_perm,
            epsilon,
            permanent,
            instantaneous,
            cost,
            report_charge: cost,
        };
        out.report_charge = memo_report_charge(cost, out.memo_cap(), |t| out.leakage(t));
        Ok(out)
    }

    /// Every report of one value together: `max(epsilon_perm, realized ε_perm)`.
    pub fn memo_cap(&self) -> PrivacyCost {
        PrivacyCost::pure(self.epsilon_perm.max(grr_effective(&self.permanent)))
    }

    /// The exact worst-case ε of `t` reports of one value (Python's `lgrr_leakage`).
    pub fn leakage(&self, t: u32) -> f64 {
        let k = self.permanent.d as i64;
        let (p1, p2) = (self.permanent.p, self.instantaneous.p);
        let q1 = (1.0 - p1) / (k - 1) as f64;
        let q2 = (1.0 - p2) / (k - 1) as f64;
        let lr = pymath::log(p2 / q2);
        let dd = pymath::log(p1 - q1);
        let lq1 = pymath::log(q1);
        let t = t as i64;
        let mut worst = 0.0f64;
        for a in 0..=t {
            for b in 0..=a.min(t - a) {
                let rest = t - a - b;
                let others = k - 2;
                let (af, bf) = (a as f64, b as f64);
                let log_s = if others == 0 {
                    if rest != 0 {
                        continue;
                    }
                    logaddexp(af * lr, bf * lr)
                } else {
                    let (base, extra) = (rest / others, rest % others);
                    let mut s = logaddexp(af * lr, bf * lr);
                    s = logaddexp(s, pymath::log((others - extra) as f64) + base as f64 * lr);
                    if extra != 0 {
                        s = logaddexp(s, pymath::log(extra as f64) + (base + 1) as f64 * lr);
                    }
                    s
                };
                let num = logaddexp(lq1 + log_s, dd + af * lr);
                let den = logaddexp(lq1 + log_s, dd + bf * lr);
                worst = worst.max(num - den);
            }
        }
        worst
    }
}

impl ProtocolParams for LgrrParams {
    common_params!("lgrr");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("index", self.permanent.d)]
    }
}

struct Lgrr {
    params: Arc<LgrrParams>,
    memo: Memo<u64>,
}

impl Mechanism for Lgrr {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.params.permanent.index_of(value)
    }

    fn charge(&mut self, value: &u64) -> Result<Charge> {
        self.memo.charge(*value, self.params.report_charge, self.params.memo_cap())
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = self.params.clone();
        let perm = self.memo.get(*value, |src| grr_draw(src, p.permanent.p, p.permanent.d, *value))?;
        Ok(vec![("index".into(), PayloadValue::Uint(grr_draw(rng, p.instantaneous.p, p.permanent.d, perm)?))])
    }
}

/// The `lgrr` protocol.
pub(crate) static LGRR: Protocol = Protocol {
    name: "lgrr",
    class_name: "LGRRParams",
    table: tables::LGRR,
    needs_secret: true,
    create: |v| Ok(Arc::new(LgrrParams::new(v)?)),
    make_encoder: |p, mut o| {
        let params = downcast::<LgrrParams>(&p)?;
        let memo = Memo::new("lgrr", params.fingerprint(), &mut o)?;
        Ok(Encoder::new(p, o.rng, Lgrr { params, memo }))
    },
    cohorts: |_| 0,
};
