//! [`TaskFile`]: a two-aggregator task's public file (`ldp-task/1`, written by `ldp collect task`) as a device reads
//! it: the task ID, the metric, the Prio3 type and VDAF draft, the window and time precision, the leader's URL, the
//! local protocol (when devices randomize first), the reports a device sends a window, and both aggregators' public
//! HPKE configs, which make its [`ReportBuilder`].
//!
//! The members a device does not use (the noise, the minimum batch size, the collector's config, the central target,
//! the labels) are left unread, so that a task file of a later version with more server-side members still loads;
//! every member a device uses is checked as `ldp.aggregators.task.Task` checks it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::{HpkeConfig, ReportBuilder, TASK_ID_LEN};
use crate::error::{Error, Result};
use crate::prio3::{Prio3Client, Prio3Type, VdafDraft};

/// The `format` member of a task file.
pub const TASK_FORMAT: &str = "ldp-task/1";

/// A task file as a device reads it (module documentation).
#[derive(Clone, Debug)]
pub struct TaskFile {
    /// The task ID: DAP's, in the leader's URL, and (VDAF draft 18) the Prio3 context string.
    pub task_id: [u8; TASK_ID_LEN],
    /// The collection (the spec's `name`).
    pub app: String,
    /// The metric.
    pub metric: String,
    /// The Prio3 type and its parameters (the chunk length the file's, else the draft's recommended one).
    pub vdaf: Prio3Type,
    /// The VDAF draft devices and both aggregators speak.
    pub draft: VdafDraft,
    /// The window's length in seconds (the spec's `window_seconds`).
    pub window_seconds: u64,
    /// The seconds a report's time is rounded down to; divides the window.
    pub time_precision: u64,
    /// The leader's base URL.
    pub leader_url: String,
    /// The local protocol, `{"protocol": …, "params": {…}}`, when devices randomize first (`two-aggregator+local`).
    pub local: Option<Value>,
    /// The most reports of the metric a device sends a window (`None`: the spec caps none, one assumed).
    pub reports_per_window: Option<u64>,
    /// The leader's and the helper's configs, which devices seal to (`None`: not in the file).
    pub hpke_configs: Option<[HpkeConfig; 2]>,
}

impl TaskFile {
    /// The task file in `text` (JSON); an [`Error::Value`] naming the first problem. A Poplar1 task file is refused
    /// ([`AnyTaskFile::parse`] reads either kind).
    pub fn parse(text: &str) -> Result<Self> {
        let doc = document(text)?;
        Self::from_members(&doc, TaskMembers::read(&doc)?)
    }

    /// The Prio3 task file of `doc`, its common members `m` read.
    fn from_members(doc: &Map<String, Value>, m: TaskMembers) -> Result<Self> {
        let (vdaf, draft) = vdaf(doc.get("vdaf").ok_or_else(|| missing("vdaf"))?)?;
        let TaskMembers {
            task_id,
            app,
            metric,
            window_seconds,
            time_precision,
            leader_url,
            local,
            reports_per_window,
            hpke_configs,
        } = m;
        Ok(TaskFile {
            task_id,
            app,
            metric,
            vdaf,
            draft,
            window_seconds,
            time_precision,
            leader_url,
            local,
            reports_per_window,
            hpke_configs,
        })
    }

    /// `"two-aggregator+local"` when devices randomize first, else `"two-aggregator"`.
    pub fn trust(&self) -> &'static str {
        if self.local.is_some() {
            "two-aggregator+local"
        } else {
            "two-aggregator"
        }
    }

    /// The task ID in unpadded base64url, as in the leader's URL.
    pub fn task_id_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.task_id)
    }

    /// The builder of this task's reports: its Prio3 client (the context string the task ID under draft 18), both
    /// configs and the time precision. Refused when the file has no `hpke_configs`.
    pub fn report_builder(&self) -> Result<ReportBuilder> {
        let [leader, helper] = sealing_configs(&self.hpke_configs)?;
        let ctx: &[u8] = if self.draft.has_ctx() { &self.task_id } else { b"" };
        let client = Prio3Client::with_draft(self.draft, self.vdaf, ctx)?;
        ReportBuilder::new(client, self.task_id, leader, helper)?.with_time_precision(self.time_precision)
    }
}

/// The members of a task file every VDAF's has, as a device reads them: the [`TaskFile`] fields of the same names,
/// and a Poplar1 task file's `members` (feature `poplar1`).
#[derive(Clone, Debug)]
pub struct TaskMembers {
    /// The task ID: DAP's, in the leader's URL, and (VDAF draft 18) the VDAF's context string.
    pub task_id: [u8; TASK_ID_LEN],
    /// The collection (the spec's `name`).
    pub app: String,
    /// The metric.
    pub metric: String,
    /// The window's length in seconds (the spec's `window_seconds`).
    pub window_seconds: u64,
    /// The seconds a report's time is rounded down to; divides the window.
    pub time_precision: u64,
    /// The leader's base URL.
    pub leader_url: String,
    /// The local protocol, `{"protocol": …, "params": {…}}`, when devices randomize first (`two-aggregator+local`).
    pub local: Option<Value>,
    /// The most reports of the metric a device sends a window (`None`: the spec caps none, one assumed).
    pub reports_per_window: Option<u64>,
    /// The leader's and the helper's configs, which devices seal to (`None`: not in the file).
    pub hpke_configs: Option<[HpkeConfig; 2]>,
}

impl TaskMembers {
    /// The members of the task document `doc` (its `format` checked): the first problem an [`Error::Value`].
    pub(crate) fn read(doc: &Map<String, Value>) -> Result<Self> {
        let id = b64(text_of(doc, "task_id")?, "task_id")?;
        let task_id: [u8; TASK_ID_LEN] =
            id.try_into().map_err(|_| Error::value(format!("task_id must be {TASK_ID_LEN} bytes")))?;
        let window_seconds = int(doc, "window_seconds", 366 * 86_400)?.ok_or_else(|| missing("window_seconds"))?;
        let time_precision = int(doc, "time_precision", window_seconds)?.unwrap_or(1);
        if window_seconds % time_precision != 0 {
            return Err(Error::value("time_precision must divide window_seconds"));
        }
        let leader_url = text_of(doc, "leader_url")?.to_owned();
        if !(leader_url.starts_with("http://") || leader_url.starts_with("https://")) {
            return Err(Error::value(format!("leader_url must be an http(s) URL, got {leader_url:?}")));
        }
        let local = match doc.get("local") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(_) => return Err(Error::value("local must be an object or null")),
        };
        Ok(TaskMembers {
            task_id,
            app: text_of(doc, "app")?.to_owned(),
            metric: text_of(doc, "metric")?.to_owned(),
            window_seconds,
            time_precision,
            leader_url,
            local,
            reports_per_window: int(doc, "reports_per_window", 1_000_000_000)?,
            hpke_configs: hpke_configs(doc.get("hpke_configs"))?,
        })
    }

    /// The task ID in unpadded base64url, as in the leader's URL.
    pub fn task_id_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.task_id)
    }
}

/// A task file of either kind a client records with: a Prio3 task's, or (feature `poplar1`) a Poplar1 task's,
/// told apart by its `vdaf.type`.
#[derive(Clone, Debug)]
pub enum AnyTaskFile {
    /// A Prio3 task (`Prio3Count`, `Prio3Sum`, `Prio3SumVec`, `Prio3Histogram`).
    Prio3(TaskFile),
    /// A Poplar1 task (feature `poplar1`): strings, for heavy hitters.
    #[cfg(feature = "poplar1")]
    Poplar1(super::Poplar1TaskFile),
}

impl AnyTaskFile {
    /// The task file in `text` (JSON), of the kind its `vdaf.type` names; an [`Error::Value`] naming the first
    /// problem (a Poplar1 task in a build without the `poplar1` feature is one).
    pub fn parse(text: &str) -> Result<Self> {
        let doc = document(text)?;
        let members = TaskMembers::read(&doc)?;
        let kind = doc.get("vdaf").and_then(|v| v.get("type")).and_then(Value::as_str);
        #[cfg(feature = "poplar1")]
        if kind == Some(POPLAR1) {
            return super::Poplar1TaskFile::from_members(&doc, members).map(AnyTaskFile::Poplar1);
        }
        if kind == Some(POPLAR1) {
            return Err(Error::value(POPLAR1_NEEDS_FEATURE));
        }
        TaskFile::from_members(&doc, members).map(AnyTaskFile::Prio3)
    }

    /// The task's metric.
    pub fn metric(&self) -> &str {
        match self {
            AnyTaskFile::Prio3(t) => &t.metric,
            #[cfg(feature = "poplar1")]
            AnyTaskFile::Poplar1(t) => &t.members.metric,
        }
    }
}

impl From<TaskFile> for AnyTaskFile {
    fn from(t: TaskFile) -> Self {
        AnyTaskFile::Prio3(t)
    }
}

/// The `vdaf.type` of a Poplar1 task.
pub(crate) const POPLAR1: &str = "Poplar1";

const POPLAR1_NEEDS_FEATURE: &str =
    "vdaf.type \"Poplar1\" is not a Prio3 type: a Poplar1 task is recorded by a build with the `poplar1` feature";

/// The task document in `text`: a JSON object of format [`TASK_FORMAT`].
pub(crate) fn document(text: &str) -> Result<Map<String, Value>> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Error::value(format!("a task file is JSON: {e}")))?;
    let Value::Object(doc) = doc else { return Err(Error::value("a task file is a JSON object")) };
    if doc.get("format").and_then(Value::as_str) != Some(TASK_FORMAT) {
        return Err(Error::value(format!("not an {TASK_FORMAT} task file")));
    }
    Ok(doc)
}

/// The leader's and the helper's configs a device seals to: refused when the file has none.
pub(crate) fn sealing_configs(configs: &Option<[HpkeConfig; 2]>) -> Result<[HpkeConfig; 2]> {
    configs.clone().ok_or_else(|| {
        Error::value("the task file has no hpke_configs: `ldp collect task --leader-config … --helper-config …`")
    })
}

pub(crate) fn missing(name: &str) -> Error {
    Error::value(format!("the task file lacks {name}"))
}

pub(crate) fn text_of<'a>(doc: &'a Map<String, Value>, name: &str) -> Result<&'a str> {
    doc.get(name).ok_or_else(|| missing(name))?.as_str().ok_or_else(|| Error::value(format!("{name} must be text")))
}

/// `doc[name]` as an integer in `[1, top]`, `None` when absent (or null).
pub(crate) fn int(doc: &Map<String, Value>, name: &str, top: u64) -> Result<Option<u64>> {
    match doc.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=top).contains(&n) => Ok(Some(n)),
            _ => Err(Error::value(format!("{name} must be an integer in [1, {top}], got {v}"))),
        },
    }
}

fn b64(text: &str, what: &str) -> Result<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|e| Error::value(format!("{what} is not base64url: {e}")))
}

/// The `vdaf` member: `{"type": …, "draft": 8 | 18, …parameters}` (a file without `draft` is draft 18; a
/// Prio3SumVec or Prio3Histogram without `chunk_length` takes the draft's recommended one).
fn vdaf(value: &Value) -> Result<(Prio3Type, VdafDraft)> {
    let v = value.as_object().ok_or_else(|| Error::value("vdaf must be an object"))?;
    let draft = match v.get("draft").map(Value::as_u64) {
        None | Some(Some(18)) => VdafDraft::Draft18,
        Some(Some(8)) => VdafDraft::Draft08,
        _ => return Err(Error::value("vdaf.draft must be 8 or 18")),
    };
    let kind = text_of(v, "type")?;
    let allowed: &[&str] =
        match kind {
            "Prio3Count" => &[],
            "Prio3Sum" => &["max_measurement"],
            "Prio3SumVec" => &["length", "max_measurement", "chunk_length"],
            "Prio3Histogram" => &["length", "chunk_length"],
            POPLAR1 if cfg!(feature = "poplar1") => return Err(Error::value(
                "vdaf.type \"Poplar1\" is not a Prio3 type: a Poplar1 task is read by Poplar1TaskFile or AnyTaskFile \
                 (in C, ldp_client_add_task takes it)",
            )),
            POPLAR1 => return Err(Error::value(POPLAR1_NEEDS_FEATURE)),
            _ => return Err(Error::value(format!("vdaf.type {kind:?} is not a Prio3 type this client makes"))),
        };
    if let Some(extra) = v.keys().find(|k| !["type", "draft"].contains(&k.as_str()) && !allowed.contains(&k.as_str())) {
        return Err(Error::value(format!("vdaf: {kind} takes no {extra}")));
    }
    let need = |name: &str| int(v, name, u64::MAX)?.ok_or_else(|| missing(&format!("vdaf.{name}")));
    let size = |n: u64| usize::try_from(n).map_err(|_| Error::value("a vdaf parameter is too large"));
    let typ = match kind {
        "Prio3Count" => Prio3Type::Count,
        "Prio3Sum" => Prio3Type::Sum { max_measurement: need("max_measurement")? },
        "Prio3SumVec" => {
            let (max, length) = (u128::from(need("max_measurement")?), size(need("length")?)?);
            match int(v, "chunk_length", u64::MAX)? {
                Some(c) => Prio3Type::SumVec { max_measurement: max, length, chunk_length: size(c)? },
                None => Prio3Type::sum_vec_for(draft, max, length),
            }
        }
        _ => {
            let length = size(need("length")?)?;
            match int(v, "chunk_length", u64::MAX)? {
                Some(c) => Prio3Type::Histogram { length, chunk_length: size(c)? },
                None => Prio3Type::histogram_for(draft, length),
            }
        }
    };
    Ok((typ, draft))
}

fn hpke_configs(value: Option<&Value>) -> Result<Option<[HpkeConfig; 2]>> {
    let v = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(v)) if v.len() == 2 => v,
        Some(_) => return Err(Error::value("hpke_configs must be an object of the leader's and the helper's config")),
    };
    let config = |role: &str| -> Result<HpkeConfig> {
        let bytes = b64(text_of(v, role)?, &format!("hpke_configs.{role}"))?;
        HpkeConfig::decode(&bytes)
    };
    Ok(Some([config("leader")?, config("helper")?]))
}
