//! SIGINT, SIGTERM and SIGHUP during `build` leave no temporary file and no table behind:
//! the command removes its temporary file and ends by the signal.

#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use common::*;

const TEMP_PREFIX: &str = ".leveltable-tmp-";

/// The names of the build's temporary files in `dir`.
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
    let mut child = spawn_piped(["build", path_str(&out)]);
    let mut stdin = child.stdin.take().unwrap();
    // Part of the input: enough for blocks to reach the temporary file; more never comes.
    stdin.write_all(sorted_tsv(50_000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    wait_until(
        Duration::from_millis(10),
        || {
            temporaries(dir.path())
                .iter()
                .any(|t| std::fs::metadata(dir.path().join(t)).is_ok_and(|m| m.len() > 0))
        },
        || format!("no temporary file appeared: {:?}", files_in(dir.path())),
    );
    send_signal(child.id(), signal);
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.signal(), Some(number), "{signal}: {status:?}");
    assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{signal}");
}

#[test]
fn signals_remove_the_temporary_file() {
    for (signal, number) in SIGNALS {
        interrupted_build(signal, number);
    }
}
