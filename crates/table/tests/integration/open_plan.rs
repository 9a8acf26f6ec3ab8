//! Opening a table through `OpenPlan`, fed the bytes it asks for, and what a damaged
//! metaindex does: an error by default, a table without filters when the options say to go
//! on as LevelDB's `Table::Open` does.

use leveltable_table::format::{FOOTER_LEN, Footer};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Error, OpenPlan, ReadOptions, Table, TableBuilder,
};

fn table_with_filter() -> Vec<u8> {
    let options = BuildOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .block_size(256);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..1000u32 {
        b.add(format!("k{i:05}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

fn read_options() -> ReadOptions {
    ReadOptions::default().filter_policy(BloomFilterPolicy::new(10))
}

fn footer(bytes: &[u8]) -> Footer {
    Footer::decode_from(&mut &bytes[bytes.len() - FOOTER_LEN..]).unwrap()
}

#[test]
fn a_plan_fed_its_hints_opens_in_few_reads() {
    let bytes = table_with_filter();
    let mut plan = OpenPlan::new(bytes.len() as u64, read_options()).unwrap();
    let mut reads = 0;
    while let Some(range) = plan.hint() {
        reads += 1;
        plan.give(
            range.start,
            &bytes[range.start as usize..range.end as usize],
        )
        .unwrap();
        assert!(reads < 5, "{plan:?}");
    }
    assert!(plan.need().is_none());
    let table = plan.finish(bytes.clone()).unwrap();
    assert!(reads <= 3, "{reads} reads");
    assert_eq!(table.get(b"k00500").unwrap(), Some(b"v500".to_vec()));
    assert_eq!(
        table.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    // Bytes that do not cover what it needs are refused, not guessed at.
    let mut plan = OpenPlan::new(bytes.len() as u64, read_options()).unwrap();
    assert!(matches!(
        plan.give(0, &bytes[..100]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_damaged_metaindex_fails_the_open_unless_meta_errors_are_ignored() {
    let mut bytes = table_with_filter();
    let meta = footer(&bytes).metaindex;
    bytes[meta.offset as usize + 1] ^= 0x10;
    let err = Table::open(bytes.clone(), read_options()).unwrap_err();
    assert!(
        matches!(err, Error::ChecksumMismatch { offset, .. } if offset == meta.offset),
        "{err:?}"
    );
    let lenient = read_options().ignore_meta_errors(true);
    let table = Table::open(bytes, lenient).unwrap();
    assert!(table.properties().filters.is_empty());
    assert_eq!(table.properties().filter_policy, None);
    assert_eq!(table.get(b"k00999").unwrap(), Some(b"v999".to_vec()));
    assert_eq!(table.get(b"k01000").unwrap(), None);
}

#[test]
fn a_metaindex_outside_the_file_is_passed_over_only_when_asked() {
    let mut bytes = table_with_filter();
    let mut f = footer(&bytes);
    f.metaindex.offset = bytes.len() as u64 * 4;
    let at = bytes.len() - FOOTER_LEN;
    bytes.truncate(at);
    f.encode_to(&mut bytes);
    assert!(matches!(
        Table::open(bytes.clone(), read_options()),
        Err(Error::Corruption { .. })
    ));
    let table = Table::open(bytes, read_options().ignore_meta_errors(true)).unwrap();
    assert_eq!(table.get(b"k00001").unwrap(), Some(b"v1".to_vec()));
    // The index stays required.
    let mut bytes = table_with_filter();
    let mut f = footer(&bytes);
    f.index.size = u64::MAX / 2;
    bytes.truncate(at);
    f.encode_to(&mut bytes);
    assert!(Table::open(bytes, read_options().ignore_meta_errors(true)).is_err());
}

#[test]
fn a_damaged_filter_block_leaves_the_table_without_filter_when_ignored() {
    let mut bytes = table_with_filter();
    let table = Table::open(bytes.clone(), read_options()).unwrap();
    let filter = table.properties().filters[0].handle;
    bytes[filter.offset as usize] ^= 0x01;
    assert!(Table::open(bytes.clone(), read_options()).is_err());
    let table = Table::open(bytes, read_options().ignore_meta_errors(true)).unwrap();
    assert_eq!(table.get(b"k00002").unwrap(), Some(b"v2".to_vec()));
    // No filter answers: every absent key inside the range reads its block.
    for i in 0..100u32 {
        assert_eq!(table.get(format!("k{i:05}x").as_bytes()).unwrap(), None);
    }
    assert_eq!(table.counters().filter_checks, 0);
}
