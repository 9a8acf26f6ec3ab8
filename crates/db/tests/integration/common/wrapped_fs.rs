//! The local file system with each file it creates handed to a test's wrapper first: what
//! a test needs to fail, hold or record a write, a sync or a close of one file.

use std::fmt::Debug;
use std::io;
use std::path::Path;

use leveltable_db::{FileSystem, LocalFileSystem, WritableFile};

/// What a test does with each file the database creates (tables, logs, MANIFESTs and the
/// temporary file that replaces `CURRENT`).
pub trait WrapFile: Send + Sync + Debug {
    /// The file the database writes in place of `file`, which was created at `path`.
    fn wrap(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile>;

    /// Called as the database deletes `path`, before it is deleted: a test may hold the
    /// deletion here. By default nothing.
    fn removing(&self, path: &Path) {
        let _ = path;
    }
}

/// [`LocalFileSystem`], with every file it creates passed through `.0`.
#[derive(Debug, Default)]
pub struct Wrapped<W>(pub W);

impl<W: WrapFile> FileSystem for Wrapped<W> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(self.0.wrap(path, LocalFileSystem.create(path)?))
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(self.0.wrap(path, LocalFileSystem.create_log(path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        LocalFileSystem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.removing(path);
        LocalFileSystem.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        LocalFileSystem.sync_dir(dir)
    }
}
