//! Unary encodings (`ldp/encoders/unary.py`; Wang, Blocki, Li & Jha, USENIX Security 2017): a value `v` of `[0, d)`
//! is one-hot encoded as `d` bits, each reported independently: bit `v` is 1 with probability `p`, every other bit
//! with `q`. Symmetric (`sue`, basic one-time RAPPOR): `p = realized(σ(−ε/2))`, `q = realized(σ(ε/2))`; optimized
//! (`oue`): `p = 1/2`, `q = realized(σ(ε))`. Charged `max(ε, ln(p(1−q)/((1−p)q)))`, the ratio in exact rationals.
//! Draws: `BB(q, d)` with bit `v` cleared, then `B(p)` sets bit `v`. Longitudinal (`loue`) adds a memoized round.

use std::sync::Arc;

use serde_json::Value;

use super::memoized::{logaddexp, memo_report_charge, Memo};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, domain_index_of, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Refusal, Result};
use crate::params::{check_collectable, check_labels, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables::{self, ParamRow};
use crate::pymath;
use crate::random::{realized_unchecked as realized, BitMask, RandomSource};
use crate::rational::Rational;
use crate::value::float_value;

/// `unary_draw`: the `d` report bits of `index`: the others `BB(q, d)`, then bit `index` `B(p)`, in that order.
pub(crate) fn unary_draw(rng: &mut dyn RandomSource, p: f64, q: f64, d: usize, index: usize) -> Result<BitMask> {
    let mut bits = rng.bernoulli_bits(q, d)?;
    let own = rng.bernoulli(p)?;
    bits.set(index, own);
    Ok(bits)
}

/// `unary_epsilon`: `ln(p(1−q)/((1−p)q))`, exactly in rationals, then the log of numerator and denominator.
pub(crate) fn unary_epsilon(p: &Rational, q: &Rational) -> f64 {
    let one = Rational::int(1);
    (&(p * &(&one - q)) / &(&(&one - p) * q)).log_ratio()
}

/// The parameters of `sue` and `oue` (and of `loue`'s permanent round).
#[derive(Debug)]
pub struct UnaryParams {
    protocol: &'static str,
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// Realized Pr[bit v = 1 | value v].
    pub p: f64,
    /// Realized Pr[bit u = 1 | value v], u ≠ v.
    pub q: f64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

/// Python's `_check_unary`: the domain, that p and q are realizable and informative (`params`: the parameters
/// named), the labels.
pub(crate) fn check_unary(values: &ParamValues, p: f64, q: f64, params: &[&str]) -> Result<(u64, Option<Vec<String>>)> {
    let d = values.int("domain_size")?;
    if q <= 0.0 || p >= 1.0 {
        return Err(Refusal::relation("epsilon_too_large", params).into());
    }
    if p <= q {
        return Err(Refusal::relation("epsilon_too_small", params).into());
    }
    let labels = check_labels(values.get("labels"), d)?;
    Ok((d as u64, labels))
}

impl UnaryParams {
    /// `sue` (`symmetric`) or `oue` parameters.
    pub(crate) fn new(protocol: &'static str, values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let (p, q) = if protocol == "sue" {
            (realized(pymath::logistic_tail(-epsilon / 2.0)), realized(pymath::logistic_tail(epsilon / 2.0)))
        } else {
            (0.5, realized(pymath::logistic_tail(epsilon)))
        };
        let (d, labels) = check_unary(&values, p, q, &["epsilon"])?;
        check_collectable(protocol, &[PayloadField::bits("bits", d)], d as u128)?;
        let effective = unary_epsilon(&Rational::of(p), &Rational::of(q));
        let fingerprint = fingerprint_of(protocol, &values);
        Ok(UnaryParams {
            protocol,
            values,
            fingerprint,
            epsilon,
            d,
            p,
            q,
            labels,
            cost: PrivacyCost::pure(epsilon.max(effective)),
        })
    }

    /// `oue` parameters of `epsilon` over `d` values with `labels` (a sub-protocol's).
    pub(crate) fn oue(epsilon: f64, d: u64, labels: Value) -> Result<Self> {
        Self::new(
            "oue",
            ParamValues::of(
                tables::OUE,
                [("epsilon", float_value(epsilon)), ("domain_size", Value::from(d)), ("labels", labels)],
            ),
        )
    }

    /// The index of a label or an int index.
    pub fn index_of(&self, value: &Value) -> Result<u64> {
        domain_index_of(self.protocol, self.d, self.labels.as_deref(), value)
    }
}

impl ProtocolParams for UnaryParams {
    fn protocol(&self) -> &'static str {
        self.protocol
    }
    fn values(&self) -> &ParamValues {
        &self.values
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::bits("bits", self.d)]
    }
}

struct Unary(Arc<UnaryParams>);

impl Mechanism for Unary {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.0.index_of(value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        Ok(vec![("bits".into(), PayloadValue::Bits(unary_draw(rng, p.p, p.q, p.d as usize, *value as usize)?))])
    }
}

/// The `sue` protocol.
pub(crate) static SUE: Protocol = Protocol {
    name: "sue",
    class_name: "SUEParams",
    table: tables::SUE,
    needs_secret: false,
    create: |v| Ok(Arc::new(UnaryParams::new("sue", v)?)),
    make_encoder: |p, o| {
        let params = downcast::<UnaryParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Unary(params)))
    },
    cohorts: |_| 0,
};

/// The `oue` protocol.
pub(crate) static OUE: Protocol = Protocol {
    name: "oue",
    class_name: "OUEParams",
    table: tables::OUE,
    needs_secret: false,
    create: |v| Ok(Arc::new(UnaryParams::new("oue", v)?)),
    make_encoder: |p, o| {
        let params = downcast::<UnaryParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Unary(params)))
    },
    cohorts: |_| 0,
};

// ---------------------------------------------------------------------------------------------------------------
// loue

/// Longitudinal unary encoding (`loue`): a permanent OUE (or SUE) response at `epsilon_perm`, memoized per value
/// from the metric secret, then each bit flipped afresh with `flip = realized((1 − λ2)/2)` so that one report is
/// `epsilon`-LDP; λ2 the root of `ab(E−1)λ² + (a−b)(E+1)λ/2 − (E−1)/4 = 0` (`a = p1 − 1/2`, `b = q1 − 1/2`).
/// Draws: the permanent response on the keyed stream, then `BB(flip, d)` on the injected one.
#[derive(Debug)]
pub struct LoueParams {
    values: ParamValues,
    fingerprint: String,
    /// The permanent round's ε.
    pub epsilon_perm: f64,
    /// One report's ε.
    pub epsilon: f64,
    /// Round 1, the memoized OUE or SUE.
    pub perm: UnaryParams,
    /// Round 2's realized flip probability.
    pub flip: f64,
    /// Realized Pr[bit v = 1 | value v] of a report.
    pub p: f64,
    /// Realized Pr[bit u = 1 | value v] of a report.
    pub q: f64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    d: u64,
    cost: PrivacyCost,
    report_charge: PrivacyCost,
}

fn star(pi: &Rational, flip: &Rational) -> Rational {
    let one = Rational::int(1);
    &(pi * &(&one - flip)) + &(&(&one - pi) * flip)
}

impl LoueParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon_perm = values.float("epsilon_perm")?;
        let epsilon = values.float("epsilon")?;
        let kind = values.choice("permanent")?;
        if !(epsilon < epsilon_perm) {
            return Err(Refusal::relation("epsilon<epsilon_perm", &["epsilon", "epsilon_perm"]).into());
        }
        let dd = values.int("domain_size")?;
        let table: &'static [ParamRow] = if kind == "sue" { tables::SUE } else { tables::OUE };
        let perm = UnaryParams::new(
            kind,
            ParamValues::of(table, [("epsilon", float_value(epsilon_perm)), ("domain_size", Value::from(dd as u64))]),
        )
        .map_err(|e| e.renamed(|n| (n == "epsilon").then(|| "epsilon_perm".to_string())))?;
        let a = perm.p - 0.5;
        let b = perm.q - 0.5;
        let e1 = pymath::expm1(epsilon);
        let qa = a * b * e1;
        let qb = (a - b) * (e1 + 2.0) / 2.0;
        let qc = e1 / 4.0;
        let disc = qb * qb + 4.0 * qa * qc;
        let lam = if disc >= 0.0 { 2.0 * qc / (qb + disc.sqrt()) } else { f64::INFINITY };
        if !(0.0 < lam && lam < 1.0) {
            let pe = unary_epsilon(&Rational::of(perm.p), &Rational::of(perm.q));
            let _ = pe;
            return Err(
                Refusal::relation("epsilon<realized_epsilon_perm", &["epsilon", "epsilon_perm", "permanent"]).into()
            );
        }
        let flip = realized((1.0 - lam) / 2.0);
        if flip <= 0.0 {
            return Err(Refusal::relation("instantaneous_realizable", &["epsilon", "epsilon_perm", "permanent"]).into());
        }
        let rf = Rational::of(flip);
        let (sp, sq) = (star(&Rational::of(perm.p), &rf), star(&Rational::of(perm.q), &rf));
        let (p, q) = (sp.to_f64(), sq.to_f64());
        let (d, labels) = check_unary(&values, p, q, &["epsilon"])?;
        check_collectable("loue", &[PayloadField::bits("bits", d)], d as u128)?;
        let cost = PrivacyCost::pure(epsilon.max(unary_epsilon(&sp, &sq)));
        let fingerprint = fingerprint_of("loue", &values);
        let mut out = LoueParams {
            values,
            fingerprint,
            epsilon_perm,
            epsilon,
            perm,
            flip,
            p,
            q,
            labels,
            d,
            cost,
            report_charge: cost,
        };
        out.report_charge = memo_report_charge(cost, out.memo_cap(), |t| out.leakage(t));
        Ok(out)
    }

    /// Every report of one value together: the permanent response's cost.
    pub fn memo_cap(&self) -> PrivacyCost {
        self.perm.cost
    }

    /// The exact worst-case ε of `t` reports of one value (Python's `loue_leakage`).
    pub fn leakage(&self, t: u32) -> f64 {
        let keep = pymath::log1p(-self.flip);
        let fl = pymath::log(self.flip);
        let t = t as f64;
        let log_p = |pi: f64, c: f64| {
            logaddexp(pymath::log(pi) + c * keep + (t - c) * fl, pymath::log1p(-pi) + c * fl + (t - c) * keep)
        };
        let f: Vec<f64> = (0..=t as u32).map(|c| log_p(self.perm.p, c as f64) - log_p(self.perm.q, c as f64)).collect();
        let max = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = f.iter().copied().fold(f64::INFINITY, f64::min);
        max - min
    }
}

impl ProtocolParams for LoueParams {
    common_params!("loue");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::bits("bits", self.d)]
    }
}

struct Loue {
    params: Arc<LoueParams>,
    memo: Memo<BitMask>,
}

impl Mechanism for Loue {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of("loue", self.params.d, self.params.labels.as_deref(), value)
    }

    fn charge(&mut self, value: &u64) -> Result<Charge> {
        self.memo.charge(*value, self.params.report_charge, self.params.memo_cap())
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = self.params.clone();
        let d = p.d as usize;
        let bits = self.memo.get(*value, |src| unary_draw(src, p.perm.p, p.perm.q, d, *value as usize))?;
        let noise = rng.bernoulli_bits(p.flip, d)?;
        Ok(vec![("bits".into(), PayloadValue::Bits(bits.xor(&noise)))])
    }
}

/// The `loue` protocol.
pub(crate) static LOUE: Protocol = Protocol {
    name: "loue",
    class_name: "LOUEParams",
    table: tables::LOUE,
    needs_secret: true,
    create: |v| Ok(Arc::new(LoueParams::new(v)?)),
    make_encoder: |p, mut o| {
        let params = downcast::<LoueParams>(&p)?;
        let memo = Memo::new("loue", params.fingerprint(), &mut o)?;
        Ok(Encoder::new(p, o.rng, Loue { params, memo }))
    },
    cohorts: |_| 0,
};
