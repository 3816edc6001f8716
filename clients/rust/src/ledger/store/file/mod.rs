//! [`FileStore`]: the state in a folder of files, safe against crashes and shared by the processes of one app.
//!
//! The store's parts: the folder's files and what a killed process leaves (`traces`), the OS and in-process locks
//! (`lock`), reading the committed state and log (`read`), a transaction's view and changes (`tx`), writing a
//! commit (`commit`), and I/O errors and the room kept for a full disk (`disk`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::{StateStore, StoreTransaction, StoreView};
use crate::error::{Error, Result};
use crate::upload::OutboxKey;

mod commit;
mod disk;
mod lock;
mod read;
mod traces;
mod tx;

use commit::Commit;
use disk::io_err;
pub use disk::RESERVE_BYTES;
use lock::LockKind;
use tx::{FileTx, FileView, OutboxChanges, EMPTY};

/// The state in a folder of files, safe against crashes and shared by the processes of one app:
///
/// - `state.json`: the [`DeviceState`](crate::ledger::DeviceState) and the outbox's bookkeeping, replaced atomically:
///   written to a temporary file, flushed to the disk (`fsync`), renamed over the old one, and the folder flushed.
/// - `outbox.<n>.log`: the reports, appended (one line each) and flushed before the state that counts them is
///   committed. Bytes past the committed end (a crash between the two) are ignored and cut by the next commit, so a
///   report exists only once its charge does. Acknowledged reports are dropped by moving the committed start; the
///   log is rewritten into `outbox.<n+1>.log` once its dropped head is over 1 MiB and half the file.
/// - `lock`: an OS file lock ([`File::try_lock`](std::fs::File::try_lock), `flock` on Unix, `LockFileEx` on Windows):
///   exclusive for every transaction, shared for every read. The OS releases it when its process dies, however it dies,
///   so a killed process never locks the others out; threads of one process wait on an in-process mutex first.
/// - `state.reserve`: [`RESERVE_BYTES`] of zeros, room kept for a full disk. A commit that kept reports (a record)
///   makes it when it is missing and the disk has room (and ignores a failure to: a later record makes it). A commit
///   that keeps no report (acknowledging or pinning a batch, opting out or in, and the repairs such a commit does)
///   and fails because the disk is full deletes the reserve and is tried once more, so that an app can still
///   acknowledge what it uploaded, which frees room. A record on a full disk fails ([`Error::Ledger`] saying the
///   disk is full) and leaves the reserve alone. Reads never make it. It holds no data: it is not a trace of a state.
///
/// **Reads write nothing.** Opening an existing store and every read ([`StateStore::view_dyn`]) leave the folder as
/// they found it: no state rewritten, no temporary file, no reserve made, no `fsync` (a read-only folder, or a full
/// disk, can still be read). A transaction writes only when it changed something, and only such a commit removes
/// what a killed process left (temporary files, unreferenced logs, a torn log tail).
///
/// **Fail closed.** A state file that cannot be read is an [`Error::Ledger`]: the budget is never silently reset. A
/// folder whose `state.json` is missing while traces of a device remain (`outbox.*.log`, temporary state files;
/// `lock` and `state.reserve` are not) is refused too, naming them: it is never opened as a new device beside
/// reports charged to an old one. Delete the whole folder to start over as a new device.
pub struct FileStore {
    dir: PathBuf,
    lock_timeout: Duration,
    thread_lock: Arc<Mutex<()>>,
    swept: std::sync::atomic::AtomicBool,
    compact_bytes: u64,
}

fn thread_locks() -> &'static Mutex<HashMap<PathBuf, Arc<Mutex<()>>>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    LOCKS.get_or_init(Default::default)
}

impl FileStore {
    /// The store in folder `dir` (created if missing), waiting at most 30 s for the lock.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::with_timeout(dir, Duration::from_secs(30))
    }

    /// The store in folder `dir`, waiting at most `lock_timeout` for the lock. Writes nothing to an existing folder;
    /// refuses a folder whose state is missing beside traces of it (see [`FileStore`]).
    pub fn with_timeout(dir: impl AsRef<Path>, lock_timeout: Duration) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let canonical = fs::canonicalize(&dir).map_err(|e| io_err(&dir, e))?;
        let thread_lock = thread_locks()
            .lock()
            .map_err(|_| Error::Ledger("the store registry's lock is poisoned".into()))?
            .entry(canonical.clone())
            .or_default()
            .clone();
        let store =
            FileStore { dir: canonical, lock_timeout, thread_lock, swept: Default::default(), compact_bytes: 1 << 20 };
        if !store.state_path().exists() {
            store.refuse_traces()?;
        }
        Ok(store)
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    #[doc(hidden)]
    pub fn set_compact_bytes(&mut self, n: u64) {
        self.compact_bytes = n;
    }

    fn log(&self, gen: u64) -> PathBuf {
        self.dir.join(format!("outbox.{gen}.log"))
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    fn damaged(&self, what: impl std::fmt::Display) -> Error {
        Error::Ledger(format!(
            "{} is damaged: {what} (the budget is never reset: to start over as a new device, delete the folder {})",
            self.state_path().display(),
            self.dir.display()
        ))
    }

    /// Runs `f` on the committed state and commits what it changed. A commit that keeps no report and fails for
    /// lack of room is tried once more with the reserve's room; one that kept reports makes the reserve if missing.
    fn run_locked(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let Some(commit) = self.transaction(f)? else { return Ok(()) };
        let records = commit.outbox.appended_count > 0;
        match self.commit(&commit) {
            Ok(()) => {
                if records {
                    self.ensure_reserve();
                }
                Ok(())
            }
            Err(e) if e.disk_full() && !records && self.release_reserve() => Ok(self.commit(&commit)?),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `f` on the committed state: what to commit, or `None` when it changed nothing.
    fn transaction(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<Option<Commit>> {
        let loaded = self.read_state()?;
        let cursor = loaded.as_ref().map(|(_, c)| *c).unwrap_or(EMPTY);
        let before = loaded.as_ref().map(|(s, _)| s.clone());
        let mut tx = FileTx { store: self, cursor, state: loaded.map(|(s, _)| s), outbox: OutboxChanges::default() };
        f(&mut tx)?;
        let FileTx { state, outbox, .. } = tx;
        let Some(state) = state else { return Ok(None) };
        if outbox.is_empty() && before.as_ref() == Some(&state) {
            return Ok(None); // nothing changed: nothing written
        }
        Ok(Some(Commit { state, cursor, outbox }))
    }
}

impl StateStore for FileStore {
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        self.locked(LockKind::Exclusive, || self.run_locked(f))
    }

    fn view_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreView) -> Result<()>) -> Result<()> {
        self.locked(LockKind::Shared, || {
            let (state, cursor) = match self.read_state()? {
                Some((s, c)) => (Some(s), c),
                None => (None, EMPTY),
            };
            f(&mut FileView { store: self, cursor, state })
        })
    }

    /// The folder ([`OutboxKey::folder`] of its canonical path): the clients of one folder take turns to upload.
    fn upload_key(&self) -> OutboxKey {
        OutboxKey::folder(&self.dir)
    }
}
