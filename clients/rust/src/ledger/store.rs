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

/// What a [`StateStore`] transaction sees and changes. Nothing is written unless the transaction's closure returns
/// `Ok`.
pub trait StoreTransaction {
    /// The device's state: `None` before the first commit.
    fn state(&mut self) -> &mut Option<DeviceState>;
    /// Reports committed and not yet dropped, plus those appended in this transaction.
    fn pending_count(&self) -> u64;
    /// Adds a report to the outbox, committed with the state.
    fn append(&mut self, record: OutboxRecord) -> Result<()>;
    /// The `count` oldest committed reports (fewer if fewer are waiting).
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>>;
    /// Drops the `count` oldest committed reports (they were acknowledged).
    fn drop_head(&mut self, count: usize) -> Result<()>;
}

/// Where a device's state and outbox live. [`StateStore::transact_dyn`] runs a closure exclusively (across threads,
/// and for [`FileStore`] across processes) and commits what it changed atomically: the state and the reports it
/// appended are both kept, or, if the closure fails or the process dies first, neither. A charge and the report it
/// pays for are therefore written together or not at all.
pub trait StateStore: Send + Sync {
    /// Runs `f` in one transaction.
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()>;
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

// ---------------------------------------------------------------------------------------------------------------
// MemoryStore

#[derive(Default)]
struct Memory {
    state: Option<Value>,
    outbox: VecDeque<OutboxRecord>,
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
}

struct MemoryTx<'a> {
    committed: &'a VecDeque<OutboxRecord>,
    state: Option<DeviceState>,
    appended: Vec<OutboxRecord>,
    dropped: usize,
}

impl StoreTransaction for MemoryTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }
    fn pending_count(&self) -> u64 {
        (self.committed.len() - self.dropped + self.appended.len()) as u64
    }
    fn append(&mut self, record: OutboxRecord) -> Result<()> {
        self.appended.push(record);
        Ok(())
    }
    fn head(&mut self, count: usize) -> Result<Vec<OutboxRecord>> {
        Ok(self.committed.iter().skip(self.dropped).take(count).cloned().collect())
    }
    fn drop_head(&mut self, count: usize) -> Result<()> {
        self.dropped = self.committed.len().min(self.dropped + count);
        Ok(())
    }
}

impl StateStore for MemoryStore {
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let mut inner = self.inner.lock().map_err(|_| Error::Ledger("the store's lock is poisoned".into()))?;
        let state = inner.state.as_ref().map(DeviceState::from_value).transpose()?;
        let mut tx = MemoryTx { committed: &inner.outbox, state, appended: Vec::new(), dropped: 0 };
        f(&mut tx)?;
        let MemoryTx { state, appended, dropped, .. } = tx;
        inner.state = state.map(|s| s.to_value());
        inner.outbox.drain(..dropped);
        inner.outbox.extend(appended);
        Ok(())
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
/// - `lock`: an OS file lock ([`File::try_lock`], `flock` on Unix, `LockFileEx` on Windows) taken for every
///   transaction. The OS releases it when its process dies, however it dies, so a killed process never locks the
///   others out; threads of one process wait on an in-process mutex first.
///
/// Temporary files and unreferenced logs a killed process left are removed by the next transaction. A state file
/// that cannot be read is an [`Error::Ledger`]: the budget is never silently reset.
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

#[derive(Debug, Clone, Copy)]
struct Cursor {
    gen: u64,
    start: u64,
    end: u64,
    first: u64,
    count: u64,
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Ledger(format!("{}: {e}", path.display()))
}

impl FileStore {
    /// The store in folder `dir` (created if missing), waiting at most 30 s for the lock.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::with_timeout(dir, Duration::from_secs(30))
    }

    /// The store in folder `dir`, waiting at most `lock_timeout` for the lock.
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
        Ok(FileStore { dir: canonical, lock_timeout, thread_lock, swept: Default::default(), compact_bytes: 1 << 20 })
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

    fn os_lock(&self, deadline: Instant) -> Result<File> {
        let path = self.dir.join("lock");
        let file =
            OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| io_err(&path, e))?;
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
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

    fn read_state(&self) -> Result<Option<(DeviceState, Cursor)>> {
        let path = self.state_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path, e)),
        };
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| Error::Ledger(format!("{} is damaged: {e}", path.display())))?;
        let device = DeviceState::from_value(&doc["device"])?;
        let o = doc["outbox"].as_array().filter(|o| o.len() == 5);
        let n: Option<Vec<u64>> =
            o.map(|o| o.iter().filter_map(|v| int_of(v).and_then(|i| u64::try_from(i).ok())).collect());
        let Some(n) = n.filter(|n| n.len() == 5) else {
            return Err(Error::Ledger(format!("{} is damaged: outbox cursor", path.display())));
        };
        let cursor = Cursor { gen: n[0], start: n[1], end: n[2], first: n[3], count: n[4] };
        if cursor.count > 0 {
            let len = fs::metadata(self.log(cursor.gen)).map(|m| m.len()).unwrap_or(0);
            if len < cursor.end {
                return Err(Error::Ledger(format!(
                    "{} is damaged: shorter than its committed {} bytes",
                    self.log(cursor.gen).display(),
                    cursor.end
                )));
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

    /// Removes what a killed process left: temporary files and logs no state refers to (under the lock).
    fn sweep(&self) {
        let state_path = self.state_path();
        let (readable, current) = match fs::read_to_string(&state_path) {
            Err(_) => (!state_path.exists(), None),
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(doc) if doc.is_object() => (true, doc["outbox"].get(0).and_then(Value::as_u64)),
                _ => (false, None), // damaged: the transaction says so; keep every log for whoever repairs it
            },
        };
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let stray = name.ends_with(".tmp")
                || (readable
                    && name.starts_with("outbox.")
                    && name.ends_with(".log")
                    && Some(name.as_str()) != current.map(|g| format!("outbox.{g}.log")).as_deref());
            if stray {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    fn run_locked(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
        let loaded = self.read_state()?;
        let mut cursor =
            loaded.as_ref().map(|(_, c)| *c).unwrap_or(Cursor { gen: 0, start: 0, end: 0, first: 1, count: 0 });
        let mut tx = FileTx {
            store: self,
            cursor,
            state: loaded.map(|(s, _)| s),
            appended: Vec::new(),
            appended_count: 0,
            dropped_bytes: 0,
            dropped_count: 0,
        };
        f(&mut tx)?;
        let FileTx { state, appended, appended_count, dropped_bytes, dropped_count, .. } = tx;
        let Some(next) = state else { return Ok(()) };
        // The reports first, flushed; then the state that counts them.
        cursor.start += dropped_bytes;
        cursor.count -= dropped_count;
        cursor.first += dropped_count;
        if appended_count > 0 {
            let path = self.log(cursor.gen);
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
        }
        let mut retired = None;
        if cursor.count == 0 && cursor.end > 0 {
            retired = Some(self.log(cursor.gen));
            cursor.gen += 1;
            cursor.start = 0;
            cursor.end = 0;
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
            Value::Array([cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count].map(Value::from).to_vec()),
        );
        let text = crate::pytext::compact_json(&Value::Object(doc))?;
        self.write_atomically(&self.state_path(), text.as_bytes())?;
        if let Some(r) = retired {
            let _ = fs::remove_file(r);
        }
        Ok(())
    }
}

struct FileTx<'a> {
    store: &'a FileStore,
    cursor: Cursor,
    state: Option<DeviceState>,
    appended: Vec<u8>,
    appended_count: u64,
    dropped_bytes: u64,
    dropped_count: u64,
}

impl StoreTransaction for FileTx<'_> {
    fn state(&mut self) -> &mut Option<DeviceState> {
        &mut self.state
    }

    fn pending_count(&self) -> u64 {
        self.cursor.count - self.dropped_count + self.appended_count
    }

    fn append(&mut self, r: OutboxRecord) -> Result<()> {
        if r.line.contains('\n') || r.metric.contains(['\t', '\n']) {
            return Err(Error::InvalidArgument("a report line is one line".into()));
        }
        self.appended.extend_from_slice(format!("{}\t{}\t{}\n", r.id, r.metric, r.line).as_bytes());
        self.appended_count += 1;
        Ok(())
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

    fn drop_head(&mut self, count: usize) -> Result<()> {
        let c = self.cursor;
        let n = (count as u64).min(c.count - self.dropped_count) as usize;
        let recs = self.store.read_records(c.gen, c.start + self.dropped_bytes, c.end, n)?;
        self.dropped_bytes += recs.iter().map(|(_, len)| len).sum::<u64>();
        self.dropped_count += recs.len() as u64;
        Ok(())
    }
}

impl StateStore for FileStore {
    fn transact_dyn(&self, f: &mut dyn FnMut(&mut dyn StoreTransaction) -> Result<()>) -> Result<()> {
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
        let lock = self.os_lock(deadline)?;
        // Each store sweeps what killed processes left once, under the lock (nobody else writes then).
        if !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.sweep();
        }
        let result = self.run_locked(f);
        let _ = lock.unlock();
        result
    }
}
