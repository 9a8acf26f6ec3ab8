//! Test doubles shared by the table crate's integration tests.

use std::cmp::Ordering;

use leveltable_table::Comparator;

/// Bytewise order reversed: a user comparator that is not LevelDB's default, so tests take
/// the non-bytewise paths. It keeps index keys whole (no shortening).
pub struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}
