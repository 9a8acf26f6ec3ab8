//! Everything the commands print, through one place: standard output and standard error,
//! each buffered, with every write error turned into a [`CliError`].
//!
//! The rules (also in the README):
//! - a closed pipe, on either stream, ends the command quietly with exit code 0, as it ends
//!   a shell pipeline (`leveltable dump t.ldb | head`);
//! - any other write error (`> /dev/full`) is exit code 2 with a message, printed on
//!   standard error if that can still be written;
//! - nothing is printed with `println!`/`eprintln!`, which panic (exit code 101) when the
//!   write fails.
//!
//! Both streams are flushed at exit, before an error message, before a progress bar is
//! drawn, and before reading keys typed at a terminal, so the buffering is never seen; a
//! command printing many lines (`get` with many missing keys) makes few write calls.

use std::fmt::Display;
use std::io::{self, BufWriter, Stderr, Stdout, Write};

use crate::error::{CliError, Result};
use crate::lines::Encoding;

/// Buffer size of each stream.
const BUFFER: usize = 64 * 1024;

/// The process's standard output and standard error, buffered.
pub struct Output {
    out: BufWriter<Stdout>,
    err: BufWriter<Stderr>,
    /// A line being spelled, reused from line to line.
    line: Vec<u8>,
}

impl Output {
    /// Buffers over the process's standard streams.
    pub fn new() -> Output {
        Output {
            out: BufWriter::with_capacity(BUFFER, io::stdout()),
            err: BufWriter::with_capacity(BUFFER, io::stderr()),
            line: Vec::new(),
        }
    }

    /// Writes `bytes` to standard output.
    ///
    /// # Errors
    /// [`CliError::stdout`]: quiet for a closed pipe.
    pub fn out(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| CliError::stdout(&e))
    }

    /// Writes `line` and a newline to standard output.
    ///
    /// # Errors
    /// As [`out`](Self::out).
    pub fn out_line(&mut self, line: impl Display) -> Result<()> {
        writeln!(self.out, "{line}").map_err(|e| CliError::stdout(&e))
    }

    /// Writes `bytes` to standard error.
    ///
    /// # Errors
    /// [`CliError::stderr`]: quiet for a closed pipe.
    pub fn err(&mut self, bytes: &[u8]) -> Result<()> {
        self.err.write_all(bytes).map_err(|e| CliError::stderr(&e))
    }

    /// Writes `line` and a newline to standard error.
    ///
    /// # Errors
    /// As [`err`](Self::err).
    pub fn err_line(&mut self, line: impl Display) -> Result<()> {
        writeln!(self.err, "{line}").map_err(|e| CliError::stderr(&e))
    }

    /// Writes `prefix`, `field` spelled in `encoding` and a newline to standard error
    /// (`not found: KEY`), without allocating once the first such line has been written.
    /// A field that text mode cannot spell is written as it is.
    ///
    /// # Errors
    /// As [`err`](Self::err).
    pub fn err_field_line(
        &mut self,
        prefix: &[u8],
        field: &[u8],
        encoding: Encoding,
    ) -> Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.extend_from_slice(prefix);
        if encoding.encode(field, &mut line).is_err() {
            line.extend_from_slice(field);
        }
        line.push(b'\n');
        let written = self.err(&line);
        self.line = line;
        written
    }

    /// Writes out what both buffers hold, standard output first.
    ///
    /// # Errors
    /// The first write error, as [`out`](Self::out) and [`err`](Self::err) say.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| CliError::stdout(&e))?;
        self.err.flush().map_err(|e| CliError::stderr(&e))
    }

    /// Ends the command on `error`: writes out what can still be written and, unless the
    /// error is a closed pipe, prints `error: MESSAGE` last. Write errors here are ignored:
    /// there is nowhere left to report them.
    pub fn finish_with_error(&mut self, error: &CliError) {
        let _ = self.out.flush();
        let _ = self.err.flush();
        if !error.is_quiet() {
            let _ = writeln!(io::stderr(), "error: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_pipes_are_quiet_and_other_errors_are_not() {
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(CliError::stdout(&pipe).is_quiet());
        assert!(CliError::stderr(&pipe).is_quiet());
        let full = io::Error::from_raw_os_error(28);
        let e = CliError::stderr(&full);
        assert!(!e.is_quiet());
        assert_eq!(
            e.to_string(),
            "cannot write to standard error: no space left on device"
        );
    }
}
