//! Index blocks in shapes LevelDB does not write: a restart point every few entries (other
//! writers may choose any interval), and handles too large for the reader's packed form
//! (data blocks over 16 MiB). Lookups in such tables take the general path through the
//! index block and must answer exactly as in the usual shape.

use std::collections::BTreeMap;

use leveltable_table::block::Block;
use leveltable_table::block_builder::BlockBuilder;
use leveltable_table::format::{BlockHandle, BlockTrailer, FOOTER_LEN, Footer};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, BytewiseComparator, Compression, ReadOptions, Table,
    TableBuilder,
};

fn build(entries: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let options = BuildOptions::default()
        .block_size(256)
        .compression(Compression::None)
        .filter_policy(BloomFilterPolicy::new(10));
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in entries {
        builder.add(k, v).unwrap();
    }
    builder.finish().unwrap();
    builder.into_inner()
}

/// `table` with its index block rewritten with a restart point every `interval` entries,
/// appended after the old footer, and a new footer pointing at it.
fn with_index_interval(table: &[u8], interval: usize) -> Vec<u8> {
    let footer = Footer::decode_from(&mut &table[table.len() - FOOTER_LEN..]).unwrap();
    let start = footer.index.offset as usize;
    let index = Block::new(&table[start..start + footer.index.size as usize]).unwrap();
    let mut rebuilt = BlockBuilder::new(interval);
    let mut it = index.iter(&BytewiseComparator);
    it.seek_to_first();
    while it.valid() {
        rebuilt.add(it.key(), it.value());
        it.next();
    }
    let contents = rebuilt.finish().to_vec();
    let mut file = table.to_vec();
    let new_index = BlockHandle::new(file.len() as u64, contents.len() as u64);
    file.extend_from_slice(&contents);
    BlockTrailer::for_block(&contents, Compression::None).encode_to(&mut file);
    Footer {
        metaindex: footer.metaindex,
        index: new_index,
    }
    .encode_to(&mut file);
    file
}

/// Gets of every key, of keys between and around them, and seeks, all against the model.
fn check_reads(file: Vec<u8>, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let options = ReadOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let table = Table::open(file, options).unwrap();
    let mut probes: Vec<Vec<u8>> = vec![Vec::new(), b"0".to_vec(), b"\xff".to_vec()];
    for k in model.keys() {
        probes.push(k.clone());
        let mut after = k.clone();
        after.push(0);
        probes.push(after);
        probes.push(k[..k.len() - 1].to_vec());
    }
    for p in &probes {
        assert_eq!(
            table.get(p).unwrap(),
            model.get(p).cloned(),
            "{what}: get {p:?}"
        );
        let mut it = table.iter();
        it.seek(p);
        let want = model.range(p.clone()..).next();
        let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
        assert_eq!(
            got.as_ref(),
            want.map(|(k, v)| (k.clone(), v.clone())).as_ref(),
            "{what}: seek {p:?}"
        );
        it.status().unwrap();
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = table.entries().collect::<Result<_, _>>().unwrap();
    assert!(
        all.iter().eq(model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
            .iter()),
        "{what}: scan"
    );
}

#[test]
fn index_with_restart_points_every_few_entries() {
    let model: BTreeMap<Vec<u8>, Vec<u8>> = (0..600u32)
        .map(|i| {
            (
                format!("key{:06}", i * 3).into_bytes(),
                format!("value {i}").repeat(4).into_bytes(),
            )
        })
        .collect();
    let table = build(&model);
    let blocks = Table::open(table.clone(), ReadOptions::default())
        .unwrap()
        .properties()
        .data_blocks;
    assert!(blocks > 50, "{blocks} data blocks");
    for interval in [1, 2, 3, 4, 16, 1000] {
        check_reads(
            with_index_interval(&table, interval),
            &model,
            &format!("interval {interval}"),
        );
    }
}

#[test]
fn data_blocks_over_sixteen_mib() {
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = (0..40u32)
        .map(|i| {
            (
                format!("k{i:03}").into_bytes(),
                vec![b'a' + (i % 26) as u8; 100],
            )
        })
        .collect();
    model.insert(b"k020x".to_vec(), vec![7; 17 << 20]);
    check_reads(build(&model), &model, "17 MiB block");
}
