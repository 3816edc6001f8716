//! What the end-to-end device programs (`e2e_devices`, `dap_devices`) share: the uploads' totals over devices.

use ldp_client::upload::UploadResult;
use serde_json::{json, Map, Value};

/// The totals of every device's upload: reports acknowledged, lines accepted, refused (by reason) and duplicate
/// batches, and the reports each device had left in its outbox after its upload.
#[derive(Default)]
pub struct UploadTotals {
    acknowledged: u64,
    accepted: u64,
    duplicates: u64,
    pending: u64,
    rejected: Map<String, Value>,
}

impl UploadTotals {
    /// Adds one device's upload and what it had left pending after it.
    pub fn add(&mut self, result: UploadResult, pending: u64) {
        self.acknowledged += result.acknowledged;
        self.accepted += result.accepted;
        self.duplicates += result.duplicates;
        self.pending += pending;
        for (reason, n) in result.rejected {
            let old = self.rejected.get(&reason).and_then(Value::as_u64).unwrap_or(0);
            self.rejected.insert(reason, Value::from(old + n));
        }
    }

    /// Writes the totals into `out` under `acknowledged`, `accepted`, `rejected`, `duplicates` and `pending`.
    pub fn write(self, out: &mut Map<String, Value>) {
        out.insert("acknowledged".into(), json!(self.acknowledged));
        out.insert("accepted".into(), json!(self.accepted));
        out.insert("rejected".into(), Value::Object(self.rejected));
        out.insert("duplicates".into(), json!(self.duplicates));
        out.insert("pending".into(), json!(self.pending));
    }
}
