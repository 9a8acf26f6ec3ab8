//! SIGINT, SIGTERM and SIGHUP during `build` leave no temporary file and no table behind:
//! the command removes its temporary file and ends by the signal.

#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const TEMP_PREFIX: &str = ".leveltable-tmp-";

fn temporaries(dir: &Path) -> Vec<String> {
    files_in(dir)
        .into_iter()
        .filter(|n| n.starts_with(TEMP_PREFIX))
        .collect()
}

/// Starts a build reading a slow standard input, waits until its temporary file exists and
/// holds data, sends `signal` and checks what is left.
fn interrupted_build(signal: &str, number: i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    let mut child = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .arg("build")
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Part of the input: enough for blocks to reach the temporary file; more never comes.
    stdin.write_all(sorted_tsv(50_000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let started = Instant::now();
    loop {
        let temps = temporaries(dir.path());
        let written = temps
            .iter()
            .any(|t| std::fs::metadata(dir.path().join(t)).is_ok_and(|m| m.len() > 0));
        if written {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no temporary file appeared: {:?}",
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
    assert_eq!(status.signal(), Some(number), "{signal}: {status:?}");
    assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{signal}");
}

#[test]
fn sigint_removes_the_temporary_file() {
    interrupted_build("INT", 2);
}

#[test]
fn sigterm_removes_the_temporary_file() {
    interrupted_build("TERM", 15);
}

#[test]
fn sighup_removes_the_temporary_file() {
    interrupted_build("HUP", 1);
}
