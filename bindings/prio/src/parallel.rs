//! The batch calls' reports spread over the cores (issue 86, item 2): with the GIL released, a job's reports are cut
//! into contiguous parts, one per thread (scoped threads: each borrows the job's bytes, nothing is copied), and the
//! parts' results put back in order; each part accumulates its own aggregate share, and the shares are merged (a sum
//! of field vectors: the same share in any grouping). The number of threads is the process's setting
//! (`set_batch_threads`), by default the CPUs this process may run on (`available_parallelism`, which honours its
//! affinity: a process pinned to one CPU works in one thread); a part is never smaller than [`MIN_PER_THREAD`]
//! reports, below which a thread's start costs more than it saves.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;

/// The fewest reports a thread is given.
pub(crate) const MIN_PER_THREAD: usize = 32;

/// The threads a batch call may use; 0: as many as the CPUs this process may run on.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The threads a batch call uses at most (the setting, or the CPUs this process may run on now).
#[pyfunction]
pub(crate) fn batch_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    }
}

/// Sets the threads each batch call (`helper_prepare_batch`, `leader_init_batch`, `leader_finish_batch`) may use:
/// a positive count, or `None` for the CPUs this process may run on (the default).
#[pyfunction]
#[pyo3(signature = (threads))]
pub(crate) fn set_batch_threads(threads: Option<usize>) -> PyResult<()> {
    match threads {
        Some(0) => Err(pyo3::exceptions::PyValueError::new_err(
            "set_batch_threads takes a positive number of threads, or None for the CPUs this process may run on",
        )),
        Some(n) => {
            THREADS.store(n, Ordering::Relaxed);
            Ok(())
        }
        None => {
            THREADS.store(0, Ordering::Relaxed);
            Ok(())
        }
    }
}

/// How many parts `len` items are cut into, and the size of each but the last.
fn parts(len: usize) -> (usize, usize) {
    let threads = batch_threads().min(len / MIN_PER_THREAD).max(1);
    (threads, len.div_ceil(threads).max(1))
}

/// Each part's thread joined; a panic in a part raised again here, as it would have been in one thread.
fn join<R>(parts: Vec<std::thread::ScopedJoinHandle<'_, R>>) -> Vec<R> {
    parts.into_iter().map(|part| part.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
}

/// `work` over `items` in contiguous parts, each on a thread of its own (one part, on this thread, when the items
/// are too few or one thread is set); the parts' results in the items' order.
pub(crate) fn in_parts<T: Sync, R: Send>(items: &[T], work: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let (threads, size) = parts(items.len());
    if threads == 1 {
        return vec![work(items)];
    }
    let work = &work;
    std::thread::scope(|scope| join(items.chunks(size).map(|part| scope.spawn(move || work(part))).collect()))
}

/// [`in_parts`] for items each part consumes (a verify state is used once).
pub(crate) fn in_owned_parts<T: Send, R: Send>(items: Vec<T>, work: impl Fn(Vec<T>) -> R + Sync) -> Vec<R> {
    let (threads, size) = parts(items.len());
    if threads == 1 {
        return vec![work(items)];
    }
    let mut items = items.into_iter();
    let chunks: Vec<Vec<T>> = (0..threads).map(|_| items.by_ref().take(size).collect()).collect();
    let work = &work;
    std::thread::scope(|scope| join(chunks.into_iter().map(|part| scope.spawn(move || work(part))).collect()))
}
