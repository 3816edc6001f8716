//! Histograms over numeric buckets (`ldp/encoders/histogram_buckets.py`, `histogram.py`, `dbitflip_memo.py`):
//! dBitFlip (`dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017), GRR and OUE over the buckets (`bucket-grr`,
//! `bucket-oue`) and the memoized dBitFlip (`memo-dbitflip`). Bucket `i` is `[edges[i], edges[i+1])`, the last one
//! closed; a number outside `[edges[0], edges[k]]` is refused unless `clip` puts it in the first or last bucket.

use std::cmp::Ordering;
use std::sync::Arc;

use num_bigint::BigInt;
use serde_json::Value;

use super::memoized::Memo;
use super::rr::{grr_draw, GrrParams};
use super::unary::{unary_draw, UnaryParams};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::pymath;
use crate::pytext::float_repr;
use crate::random::{floyd, realized_unchecked as realized, BitMask, KeyedRandomSource, RandomSource};
use crate::rational::Rational;
use crate::value::{f64_of, float_value, is_real, num_of, Num};

/// Most buckets a histogram may have.
pub const MAX_BUCKETS: usize = 1 << 15;

/// Python's `check_edges`: the edges as doubles, or its refusals.
fn check_edges(edges: &Value) -> Result<Vec<f64>> {
    let Value::Array(items) = edges else {
        return Err(Refusal::param_type("edges", "list", edges).into());
    };
    if !(3..=MAX_BUCKETS + 1).contains(&items.len()) {
        return Err(Refusal::value(RefusalCode::ParamLength)
            .with("param", "edges")
            .with("got", items.len())
            .with("min", 3)
            .with("max", MAX_BUCKETS + 1)
            .into());
    }
    let mut out: Vec<f64> = Vec::with_capacity(items.len());
    for (i, e) in items.iter().enumerate() {
        if !is_real(e) {
            return Err(Refusal::param_type("edges", "float", e).with("index", i).into());
        }
        let f = f64_of(e);
        if !f.is_finite() {
            return Err(Refusal::param_range("edges", e.clone()).with("finite", true).with("index", i).into());
        }
        if let Some(&last) = out.last() {
            if f <= last {
                return Err(Refusal::relation("edges_increasing", &["edges"]).into());
            }
        }
        out.push(f);
    }
    Ok(out)
}

fn edge_text(e: f64) -> String {
    if e.fract() == 0.0 && e.abs() < 1e16 {
        format!("{}", e as i64)
    } else {
        float_repr(e)
    }
}

/// `"[a, b)"` per bucket, `"[a, b]"` for the last.
pub fn bucket_labels(edges: &[f64]) -> Vec<String> {
    let k = edges.len() - 1;
    (0..k)
        .map(|i| format!("[{}, {}{}", edge_text(edges[i]), edge_text(edges[i + 1]), if i == k - 1 { "]" } else { ")" }))
        .collect()
}

/// A checked real value: a float, or an int compared exactly with the edges.
enum Real {
    Float(f64),
    Int(BigInt),
}

impl Real {
    fn cmp(&self, e: f64) -> Ordering {
        match self {
            Real::Float(v) => v.partial_cmp(&e).unwrap_or(Ordering::Equal),
            Real::Int(i) => Rational::of(e).cmp_int(i),
        }
    }
}

/// Python's `bucket_index`: the bucket of a real `value`, or its refusals.
pub(crate) fn bucket_index(edges: &[f64], value: &Value, clip: bool) -> Result<u64> {
    let Value::Number(n) = value else {
        return Err(Refusal::value_type("float", value).into());
    };
    let v = match num_of(n) {
        Num::Float(x) => {
            if !x.is_finite() {
                return Err(Refusal::value_range(value.clone())
                    .with("min", float_value(edges[0]))
                    .with("max", float_value(edges[edges.len() - 1]))
                    .with("finite", true)
                    .into());
            }
            Real::Float(x)
        }
        Num::Int(i) => Real::Int(BigInt::from(i)),
        Num::Big(s) => Real::Int(s.parse::<BigInt>().map_err(|_| Error::value("not an integer"))?),
    };
    let k = edges.len() - 1;
    let below = v.cmp(edges[0]) == Ordering::Less;
    let above = v.cmp(edges[k]) == Ordering::Greater;
    if !below && !above {
        let (mut lo, mut hi) = (0, edges.len()); // bisect_right
        while lo < hi {
            let mid = (lo + hi) / 2;
            if v.cmp(edges[mid]) == Ordering::Less {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return Ok((lo - 1).min(k - 1) as u64);
    }
    if clip {
        return Ok(if below { 0 } else { k as u64 - 1 });
    }
    Err(Refusal::value_range(value.clone())
        .with("min", float_value(edges[0]))
        .with("max", float_value(edges[k]))
        .into())
}

/// What the histogram protocols' params share: ε, `edges` (checked), `clip`.
#[derive(Debug, Clone)]
pub struct Buckets {
    /// The ε asked for.
    pub epsilon: f64,
    /// The edges.
    pub edges: Vec<f64>,
    /// Whether values outside the edges are clipped.
    pub clip: bool,
}

impl Buckets {
    fn new(values: &ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let edges = check_edges(values.get("edges"))?;
        let clip = values.bool("clip")?;
        Ok(Buckets { epsilon, edges, clip })
    }

    /// The number of buckets.
    pub fn count(&self) -> u64 {
        self.edges.len() as u64 - 1
    }

    /// The bucket of a number.
    pub fn of(&self, value: &Value) -> Result<u64> {
        bucket_index(&self.edges, value, self.clip)
    }

    fn labels_value(&self) -> Value {
        Value::Array(bucket_labels(&self.edges).into_iter().map(Value::String).collect())
    }
}

fn sampled_bits_schema(k: u64) -> Vec<PayloadField> {
    vec![PayloadField::bits("sampled", k), PayloadField::bits("bits", k)]
}

/// A uniform `d`-subset of `[0, k)` by Floyd's algorithm (all of them when `d = k`, nothing drawn).
fn floyd_sample(rng: &mut dyn RandomSource, k: usize, d: usize) -> Result<BitMask> {
    if d == k {
        let mut m = BitMask::new(k);
        for i in 0..k {
            m.set(i, true);
        }
        return Ok(m);
    }
    floyd(rng, k, d)
}

/// dBitFlip (`dbitflip`): each report samples `d` of the `k` buckets uniformly and sends, for each, a bit that is 1
/// with `p1 = realized(σ(−ε/2))` for the value's bucket, `p0 = realized(σ(ε/2))` otherwise. Charged
/// `max(ε_nominal, ε*)`.
#[derive(Debug)]
pub struct DBitFlipParams {
    values: ParamValues,
    fingerprint: String,
    /// ε, the edges and `clip`.
    pub buckets: Buckets,
    /// Buckets sampled per report.
    pub d: u64,
    /// Pr[bit = 1 | the value's bucket].
    pub p1: f64,
    /// Pr[bit = 1 | another bucket].
    pub p0: f64,
    /// Every `d`-subset of the buckets in lexicographic order, when there are at most 4,096 (else empty).
    subsets: Vec<BitMask>,
    cost: PrivacyCost,
}

impl DBitFlipParams {
    fn new(values: ParamValues) -> Result<Self> {
        let buckets = Buckets::new(&values)?;
        let k = buckets.count();
        let d = values.int_at_most("d", k as i128)? as u64;
        let epsilon = buckets.epsilon;
        let p1 = realized(pymath::logistic_tail(-epsilon / 2.0));
        let p0 = realized(pymath::logistic_tail(epsilon / 2.0));
        if p0 == 0.0 || p1 >= 1.0 {
            return Err(Refusal::relation("epsilon_too_large", &["epsilon"]).into());
        }
        if p1 <= p0 {
            return Err(Refusal::relation("epsilon_too_small", &["epsilon"]).into());
        }
        check_collectable("dbitflip", &sampled_bits_schema(k), 2 * k as u128)?;
        let subsets = Self::subsets(k as usize, d as usize);
        let fingerprint = fingerprint_of("dbitflip", &values);
        let nominal = if d >= 2 { epsilon } else { epsilon / 2.0 };
        let cost = PrivacyCost::pure(nominal.max(Self::effective_epsilon(p1, p0, d)));
        Ok(DBitFlipParams { values, fingerprint, buckets, d, p1, p0, subsets, cost })
    }

    fn subsets(k: usize, d: usize) -> Vec<BitMask> {
        let mut count: u128 = 1;
        for i in 0..d {
            count = count * (k - i) as u128 / (i + 1) as u128;
            if count > 4096 {
                return Vec::new();
            }
        }
        let mut out = Vec::new();
        let mut idx: Vec<usize> = (0..d).collect();
        loop {
            let mut m = BitMask::new(k);
            for &i in &idx {
                m.set(i, true);
            }
            out.push(m);
            let Some(i) = (0..d).rev().find(|&i| idx[i] != k - d + i) else { break };
            idx[i] += 1;
            for j in i + 1..d {
                idx[j] = idx[j - 1] + 1;
            }
        }
        out
    }

    fn effective_epsilon(p1: f64, p0: f64, d: u64) -> f64 {
        let up = pymath::log(p1 / p0);
        let down = pymath::log((1.0 - p0) / (1.0 - p1));
        if d >= 2 {
            up + down
        } else {
            up.max(down)
        }
    }
}

impl ProtocolParams for DBitFlipParams {
    common_params!("dbitflip");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        sampled_bits_schema(self.buckets.count())
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.buckets.count())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(bucket_labels(&self.buckets.edges))
    }
}

struct DBitFlip(Arc<DBitFlipParams>);

impl Mechanism for DBitFlip {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.0.buckets.of(value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let p = &self.0;
        let (k, d, v) = (p.buckets.count() as usize, p.d as usize, *value as usize);
        let sampled = if d == k {
            floyd_sample(rng, k, d)?
        } else if !p.subsets.is_empty() {
            p.subsets[rng.randbelow(p.subsets.len() as u64)? as usize].clone()
        } else {
            floyd(rng, k, d)?
        };
        let mut bits = if d > 8 {
            rng.bernoulli_bits(p.p0, k)?.and(&sampled).and_not(&BitMask::single(k, v))
        } else {
            let mut b = BitMask::new(k);
            for j in sampled.ones() {
                if j != v && rng.bernoulli(p.p0)? {
                    b.set(j, true);
                }
            }
            b
        };
        if sampled.get(v) && rng.bernoulli(p.p1)? {
            bits.set(v, true);
        }
        Ok(vec![("sampled".into(), PayloadValue::Bits(sampled)), ("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `dbitflip` protocol.
pub(crate) static DBITFLIP: Protocol = Protocol {
    name: "dbitflip",
    class_name: "DBitFlipParams",
    table: tables::DBITFLIP,
    needs_secret: false,
    create: |v| Ok(Arc::new(DBitFlipParams::new(v)?)),
    make_encoder: |p, o| {
        let params = downcast::<DBitFlipParams>(&p)?;
        Ok(Encoder::new(p, o.rng, DBitFlip(params)))
    },
    cohorts: |_| 0,
};

// ---------------------------------------------------------------------------------------------------------------
// bucket-grr, bucket-oue

/// GRR (`bucket-grr`) or OUE (`bucket-oue`) over the buckets of `edges`.
#[derive(Debug)]
pub struct BucketParams {
    protocol: &'static str,
    values: ParamValues,
    fingerprint: String,
    /// ε, the edges and `clip`.
    pub buckets: Buckets,
    /// The GRR over the buckets (`bucket-grr`).
    pub grr: Option<GrrParams>,
    /// The OUE over the buckets (`bucket-oue`).
    pub oue: Option<UnaryParams>,
}

impl BucketParams {
    fn new(protocol: &'static str, values: ParamValues) -> Result<Self> {
        let buckets = Buckets::new(&values)?;
        let k = buckets.count();
        let (mut grr, mut oue) = (None, None);
        if protocol == "bucket-grr" {
            let sub = ParamValues::of(
                tables::GRR,
                [
                    ("epsilon", float_value(buckets.epsilon)),
                    ("domain_size", Value::from(k)),
                    ("labels", buckets.labels_value()),
                ],
            );
            // GRR's checks of epsilon against the number of buckets, in bucket-grr's names.
            grr = Some(
                GrrParams::new(sub).map_err(|e| e.renamed(|n| (n == "domain_size").then(|| "edges".to_string())))?,
            );
        } else {
            oue = Some(UnaryParams::oue(buckets.epsilon, k, buckets.labels_value())?);
        }
        let out = BucketParams { protocol, values, fingerprint: String::new(), buckets, grr, oue };
        check_collectable(protocol, &out.schema(), k as u128)?;
        Ok(BucketParams { fingerprint: fingerprint_of(protocol, &out.values), ..out })
    }
}

impl ProtocolParams for BucketParams {
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
        match (&self.grr, &self.oue) {
            (Some(g), _) => g.privacy_cost(),
            (_, Some(o)) => o.privacy_cost(),
            _ => PrivacyCost::ZERO,
        }
    }
    fn schema(&self) -> Vec<PayloadField> {
        match (&self.grr, &self.oue) {
            (Some(g), _) => g.schema(),
            (_, Some(o)) => o.schema(),
            _ => Vec::new(),
        }
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.buckets.count())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(bucket_labels(&self.buckets.edges))
    }
}

struct Bucket(Arc<BucketParams>);

impl Mechanism for Bucket {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.0.buckets.of(value)
    }

    fn charge(&mut self, _: &u64) -> Result<Charge> {
        Ok(Charge::Plain(self.0.privacy_cost()))
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let k = self.0.buckets.count();
        match (&self.0.grr, &self.0.oue) {
            (Some(g), _) => Ok(vec![("index".into(), PayloadValue::Uint(grr_draw(rng, g.p, k, *value)?))]),
            (_, Some(o)) => {
                Ok(vec![("bits".into(), PayloadValue::Bits(unary_draw(rng, o.p, o.q, k as usize, *value as usize)?))])
            }
            _ => Err(Error::Internal("a bucket protocol without its oracle".into())),
        }
    }
}

fn make_bucket(p: Arc<dyn ProtocolParams>, o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<BucketParams>(&p)?;
    Ok(Encoder::new(p, o.rng, Bucket(params)))
}

/// The `bucket-grr` protocol.
pub(crate) static BUCKET_GRR: Protocol = Protocol {
    name: "bucket-grr",
    class_name: "BucketGRRParams",
    table: tables::BUCKET_GRR,
    needs_secret: false,
    create: |v| Ok(Arc::new(BucketParams::new("bucket-grr", v)?)),
    make_encoder: make_bucket,
    cohorts: |_| 0,
};

/// The `bucket-oue` protocol.
pub(crate) static BUCKET_OUE: Protocol = Protocol {
    name: "bucket-oue",
    class_name: "BucketOUEParams",
    table: tables::BUCKET_OUE,
    needs_secret: false,
    create: |v| Ok(Arc::new(BucketParams::new("bucket-oue", v)?)),
    make_encoder: make_bucket,
    cohorts: |_| 0,
};

// ---------------------------------------------------------------------------------------------------------------
// memo-dbitflip

/// Memoized dBitFlip (`memo-dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017 §3–4): a permanent sample of `d`
/// buckets from the secret, a permanent response per value bucket, each report's bits flipped afresh with `γ`.
/// Charged one report's ε per report, capped at the memoized dBitFlip's ε per bucket.
#[derive(Debug)]
pub struct MemoDBitFlipParams {
    values: ParamValues,
    fingerprint: String,
    /// The per-report flip probability, as given.
    pub gamma: f64,
    /// The memoized responses' dBitFlip.
    pub memo: DBitFlipParams,
    cost: PrivacyCost,
}

impl MemoDBitFlipParams {
    fn new(values: ParamValues) -> Result<Self> {
        let buckets = Buckets::new(&values)?;
        let k = buckets.count();
        let d = values.int_at_most("d", k as i128)? as u64;
        let gamma = values.float("gamma")?;
        let edges = Value::Array(buckets.edges.iter().map(|e| float_value(*e)).collect());
        let memo = DBitFlipParams::new(ParamValues::of(
            tables::DBITFLIP,
            [
                ("epsilon", float_value(buckets.epsilon)),
                ("edges", edges),
                ("d", Value::from(d)),
                ("clip", Value::Bool(buckets.clip)),
            ],
        ))?;
        check_collectable("memo-dbitflip", &sampled_bits_schema(k), 2 * k as u128)?;
        let fingerprint = fingerprint_of("memo-dbitflip", &values);
        let g = realized(gamma);
        let cost = if g == 0.0 {
            memo.privacy_cost()
        } else {
            let p1 = g + (1.0 - 2.0 * g) * memo.p1;
            let p0 = g + (1.0 - 2.0 * g) * memo.p0;
            PrivacyCost::pure(DBitFlipParams::effective_epsilon(p1, p0, memo.d))
        };
        Ok(MemoDBitFlipParams { values, fingerprint, gamma, memo, cost })
    }

    fn gamma_realized(&self) -> f64 {
        realized(self.gamma)
    }

    /// Every report of one bucket together: the memoized dBitFlip's ε.
    pub fn memo_cap(&self) -> PrivacyCost {
        self.memo.privacy_cost()
    }
}

impl ProtocolParams for MemoDBitFlipParams {
    common_params!("memo-dbitflip");
    fn privacy_cost(&self) -> PrivacyCost {
        self.cost
    }
    fn schema(&self) -> Vec<PayloadField> {
        sampled_bits_schema(self.memo.buckets.count())
    }
    fn domain_size(&self) -> Option<u64> {
        Some(self.memo.buckets.count())
    }
    fn labels(&self) -> Option<Vec<String>> {
        Some(bucket_labels(&self.memo.buckets.edges))
    }
}

struct MemoDBitFlip {
    params: Arc<MemoDBitFlipParams>,
    memo: Memo<BitMask>,
    sampled: Option<BitMask>,
}

impl MemoDBitFlip {
    /// The device's permanent sample of `d` buckets, from its secret.
    fn sampled(&mut self) -> Result<BitMask> {
        if let Some(s) = &self.sampled {
            return Ok(s.clone());
        }
        let (k, d) = (self.params.memo.buckets.count() as usize, self.params.memo.d as usize);
        let s = match self.memo.audit_rng() {
            Some(src) => floyd_sample(src, k, d)?,
            None => {
                let mut message = b"ldp/dbitflip-memo/sample/v1\0".to_vec();
                message.extend_from_slice(self.params.fingerprint().as_bytes());
                floyd_sample(&mut KeyedRandomSource::new(self.memo.secret(), &message)?, k, d)?
            }
        };
        self.sampled = Some(s.clone());
        Ok(s)
    }
}

impl Mechanism for MemoDBitFlip {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.params.memo.buckets.of(value)
    }

    fn charge(&mut self, value: &u64) -> Result<Charge> {
        self.memo.charge(*value, self.params.privacy_cost(), self.params.memo_cap())
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &u64, _: Option<u64>) -> Result<Payload> {
        let s = self.sampled()?;
        let p = self.params.clone();
        let (k, v) = (p.memo.buckets.count() as usize, *value as usize);
        let memo_bits = self.memo.get(*value, |src| {
            let mut b = BitMask::new(k);
            for j in s.ones() {
                if src.bernoulli(if j == v { p.memo.p1 } else { p.memo.p0 })? {
                    b.set(j, true);
                }
            }
            Ok(b)
        })?;
        let mut bits = memo_bits;
        let g = p.gamma_realized();
        if g > 0.0 {
            for j in s.ones() {
                if rng.bernoulli(g)? {
                    bits.flip(j);
                }
            }
        }
        Ok(vec![("sampled".into(), PayloadValue::Bits(s)), ("bits".into(), PayloadValue::Bits(bits))])
    }
}

/// The `memo-dbitflip` protocol.
pub(crate) static MEMO_DBITFLIP: Protocol = Protocol {
    name: "memo-dbitflip",
    class_name: "MemoDBitFlipParams",
    table: tables::MEMO_DBITFLIP,
    needs_secret: true,
    create: |v| Ok(Arc::new(MemoDBitFlipParams::new(v)?)),
    make_encoder: |p, mut o| {
        let params = downcast::<MemoDBitFlipParams>(&p)?;
        let memo = Memo::new("memo-dbitflip", params.fingerprint(), &mut o)?;
        Ok(Encoder::new(p, o.rng, MemoDBitFlip { params, memo, sampled: None }))
    },
    cohorts: |_| 0,
};
