//! A small pool of background threads the whole process shares, for work a reader hands off
//! and takes the result of later (the table reader decompresses the next blocks of a zlib or
//! zstd scan here, while it works through the current one).
//!
//! The pool starts on first use with one thread fewer than the machine has cores, at least
//! one, so the thread that hands work off keeps a core. Jobs run in the order submitted.
//! A job must not wait for another job (the pool may be one thread); a submitter that needs
//! a result it finds not yet started should do the work itself.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A job runs outside the lock: nothing under it can be left half-updated by a panic.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `job` on one of the pool's threads; `false` if the pool has no thread (none could be
/// started), in which case `job` is dropped unrun and the caller does the work itself.
pub fn submit(job: impl FnOnce() + Send + 'static) -> bool {
    static POOL: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = false;
        for i in 0..threads() {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("leveltable-worker-{i}"))
                .spawn(move || work(&rx));
            started |= spawned.is_ok();
        }
        started.then(|| Mutex::new(tx))
    });
    match pool {
        Some(tx) => lock(tx).send(Box::new(job)).is_ok(),
        None => false,
    }
}

/// How many threads the pool runs: one fewer than the machine has cores, at least one.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .max(1)
}

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let next = lock(rx).recv();
        match next {
            // A job that panics takes its thread down with it, not the pool's lock: the
            // panic is caught here and the thread goes on with the next job.
            Ok(job) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_off_the_submitting_thread() {
        let (tx, rx) = mpsc::channel();
        let me = std::thread::current().id();
        for i in 0..32u32 {
            let tx = tx.clone();
            assert!(submit(move || {
                tx.send((i, std::thread::current().id())).unwrap();
            }));
        }
        let mut seen: Vec<_> = (0..32).map(|_| rx.recv().unwrap()).collect();
        assert!(seen.iter().all(|(_, id)| *id != me));
        seen.sort_by_key(|(i, _)| *i);
        assert_eq!(
            seen.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            (0..32).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_panicking_job_leaves_the_pool_working() {
        for _ in 0..threads() + 1 {
            assert!(submit(|| panic!("a job that fails")));
        }
        let (tx, rx) = mpsc::channel();
        assert!(submit(move || tx.send(7).unwrap()));
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)), Ok(7));
    }
}
