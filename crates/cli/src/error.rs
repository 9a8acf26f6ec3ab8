//! The command's error: a message for the user, printed after `error: `.

use std::fmt;
use std::io;
use std::path::Path;

/// An error that ends a command with exit code 2. Its message is complete: `main` prints it
/// as `error: <message>` and nothing else.
///
/// The one exception is an output closed by its reader (`leveltable dump t | head`): that
/// ends the command quietly with exit code 0, as it would end a shell pipeline.
#[derive(Debug)]
pub struct CliError {
    message: String,
    quiet: bool,
}

impl CliError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            quiet: false,
        }
    }

    /// Whether the command should end silently with success (its output was closed).
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// An I/O error on `path`: `<doing> <path>: <error>`.
    pub fn io(doing: &str, path: &Path, e: &io::Error) -> CliError {
        CliError::new(format!("{doing} {}: {}", path.display(), io_message(e)))
    }

    /// An I/O error writing to standard output.
    pub fn stdout(e: &io::Error) -> CliError {
        let mut error = CliError::new(format!(
            "cannot write to standard output: {}",
            io_message(e)
        ));
        error.quiet = e.kind() == io::ErrorKind::BrokenPipe;
        error
    }

    /// An I/O error writing to standard error.
    pub fn stderr(e: &io::Error) -> CliError {
        let mut error = CliError::new(format!("cannot write to standard error: {}", io_message(e)));
        error.quiet = e.kind() == io::ErrorKind::BrokenPipe;
        error
    }

    /// This error, met after the table at `path` was written and moved into place: the
    /// message says the table is complete, so nobody deletes or rebuilds it for nothing.
    pub fn after_table_written(mut self, path: &Path) -> CliError {
        self.message = format!(
            "{} (the table {} was written and is complete)",
            self.message,
            path.display()
        );
        self
    }

    /// An I/O error reading standard input.
    pub fn stdin(e: &io::Error) -> CliError {
        CliError::new(format!("cannot read standard input: {}", io_message(e)))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// An I/O error's message, lowercase first word and without Rust's `(os error N)` suffix, so
/// messages read like the rest: `no such file or directory`.
pub fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if !chars.as_str().starts_with(|c: char| c.is_uppercase()) => {
            first.to_lowercase().chain(chars).collect()
        }
        _ => text,
    }
}

/// The result type of the commands.
pub type Result<T> = std::result::Result<T, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_messages_read_like_sentences() {
        let e = io::Error::from_raw_os_error(2);
        assert_eq!(io_message(&e), "no such file or directory");
        let e = io::Error::other("EOF while reading");
        assert_eq!(io_message(&e), "EOF while reading");
        let e = CliError::io(
            "cannot open",
            Path::new("x.ldb"),
            &io::Error::from_raw_os_error(21),
        );
        assert_eq!(e.to_string(), "cannot open x.ldb: is a directory");
    }

    #[test]
    fn errors_after_the_table_is_written_say_it_is_complete() {
        let full = io::Error::from_raw_os_error(28);
        let e = CliError::stderr(&full).after_table_written(Path::new("t.ldb"));
        assert_eq!(
            e.to_string(),
            "cannot write to standard error: no space left on device (the table t.ldb was \
             written and is complete)"
        );
        assert!(!e.is_quiet());
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(
            CliError::stderr(&pipe)
                .after_table_written(Path::new("t.ldb"))
                .is_quiet()
        );
    }
}
