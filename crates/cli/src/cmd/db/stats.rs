//! `leveltable db stats DIR`: the database's levels, logs and counters.

use std::path::{Path, PathBuf};

use leveltable_db::InternalTable;
use leveltable_db::dbformat::extract_user_key;
use leveltable_db::filename::{sst_table_file_name, table_file_name};
use serde::Serialize;

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, open, table_name, table_path_problem};
use crate::error::{CliError, Result};
use crate::lines::Encoding;
use crate::output::Output;

/// Show a database's files per level (count, bytes, entries, key range), its last sequence
/// number, the log bytes replayed and dropped, and its comparator.
///
/// Reads every table to count its entries.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Show keys as hex digits.
    #[arg(long)]
    pub hex: bool,
}

/// One level of the database.
#[derive(Debug, Serialize)]
pub struct LevelStats {
    /// The level, 0 to 6.
    pub level: usize,
    /// Table files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Entries in them (every stored version).
    pub entries: u64,
    /// The smallest user key, shown as text or hex (whole in JSON, cut in the text
    /// output); `null` for an empty level.
    pub smallest: Option<String>,
    /// The largest user key; `null` for an empty level.
    pub largest: Option<String>,
}

/// Everything `db stats` reports; also its JSON form.
#[derive(Debug, Serialize)]
pub struct Stats {
    /// The directory given.
    pub dir: String,
    /// The user comparator's name.
    pub comparator: String,
    /// The MANIFEST read.
    pub manifest: Option<String>,
    /// The newest sequence number.
    pub last_sequence: u64,
    /// The levels 0 to 6.
    pub levels: Vec<LevelStats>,
    /// Logs replayed.
    pub logs: u64,
    /// Bytes of log replayed.
    pub log_bytes: u64,
    /// Bytes of log dropped as torn or corrupt.
    pub log_bytes_dropped: u64,
    /// Versions held in memory from the logs.
    pub log_versions: u64,
}

/// Runs the command.
///
/// # Errors
/// A database that cannot be opened or a table that cannot be read, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    let db = open(&args.dir, false, args.open)?;
    let p = db.properties();
    let user_key = |internal: &[u8]| extract_user_key(internal).unwrap_or(internal).to_vec();
    let show = |key: Vec<u8>| {
        if args.json {
            encoding.show_whole(&key).to_string()
        } else {
            encoding.show(&key).to_string()
        }
    };
    let order = db.comparator();
    let mut levels = Vec::new();
    for (level, tables) in p.levels.iter().enumerate() {
        let mut stats = LevelStats {
            level,
            files: tables.len() as u64,
            bytes: tables.iter().map(|t| t.size).sum(),
            entries: 0,
            // In the database's order (Chromium's idb_cmp1 is not bytewise).
            smallest: tables
                .iter()
                .map(|t| user_key(&t.smallest))
                .min_by(|a, b| order.compare(a, b))
                .map(show),
            largest: tables
                .iter()
                .map(|t| user_key(&t.largest))
                .max_by(|a, b| order.compare(a, b))
                .map(show),
        };
        for table in tables {
            stats.entries += count_entries(&args.dir, table.number, args.open.table_memory)?;
        }
        levels.push(stats);
    }
    let stats = Stats {
        // A URL without its credentials or query (a presigned URL's signature).
        dir: if crate::remote::is_url(&args.dir) {
            crate::remote::shown(&args.dir.to_string_lossy())
        } else {
            args.dir.display().to_string()
        },
        comparator: p.comparator.clone(),
        manifest: p.manifest.clone(),
        last_sequence: p.last_sequence,
        levels,
        logs: p.logs.len() as u64,
        log_bytes: p.log_bytes,
        log_bytes_dropped: p.log_bytes_dropped,
        log_versions: p.memtable_versions,
    };
    if args.json {
        let json = serde_json::to_string_pretty(&stats).unwrap_or_default();
        output.out_line(json)?;
    } else {
        print_text(&stats, output)?;
    }
    Ok(Outcome::Success)
}

/// The entries of table `number`, read straight from its file (one table open at a time,
/// refused if it alone keeps more than `budget` bytes in memory).
fn count_entries(dir: &Path, number: u64, budget: u64) -> Result<u64> {
    let (name, remote) = if crate::remote::is_url(dir) {
        let ldb = table_file_name(number);
        match crate::remote::open_in(dir, &ldb) {
            Ok((source, _)) => (ldb, Some(source)),
            // As LevelDB does: the name tables had before 1.14 next, else the first error.
            Err(e) => {
                let sst = sst_table_file_name(number);
                let (source, _) = crate::remote::open_in(dir, &sst).map_err(|_| e)?;
                (sst, Some(source))
            }
        }
    } else {
        (table_name(dir, number), None)
    };
    let path = dir.join(&name);
    // Errors of the table's contents name it, as `db verify` does.
    let named = |e: leveltable_table::Error| {
        db_error(
            &path,
            leveltable_db::Error::TableFile {
                file: name.clone().into(),
                source: e,
            },
        )
    };
    let source: Box<dyn leveltable_table::ReadAt> = if let Some(source) = remote {
        source
    } else {
        if let Some(problem) = table_path_problem(&path) {
            return Err(problem);
        }
        let (file, _) = leveltable_db::storage::open_regular(&path)
            .map_err(|e| CliError::io("cannot open", &path, &e))?;
        Box::new(file)
    };
    let table = InternalTable::open(source).map_err(|e| match e {
        leveltable_db::Error::Table(e) => named(e),
        e => db_error(&path, e),
    })?;
    let bytes = table.table().resident_bytes();
    if bytes > budget {
        return Err(CliError::new(format!(
            "{name}: the table keeps {bytes} bytes of index and filter blocks in memory, \
             more than the table memory budget of {budget} bytes (--table-memory)"
        )));
    }
    let mut entries = 0u64;
    let mut it = table.table().iter();
    it.seek_to_first();
    while it.valid() {
        entries += 1;
        it.next();
    }
    it.status().map_err(named)?;
    Ok(entries)
}

fn print_text(s: &Stats, output: &mut Output) -> Result<()> {
    output.out_line(format_args!("database: {}", s.dir))?;
    output.out_line(format_args!("comparator: {}", s.comparator))?;
    if let Some(manifest) = &s.manifest {
        output.out_line(format_args!("manifest: {manifest}"))?;
    }
    output.out_line(format_args!("last sequence: {}", s.last_sequence))?;
    for l in &s.levels {
        let range = match (&l.smallest, &l.largest) {
            (Some(a), Some(b)) => format!(", keys {a} .. {b}"),
            _ => String::new(),
        };
        output.out_line(format_args!(
            "level {}: {} files, {} bytes, {} entries{range}",
            l.level, l.files, l.bytes, l.entries
        ))?;
    }
    output.out_line(format_args!(
        "logs: {}, {} bytes replayed, {} bytes dropped, {} versions in memory",
        s.logs, s.log_bytes, s.log_bytes_dropped, s.log_versions
    ))
}
