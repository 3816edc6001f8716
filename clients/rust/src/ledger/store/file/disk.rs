//! I/O errors (a full disk said so), atomic replacement of a file, and `state.reserve`, the room a [`FileStore`]
//! keeps for a full disk.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use super::FileStore;
use crate::error::Error;

/// The file name of the reserve kept for a full disk (see [`FileStore`]).
const RESERVE: &str = "state.reserve";

/// The size of `state.reserve`, the room a [`FileStore`] keeps for a full disk: 256 KiB, many times what an
/// acknowledgement or an opt-out writes (a new `state.json` beside the old one until the rename).
pub const RESERVE_BYTES: usize = 256 * 1024;

/// Whether an I/O error says the disk (or the user's quota) is full.
pub(super) fn is_disk_full(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    if matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded) {
        return true;
    }
    #[cfg(unix)]
    if matches!(e.raw_os_error(), Some(code) if code == libc::ENOSPC || code == libc::EDQUOT) {
        return true;
    }
    false
}

pub(super) fn io_err(path: &Path, e: std::io::Error) -> Error {
    if is_disk_full(&e) {
        return Error::Ledger(format!("{}: the disk is full ({e}): nothing was changed", path.display()));
    }
    Error::Ledger(format!("{}: {e}", path.display()))
}

impl FileStore {
    /// Replaces `target` by `bytes`: written to a temporary file, flushed, renamed over it, and the folder flushed.
    pub(super) fn write_atomically(&self, target: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let nonce =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("state.json");
        let tmp = self.dir.join(format!("{name}.{}.{nonce:x}.tmp", std::process::id()));
        let result = (|| -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, target)
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        // Flush the folder's entries (the rename) where the platform allows opening a folder.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Makes `state.reserve` if it is missing (or short) and the disk has room; a failure is ignored (a later record
    /// makes it). Under the exclusive lock, after a commit that kept reports.
    pub(super) fn ensure_reserve(&self) {
        let path = self.dir.join(RESERVE);
        if fs::metadata(&path).is_ok_and(|m| m.len() == RESERVE_BYTES as u64) {
            return;
        }
        let _ = self.write_atomically(&path, &vec![0; RESERVE_BYTES]);
    }

    /// Deletes `state.reserve`, giving its room to a commit; whether there was one.
    pub(super) fn release_reserve(&self) -> bool {
        fs::remove_file(self.dir.join(RESERVE)).is_ok()
    }
}
