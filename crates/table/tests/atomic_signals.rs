//! `remove_temporaries`, as a program's signal handler calls it: every live temporary file
//! goes, and no table is created or finished afterwards. Alone in its test binary, because
//! the call closes the process's registry for good.

use std::io;

use leveltable_table::atomic_file::{TEMP_FILE_PREFIX, remove_temporaries};
use leveltable_table::{AtomicTableFile, BuildOptions, Error};

fn leftovers(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(TEMP_FILE_PREFIX)
        })
        .count()
}

#[test]
fn removing_temporaries_removes_every_live_one_and_closes_creation() {
    let dir = tempfile::tempdir().unwrap();
    let mut first =
        AtomicTableFile::create(dir.path().join("a.ldb"), BuildOptions::default()).expect("create");
    first.add(b"k", b"v").unwrap();
    let second =
        AtomicTableFile::create_new(dir.path().join("b.ldb"), BuildOptions::default()).unwrap();
    let done = AtomicTableFile::create(dir.path().join("c.ldb"), BuildOptions::default()).unwrap();
    done.finish().unwrap();
    assert_eq!(leftovers(dir.path()), 2);

    assert_eq!(remove_temporaries(), 2);
    assert_eq!(leftovers(dir.path()), 0);
    assert!(dir.path().join("c.ldb").exists(), "a finished table stays");

    let interrupted =
        |e: Error| matches!(e, Error::Io(io) if io.kind() == io::ErrorKind::Interrupted);
    assert!(interrupted(first.finish().unwrap_err()));
    assert!(!dir.path().join("a.ldb").exists());
    drop(second);
    let late = AtomicTableFile::create(dir.path().join("d.ldb"), BuildOptions::default());
    assert!(interrupted(
        late.err().expect("creation refused after the cleanup")
    ));
    assert_eq!(leftovers(dir.path()), 0);
}
