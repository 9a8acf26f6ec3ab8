//! One table file written by a flush or a compaction: internal keys in order, synced and
//! closed before the MANIFEST names it (LevelDB's `BuildTable` and compaction outputs).

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_table::{BuildOptions, TableBuilder};

use crate::filename::table_file_name;
use crate::table_cache::TableCache;
use crate::version_edit::FileMetaData;
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::{Error, Result};

/// A table file being written.
pub(crate) struct TableOutput {
    fs: Arc<dyn FileSystem>,
    number: u64,
    path: PathBuf,
    builder: TableBuilder<BufWriter<Box<dyn WritableFile>>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl TableOutput {
    /// Creates `dir/<number>.ldb`.
    pub(crate) fn create(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        number: u64,
        options: &BuildOptions,
    ) -> Result<TableOutput> {
        let path = dir.join(table_file_name(number));
        let file = fs
            .create(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        let builder = TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options.clone())?;
        Ok(TableOutput {
            fs: Arc::clone(fs),
            number,
            path,
            builder,
            smallest: Vec::new(),
            largest: Vec::new(),
        })
    }

    /// Appends an entry; keys come in increasing internal-key order.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.builder.num_entries() == 0 {
            self.smallest = key.to_vec();
        }
        self.largest.clear();
        self.largest.extend_from_slice(key);
        self.builder
            .add(key, value)
            .map_err(|e| Error::writing(&self.path, e))
    }

    /// The bytes written so far (LevelDB's `FileSize`).
    pub(crate) fn file_size(&self) -> u64 {
        self.builder.file_size()
    }

    /// Finishes the table, syncs and closes it, then checks that it opens through `tables`
    /// before the MANIFEST names it, as LevelDB checks a table it wrote.
    pub(crate) fn finish(mut self, tables: &TableCache) -> Result<FileMetaData> {
        let finished = self.finish_file();
        if finished.is_err() {
            let _ = self.fs.remove(&self.path);
        }
        let file_size = finished?;
        tables.get(self.number)?;
        Ok(FileMetaData {
            number: self.number,
            file_size,
            smallest: self.smallest,
            largest: self.largest,
        })
    }

    fn finish_file(&mut self) -> Result<u64> {
        let summary = self
            .builder
            .finish()
            .map_err(|e| Error::writing(&self.path, e))?;
        let file = self.builder.get_mut();
        std::io::Write::flush(file).map_err(|e| Error::op("cannot write", &self.path, e))?;
        file.get_mut()
            .sync()
            .map_err(|e| Error::op("cannot sync", &self.path, e))?;
        // The builder keeps a placeholder; the file itself is closed here, its error
        // reported.
        let file = std::mem::replace(file.get_mut(), Box::new(Closed));
        file.close()
            .map_err(|e| Error::op("cannot close", &self.path, e))?;
        Ok(summary.file_size)
    }

    /// Gives up on the table and removes its file.
    pub(crate) fn abandon(mut self) {
        self.builder.abandon();
        let _ = self.fs.remove(&self.path);
    }
}

/// What a finished table's builder holds once its file is closed: nothing more is written.
struct Closed;

impl std::io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("the table file is closed"))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl WritableFile for Closed {
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
