//! `leveltable db compact DIR [--start KEY] [--end KEY]`: LevelDB's `CompactRange`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use leveltable_db::TableInfo;

use crate::cmd::Outcome;
use crate::cmd::db::writable::{WriteArgs, close, decode_arg, open_writable, write_error};
use crate::error::Result;
use crate::output::Output;

/// Compact a range of keys down the levels, as LevelDB's CompactRange does.
///
/// The range is from --start to --end, both included (the first and the last key of the
/// database when absent). The database is opened as for `db put` (its old log becomes a level-0 table), the
/// tables holding such keys are merged level by level into the deepest level that has
/// any, and deleted and overwritten versions are dropped. The live data is unchanged.
/// Prints `compacted DIR: N tables, B bytes before; M tables, C bytes after` on standard
/// error (not with --quiet); `db stats` shows the levels.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    /// The first key of the range (hex with --hex). Default: unbounded.
    #[arg(long, value_name = "KEY")]
    pub start: Option<OsString>,
    /// The last key of the range, included (hex with --hex). Default: unbounded.
    #[arg(long, value_name = "KEY")]
    pub end: Option<OsString>,
    /// Print no summary.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Runs the command.
///
/// # Errors
/// A key that does not decode, a database that cannot be opened (missing, locked,
/// damaged), or a compaction that fails.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = args.write.encoding();
    let decode = |arg: &Option<OsString>, what| {
        arg.as_ref()
            .map(|a| decode_arg(a, encoding, what))
            .transpose()
    };
    let start = decode(&args.start, "--start")?;
    let end = decode(&args.end, "--end")?;
    let db = open_writable(&args.dir, &args.write)?;
    let before = db.tables();
    db.compact_range(start.as_deref(), end.as_deref())
        .map_err(|e| write_error(&args.dir, e))?;
    let after = db.tables();
    close(db, &args.dir)?;
    if !args.quiet {
        output.err_line(summary_line(&args.dir, &before, &after))?;
    }
    Ok(Outcome::Success)
}

/// `compacted DIR: 5 tables, 20512 bytes before; 1 table, 9120 bytes after`.
fn summary_line(dir: &Path, before: &[TableInfo], after: &[TableInfo]) -> String {
    let tables = |t: &[TableInfo]| {
        let bytes: u64 = t.iter().map(|t| t.size).sum();
        let s = if t.len() == 1 { "" } else { "s" };
        format!("{} table{s}, {bytes} bytes", t.len())
    };
    format!(
        "compacted {}: {} before; {} after",
        dir.display(),
        tables(before),
        tables(after)
    )
}
