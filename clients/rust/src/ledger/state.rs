//! Everything one device keeps for one collection.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::value::{int_of, is_int};

/// A running total of one scope (a metric, or `*` for the collection): the current window's (ε, δ) and the
/// lifetime's.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeTotal {
    /// The window the window totals belong to.
    pub window: i64,
    /// ε spent in that window.
    pub window_epsilon: f64,
    /// δ spent in that window.
    pub window_delta: f64,
    /// ε spent over the lifetime.
    pub lifetime_epsilon: f64,
    /// δ spent over the lifetime.
    pub lifetime_delta: f64,
}

/// A pinned upload part: its batch id and the outbox ids `first..=last` it holds (contiguous, oldest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedPart {
    /// The batch id (the `Ldp-Batch-Id` header).
    pub id: String,
    /// The first outbox id.
    pub first: u64,
    /// The last outbox id.
    pub last: u64,
}

/// 32 bytes of key material (the device secret, the salt), which `Debug` never shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key(pub(crate) [u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<32 bytes>)")
    }
}

/// The keys of a device that collects: the device secret (each memoizing metric's secret derives from it; never
/// sent) and the salt (memo keys, change values and batch ids are keyed hashes under it).
#[derive(Clone, Copy)]
pub(crate) struct DeviceKeys {
    pub(crate) secret: [u8; 32],
    pub(crate) salt: [u8; 32],
}

impl std::fmt::Debug for DeviceKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceKeys(<secret>)")
    }
}

/// Everything one device keeps for one collection, in one document changed only inside a store transaction: the
/// device secret (each memoizing metric's secret derives from it; never sent) and the upload salt, the ledger's
/// clock and totals, the memoized and charge-on-change records (keyed hashes, never the values), the metrics'
/// cohorts, the pinned upload parts, and the outbox's bookkeeping. The report lines themselves are kept by the
/// store (an append-only log in a `FileStore`), so recording one costs the same however many wait.
///
/// A device that opted out keeps no device secret (`"secret": null` and the marker `"opted_out": true` in the
/// document), no cohorts, memo or change records and no pinned parts; its budget totals stay, and so does the salt
/// (it keys batch ids and the ledger's keyed records, which opting out deletes), as in the other ldp clients. A state
/// an older version of this client opted out holds no salt either (`"salt": null`): opting in draws both.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceState {
    /// The collection's name.
    pub collection: String,
    /// The device secret: `None` once the device opted out.
    pub(crate) secret: Option<Key>,
    /// The salt: `None` only in a state an older version of this client opted out.
    pub(crate) salt: Option<Key>,
    /// The latest clock reading seen (Unix seconds): the ledger's clock never goes back.
    pub clock: Option<f64>,
    pub(crate) totals: Vec<(String, ScopeTotal)>,
    pub(crate) memo: Vec<(String, (u64, f64, f64))>,
    pub(crate) changes: Vec<(String, (String, u64))>,
    pub(crate) cohorts: Vec<(String, u32)>,
    pub(crate) parts: Vec<PinnedPart>,
    /// The next outbox id.
    pub next_id: u64,
    /// When the last batch was acknowledged (Unix seconds).
    pub last_upload: Option<f64>,
    pub(crate) uploaded: Vec<(String, u64)>,
    /// Reports deleted unsent by opting out, per metric.
    pub(crate) discarded: Vec<(String, u64)>,
}

const FORMAT: i64 = 1;

fn damaged(what: impl std::fmt::Display) -> Error {
    Error::Ledger(format!("the client's state is damaged: {what}"))
}

pub(crate) fn find<'a, T>(v: &'a [(String, T)], key: &str) -> Option<&'a T> {
    v.iter().find(|(k, _)| k == key).map(|(_, x)| x)
}

pub(crate) fn find_mut<'a, T>(v: &'a mut [(String, T)], key: &str) -> Option<&'a mut T> {
    v.iter_mut().find(|(k, _)| k == key).map(|(_, x)| x)
}

/// Adds `n` to the count of `key` (a count per metric: uploaded, discarded), starting it at 0.
pub(crate) fn count_up(counts: &mut Vec<(String, u64)>, key: &str, n: u64) {
    match find_mut(counts, key) {
        Some(c) => *c += n,
        None => counts.push((key.to_string(), n)),
    }
}

impl DeviceState {
    pub(crate) fn new(collection: &str, secret: [u8; 32], salt: [u8; 32]) -> Self {
        DeviceState {
            collection: collection.to_string(),
            secret: Some(Key(secret)),
            salt: Some(Key(salt)),
            clock: None,
            totals: Vec::new(),
            memo: Vec::new(),
            changes: Vec::new(),
            cohorts: Vec::new(),
            parts: Vec::new(),
            next_id: 1,
            last_upload: None,
            uploaded: Vec::new(),
            discarded: Vec::new(),
        }
    }

    /// Whether the device opted out of collection.
    pub fn opted_out(&self) -> bool {
        self.secret.is_none()
    }

    /// The keys, or [`Error::OptedOut`] when the device opted out.
    pub(crate) fn keys(&self) -> Result<DeviceKeys> {
        match (self.secret, self.salt) {
            (Some(secret), Some(salt)) => Ok(DeviceKeys { secret: secret.0, salt: salt.0 }),
            _ => Err(Error::OptedOut(format!(
                "this device opted out of collection {:?}: nothing is recorded until opt_in()",
                self.collection
            ))),
        }
    }

    /// Opts out: deletes the device secret, cohorts, memo and change records and pinned parts; keeps the salt and
    /// the budget totals. (The caller drops the pending reports, counted as discarded, in the same transaction.)
    pub(crate) fn forget(&mut self) {
        self.secret = None;
        self.memo.clear();
        self.changes.clear();
        self.cohorts.clear();
        self.parts.clear();
    }

    /// Opts in again with the fresh device `secret`; `salt` is drawn only for a state that kept none (one an older
    /// version of this client opted out). Nothing happens on a device that did not opt out.
    pub(crate) fn renew(&mut self, secret: [u8; 32], salt: impl FnOnce() -> Result<[u8; 32]>) -> Result<()> {
        if !self.opted_out() {
            return Ok(());
        }
        if self.salt.is_none() {
            self.salt = Some(Key(salt()?));
        }
        self.secret = Some(Key(secret));
        Ok(())
    }

    /// Reports acknowledged by the collector so far, per metric.
    pub fn uploaded(&self) -> &[(String, u64)] {
        &self.uploaded
    }

    /// Reports deleted unsent by opting out so far, per metric.
    pub fn discarded(&self) -> &[(String, u64)] {
        &self.discarded
    }

    /// The pinned upload parts, oldest first.
    pub fn parts(&self) -> &[PinnedPart] {
        &self.parts
    }

    pub(crate) fn to_value(&self) -> Value {
        fn f(x: f64) -> Value {
            crate::value::float_value(x)
        }
        fn obj<T>(v: &[(String, T)], g: impl Fn(&T) -> Value) -> Value {
            Value::Object(v.iter().map(|(k, x)| (k.clone(), g(x))).collect())
        }
        let mut m = Map::new();
        m.insert("format".into(), Value::from(FORMAT));
        m.insert("collection".into(), Value::String(self.collection.clone()));
        // The keys in the order the Kotlin client writes them.
        let hex = |k: &Option<Key>| k.map_or(Value::Null, |k| Value::String(crate::bytes::hex(&k.0)));
        m.insert("secret".into(), hex(&self.secret));
        m.insert("opted_out".into(), Value::Bool(self.opted_out()));
        m.insert("salt".into(), hex(&self.salt));
        m.insert("clock".into(), self.clock.map(f).unwrap_or(Value::Null));
        m.insert(
            "totals".into(),
            obj(&self.totals, |t| {
                Value::Array(vec![
                    Value::from(t.window),
                    f(t.window_epsilon),
                    f(t.window_delta),
                    f(t.lifetime_epsilon),
                    f(t.lifetime_delta),
                ])
            }),
        );
        m.insert("memo".into(), obj(&self.memo, |(n, e, d)| Value::Array(vec![Value::from(*n), f(*e), f(*d)])));
        m.insert(
            "changes".into(),
            obj(&self.changes, |(v, epoch)| Value::Array(vec![Value::String(v.clone()), Value::from(*epoch)])),
        );
        m.insert("cohorts".into(), obj(&self.cohorts, |c| Value::from(*c)));
        m.insert(
            "parts".into(),
            Value::Array(
                self.parts
                    .iter()
                    .map(|p| Value::Array(vec![Value::String(p.id.clone()), Value::from(p.first), Value::from(p.last)]))
                    .collect(),
            ),
        );
        m.insert("next_id".into(), Value::from(self.next_id));
        m.insert("last_upload".into(), self.last_upload.map(f).unwrap_or(Value::Null));
        m.insert("uploaded".into(), obj(&self.uploaded, |n| Value::from(*n)));
        m.insert("discarded".into(), obj(&self.discarded, |n| Value::from(*n)));
        Value::Object(m)
    }

    /// The state from its JSON document; [`Error::Ledger`] if anything is missing or malformed.
    pub(crate) fn from_value(doc: &Value) -> Result<Self> {
        let d = doc.as_object().ok_or_else(|| damaged("the document is not an object"))?;
        if !(is_int(&d["format"]) && int_of(&d["format"]) == Some(FORMAT as i128)) {
            return Err(damaged(format!("format {} (this client reads format {FORMAT})", d["format"])));
        }
        let d = Doc(d);
        let collection = d.0.get("collection").and_then(Value::as_str).ok_or_else(|| damaged("collection"))?;
        let (secret, salt) = d.keys()?;
        let mut s = DeviceState::new(collection, [0; 32], [0; 32]);
        (s.secret, s.salt) = (secret, salt);
        s.clock = d.optional_num("clock")?;
        d.read_budget(&mut s)?;
        d.read_outbox(&mut s)?;
        Ok(s)
    }
}

/// A state's JSON document, read field by field: [`Error::Ledger`] naming what is missing or malformed.
struct Doc<'a>(&'a Map<String, Value>);

impl Doc<'_> {
    /// The device secret and the salt (an opted-out state holds no secret, and a salt unless an older version of
    /// this client opted it out).
    fn keys(&self) -> Result<(Option<Key>, Option<Key>)> {
        let opted_out = match self.0.get("opted_out") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(damaged("opted_out is not a boolean")),
        };
        if !opted_out {
            return Ok((Some(self.hex32("secret")?), Some(self.hex32("salt")?)));
        }
        if self.0.get("secret") != Some(&Value::Null) {
            return Err(damaged("an opted-out state holds a device secret"));
        }
        // The salt is kept; a state an older version of this client opted out holds none.
        let salt = match self.0.get("salt") {
            Some(Value::Null) => None,
            _ => Some(self.hex32("salt")?),
        };
        Ok((None, salt))
    }

    /// The budget's records: the totals of each scope, the memoized keys, the change streams and the cohorts.
    fn read_budget(&self, s: &mut DeviceState) -> Result<()> {
        for (k, v) in self.obj("totals")? {
            let t = list(v, "totals", 5)?;
            s.totals.push((
                k.clone(),
                ScopeTotal {
                    window: sint(&t[0], "window")?,
                    window_epsilon: num(&t[1], "ε")?,
                    window_delta: num(&t[2], "δ")?,
                    lifetime_epsilon: num(&t[3], "ε")?,
                    lifetime_delta: num(&t[4], "δ")?,
                },
            ));
        }
        for (k, v) in self.obj("memo")? {
            let m = list(v, "memo", 3)?;
            s.memo.push((k.clone(), (uint(&m[0], "reports")?, num(&m[1], "ε")?, num(&m[2], "δ")?)));
        }
        for (k, v) in self.obj("changes")? {
            let c = list(v, "changes", 2)?;
            let value = c[0].as_str().ok_or_else(|| damaged("changes"))?.to_string();
            s.changes.push((k.clone(), (value, uint(&c[1], "epoch")?)));
        }
        for (k, v) in self.obj("cohorts")? {
            let c = uint(v, "cohort")?;
            s.cohorts.push((k.clone(), u32::try_from(c).map_err(|_| damaged("cohort"))?));
        }
        Ok(())
    }

    /// The outbox's records: the pinned parts, the next id, the last upload, and the reports uploaded and discarded
    /// per metric.
    fn read_outbox(&self, s: &mut DeviceState) -> Result<()> {
        for p in self.0.get("parts").and_then(Value::as_array).ok_or_else(|| damaged("parts"))? {
            let q = list(p, "part", 3)?;
            let id = q[0].as_str().ok_or_else(|| damaged("part id"))?.to_string();
            s.parts.push(PinnedPart { id, first: uint(&q[1], "part")?, last: uint(&q[2], "part")? });
        }
        s.next_id = uint(self.0.get("next_id").unwrap_or(&Value::Null), "next_id")?;
        s.last_upload = self.optional_num("last_upload")?;
        for (k, v) in self.obj("uploaded")? {
            s.uploaded.push((k.clone(), uint(v, "uploaded")?));
        }
        // Absent in a state written before opting out counted what it deleted.
        if self.0.contains_key("discarded") {
            for (k, v) in self.obj("discarded")? {
                s.discarded.push((k.clone(), uint(v, "discarded")?));
            }
        }
        Ok(())
    }

    /// 32 bytes written as 64 lowercase hex digits.
    fn hex32(&self, key: &str) -> Result<Key> {
        let s = self.0.get(key).and_then(Value::as_str).ok_or_else(|| damaged(key))?;
        if s.len() != 64 || !s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
            return Err(damaged(key));
        }
        let v = crate::bytes::from_hex(s).map_err(|_| damaged(key))?;
        Ok(Key(v.try_into().map_err(|_| damaged(key))?))
    }

    /// A number, or `None` when absent or null.
    fn optional_num(&self, key: &str) -> Result<Option<f64>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Ok(Some(num(v, key)?)),
        }
    }

    fn obj(&self, key: &str) -> Result<&Map<String, Value>> {
        self.0.get(key).and_then(Value::as_object).ok_or_else(|| damaged(format!("{key} is not an object")))
    }
}

/// A number that is not NaN.
fn num(v: &Value, what: &str) -> Result<f64> {
    match v {
        Value::Number(_) => {
            Ok(crate::value::f64_of(v)).and_then(|x| if x.is_nan() { Err(damaged(what)) } else { Ok(x) })
        }
        _ => Err(damaged(format!("{what} is not a number"))),
    }
}

fn uint(v: &Value, what: &str) -> Result<u64> {
    int_of(v).and_then(|i| u64::try_from(i).ok()).ok_or_else(|| damaged(format!("{what} is not an integer >= 0")))
}

fn sint(v: &Value, what: &str) -> Result<i64> {
    int_of(v).and_then(|i| i64::try_from(i).ok()).ok_or_else(|| damaged(format!("{what} is not an integer")))
}

/// A list of `n` values.
fn list(v: &Value, what: &str, n: usize) -> Result<Vec<Value>> {
    match v {
        Value::Array(a) if a.len() == n => Ok(a.clone()),
        _ => Err(damaged(format!("{what} is not a list of {n}"))),
    }
}
