//! Reading what is committed: `state.json` (the device's state and the outbox's cursor) and the records of an outbox
//! log.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde_json::Value;

use super::disk::io_err;
use super::tx::Cursor;
use super::FileStore;
use crate::error::{Error, Result};
use crate::ledger::store::{outbox_bytes, OutboxRecord};
use crate::ledger::DeviceState;
use crate::value::int_of;

impl FileStore {
    /// The committed state and outbox; `None` for a folder that holds none (and no trace of one).
    pub(super) fn read_state(&self) -> Result<Option<(DeviceState, Cursor)>> {
        let path = self.state_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.refuse_traces()?;
                return Ok(None);
            }
            Err(e) => return Err(io_err(&path, e)),
        };
        let doc: Value = serde_json::from_str(&text).map_err(|e| self.damaged(e))?;
        let device = DeviceState::from_value(&doc["device"])?;
        let n: Option<Vec<u64>> = doc["outbox"]
            .as_array()
            .filter(|o| o.len() == 5 || o.len() == 6)
            .map(|o| o.iter().filter_map(|v| int_of(v).and_then(|i| u64::try_from(i).ok())).collect());
        let Some(n) = n.filter(|n| n.len() >= 5) else {
            return Err(self.damaged("outbox cursor"));
        };
        let mut cursor = Cursor {
            gen: n[0],
            start: n[1],
            end: n[2],
            first: n[3],
            count: n[4],
            bytes: n.get(5).copied().unwrap_or(0),
        };
        if cursor.start > cursor.end || (cursor.count == 0) != (cursor.start == cursor.end) {
            return Err(self.damaged("outbox cursor"));
        }
        if cursor.count > 0 {
            let len = fs::metadata(self.log(cursor.gen)).map(|m| m.len()).unwrap_or(0);
            if len < cursor.end {
                return Err(Error::Ledger(format!(
                    "{} is damaged: shorter than its committed {} bytes",
                    self.log(cursor.gen).display(),
                    cursor.end
                )));
            }
            if n.len() == 5 {
                // A state written before the cap existed: count its reports' bytes once (the next commit keeps them).
                let records = self.read_records(cursor.gen, cursor.start, cursor.end, cursor.count as usize)?;
                cursor.bytes = records.iter().map(|(r, _)| outbox_bytes(&r.line)).sum();
            }
        }
        Ok(Some((device, cursor)))
    }

    /// Up to `n` records from byte `from` (below `end`) of log `gen`, each with its length in bytes.
    pub(super) fn read_records(&self, gen: u64, from: u64, end: u64, n: usize) -> Result<Vec<(OutboxRecord, u64)>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let path = self.log(gen);
        let mut file = File::open(&path).map_err(|e| io_err(&path, e))?;
        file.seek(SeekFrom::Start(from)).map_err(|e| io_err(&path, e))?;
        let mut reader = BufReader::with_capacity(64 * 1024, file.take(end - from));
        let mut out = Vec::with_capacity(n.min(4096));
        let mut buf = Vec::new();
        while out.len() < n {
            buf.clear();
            let got = reader.read_until(b'\n', &mut buf).map_err(|e| io_err(&path, e))?;
            if got == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                return Err(Error::Ledger(format!("{} is damaged: a record is cut short", path.display())));
            }
            let text = std::str::from_utf8(&buf[..buf.len() - 1])
                .map_err(|_| Error::Ledger(format!("{} is damaged: a record is not UTF-8", path.display())))?;
            let mut parts = text.splitn(3, '\t');
            let (id, metric, line) = (parts.next(), parts.next(), parts.next());
            let (Some(id), Some(metric), Some(line)) = (id.and_then(|i| i.parse::<u64>().ok()), metric, line) else {
                return Err(Error::Ledger(format!("{} is damaged: a record is malformed", path.display())));
            };
            out.push((OutboxRecord { id, metric: metric.to_string(), line: line.to_string() }, got as u64));
        }
        Ok(out)
    }
}
