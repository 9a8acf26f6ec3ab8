//! The worked example of `docs/format.md` is what the builder writes, byte for byte.

use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};

/// Parses the hex dump lines (`0000  00 05 03 ...  ascii`) of the document.
fn dump_bytes(doc: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in doc.lines() {
        let Some((offset, rest)) = line.split_once("  ") else {
            continue;
        };
        if offset.len() != 4 || !offset.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        assert_eq!(
            usize::from_str_radix(offset, 16).unwrap(),
            bytes.len(),
            "dump line {line:?} out of sequence"
        );
        let hex = &rest[..rest.len().min(47)];
        for byte in hex.split_whitespace() {
            bytes.push(u8::from_str_radix(byte, 16).unwrap());
        }
    }
    bytes
}

#[test]
fn worked_example_matches_the_builder() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/format.md");
    let doc = std::fs::read_to_string(path).expect("docs/format.md next to the workspace");
    let documented = dump_bytes(&doc);
    assert_eq!(documented.len(), 243);

    let options = BuildOptions::default()
        .compression(Compression::None)
        .block_size(40)
        .block_restart_interval(2)
        .filter_policy(BloomFilterPolicy::new(10));
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in [
        ("apple", "red"),
        ("apricot", "orange"),
        ("avocado", "green"),
        ("banana", "yellow"),
    ] {
        builder.add(k.as_bytes(), v.as_bytes()).unwrap();
    }
    let summary = builder.finish().unwrap();
    let ours = builder.into_inner();
    assert_eq!(ours, documented);

    // The figures the text quotes.
    assert_eq!(summary.data_blocks, 2);
    assert_eq!(summary.data_size, 85);
    assert_eq!(summary.filter_size, 18);
    assert_eq!(summary.metaindex_size, 47);
    assert_eq!(summary.index_size, 30);
    let table = Table::open(ours, ReadOptions::default()).unwrap();
    let footer = table.properties().footer;
    assert_eq!((footer.metaindex.offset, footer.metaindex.size), (108, 47));
    assert_eq!((footer.index.offset, footer.index.size), (160, 30));
}
