//! Two-aggregator metrics on the device (feature `prio`; Python's `ldp/client/dap.py`): a report of a metric whose
//! `trust` is `two-aggregator` or `two-aggregator+local`, made as a DAP-09 report for its task's leader, charged to
//! the device's ledger like any other and kept in the same outbox until the leader has stored it.
//!
//! **The task** ([`DapTask::new`]): the metric's task file (`ldp-task/1`, written by `ldp collect task` with both
//! aggregators' public HPKE configs), checked against the spec as Python's `device_task` checks it: the same metric,
//! window, trust model, Prio3 type, reports a window and local protocol, the same Prio3 parameters, and both configs
//! present, so that a device never sends what its aggregators would count under another guarantee.
//!
//! **A report**: the value checked by the metric's protocol encoder; the *measurement* then, with local
//! randomization inside (`two-aggregator+local`), the randomized report's field that the protocol's Prio3 fit names
//! (`rr`'s bit, `grr`'s index, the `sue`/`oue` bits, the `pgr`/`hpg` point); without it, the exact value (its index
//! for Prio3Count and Prio3Histogram, its one-hot vector for Prio3SumVec). It is sharded and sealed by the task's
//! [`ReportBuilder`] (report ID, sharding randomness and ephemeral keys from the OS generator, also in a simulation),
//! at the recording time clamped into the charged window and rounded down to the task's time precision.
//!
//! **The charge**: [`CollectionSpec::report_charge`] (the ledger's per-window cap of the metric is
//! [`CollectionSpec::device_window_cap`]). **The outbox line**: `{"task_id":"<base64url>","report":"<base64url of
//! the DAP-09 Report>"}`, sent by the uploader's two-aggregator lane to the task's leader.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::cost::PrivacyCost;
use crate::dap::{ReportBuilder, TaskFile};
use crate::encoder::{Charge, Encoder, PayloadValue, Prepared};
use crate::error::{Error, Result};
use crate::params::ProtocolParams;
use crate::prio3::{Measurement, Prio3Type};
use crate::protocols;
use crate::spec::{CollectionSpec, MetricSpec, TrustModel};

/// How a protocol's report enters Prio3 (Python's `ProtocolParams.prio3_fit()`): the Prio3 type's name, the payload
/// field that is the measurement, the aggregate's length and a SumVec's `max_measurement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fit {
    vdaf: &'static str,
    field: &'static str,
    length: usize,
    max_measurement: Option<u128>,
}

/// The fit of `params` (`None`: the protocol does not fit: not `rr`, `grr`, `sue`, `oue`, `pgr` or `hpg`).
fn prio3_fit(params: &dyn ProtocolParams) -> Option<Fit> {
    let d = usize::try_from(params.domain_size().unwrap_or(0)).ok()?;
    let fit = |vdaf, field, length, max_measurement| Some(Fit { vdaf, field, length, max_measurement });
    match params.protocol() {
        "rr" => fit("Prio3Count", "bit", 1, None),
        "grr" => fit("Prio3Histogram", "index", d, None),
        "sue" | "oue" => fit("Prio3SumVec", "bits", d, Some(1)),
        "pgr" | "hpg" => {
            // The reported point `j` is below the order K: its field's bound.
            let order = params.schema().into_iter().find(|f| f.name == "j")?.size;
            fit("Prio3Histogram", "j", usize::try_from(order).ok()?, None)
        }
        _ => None,
    }
}

/// The Prio3 parameters of a fit or a task's type, as Python's `vdaf_params` without `chunk_length`.
fn params_json(length: Option<usize>, max_measurement: Option<u128>) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(l) = length {
        out.insert("length".into(), json!(l));
    }
    if let Some(m) = max_measurement {
        out.insert("max_measurement".into(), serde_json::to_value(m).unwrap_or(Value::Null));
    }
    Value::Object(out)
}

/// A two-aggregator metric's task on the device: its file, the builder of its reports, its fit and its charge.
#[derive(Debug)]
pub(crate) struct DapTask {
    file: TaskFile,
    builder: ReportBuilder,
    fit: Fit,
    charge: PrivacyCost,
}

impl DapTask {
    /// The task of two-aggregator `metric` of `spec` from its task `file`, checked against the spec (module
    /// documentation); an [`Error::Value`] naming the first difference.
    pub(crate) fn new(spec: &CollectionSpec, metric: &str, file: TaskFile) -> Result<Self> {
        let m = spec.metric(metric).map_err(|_| not_two_aggregator(spec, metric))?;
        let fit = prio3_fit(m.params.as_ref())
            .filter(|_| m.trust.two_aggregator())
            .ok_or_else(|| not_two_aggregator(spec, metric))?;
        check_members(spec, m, &fit, &file)?;
        let (length, max) = match file.vdaf {
            Prio3Type::Count => (None, None),
            Prio3Type::Sum { max_measurement } => (None, Some(u128::from(max_measurement))),
            Prio3Type::SumVec { max_measurement, length, .. } => (Some(length), Some(max_measurement)),
            Prio3Type::Histogram { length, .. } => (Some(length), None),
        };
        let want_length = (fit.vdaf != "Prio3Count").then_some(fit.length);
        if (length, max) != (want_length, fit.max_measurement) {
            return Err(Error::value(format!(
                "the task given for metric {metric:?} has Prio3 parameters {}, the spec's metric {}",
                params_json(length, max),
                params_json(want_length, fit.max_measurement)
            )));
        }
        if file.hpke_configs.is_none() {
            return Err(Error::value(format!(
                "the task given for metric {metric:?} has no hpke_configs: a device seals to the aggregators' public \
                 configs (ldp collect task --leader-config ... --helper-config ...)"
            )));
        }
        let builder = file.report_builder()?;
        Ok(DapTask { file, builder, fit, charge: spec.report_charge(metric)? })
    }

    /// The task's file.
    pub(crate) fn file(&self) -> &TaskFile {
        &self.file
    }

    /// What one report costs the ledger ([`CollectionSpec::report_charge`]).
    pub(crate) fn charge(&self) -> Charge {
        Charge::Plain(self.charge)
    }

    /// The Prio3 measurement of a prepared value (module documentation): randomized first by `encoder` with local
    /// noise inside.
    fn measurement(&self, encoder: &mut Encoder, prepared: &Prepared) -> Result<Measurement> {
        let odd = || Error::Internal(format!("a {} report gave no {} measurement", self.fit.vdaf, self.fit.field));
        if self.file.local.is_some() {
            let report = encoder.randomize(prepared, None)?;
            return match (self.fit.vdaf, report.get(self.fit.field)) {
                ("Prio3Count", Some(PayloadValue::Uint(b))) if *b <= 1 => Ok(Measurement::Count(*b == 1)),
                ("Prio3Histogram", Some(PayloadValue::Uint(i))) => Ok(Measurement::Histogram(*i as usize)),
                ("Prio3SumVec", Some(PayloadValue::Bits(bits))) if bits.len() == self.fit.length => {
                    Ok(Measurement::SumVec((0..bits.len()).map(|i| u128::from(bits.get(i))).collect()))
                }
                _ => Err(odd()),
            };
        }
        let i = prepared.index().ok_or_else(odd)?;
        Ok(match self.fit.vdaf {
            "Prio3Count" => Measurement::Count(i == 1),
            "Prio3SumVec" => Measurement::SumVec((0..self.fit.length as u64).map(|j| u128::from(j == i)).collect()),
            _ => Measurement::Histogram(i as usize),
        })
    }

    /// The report's time (Python's `DapEncoder.report_time`): `now` (Unix seconds) clamped into the charged `window`
    /// (its index), rounded down to the task's time precision (which divides the window, so the report stays in the
    /// window it was charged to).
    pub(crate) fn report_time(&self, now: f64, window: i64) -> u64 {
        let size = self.file.window_seconds as i64;
        let start = window.saturating_mul(size);
        let t = (now.trunc() as i64).clamp(start, start.saturating_add(size - 1)).max(0);
        (t - t % self.file.time_precision as i64) as u64
    }

    /// The outbox line of one report of `prepared` charged to `window` at clock reading `now`.
    pub(crate) fn line(&self, encoder: &mut Encoder, prepared: &Prepared, now: f64, window: i64) -> Result<String> {
        let measurement = self.measurement(encoder, prepared)?;
        let report = self.builder.build(&measurement, self.report_time(now, window))?;
        Ok(dap_line(&self.file.task_id_text(), &report.encode()?))
    }
}

/// Checks the members of a task `file` that must be those of metric `m` under `spec` (its fit `fit`), in Python's
/// order: metric, window, trust model, Prio3 type, reports a window, local protocol; the first difference named.
fn check_members(spec: &CollectionSpec, m: &MetricSpec, fit: &Fit, file: &TaskFile) -> Result<()> {
    let metric = m.name.as_str();
    let want_local = (m.trust == TrustModel::TwoAggregatorLocal)
        .then(|| json!({"protocol": m.params.protocol(), "params": m.params.canonical_dict()}));
    let same_local = match (&want_local, &file.local) {
        (None, None) => true,
        (Some(_), Some(have)) => same_protocol(m.params.as_ref(), have),
        _ => false,
    };
    let show = |v: &Option<Value>| v.as_ref().map_or("null".to_string(), Value::to_string);
    let rpw = |v: Option<u64>| v.map_or("null".to_string(), |k| k.to_string());
    let want_rpw = spec.reports_per_window(metric)?;
    let window = spec.window_seconds;
    let checks: [(&str, bool, String, String); 6] = [
        ("metric", file.metric == metric, format!("{:?}", file.metric), format!("{metric:?}")),
        (
            "window_seconds",
            i64::try_from(file.window_seconds) == Ok(window),
            file.window_seconds.to_string(),
            window.to_string(),
        ),
        ("trust", file.trust() == m.trust.as_str(), format!("{:?}", file.trust()), format!("{:?}", m.trust.as_str())),
        ("vdaf", file.vdaf.name() == fit.vdaf, format!("{:?}", file.vdaf.name()), format!("{:?}", fit.vdaf)),
        ("reports_per_window", file.reports_per_window == want_rpw, rpw(file.reports_per_window), rpw(want_rpw)),
        ("local", same_local, show(&file.local), show(&want_local)),
    ];
    match checks.into_iter().find(|c| !c.1) {
        None => Ok(()),
        Some((key, _, have, want)) => Err(Error::value(format!(
            "the task given for metric {metric:?} is not its task under spec {:?}: its {key} is {have}, the spec's \
             {want} (write it again: ldp collect task)",
            spec.name
        ))),
    }
}

/// Whether the task's `local` member (`{"protocol": …, "params": {…}}`) names the metric's protocol with the same
/// parameters: its parameters read by the protocol give the metric's fingerprint (numbers compared by value, as
/// Python's dict equality compares them).
fn same_protocol(params: &dyn ProtocolParams, local: &Value) -> bool {
    let name = local.get("protocol").and_then(Value::as_str);
    let Some(protocol) = name.filter(|n| *n == params.protocol()).and_then(protocols::get) else { return false };
    let keys_ok = local.as_object().is_some_and(|o| o.len() == 2);
    keys_ok
        && local
            .get("params")
            .and_then(|p| protocol.params(p).ok())
            .is_some_and(|p| p.fingerprint() == params.fingerprint())
}

/// The outbox line of a DAP report (Python's `dap_line`): `{"task_id":"…","report":"…"}`, unpadded base64url.
pub(crate) fn dap_line(task_id: &str, report: &[u8]) -> String {
    format!(r#"{{"task_id":"{task_id}","report":"{}"}}"#, URL_SAFE_NO_PAD.encode(report))
}

/// The task ID (base64url, as in the leader's URL) and the report's bytes of an outbox line; `None` when the line is
/// not one (Python's `parse_dap_line`).
pub(crate) fn parse_dap_line(line: &str) -> Option<(String, Vec<u8>)> {
    let doc: Value = serde_json::from_str(line).ok()?;
    let o = doc.as_object().filter(|o| o.len() == 2)?;
    let task_id = o.get("task_id")?.as_str()?;
    let id = URL_SAFE_NO_PAD.decode(task_id).ok().filter(|id| id.len() == crate::dap::TASK_ID_LEN)?;
    let report = URL_SAFE_NO_PAD.decode(o.get("report")?.as_str()?).ok()?;
    Some((URL_SAFE_NO_PAD.encode(id), report))
}

/// The refusal of a task given for `metric`, which is no two-aggregator metric of `spec`: its two-aggregator
/// metrics named.
pub(crate) fn not_two_aggregator(spec: &CollectionSpec, metric: &str) -> Error {
    let names: Vec<&str> = spec.metrics.iter().filter(|m| m.trust.two_aggregator()).map(|m| m.name.as_str()).collect();
    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    Error::value(format!(
        "tasks: {metric:?} is no two-aggregator metric of collection {:?} (its two-aggregator metrics: {names})",
        spec.name
    ))
}
