//! How tests behave without LevelDB.
//!
//! The build script says once why LevelDB is missing and that the differential tests are
//! skipped (cargo repeats it on every command that uses this crate); the tests then skip
//! without a word each, so a run without LevelDB reads as one warning, not one line per
//! test.

/// What a wrapper's panic says when it is called without LevelDB.
pub const SKIP_MESSAGE: &str =
    "skipped: LevelDB 1.23 not installed (apt-get install libleveldb-dev libsnappy-dev)";

/// The environment variable that, set to `1`, turns a missing LevelDB into a build error and
/// a test failure (CI sets it, so the differential suite can never pass by skipping).
pub const REQUIRE_ENV: &str = "LEVELTABLE_REQUIRE_LEVELDB";

/// Gate for every test that needs LevelDB: `true` when it is linked.
///
/// Otherwise returns `false`, so the test can return early and pass, unless [`REQUIRE_ENV`]
/// is `1`. It prints nothing: the build's one warning has already said that the tests skip
/// and why.
///
/// ```
/// if !leveltable_interop::require_leveldb() {
///     return;
/// }
/// assert_eq!(leveltable_interop::hash::hash(b"", 0xbc9f1d34), 0xbc9f1d34);
/// ```
///
/// # Panics
///
/// When LevelDB is missing and `LEVELTABLE_REQUIRE_LEVELDB=1`.
pub fn require_leveldb() -> bool {
    if crate::available() {
        return true;
    }
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
    assert!(!required, "{REQUIRE_ENV}=1 but {SKIP_MESSAGE}");
    false
}
