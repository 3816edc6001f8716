//! Projective Geometry Response (`pgr`) and its hybrid with blocks (`hpg`) (`ldp/encoders/projective_geometry.py`;
//! Feldman, Nelson, Nguyen & Talwar, ICML 2022, §3 and §4).
//!
//! The `d` values are dealt into `h` blocks of `b = P_t` points of `PG(t−1, q)` ([`super::projective_space`]):
//! value `x` is point `x mod b` of block `⌊x/b⌋` (`h = 1` for `pgr`), `t ≥ 2` the smallest with `h·b ≥ d`. A report
//! is `j` in `[0, K)`, `K = h·b`: uniform with `γ = realized(K/(K + expm1(ε)·s))`, else uniform on the value's own
//! set, the hyperplane of its point in its block (`s = P_{t−1}` points). Charged `max(ε, ln(1 + K(1 − γ)/(γ·s)))`,
//! exactly. Draws: `B(γ)`, then `R(K)` if true, `R(s)` if false.
//!
//! `q` (and `hpg`'s `blocks`) left out are resolved as Python resolves them
//! ([`best_pgr_field`], [`best_hpg_layout`]); the fingerprint hashes the resolved values. When no feasible layout
//! has a finite variance (ε so large or so small that `γ` is 0 or 1 for every one), the first feasible one is
//! resolved and ε refused for what it is, `param_relation` `epsilon_too_large` or `epsilon_too_small`. When no
//! candidate layout is feasible the refusal is Python's: `param_limit` of the limit exceeded by the least
//! ([`least_excess`]: `aggregate_cells` with the fewest outputs when every candidate has too many, else
//! `decode_work` with the least work of those within the outputs), or, for `hpg` given a `q` whose every block
//! holds the whole domain, `param_relation` `two_blocks`.

use std::sync::Arc;

use serde_json::Value;

use crate::cost::PrivacyCost;
use crate::encoder::{
    domain_index_of, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Error, Refusal, Result};
use crate::params::{
    check_collectable, check_labels, fingerprint_of, int_value, ParamValues, PayloadField, ProtocolParams,
    MAX_AGGREGATE_CELLS,
};
use crate::protocols::projective_layout::{
    best_hpg_layout, best_pgr_field, decode_work, dimension, hpg_layouts, least_excess, own_share, pgr_layouts,
    LeastExcess, MAX_DECODE_WORK,
};
use crate::protocols::projective_space::{is_prime, point_index, points, write_hyperplane_point, write_point};
use crate::protocols::tables;
use crate::random::{realized_unchecked as realized, RandomSource};
use crate::rational::Rational;

/// The most coordinates a point of an accepted layout has: `K = h·P_t ≤ 2^28` and `P_t ≥ 2^t − 1`, so `t ≤ 28`.
const MAX_DIMENSION: usize = 28;

/// The parameters of `pgr` and `hpg` (`q` and `blocks` resolved).
#[derive(Debug)]
pub struct ProjectiveParams {
    protocol: &'static str,
    values: ParamValues,
    fingerprint: String,
    /// The ε asked for.
    pub epsilon: f64,
    /// The number of values.
    pub d: u64,
    /// `q`, the field order (prime).
    pub q: u64,
    /// `h`, the number of blocks (1 for `pgr`).
    pub blocks: u64,
    /// `t`: points are lines of `F_q^t`.
    pub dimension: u32,
    /// `b = P_t`, the points of one block.
    pub block_points: u64,
    /// `s = P_{t−1}`, the points of a hyperplane: a value's own set.
    pub set_size: u64,
    /// `γ`, the realized probability of the uniform branch.
    pub gamma: f64,
    /// The labels, if any.
    pub labels: Option<Vec<String>>,
    cost: PrivacyCost,
}

/// `values` with `q` (and `blocks`) set to the resolved ones.
fn resolved(table: &'static [tables::ParamRow], values: &ParamValues, q: u64, blocks: Option<u64>) -> ParamValues {
    let set = |name: &str, v: &Value| match (name, blocks) {
        ("q", _) => Value::from(q),
        ("blocks", Some(h)) => Value::from(h),
        _ => v.clone(),
    };
    ParamValues::of(table, values.iter().map(|(n, v)| (n, set(n, v))))
}

/// None of the candidate `layouts` over `d` values is within the aggregate's cells and the decoder's steps
/// (Python's `_no_layout`): `param_limit` of the limit exceeded by the least, or `two_blocks` when there is no
/// candidate at all (`hpg`'s given `q` holds the domain in one block at every `t`).
fn no_layout(d: u64, layouts: &[(u64, u64)]) -> Error {
    match least_excess(d, layouts) {
        None => Refusal::relation("two_blocks", &["domain_size", "q"]),
        Some(LeastExcess::AggregateCells(k)) => Refusal::limit("aggregate_cells", k, MAX_AGGREGATE_CELLS),
        Some(LeastExcess::DecodeWork(work)) => {
            Refusal::limit("decode_work", int_value(work as i128), MAX_DECODE_WORK as u64)
        }
    }
    .into()
}

impl ProjectiveParams {
    /// `pgr`'s parameters, checked in the order of Python's `PGRParams.__post_init__`: ε, `domain_size`, the
    /// default `q` if left out, then the layout.
    fn pgr(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let values = if values.get("q").is_null() {
            let q = best_pgr_field(epsilon, d).ok_or_else(|| no_layout(d, &pgr_layouts(epsilon)))?;
            resolved(tables::PGR, &values, q, None)
        } else {
            values
        };
        let q = values.int("q")? as u64;
        Self::new("pgr", values, epsilon, d, q, 1)
    }

    /// `hpg`'s parameters, checked in the order of Python's `HPGParams.__post_init__`: ε, `domain_size`, `q` and
    /// `blocks` if given, the default layout if either is left out (a given `q` first checked prime), then the
    /// layout.
    fn hpg(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let given = |name: &str| !values.get(name).is_null();
        let q = if given("q") { Some(values.int("q")? as u64) } else { None };
        let blocks = if given("blocks") { Some(values.int_at_most("blocks", d as i128)? as u64) } else { None };
        let (q, blocks, values) = match (q, blocks) {
            (Some(q), Some(h)) => (q, h, values),
            _ => {
                if q.is_some_and(|q| !is_prime(q)) {
                    return Err(Refusal::relation("prime_field", &["q"]).into());
                }
                let (q, h) = best_hpg_layout(epsilon, d, q, blocks)
                    .ok_or_else(|| no_layout(d, &hpg_layouts(epsilon, d, q, blocks)))?;
                (q, h, resolved(tables::HPG, &values, q, Some(h)))
            }
        };
        Self::new("hpg", values, epsilon, d, q, blocks)
    }

    /// Python's `_check_layout`, the labels and `check_collectable`, in that order; then the exact cost.
    fn new(protocol: &'static str, values: ParamValues, epsilon: f64, d: u64, q: u64, blocks: u64) -> Result<Self> {
        if !is_prime(q) {
            return Err(Refusal::relation("prime_field", &["q"]).into());
        }
        let t = dimension(q, blocks, d);
        let work = decode_work(q, t, blocks);
        if work > MAX_DECODE_WORK {
            return Err(Refusal::limit("decode_work", int_value(work as i128), MAX_DECODE_WORK as u64).into());
        }
        // K·q·t ≤ 2^32 from here on: K and every P below fit easily.
        let block_points = points(q, t);
        let (order, set_size) = (blocks * block_points, points(q, t - 1));
        let gamma = realized(own_share(epsilon, order, set_size));
        if gamma <= 0.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon", "domain_size", "q"]).into());
        }
        if gamma >= 1.0 {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon", "domain_size", "q"]).into());
        }
        let labels = check_labels(values.get("labels"), d as i128)?;
        check_collectable(protocol, &[PayloadField::uint("j", order)], u128::from(order))?;
        debug_assert!(t as usize <= MAX_DIMENSION);
        // ε* = ln(1 + K(1 − γ)/(γ·s)) of the realized γ, as a ratio of integers.
        let (g, one) = (Rational::of(gamma), Rational::int(1));
        let outside = &Rational::int(order as i64) * &(&one - &g); // K(1 − γ)
        let inside = &g * &Rational::int(set_size as i64); // γ·s
        let ratio = &one + &(&outside / &inside);
        let fingerprint = fingerprint_of(protocol, &values);
        Ok(ProjectiveParams {
            protocol,
            values,
            fingerprint,
            epsilon,
            d,
            q,
            blocks,
            dimension: t,
            block_points,
            set_size,
            gamma,
            labels,
            cost: PrivacyCost::pure(epsilon.max(ratio.log_ratio())),
        })
    }

    /// `K = h·b`: reports are `j` in `[0, K)`.
    pub fn order(&self) -> u64 {
        self.blocks * self.block_points
    }

    /// The report of the own-set branch: the offset of `value`'s block plus the index of the `r`-th point of the
    /// hyperplane of `value`'s point (`r` in `[0, s)`).
    pub fn own_point(&self, value: u64, r: u64) -> u64 {
        let (q, t) = (self.q, self.dimension as usize);
        let (block, point) = (value / self.block_points, value % self.block_points);
        let (mut v, mut u) = ([0u64; MAX_DIMENSION], [0u64; MAX_DIMENSION]);
        write_point(point, q, &mut v[..t]);
        write_hyperplane_point(&v[..t], r, q, &mut u[..t]);
        block * self.block_points + point_index(&u[..t], q)
    }
}

impl ProtocolParams for ProjectiveParams {
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
        vec![PayloadField::uint("j", self.order())]
    }
}

struct Projective(Arc<ProjectiveParams>);

impl Mechanism for Projective {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        domain_index_of(self.0.protocol, self.0.d, self.0.labels.as_deref(), value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.cost))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let j = if rng.bernoulli(p.gamma)? {
            rng.randbelow(p.order())?
        } else {
            p.own_point(*value, rng.randbelow(p.set_size)?)
        };
        Ok(vec![("j".into(), PayloadValue::Uint(j))])
    }
}

fn make(p: Arc<dyn ProtocolParams>, o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<ProjectiveParams>(&p)?;
    Ok(Encoder::new(p, o.rng, Projective(params)))
}

/// The `pgr` protocol.
pub(crate) static PGR: Protocol = Protocol {
    name: "pgr",
    class_name: "PGRParams",
    table: tables::PGR,
    needs_secret: false,
    create: |v| Ok(Arc::new(ProjectiveParams::pgr(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};

/// The `hpg` protocol.
pub(crate) static HPG: Protocol = Protocol {
    name: "hpg",
    class_name: "HPGParams",
    table: tables::HPG,
    needs_secret: false,
    create: |v| Ok(Arc::new(ProjectiveParams::hpg(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
