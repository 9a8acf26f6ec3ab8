//! `leveltable man`: the manual page of the whole command, in roff, on standard output.

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::output::Output;

/// Print the manual page (roff) of leveltable and every subcommand.
///
/// One stream holding the page of `leveltable` followed by those of its subcommands
/// (`leveltable-db-verify(1)`, …): `leveltable man | man -l -` reads it, `leveltable man >
/// leveltable.1` installs it (in a directory of MANPATH, such as
/// ~/.local/share/man/man1).
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the command: `command` is the whole command line definition.
///
/// # Errors
/// A failed write.
pub fn run(_args: Args, command: clap::Command, output: &mut Output) -> Result<Outcome> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut page = Vec::new();
    render(&command, &mut page)
        .map_err(|e| CliError::new(format!("cannot render the manual page: {e}")))?;
    output.out(&page)?;
    Ok(Outcome::Success)
}

/// The page of `command`, then those of its subcommands, depth first in their order.
fn render(command: &clap::Command, page: &mut Vec<u8>) -> std::io::Result<()> {
    clap_mangen::Man::new(command.clone()).render(page)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub, page)?;
    }
    Ok(())
}
