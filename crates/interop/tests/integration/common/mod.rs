//! Shared setup of the differential tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};

use proptest::test_runner::{Config, FileFailurePersistence};

/// Proptest configuration for one property file: the case count comes from
/// `PROPTEST_CASES` (256 by default) and shrunk failures are kept in
/// `tests/regressions/<name>.txt` (tests run with the crate directory as working directory),
/// which proptest replays first on every later run.
pub fn config(regressions: &'static str) -> Config {
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        ..Config::default()
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from lowercase hex.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// Runs the property `test` on values of `strategy` with [`config`], panicking with the
/// shrunk failing input (and proptest's report) if it fails. Tests call
/// [`require_leveldb`](leveltable_interop::require_leveldb) once before, so without LevelDB
/// no case runs.
pub fn check<S>(
    regressions: &'static str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), proptest::test_runner::TestCaseError>,
) where
    S: proptest::strategy::Strategy,
    S::Value: std::fmt::Debug,
{
    let mut runner = proptest::test_runner::TestRunner::new(config(regressions));
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}\n{runner}");
    }
}

/// A configurable count: the environment variable's value or the default.
pub fn count(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether `k` lies between the bounds `lo` and `hi`.
pub fn in_range(k: &[u8], lo: &std::ops::Bound<Vec<u8>>, hi: &std::ops::Bound<Vec<u8>>) -> bool {
    use std::ops::Bound;
    (match lo {
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
        Bound::Unbounded => true,
    })
}

/// Panics unless the two lists are equal, naming the first entry that differs (the lists
/// can be long; printing them whole helps nobody).
pub fn same(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    if got == want {
        return;
    }
    let i = got.iter().zip(want).take_while(|(a, b)| a == b).count();
    let show = |e: Option<&(Vec<u8>, Vec<u8>)>| {
        e.map(|(k, v)| format!("{:?} ({} value bytes)", String::from_utf8_lossy(k), v.len()))
    };
    panic!(
        "{what}: {} entries, expected {}; first difference at {i}: {:?}, expected {:?}",
        got.len(),
        want.len(),
        show(got.get(i)),
        show(want.get(i)),
    );
}

/// Runs the test `child` of this test binary in a process of its own, with `env` set,
/// SIGKILLs it after `after`, and returns the last number it printed at the end of a line
/// of standard output (what it had acknowledged; 0 if nothing).
pub fn kill_child(child: &str, env: (&str, &str), after: std::time::Duration) -> u64 {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut process = child_test(child)
        .env(env.0, env.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    process.kill().unwrap(); // SIGKILL
    process.wait().unwrap();
    let mut acknowledged = 0u64;
    for line in BufReader::new(process.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        // The test harness may print its own words before the first count.
        if let Some(Ok(n)) = line.split_whitespace().last().map(str::parse::<u64>) {
            acknowledged = n;
        }
    }
    acknowledged
}

/// Copies the regular files of `from` into `to` (created if missing).
pub fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A command running only the test `name` of this test binary, printing its output.
pub fn child_test(name: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", name, "--nocapture", "--test-threads", "1"]);
    command
}

/// A scratch directory in memory when the system has one: LevelDB syncs its MANIFEST on
/// every new file, which dominates the run time on a disk.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().unwrap()
}

/// Every name in `dir` and the bytes of every regular file (empty for others), sorted.
pub fn dir_state(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

/// The first file of `dir` whose name satisfies `pred`.
pub fn file_named(dir: &Path, pred: impl Fn(&str) -> bool) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| pred(&p.file_name().unwrap().to_string_lossy()))
        .unwrap()
}

/// The MANIFEST of the database `dir`.
pub fn manifest_file(dir: &Path) -> PathBuf {
    file_named(dir, |n| n.starts_with("MANIFEST-"))
}

/// The (first) log of the database `dir`.
pub fn log_file(dir: &Path) -> PathBuf {
    file_named(dir, |n| n.ends_with(".log"))
}

/// The (first) `.ldb` table of the database `dir`.
pub fn table_file(dir: &Path) -> PathBuf {
    file_named(dir, |n| n.ends_with(".ldb"))
}

/// A fresh copy of `original` in `work/flipped` with bit `bit` of `target(copy)` flipped.
pub fn flipped_copy(
    original: &Path,
    work: &Path,
    target: &impl Fn(&Path) -> PathBuf,
    bit: usize,
) -> PathBuf {
    let dir = work.join("flipped");
    let _ = std::fs::remove_dir_all(&dir);
    copy_files(original, &dir);
    let file = target(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[bit / 8] ^= 1 << (bit % 8);
    std::fs::write(&file, &bytes).unwrap();
    dir
}
