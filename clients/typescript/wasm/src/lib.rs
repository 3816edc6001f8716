//! The two-aggregator entry of the TypeScript client (`ldp-telemetry-client/dap`): the native client's
//! [`TaskFile`] and [`ReportBuilder`] compiled to WebAssembly, so that a browser or Node app makes the same DAP-09
//! reports, through the same Prio3 code (the `prio` crate: VDAF draft 18, and draft 08 through its 0.16.8 release)
//! and the same HPKE (the `hpke` crate), as the native and Python clients; and its `Poplar1ReportBuilder` for the
//! spec's `poplar1` string metrics ([`poplar1::Poplar1Task`]). Nothing of the cryptography is written here: this
//! crate moves bytes between JavaScript and those crates.
//!
//! Randomness (report IDs, sharding seeds, ephemeral keys) comes from `crypto.getRandomValues`, through getrandom's
//! JavaScript backend, at each report; [`DapTask::report_with_random`] takes it from the caller, for test vectors
//! only.

use ldp_client::dap::{ReportBuilder, TaskFile, REPORT_ID_LEN};
use ldp_client::prio3::{Measurement, Prio3Type};
use wasm_bindgen::prelude::*;

/// The getters of the members every task file has (the native client's `TaskFile` and `TaskMembers` hold the same
/// ones), for a task type whose `$($member).+` holds them: one place for both task types' JavaScript getters.
macro_rules! task_members_getters {
    ($task:ident, $($member:ident).+) => {
        #[wasm_bindgen]
        impl $task {
            /// The task ID in unpadded base64url, as in the leader's URL.
            #[wasm_bindgen(getter, js_name = taskId)]
            pub fn task_id(&self) -> String {
                self.$($member).+.task_id_text()
            }

            /// The collection's name.
            #[wasm_bindgen(getter)]
            pub fn app(&self) -> String {
                self.$($member).+.app.clone()
            }

            /// The metric.
            #[wasm_bindgen(getter)]
            pub fn metric(&self) -> String {
                self.$($member).+.metric.clone()
            }

            /// The leader's base URL.
            #[wasm_bindgen(getter, js_name = leaderUrl)]
            pub fn leader_url(&self) -> String {
                self.$($member).+.leader_url.clone()
            }

            /// The window's length in seconds.
            #[wasm_bindgen(getter, js_name = windowSeconds)]
            pub fn window_seconds(&self) -> f64 {
                self.$($member).+.window_seconds as f64
            }

            /// The seconds a report's time is rounded down to.
            #[wasm_bindgen(getter, js_name = timePrecision)]
            pub fn time_precision(&self) -> f64 {
                self.$($member).+.time_precision as f64
            }

            /// The most reports a device sends a window, `undefined` when the spec caps none (one assumed).
            #[wasm_bindgen(getter, js_name = reportsPerWindow)]
            pub fn reports_per_window(&self) -> Option<f64> {
                self.$($member).+.reports_per_window.map(|k| k as f64)
            }
        }
    };
}

mod poplar1;

/// A two-aggregator task as a device holds it: its task file, parsed and checked, and the builder of its reports.
#[wasm_bindgen]
pub struct DapTask {
    file: TaskFile,
    builder: ReportBuilder,
}

pub(crate) fn js_error(e: ldp_client::Error) -> JsError {
    JsError::new(&e.message())
}

task_members_getters!(DapTask, file);

#[wasm_bindgen]
impl DapTask {
    /// The task of a task file's JSON text (`ldp collect task` with `--leader-config` and `--helper-config`).
    #[wasm_bindgen(constructor)]
    pub fn new(task_json: &str) -> Result<DapTask, JsError> {
        let file = TaskFile::parse(task_json).map_err(js_error)?;
        let builder = file.report_builder().map_err(js_error)?;
        Ok(DapTask { file, builder })
    }

    /// `"two-aggregator+local"` when devices randomize first, else `"two-aggregator"`.
    #[wasm_bindgen(getter)]
    pub fn trust(&self) -> String {
        self.file.trust().to_owned()
    }

    /// The local protocol as JSON (`{"protocol": …, "params": {…}}`), `undefined` without local noise.
    #[wasm_bindgen(getter, js_name = localJson)]
    pub fn local_json(&self) -> Option<String> {
        self.file.local.as_ref().map(|v| v.to_string())
    }

    /// The VDAF draft: 8 or 18.
    #[wasm_bindgen(getter)]
    pub fn draft(&self) -> u32 {
        self.builder.client().draft().number()
    }

    /// The Prio3 type's name (`Prio3Count`, `Prio3Sum`, `Prio3SumVec`, `Prio3Histogram`).
    #[wasm_bindgen(getter, js_name = vdafType)]
    pub fn vdaf_type(&self) -> String {
        self.file.vdaf.name().to_owned()
    }

    /// Entries of a measurement's aggregate: the buckets or the vector's length, 1 for Count and Sum.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        match self.file.vdaf {
            Prio3Type::SumVec { length, .. } | Prio3Type::Histogram { length, .. } => length as u32,
            _ => 1,
        }
    }

    /// Bytes of randomness [`DapTask::report_with_random`] takes (sharding, then each seal's key material).
    #[wasm_bindgen(getter, js_name = randLength)]
    pub fn rand_length(&self) -> usize {
        self.builder.rand_len()
    }

    /// The DAP-09 report of `measurement` made at `time` (Unix seconds, rounded down to the task's precision), its
    /// randomness from `crypto.getRandomValues`: the body of `PUT {leaderUrl}/tasks/{taskId}/reports`.
    /// `measurement` is the bucket index (Histogram), 0 or 1 (Count), the value (Sum) or the entries (SumVec).
    pub fn report(&self, measurement: &[f64], time: f64) -> Result<Vec<u8>, JsError> {
        let m = self.measurement(measurement)?;
        self.builder
            .build(&m, seconds(time)?)
            .and_then(|r| r.encode())
            .map_err(js_error)
    }

    /// [`DapTask::report`] with the caller's report ID (16 bytes) and randomness ([`DapTask::rand_length`] bytes):
    /// the same inputs give the same bytes. For test vectors only (VDAF draft 18): randomness used twice, or not from
    /// a cryptographic generator, breaks the measurement's privacy.
    #[wasm_bindgen(js_name = reportWithRandom)]
    pub fn report_with_random(
        &self,
        measurement: &[f64],
        time: f64,
        report_id: &[u8],
        rand: &[u8],
    ) -> Result<Vec<u8>, JsError> {
        let m = self.measurement(measurement)?;
        self.builder
            .build_with_random(&m, seconds(time)?, self::report_id(report_id)?, rand)
            .and_then(|r| r.encode())
            .map_err(js_error)
    }

    fn measurement(&self, values: &[f64]) -> Result<Measurement, JsError> {
        let ints = values
            .iter()
            .map(|&v| integer(v))
            .collect::<Result<Vec<u64>, JsError>>()?;
        let one = || match ints.as_slice() {
            [v] => Ok(*v),
            _ => Err(JsError::new(&format!(
                "a {} measurement is one number",
                self.file.vdaf.name()
            ))),
        };
        Ok(match self.file.vdaf {
            Prio3Type::Count => Measurement::Count(match one()? {
                0 => false,
                1 => true,
                v => {
                    return Err(JsError::new(&format!(
                        "a Prio3Count measurement is 0 or 1, got {v}"
                    )))
                }
            }),
            Prio3Type::Sum { .. } => Measurement::Sum(one()?),
            Prio3Type::Histogram { .. } => Measurement::Histogram(one()? as usize),
            Prio3Type::SumVec { .. } => {
                Measurement::SumVec(ints.into_iter().map(u128::from).collect())
            }
            other => {
                return Err(JsError::new(&format!(
                    "{} measurements are not made here",
                    other.name()
                )))
            }
        })
    }
}

/// A non-negative integer a JavaScript number holds exactly.
fn integer(v: f64) -> Result<u64, JsError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 {
        Ok(v as u64)
    } else {
        Err(JsError::new(&format!(
            "a measurement's entries are integers from 0 to 2^53 - 1, got {v}"
        )))
    }
}

/// A report ID the caller gives: 16 bytes.
pub(crate) fn report_id(id: &[u8]) -> Result<&[u8; REPORT_ID_LEN], JsError> {
    id.try_into()
        .map_err(|_| JsError::new(&format!("a report ID is {REPORT_ID_LEN} bytes")))
}

pub(crate) fn seconds(time: f64) -> Result<u64, JsError> {
    integer(time.floor())
        .map_err(|_| JsError::new(&format!("a report's time is Unix seconds, got {time}")))
}
