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
mod output;
mod profile;
mod progress;
mod remote;
mod table_file;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cmd::{audit, build, chromium, completions, db, dump, get, man, stats, verify};
use crate::output::Output;

/// Build, read and check LevelDB-compatible sorted string tables (.ldb, .sst).
///
/// Entries are lines of KEY<TAB>VALUE (both hex with --hex). Exit codes: 0 success, 1 some
/// key not found, 2 error.
///
/// A table may be named by URL: s3://bucket/key, gs://bucket/key, az://container/key,
/// http(s)://host/path (read only) or file:///path. Stores are configured by the
/// environment variables the object_store crate reads (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
/// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP, GOOGLE_*, AZURE_*).
#[derive(Parser, Debug)]
#[command(name = "leveltable", version, about, long_about)]
struct Cli {
    /// How block type bytes map to codecs when reading: auto (Google's and Mojang's
    /// LevelDB alike), leveldb (2 is zstd) or mojang (2 zlib, 3 zstd, 4 raw deflate).
    #[arg(long, global = true, default_value = "auto", value_parser = profile::parser())]
    profile: leveltable_table::Profile,
    /// After the command, print to standard error the requests made to object stores and
    /// the bytes they moved (`leveltable --stats dump s3://...`; `get --stats` prints them
    /// too).
    #[arg(long)]
    stats: bool,
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
    Db(db::Args),
    Chromium(chromium::Args),
    Completions(completions::Args),
    Man(man::Args),
}

fn main() -> ExitCode {
    // Usage errors exit with code 2 and a message starting `error:`, like every other error.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_exit(&e),
    };
    // All output goes through `output`, which turns write errors into errors (a closed pipe
    // into a quiet exit 0) instead of panics; see the module.
    let mut output = Output::new();
    profile::set(cli.profile);
    let show_stats = cli.stats;
    let result = match cli.command {
        Command::Build(args) if remote::is_url(&args.out) => build::run_to_url(args, &mut output),
        Command::Build(args) => build::run(args, &mut output),
        Command::Get(args) => get::run(args, &mut output),
        Command::Dump(args) => dump::run(args, &mut output),
        Command::Verify(args) => verify::run(args, &mut output),
        Command::Stats(args) => stats::run(args, &mut output),
        Command::Audit(args) => audit::run(args),
        Command::Db(args) => db::run(args, &mut output),
        Command::Chromium(args) => chromium::run(args, &mut output),
        Command::Completions(args) => completions::run(args, Cli::command(), &mut output),
        Command::Man(args) => man::run(args, Cli::command(), &mut output),
    };
    let result = result.and_then(|outcome| {
        if show_stats {
            output.err_line(remote::stats_line())?;
        }
        Ok(outcome)
    });
    match result.and_then(|outcome| output.flush().map(|()| outcome)) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            // An error caused by a signal's clean-up (its files removed under it) is no
            // error: the process ends by the signal.
            #[cfg(unix)]
            leveltable_process::wait_if_ending_by_signal();
            output.finish_with_error(&e);
            if e.is_quiet() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
    }
}

/// Prints clap's help, version or usage error as clap would, but with a failed write
/// treated as in every command: a closed pipe is a quiet success, another write error is
/// exit code 2 with a message.
fn usage_exit(e: &clap::Error) -> ExitCode {
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    match e.print() {
        Ok(()) => ExitCode::from(code),
        Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(io) => {
            let error = if e.use_stderr() {
                error::CliError::stderr(&io)
            } else {
                error::CliError::stdout(&io)
            };
            Output::new().finish_with_error(&error);
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
