//! Helpers shared by the command-line tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `leveltable` binary.
pub fn leveltable() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("leveltable")
}

/// A file of the table crate's test data, written by LevelDB 1.23.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../table/testdata")
        .join(name)
}

/// The two lowercase hexadecimal digits of each byte.
const HEX: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [digits[i >> 4], digits[i & 15]];
        i += 1;
    }
    table
};

/// Appends the lowercase hexadecimal digits of `bytes` to `out`.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.extend_from_slice(&HEX[usize::from(b)]);
    }
}

/// `bytes` in lowercase hexadecimal digits.
pub fn hex(bytes: impl AsRef<[u8]>) -> String {
    let mut out = Vec::with_capacity(bytes.as_ref().len() * 2);
    push_hex(&mut out, bytes.as_ref());
    String::from_utf8(out).expect("hexadecimal digits are ASCII")
}

/// SplitMix64: deterministic, well-mixed numbers for keys and garbage.
pub fn splitmix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` bytes of deterministic noise.
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|i| splitmix(seed ^ (i << 8)) as u8)
        .collect()
}

/// The value of entry `i` of [`sorted_tsv`].
pub fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 17))
}

/// `n` entries `key000000<TAB>value-0-...` in increasing key order, as a TSV text.
pub fn sorted_tsv(n: usize) -> String {
    (0..n)
        .map(|i| format!("key{i:06}\t{}\n", value(i)))
        .collect()
}

/// Well-mixed keys (16 hex digits), sorted, each with a value: LevelDB's Bloom filter reaches
/// its design rate on these.
pub fn mixed_tsv(n: u64) -> (String, Vec<String>) {
    let mut keys: Vec<String> = (0..n).map(|i| format!("{:016x}", splitmix(i))).collect();
    keys.sort();
    let text = keys.iter().map(|k| format!("{k}\tv{k}\n")).collect();
    (text, keys)
}

/// Builds `name` in `dir` from `tsv` with extra `args`, asserting success.
pub fn build(dir: &Path, name: &str, tsv: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    leveltable()
        .arg("build")
        .arg(&out)
        .args(args)
        .write_stdin(tsv)
        .assert()
        .success();
    out
}

/// `path` as text (the tests' temporary paths are UTF-8).
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The names of the files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The process's standard error as text.
pub fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The process's standard output as text.
pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether GNU time is at `/usr/bin/time` to measure peak memory; says so when it is not.
pub fn time_available() -> bool {
    if Path::new("/usr/bin/time").exists() {
        return true;
    }
    println!("skipped: /usr/bin/time (GNU time) is not installed to measure peak memory");
    false
}

/// Runs `leveltable ARGS` under `/usr/bin/time`: its output (standard error ending with
/// the measurement) and its peak resident set in bytes.
pub fn run_measuring_memory<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
) -> (std::process::Output, u64) {
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss-kib=%M", env!("CARGO_BIN_EXE_leveltable")])
        .args(args)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    let kib: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss-kib="))
        .unwrap_or_else(|| panic!("no peak in {stderr}"))
        .trim()
        .parse()
        .unwrap();
    (out, kib * 1024)
}

/// `leveltable db COMMAND DIR ARGS...`, where `command` is the subcommand and the options
/// before the directory.
pub fn db_command(command: &[&str], dir: &Path, args: &[&str]) -> Command {
    let mut cmd = leveltable();
    cmd.arg("db").args(command).arg(dir).args(args);
    cmd
}

/// `leveltable db COMMAND DIR ARGS...` run to its end: its output.
pub fn db_output(command: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    db_command(&[command], dir, args).output().unwrap()
}

/// `leveltable db dump DIR ARGS...`, asserting success: its standard output.
pub fn db_dump(dir: &Path, args: &[&str]) -> String {
    let out = db_output("dump", dir, args);
    assert!(out.status.success(), "{}", stderr_of(&out));
    stdout_of(&out)
}

/// `leveltable db build DIR ARGS...` with `tsv` as its input, asserting success.
pub fn db_build(dir: &Path, tsv: &str, args: &[&str]) {
    db_command(&["build"], dir, args)
        .write_stdin(tsv.to_owned())
        .assert()
        .success();
}

/// [`db_command`] with `stdin` as its input, asserting that it fails with exit status 2: its
/// standard error.
pub fn db_error(command: &[&str], dir: &Path, args: &[&str], stdin: &str) -> String {
    let out = db_command(command, dir, args)
        .write_stdin(stdin.to_owned())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// [`db_command`] asserted to fail with exit status 2; check its standard error on the
/// result.
pub fn db_refused(command: &[&str], dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    db_command(command, dir, args).assert().code(2)
}

/// `leveltable db write --create-if-missing -q DIR` with `ops` as its input, asserting a
/// success that prints nothing.
pub fn db_write_quietly(dir: &Path, ops: &str) {
    db_command(&["write", "--create-if-missing", "-q"], dir, &[])
        .write_stdin(ops.to_owned())
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

/// Every file of `dir` with its bytes; LOCK only by name (a close of a handle of it would
/// release the lock this process may hold).
pub fn contents(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    files_in(dir)
        .into_iter()
        .map(|name| {
            if name == "LOCK" {
                return (name, Vec::new());
            }
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// The signals the commands handle, with their numbers.
pub const SIGNALS: [(&str, i32); 3] = [("INT", 2), ("TERM", 15), ("HUP", 1)];

/// Starts the `leveltable` binary with `args`, standard input and standard error piped,
/// standard output discarded.
pub fn spawn_piped<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
) -> std::process::Child {
    use std::process::Stdio;
    std::process::Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` (`INT`, `TERM`, …) to the process `pid` with kill(1), asserting success.
pub fn send_signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {signal} {pid}");
}

/// Calls `ready` every `interval` until it returns true, failing with `what()` after a
/// minute.
pub fn wait_until(
    interval: std::time::Duration,
    mut ready: impl FnMut() -> bool,
    what: impl Fn() -> String,
) {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{}",
            what()
        );
        std::thread::sleep(interval);
    }
}

/// Makes a FIFO at `path`, replacing a file there.
pub fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Whether `program ARGS...` runs and succeeds here. If not, the test is skipped with one
/// printed line (`skipped: {skipped}`), or fails when `LEVELTABLE_REQUIRE_SERVERS=1`, as CI
/// runs it.
pub fn tool_runs(program: &str, args: &[&str], skipped: &str) -> bool {
    use std::process::Stdio;
    let runs = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if runs {
        return true;
    }
    if std::env::var("LEVELTABLE_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("{program} cannot run, and LEVELTABLE_REQUIRE_SERVERS=1");
    }
    println!("skipped: {skipped}");
    false
}
