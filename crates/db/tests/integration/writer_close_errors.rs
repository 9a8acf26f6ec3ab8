//! Errors of `close` reach the caller (LevelDB #1081 asks the same of LevelDB): a table, a
//! new database's MANIFEST or the file replacing `CURRENT` whose close fails fails the flush
//! or the open that wrote it, and nothing acknowledged is lost.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use leveltable_db::{Db, DbOptions, WritableDb, WritableFile, WritableOptions, WriteOptions};

use crate::common;

use common::wrapped_fs::{WrapFile, Wrapped};

/// The local file system, except that closing a file whose name ends in `suffix` fails.
#[derive(Debug)]
struct FailingClose {
    suffix: &'static str,
}

struct File {
    inner: Box<dyn WritableFile>,
    fail: bool,
}

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for File {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        self.inner.close()?;
        if self.fail {
            return Err(io::Error::from_raw_os_error(5));
        }
        Ok(())
    }
}

impl WrapFile for FailingClose {
    fn wrap(&self, path: &Path, inner: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        let fail = path.to_string_lossy().ends_with(self.suffix);
        Box::new(File { inner, fail })
    }
}

fn options(suffix: &'static str) -> WritableOptions {
    WritableOptions::default()
        .create_if_missing(true)
        .file_system(Arc::new(Wrapped(FailingClose { suffix })))
}

#[test]
fn a_failed_close_of_the_file_replacing_current_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let err = WritableDb::open(&path, options(".dbtmp")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("cannot write") && message.contains(".dbtmp"),
        "{message}"
    );
    // No CURRENT names a MANIFEST whose pointer file may be lost.
    assert!(!path.join("CURRENT").exists());
}

#[test]
fn a_failed_close_of_a_new_databases_manifest_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let err = WritableDb::open(&path, options("MANIFEST-000001")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("cannot write") && message.contains("MANIFEST-000001"),
        "{message}"
    );
    // Neither a CURRENT nor the MANIFEST whose close failed is left.
    assert!(!path.join("CURRENT").exists());
    assert!(!path.join("MANIFEST-000001").exists());
    // The directory opens afterwards as a new database.
    let db = WritableDb::open(&path, options(".never")).unwrap();
    db.put(b"k", b"v", WriteOptions::default()).unwrap();
    db.close().unwrap();
}

#[test]
fn a_failed_close_of_a_table_fails_the_flush_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = WritableDb::open(&path, options(".ldb")).unwrap();
    db.put(b"k", b"v", WriteOptions::SYNC).unwrap();
    let err = db.flush().unwrap_err().to_string();
    assert!(
        err.contains("cannot close") && err.contains(".ldb"),
        "{err}"
    );
    // Writes stop; the write acknowledged is still there for the next open.
    assert!(db.put(b"k2", b"v2", WriteOptions::SYNC).is_err());
    drop(db);
    let ro = Db::open(&path, DbOptions::default()).unwrap();
    assert_eq!(ro.get(b"k").unwrap(), Some(b"v".to_vec()));
}
