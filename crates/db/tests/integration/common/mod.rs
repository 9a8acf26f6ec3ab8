//! Helpers shared by the database tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod comparators;
pub mod dbs;
pub mod failing_fs;
pub mod wrapped_fs;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a thread of its own and fails the test unless it returns within 10 s (an
/// open or read of a FIFO waits for the other end, forever).
pub fn promptly<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} did not return within 10 s"))
}

/// The names in the directory `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Makes a FIFO at `path`, in place of any file there.
pub fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}
