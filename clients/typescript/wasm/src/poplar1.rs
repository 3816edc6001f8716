//! The spec's `poplar1` string metrics (issue 89): [`Poplar1Task`], a Poplar1 task file as a device holds it, and
//! the native client's [`Poplar1ReportBuilder`] of its DAP-09 reports (Poplar1 of VDAF draft 18 through the `prio`
//! crate 0.18.1, HPKE through the `hpke` crate). Nothing of the cryptography is written here.
//!
//! A Poplar1 task file is an `ldp-task/1` file whose `vdaf` is `{"type": "Poplar1", "draft": 18, "bits": L,
//! "max_candidates": C[, "levels": m][, "threshold": T]}` (Python's `ldp.aggregators.task.Task`), read and checked
//! whole by the native client's [`Poplar1TaskFile`], the one reader of it (its members every task has by
//! `TaskMembers`, as a Prio3 task file's). The context string is the task ID, as the aggregators'
//! (`Task.prio3()`: `Poplar1(bits, ctx=task_id)`).

use ldp_client::dap::{Poplar1ReportBuilder, Poplar1TaskFile};
use wasm_bindgen::prelude::*;

use crate::{js_error, report_id, seconds};

/// A Poplar1 task as a device holds it: its task file, parsed and checked by the native client
/// ([`Poplar1TaskFile`]), and the builder of its reports.
#[wasm_bindgen]
pub struct Poplar1Task {
    file: Poplar1TaskFile,
    builder: Poplar1ReportBuilder,
}

task_members_getters!(Poplar1Task, file.members);

#[wasm_bindgen]
impl Poplar1Task {
    /// The task of a Poplar1 task file's JSON text (`ldp collect task` with `--leader-config` and
    /// `--helper-config`); an error naming the first problem.
    #[wasm_bindgen(constructor)]
    pub fn new(task_json: &str) -> Result<Poplar1Task, JsError> {
        let file = Poplar1TaskFile::parse(task_json).map_err(js_error)?;
        let builder = file.report_builder().map_err(js_error)?;
        Ok(Poplar1Task { file, builder })
    }

    /// The bit length of a measurement (a multiple of 8 for a spec's `poplar1` metric: its strings' bytes × 8).
    #[wasm_bindgen(getter)]
    pub fn bits(&self) -> u32 {
        self.builder.client().bits() as u32
    }

    /// The most candidate prefixes the collector asks a level for.
    #[wasm_bindgen(getter, js_name = maxCandidates)]
    pub fn max_candidates(&self) -> f64 {
        self.file.max_candidates as f64
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
