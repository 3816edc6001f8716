//! A metric's part of a spec: its name, protocol and parameters, budget, candidates, description, release
//! thresholds, trust model and `otel` key.

use std::sync::Arc;

use serde_json::Value;

use super::{compact, kind, num_text, Checker};
use crate::error::Error;
use crate::params::ProtocolParams;
use crate::protocols::{self, poplar1_strings};
use crate::spec::{
    is_metric_name, join, otel, Budget, MetricSpec, TrustModel, MAX_MIN_REPORTS, MAX_TARGET_WINDOWS, PRIO3_FITS,
};
use crate::value::{f64_of, is_real};

impl Checker {
    pub(super) fn release(&mut self, value: &Value, path: &str) {
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

    fn params(&mut self, protocol_name: &Value, raw: &Value, path: &str) -> Option<Arc<dyn ProtocolParams>> {
        let entry = protocol_name.as_str().and_then(protocols::metric_kind);
        let Some(entry) = entry else {
            let shown = num_text(protocol_name);
            let not_yet = match protocol_name.as_str() {
                Some(n) if protocols::NOT_YET.contains(&n) => {
                    format!("; {n} is a protocol of the Python client that this client does not implement yet")
                }
                _ => String::new(),
            };
            let mut known = protocols::names();
            known.push(poplar1_strings::NAME); // the kinds a metric may name: the local protocols and poplar1
            known.sort_unstable();
            self.fail(
                &join(path, "protocol"),
                format!("unknown protocol {shown} (known: {}){not_yet}", known.join(", ")),
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
                let param = r
                    .field("param")
                    .and_then(Value::as_str)
                    .or_else(|| relation_param(&r))
                    .filter(|n| entry.table.iter().any(|row| row.name == *n));
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

    /// The metric `name` of the spec (`raw`, its object), its budget within the collection's (`total`): `None` when
    /// anything in it is wrong (every problem recorded).
    pub(super) fn metric(&mut self, name: &str, raw: &Value, total: &Budget) -> Option<MetricSpec> {
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
        let budget =
            m.get("budget").and_then(|b| self.metric_budget(b, &join(&path, "budget"), total, params.as_deref()));
        let candidates = self.candidates(m.get("candidates"), &join(&path, "candidates"), params.as_deref());
        let description = self.description(m.get("description"), &join(&path, "description"));
        if let Some(r) = m.get("release") {
            self.release(r, &join(&path, "release"));
        }
        let trust = self.trust(m.get("trust"), &join(&path, "trust"), params.as_deref());
        let otel = m.get("otel").and_then(|o| otel::parse(self, o, &join(&path, "otel"), params.as_deref()));
        let params = params?;
        let budget = budget.filter(|b| b.per_report.is_some())?;
        Some(MetricSpec { name: name.to_string(), params, budget, candidates, description, trust: trust?, otel })
    }

    /// A metric's budget at `bpath` (`raw`): each cost within the next (per report, per window, lifetime), within
    /// the collection's (`total`), and enough for one report of the metric's protocol (`params`).
    fn metric_budget(
        &mut self,
        raw: &Value,
        bpath: &str,
        total: &Budget,
        params: Option<&dyn ProtocolParams>,
    ) -> Option<Budget> {
        let b = self.obj(raw, bpath, &["per_report"], &["per_window", "lifetime"])?;
        let per_report = b.get("per_report").and_then(|v| self.cost(v, &join(bpath, "per_report")));
        let per_window = b.get("per_window").and_then(|v| self.cost(v, &join(bpath, "per_window")));
        let lifetime = b.get("lifetime").and_then(|v| self.cost(v, &join(bpath, "lifetime")));
        let rp = join(bpath, "per_report");
        self.le(per_report, per_window, &rp, "the metric's per_window");
        self.le(per_window, lifetime, &join(bpath, "per_window"), "the metric's lifetime");
        self.le(per_report, lifetime, &rp, "the metric's lifetime");
        self.le(per_report, total.per_window, &rp, "budget.per_window of the collection");
        self.le(per_report, total.lifetime, &rp, "budget.lifetime of the collection");
        if let (Some(p), Some(r)) = (params, per_report) {
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
        Some(Budget { per_report, per_window, lifetime })
    }

    /// A metric's `candidates` at `cpath`: a path relative to the spec file, or a URL, for an open-domain protocol.
    fn candidates(
        &mut self,
        value: Option<&Value>,
        cpath: &str,
        params: Option<&dyn ProtocolParams>,
    ) -> Option<String> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) if !c.trim().is_empty() => {
                if !c.contains("://") && (c.starts_with('/') || c.starts_with('~')) {
                    self.fail(cpath, format!("must be relative to the spec file (or a URL), got {c:?}"));
                } else if let Some(d) = params.and_then(|p| p.domain_size()) {
                    let proto = params.map(|p| p.protocol()).unwrap_or("");
                    self.fail(
                        cpath,
                        format!(
                            "{proto} has a fixed domain (domain_size={d}); candidates are for open-domain protocols"
                        ),
                    );
                }
                Some(c.clone())
            }
            Some(other) => {
                self.fail(cpath, format!("must be a path relative to the spec file, or a URL; got {}", kind(other)));
                None
            }
        }
    }

    /// A metric's `trust` at `path` (absent: local), one the protocol (`params`) supports.
    fn trust(&mut self, value: Option<&Value>, path: &str, params: Option<&dyn ProtocolParams>) -> Option<TrustModel> {
        let trust = match value {
            None => Some(TrustModel::Local),
            Some(t) => t.as_str().and_then(TrustModel::from_name),
        };
        match (trust, params) {
            (None, _) => {
                let names: Vec<&str> = TrustModel::ALL.iter().map(|t| t.as_str()).collect();
                let shown = value.map(compact).unwrap_or_default();
                self.fail(path, format!("must be one of {}, got {shown}", names.join(", ")));
            }
            (Some(t), Some(p)) if p.protocol() == poplar1_strings::NAME && t != TrustModel::TwoAggregator => self.fail(
                path,
                format!(
                    "must be two-aggregator for poplar1 (its devices share the exact value: no local randomizer), got {}",
                    value.map_or_else(|| compact(&Value::from("local")), compact)
                ),
            ),
            (Some(t), Some(p)) if t.two_aggregator() && !fits_two_aggregators(p.protocol()) => self.fail(
                path,
                format!(
                    "{} does not fit in Prio3 (rr, grr, sue, oue, pgr and hpg do): no two-aggregator mode for it",
                    p.protocol()
                ),
            ),
            _ => {}
        }
        trust
    }
}

/// The parameter a relation refusal `r` is reported at when Python words it starting with that parameter's name
/// (its path then `params.<name>`, not `params`): `poplar1`'s `whole_bytes` (`bits`).
fn relation_param(r: &crate::error::Refusal) -> Option<&'static str> {
    match r.field("rule").and_then(Value::as_str) {
        Some(poplar1_strings::WHOLE_BYTES) => Some("bits"),
        _ => None,
    }
}

/// Whether `protocol` has a two-aggregator mode: one whose reports fit in Prio3, or Poplar1's strings.
fn fits_two_aggregators(protocol: &str) -> bool {
    PRIO3_FITS.contains(&protocol) || protocol == poplar1_strings::NAME
}
