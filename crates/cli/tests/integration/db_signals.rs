//! SIGINT, SIGTERM and SIGHUP during `db build --sort` and `db build-part --sort`, once the
//! sort has spilled runs to disk, leave no spill directory, no staging directory and no
//! database behind: every temporary is removed and the command ends by the signal. A signal
//! during `db commit`, before `CURRENT`, removes what the commit made and leaves the parts
//! staged, unchanged.

#![cfg(unix)]

use crate::common;
use crate::tmpfs;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use common::*;
use tmpfs::Tmpfs;

/// Whether a `.leveltable-sort-*` directory in `dir` holds a spilled run with bytes.
fn spilled(dir: &Path) -> bool {
    files_in(dir)
        .iter()
        .filter(|n| n.starts_with(".leveltable-sort-"))
        .any(|n| {
            std::fs::read_dir(dir.join(n)).is_ok_and(|runs| {
                runs.flatten()
                    .any(|r| r.metadata().is_ok_and(|m| m.is_file() && m.len() > 0))
            })
        })
}

/// Starts `db <command> --sort --memory 1048576 <target>` reading a standard input that
/// stops short, waits until a run is spilled, sends `signal` and checks that nothing is
/// left in the directory.
fn interrupted_sort(command: &str, signal: &str, number: i32) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(["db", command, "--sort", "--memory", "1048576"])
        .arg(&target)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // About 4 MB in reverse key order: more than the sort's 1 MiB, so runs are spilled;
    // the rest of the input never comes.
    let text: String = (0..60_000u32)
        .rev()
        .map(|i| format!("key{i:08}\t{}\n", "v".repeat(50)))
        .collect();
    stdin.write_all(text.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let started = Instant::now();
    while !spilled(dir.path()) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no run was spilled: {:?}",
            files_in(dir.path())
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill")
        .arg("-s")
        .arg(signal)
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(
        status.signal(),
        Some(number),
        "{command} {signal}: {status:?}"
    );
    assert_eq!(
        files_in(dir.path()),
        Vec::<String>::new(),
        "{command} {signal}"
    );
}

#[test]
fn sigint_during_a_sorted_build_leaves_nothing() {
    interrupted_sort("build", "INT", 2);
}

#[test]
fn sigterm_during_a_sorted_build_leaves_nothing() {
    interrupted_sort("build", "TERM", 15);
}

#[test]
fn sighup_during_a_sorted_build_leaves_nothing() {
    interrupted_sort("build", "HUP", 1);
}

#[test]
fn sigint_during_a_sorted_part_build_leaves_nothing() {
    interrupted_sort("build-part", "INT", 2);
}

#[test]
fn sigterm_during_a_sorted_part_build_leaves_nothing() {
    interrupted_sort("build-part", "TERM", 15);
}

#[test]
fn sighup_during_a_sorted_part_build_leaves_nothing() {
    interrupted_sort("build-part", "HUP", 1);
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// One staged part of about 96 MB of tables that do not compress, in 1 MiB files, built
/// once and shared while a test holds it: the commits only read it, and each test checks
/// it is left unchanged. The last holder's drop removes it.
fn staged_part() -> Arc<tempfile::TempDir> {
    static PART: Mutex<Weak<tempfile::TempDir>> = Mutex::new(Weak::new());
    let mut shared = PART.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(part) = shared.upgrade() {
        return part;
    }
    let part = {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = Vec::with_capacity(240_000 * 412);
        for i in 0..240_000u64 {
            write!(text, "key{i:08}\t").unwrap();
            push_hex(&mut text, &noise(i, 200));
            text.push(b'\n');
        }
        leveltable()
            .args(["db", "build-part", "-q", "--compression", "none"])
            .args(["--max-file-size", "1048576"])
            .arg(tmp.path().join("part"))
            .write_stdin(text)
            .assert()
            .success();
        Arc::new(tmp)
    };
    *shared = Arc::downgrade(&part);
    part
}

/// A commit copying onto another file system is interrupted by `signal` once it has
/// created the database directory.
fn interrupted_commit(signal: &str, number: i32) {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(&tmp.path().join("target"), "512m") else {
        return;
    };
    let part = staged_part();
    let staging = part.path().join("part");
    let before = snapshot(&staging);
    let db = mount.0.join("db");
    let child = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(["db", "commit"])
        .arg(&db)
        .arg(&staging)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !db.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the commit made no directory"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let killed = Command::new("kill")
        .arg("-s")
        .arg(signal)
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.signal(),
        Some(number),
        "the commit ended before the signal: {:?}, {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(files_in(&mount.0), Vec::<String>::new(), "{signal}");
    assert!(before == snapshot(&staging), "the part changed");
}

#[test]
fn sigint_during_a_commit_leaves_the_part_staged() {
    interrupted_commit("INT", 2);
}

#[test]
fn sigterm_during_a_commit_leaves_the_part_staged() {
    interrupted_commit("TERM", 15);
}

#[test]
fn sighup_during_a_commit_leaves_the_part_staged() {
    interrupted_commit("HUP", 1);
}
