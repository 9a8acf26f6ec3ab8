//! `leveltable db verify DIR`: every table block and log record checked.

use std::path::PathBuf;

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, open};
use crate::error::Result;
use crate::output::Output;
use crate::progress::Progress;

/// Check every block of every table and every record of the live logs.
///
/// Exit code 0 and a summary when all is well; exit code 2 and `corruption: ...` naming the
/// file and where, at the first problem.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Draw no progress bar (one is drawn on standard error when it is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs the command.
///
/// # Errors
/// The first problem found, or a database that cannot be opened.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let db = open(&args.dir, false, args.open)?;
    output.flush()?;
    let progress = Progress::counting(args.quiet);
    let s = db
        .verify_with_progress(&mut |done, total| progress.report(done, total))
        .map_err(|e| db_error(&args.dir, e))?;
    progress.finish();
    let dropped = db.properties().log_bytes_dropped;
    output.out_line(format_args!(
        "ok: {} tables, {} entries, {} bytes of tables; {} logs, {} write batches; \
         {dropped} bytes of log dropped",
        s.tables, s.table_entries, s.table_bytes, s.logs, s.log_records
    ))?;
    Ok(Outcome::Success)
}
