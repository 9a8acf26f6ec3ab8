//! Opening a table file for the reading commands, and turning the table crate's errors into
//! messages that say which part of the file is bad.

use std::io;
use std::path::{Path, PathBuf};

use leveltable_db::Error as DbError;
use leveltable_db::dbformat::ParsedInternalKey;
use leveltable_db::storage::open_regular;
use leveltable_table::format::{BlockHandle, FOOTER_LEN, Footer};
use leveltable_table::{Error, OpenPlan, ReadAt, ReadOptions, Table, TableProperties};

use crate::error::{CliError, Result};

/// Options for reading any table: every filter policy this tool knows, the cache-local one
/// preferred for gets when a table has both.
pub fn read_options() -> ReadOptions {
    ReadOptions::default().known_filter_policies()
}

/// Where a table is read from: a local file or an object named by URL.
pub type Source = Box<dyn ReadAt>;

/// An open table and where its parts lie, for error messages.
#[derive(Debug)]
pub struct TableFile {
    /// The path given on the command line.
    pub path: PathBuf,
    /// The table, read from a file or an object.
    pub table: Table<Source>,
    map: FileMap,
}

impl TableFile {
    /// Opens the table at `path`, refusing directories, special files and empty files
    /// before reading.
    ///
    /// # Errors
    /// A message naming the path for anything that is not a readable file; `not an sstable
    /// (bad magic number)` for a file that is not a table; `corruption: …` for a table whose
    /// footer, index, metaindex or filter block is damaged.
    pub fn open(path: &Path) -> Result<TableFile> {
        TableFile::open_with(path, read_options())
    }

    /// Like [`open`](Self::open), with other read options (for LevelDB database files, the
    /// internal-key order and filter).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(path: &Path, options: ReadOptions) -> Result<TableFile> {
        let options = crate::profile::read_options(options);
        if crate::remote::is_url(path) {
            let (source, name) = crate::remote::open(path)?;
            return TableFile::open_source(PathBuf::from(name), source, options, || {
                crate::remote::open(path).ok().map(|(s, _)| s)
            });
        }
        // Opened without blocking and checked on the handle: a FIFO would block the open
        // until a writer appears; devices are not tables.
        let (file, metadata) = open_regular(path).map_err(|e| match e.kind() {
            io::ErrorKind::IsADirectory => CliError::new(format!(
                "{} is a directory, not a table file",
                path.display()
            )),
            io::ErrorKind::InvalidInput => CliError::new(format!("{} is {e}", path.display())),
            _ => CliError::io("cannot open", path, &e),
        })?;
        if metadata.len() == 0 {
            return Err(CliError::new(format!(
                "{} is empty, not an sstable",
                path.display()
            )));
        }
        TableFile::open_source(path.to_owned(), Box::new(file), options, || {
            open_regular(path).ok().map(|(f, _)| Box::new(f) as Source)
        })
    }

    /// Opens the table in `source`, shown as `path`; `again` opens the source anew (to
    /// describe a table that failed to open).
    fn open_source(
        path: PathBuf,
        source: Source,
        options: ReadOptions,
        again: impl Fn() -> Option<Source>,
    ) -> Result<TableFile> {
        let path = path.as_path();
        let map = FileMap::from_footer(&*source);
        match Table::open(source, options) {
            Ok(table) => {
                let map = map.with_filters(table.properties());
                Ok(TableFile {
                    path: path.to_owned(),
                    table,
                    map,
                })
            }
            Err(e) => {
                // The filter blocks are read on open; to name one that is bad, learn where
                // they are from an open that reads none.
                let plain = again().and_then(|f| Table::open(f, ReadOptions::default()).ok());
                let map = match plain {
                    Some(table) => map.with_filters(table.properties()),
                    None => map,
                };
                Err(describe(path, &map, e))
            }
        }
    }

    /// What [`Table::open`] found out about the table.
    pub fn properties(&self) -> &TableProperties {
        self.table.properties()
    }

    /// The message for an error met while reading this table.
    pub fn error(&self, e: Error) -> CliError {
        describe(&self.path, &self.map, e)
    }

    /// The message for an error of the database layer met while reading this table (a
    /// database file read with `--internal`).
    pub fn db_error(&self, e: DbError) -> CliError {
        match e {
            DbError::Table(e) => self.error(e),
            other => CliError::new(other.to_string()),
        }
    }

    /// Refuses a table whose first key is not a LevelDB internal key, for `--internal`:
    /// such a table holds plain keys, and reading them as internal keys would report
    /// corruption where there is none.
    ///
    /// # Errors
    /// `entry 1: not a LevelDB internal key (…); PATH holds plain keys; drop --internal`,
    /// or the error met reading the first block.
    pub fn check_internal_keys(&self) -> Result<()> {
        let mut it = self.table.iter();
        it.seek_to_first();
        if it.valid() {
            if let Err(e) = ParsedInternalKey::parse(it.key()) {
                return Err(CliError::new(format!(
                    "entry 1: not a LevelDB internal key ({e}); {} holds plain keys; \
                     drop --internal",
                    self.path.display()
                )));
            }
        }
        it.status().map_err(|e| self.error(e))
    }

    /// Reads a block's stored bytes (without trailer) straight from the file; used for the
    /// filter blocks, which are never compressed.
    ///
    /// # Errors
    /// As [`error`](Self::error), for a handle outside the file or a failed read.
    pub fn read_raw(&self, handle: &BlockHandle) -> Result<Vec<u8>> {
        let size = self.properties().file_size;
        let fits = handle.end_with_trailer().is_some_and(|end| end <= size);
        // A block size that does not fit in usize (a 32-bit target) is as unreadable as a
        // handle pointing past the end.
        let Some(len) = fits.then(|| usize::try_from(handle.size).ok()).flatten() else {
            return Err(self.error(Error::Corruption {
                what: "block handle".into(),
                offset: self.map.footer.metaindex.offset,
            }));
        };
        let mut buf = vec![0; len];
        self.table
            .source()
            .read_exact_at(&mut buf, handle.offset)
            .map_err(|e| self.error(Error::Io(e)))?;
        Ok(buf)
    }
}

/// The parts of a table file, as far as they are known, for naming where an offset lies.
#[derive(Debug, Clone, Default)]
struct FileMap {
    file_size: u64,
    /// Whether the footer decoded; otherwise only its position is known.
    footer_known: bool,
    footer: Footer,
    filters: Vec<(String, BlockHandle)>,
}

impl FileMap {
    /// Reads the footer on its own (the table core decodes it), so that even a table that
    /// fails to open can be described.
    fn from_footer(file: &dyn ReadAt) -> FileMap {
        let file_size = ReadAt::size(file).unwrap_or(0);
        let footer = OpenPlan::new(file_size, ReadOptions::default())
            .ok()
            .and_then(|mut plan| {
                let need = plan.need()?;
                let mut bytes = vec![0u8; usize::try_from(need.end - need.start).ok()?];
                file.read_exact_at(&mut bytes, need.start).ok()?;
                plan.give(need.start, &bytes).ok()?;
                plan.footer()
            });
        FileMap {
            file_size,
            footer_known: footer.is_some(),
            footer: footer.unwrap_or_default(),
            filters: Vec::new(),
        }
    }

    fn with_filters(mut self, properties: &TableProperties) -> FileMap {
        self.filters = properties
            .filters
            .iter()
            .map(|f| (f.policy_name.clone(), f.handle))
            .collect();
        self
    }

    /// Names the part of the file holding `offset`: `the index block at offset 9000`, `a
    /// data block`, ...
    fn region(&self, offset: u64) -> String {
        let within = |h: &BlockHandle| {
            offset >= h.offset && h.end_with_trailer().is_some_and(|end| offset < end)
        };
        let footer_at = self.file_size.saturating_sub(FOOTER_LEN as u64);
        if offset >= footer_at {
            return format!("the footer at offset {footer_at}");
        }
        if !self.footer_known {
            return "the table".to_owned();
        }
        if within(&self.footer.index) {
            return format!("the index block at offset {}", self.footer.index.offset);
        }
        if within(&self.footer.metaindex) {
            return format!(
                "the metaindex block at offset {}",
                self.footer.metaindex.offset
            );
        }
        if let Some((name, h)) = self.filters.iter().find(|(_, h)| within(h)) {
            return format!("the filter block filter.{name} at offset {}", h.offset);
        }
        let meta_start = self
            .filters
            .iter()
            .map(|(_, h)| h.offset)
            .chain([self.footer.metaindex.offset, self.footer.index.offset])
            .min()
            .unwrap_or(footer_at);
        if offset < meta_start {
            // The data blocks' bounds are in the index, which the reader does not lend out;
            // the offset says where.
            "a data block".to_owned()
        } else {
            "the table".to_owned()
        }
    }
}

/// The message for a table error on the file at `path`: corruption says where, in which
/// part of the file; the rest loses the table crate's `table: ` prefix.
fn describe(path: &Path, map: &FileMap, e: Error) -> CliError {
    match e {
        Error::NotATable => CliError::new("not an sstable (bad magic number)"),
        Error::TooShort { size } => CliError::new(format!(
            "not an sstable: {} is {size} bytes, shorter than a table footer ({FOOTER_LEN} bytes)",
            path.display()
        )),
        Error::Corruption { what, offset } => CliError::new(format!(
            "corruption: corrupt {what} at offset {offset}, in {}",
            map.region(offset)
        )),
        Error::ChecksumMismatch {
            offset,
            expected,
            got,
        } => CliError::new(format!(
            "corruption: checksum mismatch in {} (stored {expected:#010x}, computed \
             {got:#010x})",
            block_at(map.region(offset), offset)
        )),
        Error::Io(io) => CliError::io("cannot read", path, &io),
        other => {
            let text = other.to_string();
            CliError::new(text.strip_prefix("table: ").unwrap_or(&text).to_owned())
        }
    }
}

/// `a data block` becomes `the data block at offset N` when the offset is the block's own.
fn block_at(region: String, offset: u64) -> String {
    if region == "a data block" {
        format!("the data block at offset {offset}")
    } else {
        region
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> FileMap {
        FileMap {
            file_size: 1000,
            footer_known: true,
            footer: Footer {
                metaindex: BlockHandle::new(800, 20),
                index: BlockHandle::new(830, 100),
            },
            filters: vec![("f".to_owned(), BlockHandle::new(700, 90))],
        }
    }

    #[test]
    fn offsets_name_their_part_of_the_file() {
        let m = map();
        assert_eq!(m.region(0), "a data block");
        assert_eq!(m.region(699), "a data block");
        assert_eq!(m.region(700), "the filter block filter.f at offset 700");
        assert_eq!(m.region(794), "the filter block filter.f at offset 700");
        assert_eq!(m.region(800), "the metaindex block at offset 800");
        assert_eq!(m.region(830), "the index block at offset 830");
        assert_eq!(m.region(952), "the footer at offset 952");
        let unknown = FileMap {
            footer_known: false,
            ..m
        };
        assert_eq!(unknown.region(5), "the table");
    }

    #[test]
    fn errors_lose_the_crate_prefix() {
        let e = describe(Path::new("t"), &map(), Error::NotATable);
        assert_eq!(e.to_string(), "not an sstable (bad magic number)");
        let e = describe(
            Path::new("t"),
            &map(),
            Error::Corruption {
                what: "block entry".into(),
                offset: 17,
            },
        );
        assert_eq!(
            e.to_string(),
            "corruption: corrupt block entry at offset 17, in a data block"
        );
        let e = describe(
            Path::new("t"),
            &map(),
            Error::ChecksumMismatch {
                offset: 0,
                expected: 1,
                got: 2,
            },
        );
        assert_eq!(
            e.to_string(),
            "corruption: checksum mismatch in the data block at offset 0 (stored 0x00000001, \
             computed 0x00000002)"
        );
        let e = describe(
            Path::new("t"),
            &map(),
            Error::ChecksumMismatch {
                offset: 830,
                expected: 1,
                got: 2,
            },
        );
        assert_eq!(
            e.to_string(),
            "corruption: checksum mismatch in the index block at offset 830 (stored \
             0x00000001, computed 0x00000002)"
        );
    }
}
