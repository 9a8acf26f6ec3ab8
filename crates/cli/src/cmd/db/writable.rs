//! What the write commands (`db put`, `db delete`, `db write`, `db compact`) share: their
//! flags, their arguments decoded, and the database opened for writing under LevelDB's
//! lock.

use std::ffi::OsStr;
use std::path::Path;

use leveltable_db::{Error, TableOptions, WritableDb, WritableOptions, WriteOptions};
use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::Compression;

use crate::cmd::db::{db_error, lost_current};
use crate::cmd::get::arg_bytes;
use crate::error::{CliError, Result};
use crate::lines::Encoding;

/// The most --bloom-bits, the library's limit.
const MAX_BLOOM_BITS: i64 = leveltable_db::MAX_BLOOM_BITS_PER_KEY as i64;

/// The flags of every write command.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct WriteArgs {
    /// Keys and values (and --start, --end) are hex digits. Without it they are taken as
    /// they are, and may not hold a tab or a newline.
    #[arg(long)]
    pub hex: bool,
    /// Create the database if DIR holds none (DIR and its parents too, if missing). Without
    /// it, a missing database is an error and nothing is created.
    #[arg(long)]
    pub create_if_missing: bool,
    /// Sync each write batch to disk before going on (LevelDB's WriteOptions::sync): it
    /// then survives a crash of the machine. Without it, what was written survives the
    /// end of the process, but a crash of the machine may lose the latest writes. (Tables
    /// and the MANIFEST are always synced, so `db compact` is the same with or without it.)
    #[arg(long)]
    pub sync: bool,
    /// Compression of the tables the database writes from now on (flushes and
    /// compactions), as LevelDB's `Options::compression`. A Minecraft Bedrock world wants
    /// `deflate`, as Minecraft writes it; Mojang's LevelDB reads no Snappy.
    #[arg(long, value_name = "COMPRESSION", default_value = "snappy", value_parser = crate::cmd::build::compression_parser())]
    pub compression: Compression,
    /// Bits per key of LevelDB's Bloom filter in the tables the database writes from now
    /// on; 0 for none, LevelDB's default. Open the database in LevelDB with the same
    /// filter policy for it to use them.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        value_parser = clap::value_parser!(u32).range(0..=MAX_BLOOM_BITS),
    )]
    pub bloom_bits: u32,
}

impl WriteArgs {
    /// How each write batch is made durable.
    pub fn write_options(self) -> WriteOptions {
        WriteOptions { sync: self.sync }
    }

    /// How keys and values are spelled.
    pub fn encoding(self) -> Encoding {
        Encoding::from_hex_flag(self.hex)
    }
}

/// The bytes an argument stands for: hex decoded, or in text mode checked to hold no tab
/// or newline (the read commands could not print them back). `what` starts the message:
/// `the key`, `key argument 2`, `--start`.
///
/// # Errors
/// An argument that does not decode.
pub(crate) fn decode_arg(arg: &OsStr, encoding: Encoding, what: &str) -> Result<Vec<u8>> {
    let bytes = arg_bytes(arg).map_err(|e| CliError::new(format!("{what} {e}")))?;
    encoding
        .decode(&bytes)
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| CliError::new(format!("{what} {e}{}", encoding.hex_hint())))
}

/// Opens the database `dir` for writing, as LevelDB's `DB::Open` does (its LOCK taken).
///
/// What the library's `WritableDb::open` decides, with this command's words: without
/// --create-if-missing, a missing directory or one without a database is an error and
/// nothing is created in it (not even LOCK); with it, a directory that holds a database's
/// files but no CURRENT is still refused (a new database there would delete them), unless
/// they are what a creation interrupted before CURRENT leaves.
///
/// # Errors
/// A message naming the directory, the LOCK held by another process, or the file that is
/// missing, bad or cannot be written.
pub(crate) fn open_writable(dir: &Path, args: &WriteArgs) -> Result<WritableDb> {
    if crate::remote::is_url(dir) {
        return Err(CliError::new(format!(
            "{}: the write commands take a local directory, not a URL",
            dir.display()
        )));
    }
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(CliError::new(format!(
            "{} is not a directory; a LevelDB database is a directory",
            dir.display()
        )));
    }
    let bits = usize::try_from(args.bloom_bits).unwrap_or(usize::MAX);
    let options = WritableOptions::default()
        .read(crate::profile::db_options())
        .create_if_missing(args.create_if_missing)
        .table(
            TableOptions::default()
                .compression(args.compression)
                .filter_policy((bits > 0).then(|| BloomFilterPolicy::new(bits))),
        );
    WritableDb::open(dir, options).map_err(|e| write_error(dir, e))
}

/// Closes `db`, waiting for its background work to end.
///
/// # Errors
/// The background error that stopped writes, if one did.
pub(crate) fn close(db: WritableDb, dir: &Path) -> Result<()> {
    db.close().map_err(|e| write_error(dir, e))
}

/// The message for an error of a database open for writing: a failed file operation says
/// what failed and the path (`cannot write DIR/000005.log: no space left on device`), a
/// held lock names the LOCK file; the rest as for any database error.
pub(crate) fn write_error(dir: &Path, e: Error) -> CliError {
    let mut inner = &e;
    while let Error::Shared(shared) = inner {
        inner = shared;
    }
    match inner {
        Error::FileOp {
            doing,
            path,
            source,
        } => CliError::io(doing, path, source),
        Error::NoDatabase { exists: false, .. } => CliError::new(format!(
            "cannot open {}: no such file or directory (--create-if-missing creates the \
             database)",
            dir.display()
        )),
        Error::NoDatabase { exists: true, .. } => CliError::new(format!(
            "{}: not a LevelDB database: no CURRENT file (--create-if-missing creates one)",
            dir.display()
        )),
        Error::LostCurrent { files, .. } => lost_current(dir, files),
        _ => db_error(dir, e),
    }
}
