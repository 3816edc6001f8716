//! Traces of a device's state: what a killed process leaves (swept before a store's first commit), and what makes a
//! folder without `state.json` refused instead of opened as a new device.

use std::fs;

use super::disk::io_err;
use super::FileStore;
use crate::error::{Error, Result};

/// Whether a file name is the reserve's temporary file (a killed process may leave one).
fn is_reserve_tmp(name: &str) -> bool {
    name.starts_with("state.reserve.") && name.ends_with(".tmp")
}

/// Whether a file name is a trace of a device's state: an outbox log or a temporary state file (`lock`, the reserve
/// and its temporary file are not: they hold no data).
pub(super) fn is_trace(name: &str) -> bool {
    (name.starts_with("outbox.") && name.ends_with(".log")) || (name.ends_with(".tmp") && !is_reserve_tmp(name))
}

impl FileStore {
    /// With `state.json` missing: an error naming the traces of a device the folder holds, if any.
    pub(super) fn refuse_traces(&self) -> Result<()> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let mut traces: Vec<String> =
            entries.flatten().map(|e| e.file_name().to_string_lossy().to_string()).filter(|n| is_trace(n)).collect();
        if traces.is_empty() {
            return Ok(());
        }
        traces.sort();
        Err(Error::Ledger(format!(
            "{}: state.json is missing but traces of a device's state remain ({}): refusing to open it as a new \
             device (a fresh secret and nothing spent, beside reports charged to the old one). To start over as a \
             new device, delete the folder {} first",
            self.dir.display(),
            traces.join(", "),
            self.dir.display()
        )))
    }

    /// Removes what a killed process left: temporary files and logs other than the current one (under the exclusive
    /// lock, before a commit: nobody else writes then).
    pub(super) fn sweep(&self, current: u64) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        let keep = format!("outbox.{current}.log");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if (is_trace(&name) && name != keep) || is_reserve_tmp(&name) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}
