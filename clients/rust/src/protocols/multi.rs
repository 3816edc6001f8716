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
use crate::error::{Error, Result};
use crate::params::{
    check_collectable, check_epsilon, FieldType, ParamField, ParamValues, PayloadField, PayloadKind, ProtocolParams,
};
use crate::pymath;
use crate::pytext::{self, float_repr, format_g, str_list};
use crate::random::{BitMask, NoDraws, RandomSource};
use crate::rational::Rational;
use crate::value::{float_value, param_type_name, repr_value, type_name};

/// The most fields a report carries (the wire format's limit).
pub const MAX_FIELDS: usize = 16;
const COMPONENTS: &[&str] = &["rr", "grr", "bucket-grr", "dbitflip", "duchi", "piecewise", "hybrid"];

const FIELDS: &[ParamField] = &[
    ParamField::required("epsilon", FieldType::Float),
    ParamField::required("mode", FieldType::Str),
    ParamField::required("attributes", FieldType::Any),
];

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
                return Err(Error::value(format!(
                    "attributes[{i}] must have exactly the keys name, protocol, params; got {}",
                    str_list(&keys)
                )));
            }
            (&m["name"], &m["protocol"], &m["params"])
        }
        Value::Array(v) if v.len() == 3 => (&v[0], &v[1], &v[2]),
        other => {
            return Err(Error::type_(format!(
                "attributes[{i}] must be (name, protocol, params) or a mapping of them, got {}",
                param_type_name(other)
            )))
        }
    };
    let name = match name.as_str() {
        Some(n) if is_attribute_name(n) => n.to_string(),
        _ => {
            return Err(Error::value(format!(
                "attributes[{i}]: names are [a-z][a-z0-9_]{{0,30}} (they prefix report fields), got {}",
                repr_value(name, true)
            )))
        }
    };
    let proto = match proto.as_str() {
        Some(p) if COMPONENTS.contains(&p) => p.to_string(),
        _ => {
            return Err(Error::value(format!(
                "attributes[{i}] ({name}): protocol must be one of {}, got {}",
                COMPONENTS.join(", "),
                repr_value(proto, true)
            )))
        }
    };
    let Value::Object(params) = params else {
        return Err(Error::type_(format!(
            "attributes[{i}] ({name}): params must be a mapping, got {}",
            param_type_name(params)
        )));
    };
    if params.contains_key("epsilon") {
        return Err(Error::value(format!(
            "attributes[{i}] ({name}): params must not carry epsilon (the multi's epsilon is split or given whole by \
             the mode)"
        )));
    }
    Ok((name, proto, params.clone()))
}

fn build(proto: &str, params: &Map<String, Value>, epsilon: f64) -> Result<Arc<dyn ProtocolParams>> {
    if proto == "rr" {
        if !params.is_empty() {
            let mut keys: Vec<&String> = params.keys().collect();
            keys.sort();
            return Err(Error::value(format!(
                "rr attributes take no params (symmetric RR at the attribute's ε), got {}",
                str_list(&keys)
            )));
        }
        let eps = check_epsilon(&float_value(epsilon), "epsilon")?;
        let p = pymath::logistic_tail(eps);
        let q = pymath::logistic_tail(-eps);
        if q == 1.0 {
            return Err(Error::value(format!(
                "epsilon={} is too large for binary RR: q = 1/(1+e^-ε) rounds to 1 in double precision, so reports \
                 would not be private",
                float_repr(eps)
            )));
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
        let epsilon = check_epsilon(values.get("epsilon"), "epsilon")?;
        let mode = match values.get("mode").as_str() {
            Some(m @ ("split" | "sample")) => m.to_string(),
            _ => {
                return Err(Error::value(format!(
                    "mode must be 'split' (ε/d per attribute) or 'sample' (one attribute at ε), got {}",
                    repr_value(values.get("mode"), true)
                )))
            }
        };
        let Value::Array(raw) = values.get("attributes") else {
            return Err(Error::type_(format!(
                "attributes must be a sequence of (name, protocol, params), got {}",
                param_type_name(values.get("attributes"))
            )));
        };
        if raw.len() < 2 {
            return Err(Error::value(format!(
                "a multi report needs at least 2 attributes (use the protocol itself for one), got {}",
                raw.len()
            )));
        }
        let attrs: Vec<_> = raw.iter().enumerate().map(|(i, a)| normalized(a, i)).collect::<Result<_>>()?;
        let names: Vec<String> = attrs.iter().map(|a| a.0.clone()).collect();
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() != names.len() {
            return Err(Error::value(format!("attribute names must be distinct, got {}", str_list(&names))));
        }
        let protocols: Vec<String> = attrs.iter().map(|a| a.1.clone()).collect();
        let each = if mode == "split" { epsilon / attrs.len() as f64 } else { epsilon };
        let mut components = Vec::with_capacity(attrs.len());
        for (i, (name, proto, params)) in attrs.iter().enumerate() {
            let c = build(proto, params, each).map_err(|e| {
                let prefix = format!("attributes[{i}] ({name}): {proto} at ε={}: ", format_g(each, 6));
                match e {
                    Error::Value(m) => Error::value(prefix + &m),
                    Error::Type(m) => Error::type_(prefix + &m),
                    other => other,
                }
            })?;
            components.push(c);
        }
        let mut out = MultiParams { values, fingerprint: String::new(), epsilon, mode, names, protocols, components };
        let schema = out.schema();
        let field_names: Vec<String> = schema.iter().map(|f| f.name.to_string()).collect();
        if field_names.len() > MAX_FIELDS {
            return Err(Error::value(format!(
                "a multi report carries at most {MAX_FIELDS} fields (the wire format's limit); these attributes need {}",
                field_names.len()
            )));
        }
        let too_long: Vec<&String> = field_names.iter().filter(|n| n.chars().count() > 32).collect();
        if !too_long.is_empty() {
            return Err(Error::value(format!(
                "report field names are at most 32 characters; shorten the attribute names of {}",
                str_list(&too_long)
            )));
        }
        let mut sorted = field_names.clone();
        sorted.sort();
        let mut dedup = sorted.clone();
        dedup.dedup();
        if dedup.len() != sorted.len() {
            return Err(Error::value(format!(
                "attribute names make colliding report fields {}; rename an attribute",
                str_list(&sorted)
            )));
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
    fn fields(&self) -> &'static [ParamField] {
        FIELDS
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
            return Err(Error::type_(format!(
                "multi values must be a mapping {{name: value}} of the attributes {}, got {}",
                str_list(names),
                type_name(value)
            )));
        };
        let missing: Vec<&String> = names.iter().filter(|n| !m.contains_key(n.as_str())).collect();
        if !missing.is_empty() {
            return Err(Error::value(format!(
                "multi value is missing attributes {} (every report needs all of {})",
                str_list(&missing),
                str_list(names)
            )));
        }
        let extra: Vec<&String> = m.keys().filter(|k| !names.contains(k)).take(5).collect();
        if !extra.is_empty() {
            return Err(Error::value(format!(
                "multi value has unknown attributes {} (the attributes are {})",
                str_list(&extra),
                str_list(names)
            )));
        }
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                self.parts[i].prepare(&m[name.as_str()]).map_err(|e| match e {
                    Error::Value(msg) => Error::value(format!("attribute {}: {msg}", pytext::repr(name))),
                    Error::Type(msg) => Error::type_(format!("attribute {}: {msg}", pytext::repr(name))),
                    other => other,
                })
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
    fields: FIELDS,
    needs_secret: false,
    create: |v| Ok(Arc::new(MultiParams::new(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
