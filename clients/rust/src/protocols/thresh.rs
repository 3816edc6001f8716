//! Charge on change (`thresh`; after Joseph, Roth, Ullman & Waggoner, NeurIPS 2018, `ldp/encoders/thresh.py`): a
//! device's reports form a stream cut into epochs, a new one at each change of value; an epoch's response is one GRR
//! at `epsilon` drawn from `(secret, epoch, value)` and replayed by every report of the epoch. The ledger charges ε
//! for a report that opens an epoch ([`Charge::Change`]), nothing for a replay: `c` changes cost `(c + 1)·ε`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::rr::{grr_draw, GrrParams};
use crate::bytes::{hmac_sha256, uint32_be};
use crate::cost::PrivacyCost;
use crate::encoder::{
    common_params, downcast, Charge, Encoder, EncoderOptions, Mechanism, Payload, PayloadValue, Protocol,
};
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::{check_collectable, fingerprint_of, ParamValues, PayloadField, ProtocolParams};
use crate::protocols::tables;
use crate::random::{KeyedRandomSource, RandomSource};
use crate::value::float_value;

const EPOCH_DOMAIN: &[u8] = b"ldp/thresh/epoch/v1\0";
const STREAM_DOMAIN: &[u8] = b"ldp/thresh/stream/v1\0";
const VALUE_DOMAIN: &[u8] = b"ldp/thresh/value/v1\0";

/// `thresh`'s parameters.
#[derive(Debug)]
pub struct ThreshParams {
    values: ParamValues,
    fingerprint: String,
    /// An epoch's response: GRR at `epsilon` (also the labels' index).
    pub grr: GrrParams,
}

impl ThreshParams {
    fn new(values: ParamValues) -> Result<Self> {
        let epsilon = values.float("epsilon")?;
        let d = values.int("domain_size")? as u64;
        let grr = GrrParams::new(ParamValues::of(
            tables::GRR,
            [
                ("epsilon", float_value(epsilon)),
                ("domain_size", Value::from(d)),
                ("labels", values.get("labels").clone()),
            ],
        ))?;
        check_collectable("thresh", &[PayloadField::uint("index", d)], d as u128)?;
        let fingerprint = fingerprint_of("thresh", &values);
        Ok(ThreshParams { values, fingerprint, grr })
    }
}

impl ProtocolParams for ThreshParams {
    common_params!("thresh");
    fn privacy_cost(&self) -> PrivacyCost {
        self.grr.privacy_cost()
    }
    fn schema(&self) -> Vec<PayloadField> {
        vec![PayloadField::uint("index", self.grr.d)]
    }
}

/// The `thresh` encoder. With a ledger the epoch is the ledger's (given to `randomize`); without one it is tracked in
/// memory from this encoder's first report.
struct Thresh {
    params: Arc<ThreshParams>,
    secret: Vec<u8>,
    prr_rng: Option<Box<dyn RandomSource>>,
    fp: Vec<u8>,
    stream: Vec<u8>,
    last: Option<u64>,
    epoch: i64,
    responses: HashMap<(u64, u64), u64>,
}

impl Thresh {
    /// Epoch `epoch`'s response to value `index`: GRR drawn from (secret, epoch, value).
    fn response(&mut self, epoch: u64, index: u64) -> Result<u64> {
        if let Some(r) = self.responses.get(&(epoch, index)) {
            return Ok(*r);
        }
        let (p, d) = (self.params.grr.p, self.params.grr.d);
        let r = match self.prr_rng.as_deref_mut() {
            Some(src) => grr_draw(src, p, d, index)?,
            None => {
                let mut message = EPOCH_DOMAIN.to_vec();
                message.extend_from_slice(&self.fp);
                message.extend_from_slice(&epoch.to_be_bytes());
                message.extend_from_slice(&uint32_be(index as u32));
                self.responses.clear();
                grr_draw(&mut KeyedRandomSource::new(&self.secret, &message)?, p, d, index)?
            }
        };
        self.responses.insert((epoch, index), r);
        Ok(r)
    }
}

impl Mechanism for Thresh {
    type Checked = u64;

    fn check(&mut self, value: &Value) -> Result<u64> {
        self.params.grr.index_of(value)
    }

    fn charge(&mut self, value: &u64) -> Result<Charge> {
        let key = hmac_sha256(&self.secret, &[VALUE_DOMAIN, &self.fp, &uint32_be(*value as u32)])?;
        Ok(Charge::Change { stream: self.stream.clone(), value: key.to_vec(), cost: self.params.privacy_cost() })
    }

    fn draw(&mut self, _: &mut dyn RandomSource, value: &u64, epoch: Option<u64>) -> Result<Payload> {
        let e = match epoch {
            Some(e) => e,
            None => (self.epoch + i64::from(self.last != Some(*value))) as u64,
        };
        self.last = Some(*value);
        self.epoch = e as i64;
        Ok(vec![("index".into(), PayloadValue::Uint(self.response(e, *value)?))])
    }
}

fn make(p: Arc<dyn ProtocolParams>, mut o: EncoderOptions) -> Result<Encoder> {
    let params = downcast::<ThreshParams>(&p)?;
    let prr_rng = o.prr_rng.take();
    let secret = match o.secret.take() {
        Some(s) if !s.is_empty() => s,
        Some(_) => {
            return Err(Error::from(
                Refusal::type_(RefusalCode::ParamLength).with("param", "secret").with("got", 0).with("min", 1),
            ))
        }
        None if prr_rng.is_some() => b"audit".to_vec(),
        None => {
            return Err(Error::type_(
                "thresh needs the metric secret (EncoderOptions.secret): its responses derive from it",
            ))
        }
    };
    let fp = params.fingerprint().as_bytes().to_vec();
    let stream = hmac_sha256(&secret, &[STREAM_DOMAIN, &fp])?.to_vec();
    let m = Thresh { params, secret, prr_rng, fp, stream, last: None, epoch: -1, responses: HashMap::new() };
    Ok(Encoder::new(p, o.rng, m))
}

/// The `thresh` protocol.
pub(crate) static THRESH: Protocol = Protocol {
    name: "thresh",
    class_name: "ThreshParams",
    table: tables::THRESH,
    needs_secret: true,
    create: |v| Ok(Arc::new(ThreshParams::new(v)?)),
    make_encoder: make,
    cohorts: |_| 0,
};
