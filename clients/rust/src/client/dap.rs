//! Two-aggregator metrics on the device (feature `prio`; Python's `ldp/client/dap.py`): a report of a metric whose
//! `trust` is `two-aggregator` or `two-aggregator+local`, made as a DAP-09 report for its task's leader, charged to
//! the device's ledger like any other and kept in the same outbox until the leader has stored it.
//!
//! **The task** ([`DapTask::new`]): the metric's task file (`ldp-task/1`, written by `ldp collect task` with both
//! aggregators' public HPKE configs), checked against the spec as Python's `device_task` checks it: the same metric,
//! window, trust model, Prio3 type, reports a window and local protocol, the same Prio3 parameters, and both configs
//! present, so that a device never sends what its aggregators would count under another guarantee. A `poplar1`
//! metric's task is a Poplar1 task (feature `poplar1`: `dap::Poplar1TaskFile`) of the
//! spec's `bits` and `max_candidates`, with the same metric, window, trust model and reports a window.
//!
//! **A report**: the value checked by the metric's protocol encoder; the *measurement* then, with local
//! randomization inside (`two-aggregator+local`), the randomized report's field that the protocol's Prio3 fit names
//! (`rr`'s bit, `grr`'s index, the `sue`/`oue` bits, the `pgr`/`hpg` point); without it, the exact value (its index
//! for Prio3Count and Prio3Histogram, its one-hot vector for Prio3SumVec). It is sharded and sealed by the task's
//! [`ReportBuilder`] (report ID, sharding randomness and ephemeral keys from the OS generator, also in a simulation),
//! at the recording time clamped into the charged window and rounded down to the task's time precision. A
//! `poplar1` metric's string is checked by its encoder (`protocols::poplar1_strings`), and its bytes, padded to the
//! task's bit length, are sharded by the task's `Poplar1ReportBuilder` likewise.
//!
//! **The charge**: [`CollectionSpec::report_charge`] (the ledger's per-window cap of the metric is
//! [`CollectionSpec::device_window_cap`]). **The outbox line**: `{"task_id":"<base64url>","report":"<base64url of
//! the DAP-09 Report>"}`, sent by the uploader's two-aggregator lane to the task's leader.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::cost::PrivacyCost;
use crate::dap::{AnyTaskFile, ReportBuilder, TaskFile};
use crate::encoder::{Charge, Encoder, PayloadValue, Prepared};
use crate::error::{Error, Result};
use crate::params::ProtocolParams;
use crate::prio3::{Measurement, Prio3Type};
use crate::protocols::{self, poplar1_strings};
use crate::spec::{CollectionSpec, MetricSpec, TrustModel};

/// The `vdaf.type` of a Poplar1 task: a `poplar1` metric's.
const POPLAR1: &str = "Poplar1";

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

/// A two-aggregator metric's task on the device: where its reports go, their window and time precision, the charge
/// of one, and the builder that seals them.
#[derive(Debug)]
pub(crate) struct DapTask {
    /// The task ID, unpadded base64url.
    task_id: String,
    leader_url: String,
    window_seconds: u64,
    time_precision: u64,
    charge: PrivacyCost,
    sealer: Sealer,
}

/// How a task's reports are made: a Prio3 task's builder and fit (`local`: the devices randomize first), or a
/// Poplar1 task's builder (feature `poplar1`).
#[derive(Debug)]
enum Sealer {
    Prio3 {
        builder: Box<ReportBuilder>,
        fit: Fit,
        local: bool,
    },
    #[cfg(feature = "poplar1")]
    Poplar1(crate::dap::Poplar1ReportBuilder),
}

/// The members of a task file that must be its metric's under the spec ([`check_members`]).
struct Claimed<'a> {
    metric: &'a str,
    window_seconds: u64,
    trust: &'static str,
    vdaf: &'a str,
    reports_per_window: Option<u64>,
    local: Option<&'a Value>,
}

impl DapTask {
    /// The task of two-aggregator `metric` of `spec` from its task `file` (a Prio3 or a Poplar1 task's), checked
    /// against the spec (module documentation); an [`Error::Value`] naming the first difference.
    pub(crate) fn new(spec: &CollectionSpec, metric: &str, file: AnyTaskFile) -> Result<Self> {
        let m = spec.metric(metric).map_err(|_| not_two_aggregator(spec, metric))?;
        let poplar1 = m.params.protocol() == poplar1_strings::NAME;
        let fit = prio3_fit(m.params.as_ref());
        let want = match fit {
            _ if !m.trust.two_aggregator() => return Err(not_two_aggregator(spec, metric)),
            Some(f) => f.vdaf,
            None if poplar1 => POPLAR1,
            None => return Err(not_two_aggregator(spec, metric)),
        };
        let charge = spec.report_charge(metric)?;
        match file {
            AnyTaskFile::Prio3(file) => {
                let claimed = Claimed {
                    metric: &file.metric,
                    window_seconds: file.window_seconds,
                    trust: file.trust(),
                    vdaf: file.vdaf.name(),
                    reports_per_window: file.reports_per_window,
                    local: file.local.as_ref(),
                };
                check_members(spec, m, want, &claimed)?;
                let fit = fit.ok_or_else(|| not_two_aggregator(spec, metric))?;
                check_prio3(metric, &fit, &file)?;
                let sealer =
                    Sealer::Prio3 { builder: Box::new(file.report_builder()?), fit, local: file.local.is_some() };
                let (window_seconds, time_precision) = (file.window_seconds, file.time_precision);
                let (task_id, leader_url) = (file.task_id_text(), file.leader_url);
                Ok(DapTask { task_id, leader_url, window_seconds, time_precision, charge, sealer })
            }
            #[cfg(feature = "poplar1")]
            AnyTaskFile::Poplar1(file) => {
                let t = &file.members;
                let claimed = Claimed {
                    metric: &t.metric,
                    window_seconds: t.window_seconds,
                    trust: "two-aggregator",
                    vdaf: POPLAR1,
                    reports_per_window: t.reports_per_window,
                    local: None,
                };
                check_members(spec, m, want, &claimed)?;
                check_poplar1(m, &file)?;
                let sealer = Sealer::Poplar1(file.report_builder()?);
                let (window_seconds, time_precision) = (t.window_seconds, t.time_precision);
                let task_id = t.task_id_text();
                let leader_url = file.members.leader_url;
                Ok(DapTask { task_id, leader_url, window_seconds, time_precision, charge, sealer })
            }
        }
    }

    /// The leader's base URL.
    pub(crate) fn leader_url(&self) -> &str {
        &self.leader_url
    }

    /// What one report costs the ledger ([`CollectionSpec::report_charge`]).
    pub(crate) fn charge(&self) -> Charge {
        Charge::Plain(self.charge)
    }

    /// The Prio3 measurement of a prepared value (module documentation): randomized first by `encoder` with local
    /// noise inside (`local`).
    fn measurement(fit: &Fit, local: bool, encoder: &mut Encoder, prepared: &Prepared) -> Result<Measurement> {
        let odd = || Error::Internal(format!("a {} report gave no {} measurement", fit.vdaf, fit.field));
        if local {
            let report = encoder.randomize(prepared, None)?;
            return match (fit.vdaf, report.get(fit.field)) {
                ("Prio3Count", Some(PayloadValue::Uint(b))) if *b <= 1 => Ok(Measurement::Count(*b == 1)),
                ("Prio3Histogram", Some(PayloadValue::Uint(i))) => Ok(Measurement::Histogram(*i as usize)),
                ("Prio3SumVec", Some(PayloadValue::Bits(bits))) if bits.len() == fit.length => {
                    Ok(Measurement::SumVec((0..bits.len()).map(|i| u128::from(bits.get(i))).collect()))
                }
                _ => Err(odd()),
            };
        }
        let i = prepared.index().ok_or_else(odd)?;
        Ok(match fit.vdaf {
            "Prio3Count" => Measurement::Count(i == 1),
            "Prio3SumVec" => Measurement::SumVec((0..fit.length as u64).map(|j| u128::from(j == i)).collect()),
            _ => Measurement::Histogram(i as usize),
        })
    }

    /// The report's time (Python's `DapEncoder.report_time`): `now` (Unix seconds) clamped into the charged `window`
    /// (its index), rounded down to the task's time precision (which divides the window, so the report stays in the
    /// window it was charged to).
    pub(crate) fn report_time(&self, now: f64, window: i64) -> u64 {
        let size = self.window_seconds as i64;
        let start = window.saturating_mul(size);
        let t = (now.trunc() as i64).clamp(start, start.saturating_add(size - 1)).max(0);
        (t - t % self.time_precision as i64) as u64
    }

    /// The outbox line of one report of `prepared` charged to `window` at clock reading `now`: a Prio3 task's of
    /// its measurement, a Poplar1 task's of the string's bytes (`Prepared::string_measurement`).
    pub(crate) fn line(&self, encoder: &mut Encoder, prepared: &Prepared, now: f64, window: i64) -> Result<String> {
        let time = self.report_time(now, window);
        let report = match &self.sealer {
            Sealer::Prio3 { builder, fit, local } => {
                builder.build(&Self::measurement(fit, *local, encoder, prepared)?, time)?
            }
            #[cfg(feature = "poplar1")]
            Sealer::Poplar1(builder) => {
                let bytes = prepared
                    .string_measurement()
                    .ok_or_else(|| Error::Internal("a poplar1 value gave no string measurement".into()))?;
                builder.build(&builder.client().measurement_from_bytes(bytes)?, time)?
            }
        };
        Ok(dap_line(&self.task_id, &report.encode()?))
    }
}

/// Checks a Prio3 task `file`'s parameters against metric `metric`'s fit, and that it has both aggregators' configs.
fn check_prio3(metric: &str, fit: &Fit, file: &TaskFile) -> Result<()> {
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
    has_configs(metric, file.hpke_configs.is_some())
}

/// Checks a Poplar1 task `file`'s bit length and candidates against the `poplar1` metric `m`'s, and that it has
/// both aggregators' configs.
#[cfg(feature = "poplar1")]
fn check_poplar1(m: &MetricSpec, file: &crate::dap::Poplar1TaskFile) -> Result<()> {
    let p = crate::encoder::downcast::<poplar1_strings::Poplar1Params>(&m.params)?;
    let show = |bits: usize, c: u64| json!({"bits": bits, "max_candidates": c}).to_string();
    if (file.bits, file.max_candidates) != (p.bits as usize, p.max_candidates) {
        return Err(Error::value(format!(
            "the task given for metric {:?} has Poplar1 parameters {}, the spec's metric {}",
            m.name,
            show(file.bits, file.max_candidates),
            show(p.bits as usize, p.max_candidates)
        )));
    }
    has_configs(&m.name, file.members.hpke_configs.is_some())
}

fn has_configs(metric: &str, present: bool) -> Result<()> {
    if present {
        return Ok(());
    }
    Err(Error::value(format!(
        "the task given for metric {metric:?} has no hpke_configs: a device seals to the aggregators' public \
         configs (ldp collect task --leader-config ... --helper-config ...)"
    )))
}

/// Checks the members of a task file (`have`) that must be those of metric `m` under `spec` (`vdaf`: the VDAF its
/// task must name), in Python's order: metric, window, trust model, VDAF, reports a window, local protocol; the first
/// difference named.
fn check_members(spec: &CollectionSpec, m: &MetricSpec, vdaf: &str, have: &Claimed<'_>) -> Result<()> {
    let metric = m.name.as_str();
    let want_local = (m.trust == TrustModel::TwoAggregatorLocal)
        .then(|| json!({"protocol": m.params.protocol(), "params": m.params.canonical_dict()}));
    let same_local = match (&want_local, have.local) {
        (None, None) => true,
        (Some(_), Some(local)) => same_protocol(m.params.as_ref(), local),
        _ => false,
    };
    let show = |v: Option<&Value>| v.map_or("null".to_string(), Value::to_string);
    let rpw = |v: Option<u64>| v.map_or("null".to_string(), |k| k.to_string());
    let want_rpw = spec.reports_per_window(metric)?;
    let window = spec.window_seconds;
    let checks: [(&str, bool, String, String); 6] = [
        ("metric", have.metric == metric, format!("{:?}", have.metric), format!("{metric:?}")),
        (
            "window_seconds",
            i64::try_from(have.window_seconds) == Ok(window),
            have.window_seconds.to_string(),
            window.to_string(),
        ),
        ("trust", have.trust == m.trust.as_str(), format!("{:?}", have.trust), format!("{:?}", m.trust.as_str())),
        ("vdaf", have.vdaf == vdaf, format!("{:?}", have.vdaf), format!("{vdaf:?}")),
        ("reports_per_window", have.reports_per_window == want_rpw, rpw(have.reports_per_window), rpw(want_rpw)),
        ("local", same_local, show(have.local), show(want_local.as_ref())),
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
