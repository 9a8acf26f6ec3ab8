//! Telling a process forked from the one that opened a database from that process, at the
//! cost of an atomic load rather than a `getpid` system call per write: a handler
//! registered with `pthread_atfork` counts the forks in each child.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// Forks this process descends through since the handler was registered (copied into each
/// child, which then adds one).
static FORKS: AtomicU64 = AtomicU64::new(0);

#[cfg(unix)]
extern "C" fn forked_child() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// The forks counted so far: a value that changes in every child forked after the first
/// call, and never in the process itself.
#[cfg(unix)]
#[allow(
    unsafe_code,
    reason = "pthread_atfork has no safe wrapper in the crates we use"
)]
pub(crate) fn forks() -> u64 {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: the handler is a function that lives as long as the process and only
        // adds to an atomic (async-signal-safe, as a child of a multithreaded process
        // needs); the other two handlers are none.
        let _ = unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
    });
    FORKS.load(Ordering::Relaxed)
}

/// Elsewhere no fork is counted (and the process id tells).
#[cfg(not(unix))]
pub(crate) fn forks() -> u64 {
    FORKS.load(Ordering::Relaxed)
}
