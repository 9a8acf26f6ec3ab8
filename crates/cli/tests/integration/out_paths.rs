//! Where `build` writes: only a regular file is replaced with --force; a missing directory
//! is named as such; a directory that can be written but not read gets the table and a
//! warning, not an error.

#![cfg(unix)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;
use predicates::prelude::*;

fn refused(out: &Path, message: &str) {
    leveltable()
        .arg("build")
        .arg("--force")
        .arg(out)
        .write_stdin(sorted_tsv(10))
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!("error: {message}\n"));
}

#[test]
fn force_refuses_a_symbolic_link_and_keeps_link_and_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = build(dir.path(), "t-5.ldb", &sorted_tsv(5), &["--quiet"]);
    let before = std::fs::read(&target).unwrap();
    let link = dir.path().join("current.ldb");
    std::os::unix::fs::symlink("t-5.ldb", &link).unwrap();
    refused(
        &link,
        &format!(
            "{} is a symbolic link; --force replaces only a regular file",
            link.display()
        ),
    );
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), before);
    // A link to a device, as /dev/stdout is.
    let stdout_link = dir.path().join("out.ldb");
    std::os::unix::fs::symlink("/dev/null", &stdout_link).unwrap();
    refused(
        &stdout_link,
        &format!(
            "{} is a symbolic link; --force replaces only a regular file",
            stdout_link.display()
        ),
    );
    // Without --force a link, even a dangling one, is something that exists.
    let dangling = dir.path().join("dangling.ldb");
    std::os::unix::fs::symlink("nowhere.ldb", &dangling).unwrap();
    leveltable()
        .arg("build")
        .arg(&dangling)
        .write_stdin(sorted_tsv(1))
        .assert()
        .code(2)
        .stderr(format!(
            "error: {} already exists (use --force to replace it)\n",
            dangling.display()
        ));
    assert_eq!(
        files_in(dir.path()),
        ["current.ldb", "dangling.ldb", "out.ldb", "t-5.ldb"]
    );
}

#[test]
fn force_refuses_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.ldb");
    mkfifo(&fifo);
    refused(
        &fifo,
        &format!(
            "{} is a FIFO; --force replaces only a regular file",
            fifo.display()
        ),
    );
    assert_eq!(files_in(dir.path()), ["fifo.ldb"]);
}

#[test]
fn force_still_replaces_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    std::fs::write(&out, b"old").unwrap();
    leveltable()
        .arg("build")
        .arg("--force")
        .arg("--quiet")
        .arg(&out)
        .write_stdin(sorted_tsv(10))
        .assert()
        .success();
    leveltable().arg("verify").arg(&out).assert().success();
}

#[test]
fn a_missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no").join("such");
    let out = missing.join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&out)
        .write_stdin(sorted_tsv(1))
        .assert()
        .code(2)
        .stderr(format!(
            "error: cannot write {}: the directory {} does not exist\n",
            out.display(),
            missing.display()
        ));
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let under_file = file.join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&under_file)
        .write_stdin(sorted_tsv(1))
        .assert()
        .code(2)
        .stderr(format!(
            "error: cannot write {}: {} is not a directory\n",
            under_file.display(),
            file.display()
        ));
    assert_eq!(files_in(dir.path()), ["file"]);
}

/// Runs `leveltable ARGS` as a user who is not root: as this process when it is not root,
/// otherwise as `nobody` through `setpriv`. `None` when neither is possible here.
fn as_non_root(args: &[&std::ffi::OsStr], stdin: &[u8]) -> Option<std::process::Output> {
    use std::io::Write;
    use std::process::Stdio;
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let bin = env!("CARGO_BIN_EXE_leveltable");
    let mut cmd = if root {
        let probe = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                bin,
                "--version",
            ])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            return None;
        }
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        cmd
    } else {
        Command::new(bin)
    };
    let mut child = cmd
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    Some(child.wait_with_output().unwrap())
}

#[test]
fn a_directory_that_cannot_be_read_gets_the_table_and_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for mode in [0o333, 0o1733] {
        let boxed = dir.path().join(format!("box{mode:o}"));
        std::fs::create_dir(&boxed).unwrap();
        std::fs::set_permissions(&boxed, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = boxed.join("t.ldb");
        let Some(result) = as_non_root(
            &["build".as_ref(), out.as_os_str()],
            sorted_tsv(100).as_bytes(),
        ) else {
            eprintln!("skipped: cannot run as a user other than root here (no setpriv)");
            return;
        };
        std::fs::set_permissions(&boxed, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stderr = stderr_of(&result);
        assert_eq!(result.status.code(), Some(0), "{stderr}");
        let warning = format!(
            "warning: {} is complete and in place, but its directory {} could not be synced \
             (permission denied), so a system crash soon after may undo the rename\n",
            out.display(),
            boxed.display()
        );
        assert!(stderr.starts_with(&warning), "{stderr}");
        assert!(
            predicate::str::is_match("\nwrote .*: 100 entries")
                .unwrap()
                .eval(&stderr),
            "{stderr}"
        );
        leveltable().arg("verify").arg(&out).assert().success();
        assert_eq!(files_in(&boxed), ["t.ldb"]);
    }
}
