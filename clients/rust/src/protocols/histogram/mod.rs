//! Histograms over numeric buckets (`ldp/encoders/histogram_buckets.py`, `histogram.py`, `dbitflip_memo.py`):
//! dBitFlip (`dbitflip`; Ding, Kulkarni & Yekhanin, NeurIPS 2017), GRR and OUE over the buckets (`bucket-grr`,
//! `bucket-oue`) and the memoized dBitFlip (`memo-dbitflip`). Bucket `i` is `[edges[i], edges[i+1])`, the last one
//! closed; a number outside `[edges[0], edges[k]]` is refused unless `clip` puts it in the first or last bucket.

use std::cmp::Ordering;

use num_bigint::BigInt;
use serde_json::Value;

use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::ParamValues;
use crate::pytext::float_repr;
use crate::rational::Rational;
use crate::value::{f64_of, float_value, is_real, num_of, Num};

mod bucket;
mod dbitflip;
mod memo_dbitflip;

pub use bucket::BucketParams;
pub(crate) use bucket::{BUCKET_GRR, BUCKET_OUE};
pub use dbitflip::DBitFlipParams;
pub(crate) use dbitflip::DBITFLIP;
pub use memo_dbitflip::MemoDBitFlipParams;
pub(crate) use memo_dbitflip::MEMO_DBITFLIP;

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
