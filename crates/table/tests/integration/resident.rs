//! `Table::resident_bytes`: what an open table keeps in memory, counted.

use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};
use std::sync::Arc;

fn table(n: u32, compression: Compression, bloom: bool) -> Vec<u8> {
    let mut options = BuildOptions::default()
        .compression(compression)
        .block_size(256);
    if bloom {
        options = options.filter_policy(Arc::new(BloomFilterPolicy::new(10)));
    }
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..n {
        b.add(format!("key{i:08}").as_bytes(), b"value").unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

#[test]
fn resident_bytes_count_the_index_and_the_filter() {
    for bloom in [false, true] {
        let file = table(20_000, Compression::None, bloom);
        let options = ReadOptions::default().filter_policy(Arc::new(BloomFilterPolicy::new(10)));
        let t = Table::open(file, options).unwrap();
        let p = t.properties();
        let resident = t.resident_bytes();
        let (index, filter) = (p.index_size, p.filter_size);
        assert_eq!(filter > 0, bloom);
        // The index and filter blocks, plus the fence's 8 to 24 bytes per data block.
        assert!(
            resident >= index + filter,
            "{resident} < {index} + {filter}"
        );
        let fence_most = 32 * p.data_blocks + 4096;
        assert!(
            resident <= index + filter + fence_most,
            "{resident} > {index} + {filter} + {fence_most}"
        );
    }
}

#[test]
fn resident_bytes_count_an_index_decompressed() {
    for compression in [Compression::Snappy, Compression::Zstd] {
        if !compression.is_available() {
            continue;
        }
        let t = Table::open(table(20_000, compression, false), ReadOptions::default()).unwrap();
        let p = t.properties();
        // LevelDB compresses the index block like the data blocks: its stored size is
        // smaller than what is kept.
        assert!(p.index_size < t.resident_bytes(), "{compression:?}");
        let plain = Table::open(
            table(20_000, Compression::None, false),
            ReadOptions::default(),
        )
        .unwrap();
        assert!(
            t.resident_bytes() >= plain.properties().index_size,
            "{compression:?}: {} < {}",
            t.resident_bytes(),
            plain.properties().index_size
        );
    }
}
