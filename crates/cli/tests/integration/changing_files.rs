//! A table that shrinks while a command reads it: the message says so and names the file.

#![cfg(target_os = "linux")]

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// Whether process `pid` has `path` open.
fn has_open(pid: u32, path: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| target == path)
}

/// Whether process `pid` is asleep (here: waiting for standard input).
fn sleeping(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = &stat[stat.rfind(')')? + 1..];
            after_name.split_whitespace().next().map(|s| s == "S")
        })
        .unwrap_or(false)
}

#[test]
fn a_table_truncated_while_read_says_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &sorted_tsv(20_000), &["--quiet"]);
    let table = table.canonicalize().unwrap();
    // `get` opens the table, then waits for keys on standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .arg("get")
        .arg(&table)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut asleep = 0;
    wait_until(
        Duration::from_millis(20),
        || {
            asleep = if has_open(child.id(), &table) && sleeping(child.id()) {
                asleep + 1
            } else {
                0
            };
            asleep >= 5
        },
        || "get never opened the table".to_owned(),
    );
    let len = std::fs::metadata(&table).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(len / 4)
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"key019999\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(
        stderr_of(&out),
        format!(
            "error: cannot read {}: table is shorter than its footer says: file changed while \
             reading?\n",
            table.display()
        )
    );
}
