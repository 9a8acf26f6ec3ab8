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
use std::time::Duration;

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
    let mut child = spawn_piped([
        "db",
        command,
        "--sort",
        "--memory",
        "1048576",
        path_str(&target),
    ]);
    let mut stdin = child.stdin.take().unwrap();
    // About 4 MB in reverse key order: more than the sort's 1 MiB, so runs are spilled;
    // the rest of the input never comes.
    let text: String = (0..60_000u32)
        .rev()
        .map(|i| format!("key{i:08}\t{}\n", "v".repeat(50)))
        .collect();
    stdin.write_all(text.as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_until(
        Duration::from_millis(10),
        || spilled(dir.path()),
        || format!("no run was spilled: {:?}", files_in(dir.path())),
    );
    send_signal(child.id(), signal);
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
fn signals_during_a_sorted_build_leave_nothing() {
    for (signal, number) in SIGNALS {
        interrupted_sort("build", signal, number);
    }
}

#[test]
fn signals_during_a_sorted_part_build_leave_nothing() {
    for (signal, number) in SIGNALS {
        interrupted_sort("build-part", signal, number);
    }
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

/// Stages a part of about 96 MB of tables that do not compress, in 1 MiB files, in
/// `dir/part`, and returns its path.
fn stage_part(dir: &Path) -> PathBuf {
    let staging = dir.join("part");
    let mut text = Vec::with_capacity(240_000 * 412);
    for i in 0..240_000u64 {
        write!(text, "key{i:08}\t").unwrap();
        push_hex(&mut text, &noise(i, 200));
        text.push(b'\n');
    }
    leveltable()
        .args(["db", "build-part", "-q", "--compression", "none"])
        .args(["--max-file-size", "1048576"])
        .arg(&staging)
        .write_stdin(text)
        .assert()
        .success();
    staging
}

/// A commit of `staging` copying onto the tmpfs `mount` is interrupted by `signal` once it
/// has created the database directory.
fn interrupted_commit(mount: &Tmpfs, staging: &Path, signal: &str, number: i32) {
    let before = snapshot(staging);
    let db = mount.0.join("db");
    let child = spawn_piped(["db", "commit", path_str(&db), path_str(staging)]);
    wait_until(
        Duration::from_micros(200),
        || db.exists(),
        || "the commit made no directory".to_owned(),
    );
    send_signal(child.id(), signal);
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.signal(),
        Some(number),
        "the commit ended before the signal: {:?}, {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(files_in(&mount.0), Vec::<String>::new(), "{signal}");
    assert!(before == snapshot(staging), "the part changed");
}

#[test]
fn signals_during_a_commit_leave_the_part_staged() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(&tmp.path().join("target"), "512m") else {
        return;
    };
    let staging = stage_part(tmp.path());
    for (signal, number) in SIGNALS {
        interrupted_commit(&mount, &staging, signal, number);
    }
}
