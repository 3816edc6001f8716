//! GRR and OUE over the buckets (`bucket-grr`, `bucket-oue`): the bucket's index, randomized by the categorical
//! protocol.

use std::sync::Arc;

use serde_json::Value;

use super::{bucket_labels, Buckets};
use crate::cost::PrivacyCost;
use crate::encoder::{downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol};
use crate::error::{Error, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::rr::{grr_draw, GrrParams};
use crate::protocols::tables;
use crate::protocols::unary::{unary_draw, UnaryParams};
use crate::random::RandomSource;
use crate::value::float_value;

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
