//! Several attributes per report (`multi`; Wang et al., ICDE 2019; Arcolezi et al. 2021, `ldp/encoders/multi.py`):
//! `d ≥ 2` attributes, each by a fixed-domain or numeric protocol; `split` reports every attribute at `ε/d` (costs
//! the sum of their ε), `sample` reports one attribute `R(d)` at the full ε (costs the largest). An attribute is
//! `[name, protocol, {params without epsilon}]`; `rr` is symmetric RR at the attribute's ε.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::histogram::{BucketParams, DBitFlipParams};
use super::numeric::{HybridParams, PiecewiseParams};
use crate::cost::PrivacyCost;
use crate::encoder::{downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Prepared, Protocol};
use crate::error::{kind_of, Error, Refusal, RefusalCode, Result};
use crate::params::{check_collectable, ParamValues, PayloadField, PayloadKind, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::pytext::{self};
use crate::random::{BitMask, NoDraws, RandomSource};
use crate::rational::Rational;
use crate::value::float_value;

/// The most fields a report carries (the wire format's limit).
pub const MAX_FIELDS: usize = 16;
const COMPONENTS: &[&str] = &["rr", "grr", "bucket-grr", "dbitflip", "duchi", "piecewise", "hybrid"];

/// `multi`'s parameters.
#[derive(Debug)]
pub struct MultiParams {
    values: ParamValues,
    fingerprint: String,
    /// The total ε.
    pub epsilon: f64,
    /// `split` or `sample`.
    pub mode: String,
    /// The attributes' names.
    pub names: Vec<String>,
    /// The attributes' protocols.
    pub protocols: Vec<String>,
    /// The attributes' parameters (at `ε/d` or ε).
    pub components: Vec<Arc<dyn ProtocolParams>>,
}

fn is_attribute_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 31
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

fn normalized(a: &Value, i: usize) -> Result<(String, String, Map<String, Value>)> {
    let (name, proto, params) = match a {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            if keys != ["name", "params", "protocol"] {
                // Python refuses it with a ValueError, its code param_type.
                return Err(Refusal::value(RefusalCode::ParamType)
                    .with("param", "attributes")
                    .with("index", i)
                    .with("expected", "attribute")
                    .with("got", "object")
                    .into());
            }
            (&m["name"], &m["protocol"], &m["params"])
        }
        Value::Array(v) if v.len() == 3 => (&v[0], &v[1], &v[2]),
        other => return Err(Refusal::param_type("attributes", "attribute", other).with("index", i).into()),
    };
    let name = match name {
        Value::String(n) if is_attribute_name(n) => n.to_string(),
        Value::String(_) => return Err(Refusal::relation("attribute_name", &["attributes"]).with("index", i).into()),
        other => {
            return Err(Refusal::value(RefusalCode::ParamType)
                .with("param", "attributes")
                .with("index", i)
                .with("expected", "string")
                .with("got", kind_of(other))
                .into())
        }
    };
    let proto = match proto.as_str() {
        Some(p) if COMPONENTS.contains(&p) => p.to_string(),
        _ => return Err(Refusal::choice("attributes", COMPONENTS, proto).with("index", i).into()),
    };
    let Value::Object(params) = params else {
        return Err(Refusal::param_type("attributes", "object", params).with("index", i).into());
    };
    if params.contains_key("epsilon") {
        return Err(Refusal::value(RefusalCode::UnknownParams)
            .with("params", vec!["epsilon"])
            .with("attribute", name)
            .into());
    }
    Ok((name, proto, params.clone()))
}

fn build(proto: &str, params: &Map<String, Value>, epsilon: f64) -> Result<Arc<dyn ProtocolParams>> {
    if proto == "rr" {
        if !params.is_empty() {
            let mut keys: Vec<&str> = params.keys().map(String::as_str).collect();
            keys.sort();
            return Err(Refusal::value(RefusalCode::UnknownParams).with("params", keys).into());
        }
        // The attribute's ε (ε/d in split mode: it may underflow) read as an ε.
        let eps = ParamValues::of(tables::MULTI, [("epsilon", float_value(epsilon))]).float("epsilon")?;
        let p = pymath::logistic_tail(eps);
        let q = pymath::logistic_tail(-eps);
        if q == 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon"]).into());
        }
        let mut m = Map::new();
        m.insert("p".into(), float_value(p));
        m.insert("q".into(), float_value(q));
        return super::rr::RR.params(&Value::Object(m));
    }
    let mut m = params.clone();
    m.insert("epsilon".into(), float_value(epsilon));
    super::get(proto).ok_or_else(|| Error::Internal(format!("no {proto}")))?.params(&Value::Object(m))
}

fn cells(c: &dyn ProtocolParams) -> u128 {
    let any = c as &dyn std::any::Any;
    match c.protocol() {
        "rr" => 1,
        "duchi" => 2,
        "hybrid" => any.downcast_ref::<HybridParams>().map_or(0, |h| h.cells as u128 + 2),
        "piecewise" => any.downcast_ref::<PiecewiseParams>().map_or(0, |p| p.cells as u128),
        "dbitflip" => any.downcast_ref::<DBitFlipParams>().map_or(0, |d| 2 * d.buckets.count() as u128),
        "bucket-grr" => any.downcast_ref::<BucketParams>().map_or(0, |b| b.buckets.count() as u128),
        _ => c.domain_size().unwrap_or(0) as u128,
    }
}

impl MultiParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let mode = values.choice("mode")?.to_string();
        let Value::Array(raw) = values.get("attributes") else {
            return Err(Refusal::param_type("attributes", "list", values.get("attributes")).into());
        };
        if raw.len() < 2 {
            return Err(Refusal::value(RefusalCode::ParamLength)
                .with("param", "attributes")
                .with("got", raw.len())
                .with("min", 2)
                .into());
        }
        let attrs: Vec<_> = raw.iter().enumerate().map(|(i, a)| normalized(a, i)).collect::<Result<_>>()?;
        let names: Vec<String> = attrs.iter().map(|a| a.0.clone()).collect();
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() != names.len() {
            return Err(Refusal::relation("distinct", &["attributes"]).into());
        }
        let protocols: Vec<String> = attrs.iter().map(|a| a.1.clone()).collect();
        let each = if mode == "split" { epsilon / attrs.len() as f64 } else { epsilon };
        let mut components = Vec::with_capacity(attrs.len());
        for (i, (name, proto, params)) in attrs.iter().enumerate() {
            let _ = i;
            let c = build(proto, params, each).map_err(|e| e.with_field("attribute", name.as_str()))?;
            components.push(c);
        }
        let mut out = MultiParams { values, fingerprint: String::new(), epsilon, mode, names, protocols, components };
        let schema = out.schema();
        let field_names: Vec<String> = schema.iter().map(|f| f.name.to_string()).collect();
        if field_names.len() > MAX_FIELDS {
            return Err(Refusal::limit("fields", field_names.len(), MAX_FIELDS).into());
        }
        let longest = field_names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        if longest > 32 {
            return Err(Refusal::limit("field_name_characters", longest, 32).into());
        }
        let mut sorted = field_names.clone();
        sorted.sort();
        let mut dedup = sorted.clone();
        dedup.dedup();
        if dedup.len() != sorted.len() {
            return Err(Refusal::relation("distinct_fields", &["attributes"]).into());
        }
        let total: u128 = out.components.len() as u128 + out.components.iter().map(|c| cells(c.as_ref())).sum::<u128>();
        check_collectable("multi", &schema, total)?;
        out.fingerprint = pytext::fingerprint("multi", &out.canonical_dict()).unwrap_or_default();
        Ok(out)
    }

    fn prefix(&self, i: usize, field: &str) -> Cow<'static, str> {
        Cow::Owned(format!("{}_{field}", self.names[i]))
    }
}

impl ProtocolParams for MultiParams {
    fn protocol(&self) -> &'static str {
        "multi"
    }
    fn values(&self) -> &ParamValues {
        &self.values
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn canonical_dict(&self) -> Value {
        let attributes = self
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let c = &self.components[i];
                let params = if c.protocol() == "rr" {
                    Value::Object(Map::new())
                } else {
                    match c.canonical_dict() {
                        Value::Object(mut m) => {
                            m.shift_remove("epsilon");
                            Value::Object(m)
                        }
                        other => other,
                    }
                };
                Value::Array(vec![Value::String(name.clone()), Value::String(self.protocols[i].clone()), params])
            })
            .collect();
        let mut m = Map::new();
        m.insert("epsilon".into(), float_value(self.epsilon));
        m.insert("mode".into(), Value::String(self.mode.clone()));
        m.insert("attributes".into(), Value::Array(attributes));
        Value::Object(m)
    }
    fn privacy_cost(&self) -> PrivacyCost {
        let costs = self.components.iter().map(|c| c.privacy_cost().epsilon);
        PrivacyCost::pure(if self.mode == "split" {
            Rational::fsum(costs)
        } else {
            costs.fold(f64::NEG_INFINITY, f64::max)
        })
    }
    fn schema(&self) -> Vec<PayloadField> {
        let mut out = Vec::new();
        if self.mode == "sample" {
            out.push(PayloadField::uint("attr", self.components.len() as u64));
        }
        for (i, c) in self.components.iter().enumerate() {
            for f in c.schema() {
                out.push(PayloadField { name: self.prefix(i, &f.name), ..f });
            }
        }
        out
    }
    fn domain_size(&self) -> Option<u64> {
        None
    }
}

/// The `multi` encoder: a value is a mapping `{name: value}` of every attribute.
struct Multi {
    params: Arc<MultiParams>,
    parts: Vec<Encoder>,
}

impl Mechanism for Multi {
    type Checked = Vec<Prepared>;

    fn check(&mut self, value: &Value) -> Result<Vec<Prepared>> {
        let names = &self.params.names;
        let Value::Object(m) = value else {
            return Err(Refusal::value_type("object", value).into());
        };
        let missing: Vec<&String> = names.iter().filter(|n| !m.contains_key(n.as_str())).collect();
        if !missing.is_empty() {
            let missing: Vec<&str> = missing.into_iter().map(String::as_str).collect();
            return Err(Refusal::value(RefusalCode::MissingAttributes).with("attributes", missing).into());
        }
        let mut extra: Vec<&str> = m.keys().map(String::as_str).filter(|k| !names.iter().any(|n| n == k)).collect();
        if !extra.is_empty() {
            extra.sort();
            return Err(Refusal::value(RefusalCode::UnknownAttributes).with("attributes", extra).into());
        }
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                self.parts[i].prepare(&m[name.as_str()]).map_err(|e| e.with_field("attribute", name.as_str()))
            })
            .collect()
    }

    fn charge(&mut self, _: &Vec<Prepared>) -> Result<Charge> {
        Ok(Charge::Plain(self.params.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &Vec<Prepared>, _: Option<u64>) -> Result<Payload> {
        let p = self.params.clone();
        let mut out: Payload = Vec::new();
        if p.mode == "split" {
            for (i, prepared) in value.iter().enumerate() {
                for (k, v) in self.parts[i].draw_with(rng, prepared, None)? {
                    out.push((p.prefix(i, &k), v));
                }
            }
            return Ok(out);
        }
        let j = rng.randbelow(p.components.len() as u64)? as usize;
        out.push(("attr".into(), PayloadValue::Uint(j as u64)));
        for (i, c) in p.components.iter().enumerate() {
            if i == j {
                for (k, v) in self.parts[j].draw_with(rng, &value[j], None)? {
                    out.push((p.prefix(j, &k), v));
                }
            } else {
                for f in c.schema() {
                    let v = match f.kind {
                        PayloadKind::Uint => PayloadValue::Uint(0),
                        PayloadKind::Bits => PayloadValue::Bits(BitMask::new(f.size as usize)),
                    };
                    out.push((p.prefix(i, &f.name), v));
                }
            }
        }
        Ok(out)
    }
}

fn make(p: Arc<dyn ProtocolParams>, o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<MultiParams>(&p)?;
    let parts = params
        .components
        .iter()
        .map(|c| {
            let proto = super::get(c.protocol()).ok_or_else(|| Error::Internal(format!("no {}", c.protocol())))?;
            // The parts draw from the multi encoder's source (`draw_with`); their own is never used.
            proto.encoder(c.clone(), EncoderOptions { rng: Some(Box::new(NoDraws)), ..Default::default() })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Encoder::new(p, o.rng, Multi { params, parts }))
}

/// The `multi` protocol.
pub(crate) static MULTI: Protocol = Protocol {
    name: "multi",
    class_name: "MultiParams",
    table: tables::MULTI,
    needs_secret: false,
    create: |v| Ok(Arc::new(MultiParams::new(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
