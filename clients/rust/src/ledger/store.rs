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
        let state = inner.state.as_ref().map(DeviceState::from_value).transpose()?;
        let mut tx = MemoryTx {
            committed: &inner.outbox,
            committed_bytes: inner.bytes,
            state,
            appended: Vec::new(),
            dropped: 0,
            dropped_bytes: 0,
        };
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
        let state = inner.state.as_ref().map(DeviceState::from_value).transpose()?;
        let mut tx = MemoryTx {
            committed: &inner.outbox,
            committed_bytes: inner.bytes,
            state,
            appended: Vec::new(),
            dropped: 0,
            dropped_bytes: 0,
        };
        f(&mut tx)
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
///
/// **Reads write nothing.** Opening an existing store and every read ([`StateStore::view_dyn`]) leave the folder as
/// they found it: no state rewritten, no temporary file, no `fsync` (a read-only folder, or a full disk, can still be
/// read). A transaction writes only when it changed something, and only such a commit removes what a killed process
/// left (temporary files, unreferenced logs, a torn log tail).
///
/// **Fail closed.** A state file that cannot be read is an [`Error::Ledger`]: the budget is never silently reset. A
/// folder whose `state.json` is missing while traces of a device remain (`outbox.*.log`, temporary state files;
/// `lock` alone is not one) is refused too, naming them: it is never opened as a new device beside reports charged
/// to an old one. Delete the whole folder to start over as a new device.
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

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Ledger(format!("{}: {e}", path.display()))
}

/// Whether a file name is a trace of a device's state: an outbox log or a temporary file (`lock` is not one).
fn is_trace(name: &str) -> bool {
    (name.starts_with("outbox.") && name.ends_with(".log")) || name.ends_with(".tmp")
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

    fn write_atomically(&self, target: &Path, bytes: &[u8]) -> Result<()> {
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
            return Err(io_err(target, e));
        }
        // Flush the folder's entries (the rename) where the platform allows opening a folder.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Removes what a killed process left: temporary files and logs other than the current one (under the exclusive
    /// lock, before a commit: nobody else writes then).
    fn sweep(&self, current: u64) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        let keep = format!("outbox.{current}.log");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if is_trace(&name) && name != keep {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    fn run_locked(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let loaded = self.read_state()?;
        let mut cursor = loaded.as_ref().map(|(_, c)| *c).unwrap_or(EMPTY);
        let before = loaded.as_ref().map(|(s, _)| s.clone());
        let mut tx = FileTx {
            store: self,
            cursor,
            state: loaded.map(|(s, _)| s),
            appended: Vec::new(),
            appended_count: 0,
            appended_bytes: 0,
            dropped_bytes: 0,
            dropped_count: 0,
            dropped_envelope_bytes: 0,
        };
        f(&mut tx)?;
        let FileTx {
            state,
            appended,
            appended_count,
            appended_bytes,
            dropped_bytes,
            dropped_count,
            dropped_envelope_bytes,
            ..
        } = tx;
        let Some(next) = state else { return Ok(()) };
        if appended_count == 0 && dropped_count == 0 && before.as_ref() == Some(&next) {
            return Ok(()); // nothing changed: nothing written
        }
        // Each store removes what killed processes left once, before its first commit.
        if !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.sweep(cursor.gen);
        }
        // The reports first, flushed; then the state that counts them.
        cursor.start += dropped_bytes;
        cursor.count -= dropped_count;
        cursor.first += dropped_count;
        cursor.bytes -= dropped_envelope_bytes;
        let path = self.log(cursor.gen);
        if appended_count > 0 {
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| io_err(&path, e))?;
            if file.metadata().map_err(|e| io_err(&path, e))?.len() != cursor.end {
                file.set_len(cursor.end).map_err(|e| io_err(&path, e))?;
            }
            file.seek(SeekFrom::Start(cursor.end)).map_err(|e| io_err(&path, e))?;
            file.write_all(&appended).map_err(|e| io_err(&path, e))?;
            file.sync_all().map_err(|e| io_err(&path, e))?;
            cursor.end += appended.len() as u64;
            cursor.count += appended_count;
            cursor.bytes += appended_bytes;
        } else if cursor.count > 0 && fs::metadata(&path).is_ok_and(|m| m.len() > cursor.end) {
            // A torn tail a killed process left: cut it (a later append would do it too).
            let file = OpenOptions::new().write(true).open(&path).map_err(|e| io_err(&path, e))?;
            file.set_len(cursor.end).map_err(|e| io_err(&path, e))?;
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
            .map_err(|e| io_err(&fresh, e))?;
            retired = Some(old);
            cursor.gen += 1;
            cursor.end -= cursor.start;
            cursor.start = 0;
        }
        let mut doc = serde_json::Map::new();
        doc.insert("device".into(), next.to_value());
        doc.insert(
            "outbox".into(),
            Value::Array(
                [cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count, cursor.bytes]
                    .map(Value::from)
                    .to_vec(),
            ),
        );
        let text = crate::pytext::compact_json(&Value::Object(doc))?;
        self.write_atomically(&self.state_path(), text.as_bytes())?;
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
    appended: Vec<u8>,
    appended_count: u64,
    appended_bytes: u64,
    dropped_bytes: u64,
    dropped_count: u64,
    dropped_envelope_bytes: u64,
}

impl StoreView for FileTx<'_> {
    fn device(&self) -> Option<&DeviceState> {
        self.state.as_ref()
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count - self.dropped_count + self.appended_count
    }

    fn pending_bytes(&self) -> u64 {
        self.cursor.bytes - self.dropped_envelope_bytes + self.appended_bytes
    }

    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        let c = self.cursor;
        let n = (count as u64).min(c.count - self.dropped_count) as usize;
        Ok(self
            .store
            .read_records(c.gen, c.start + self.dropped_bytes, c.end, n)?
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
        self.appended.extend_from_slice(format!("{}\t{}\t{}\n", r.id, r.metric, r.line).as_bytes());
        self.appended_count += 1;
        self.appended_bytes += outbox_bytes(&r.line);
        Ok(())
    }

    fn drop_head(&mut self, count: usize) -> Result<()> {
        let c = self.cursor;
        let n = (count as u64).min(c.count - self.dropped_count) as usize;
        let recs = self.store.read_records(c.gen, c.start + self.dropped_bytes, c.end, n)?;
        self.dropped_bytes += recs.iter().map(|(_, len)| len).sum::<u64>();
        self.dropped_envelope_bytes += recs.iter().map(|(r, _)| outbox_bytes(&r.line)).sum::<u64>();
        self.dropped_count += recs.len() as u64;
        Ok(())
    }

    fn drop_all(&mut self) -> Result<()> {
        let c = self.cursor;
        self.appended.clear();
        self.appended_count = 0;
        self.appended_bytes = 0;
        self.dropped_bytes = c.end - c.start;
        self.dropped_count = c.count;
        self.dropped_envelope_bytes = c.bytes;
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
}
