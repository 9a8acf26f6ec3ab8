//! How tests behave without LevelDB.

use std::io::Write;

/// The one line a test prints when it skips because LevelDB is missing.
pub const SKIP_MESSAGE: &str =
    "skipped: LevelDB 1.23 not installed (apt-get install libleveldb-dev libsnappy-dev)";

/// The environment variable that, set to `1`, turns a missing LevelDB into a test failure
/// (CI sets it, so the differential suite can never pass by skipping).
pub const REQUIRE_ENV: &str = "LEVELTABLE_REQUIRE_LEVELDB";

/// Gate for every test that needs LevelDB: `true` when it is linked.
///
/// Otherwise prints [`SKIP_MESSAGE`] on one line and returns `false`, so the test can return
/// early and pass — unless [`REQUIRE_ENV`] is `1`. The line goes straight to the standard
/// error stream, which the test harness does not capture, so it shows in a normal
/// `cargo test` run.
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
    // Best effort: a closed stderr must not turn a skip into a failure.
    let _ = writeln!(std::io::stderr().lock(), "{SKIP_MESSAGE}");
    false
}
