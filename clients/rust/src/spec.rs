//! The collection spec (`ldp/spec/schema.py`, docs/client.md "The collection spec"): one JSON document naming every
//! metric with its protocol, parameters and budgets.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::cost::PrivacyCost;
use crate::encoder::Protocol;
use crate::error::{Error, Result};
use crate::params::ProtocolParams;
use crate::protocols;
use crate::pytext::{self, canonical_json};
use crate::value::float_value;

mod check;
pub mod otel;

use check::Checker;

pub use otel::{OtelKind, OtelSource, OtelValue};

/// The spec format version this client reads.
pub const SPEC_VERSION: i64 = 1;
/// The longest window or upload interval: the ledger clock's range (to year 9999).
pub const MAX_SECONDS: i64 = 253_402_300_799;
/// The largest upload batch.
pub const MAX_BATCH: i64 = 1 << 20;
const MAX_MIN_REPORTS: i64 = 1 << 62;
/// Longest planned horizon of `release.central.windows` (as the Python package's `MAX_TARGET_WINDOWS`).
const MAX_TARGET_WINDOWS: i64 = 1_000_000;
const SECONDS_WHY: &str = "the clock's range ends in year 9999";

/// Budget caps of the collection or of one metric (`None`: no cap at that level).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// What one report may cost.
    pub per_report: Option<PrivacyCost>,
    /// What one window may spend.
    pub per_window: Option<PrivacyCost>,
    /// What the device may ever spend.
    pub lifetime: Option<PrivacyCost>,
}

/// Whom a metric's guarantee trusts: the spec's `trust` (`TRUST_MODELS` of `ldp/spec/schema.py`).
///
/// [`TelemetryClient::record`](crate::TelemetryClient::record) randomizes and queues the values of a `Local` or
/// `Shuffle` metric; those of a two-aggregator one go to two aggregators, secret-shared: given the metric's task
/// (feature `prio`: `ClientBuilder::task`), it seals each value to them (`ldp_client::prio3`, `ldp_client::dap`);
/// without it, it refuses them ([`RefusalCode::TrustModel`](crate::RefusalCode)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TrustModel {
    /// No one: each report is randomized on the device (the default).
    #[default]
    Local,
    /// The shuffler, for a central ε by amplification.
    Shuffle,
    /// Two non-colluding aggregators: the exact value secret-shared with Prio3, noised centrally.
    TwoAggregator,
    /// The same, with the protocol's randomization on the device first (a local ε even if both collude).
    TwoAggregatorLocal,
}

impl TrustModel {
    /// Every model, in the order of the spec's documentation.
    pub const ALL: [TrustModel; 4] =
        [TrustModel::Local, TrustModel::Shuffle, TrustModel::TwoAggregator, TrustModel::TwoAggregatorLocal];

    /// The spec's spelling (`"two-aggregator+local"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TrustModel::Local => "local",
            TrustModel::Shuffle => "shuffle",
            TrustModel::TwoAggregator => "two-aggregator",
            TrustModel::TwoAggregatorLocal => "two-aggregator+local",
        }
    }

    /// The model spelled `text` (`None` for any other text).
    pub fn from_name(text: &str) -> Option<Self> {
        TrustModel::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// Whether the values go to two aggregators (`TwoAggregator` or `TwoAggregatorLocal`).
    pub fn two_aggregator(self) -> bool {
        matches!(self, TrustModel::TwoAggregator | TrustModel::TwoAggregatorLocal)
    }
}

impl std::fmt::Display for TrustModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The protocols whose reports fit in Prio3, so in the two-aggregator modes (Python: `params.prio3_fit()`).
const PRIO3_FITS: [&str; 6] = ["rr", "grr", "sue", "oue", "pgr", "hpg"];

/// One metric of a spec: its protocol parameters, budget, where the server finds its candidates, whom its
/// guarantee trusts, and the OpenTelemetry instrument that feeds it, if any.
#[derive(Debug, Clone)]
pub struct MetricSpec {
    /// The metric's name.
    pub name: String,
    /// Its protocol parameters.
    pub params: Arc<dyn ProtocolParams>,
    /// Its budget (`per_report` always set).
    pub budget: Budget,
    /// Where the server finds its candidates (open-domain protocols).
    pub candidates: Option<String>,
    /// Free text.
    pub description: String,
    /// Whom its guarantee trusts ([`TrustModel::Local`] when the spec leaves it out; fingerprinted when not).
    pub trust: TrustModel,
    /// The OpenTelemetry instrument that feeds the metric, and how (the spec's `otel`, checked against the
    /// protocol: [`otel`]); `None` when the spec leaves it out (fingerprinted when present).
    pub otel: Option<OtelSource>,
}

impl MetricSpec {
    /// The metric's protocol.
    pub fn protocol(&self) -> &'static Protocol {
        // The spec only holds metrics of known protocols.
        protocols::metric_kind(self.params.protocol()).unwrap_or(&protocols::rr::GRR)
    }
}

/// A validated collection spec. [`CollectionSpec::parse`] checks it with the Python validator's rules and texts
/// (every problem, as `json.path: message`, in one [`Error::Spec`]) and normalizes it, so that
/// [`CollectionSpec::fingerprint`] is the Python spec's fingerprint, which every envelope carries.
///
/// A metric of a protocol this client does not implement is refused, naming the protocols it knows: a spec this
/// client accepts is one it can serve.
#[derive(Debug, Clone)]
pub struct CollectionSpec {
    /// The collection's name.
    pub name: String,
    /// The collection's total budget (`per_report` unset).
    pub budget: Budget,
    /// The metrics, sorted by name.
    pub metrics: Vec<MetricSpec>,
    /// The length of a window, in seconds.
    pub window_seconds: i64,
    /// The shortest time between two uploads, in seconds.
    pub min_interval_seconds: i64,
    /// The most reports in one upload.
    pub max_batch: usize,
    /// Free text.
    pub description: String,
    fingerprint: OnceLock<String>,
}

fn is_metric_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if !is_metric_name(key) {
        let mut out = format!("{path}[");
        pytext::json_string(&mut out, key);
        out.push(']');
        return out;
    }
    if path == "$" {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn budget_json(b: &Budget) -> Value {
    let mut out = Map::new();
    let cost = |c: &PrivacyCost| {
        if c.delta == 0.0 {
            float_value(c.epsilon)
        } else {
            let mut m = Map::new();
            m.insert("epsilon".into(), float_value(c.epsilon));
            m.insert("delta".into(), float_value(c.delta));
            Value::Object(m)
        }
    };
    if let Some(c) = &b.per_report {
        out.insert("per_report".into(), cost(c));
    }
    if let Some(c) = &b.per_window {
        out.insert("per_window".into(), cost(c));
    }
    if let Some(c) = &b.lifetime {
        out.insert("lifetime".into(), cost(c));
    }
    Value::Object(out)
}

impl CollectionSpec {
    /// Parses and validates spec JSON text; an [`Error::Spec`] lists every problem.
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_from(text, "spec")
    }

    /// [`CollectionSpec::parse`], naming `source` (a file name) in errors.
    pub fn parse_from(text: &str, source: &str) -> Result<Self> {
        let data = crate::json::parse(text)
            .map_err(|e| Error::Spec { source: source.into(), errors: vec![format!("$: not valid JSON: {e}")] })?;
        Self::from_value(&data, source)
    }

    /// Validates and normalizes a decoded document.
    pub fn from_value(data: &Value, source: &str) -> Result<Self> {
        Checker::default().spec(data, source)
    }

    /// The metric called `name`, or a `ValueError` naming the known ones.
    pub fn metric(&self, name: &str) -> Result<&MetricSpec> {
        self.metrics.iter().find(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.metrics.iter().map(|m| m.name.as_str()).collect();
            Error::value(format!("no metric {name:?} in collection {:?} (metrics: {})", self.name, names.join(", ")))
        })
    }

    /// What the device's ledger is charged for one report of `metric` of a one-report protocol (Python's
    /// `CollectionSpec.report_charge`): the protocol's local cost when the device randomizes (`local`, `shuffle`,
    /// `two-aggregator+local`); for a `two-aggregator` metric, whose exact value is secret-shared, the spec's
    /// `budget.per_report`.
    pub fn report_charge(&self, metric: &str) -> Result<PrivacyCost> {
        let m = self.metric(metric)?;
        Ok(match m.trust {
            TrustModel::TwoAggregator => m.budget.per_report.unwrap_or_else(|| m.params.privacy_cost()),
            _ => m.params.privacy_cost(),
        })
    }

    /// The most reports of `metric` one device sends in a window (Python's `CollectionSpec.reports_per_window`): its
    /// per-window cap (the metric's, else the collection's) over its per-report cost, `max(1, ⌊cap.ε / per.ε +
    /// 1e-9⌋)`; `None` without a per-window cap.
    pub fn reports_per_window(&self, metric: &str) -> Result<Option<u64>> {
        let m = self.metric(metric)?;
        let cap = m.budget.per_window.or(self.budget.per_window);
        let per = m.budget.per_report.unwrap_or_else(|| m.params.privacy_cost());
        Ok(match cap {
            Some(cap) if per.epsilon > 0.0 => Some(((cap.epsilon / per.epsilon + 1e-9).floor() as u64).max(1)),
            _ => None,
        })
    }

    /// The per-window cap of `metric` on the device's ledger (Python's `CollectionSpec.device_window_cap`): the
    /// spec's for a metric of the local or shuffle model; for a two-aggregator metric, k reports'
    /// [`CollectionSpec::report_charge`], k its [`CollectionSpec::reports_per_window`] (one when the spec caps
    /// none), so that a device sends at most the k reports a window its task's central guarantee counts
    /// (`two-aggregator+local` charges its local ε, less than `per_report`: the spec's cap alone would let more
    /// through). The same double products as Python's, so the caps are the same numbers in every client.
    pub fn device_window_cap(&self, metric: &str) -> Result<Option<PrivacyCost>> {
        let m = self.metric(metric)?;
        if !m.trust.two_aggregator() {
            return Ok(m.budget.per_window);
        }
        let charge = self.report_charge(metric)?;
        let k = self.reports_per_window(metric)?.unwrap_or(1) as f64;
        Ok(Some(PrivacyCost::new(charge.epsilon * k, charge.delta * k)))
    }

    /// The normalized document without release thresholds, with Python's number forms: what the fingerprint hashes.
    pub fn canonical_dict(&self) -> Value {
        let mut ms = Map::new();
        for m in &self.metrics {
            let mut doc = Map::new();
            doc.insert("protocol".into(), Value::String(m.params.protocol().into()));
            doc.insert("params".into(), m.params.canonical_dict());
            doc.insert("budget".into(), budget_json(&m.budget));
            if let Some(c) = &m.candidates {
                doc.insert("candidates".into(), Value::String(c.clone()));
            }
            if !m.description.is_empty() {
                doc.insert("description".into(), Value::String(m.description.clone()));
            }
            if m.trust != TrustModel::Local {
                // Left out when local: specs written before the key keep their fingerprints.
                doc.insert("trust".into(), Value::String(m.trust.as_str().into()));
            }
            if let Some(o) = &m.otel {
                // Left out when absent, as `trust` when local.
                doc.insert("otel".into(), o.to_json());
            }
            ms.insert(m.name.clone(), Value::Object(doc));
        }
        let mut upload = Map::new();
        upload.insert("min_interval_seconds".into(), Value::from(self.min_interval_seconds));
        upload.insert("max_batch".into(), Value::from(self.max_batch as u64));
        let mut out = Map::new();
        out.insert("spec_version".into(), Value::from(SPEC_VERSION));
        out.insert("name".into(), Value::String(self.name.clone()));
        out.insert("window_seconds".into(), Value::from(self.window_seconds));
        out.insert("budget".into(), budget_json(&self.budget));
        out.insert("upload".into(), Value::Object(upload));
        out.insert("metrics".into(), Value::Object(ms));
        if !self.description.is_empty() {
            out.insert("description".into(), Value::String(self.description.clone()));
        }
        Value::Object(out)
    }

    /// `canonical_json(spec.to_dict(release=False))`.
    pub fn canonical(&self) -> String {
        canonical_json(&self.canonical_dict()).unwrap_or_default()
    }

    /// 16 hex digits of SHA-256 over [`CollectionSpec::canonical`]: names this exact spec.
    pub fn fingerprint(&self) -> &str {
        self.fingerprint.get_or_init(|| pytext::sha256_hex16(&self.canonical()))
    }
}
