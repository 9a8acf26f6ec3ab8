//! The `table` target reads every input both with checksums verified and without: a table
//! whose index checksum is wrong fails the first open but must still be read by the second.

use leveltable_fuzz_targets::table_passes;
use leveltable_table::format::{BLOCK_TRAILER_LEN, FOOTER_LEN, Footer};
use leveltable_table::{BuildOptions, TableBuilder};

fn sample_table() -> Vec<u8> {
    let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default()).expect("builder");
    for i in 0..100u32 {
        builder
            .add(format!("key{i:04}").as_bytes(), b"value")
            .expect("keys in order");
    }
    builder.finish().expect("finish");
    builder.into_inner()
}

/// Flips a bit of the index block's checksum, leaving its contents intact.
fn break_index_checksum(table: &mut [u8]) {
    let footer_at = table.len() - FOOTER_LEN;
    let footer = Footer::decode_from(&mut &table[footer_at..]).expect("footer");
    let crc_at = usize::try_from(footer.index.offset + footer.index.size).expect("small") + 1;
    assert!(crc_at + BLOCK_TRAILER_LEN - 1 <= footer_at);
    table[crc_at] ^= 0x01;
}

#[test]
fn a_valid_table_is_read_by_both_passes() {
    assert_eq!(table_passes(&sample_table()), [true, true]);
}

#[test]
fn a_bad_index_checksum_still_gets_the_unverified_pass() {
    let mut table = sample_table();
    break_index_checksum(&mut table);
    assert_eq!(table_passes(&table), [false, true]);
}

/// The input kept under `fuzz/regressions/table/` is this table, so the replayed corpus
/// keeps reading a checksum-broken table unverified.
#[test]
fn the_kept_bad_index_checksum_input_is_this_table() {
    let mut table = sample_table();
    break_index_checksum(&mut table);
    let kept = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/regressions/table/bad-index-checksum"
    ))
    .expect("kept input");
    assert_eq!(kept, table);
    assert_eq!(table_passes(&kept), [false, true]);
}
