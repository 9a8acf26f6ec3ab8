//! The `LOCK` file's lock within one process, and what stands in its place refused. Its
//! exclusion of LevelDB processes is tested against LevelDB itself, in the interop crate
//! (`crates/interop/tests/db_lock.rs`).

use std::fs;
use std::path::Path;

use leveltable_db::{DbLock, Error};

use crate::common;

#[cfg(unix)]
use common::{mkfifo, names};

fn locked_by_this_process(result: leveltable_db::Result<DbLock>, lock: &Path) {
    match result {
        Err(Error::Locked {
            path,
            by_this_process: true,
        }) => assert_eq!(path, lock),
        other => panic!("expected the lock held by this process, got {other:?}"),
    }
}

#[test]
fn a_second_lock_in_the_process_fails_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let lock_path = dir.path().join("LOCK");
    let first = DbLock::acquire(dir.path()).unwrap();
    assert!(first.created());
    assert_eq!(first.path(), lock_path);

    let second = DbLock::acquire(dir.path());
    let message = second.as_ref().unwrap_err().to_string();
    assert!(
        message.contains(&lock_path.display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("already locked by this process"),
        "{message}"
    );
    locked_by_this_process(second, &lock_path);
    // Another spelling of the same directory is the same file.
    locked_by_this_process(DbLock::acquire(dir.path().join(".")), &lock_path);

    drop(first);
    assert!(
        lock_path.is_file(),
        "the LOCK file stays, as LevelDB leaves it"
    );
    let again = DbLock::acquire(dir.path()).unwrap();
    assert!(!again.created());
}

/// Refused attempts keep no handle open while the lock is held (a handle of a held file is
/// kept, not closed, since its close would release the lock).
#[cfg(target_os = "linux")]
#[test]
fn refused_attempts_keep_no_handles() {
    let open_fds = || fs::read_dir("/proc/self/fd").unwrap().count();
    let dir = tempfile::tempdir().unwrap();
    let _first = DbLock::acquire(dir.path()).unwrap();
    let before = open_fds();
    for _ in 0..1000 {
        assert!(DbLock::acquire(dir.path()).is_err());
    }
    // Other tests of this binary open files meanwhile, but not hundreds.
    let after = open_fds();
    assert!(after < before + 100, "{before} open before, {after} after");
}

#[test]
fn locks_of_other_directories_are_independent() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let _a = DbLock::acquire(a.path()).unwrap();
    let _b = DbLock::acquire(b.path()).unwrap();
}

#[cfg(unix)]
#[test]
fn the_lock_file_is_made_as_leveldb_makes_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    drop(DbLock::acquire(dir.path()).unwrap());
    let metadata = fs::metadata(dir.path().join("LOCK")).unwrap();
    assert!(metadata.is_file());
    assert_eq!(metadata.len(), 0);
    // 0644, less what the umask takes away.
    assert_eq!(metadata.permissions().mode() & 0o7133, 0);
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing but LOCK"
    );
}

#[test]
fn a_missing_directory_is_an_error_naming_the_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    let e = DbLock::acquire(&missing).unwrap_err();
    assert!(matches!(e, Error::FileOp { .. }), "{e:?}");
    let message = e.to_string();
    assert!(message.contains("cannot lock"), "{message}");
    assert!(
        message.contains(&missing.join("LOCK").display().to_string()),
        "{message}"
    );
    assert!(!missing.exists());
}

/// Refuses what stands at `dir/LOCK`, saying `what` and naming it, with the directory's
/// entries unchanged.
fn refused(dir: &Path, what: &str) {
    let before: Vec<_> = names(dir);
    let e = DbLock::acquire(dir).unwrap_err();
    assert!(matches!(e, Error::FileOp { .. }), "{e:?}");
    let message = e.to_string();
    assert!(message.contains(what), "{message}");
    assert!(
        message.contains(&dir.join("LOCK").display().to_string()),
        "{message}"
    );
    assert_eq!(names(dir), before, "nothing made");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_is_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    fs::create_dir(&db).unwrap();

    // Dangling: its target is not created.
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, db.join("LOCK")).unwrap();
    refused(&db, "a symbolic link");
    assert!(!target.exists(), "the link's target was created");

    // To a file: the file is neither locked nor changed.
    fs::write(&target, b"kept").unwrap();
    refused(&db, "a symbolic link");
    assert_eq!(fs::read(&target).unwrap(), b"kept");
    let _target_lock = DbLock::acquire(dir.path()).unwrap();
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("LOCK"));
    refused(dir.path(), "a FIFO");
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("LOCK")).unwrap();
    refused(dir.path(), "a directory");
}
