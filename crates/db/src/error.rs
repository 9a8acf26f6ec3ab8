//! The error type of this crate.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Everything that can go wrong reading or building a database.
///
/// Messages are lowercase. Errors of one table file pass through with the table crate's own
/// message (`table: corrupt block handle at offset 4096`); errors of the database's own files
/// name the file (`db: MANIFEST-000002: bad record checksum at offset 40`).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An error of the table layer, as [`leveltable_table`] reports it.
    Table(leveltable_table::Error),
    /// A file of the database is not what the format says.
    Corruption {
        /// The file, as named in the database directory (`MANIFEST-000002`, `000005.log`).
        file: PathBuf,
        /// What is wrong.
        what: Cow<'static, str>,
        /// Where in the file the bad structure starts.
        offset: u64,
    },
    /// An argument or option is out of its allowed range.
    InvalidArgument(Cow<'static, str>),
    /// A key or value longer than a write batch holds (its format stores 32-bit lengths):
    /// see [`WriteBatchBuilder::try_put`](crate::WriteBatchBuilder::try_put); or a write
    /// batch larger than a database open for writing accepts
    /// ([`MAX_WRITE_BATCH_BYTES`](crate::log_format::MAX_WRITE_BATCH_BYTES)).
    TooLong {
        /// `key`, `value` or `write batch`.
        what: &'static str,
        /// Its length in bytes.
        len: u64,
        /// The most bytes it may hold,
        /// [`MAX_KEY_OR_VALUE_LEN`](crate::write_batch::MAX_KEY_OR_VALUE_LEN) or
        /// [`MAX_WRITE_BATCH_BYTES`](crate::log_format::MAX_WRITE_BATCH_BYTES).
        limit: u64,
    },
    /// A file the database needs is not in its directory.
    MissingFile {
        /// The file, as named in the database directory (`CURRENT`, `000071.ldb`).
        file: PathBuf,
        /// Why it is needed, or what its absence means.
        what: Cow<'static, str>,
    },
    /// The MANIFEST names a user comparator that the options do not provide.
    UnknownComparator {
        /// The MANIFEST that names it.
        file: PathBuf,
        /// The comparator's name in the MANIFEST.
        name: String,
        /// The name of the comparator the options provide.
        ours: String,
    },
    /// A repair refused a database ordered by a comparator its options do not know (it
    /// reads and writes the database by that comparator), and wrote nothing.
    RepairComparator {
        /// The MANIFEST that names the comparator, in the database's directory.
        file: PathBuf,
        /// The comparator's name in the MANIFEST.
        name: String,
    },
    /// Another process kept changing the database's set of files while it was being opened
    /// (compactions, in a busy database); opening again usually succeeds.
    KeptChanging {
        /// The database directory.
        path: PathBuf,
    },
    /// The database directory's `LOCK` file is locked (see [`DbLock`](crate::lock::DbLock)):
    /// another process has the database open (LevelDB, or a program of this crate changing
    /// it), or, if `by_this_process`, this process does.
    Locked {
        /// The lock file, `DIR/LOCK`.
        path: PathBuf,
        /// Whether this process holds the lock (another [`DbLock`](crate::lock::DbLock)).
        by_this_process: bool,
    },
    /// An error of one table file of the database, naming the file.
    TableFile {
        /// The file, as named in the database directory (`000071.ldb`).
        file: PathBuf,
        /// The table layer's error.
        source: leveltable_table::Error,
    },
    /// Reading or writing a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A file operation other than reading failed, and the error says which: `cannot
    /// create`, `cannot write`, `cannot sync`, `cannot copy <from> to`, … followed by the
    /// path.
    FileOp {
        /// What failed, as the start of a sentence that the path ends: `cannot write`.
        doing: Cow<'static, str>,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// An error shared by several callers: the failure of a write this one was committed
    /// with (one log record holds a group of writes), or of the background work after which
    /// a database open for writing accepts no more writes (reopen it).
    Shared(std::sync::Arc<Error>),
    /// A bulk build was given a key twice, and [`Duplicates::Error`](crate::Duplicates)
    /// refuses it.
    DuplicateKey {
        /// The key.
        key: Vec<u8>,
    },
    /// There is no database at the path, and the open may not create one
    /// ([`create_if_missing`](crate::WritableOptions::create_if_missing) is false): the
    /// directory does not exist, or holds no `CURRENT` and none of a database's files.
    NoDatabase {
        /// The directory.
        path: PathBuf,
        /// Whether the directory exists.
        exists: bool,
    },
    /// A directory holds a database's files (a MANIFEST, tables, logs or temporary files)
    /// but no `CURRENT`: the database lost it. It is refused, even with
    /// [`create_if_missing`](crate::WritableOptions::create_if_missing), since a new
    /// database there would delete those files; a salvage reads what they hold.
    LostCurrent {
        /// The directory.
        path: PathBuf,
        /// Up to three of the files, by name.
        files: Vec<String>,
    },
    /// A number the database allots ran out: file numbers or sequence numbers.
    LimitExceeded {
        /// What ran out, [`Limit`].
        limit: Limit,
        /// The database directory.
        path: PathBuf,
        /// The number reached.
        value: u64,
    },
    /// An option is outside the range this crate accepts.
    OptionOutOfRange {
        /// The option, as [`WritableOptions`](crate::WritableOptions) names it.
        option: &'static str,
        /// The value given.
        value: u64,
        /// The least value accepted.
        min: u64,
        /// The most.
        max: u64,
    },
    /// A database handle was used in a child of the process that opened it (after
    /// `fork`): its background thread and its lock stayed with the parent. Open the
    /// database again in the child (after the parent closes it).
    ForkedProcess {
        /// The database directory.
        path: PathBuf,
        /// The process that opened it.
        opened_by: u32,
    },
}

/// The largest file number a database may use: 2^64 - 2, so that the MANIFEST's next file
/// number after it still fits in 64 bits.
pub const MAX_FILE_NUMBER: u64 = u64::MAX - 1;

/// What ran out, in [`Error::LimitExceeded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// File numbers (`NNNNNN.log`, `NNNNNN.ldb`, `MANIFEST-NNNNNN`): at most
    /// 18446744073709551614 (2^64 - 2), so that the next number is still one.
    FileNumbers,
    /// Sequence numbers: at most 2^56 - 1.
    SequenceNumbers,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::FileNumbers => "file numbers",
            Limit::SequenceNumbers => "sequence numbers",
        })
    }
}

impl Error {
    /// Whether this error says that a file's contents are bad (as opposed to I/O or misuse).
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Table(e) | Error::TableFile { source: e, .. } => e.is_corruption(),
            Error::Corruption { .. } | Error::MissingFile { .. } => true,
            Error::Shared(e) => e.is_corruption(),
            Error::InvalidArgument(_)
            | Error::TooLong { .. }
            | Error::Io { .. }
            | Error::FileOp { .. }
            | Error::UnknownComparator { .. }
            | Error::RepairComparator { .. }
            | Error::KeptChanging { .. }
            | Error::Locked { .. }
            | Error::DuplicateKey { .. }
            | Error::NoDatabase { .. }
            | Error::LimitExceeded { .. }
            | Error::OptionOutOfRange { .. }
            | Error::ForkedProcess { .. } => false,
            Error::LostCurrent { .. } => true,
        }
    }

    /// The table layer's error, if this is one.
    pub fn as_table_error(&self) -> Option<&leveltable_table::Error> {
        match self {
            Error::Table(e) | Error::TableFile { source: e, .. } => Some(e),
            Error::Shared(e) => e.as_table_error(),
            _ => None,
        }
    }

    /// The same error, naming `file` if it is a table error that does not yet.
    pub(crate) fn in_table(self, file: impl Into<PathBuf>) -> Error {
        match self {
            Error::Table(source) => Error::TableFile {
                file: file.into(),
                source,
            },
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Table(e) => fmt::Display::fmt(e, f),
            Error::Corruption { file, what, offset } => write!(
                f,
                "db: {}: corrupt {what} at offset {offset}",
                file.display()
            ),
            Error::InvalidArgument(message) => write!(f, "db: invalid argument: {message}"),
            Error::TooLong { what, len, limit } => write!(
                f,
                "db: invalid argument: a {what} of {len} bytes: at most {limit} ({})",
                size_name(*limit)
            ),
            Error::MissingFile { file, what } => {
                write!(f, "db: {}: missing: {what}", file.display())
            }
            Error::UnknownComparator { file, name, ours } => write!(
                f,
                "db: {}: the database uses comparator {name}, not {ours}; \
                 open it with a Comparator named {name} in DbOptions",
                file.display()
            ),
            Error::RepairComparator { file, name } => write!(
                f,
                "db: {}: the database is ordered by comparator {name}, which the repair \
                 was not given (a registry that holds it, or a comparator of that name), \
                 and wrote nothing",
                file.display()
            ),
            Error::TableFile { file, source } => write!(f, "db: {}: {source}", file.display()),
            Error::KeptChanging { path } => write!(
                f,
                "db: {}: the database kept changing while it was being opened; open it again",
                path.display()
            ),
            Error::Locked {
                path,
                by_this_process: false,
            } => write!(
                f,
                "db: {}: locked by another process: the database is open in LevelDB or \
                 another program; close it and try again",
                path.display()
            ),
            Error::Locked {
                path,
                by_this_process: true,
            } => write!(
                f,
                "db: {}: already locked by this process: the database is open in it",
                path.display()
            ),
            Error::Io { path, source } => write!(f, "db: {}: {source}", path.display()),
            Error::FileOp {
                doing,
                path,
                source,
            } => write!(f, "db: {doing} {}: {source}", path.display()),
            Error::DuplicateKey { key } => write!(f, "db: duplicate key {}", show_user_key(key)),
            Error::Shared(e) => fmt::Display::fmt(e, f),
            Error::NoDatabase {
                path,
                exists: false,
            } => write!(
                f,
                "db: {}: does not exist (create_if_missing is false)",
                path.display()
            ),
            Error::NoDatabase { path, exists: true } => write!(
                f,
                "db: {}: not a LevelDB database: no CURRENT file (create_if_missing is false)",
                path.display()
            ),
            Error::LostCurrent { path, files } => write!(
                f,
                "db: {}: no CURRENT file, though it holds a database's files ({}); a new \
                 database there would delete them: a salvage reads what they hold",
                path.display(),
                files.join(", ")
            ),
            Error::LimitExceeded { limit, path, value } => {
                let (one, last) = match limit {
                    Limit::FileNumbers => ("file number", MAX_FILE_NUMBER),
                    Limit::SequenceNumbers => ("sequence number", crate::dbformat::MAX_SEQUENCE),
                };
                write!(
                    f,
                    "db: {}: the database has used every {one}: the next would be {value}, \
                     past the last, {last}",
                    path.display()
                )
            }
            Error::OptionOutOfRange {
                option,
                value,
                min,
                max,
            } if *max == u64::MAX => write!(
                f,
                "db: invalid argument: {option} is {value}: it must be at least {min}"
            ),
            Error::OptionOutOfRange {
                option,
                value,
                min,
                max,
            } => write!(
                f,
                "db: invalid argument: {option} is {value}: it must be from {min} to {max}"
            ),
            Error::ForkedProcess { path, opened_by } => write!(
                f,
                "db: {}: the database was opened by process {opened_by}, and this process \
                 ({}) is a fork of it: the handle cannot be used here; open the database \
                 again in this process once the other has closed it",
                path.display(),
                std::process::id()
            ),
        }
    }
}

/// A limit in bytes as people say it: `4 GiB - 1`, `1 GiB`.
fn size_name(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    match bytes {
        b if b % GIB == GIB - 1 => format!("{} GiB - 1", b / GIB + 1),
        b if b % GIB == 0 && b > 0 => format!("{} GiB", b / GIB),
        b if b % MIB == 0 && b > 0 => format!("{} MiB", b / MIB),
        b => format!("{b} bytes"),
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Table(e) | Error::TableFile { source: e, .. } => Some(e),
            Error::Io { source, .. } | Error::FileOp { source, .. } => Some(source),
            Error::Shared(e) => e.source(),
            Error::Corruption { .. }
            | Error::InvalidArgument(_)
            | Error::TooLong { .. }
            | Error::MissingFile { .. }
            | Error::UnknownComparator { .. }
            | Error::RepairComparator { .. }
            | Error::KeptChanging { .. }
            | Error::Locked { .. }
            | Error::DuplicateKey { .. }
            | Error::NoDatabase { .. }
            | Error::LostCurrent { .. }
            | Error::LimitExceeded { .. }
            | Error::OptionOutOfRange { .. }
            | Error::ForkedProcess { .. } => None,
        }
    }
}

impl Error {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A failed operation `doing` (`cannot write`) on `path`.
    pub(crate) fn op(
        doing: impl Into<Cow<'static, str>>,
        path: impl Into<PathBuf>,
        source: io::Error,
    ) -> Error {
        Error::FileOp {
            doing: doing.into(),
            path: path.into(),
            source,
        }
    }

    /// A table layer error met writing `path`: an I/O error says `cannot write` and the
    /// path; the rest pass through.
    pub(crate) fn writing(path: impl Into<PathBuf>, e: leveltable_table::Error) -> Error {
        match e {
            leveltable_table::Error::Io(source) => Error::op("cannot write", path, source),
            other => Error::Table(other),
        }
    }

    /// A corruption of `file` at `offset`.
    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        what: impl Into<Cow<'static, str>>,
        offset: u64,
    ) -> Error {
        Error::Corruption {
            file: file.into(),
            what: what.into(),
            offset,
        }
    }
}

impl From<leveltable_table::Error> for Error {
    fn from(e: leveltable_table::Error) -> Error {
        Error::Table(e)
    }
}

/// A user key for a message: quoted if it is printable ASCII, else in hex; cut to 64 bytes.
pub(crate) fn show_user_key(key: &[u8]) -> String {
    const SHOWN: usize = 64;
    let head = &key[..key.len().min(SHOWN)];
    let more = if key.len() > SHOWN { "..." } else { "" };
    if head.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}{more}", String::from_utf8_lossy(head))
    } else {
        let digits: String = head.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{digits}{more}")
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
