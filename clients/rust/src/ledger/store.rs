//! Where a device's state and outbox live: in memory, or in a folder of files safe against crashes.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::state::DeviceState;
use crate::error::{Error, Result};
use crate::upload::OutboxKey;
use crate::value::int_of;

/// One report in the outbox: its local id, its metric and its upload line (an envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRecord {
    /// The local id (never reused, never sent).
    pub id: u64,
    /// The metric.
    pub metric: String,
    /// The upload line.
    pub line: String,
}

/// The bytes a report takes in the outbox for its cap (`max_outbox_bytes`): its envelope line's UTF-8 bytes and its
/// newline.
pub fn outbox_bytes(line: &str) -> u64 {
    line.len() as u64 + 1
}

/// What a read of a [`StateStore`] sees ([`StateStore::view_dyn`]): a consistent snapshot, changed by nothing.
pub trait StoreView {
    /// The device's state: `None` before the first commit.
    fn device(&self) -> Option<&DeviceState>;
    /// Reports committed and not yet dropped (plus, in a transaction, those appended in it).
    fn pending_count(&self) -> u64;
    /// The bytes of those reports for the outbox's cap: each one's envelope line and newline ([`outbox_bytes`]).
    fn pending_bytes(&self) -> u64;
    /// The `count` oldest committed reports (fewer if fewer are waiting).
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>>;
}

/// What a [`StateStore`] transaction sees and changes. Nothing is written unless the transaction's closure returns
/// `Ok`, and nothing either when it changed nothing.
pub trait StoreTransaction: StoreView {
    /// The device's state: `None` before the first commit.
    fn state(&mut self) -> &mut Option<DeviceState>;
    /// Adds a report to the outbox, committed with the state.
    fn append(&mut self, record: OutboxRecord) -> Result<()>;
    /// Drops the `count` oldest committed reports (they were acknowledged).
    fn drop_head(&mut self, count: usize) -> Result<()>;
    /// Drops every report, committed or appended in this transaction (opting out).
    fn drop_all(&mut self) -> Result<()>;
}

/// Where a device's state and outbox live. [`StateStore::transact_dyn`] runs a closure exclusively (across threads,
/// and for [`FileStore`] across processes) and commits what it changed atomically: the state and the reports it
/// appended are both kept, or, if the closure fails or the process dies first, neither. A charge and the report it
/// pays for are therefore written together or not at all. [`StateStore::view_dyn`] reads without writing anything.
pub trait StateStore: Send + Sync {
    /// Runs `f` in one transaction.
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()>;

    /// Runs `f` on a consistent snapshot, writing nothing (the default: a transaction that changes nothing).
    fn view_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreView) -> Result<()>) -> Result<()> {
        self.transact_dyn(&mut |tx| f(tx))
    }

    /// Which state this is, for the uploader's "one upload at a time" ([`OutboxKey`]): the uploads of the clients of
    /// stores with equal keys take turns in a process. The default is this object ([`OutboxKey::of`]); a
    /// [`FileStore`] answers its folder, so that every client of one folder in a process takes turns. A store
    /// sharing its state with other objects answers the key of that state.
    fn upload_key(&self) -> OutboxKey {
        OutboxKey::of(self)
    }
}

/// [`StateStore::transact_dyn`] with a result.
pub(crate) fn transact<T>(
    store: &dyn StateStore,
    mut f: impl FnMut(&mut dyn StoreTransaction) -> Result<T>,
) -> Result<T> {
    let mut out = None;
    store.transact_dyn(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| Error::Internal("a transaction returned nothing".into()))
}

/// [`StateStore::view_dyn`] with a result.
pub(crate) fn view<T>(store: &dyn StateStore, mut f: impl FnMut(&mut dyn StoreView) -> Result<T>) -> Result<T> {
    let mut out = None;
    store.view_dyn(&mut |v| {
        out = Some(f(v)?);
        Ok(())
    })?;
    out.ok_or_else(|| Error::Internal("a read returned nothing".into()))
}

// ---------------------------------------------------------------------------------------------------------------
// MemoryStore

#[derive(Default)]
struct Memory {
    state: Option<Value>,
    outbox: VecDeque<OutboxRecord>,
    bytes: u64,
}

/// The state in memory (simulations, tests, an app that keeps nothing across restarts).
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Memory>> {
        self.inner.lock().map_err(|_| Error::Ledger("the store's lock is poisoned".into()))
    }
}

struct MemoryTx<'a> {
    committed: &'a VecDeque<OutboxRecord>,
    committed_bytes: u64,
    state: Option<DeviceState>,
    appended: Vec<OutboxRecord>,
    dropped: usize,
    dropped_bytes: u64,
}

impl<'a> MemoryTx<'a> {
    /// A transaction (or a read) of what `memory` holds, changing nothing yet.
    fn begin(memory: &'a Memory) -> Result<Self> {
        Ok(MemoryTx {
            committed: &memory.outbox,
            committed_bytes: memory.bytes,
            state: memory.state.as_ref().map(DeviceState::from_value).transpose()?,
            appended: Vec::new(),
            dropped: 0,
            dropped_bytes: 0,
        })
    }
}

impl StoreView for MemoryTx<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }
    fn pending_count(&self) -> u64 {
        (self.committed.len() - self.dropped + self.appended.len()) as u64
    }
    fn pending_bytes(&self) -> u64 {
        self.committed_bytes - self.dropped_bytes + self.appended.iter().map(|r| outbox_bytes(&r.line)).sum::<u64>()
    }
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        Ok(self.committed.iter().skip(self.dropped).take(count).cloned().collect())
    }
}

impl StoreTransaction for MemoryTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }
    fn append(&mut self, record: OutboxRecord) -> Result<()> {
        self.appended.push(record);
        Ok(())
    }
    fn drop_head(&mut self, count: usize) -> Result<()> {
        let n = count.min(self.committed.len() - self.dropped);
        self.dropped_bytes +=
            self.committed.iter().skip(self.dropped).take(n).map(|r| outbox_bytes(&r.line)).sum::<u64>();
        self.dropped += n;
        Ok(())
    }
    fn drop_all(&mut self) -> Result<()> {
        self.appended.clear();
        self.dropped = self.committed.len();
        self.dropped_bytes = self.committed_bytes;
        Ok(())
    }
}

impl StateStore for MemoryStore {
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let mut inner = self.lock()?;
        let mut tx = MemoryTx::begin(&inner)?;
        f(&mut tx)?;
        let bytes = tx.pending_bytes();
        let MemoryTx { state, appended, dropped, .. } = tx;
        inner.state = state.map(|s| s.to_value());
        inner.outbox.drain(..dropped);
        inner.outbox.extend(appended);
        inner.bytes = bytes;
        Ok(())
    }

    fn view_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreView) -> Result<()>) -> Result<()> {
        let inner = self.lock()?;
        f(&mut MemoryTx::begin(&inner)?)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// FileStore

/// The state in a folder of files, safe against crashes and shared by the processes of one app:
///
/// - `state.json`: the [`DeviceState`] and the outbox's bookkeeping, replaced atomically: written to a temporary
///   file, flushed to the disk (`fsync`), renamed over the old one, and the folder flushed.
/// - `outbox.<n>.log`: the reports, appended (one line each) and flushed before the state that counts them is
///   committed. Bytes past the committed end (a crash between the two) are ignored and cut by the next commit, so a
///   report exists only once its charge does. Acknowledged reports are dropped by moving the committed start; the
///   log is rewritten into `outbox.<n+1>.log` once its dropped head is over 1 MiB and half the file.
/// - `lock`: an OS file lock ([`File::try_lock`], `flock` on Unix, `LockFileEx` on Windows): exclusive for every
///   transaction, shared for every read. The OS releases it when its process dies, however it dies, so a killed
///   process never locks the others out; threads of one process wait on an in-process mutex first.
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

/// The committed outbox: log `gen`, its committed bytes `start..end`, the id of its first report and their count,
/// and their envelope bytes (for the cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    gen: u64,
    start: u64,
    end: u64,
    first: u64,
    count: u64,
    bytes: u64,
}

const EMPTY: Cursor = Cursor { gen: 0, start: 0, end: 0, first: 1, count: 0, bytes: 0 };

/// The file name of the reserve kept for a full disk (see [`FileStore`]).
const RESERVE: &str = "state.reserve";

/// The size of `state.reserve`, the room a [`FileStore`] keeps for a full disk: 256 KiB, many times what an
/// acknowledgement or an opt-out writes (a new `state.json` beside the old one until the rename).
pub const RESERVE_BYTES: usize = 256 * 1024;

/// Whether an I/O error says the disk (or the user's quota) is full.
fn is_disk_full(e: &std::io::Error) -> bool {
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

fn io_err(path: &Path, e: std::io::Error) -> Error {
    if is_disk_full(&e) {
        return Error::Ledger(format!("{}: the disk is full ({e}): nothing was changed", path.display()));
    }
    Error::Ledger(format!("{}: {e}", path.display()))
}

/// Whether a file name is the reserve's temporary file (a killed process may leave one).
fn is_reserve_tmp(name: &str) -> bool {
    name.starts_with("state.reserve.") && name.ends_with(".tmp")
}

/// Whether a file name is a trace of a device's state: an outbox log or a temporary state file (`lock`, the reserve
/// and its temporary file are not: they hold no data).
fn is_trace(name: &str) -> bool {
    (name.starts_with("outbox.") && name.ends_with(".log")) || (name.ends_with(".tmp") && !is_reserve_tmp(name))
}

/// Why a commit failed: writing a file, or anything else.
enum CommitError {
    Io { path: PathBuf, source: std::io::Error },
    Other(Error),
}

impl CommitError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CommitError + '_ {
        move |source| CommitError::Io { path: path.to_path_buf(), source }
    }

    fn disk_full(&self) -> bool {
        matches!(self, CommitError::Io { source, .. } if is_disk_full(source))
    }
}

impl From<CommitError> for Error {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Io { path, source } => io_err(&path, source),
            CommitError::Other(e) => e,
        }
    }
}

/// What a transaction changed in the outbox, beside the state.
#[derive(Default)]
struct OutboxChanges {
    /// The records appended, as log lines.
    appended: Vec<u8>,
    appended_count: u64,
    /// Their envelope bytes (the cap's count).
    appended_bytes: u64,
    /// The committed log bytes dropped from the head.
    dropped_bytes: u64,
    dropped_count: u64,
    /// Their envelope bytes (the cap's count).
    dropped_envelope_bytes: u64,
}

impl OutboxChanges {
    fn is_empty(&self) -> bool {
        self.appended_count == 0 && self.dropped_count == 0
    }
}

/// A transaction to commit: the state it made, the cursor it started from, and what it changed in the outbox.
struct Commit {
    state: DeviceState,
    cursor: Cursor,
    outbox: OutboxChanges,
}

/// Which lock a transaction or a read holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LockKind {
    Exclusive,
    Shared,
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

    /// With `state.json` missing: an error naming the traces of a device the folder holds, if any.
    fn refuse_traces(&self) -> Result<()> {
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

    /// The lock file, locked; `None` for a read of a folder without one (nothing was ever committed there).
    fn os_lock(&self, kind: LockKind, deadline: Instant) -> Result<Option<File>> {
        let path = self.dir.join("lock");
        let file = match kind {
            LockKind::Exclusive => OpenOptions::new().create(true).truncate(false).write(true).open(&path),
            LockKind::Shared => OpenOptions::new().read(true).open(&path),
        };
        let file = match file {
            Ok(f) => f,
            Err(e) if kind == LockKind::Shared && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path, e)),
        };
        let mut pause = Duration::from_millis(1);
        loop {
            let attempt = match kind {
                LockKind::Exclusive => file.try_lock(),
                LockKind::Shared => file.try_lock_shared(),
            };
            match attempt {
                Ok(()) => return Ok(Some(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path, e)),
            }
            if Instant::now() > deadline {
                return Err(Error::Ledger(format!(
                    "{}: another process held the state for over {} ms",
                    self.dir.display(),
                    self.lock_timeout.as_millis()
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    fn damaged(&self, what: impl std::fmt::Display) -> Error {
        Error::Ledger(format!(
            "{} is damaged: {what} (the budget is never reset: to start over as a new device, delete the folder {})",
            self.state_path().display(),
            self.dir.display()
        ))
    }

    /// The committed state and outbox; `None` for a folder that holds none (and no trace of one).
    fn read_state(&self) -> Result<Option<(DeviceState, Cursor)>> {
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
    fn read_records(&self, gen: u64, from: u64, end: u64, n: usize) -> Result<Vec<(OutboxRecord, u64)>> {
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

    /// Replaces `target` by `bytes`: written to a temporary file, flushed, renamed over it, and the folder flushed.
    fn write_atomically(&self, target: &Path, bytes: &[u8]) -> std::io::Result<()> {
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
    fn ensure_reserve(&self) {
        let path = self.dir.join(RESERVE);
        if fs::metadata(&path).is_ok_and(|m| m.len() == RESERVE_BYTES as u64) {
            return;
        }
        let _ = self.write_atomically(&path, &vec![0; RESERVE_BYTES]);
    }

    /// Deletes `state.reserve`, giving its room to a commit; whether there was one.
    fn release_reserve(&self) -> bool {
        fs::remove_file(self.dir.join(RESERVE)).is_ok()
    }

    /// Removes what a killed process left: temporary files and logs other than the current one (under the exclusive
    /// lock, before a commit: nobody else writes then).
    fn sweep(&self, current: u64) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        let keep = format!("outbox.{current}.log");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if (is_trace(&name) && name != keep) || is_reserve_tmp(&name) {
                let _ = fs::remove_file(entry.path());
            }
        }
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

    /// Writes a commit: the appended reports, flushed, then the state that counts them. Nothing is kept unless it
    /// all succeeds, so a failed commit may be tried again.
    fn commit(&self, commit: &Commit) -> std::result::Result<(), CommitError> {
        let Commit { state, outbox: changes, .. } = commit;
        let mut cursor = commit.cursor;
        // Each store removes what killed processes left once, before its first commit.
        if !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.sweep(cursor.gen);
        }
        // The reports first, flushed; then the state that counts them.
        cursor.start += changes.dropped_bytes;
        cursor.count -= changes.dropped_count;
        cursor.first += changes.dropped_count;
        cursor.bytes -= changes.dropped_envelope_bytes;
        let path = self.log(cursor.gen);
        if changes.appended_count > 0 {
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(CommitError::io(&path))?;
            if file.metadata().map_err(CommitError::io(&path))?.len() != cursor.end {
                file.set_len(cursor.end).map_err(CommitError::io(&path))?;
            }
            file.seek(SeekFrom::Start(cursor.end)).map_err(CommitError::io(&path))?;
            file.write_all(&changes.appended).map_err(CommitError::io(&path))?;
            file.sync_all().map_err(CommitError::io(&path))?;
            cursor.end += changes.appended.len() as u64;
            cursor.count += changes.appended_count;
            cursor.bytes += changes.appended_bytes;
        } else if cursor.count > 0 && fs::metadata(&path).is_ok_and(|m| m.len() > cursor.end) {
            // A torn tail a killed process left: cut it (a later append would do it too).
            let file = OpenOptions::new().write(true).open(&path).map_err(CommitError::io(&path))?;
            file.set_len(cursor.end).map_err(CommitError::io(&path))?;
        }
        let mut retired = None;
        if cursor.count == 0 && (cursor.end > 0 || path.exists()) {
            retired = Some(path);
            cursor.gen += 1;
            cursor.start = 0;
            cursor.end = 0;
            cursor.bytes = 0;
        } else if cursor.start > self.compact_bytes && cursor.start >= cursor.end - cursor.start {
            let old = self.log(cursor.gen);
            let fresh = self.log(cursor.gen + 1);
            (|| -> std::io::Result<()> {
                let mut src = File::open(&old)?;
                src.seek(SeekFrom::Start(cursor.start))?;
                let mut dst = File::create(&fresh)?;
                std::io::copy(&mut src.take(cursor.end - cursor.start), &mut dst)?;
                dst.sync_all()
            })()
            .map_err(CommitError::io(&fresh))?;
            retired = Some(old);
            cursor.gen += 1;
            cursor.end -= cursor.start;
            cursor.start = 0;
        }
        let mut doc = serde_json::Map::new();
        doc.insert("device".into(), state.to_value());
        doc.insert(
            "outbox".into(),
            Value::Array(
                [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count, cursor.bytes]
                    .map(Value::from)
                    .to_vec(),
            ),
        );
        let text = crate::pytext::compact_json(&Value::Object(doc)).map_err(CommitError::Other)?;
        let target = self.state_path();
        self.write_atomically(&target, text.as_bytes()).map_err(CommitError::io(&target))?;
        if let Some(r) = retired {
            let _ = fs::remove_file(r);
        }
        Ok(())
    }

    /// Takes the in-process lock, then the OS lock of `kind`, and runs `f` (the OS lock is released after it).
    fn locked<T>(&self, kind: LockKind, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + self.lock_timeout;
        let _guard = loop {
            match self.thread_lock.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    if Instant::now() > deadline {
                        return Err(Error::Ledger(format!(
                            "{}: another thread held the state for over {} ms",
                            self.dir.display(),
                            self.lock_timeout.as_millis()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        };
        let lock = self.os_lock(kind, deadline)?;
        let result = f();
        if let Some(lock) = lock {
            let _ = lock.unlock();
        }
        result
    }
}

struct FileTx<'a> {
    store: &'a FileStore,
    cursor: Cursor,
    state: Option<DeviceState>,
    outbox: OutboxChanges,
}

impl StoreView for FileTx<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count - self.outbox.dropped_count + self.outbox.appended_count
    }

    fn pending_bytes(&self) -> u64 {
        self.cursor.bytes - self.outbox.dropped_envelope_bytes + self.outbox.appended_bytes
    }

    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        let c = self.cursor;
        let n = (count as u64).min(c.count - self.outbox.dropped_count) as usize;
        Ok(self
            .store
            .read_records(c.gen, c.start + self.outbox.dropped_bytes, c.end, n)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }
}

impl StoreTransaction for FileTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }

    fn append(&mut self, r: OutboxRecord) -> Result<()> {
        if r.line.contains('\n') || r.metric.contains(['\t', '\n']) {
            return Err(Error::InvalidArgument("a report line is one line".into()));
        }
        let o = &mut self.outbox;
        o.appended.extend_from_slice(format!("{}\t{}\t{}\n", r.id, r.metric, r.line).as_bytes());
        o.appended_count += 1;
        o.appended_bytes += outbox_bytes(&r.line);
        Ok(())
    }

    fn drop_head(&mut self, count: usize) -> Result<()> {
        let c = self.cursor;
        let o = &mut self.outbox;
        let n = (count as u64).min(c.count - o.dropped_count) as usize;
        let recs = self.store.read_records(c.gen, c.start + o.dropped_bytes, c.end, n)?;
        o.dropped_bytes += recs.iter().map(|(_, len)| len).sum::<u64>();
        o.dropped_envelope_bytes += recs.iter().map(|(r, _)| outbox_bytes(&r.line)).sum::<u64>();
        o.dropped_count += recs.len() as u64;
        Ok(())
    }

    fn drop_all(&mut self) -> Result<()> {
        let c = self.cursor;
        self.outbox = OutboxChanges {
            dropped_bytes: c.end - c.start,
            dropped_count: c.count,
            dropped_envelope_bytes: c.bytes,
            ..OutboxChanges::default()
        };
        Ok(())
    }
}

/// A read of a [`FileStore`]: the committed state under the shared lock.
struct FileView<'a> {
    store: &'a FileStore,
    cursor: Cursor,
    state: Option<DeviceState>,
}

impl StoreView for FileView<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count
    }

    fn pending_bytes(&self) -> u64 {
        self.cursor.bytes
    }

    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        let c = self.cursor;
        let n = (count as u64).min(c.count) as usize;
        Ok(self.store.read_records(c.gen, c.start, c.end, n)?.into_iter().map(|(r, _)| r).collect())
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
