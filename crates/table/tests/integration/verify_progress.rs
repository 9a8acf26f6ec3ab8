//! `Table::verify_with_progress`: how far a verification has got, block by block.

use leveltable_table::{BuildOptions, Compression, ReadOptions, Table, TableBuilder};

fn table(entries: u64) -> Vec<u8> {
    let options = BuildOptions::default()
        .block_size(1024)
        .compression(Compression::None);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..entries {
        b.add(format!("{i:08}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

#[test]
fn progress_rises_block_by_block_to_the_file_size() {
    let bytes = table(2_000);
    let size = bytes.len() as u64;
    let t = Table::open(bytes, ReadOptions::default()).unwrap();
    let mut calls = Vec::new();
    let summary = t
        .verify_with_progress(&mut |done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(summary, t.verify().unwrap());
    // One call per data block, and a last one once everything is checked.
    assert_eq!(calls.len() as u64, summary.data_blocks + 1);
    assert!(summary.data_blocks > 100);
    assert!(calls.iter().all(|&(_, total)| total == size));
    assert!(calls.windows(2).all(|w| w[0].0 < w[1].0), "{calls:?}");
    assert!(calls[0].0 > 0 && calls[0].0 < size / 100);
    assert_eq!(calls.last(), Some(&(size, size)));
}

#[test]
fn a_failed_verification_stops_reporting_at_the_bad_block() {
    let mut bytes = table(2_000);
    // A byte in the middle of the data blocks: its block's checksum fails.
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let size = bytes.len() as u64;
    let t = Table::open(bytes, ReadOptions::default()).unwrap();
    let mut last = 0;
    t.verify_with_progress(&mut |done, _| last = done)
        .unwrap_err();
    assert!(last > 0 && last <= middle as u64, "{last} of {size}");
}
