#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![allow(
    rustdoc::invalid_html_tags,
    reason = "clap prints the doc comments of the commands verbatim as their help, so they \
              spell the line format KEY<TAB>VALUE without Markdown code quotes"
)]

mod cmd;
mod error;
mod filter_audit;
mod filters;
mod lines;
mod table_file;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cmd::{audit, build, dump, get, stats, verify};

/// Build, read and check LevelDB-compatible sorted string tables (.ldb, .sst).
///
/// Entries are lines of KEY<TAB>VALUE (both hex with --hex). Exit codes: 0 success, 1 some
/// key not found, 2 error.
#[derive(Parser, Debug)]
#[command(name = "leveltable", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Build(build::Args),
    Get(get::Args),
    Dump(dump::Args),
    Verify(verify::Args),
    Stats(stats::Args),
    Audit(audit::Args),
}

fn main() -> ExitCode {
    // Usage errors exit with code 2 and a message starting `error:`, like every other error.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Get(args) => get::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Audit(args) => audit::run(args),
    };
    match result {
        Ok(outcome) => outcome.exit_code(),
        Err(e) if e.is_quiet() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
