//! The spec's `poplar1` string metrics (issue 89): [`Poplar1Task`], a Poplar1 task file as a device holds it, and
//! the native client's [`Poplar1ReportBuilder`] of its DAP-09 reports (Poplar1 of VDAF draft 18 through the `prio`
//! crate 0.18.1, HPKE through the `hpke` crate). Nothing of the cryptography is written here.
//!
//! A Poplar1 task file is an `ldp-task/1` file whose `vdaf` is `{"type": "Poplar1", "draft": 18, "bits": L,
//! "max_candidates": C[, "levels": m][, "threshold": T]}` (Python's `ldp.aggregators.task.Task`). Its members every
//! task has (the task ID, the metric, the window and time precision, the leader's URL, the local protocol, the
//! reports a window, both aggregators' HPKE configs) are read by the native client's [`TaskFile`], the one reader of
//! them; its `vdaf` member here, with `Task`'s checks. The context string is the task ID, as the aggregators'
//! (`Task.prio3()`: `Poplar1(bits, ctx=task_id)`).

use ldp_client::dap::{Poplar1ReportBuilder, TaskFile};
use ldp_client::poplar1::{Poplar1Client, MAX_BITS};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use crate::{js_error, report_id, seconds};

/// The `vdaf` members a Poplar1 task file may have (Python's `Task`: `bits` and `max_candidates` required).
const MEMBERS: [&str; 6] = [
    "type",
    "draft",
    "bits",
    "max_candidates",
    "levels",
    "threshold",
];

/// A Poplar1 task as a device holds it: its task file, parsed and checked, and the builder of its reports.
#[wasm_bindgen]
pub struct Poplar1Task {
    file: TaskFile,
    max_candidates: u64,
    builder: Poplar1ReportBuilder,
}

#[wasm_bindgen]
impl Poplar1Task {
    /// The task of a Poplar1 task file's JSON text (`ldp collect task` with `--leader-config` and
    /// `--helper-config`); an error naming the first problem.
    #[wasm_bindgen(constructor)]
    pub fn new(task_json: &str) -> Result<Poplar1Task, JsError> {
        let mut doc: Value = serde_json::from_str(task_json)
            .map_err(|e| JsError::new(&format!("a task file is JSON: {e}")))?;
        let members = doc
            .as_object_mut()
            .ok_or_else(|| JsError::new("a task file is a JSON object"))?;
        let vdaf = members.get("vdaf").cloned();
        // The other members are every task's: the native reader's, with a Prio3 type in the place of Poplar1.
        members.insert("vdaf".to_owned(), serde_json::json!({"type": "Prio3Count"}));
        let file = TaskFile::parse(&doc.to_string()).map_err(js_error)?;
        let (bits, max_candidates) = poplar1_vdaf(vdaf.as_ref())?;
        if file.local.is_some() {
            return Err(JsError::new(
                "a Poplar1 task has no local protocol: devices share the exact string",
            ));
        }
        let [leader, helper] = file.hpke_configs.clone().ok_or_else(|| {
            JsError::new("the task file has no hpke_configs: `ldp collect task --leader-config … --helper-config …`")
        })?;
        let client = Poplar1Client::new(bits, &file.task_id).map_err(js_error)?;
        let builder = Poplar1ReportBuilder::new(client, file.task_id, leader, helper)
            .and_then(|b| b.with_time_precision(file.time_precision))
            .map_err(js_error)?;
        Ok(Poplar1Task {
            file,
            max_candidates,
            builder,
        })
    }

    /// The task ID in unpadded base64url, as in the leader's URL.
    #[wasm_bindgen(getter, js_name = taskId)]
    pub fn task_id(&self) -> String {
        self.file.task_id_text()
    }

    /// The collection's name.
    #[wasm_bindgen(getter)]
    pub fn app(&self) -> String {
        self.file.app.clone()
    }

    /// The metric.
    #[wasm_bindgen(getter)]
    pub fn metric(&self) -> String {
        self.file.metric.clone()
    }

    /// The leader's base URL.
    #[wasm_bindgen(getter, js_name = leaderUrl)]
    pub fn leader_url(&self) -> String {
        self.file.leader_url.clone()
    }

    /// The window's length in seconds.
    #[wasm_bindgen(getter, js_name = windowSeconds)]
    pub fn window_seconds(&self) -> f64 {
        self.file.window_seconds as f64
    }

    /// The seconds a report's time is rounded down to.
    #[wasm_bindgen(getter, js_name = timePrecision)]
    pub fn time_precision(&self) -> f64 {
        self.file.time_precision as f64
    }

    /// The most reports a device sends a window, `undefined` when the spec caps none (one assumed).
    #[wasm_bindgen(getter, js_name = reportsPerWindow)]
    pub fn reports_per_window(&self) -> Option<f64> {
        self.file.reports_per_window.map(|k| k as f64)
    }

    /// The bit length of a measurement (a multiple of 8 for a spec's `poplar1` metric: its strings' bytes × 8).
    #[wasm_bindgen(getter)]
    pub fn bits(&self) -> u32 {
        self.builder.client().bits() as u32
    }

    /// The most candidate prefixes the collector asks a level for.
    #[wasm_bindgen(getter, js_name = maxCandidates)]
    pub fn max_candidates(&self) -> f64 {
        self.max_candidates as f64
    }

    /// Bytes of randomness [`Poplar1Task::report_with_random`] takes (sharding, then each seal's key material).
    #[wasm_bindgen(getter, js_name = randLength)]
    pub fn rand_length(&self) -> usize {
        self.builder.rand_len()
    }

    /// The DAP-09 report of the measurement `packed` (`ceil(bits / 8)` bytes, the first bit the most significant of
    /// the first byte) made at `time` (Unix seconds, rounded down to the task's precision), its randomness from
    /// `crypto.getRandomValues`: the body of `PUT {leaderUrl}/tasks/{taskId}/reports`.
    pub fn report(&self, packed: &[u8], time: f64) -> Result<Vec<u8>, JsError> {
        let m = self
            .builder
            .client()
            .measurement_from_bytes(packed)
            .map_err(js_error)?;
        self.builder
            .build(&m, seconds(time)?)
            .and_then(|r| r.encode())
            .map_err(js_error)
    }

    /// [`Poplar1Task::report`] with the caller's report ID (16 bytes) and randomness
    /// ([`Poplar1Task::rand_length`] bytes): the same inputs give the same bytes. For tests only: randomness used
    /// twice, or not from a cryptographic generator, breaks the measurement's privacy.
    #[wasm_bindgen(js_name = reportWithRandom)]
    pub fn report_with_random(
        &self,
        packed: &[u8],
        time: f64,
        id: &[u8],
        rand: &[u8],
    ) -> Result<Vec<u8>, JsError> {
        let m = self
            .builder
            .client()
            .measurement_from_bytes(packed)
            .map_err(js_error)?;
        self.builder
            .build_with_random(&m, seconds(time)?, report_id(id)?, rand)
            .and_then(|r| r.encode())
            .map_err(js_error)
    }
}

/// The `vdaf` member of a Poplar1 task file: its `bits` and `max_candidates`, checked as Python's `Task` checks
/// them (draft 18; positive integers, `bits` in [1, 256], `max_candidates` >= 2, `levels` in [1, bits]).
fn poplar1_vdaf(value: Option<&Value>) -> Result<(usize, u64), JsError> {
    let v = value
        .ok_or_else(|| JsError::new("the task file lacks vdaf"))?
        .as_object()
        .ok_or_else(|| JsError::new("vdaf must be an object"))?;
    if v.get("type").and_then(Value::as_str) != Some("Poplar1") {
        return Err(JsError::new(
            "not a Poplar1 task: its vdaf.type is not \"Poplar1\" (dapTask reads Prio3 tasks)",
        ));
    }
    if v.get("draft").is_some_and(|d| d.as_u64() != Some(18)) {
        return Err(JsError::new("a Poplar1 task is of VDAF draft 18"));
    }
    if let Some(extra) = v.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(JsError::new(&format!("vdaf: Poplar1 takes no {extra}")));
    }
    let bits = positive(v, "bits")?.ok_or_else(|| JsError::new("the task file lacks vdaf.bits"))?;
    let max_candidates = positive(v, "max_candidates")?
        .ok_or_else(|| JsError::new("the task file lacks vdaf.max_candidates"))?;
    let levels = positive(v, "levels")?.unwrap_or(1);
    positive(v, "threshold")?;
    if !(1..=MAX_BITS as u64).contains(&bits) || max_candidates < 2 || levels > bits {
        return Err(JsError::new(&format!(
            "Poplar1 takes bits in [1, {MAX_BITS}], max_candidates >= 2 and levels in [1, bits], got bits {bits}, \
             max_candidates {max_candidates}, levels {levels}"
        )));
    }
    Ok((bits as usize, max_candidates))
}

/// `v[name]` as a positive integer, `None` when absent.
fn positive(v: &Map<String, Value>, name: &str) -> Result<Option<u64>, JsError> {
    match v.get(name) {
        None => Ok(None),
        Some(x) => match x.as_u64() {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(JsError::new(&format!(
                "vdaf.{name} must be a positive integer, got {x}"
            ))),
        },
    }
}
