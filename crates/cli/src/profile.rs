//! `--profile`: which compression each block type byte names when reading tables and
//! databases, set once for the whole command.

use std::sync::OnceLock;

use leveltable_db::DbOptions;
use leveltable_table::{Profile, ReadOptions};

/// `--profile`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileArg {
    /// Google's and Mojang's LevelDB alike: type 2 is zstd or zlib by its first bytes.
    #[default]
    Auto,
    /// Google's LevelDB: 0 none, 1 snappy, 2 zstd.
    Leveldb,
    /// Mojang's LevelDB (Minecraft Bedrock): 0 none, 1 snappy, 2 zlib, 3 zstd, 4 raw deflate.
    Mojang,
}

impl From<ProfileArg> for Profile {
    fn from(arg: ProfileArg) -> Profile {
        match arg {
            ProfileArg::Auto => Profile::Auto,
            ProfileArg::Leveldb => Profile::LevelDb,
            ProfileArg::Mojang => Profile::Mojang,
        }
    }
}

static PROFILE: OnceLock<Profile> = OnceLock::new();

/// Sets the profile of this run (the first call wins).
pub fn set(arg: ProfileArg) {
    let _ = PROFILE.set(arg.into());
}

/// The profile of this run.
pub fn get() -> Profile {
    PROFILE.get().copied().unwrap_or_default()
}

/// `options` reading with this run's profile.
pub fn read_options(options: ReadOptions) -> ReadOptions {
    options.profile(get())
}

/// Database options reading with this run's profile.
pub fn db_options() -> DbOptions {
    DbOptions::default().profile(get())
}
