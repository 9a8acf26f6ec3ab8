//! Output that cannot be written never makes the command panic (exit code 101): a closed
//! pipe ends every command quietly with exit code 0, any other write error (a full disk) is
//! exit code 2, and a table already written stays complete.

#![cfg(target_os = "linux")]

use crate::common;

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use common::*;

/// The command with `args`, without standard input.
fn command(args: &[OsString]) -> Command {
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
    mkfifo(&fifo);
    let both = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    drop(both);
    writer
}

/// A handle of `/dev/full`: every write to it fails with ENOSPC.
fn full() -> File {
    File::create("/dev/full").expect("/dev/full")
}

/// Runs `cmd` with `stdin` as its standard input: its output.
fn run(mut cmd: Command, stdin: &[u8]) -> Output {
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may end before reading all of it.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

/// A table of 2000 entries, `t.ldb` in `dir`.
fn table(dir: &Path) -> PathBuf {
    build(dir, "t.ldb", &sorted_tsv(2000), &["--quiet"])
}

/// Every command, with arguments that make it print on standard output.
fn printing_commands(table: &Path) -> Vec<Vec<OsString>> {
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

/// The message of a write to a full standard output.
const FULL_STDOUT: &str = "error: cannot write to standard output: no space left on device\n";

/// Runs the command with `argv`, its standard output to a pipe whose reader is gone, and
/// checks that it succeeds quietly.
fn assert_quiet_on_a_closed_stdout(argv: &[OsString]) {
    let mut cmd = command(argv);
    cmd.stdout(closed_pipe()).stderr(Stdio::piped());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(0), "{argv:?}: {}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "", "{argv:?}");
}

/// Runs the command with `argv`, its standard output to a full disk, and checks that it
/// fails with status 2 and says so.
fn assert_fails_on_a_full_stdout(argv: &[OsString]) {
    let mut cmd = command(argv);
    cmd.stdout(full()).stderr(Stdio::piped());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(2), "{argv:?}: {}", stderr_of(&out));
    assert_eq!(stderr_of(&out), FULL_STDOUT, "{argv:?}");
}

/// Runs `get --stats TABLE KEY` and then a build of `out` from 100 lines, both with their
/// standard error to `stderr()`: their outputs.
fn get_and_build_with_stderr(
    table: &Path,
    key: &str,
    out: &Path,
    stderr: impl Fn() -> File,
) -> (Output, Output) {
    let mut get = command(&["get".into(), "--stats".into(), table.into(), key.into()]);
    get.stdout(Stdio::piped()).stderr(stderr());
    let got = run(get, b"");
    let mut build = command(&["build".into(), out.into()]);
    build.stdout(Stdio::piped()).stderr(stderr());
    (got, run(build, sorted_tsv(100).as_bytes()))
}

#[test]
fn a_closed_standard_output_is_a_quiet_success_for_every_command() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    for argv in printing_commands(&table) {
        assert_quiet_on_a_closed_stdout(&argv);
    }
}

#[test]
fn a_closed_standard_error_is_a_quiet_success_too() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    // get: `not found:` lines and the counters go to standard error; build: the summary
    // goes to standard error, after the table is complete.
    let out_path = dir.path().join("u.ldb");
    let (get, build) = get_and_build_with_stderr(&table, "absent", &out_path, closed_pipe);
    assert_eq!(get.status.code(), Some(0));
    assert_eq!(build.status.code(), Some(0));
    leveltable().arg("verify").arg(&out_path).assert().success();
}

#[test]
fn a_full_standard_output_is_an_error() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    for argv in printing_commands(&table) {
        assert_fails_on_a_full_stdout(&argv);
    }
}

#[test]
fn a_full_standard_error_is_an_error_and_a_written_table_stays() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path());
    let out_path = dir.path().join("u.ldb");
    let (get, build) = get_and_build_with_stderr(&table, "key000001", &out_path, full);
    assert_eq!(get.status.code(), Some(2));
    assert_eq!(stdout_of(&get), "key000001\tvalue-1-x\n");
    assert_eq!(build.status.code(), Some(2));
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
        assert_quiet_on_a_closed_stdout(&[flag.into()]);
        assert_fails_on_a_full_stdout(&[flag.into()]);
    }
    // A usage error whose message cannot be written still exits with 2.
    let mut cmd = command(&["build".into()]);
    cmd.stdout(Stdio::piped()).stderr(full());
    assert_eq!(run(cmd, b"").status.code(), Some(2));
}
