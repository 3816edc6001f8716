//! CPU load for tests that must hold on a busy machine (CI's 2 cores are shared with other jobs): busy-looping
//! threads beside the test, as the Python suite's `support.load.cpu_hogs` (processes) and the Kotlin client's
//! `CpuHog` (threads) do.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// `n` threads spinning until dropped (also when the test panics); each counts its turns of the loop.
pub struct CpuHogs {
    stop: Arc<AtomicBool>,
    spins: Vec<Arc<AtomicU64>>,
    threads: Vec<JoinHandle<()>>,
}

impl CpuHogs {
    /// Starts `n` hogs and returns once each has spun (they compete for every core from then on).
    pub fn start(n: usize) -> CpuHogs {
        let stop = Arc::new(AtomicBool::new(false));
        let spins: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::default()).collect();
        let threads = spins
            .iter()
            .map(|count| {
                let (stop, count) = (stop.clone(), count.clone());
                thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let hogs = CpuHogs { stop, spins, threads };
        while hogs.counts().contains(&0) {
            thread::yield_now();
        }
        hogs
    }

    /// Each hog's turns of its loop so far.
    pub fn counts(&self) -> Vec<u64> {
        self.spins.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
