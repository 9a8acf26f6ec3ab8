//! What `AtomicTableFile` replaces: a regular file only. A symbolic link, a FIFO or a device
//! at the path is refused and left as it was.

#![cfg(unix)]

use std::io;
use std::path::Path;
use std::process::Command;

use leveltable_table::atomic_file::TEMP_FILE_PREFIX;
use leveltable_table::{AtomicTableFile, BuildOptions, Error, create_table};

fn refused(path: &Path, what: &str) {
    let err = AtomicTableFile::create(path, BuildOptions::default())
        .err()
        .expect("refused");
    match err {
        Error::Io(e) => {
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        other => panic!("unexpected error {other}"),
    }
}

fn no_leftovers(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().starts_with(TEMP_FILE_PREFIX));
    }
}

#[test]
fn symbolic_links_are_refused_not_replaced_or_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t-5.ldb");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.path().join("current.ldb");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    refused(&link, "is a symbolic link");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    no_leftovers(dir.path());
}

#[test]
fn a_link_appearing_during_the_build_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ldb");
    let file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
    std::os::unix::fs::symlink("elsewhere", &path).unwrap();
    let err = file.finish().unwrap_err();
    assert!(
        matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::InvalidInput),
        "{err}"
    );
    assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    no_leftovers(dir.path());
}

#[test]
fn fifos_and_devices_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.ldb");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        refused(&fifo, "is a FIFO");
        no_leftovers(dir.path());
    }
    refused(Path::new("/dev/null"), "is a character device");
}

#[test]
fn regular_files_are_replaced_and_the_directory_synced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ldb");
    std::fs::write(&path, b"old").unwrap();
    let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
    file.add(b"k", b"v").unwrap();
    let finished = file.finish_with_status().unwrap();
    assert!(finished.dir_sync_error.is_none());
    assert_eq!(finished.summary.entries, 1);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        finished.summary.file_size
    );
    create_table(&path, BuildOptions::default(), |t| t.add(b"a", b"b")).unwrap();
    no_leftovers(dir.path());
}
