//! Atomic table creation under SIGKILL: a child process builds a large table with
//! `AtomicTableFile` and is killed at random moments. Afterwards the final path holds either
//! nothing or a complete table that verifies, and any leftover is a temporary file named
//! with `TEMP_FILE_PREFIX`.

#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use leveltable_table::atomic_file::TEMP_FILE_PREFIX;
use leveltable_table::{AtomicTableFile, BuildOptions, ReadOptions, Table};

const CHILD_ENV: &str = "LEVELTABLE_KILL_TEST_TARGET";
const ENTRIES: u64 = 400_000;

/// In the child (the environment names a path): builds the table there. In the parent: does
/// nothing.
#[test]
fn child_build() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
    for i in 0..ENTRIES {
        file.add(format!("key{i:012}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    file.finish().unwrap();
}

/// A small deterministic generator of kill delays.
fn delays(n: usize) -> impl Iterator<Item = Duration> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_millis(x % 400)
    })
}

fn check_directory(dir: &Path, path: &Path) -> (bool, usize) {
    let mut leftovers = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        let name = name.to_string_lossy();
        if name != "t.ldb" {
            assert!(name.starts_with(TEMP_FILE_PREFIX), "unexpected file {name}");
            leftovers += 1;
        }
    }
    let complete = path.exists();
    if complete {
        let table = Table::open(std::fs::File::open(path).unwrap(), ReadOptions::default())
            .expect("a table under the final name opens");
        let summary = table.verify().expect("and verifies");
        assert_eq!(summary.entries, ENTRIES);
    }
    (complete, leftovers)
}

#[test]
fn killed_builds_leave_nothing_or_a_complete_table() {
    let exe = std::env::current_exe().unwrap();
    let (mut complete, mut empty) = (0, 0);
    for delay in delays(16) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let mut child = Command::new(&exe)
            .args(["--exact", "kill::child_build", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // SIGKILL: no destructor runs, so temporaries may be left behind.
        let _ = child.kill();
        child.wait().unwrap();
        let (done, leftovers) = check_directory(dir.path(), &path);
        if done {
            complete += 1;
        } else {
            empty += 1;
        }
        assert!(leftovers <= 1, "at most the one temporary file");
    }
    println!("{complete} complete tables, {empty} killed before the rename");
    assert!(empty > 0, "some kills landed mid-build");
}
