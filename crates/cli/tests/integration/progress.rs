//! The progress bars of the long commands (`build`, `db build`, `db build-part`, `db
//! commit`, `verify`, `db verify`, `db dump --salvage`): drawn on standard error when it is
//! a terminal (here a pseudo-terminal made by util-linux `script`), never when it is a pipe
//! or a file, never with `--quiet`; standard output, and the exit code, are the same
//! whichever.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{hex, leveltable, noise, stderr_of};

/// The characters of the bar (filled and empty).
const BAR: [char; 2] = ['█', '░'];

/// Whether `script` can run a command on a pseudo-terminal here; `false` (with one printed
/// line) if not and the environment allows skipping.
fn script_available() -> bool {
    common::tool_runs(
        "script",
        &["-qec", "true", "/dev/null"],
        "util-linux `script` (to run a command on a terminal) cannot run here",
    )
}

/// A word of a shell command line, quoted.
fn quoted(word: &Path) -> String {
    let text = word.to_str().unwrap();
    assert!(!text.contains('\''));
    format!("'{text}'")
}

/// What running `leveltable ARGS` gave: exit code, standard output, standard error.
struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn has_bar(&self) -> bool {
        self.stderr.contains(BAR)
    }

    fn has_escape(&self) -> bool {
        self.stderr.contains('\x1b')
    }
}

/// Runs `leveltable ARGS` with standard error on a pseudo-terminal and standard output to a
/// file: what the terminal received is its standard error.
fn on_terminal(dir: &Path, args: &[&Path]) -> Run {
    let out = dir.join("terminal-stdout");
    let mut line = quoted(&PathBuf::from(env!("CARGO_BIN_EXE_leveltable")));
    for a in args {
        line.push(' ');
        line.push_str(&quoted(a));
    }
    line.push_str(&format!(" > {}", quoted(&out)));
    let output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run {
        code: output.status.code(),
        stdout: fs::read(&out).unwrap(),
        // The terminal turns each newline into CR LF.
        stderr: String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n"),
    }
}

/// Runs `leveltable ARGS` with both streams on pipes.
fn piped(args: &[&Path]) -> Run {
    let output = leveltable().args(args).output().unwrap();
    Run {
        code: output.status.code(),
        stdout: output.stdout.clone(),
        stderr: stderr_of(&output),
    }
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

/// A file of `n` sorted entries with 200-byte values that do not compress.
fn input(dir: &Path, name: &str, range: std::ops::Range<u64>) -> PathBuf {
    let mut text = String::new();
    for i in range {
        text.push_str(&format!("key{i:08}\t{}\n", hex(noise(i, 100))));
    }
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// A database of about 2 MiB in several tables, built with no terminal.
fn database(dir: &Path) -> PathBuf {
    let tsv = input(dir, "db.tsv", 0..10_000);
    let db = dir.join("db");
    let built = piped(&[
        p("db"),
        p("build"),
        &db,
        &tsv,
        p("--max-file-size"),
        p("500000"),
    ]);
    assert_eq!(built.code, Some(0), "{}", built.stderr);
    db
}

/// `args` draws a bar on a terminal, draws none with `--quiet` or on a pipe, and prints the
/// same bytes on standard output with the same exit code every way.
fn draws_only_on_a_terminal(dir: &Path, args: &[&Path]) -> Run {
    let terminal = on_terminal(dir, args);
    assert!(
        terminal.has_bar(),
        "no bar on the terminal: {:?}",
        terminal.stderr
    );
    assert!(terminal.has_escape());
    let pipe = piped(args);
    assert!(!pipe.has_bar() && !pipe.has_escape(), "{:?}", pipe.stderr);
    let mut quiet_args = args.to_vec();
    quiet_args.push(p("--quiet"));
    let quiet = on_terminal(dir, &quiet_args);
    assert!(
        !quiet.has_bar() && !quiet.has_escape(),
        "{:?}",
        quiet.stderr
    );
    assert_eq!(terminal.stdout, pipe.stdout);
    assert_eq!(quiet.stdout, pipe.stdout);
    assert_eq!(terminal.code, pipe.code);
    assert_eq!(quiet.code, pipe.code);
    pipe
}

#[test]
fn db_verify_draws_a_bar_on_a_terminal_only() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let pipe = draws_only_on_a_terminal(tmp.path(), &[p("db"), p("verify"), &db]);
    assert_eq!(pipe.code, Some(0));
    assert!(String::from_utf8_lossy(&pipe.stdout).starts_with("ok: "));
    assert_eq!(pipe.stderr, "");
}

#[test]
fn a_failed_db_verify_clears_its_bar_before_the_error() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let mut tables: Vec<PathBuf> = fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .collect();
    tables.sort();
    assert!(tables.len() >= 3, "{tables:?}");
    let mut bytes = fs::read(&tables[1]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&tables[1], bytes).unwrap();

    let terminal = on_terminal(tmp.path(), &[p("db"), p("verify"), &db]);
    assert_eq!(terminal.code, Some(2));
    assert!(terminal.has_bar());
    // The bar's line is erased, and the message follows on a line of its own.
    let (_, after) = terminal.stderr.rsplit_once("\x1b[2K").unwrap();
    assert!(after.starts_with("error: corruption: "), "{after:?}");
    assert!(!after.contains(BAR));
    let pipe = piped(&[p("db"), p("verify"), &db]);
    assert_eq!(pipe.code, Some(2));
    assert_eq!(pipe.stderr, after);
}

#[test]
fn db_dump_salvage_draws_a_bar_while_it_reads_the_files() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let pipe = draws_only_on_a_terminal(tmp.path(), &[p("db"), p("dump"), p("--salvage"), &db]);
    assert_eq!(pipe.code, Some(0));
    assert_eq!(
        String::from_utf8_lossy(&pipe.stdout).lines().count(),
        10_000
    );
    // Without --salvage the open reads no table: no bar.
    let plain = on_terminal(tmp.path(), &[p("db"), p("dump"), &db]);
    assert!(
        !plain.has_bar() && !plain.has_escape(),
        "{:?}",
        plain.stderr
    );
    assert_eq!(plain.stdout, pipe.stdout);
}

#[test]
fn verify_of_a_table_draws_a_bar_on_a_terminal_only() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tsv = input(tmp.path(), "t.tsv", 0..10_000);
    let table = tmp.path().join("t.ldb");
    let built = piped(&[p("build"), &table, &tsv, p("--compression"), p("none")]);
    assert_eq!(built.code, Some(0), "{}", built.stderr);
    let pipe = draws_only_on_a_terminal(tmp.path(), &[p("verify"), &table]);
    assert_eq!(pipe.code, Some(0));
    assert!(String::from_utf8_lossy(&pipe.stdout).starts_with("ok: "));
}

#[test]
fn db_commit_draws_a_bar_and_quiet_silences_it_with_the_summary() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let first = input(tmp.path(), "1.tsv", 0..5_000);
    let second = input(tmp.path(), "2.tsv", 5_000..10_000);
    let parts = |name: &str| -> [PathBuf; 2] {
        let staged = [0, 1].map(|i| tmp.path().join(format!("{name}-part{i}")));
        for (staging, tsv) in staged.iter().zip([&first, &second]) {
            let built = piped(&[p("db"), p("build-part"), staging, tsv]);
            assert_eq!(built.code, Some(0), "{}", built.stderr);
        }
        staged
    };
    let [a, b] = parts("terminal");
    let db = tmp.path().join("terminal-db");
    let terminal = on_terminal(tmp.path(), &[p("db"), p("commit"), &db, &a, &b]);
    assert_eq!(terminal.code, Some(0));
    assert!(terminal.has_bar(), "{:?}", terminal.stderr);
    let (_, summary) = terminal.stderr.rsplit_once("\x1b[2K").unwrap();
    assert!(summary.starts_with("committed "), "{summary:?}");

    let [a, b] = parts("quiet");
    let db = tmp.path().join("quiet-db");
    let quiet = on_terminal(tmp.path(), &[p("db"), p("commit"), p("-q"), &db, &a, &b]);
    assert_eq!(quiet.code, Some(0));
    assert_eq!(quiet.stderr, "");

    let [a, b] = parts("pipe");
    let db = tmp.path().join("pipe-db");
    let pipe = piped(&[p("db"), p("commit"), &db, &a, &b]);
    assert_eq!(pipe.code, Some(0));
    assert!(pipe.stderr.starts_with("committed ") && !pipe.has_escape());
    assert!(terminal.stdout.is_empty() && quiet.stdout.is_empty() && pipe.stdout.is_empty());
}

#[test]
fn build_bars_are_silenced_by_quiet() {
    if !script_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tsv = input(tmp.path(), "t.tsv", 0..2_000);
    for (args, out) in [
        (vec![p("build")], "t.ldb"),
        (vec![p("db"), p("build")], "db"),
        (vec![p("db"), p("build-part")], "part"),
    ] {
        for quiet in [false, true] {
            let out = tmp.path().join(format!("{out}-{quiet}"));
            let mut args = args.clone();
            args.extend([out.as_path(), tsv.as_path()]);
            if quiet {
                args.push(p("--quiet"));
            }
            let run = on_terminal(tmp.path(), &args);
            assert_eq!(run.code, Some(0), "{:?}", run.stderr);
            assert_eq!(run.has_bar(), !quiet, "{args:?}: {:?}", run.stderr);
            assert_eq!(run.stderr.is_empty(), quiet, "{args:?}: {:?}", run.stderr);
        }
    }
}
