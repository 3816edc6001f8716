//! Encoders and their reports (Python's `ldp.encoders.base` and `ldp.reports`).

use std::any::Any;
use std::borrow::Cow;
use std::fmt::{self, Write};
use std::sync::Arc;

use serde_json::Value;

use crate::bytes;
use crate::cost::PrivacyCost;
use crate::error::{Error, Refusal, RefusalCode, Result};
use crate::params::{ParamValues, ProtocolParams};
use crate::protocols::tables::ParamRow;
use crate::pytext;
use crate::random::{BitMask, OsRandomSource, RandomSource};
use crate::value::{int_of, is_int};

/// A payload value: a `uint` or a `bits` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadValue {
    /// An unsigned integer field.
    Uint(u64),
    /// A string of bits.
    Bits(BitMask),
}

/// A report's payload: each field's name and value, in the protocol's schema order.
pub type Payload = Vec<(Cow<'static, str>, PayloadValue)>;

/// One privatized report (Python's `ldp.reports.Report`): the protocol, its parameters' fingerprint, and the payload
/// fields in the protocol's schema order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The protocol's name.
    pub protocol: &'static str,
    /// The parameters' fingerprint.
    pub params: String,
    /// The payload fields, in schema order.
    pub payload: Payload,
}

impl Report {
    /// The report's JSON (`Report.to_json`): `{"v":1,"protocol":…,"params":…,"payload":{…}}`, no spaces.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(96);
        self.write_json(&mut out);
        out
    }

    pub(crate) fn write_json(&self, out: &mut String) {
        let _ =
            write!(out, "{{\"v\":1,\"protocol\":\"{}\",\"params\":\"{}\",\"payload\":{{", self.protocol, self.params);
        for (i, (name, v)) in self.payload.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{name}\":");
            match v {
                PayloadValue::Uint(u) => {
                    let _ = write!(out, "{u}");
                }
                PayloadValue::Bits(m) => {
                    out.push('"');
                    m.write_bits(out);
                    out.push('"');
                }
            }
        }
        out.push_str("}}");
    }

    /// The payload value of field `name`.
    pub fn get(&self, name: &str) -> Option<&PayloadValue> {
        self.payload.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

/// One upload line (`Envelope.to_json`): spec fingerprint, metric, window, report, in that order; no newline.
pub fn envelope_json(spec: &str, metric: &str, window: u64, report: &Report) -> String {
    let mut out = String::with_capacity(128);
    out.push_str("{\"spec\":\"");
    out.push_str(spec);
    out.push_str("\",\"metric\":");
    pytext::json_string(&mut out, metric);
    let _ = write!(out, ",\"window\":{window},\"report\":");
    report.write_json(&mut out);
    out.push('}');
    out
}

/// What the ledger charges for one report (Python's `PrivacyCost`, `MemoizedCharge` and `ChangeCharge`).
#[derive(Debug, Clone, PartialEq)]
pub enum Charge {
    /// A plain cost, charged every time.
    Plain(PrivacyCost),
    /// A memoized response's charge: `first` for the first report of `key`, `then` for each later one, never more
    /// than `cap` in total for `key` in its metric.
    Memoized {
        /// The memo key (an HMAC of the metric secret: it reveals nothing of the value).
        key: Vec<u8>,
        /// The first report's charge.
        first: PrivacyCost,
        /// Each later report's charge.
        then: PrivacyCost,
        /// The most the key is ever charged.
        cap: PrivacyCost,
    },
    /// Charged `cost` when `value` differs from the last value of `stream` (or the stream is new), else nothing;
    /// the ledger keeps each stream's epoch (`thresh`).
    Change {
        /// The stream's key.
        stream: Vec<u8>,
        /// The value's key within the stream.
        value: Vec<u8>,
        /// The cost of a change.
        cost: PrivacyCost,
    },
}

impl Charge {
    /// The memo key in hex (a [`Charge::Memoized`]).
    pub fn key_hex(&self) -> Option<String> {
        match self {
            Charge::Memoized { key, .. } => Some(bytes::hex(key)),
            _ => None,
        }
    }
}

/// What an encoder is made with. `rng`: its randomness (default: the OS generator); `secret`: the metric secret
/// of a memoizing protocol (its permanent responses derive from it); `cohort`: a RAPPOR device's cohort.
/// `prr_rng` is for audits only: a memoizing encoder then draws its permanent responses from it instead of the
/// keyed stream, so that an exact audit can enumerate them.
#[derive(Default)]
pub struct EncoderOptions {
    /// The randomness of reports (default: [`OsRandomSource`]).
    pub rng: Option<Box<dyn RandomSource>>,
    /// The metric secret of a memoizing protocol.
    pub secret: Option<Vec<u8>>,
    /// The device's cohort (RAPPOR).
    pub cohort: Option<u32>,
    /// Audits only: the source of permanent responses.
    pub prr_rng: Option<Box<dyn RandomSource>>,
}

impl fmt::Debug for EncoderOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncoderOptions")
            .field("rng", &self.rng.as_ref().map(|_| "…"))
            .field("secret", &self.secret.as_ref().map(|_| "<secret>"))
            .field("cohort", &self.cohort)
            .finish()
    }
}

/// A checked value, ready to be charged and randomized; made by [`Encoder::prepare`].
pub struct Prepared {
    charge: Charge,
    value: Box<dyn Any + Send>,
}

impl Prepared {
    /// What the ledger must charge before the report is made.
    pub fn charge(&self) -> &Charge {
        &self.charge
    }

    /// The checked value as an index of the protocol's domain, for a protocol whose checked value is one (`rr`'s
    /// bit as 0 or 1; the index of `grr`, `sue`, `oue`, `pgr`, `hpg`): the exact measurement of a `two-aggregator`
    /// metric (Python's `int(prepared)`). `None` for other protocols.
    #[cfg_attr(not(feature = "prio"), allow(dead_code))]
    pub(crate) fn index(&self) -> Option<u64> {
        match self.value.downcast_ref::<u64>() {
            Some(i) => Some(*i),
            None => self.value.downcast_ref::<bool>().map(|b| u64::from(*b)),
        }
    }

    /// The measurement's bytes of a `poplar1` metric's checked string (its UTF-8 bytes padded with 0x00 to
    /// `bits / 8`: [`crate::protocols::poplar1_strings::measurement_bytes`]); `None` for other protocols.
    #[cfg_attr(not(feature = "poplar1"), allow(dead_code))]
    pub(crate) fn string_measurement(&self) -> Option<&[u8]> {
        let m = self.value.downcast_ref::<crate::protocols::poplar1_strings::StringMeasurement>()?;
        Some(&m.0)
    }
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared").field("charge", &self.charge).finish_non_exhaustive()
    }
}

/// The draws of one protocol: how a value is checked, charged and randomized. Each protocol implements it; an
/// [`Encoder`] wraps it with its randomness.
pub(crate) trait Mechanism: Send + 'static {
    /// The checked form of a value.
    type Checked: Send + 'static;

    /// Checks `value`, refusing it as Python does (the same code and fields). Draws nothing.
    fn check(&mut self, value: &Value) -> Result<Self::Checked>;

    /// [`Mechanism::check`] for a protocol whose preparation draws (`rappor-ngrams` draws its pair of positions
    /// before it can say what the report costs, as Python's does).
    fn check_with(&mut self, _rng: &mut dyn RandomSource, value: &Value) -> Result<Self::Checked> {
        self.check(value)
    }

    /// What one report of a checked value costs.
    fn charge(&mut self, value: &Self::Checked) -> Result<Charge>;

    /// The payload of a checked value, drawn from `rng`; `epoch` is the ledger's epoch for a [`Charge::Change`].
    fn draw(&mut self, rng: &mut dyn RandomSource, value: &Self::Checked, epoch: Option<u64>) -> Result<Payload>;
}

trait DynMechanism: Send {
    fn prepare(&mut self, rng: &mut dyn RandomSource, value: &Value) -> Result<Prepared>;
    fn draw(&mut self, rng: &mut dyn RandomSource, value: &(dyn Any + Send), epoch: Option<u64>) -> Result<Payload>;
}

impl<M: Mechanism> DynMechanism for M {
    fn prepare(&mut self, rng: &mut dyn RandomSource, value: &Value) -> Result<Prepared> {
        let checked = self.check_with(rng, value)?;
        let charge = self.charge(&checked)?;
        Ok(Prepared { charge, value: Box::new(checked) })
    }

    fn draw(&mut self, rng: &mut dyn RandomSource, value: &(dyn Any + Send), epoch: Option<u64>) -> Result<Payload> {
        let checked = value
            .downcast_ref::<M::Checked>()
            .ok_or_else(|| Error::InvalidArgument("a value prepared by another encoder".into()))?;
        Mechanism::draw(self, rng, checked, epoch)
    }
}

/// A client encoder (Python's `ldp.encoders.base.Encoder`): [`Encoder::prepare`] checks a value (a refusal with Python's
/// code and fields) and draws nothing; [`Encoder::randomize`] draws only through the source's `bernoulli`,
/// `bernoulli_bits`, `randbelow` and `token_bytes`, in the order of docs/conformance.md; [`Prepared::charge`] says
/// what the ledger charges.
///
/// An encoder is `Send` but not `Sync`: one per thread, or a lock around it.
pub struct Encoder {
    params: Arc<dyn ProtocolParams>,
    rng: Box<dyn RandomSource>,
    mechanism: Box<dyn DynMechanism>,
    fingerprint: String,
}

impl Encoder {
    pub(crate) fn new<M: Mechanism>(params: Arc<dyn ProtocolParams>, rng: Option<Box<dyn RandomSource>>, m: M) -> Self {
        let fingerprint = params.fingerprint().to_string();
        Encoder {
            params,
            rng: rng.unwrap_or_else(|| Box::new(OsRandomSource::new())),
            mechanism: Box::new(m),
            fingerprint,
        }
    }

    /// The encoder's parameters.
    pub fn params(&self) -> &Arc<dyn ProtocolParams> {
        &self.params
    }

    /// Checks `value`: the prepared value, or its refusal. Charges nothing, and draws nothing but for
    /// `rappor-ngrams`, which draws its pair of positions here (its cost depends on it).
    pub fn prepare(&mut self, value: &Value) -> Result<Prepared> {
        self.mechanism.prepare(self.rng.as_mut(), value)
    }

    /// The report of a prepared value (draws randomness). `epoch` is the ledger's epoch for a
    /// [`Charge::Change`] (`thresh`).
    pub fn randomize(&mut self, prepared: &Prepared, epoch: Option<u64>) -> Result<Report> {
        let payload = self.mechanism.draw(self.rng.as_mut(), prepared.value.as_ref(), epoch)?;
        Ok(Report { protocol: self.params.protocol(), params: self.fingerprint.clone(), payload })
    }

    /// The payload of a prepared value drawn from `rng` (a composite protocol's parts draw from its source).
    pub(crate) fn draw_with(
        &mut self,
        rng: &mut dyn RandomSource,
        prepared: &Prepared,
        epoch: Option<u64>,
    ) -> Result<Payload> {
        self.mechanism.draw(rng, prepared.value.as_ref(), epoch)
    }

    /// One report of `value`, with no ledger (a [`crate::TelemetryClient`] charges first).
    pub fn encode(&mut self, value: &Value) -> Result<Report> {
        let prepared = self.prepare(value)?;
        self.randomize(&prepared, None)
    }
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder").field("params", &self.params).finish_non_exhaustive()
    }
}

/// `LabeledDomain.index_of`: the index of a label, or of an int index in `[0, domain_size)`, with Python's refusals (code and fields).
pub(crate) fn domain_index_of(
    protocol: &str,
    domain_size: u64,
    labels: Option<&[String]>,
    value: &Value,
) -> Result<u64> {
    if let (Value::String(s), Some(labels)) = (value, labels) {
        return match labels.iter().position(|l| l == s) {
            Some(i) => Ok(i as u64),
            None => Err(Refusal::value(RefusalCode::UnknownLabel).with("got", s.as_str()).into()),
        };
    }
    if is_int(value) {
        return match int_of(value) {
            Some(i) if i >= 0 && i < domain_size as i128 => Ok(i as u64),
            _ => Err(Refusal::value_range(value.clone())
                .with("min", 0)
                .with("max", domain_size)
                .with("max_exclusive", true)
                .into()),
        };
    }
    let _ = protocol;
    Err(Refusal::value_type(if labels.is_some() { "label_or_index" } else { "index" }, value).into())
}

/// A protocol as the spec, the client runtime and the tests see it: its name, its params class (name, generated
/// table and a checking constructor), how to make its encoder, whether it needs a metric secret, and how many cohorts a device
/// is assigned to (RAPPOR; 0 for the others).
pub struct Protocol {
    /// The name a spec gives it (`grr`, `rappor`, …).
    pub name: &'static str,
    /// The Python params class (`GRRParams`), for error texts.
    pub class_name: &'static str,
    /// Its parameters' table (generated from the Python declarations), in declaration order.
    pub table: &'static [ParamRow],
    /// Whether its encoder needs a metric secret (memoized responses).
    pub needs_secret: bool,
    pub(crate) create: fn(ParamValues) -> Result<Arc<dyn ProtocolParams>>,
    pub(crate) make_encoder: fn(Arc<dyn ProtocolParams>, EncoderOptions) -> Result<Encoder>,
    pub(crate) cohorts: fn(&dyn ProtocolParams) -> u32,
}

impl Protocol {
    /// Parameters from their `to_dict()` form (Python's `from_dict`, with its checks and texts).
    pub fn params(&self, d: &Value) -> Result<Arc<dyn ProtocolParams>> {
        (self.create)(ParamValues::from_dict(self.table, d)?)
    }

    /// An encoder of `params` (which must be this protocol's).
    pub fn encoder(&self, params: Arc<dyn ProtocolParams>, options: EncoderOptions) -> Result<Encoder> {
        if params.protocol() != self.name {
            return Err(Error::InvalidArgument(format!(
                "{} encoder given {} parameters",
                self.name,
                params.protocol()
            )));
        }
        (self.make_encoder)(params, options)
    }

    /// The number of cohorts a device of these parameters is assigned to (0: none).
    pub fn assigned_cohorts(&self, params: &dyn ProtocolParams) -> u32 {
        (self.cohorts)(params)
    }
}

impl fmt::Debug for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Protocol({})", self.name)
    }
}

/// The concrete parameters of a protocol's encoder.
pub(crate) fn downcast<P: ProtocolParams>(params: &Arc<dyn ProtocolParams>) -> Result<Arc<P>> {
    let any: Arc<dyn Any + Send + Sync> = params.clone();
    any.downcast::<P>().map_err(|_| Error::InvalidArgument("parameters of another protocol".into()))
}

/// The boilerplate of a [`ProtocolParams`] implementation whose struct has `values: ParamValues` and
/// `fingerprint: String` fields.
macro_rules! common_params {
    ($name:expr) => {
        fn protocol(&self) -> &'static str {
            $name
        }
        fn values(&self) -> &$crate::params::ParamValues {
            &self.values
        }
        fn fingerprint(&self) -> &str {
            &self.fingerprint
        }
    };
}
pub(crate) use common_params;
