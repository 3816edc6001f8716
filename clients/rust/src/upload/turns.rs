//! One upload at a time per outbox: the turns of the uploads of one [`OutboxKey`] in this process.
//!
//! A registry maps each key being uploaded (or waited for) to its gate: the thread holding it, and a condition
//! variable its waiters sleep on. An entry lives while a call holds or waits for it, so the registry holds only the
//! keys in use.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, ThreadId};
use std::time::Instant;

use super::OutboxKey;
use crate::error::{Error, Result};

/// The gate of one key: the thread whose upload holds it, if any.
#[derive(Default)]
struct Gate {
    holder: Mutex<Option<ThreadId>>,
    free: Condvar,
}

impl Gate {
    /// The holder, through a poisoned lock too: it holds a thread id only, written whole.
    fn holder(&self) -> MutexGuard<'_, Option<ThreadId>> {
        self.holder.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

type Registry = Mutex<HashMap<OutboxKey, Arc<Gate>>>;

fn registry() -> MutexGuard<'static, HashMap<OutboxKey, Arc<Gate>>> {
    static GATES: OnceLock<Registry> = OnceLock::new();
    // The map is changed by whole inserts and removes only: usable after a panic elsewhere.
    GATES.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drops a call's hold on the entry of `key`, and the entry with the last one (under the registry's lock, where
/// every clone of an entry is made, so no other call can be about to use it).
fn leave(key: &OutboxKey, gate: Arc<Gate>) {
    let mut gates = registry();
    if Arc::strong_count(&gate) == 2 {
        gates.remove(key);
    }
    drop(gate);
}

/// The turn of one upload call: the key's gate is held until it is dropped.
pub(super) struct Turn {
    key: OutboxKey,
    gate: Option<Arc<Gate>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            *gate.holder() = None;
            gate.free.notify_all();
            leave(&self.key, gate);
        }
    }
}

/// Waits for the turn of `key` until `until` (`None`: without limit): `Ok(None)` when the deadline passed while
/// another call held it. A call from the thread that holds it already (the uploader's `sleep`, or a log callback,
/// uploading the same outbox) is an [`Error::Value`] at once: waiting would never end.
pub(super) fn take(key: OutboxKey, until: Option<Instant>) -> Result<Option<Turn>> {
    let gate = registry().entry(key.clone()).or_default().clone();
    let me = thread::current().id();
    let taken = {
        let mut holder = gate.holder();
        loop {
            match *holder {
                None => {
                    *holder = Some(me);
                    break Ok(true);
                }
                Some(t) if t == me => {
                    break Err(Error::value(
                        "upload of an outbox this thread is uploading already (from the uploader's sleep or a log \
                         callback): one upload at a time per outbox",
                    ))
                }
                Some(_) => {}
            }
            match until {
                None => holder = gate.free.wait(holder).unwrap_or_else(PoisonError::into_inner),
                Some(end) => {
                    let now = Instant::now();
                    if now >= end {
                        break Ok(false);
                    }
                    holder = gate.free.wait_timeout(holder, end - now).unwrap_or_else(PoisonError::into_inner).0;
                }
            }
        }
    };
    match taken {
        Ok(true) => Ok(Some(Turn { key, gate: Some(gate) })),
        other => {
            leave(&key, gate);
            other.map(|_| None)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;

    fn in_use(key: &OutboxKey) -> bool {
        registry().contains_key(key)
    }

    #[test]
    fn an_entry_lives_while_a_call_holds_or_waits_for_it() {
        let key = OutboxKey::folder(Path::new("/ldp-turns-test/entry"));
        assert!(!in_use(&key));
        let turn = take(key.clone(), None).unwrap().expect("a free turn");
        assert!(in_use(&key));
        // Another thread waits until its deadline, then gives up, leaving the holder's entry.
        let waiter = {
            let key = key.clone();
            thread::spawn(move || take(key, Some(Instant::now() + Duration::from_millis(50))).unwrap().is_none())
        };
        assert!(waiter.join().unwrap(), "the turn was held");
        assert!(in_use(&key));
        // The holder's own thread is refused at once.
        let again = take(key.clone(), None).err().expect("refused");
        assert!(matches!(again, Error::Value(_)), "{again}");
        assert!(in_use(&key));
        drop(turn);
        assert!(!in_use(&key), "the last call's end removes the entry");
        // Given up and refused calls leave nothing either.
        drop(take(key.clone(), Some(Instant::now())).unwrap().expect("free again"));
        assert!(!in_use(&key));
    }

    #[test]
    fn a_waiter_takes_the_turn_when_it_ends() {
        let key = OutboxKey::folder(Path::new("/ldp-turns-test/handover"));
        let turn = take(key.clone(), None).unwrap().expect("a free turn");
        let waiter = {
            let key = key.clone();
            thread::spawn(move || {
                let t = take(key.clone(), Some(Instant::now() + Duration::from_secs(60))).unwrap();
                let held = t.is_some() && in_use(&key);
                drop(t);
                held
            })
        };
        drop(turn);
        assert!(waiter.join().unwrap(), "the waiter got the turn");
        assert!(!in_use(&key));
    }

    #[test]
    fn keys_of_objects_differ_by_address_and_type() {
        let (a, b) = (1u64, 1u64);
        assert_eq!(OutboxKey::of(&a), OutboxKey::of(&a));
        assert_ne!(OutboxKey::of(&a), OutboxKey::of(&b));
        #[repr(C)]
        struct Wrapper {
            inner: u64,
        }
        let w = Wrapper { inner: 7 };
        assert_eq!(&w as *const Wrapper as usize, &w.inner as *const u64 as usize);
        assert_ne!(OutboxKey::of(&w), OutboxKey::of(&w.inner), "one address, two types");
        assert_ne!(OutboxKey::of(&a), OutboxKey::folder(Path::new("/x")));
    }
}
