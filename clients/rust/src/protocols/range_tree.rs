//! Hierarchical histograms for range queries (`hh`; Cormode, Kulkarni & Srivastava, PVLDB 2019 §4,
//! `ldp/encoders/range_tree.py`): `[low, high]` cut into `D = branching^depth` equal buckets; a report draws a level
//! of the `B`-ary tree (uniformly, or by `level_weights`) and reports its bucket's node there through that level's
//! oracle at the full ε: GRR or OUE (`"auto"`: the one of smaller null variance). Charged the largest of the
//! oracles'.

use std::sync::Arc;

use serde_json::Value;

use super::histogram::bucket_index;
use super::rr::{grr_draw, GrrParams};
use super::unary::{unary_draw, UnaryParams};
use crate::cost::PrivacyCost;
use crate::encoder::{common_params, downcast, Charge, Encoder, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{kind_of, Error, Refusal, RefusalCode, RefusalKind, Result};
use crate::params::int_value;
use crate::params::{check_collectable, check_int, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::random::{BitMask, RandomSource};
use crate::value::{float_value, int_of, is_real};

/// The most leaves.
pub const MAX_LEAVES: u64 = 1 << 16;

/// `V0 = q(1−q)/(p−q)²`: the variance per report of the count of a value nobody holds.
pub fn null_variance(p: f64, q: f64) -> f64 {
    q * (1.0 - q) / ((p - q) * (p - q))
}

/// A level's frequency oracle.
#[derive(Debug)]
pub enum LevelOracle {
    /// GRR over the level's nodes.
    Grr(GrrParams),
    /// OUE over the level's nodes.
    Oue(UnaryParams),
}

impl LevelOracle {
    fn cost(&self) -> PrivacyCost {
        match self {
            LevelOracle::Grr(g) => g.privacy_cost(),
            LevelOracle::Oue(o) => o.privacy_cost(),
        }
    }
}

/// `hh`'s parameters.
#[derive(Debug)]
pub struct HhParams {
    values: ParamValues,
    fingerprint: String,
    /// The ε of every level's oracle.
    pub epsilon: f64,
    /// The tree's branching factor.
    pub branching: u64,
    /// The tree's depth.
    pub depth: u64,
    /// The levels' weights (all 1 without `level_weights`).
    pub weights: Vec<u64>,
    weighted: bool,
    /// The bucket edges: `low + (high − low)·i/D`, then `high`.
    pub edges: Vec<f64>,
    /// Whether values outside `[low, high]` are clipped.
    pub clip: bool,
    /// Each level's oracle, levels 1 to `depth`.
    pub oracles: Vec<LevelOracle>,
}

/// `low` or `high`: Python refuses a non-number with a ValueError (its code param_type), then the table's range.
fn finite(values: &ParamValues, name: &str) -> Result<f64> {
    let v = values.get(name);
    if !is_real(v) {
        return Err(Refusal::value(RefusalCode::ParamType)
            .with("param", name)
            .with("expected", "float")
            .with("got", kind_of(v))
            .into());
    }
    values.float(name)
}

impl HhParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let low = finite(&values, "low")?;
        let high = finite(&values, "high")?;
        if !(low < high) {
            return Err(Refusal::relation("low<high", &["low", "high"]).into());
        }
        let branching = values.int("branching")? as u64;
        let depth = values.int("depth")? as u64;
        if (branching as u128).checked_pow(depth as u32).is_none_or(|n| n > MAX_LEAVES as u128) {
            let leaves = int_value((branching as i128).saturating_pow(depth as u32));
            return Err(Refusal::limit("leaves", leaves, MAX_LEAVES).into());
        }
        let oracle = values.choice("oracle")?;
        let clip = values.bool("clip")?;
        let (weights, weighted) = level_weights(&values, depth)?;
        let n = branching.pow(depth as u32);
        let edges = leaf_edges(low, high, n)?;
        let oracles = (1..=depth)
            .map(|level| level_oracle(oracle, epsilon, branching.pow(level as u32)))
            .collect::<Result<Vec<_>>>()?;
        let mut out = HhParams {
            values,
            fingerprint: String::new(),
            epsilon,
            branching,
            depth,
            weights,
            weighted,
            edges,
            clip,
            oracles,
        };
        check_collectable("hh", &out.schema(), depth as u128 * (n as u128 + 1))?;
        out.fingerprint = fingerprint_of("hh", &out.values);
        Ok(out)
    }

    /// The number of leaf buckets, `branching^depth`.
    pub fn num_buckets(&self) -> u64 {
        self.edges.len() as u64 - 1
    }

    fn uses_grr(&self) -> bool {
        self.oracles.iter().any(|o| matches!(o, LevelOracle::Grr(_)))
    }

    fn uses_oue(&self) -> bool {
        self.oracles.iter().any(|o| matches!(o, LevelOracle::Oue(_)))
    }
}

/// The levels' weights (`level_weights`: one per level, the leaf level's above 0; empty: all 1) and whether they
/// were given.
fn level_weights(values: &ParamValues, depth: u64) -> Result<(Vec<u64>, bool)> {
    let Value::Array(w) = values.get("level_weights") else {
        return Err(Refusal::param_type("level_weights", "list", values.get("level_weights")).into());
    };
    if !w.is_empty() {
        if w.len() as u64 != depth {
            return Err(Refusal::value(RefusalCode::ParamLength)
                .with("param", "level_weights")
                .with("got", w.len())
                .with("min", depth)
                .with("max", depth)
                .into());
        }
        for (i, x) in w.iter().enumerate() {
            check_int(x, "level_weights", 0, Some(1 << 32)).map_err(|e| e.with_field("index", i))?;
        }
        if int_of(&w[w.len() - 1]) == Some(0) {
            return Err(Refusal::relation("leaf_weight", &["level_weights"]).into());
        }
    }
    let weighted = !w.is_empty();
    let weights: Vec<u64> =
        if weighted { w.iter().map(|x| int_of(x).unwrap_or(0) as u64).collect() } else { vec![1; depth as usize] };
    Ok((weights, weighted))
}

/// The `n + 1` edges of `n` equal leaf buckets over `[low, high]`, refused unless distinct as doubles.
fn leaf_edges(low: f64, high: f64, n: u64) -> Result<Vec<f64>> {
    let mut edges: Vec<f64> = (0..n).map(|i| low + (high - low) * i as f64 / n as f64).collect();
    edges.push(high);
    let mut sorted = edges.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    if sorted.len() != edges.len() {
        return Err(Refusal::relation("distinct_edges", &["low", "high", "branching", "depth"]).into());
    }
    Ok(edges)
}

/// The frequency oracle of a level of `m` nodes: `oracle` `grr` or `oue`, else the one of smaller variance (OUE
/// where GRR refuses the level's ε).
fn level_oracle(oracle: &str, epsilon: f64, m: u64) -> Result<LevelOracle> {
    let sub = |table| ParamValues::of(table, [("epsilon", float_value(epsilon)), ("domain_size", Value::from(m))]);
    // A level's ε too large or too small for its oracle: a relation of the tree's own parameters.
    let level = |e: Error| e.relation_of(&["epsilon", "branching", "depth", "oracle"], |_| true);
    Ok(match oracle {
        "grr" => LevelOracle::Grr(GrrParams::new(sub(tables::GRR)).map_err(level)?),
        "oue" => LevelOracle::Oue(UnaryParams::new("oue", sub(tables::OUE)).map_err(level)?),
        _ => {
            let oue = UnaryParams::new("oue", sub(tables::OUE)).map_err(level)?;
            match GrrParams::new(sub(tables::GRR)) {
                Ok(g) if null_variance(g.p, (1.0 - g.p) / (g.d - 1) as f64) < null_variance(oue.p, oue.q) => {
                    LevelOracle::Grr(g)
                }
                Ok(_) | Err(Error::Refusal(Refusal { kind: RefusalKind::Value, .. })) => LevelOracle::Oue(oue),
                Err(e) => return Err(e),
            }
        }
    })
}

impl ProtocolParams for HhParams {
    common_params!("hh");
    fn privacy_cost(&self) -> PrivacyCost {
        PrivacyCost::pure(self.oracles.iter().map(|o| o.cost().epsilon).fold(f64::NEG_INFINITY, f64::max))
    }
    fn schema(&self) -> Vec<PayloadField> {
        let mut out = vec![PayloadField::uint("level", self.depth)];
        let grr_max = self
            .oracles
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o, LevelOracle::Grr(_)))
            .map(|(i, _)| self.branching.pow(i as u32 + 1))
            .max();
        if let Some(m) = grr_max {
            out.push(PayloadField::uint("y", m));
        }
        if self.uses_oue() {
            out.push(PayloadField::bits("bits", self.num_buckets()));
        }
        out
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.num_buckets())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(super::histogram::bucket_labels(&self.edges))
    }
}

struct Hh(Arc<HhParams>);

impl Mechanism for Hh {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        bucket_index(&self.0.edges, value, self.0.clip)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let level = if !p.weighted {
            rng.randbelow(p.depth)? as usize
        } else {
            let mut r = rng.randbelow(p.weights.iter().sum())?;
            let mut l = 0;
            while r >= p.weights[l] {
                r -= p.weights[l];
                l += 1;
            }
            l
        };
        let m = p.branching.pow(level as u32 + 1);
        let node = value / (p.num_buckets() / m);
        let mut payload = vec![("level".into(), PayloadValue::Uint(level as u64))];
        match &p.oracles[level] {
            LevelOracle::Grr(g) => {
                payload.push(("y".into(), PayloadValue::Uint(grr_draw(rng, g.p, m, node)?)));
                if p.uses_oue() {
                    payload.push(("bits".into(), PayloadValue::Bits(BitMask::new(p.num_buckets() as usize))));
                }
            }
            LevelOracle::Oue(o) => {
                let own = unary_draw(rng, o.p, o.q, m as usize, node as usize)?;
                if p.uses_grr() {
                    payload.push(("y".into(), PayloadValue::Uint(0)));
                }
                let mut bits = BitMask::new(p.num_buckets() as usize);
                for i in own.ones() {
                    bits.set(i, true);
                }
                payload.push(("bits".into(), PayloadValue::Bits(bits)));
            }
        }
        Ok(payload)
    }
}

/// The `hh` protocol.
pub(crate) static HH: Protocol = Protocol {
    name: "hh",
    class_name: "HHParams",
    table: tables::HH,
    needs_secret: false,
    create: |v| Ok(Arc::new(HhParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<HhParams>(&p)?;
        Ok(Encoder::new(p, o.rng, Hh(params)))
    },
    cohorts: |_| 0,
};
