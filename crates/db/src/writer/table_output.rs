//! One table file written by a flush or a compaction: internal keys in order, synced and
//! closed before the MANIFEST names it (LevelDB's `BuildTable` and compaction outputs).

use std::path::Path;
use std::sync::Arc;

use leveltable_table::BuildOptions;

use crate::filename::table_file_name;
use crate::table_cache::TableCache;
use crate::table_file::TableFile;
use crate::version_edit::FileMetaData;
use crate::writer::file_system::FileSystem;
use crate::{Error, Result};

/// A table file being written.
pub(crate) struct TableOutput {
    fs: Arc<dyn FileSystem>,
    number: u64,
    table: TableFile,
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
        Ok(TableOutput {
            fs: Arc::clone(fs),
            number,
            table: TableFile::new(path, file, options)?,
        })
    }

    /// Appends an entry; keys come in increasing internal-key order.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.table
            .add(key, value)
            .map_err(|e| Error::writing(self.table.path(), e))
    }

    /// The bytes written so far (LevelDB's `FileSize`).
    pub(crate) fn file_size(&self) -> u64 {
        self.table.file_size()
    }

    /// Finishes the table, syncs and closes it, then checks that it opens through `tables`
    /// before the MANIFEST names it, as LevelDB checks a table it wrote.
    pub(crate) fn finish(self, tables: &TableCache) -> Result<FileMetaData> {
        let path = self.table.path().to_path_buf();
        let finished = match self.table.finish_synced() {
            Ok(finished) => finished,
            Err(e) => {
                let _ = self.fs.remove(&path);
                return Err(e);
            }
        };
        tables.get(self.number)?;
        Ok(FileMetaData {
            number: self.number,
            file_size: finished.file_size,
            smallest: finished.smallest,
            largest: finished.largest,
        })
    }

    /// Gives up on the table and removes its file.
    pub(crate) fn abandon(self) {
        let path = self.table.path().to_path_buf();
        self.table.abandon();
        let _ = self.fs.remove(&path);
    }
}
