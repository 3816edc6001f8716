//! The collection's part of a spec: its version, name, window, total budget, upload settings, description, release
//! thresholds, and its metrics (each checked in `metric`).

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{compact, Checker};
use crate::error::{Error, Result};
use crate::spec::{Budget, CollectionSpec, MetricSpec, MAX_BATCH, MAX_SECONDS, SECONDS_WHY, SPEC_VERSION};
use crate::value::{int_of, is_int};

fn is_collection_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-'))
}

impl Checker {
    /// The spec `data` (from `source`, named in the error): an [`Error::Spec`] listing every problem.
    pub(in crate::spec) fn spec(mut self, data: &Value, source: &str) -> Result<CollectionSpec> {
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
        let name = self.collection_name(d.get("name"));
        let default_window = Value::from(86400);
        let window =
            self.int(d.get("window_seconds").unwrap_or(&default_window), "window_seconds", 1, MAX_SECONDS, SECONDS_WHY);
        let total = d.get("budget").map(|b| self.total_budget(b)).unwrap_or_default();
        let (interval, batch) = self.upload(d.get("upload"));
        let description = self.description(d.get("description"), "description");
        if let Some(r) = d.get("release") {
            self.release(r, "release");
        }
        let metrics = d.get("metrics").map(|raw| self.metrics(raw, &total)).unwrap_or_default();
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

    /// The collection's `name` (absent: `None`, the key's absence reported by the caller).
    fn collection_name(&mut self, value: Option<&Value>) -> Option<String> {
        let name = value.and_then(|n| n.as_str()).filter(|n| is_collection_name(n)).map(str::to_string);
        if let Some(n) = value {
            if name.is_none() {
                let shown = match n {
                    Value::String(s) => format!("{s:?}"),
                    other => compact(other),
                };
                self.fail("name", format!("collection names match [a-z][a-z0-9_.-]{{0,63}}, got {shown}"));
            }
        }
        name
    }

    /// The collection's `budget` (`raw`): per window within lifetime.
    fn total_budget(&mut self, raw: &Value) -> Budget {
        let mut total = Budget::default();
        if let Some(b) = self.obj(raw, "budget", &["per_window", "lifetime"], &[]) {
            total.per_window = b.get("per_window").and_then(|v| self.cost(v, "budget.per_window"));
            total.lifetime = b.get("lifetime").and_then(|v| self.cost(v, "budget.lifetime"));
            self.le(total.per_window, total.lifetime, "budget.per_window", "budget.lifetime");
        }
        total
    }

    /// The `upload` settings (absent: the defaults): the least interval between uploads and the largest batch.
    fn upload(&mut self, value: Option<&Value>) -> (i64, i64) {
        let (mut interval, mut batch) = (86400i64, 1000i64);
        let empty = Value::Object(Map::new());
        if let Some(up) = self.obj(value.unwrap_or(&empty), "upload", &[], &["min_interval_seconds", "max_batch"]) {
            let v = up.get("min_interval_seconds").cloned().unwrap_or(Value::from(86400));
            interval = self.int(&v, "upload.min_interval_seconds", 0, MAX_SECONDS, SECONDS_WHY).unwrap_or(86400);
            let v = up.get("max_batch").cloned().unwrap_or(Value::from(1000));
            batch =
                self.int(&v, "upload.max_batch", 1, MAX_BATCH, "a client holds one batch in memory").unwrap_or(1000);
        }
        (interval, batch)
    }

    /// The `metrics` object (`raw`): at least one, each checked in the order of their names.
    fn metrics(&mut self, raw: &Value, total: &Budget) -> Vec<MetricSpec> {
        let mut metrics = Vec::new();
        let names: Vec<String> = raw.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        let names_ref: Vec<&str> = names.iter().map(String::as_str).collect();
        if self.obj(raw, "metrics", &[], &names_ref).is_some() {
            if names.is_empty() {
                self.fail("metrics", "a collection needs at least one metric");
            }
            let mut sorted = names.clone();
            sorted.sort();
            for mname in sorted {
                if let Some(m) = self.metric(&mname, &raw[mname.as_str()], total) {
                    metrics.push(m);
                }
            }
        }
        metrics
    }
}
