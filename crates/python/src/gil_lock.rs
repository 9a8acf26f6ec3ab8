//! Locking a mutex whose holder may release the GIL while it holds it (to read or write
//! with other Python threads running): a thread waiting for it with the GIL held would
//! never let the holder take the GIL back, and the two would wait for each other forever.

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;

/// Locks `mutex`, waiting (if another thread holds it) with the GIL released. A poisoned
/// lock is taken as it is: its holder panicked, and the value is still whole.
pub fn lock<'a, T: Send>(py: Python<'_>, mutex: &'a Mutex<T>) -> MutexGuard<'a, T> {
    loop {
        match mutex.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            // Wait for the holder without the GIL, then try again with it: the guard cannot
            // be carried out of a section without the GIL.
            Err(TryLockError::WouldBlock) => py.detach(|| drop(mutex.lock())),
        }
    }
}
