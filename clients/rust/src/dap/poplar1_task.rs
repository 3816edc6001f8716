//! [`Poplar1TaskFile`] (feature `poplar1`): a Poplar1 task's public file (`ldp-task/1`, `vdaf.type` `"Poplar1"`,
//! written by `ldp collect task` for a spec's `poplar1` metric) as a device reads it: the members every task has
//! ([`TaskMembers`]) and Poplar1's `vdaf` member, `{"type": "Poplar1", "draft": 18, "bits": L, "max_candidates": C,
//! "levels": m, "threshold": T}` (`levels` and `threshold` optional), checked as `ldp.aggregators.task.Task`
//! checks it: `bits` in [1, 256], `max_candidates` ≥ 2, `levels` in [1, bits], VDAF draft 18 and no local protocol
//! (devices share the exact string).

use serde_json::{Map, Value};

use super::task_file::{document, int, missing, sealing_configs, text_of, TaskMembers, POPLAR1};
use super::Poplar1ReportBuilder;
use crate::error::{Error, Result};
use crate::poplar1::{Poplar1Client, MAX_BITS};

/// A Poplar1 task file as a device reads it (module documentation).
#[derive(Clone, Debug)]
pub struct Poplar1TaskFile {
    /// The members every task file has.
    pub members: TaskMembers,
    /// The strings' length in bits.
    pub bits: usize,
    /// The most candidate prefixes one level of the collector's walk asks for.
    pub max_candidates: u64,
    /// The most levels a window is collected at (`None`: `bits`).
    pub levels: Option<u64>,
    /// The collector's threshold, when the task names one.
    pub threshold: Option<u64>,
}

impl Poplar1TaskFile {
    /// The Poplar1 task file in `text` (JSON); an [`Error::Value`] naming the first problem (a Prio3 task file is
    /// one: [`super::AnyTaskFile::parse`] reads either kind).
    pub fn parse(text: &str) -> Result<Self> {
        let doc = document(text)?;
        Self::from_members(&doc, TaskMembers::read(&doc)?)
    }

    /// The Poplar1 task file of `doc`, its common members read.
    pub(crate) fn from_members(doc: &Map<String, Value>, members: TaskMembers) -> Result<Self> {
        let v = doc.get("vdaf").ok_or_else(|| missing("vdaf"))?;
        let v = v.as_object().ok_or_else(|| Error::value("vdaf must be an object"))?;
        let kind = text_of(v, "type")?;
        if kind != POPLAR1 {
            return Err(Error::value(format!("vdaf.type {kind:?} is not a Poplar1 task's (read it with TaskFile)")));
        }
        const KEYS: [&str; 6] = ["type", "draft", "bits", "max_candidates", "levels", "threshold"];
        if let Some(extra) = v.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::value(format!("vdaf: Poplar1 takes no {extra}")));
        }
        if !matches!(v.get("draft").map(Value::as_u64), None | Some(Some(18))) {
            return Err(Error::value("vdaf.draft of a Poplar1 task must be 18"));
        }
        if members.local.is_some() {
            return Err(Error::value("a Poplar1 task has no local protocol: devices share the exact string"));
        }
        let bits = int(v, "bits", MAX_BITS as u64)?.ok_or_else(|| missing("vdaf.bits"))?;
        let max_candidates = int(v, "max_candidates", u64::MAX)?.ok_or_else(|| missing("vdaf.max_candidates"))?;
        if max_candidates < 2 {
            return Err(Error::value(format!("vdaf.max_candidates must be at least 2, got {max_candidates}")));
        }
        Ok(Poplar1TaskFile {
            members,
            bits: bits as usize, // at most MAX_BITS
            max_candidates,
            levels: int(v, "levels", bits)?,
            threshold: int(v, "threshold", u64::MAX)?,
        })
    }

    /// The builder of this task's reports: its Poplar1 client (the context string the task ID, as under every
    /// VDAF draft 18 task), both configs and the time precision. Refused when the file has no `hpke_configs`.
    pub fn report_builder(&self) -> Result<Poplar1ReportBuilder> {
        let m = &self.members;
        let [leader, helper] = sealing_configs(&m.hpke_configs)?;
        let client = Poplar1Client::new(self.bits, &m.task_id)?;
        Poplar1ReportBuilder::new(client, m.task_id, leader, helper)?.with_time_precision(m.time_precision)
    }
}

impl From<Poplar1TaskFile> for super::AnyTaskFile {
    fn from(t: Poplar1TaskFile) -> Self {
        super::AnyTaskFile::Poplar1(t)
    }
}
