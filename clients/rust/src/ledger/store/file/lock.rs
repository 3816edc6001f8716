//! The locks of a [`FileStore`]: an in-process mutex per folder for its threads, then the OS file lock (`lock`),
//! exclusive for a transaction and shared for a read.

use std::fs::{File, OpenOptions};
use std::time::{Duration, Instant};

use super::disk::io_err;
use super::FileStore;
use crate::error::{Error, Result};

/// Which lock a transaction or a read holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LockKind {
    Exclusive,
    Shared,
}

impl FileStore {
    /// Takes the in-process lock, then the OS lock of `kind`, and runs `f` (the OS lock is released after it).
    pub(super) fn locked<T>(&self, kind: LockKind, f: impl FnOnce() -> Result<T>) -> Result<T> {
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
}
