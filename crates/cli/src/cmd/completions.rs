//! `leveltable completions SHELL`: the shell's completion script, on standard output.

use clap_complete::Shell;

use crate::cmd::Outcome;
use crate::error::Result;
use crate::output::Output;

/// Print the completion script of a shell (bash, zsh, fish, powershell, elvish).
///
/// Load it in the shell's start-up file, or install it where the shell looks:
/// `source <(leveltable completions bash)` in ~/.bashrc;
/// `leveltable completions zsh > ~/.zfunc/_leveltable` (with ~/.zfunc in fpath);
/// `leveltable completions fish > ~/.config/fish/completions/leveltable.fish`;
/// `leveltable completions powershell | Out-String | Invoke-Expression` in $PROFILE.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Runs the command: `command` is the whole command line definition.
///
/// # Errors
/// A failed write.
pub fn run(args: Args, mut command: clap::Command, output: &mut Output) -> Result<Outcome> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "leveltable", &mut script);
    output.out(&script)?;
    Ok(Outcome::Success)
}
