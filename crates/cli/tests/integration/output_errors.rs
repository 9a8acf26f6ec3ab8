//! Output that cannot be written never makes the command panic (exit code 101): a closed
//! pipe ends every command quietly with exit code 0, any other write error (a full disk) is
//! exit code 2, and a table already written stays complete.

#![cfg(target_os = "linux")]

use crate::common;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use common::*;

/// The command with `args`, `stdin` as input.
fn command(args: &[&std::ffi::OsStr]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leveltable"));
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// Held by each test of this file while it runs: they run one at a time. A command spawned
/// by one test while another holds the reading end of its pipe (in [`closed_pipe`]) would
/// keep that end open until the command's exec, and a write to the "closed" pipe could
/// then succeed.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writing end of a pipe whose reading end is already closed: every write to it fails
/// with EPIPE. Made from a FIFO: opened for reading and writing (which Linux allows without
/// waiting), then for writing only, then the first handle is closed, leaving no reader.
fn closed_pipe() -> File {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let both = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    drop(both);
    writer
}

fn full() -> File {
    File::create("/dev/full").expect("/dev/full")
}

fn run(mut cmd: Command, stdin: &[u8]) -> Output {
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may end before reading all of it.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

fn table(dir: &Path) -> PathBuf {
    build(dir, "t.ldb", &sorted_tsv(2000), &["--quiet"])
}

/// Every command, with arguments that make it print on standard output.
fn printing_commands(table: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let t = table.as_os_str().to_owned();
    vec![
        vec!["verify".into(), t.clone()],
        vec!["dump".into(), t.clone()],
        vec!["stats".into(), t.clone()],
        vec!["stats".into(), "--json".into(), t.clone()],
        vec!["get".into(), t.clone(), "key000001".into()],
        vec!["audit".into(), t.clone()],
    ]
}

fn args(v: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    v.iter().map(|s| s.as_os_str()).collect()
}

#[test]
fn a_closed_standard_output_is_a_quiet_success_for_every_command() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    for argv in printing_commands(&table) {
        let mut cmd = command(&args(&argv));
        cmd.stdout(closed_pipe()).stderr(Stdio::piped());
        let out = run(cmd, b"");
        assert_eq!(out.status.code(), Some(0), "{argv:?}: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), "", "{argv:?}");
    }
}

#[test]
fn a_closed_standard_error_is_a_quiet_success_too() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    // get: `not found:` lines and the counters go to standard error.
    let mut cmd = command(&args(&[
        "get".into(),
        "--stats".into(),
        table.clone().into_os_string(),
        "absent".into(),
    ]));
    cmd.stdout(Stdio::piped()).stderr(closed_pipe());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(0));
    // build: the summary goes to standard error, after the table is complete.
    let out_path = dir.path().join("u.ldb");
    let mut cmd = command(&args(&["build".into(), out_path.clone().into_os_string()]));
    cmd.stdout(Stdio::piped()).stderr(closed_pipe());
    let out = run(cmd, sorted_tsv(100).as_bytes());
    assert_eq!(out.status.code(), Some(0));
    leveltable().arg("verify").arg(&out_path).assert().success();
}

#[test]
fn a_full_standard_output_is_an_error() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    for argv in printing_commands(&table) {
        let mut cmd = command(&args(&argv));
        cmd.stdout(full()).stderr(Stdio::piped());
        let out = run(cmd, b"");
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", stderr_of(&out));
        assert_eq!(
            stderr_of(&out),
            "error: cannot write to standard output: no space left on device\n",
            "{argv:?}"
        );
    }
}

#[test]
fn a_full_standard_error_is_an_error_and_a_written_table_stays() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    let mut cmd = command(&args(&[
        "get".into(),
        "--stats".into(),
        table.clone().into_os_string(),
        "key000001".into(),
    ]));
    cmd.stdout(Stdio::piped()).stderr(full());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout_of(&out), "key000001\tvalue-1-x\n");

    let out_path = dir.path().join("u.ldb");
    let mut cmd = command(&args(&["build".into(), out_path.clone().into_os_string()]));
    cmd.stdout(Stdio::piped()).stderr(full());
    let out = run(cmd, sorted_tsv(100).as_bytes());
    assert_eq!(out.status.code(), Some(2));
    leveltable()
        .arg("verify")
        .arg(&out_path)
        .assert()
        .success()
        .stdout(predicates::str::starts_with(format!(
            "ok: {}: 100 entries,",
            out_path.display()
        )));
    assert_eq!(files_in(dir.path()), ["t.ldb", "u.ldb"]);
}

/// `get` with many missing keys writes its `not found:` lines in a few large writes, not
/// one write per line; the lines all arrive, in order.
#[test]
fn many_missing_keys_are_reported_in_order() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    let keys: String = (0..5000).map(|i| format!("absent{i:05}\n")).collect();
    let out = leveltable()
        .arg("get")
        .arg(&table)
        .write_stdin(keys.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let expected: String = keys.lines().map(|k| format!("not found: {k}\n")).collect();
    assert_eq!(stderr_of(&out), expected);
}

/// Counts the write syscalls of `get` with `strace`, where it is installed: buffered
/// standard error takes a handful, not one per missing key.
#[test]
fn missing_keys_take_few_writes() {
    let _one = one_at_a_time();
    let traced = Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .output();
    if !traced.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: strace is not installed or cannot trace here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    let keys: String = (0..2000).map(|i| format!("absent{i:05}\n")).collect();
    let log = dir.path().join("strace.log");
    let mut cmd = Command::new("strace");
    cmd.arg("-f")
        .arg("-e")
        .arg("trace=write")
        .arg("-o")
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_leveltable"))
        .arg("get")
        .arg(&table)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let out = run(cmd, keys.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let writes = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("write(2,"))
        .count();
    assert!(writes < 20, "{writes} writes for 2000 missing keys");
}

#[test]
fn help_and_version_follow_the_same_rules() {
    let _one = one_at_a_time();
    for flag in ["--help", "--version", "-h"] {
        let mut cmd = command(&[flag.as_ref()]);
        cmd.stdout(closed_pipe()).stderr(Stdio::piped());
        let out = run(cmd, b"");
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert_eq!(stderr_of(&out), "", "{flag}");

        let mut cmd = command(&[flag.as_ref()]);
        cmd.stdout(full()).stderr(Stdio::piped());
        let out = run(cmd, b"");
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert_eq!(
            stderr_of(&out),
            "error: cannot write to standard output: no space left on device\n",
            "{flag}"
        );
    }
    // A usage error whose message cannot be written still exits with 2.
    let mut cmd = command(&["build".as_ref()]);
    cmd.stdout(Stdio::piped()).stderr(full());
    assert_eq!(run(cmd, b"").status.code(), Some(2));
}
