//! `leveltable verify TABLE`: reads and checks every block.

use std::path::PathBuf;

use crate::cmd::Outcome;
use crate::error::Result;
use crate::output::Output;
use crate::progress::Progress;
use crate::table_file::TableFile;

/// Read and check every block of a table.
///
/// Checks checksums, block structure, key order, index separators, and that the filter
/// admits every key. Exit code 0 when the table is sound, 2 with `corruption: …` naming the
/// block and offset when it is not.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to check.
    pub table: PathBuf,
    /// Draw no progress bar (one is drawn on standard error when it is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs the command.
///
/// # Errors
/// The first problem found, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let file = TableFile::open(&args.table)?;
    output.flush()?;
    let progress = Progress::counting(args.quiet);
    let summary = file
        .table
        .verify_with_progress(&mut |done, total| progress.report(done, total))
        .map_err(|e| file.error(e))?;
    progress.finish();
    output.out_line(format_args!(
        "ok: {}: {} entries, {} data blocks, {} filter blocks, {} bytes checked",
        file.path.display(),
        summary.entries,
        summary.data_blocks,
        summary.filter_blocks,
        summary.bytes_read
    ))?;
    Ok(Outcome::Success)
}
