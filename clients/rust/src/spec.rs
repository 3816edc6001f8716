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
use crate::value::{f64_of, float_value, int_of, is_int, is_real};

pub mod otel;

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
/// `Shuffle` metric; it refuses those of a two-aggregator one ([`RefusalCode::TrustModel`](crate::RefusalCode)),
/// whose values go to two aggregators, secret-shared (`ldp_client::prio3` and `ldp_client::dap`, feature `prio`).
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
        protocols::get(self.params.protocol()).unwrap_or(&protocols::rr::GRR)
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

fn is_collection_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-'))
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

#[derive(Default)]
struct Checker {
    errors: Vec<String>,
}

/// How the validator names a JSON value's type (`_kind`).
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Array(_) => "a list".into(),
        Value::String(_) => "a string".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Object(_) => "an object".into(),
        Value::Number(_) => format!("{} {}", crate::error::kind_of(v), num_text(v)),
    }
}

/// A value as the validator's messages show it: its JSON text (a number as given, a string in quotes).
fn num_text(v: &Value) -> String {
    v.to_string()
}

fn compact(v: &Value) -> String {
    pytext::compact_json(v).unwrap_or_default()
}

impl Checker {
    fn fail(&mut self, path: &str, msg: impl AsRef<str>) {
        self.errors.push(format!("{path}: {}", msg.as_ref()));
    }

    fn obj<'a>(
        &mut self,
        value: &'a Value,
        path: &str,
        required: &[&str],
        optional: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        let Value::Object(m) = value else {
            self.fail(path, format!("must be an object, got {}", kind(value)));
            return None;
        };
        let mut allowed: Vec<&str> = required.iter().chain(optional).copied().collect();
        allowed.sort_unstable();
        let mut unknown: Vec<&String> = m.keys().filter(|k| !allowed.contains(&k.as_str())).collect();
        unknown.sort();
        for key in unknown {
            self.fail(&join(path, key), format!("unknown key (expected one of {})", allowed.join(", ")));
        }
        let mut missing: Vec<&str> = required.iter().filter(|k| !m.contains_key(**k)).copied().collect();
        missing.sort_unstable();
        for key in missing {
            self.fail(&join(path, key), "required");
        }
        Some(m)
    }

    fn int(&mut self, value: &Value, path: &str, low: i64, high: i64, why: &str) -> Option<i64> {
        if !is_int(value) {
            self.fail(path, format!("must be an integer, got {}", kind(value)));
            return None;
        }
        match int_of(value) {
            Some(i) if i < low as i128 => self.fail(path, format!("must be >= {low}, got {}", num_text(value))),
            Some(i) if i <= high as i128 => return Some(i as i64),
            Some(_) => self.fail(path, format!("must be <= {} ({why}), got {}", high, num_text(value))),
            None => {
                if num_text(value).starts_with('-') {
                    self.fail(path, format!("must be >= {low}, got {}", num_text(value)))
                } else {
                    self.fail(path, format!("must be <= {} ({why}), got {}", high, num_text(value)))
                }
            }
        }
        None
    }

    fn cost(&mut self, value: &Value, path: &str) -> Option<PrivacyCost> {
        let zero = Value::from(0);
        let (parts, wanted): (Vec<(Value, String)>, &str) = if value.is_object() {
            let m = self.obj(value, path, &["epsilon"], &["delta"])?;
            let eps = m.get("epsilon")?.clone();
            let delta = m.get("delta").cloned().unwrap_or(zero);
            (vec![(eps, join(path, "epsilon")), (delta, join(path, "delta"))], "a finite number")
        } else {
            (
                vec![(value.clone(), path.to_string()), (zero, path.to_string())],
                "a finite number (ε) or {\"epsilon\": ε, \"delta\": δ}",
            )
        };
        for (v, p) in &parts {
            if !is_real(v) || !f64_of(v).is_finite() {
                self.fail(p, format!("must be {wanted}, got {}", kind(v)));
                return None;
            }
        }
        let eps = f64_of(&parts[0].0);
        let delta = f64_of(&parts[1].0);
        if !(eps > 0.0) {
            self.fail(&parts[0].1, format!("must be > 0, got {}", num_text(&parts[0].0)));
        } else if !(0.0..1.0).contains(&delta) {
            self.fail(&parts[1].1, format!("must be in [0, 1), got {}", num_text(&parts[1].0)));
        } else {
            return Some(PrivacyCost::new(eps, delta));
        }
        None
    }

    fn release(&mut self, value: &Value, path: &str) {
        let Some(v) = self.obj(value, path, &[], &["min_reports", "min_z", "central"]) else { return };
        if let Some(c) = v.get("central") {
            self.central(c, &join(path, "central"));
        }
        if let Some(n) = v.get("min_reports") {
            self.int(n, &join(path, "min_reports"), 0, MAX_MIN_REPORTS, "a count of reports");
        }
        if let Some(z) = v.get("min_z") {
            if !is_real(z) || !f64_of(z).is_finite() {
                self.fail(&join(path, "min_z"), format!("must be a finite number >= 0, got {}", kind(z)));
            } else if f64_of(z) < 0.0 {
                self.fail(&join(path, "min_z"), format!("must be >= 0, got {}", num_text(z)));
            }
        }
    }

    /// A central target: `epsilon` finite > 0, `delta` in (0, 1), `windows` an integer in [1, 1,000,000] (optional).
    fn central(&mut self, value: &Value, path: &str) {
        let Some(v) = self.obj(value, path, &["epsilon", "delta"], &["windows"]) else { return };
        for (key, rule) in [("epsilon", "> 0"), ("delta", "in (0, 1)")] {
            let Some(x) = v.get(key) else { continue };
            if !is_real(x) || !f64_of(x).is_finite() {
                self.fail(&join(path, key), format!("must be a finite number {rule}, got {}", kind(x)));
            } else if !(f64_of(x) > 0.0 && (key == "epsilon" || f64_of(x) < 1.0)) {
                self.fail(&join(path, key), format!("must be {rule}, got {}", num_text(x)));
            }
        }
        if let Some(w) = v.get("windows") {
            self.int(w, &join(path, "windows"), 1, MAX_TARGET_WINDOWS, "a horizon the accountant composes");
        }
    }

    fn le(&mut self, small: Option<PrivacyCost>, big: Option<PrivacyCost>, path: &str, what: &str) {
        if let (Some(s), Some(b)) = (small, big) {
            if !s.fits_within(&b) {
                self.fail(path, format!("{s} exceeds {what} ({b})"));
            }
        }
    }

    fn params(&mut self, protocol_name: &Value, raw: &Value, path: &str) -> Option<Arc<dyn ProtocolParams>> {
        let entry = protocol_name.as_str().and_then(protocols::get);
        let Some(entry) = entry else {
            let shown = num_text(protocol_name);
            let not_yet = match protocol_name.as_str() {
                Some(n) if protocols::NOT_YET.contains(&n) => {
                    format!("; {n} is a protocol of the Python client that this client does not implement yet")
                }
                _ => String::new(),
            };
            self.fail(
                &join(path, "protocol"),
                format!("unknown protocol {shown} (known: {}){not_yet}", protocols::names().join(", ")),
            );
            return None;
        };
        let required: Vec<&str> = entry.table.iter().filter(|r| r.default.is_none()).map(|r| r.name).collect();
        let optional: Vec<&str> = entry.table.iter().filter(|r| r.default.is_some()).map(|r| r.name).collect();
        let ppath = join(path, "params");
        let o = self.obj(raw, &ppath, &required, &optional)?;
        if !required.iter().all(|k| o.contains_key(*k)) || !o.keys().all(|k| entry.table.iter().any(|r| r.name == k)) {
            return None;
        }
        match entry.params(raw).and_then(|p| p.check_cost().map(|()| p)) {
            Ok(p) => Some(p),
            Err(Error::Refusal(r)) => {
                // A refusal of one parameter is reported at its path (`params.epsilon`), any other at `params`.
                let param =
                    r.field("param").and_then(Value::as_str).filter(|n| entry.table.iter().any(|row| row.name == *n));
                match param {
                    Some(n) => self.fail(&join(&ppath, n), r.to_string()),
                    None => self.fail(&ppath, r.to_string()),
                }
                None
            }
            Err(e) => {
                self.fail(&ppath, e.to_string());
                None
            }
        }
    }

    fn metric(&mut self, name: &str, raw: &Value, total: &Budget) -> Option<MetricSpec> {
        let path = join("metrics", name);
        if !is_metric_name(name) {
            self.fail(&path, "metric names match [a-z][a-z0-9_]{0,31}");
        }
        let m = self.obj(
            raw,
            &path,
            &["protocol", "params", "budget"],
            &["candidates", "description", "release", "trust", "otel"],
        )?;
        let params = match (m.get("protocol"), m.get("params")) {
            (Some(p), Some(raw)) => self.params(p, raw, &path),
            _ => None,
        };
        let bpath = join(&path, "budget");
        let mut budget = None;
        if let Some(braw) = m.get("budget") {
            if let Some(b) = self.obj(braw, &bpath, &["per_report"], &["per_window", "lifetime"]) {
                let per_report = b.get("per_report").and_then(|v| self.cost(v, &join(&bpath, "per_report")));
                let per_window = b.get("per_window").and_then(|v| self.cost(v, &join(&bpath, "per_window")));
                let lifetime = b.get("lifetime").and_then(|v| self.cost(v, &join(&bpath, "lifetime")));
                budget = Some(Budget { per_report, per_window, lifetime });
                let rp = join(&bpath, "per_report");
                self.le(per_report, per_window, &rp, "the metric's per_window");
                self.le(per_window, lifetime, &join(&bpath, "per_window"), "the metric's lifetime");
                self.le(per_report, lifetime, &rp, "the metric's lifetime");
                self.le(per_report, total.per_window, &rp, "budget.per_window of the collection");
                self.le(per_report, total.lifetime, &rp, "budget.lifetime of the collection");
                if let (Some(p), Some(r)) = (&params, per_report) {
                    if !p.privacy_cost().fits_within(&r) {
                        self.fail(
                            &rp,
                            format!(
                                "{r} is less than what one {} report costs with these params ({})",
                                p.protocol(),
                                p.privacy_cost()
                            ),
                        );
                    }
                }
            }
        }
        let cpath = join(&path, "candidates");
        let candidates = match m.get("candidates") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) if !c.trim().is_empty() => {
                if !c.contains("://") && (c.starts_with('/') || c.starts_with('~')) {
                    self.fail(&cpath, format!("must be relative to the spec file (or a URL), got {c:?}"));
                } else if let Some(d) = params.as_ref().and_then(|p| p.domain_size()) {
                    let proto = params.as_ref().map(|p| p.protocol()).unwrap_or("");
                    self.fail(
                        &cpath,
                        format!(
                            "{proto} has a fixed domain (domain_size={d}); candidates are for open-domain protocols"
                        ),
                    );
                }
                Some(c.clone())
            }
            Some(other) => {
                self.fail(&cpath, format!("must be a path relative to the spec file, or a URL; got {}", kind(other)));
                None
            }
        };
        let description = match m.get("description") {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.fail(&join(&path, "description"), format!("must be a string, got {}", kind(other)));
                String::new()
            }
        };
        if let Some(r) = m.get("release") {
            self.release(r, &join(&path, "release"));
        }
        let trust = match m.get("trust") {
            None => Some(TrustModel::Local),
            Some(t) => t.as_str().and_then(TrustModel::from_name),
        };
        match (trust, &params) {
            (None, _) => {
                let names: Vec<&str> = TrustModel::ALL.iter().map(|t| t.as_str()).collect();
                let shown = m.get("trust").map(compact).unwrap_or_default();
                self.fail(&join(&path, "trust"), format!("must be one of {}, got {shown}", names.join(", ")));
            }
            (Some(t), Some(p)) if t.two_aggregator() && !PRIO3_FITS.contains(&p.protocol()) => self.fail(
                &join(&path, "trust"),
                format!(
                    "{} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): no two-aggregator mode for it",
                    p.protocol()
                ),
            ),
            _ => {}
        }
        let otel = m.get("otel").and_then(|o| otel::parse(self, o, &join(&path, "otel"), params.as_deref()));
        let params = params?;
        let budget = budget.filter(|b| b.per_report.is_some())?;
        Some(MetricSpec { name: name.to_string(), params, budget, candidates, description, trust: trust?, otel })
    }

    fn spec(mut self, data: &Value, source: &str) -> Result<CollectionSpec> {
        let fail = |errors: Vec<String>| Error::Spec { source: source.into(), errors };
        let Some(d) = self.obj(
            data,
            "$",
            &["spec_version", "name", "budget", "metrics"],
            &["window_seconds", "upload", "description", "release"],
        ) else {
            return Err(fail(self.errors));
        };
        if let Some(v) = d.get("spec_version") {
            if !(is_int(v) && int_of(v) == Some(SPEC_VERSION as i128)) {
                let shown = compact(v);
                self.fail("spec_version", format!("must be {SPEC_VERSION}, got {shown}"));
            }
        }
        let name = d.get("name").and_then(|n| n.as_str()).filter(|n| is_collection_name(n)).map(str::to_string);
        if let Some(n) = d.get("name") {
            if name.is_none() {
                let shown = match n {
                    Value::String(s) => format!("{s:?}"),
                    other => compact(other),
                };
                self.fail("name", format!("collection names match [a-z][a-z0-9_.-]{{0,63}}, got {shown}"));
            }
        }
        let default_window = Value::from(86400);
        let window =
            self.int(d.get("window_seconds").unwrap_or(&default_window), "window_seconds", 1, MAX_SECONDS, SECONDS_WHY);
        let mut total = Budget::default();
        if let Some(braw) = d.get("budget") {
            if let Some(b) = self.obj(braw, "budget", &["per_window", "lifetime"], &[]) {
                total.per_window = b.get("per_window").and_then(|v| self.cost(v, "budget.per_window"));
                total.lifetime = b.get("lifetime").and_then(|v| self.cost(v, "budget.lifetime"));
                self.le(total.per_window, total.lifetime, "budget.per_window", "budget.lifetime");
            }
        }
        let (mut interval, mut batch) = (86400i64, 1000i64);
        let empty = Value::Object(Map::new());
        if let Some(up) =
            self.obj(d.get("upload").unwrap_or(&empty), "upload", &[], &["min_interval_seconds", "max_batch"])
        {
            let v = up.get("min_interval_seconds").cloned().unwrap_or(Value::from(86400));
            interval = self.int(&v, "upload.min_interval_seconds", 0, MAX_SECONDS, SECONDS_WHY).unwrap_or(86400);
            let v = up.get("max_batch").cloned().unwrap_or(Value::from(1000));
            batch =
                self.int(&v, "upload.max_batch", 1, MAX_BATCH, "a client holds one batch in memory").unwrap_or(1000);
        }
        let description = match d.get("description") {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.fail("description", format!("must be a string, got {}", kind(other)));
                String::new()
            }
        };
        if let Some(r) = d.get("release") {
            self.release(r, "release");
        }
        let mut metrics = Vec::new();
        if let Some(raw) = d.get("metrics") {
            let names: Vec<String> = raw.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
            let names_ref: Vec<&str> = names.iter().map(String::as_str).collect();
            if self.obj(raw, "metrics", &[], &names_ref).is_some() {
                if names.is_empty() {
                    self.fail("metrics", "a collection needs at least one metric");
                }
                let mut sorted = names.clone();
                sorted.sort();
                for mname in sorted {
                    if let Some(m) = self.metric(&mname, &raw[mname.as_str()], &total) {
                        metrics.push(m);
                    }
                }
            }
        }
        if !self.errors.is_empty() {
            return Err(fail(self.errors));
        }
        Ok(CollectionSpec {
            name: name.unwrap_or_default(),
            budget: total,
            metrics,
            window_seconds: window.unwrap_or(86400),
            min_interval_seconds: interval,
            max_batch: batch as usize,
            description,
            fingerprint: OnceLock::new(),
        })
    }
}
