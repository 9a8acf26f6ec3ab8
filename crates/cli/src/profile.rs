//! `--profile`: which compression each block type byte names when reading tables and
//! databases, set once for the whole command.

use std::sync::OnceLock;

use leveltable_db::DbOptions;
use leveltable_table::{Profile, ReadOptions};

/// `--profile`: the table crate's names and descriptions of its profiles.
pub fn parser() -> impl clap::builder::TypedValueParser<Value = Profile> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        Profile::ALL.map(|p| PossibleValue::new(p.name()).help(p.description())),
    )
    .try_map(|name| name.parse::<Profile>())
}

static PROFILE: OnceLock<Profile> = OnceLock::new();

/// Sets the profile of this run (the first call wins).
pub fn set(profile: Profile) {
    let _ = PROFILE.set(profile);
}

/// The profile of this run.
pub fn get() -> Profile {
    PROFILE.get().copied().unwrap_or_default()
}

/// `options` reading with this run's profile.
pub fn read_options(options: ReadOptions) -> ReadOptions {
    options.profile(get())
}

/// Database options reading with this run's profile, with the comparator the MANIFEST
/// names: bytewise, or Chromium's IndexedDB `idb_cmp1`.
pub fn db_options() -> DbOptions {
    DbOptions::default()
        .profile(get())
        .comparators(leveltable_chromium::comparators())
}
