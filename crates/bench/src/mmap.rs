//! Read-only memory maps of the benchmark's table files, the way LevelDB's default `Env`
//! reads tables, so both libraries read the same bytes the same way.
#![expect(unsafe_code, reason = "mapping a file is unsafe")]

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::Mmap;

/// Maps the file at `path`.
///
/// # Errors
///
/// Opening or mapping the file.
pub fn map(path: &Path) -> io::Result<Mmap> {
    let file = File::open(path)?;
    // SAFETY: the runner writes each table file once, before mapping it, and never modifies
    // or truncates a file while a map of it exists.
    unsafe { Mmap::map(&file) }
}
