//! The gate every test passes through.

use leveltable_interop::{REQUIRE_ENV, SKIP_MESSAGE, available, require_leveldb};

/// With LevelDB linked the gate opens; without it the gate closes (printing the skip line)
/// unless CI demands LevelDB, in which case it panics.
#[test]
fn gate_follows_availability() {
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
    let outcome = std::panic::catch_unwind(require_leveldb);
    match (available(), required) {
        (true, _) => assert!(matches!(outcome, Ok(true))),
        (false, false) => assert!(matches!(outcome, Ok(false))),
        (false, true) => assert!(outcome.is_err()),
    }
    assert!(!SKIP_MESSAGE.contains('\n'));
}

/// Without LevelDB, calling a wrapper anyway panics with the skip message instead of
/// failing to link.
#[test]
fn wrappers_panic_without_leveldb() {
    let outcome = std::panic::catch_unwind(|| leveltable_interop::hash::hash(b"", 0));
    assert_eq!(outcome.is_ok(), available());
}
