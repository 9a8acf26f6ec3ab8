//! Tables built from random entries with random options, read back through every access
//! path and compared with a `BTreeMap`.

use std::collections::BTreeMap;
use std::io;
use std::ops::Bound;
use std::sync::Arc;

use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Cache, Comparator, Compression, ReadAt, ReadOptions, Table,
    TableBuilder,
};
use proptest::prelude::*;

use crate::common::Reverse;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A source that hides its bytes, so the reader takes the copying path used for files.
struct Opaque(Vec<u8>);

impl ReadAt for Opaque {
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
}

#[derive(Debug, Clone)]
struct Params {
    block_size: usize,
    restart_interval: usize,
    compression: Compression,
    bloom_bits: Option<usize>,
    cache: bool,
    opaque: bool,
}

fn params() -> impl Strategy<Value = Params> {
    (
        0u32..=16, // block size = 2^n, then jittered: 1 B ..= 64 KiB
        any::<u16>(),
        1usize..=32,
        any::<bool>(),
        prop::option::of(0usize..=30),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(lg, jitter, restart_interval, snappy, bloom_bits, cache, opaque)| {
                let base = 1usize << lg;
                Params {
                    block_size: (base + usize::from(jitter) % base).min(64 * 1024),
                    restart_interval,
                    compression: if snappy {
                        Compression::Snappy
                    } else {
                        Compression::None
                    },
                    bloom_bits,
                    cache,
                    opaque,
                }
            },
        )
}

/// Keys over a small alphabet so that prefixes are shared; values sometimes compressible.
fn entries() -> impl Strategy<Value = Model> {
    let key = prop::collection::vec(prop::sample::select(b"abc\x00\xff".to_vec()), 0..12);
    let value = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40),
        (0usize..600).prop_map(|n| vec![b'z'; n]),
    ];
    prop::collection::btree_map(key, value, 0..300)
}

fn probes() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(b"abc\x00\xff\x01".to_vec()), 0..13),
        0..60,
    )
}

fn build(model: &Model, p: &Params) -> Vec<u8> {
    let mut options = BuildOptions::default()
        .block_size(p.block_size)
        .block_restart_interval(p.restart_interval)
        .compression(p.compression);
    if let Some(bits) = p.bloom_bits {
        options = options.filter_policy(BloomFilterPolicy::new(bits));
    }
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in model {
        builder.add(k, v).unwrap();
    }
    let summary = builder.finish().unwrap();
    assert_eq!(summary.entries, model.len() as u64);
    let bytes = builder.into_inner();
    assert_eq!(summary.file_size, bytes.len() as u64);
    bytes
}

fn read_options(p: &Params) -> ReadOptions {
    let mut options = ReadOptions::default();
    if let Some(bits) = p.bloom_bits {
        options = options.filter_policy(BloomFilterPolicy::new(bits));
    }
    if p.cache {
        options = options.block_cache(Cache::shared(256 * 1024));
    }
    options
}

fn check<R: ReadAt>(table: &Table<R>, model: &Model, probes: &[Vec<u8>]) {
    let v = table.verify().unwrap();
    assert_eq!(v.entries, model.len() as u64);
    assert_eq!(v.data_blocks, table.properties().data_blocks);

    for (k, val) in model {
        assert_eq!(table.get(k).unwrap().as_ref(), Some(val), "get {k:x?}");
    }
    for p in probes {
        assert_eq!(table.get(p).unwrap().as_ref(), model.get(p), "probe {p:x?}");
    }

    // Forward and backward scans with the cursor.
    let mut it = table.iter();
    it.seek_to_first();
    for (k, val) in model {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &val[..]));
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
    it.seek_to_last();
    for (k, val) in model.iter().rev() {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &val[..]));
        it.prev();
    }
    assert!(!it.valid());
    it.status().unwrap();

    // Seeks, then a step each way.
    for p in probes {
        it.seek(p);
        let mut after = model.range::<Vec<u8>, _>((Bound::Included(p), Bound::Unbounded));
        match after.next() {
            Some((k, val)) => {
                assert_eq!((it.key(), it.value()), (&k[..], &val[..]), "seek {p:x?}");
                it.next();
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    after.next().map(|e| e.0.clone())
                );
                it.seek(p);
                it.prev();
                let before = model
                    .range::<Vec<u8>, _>((Bound::Unbounded, Bound::Excluded(p)))
                    .next_back();
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    before.map(|e| e.0.clone())
                );
            }
            None => assert!(!it.valid(), "seek {p:x?} past the end"),
        }
        it.status().unwrap();
    }

    // Rust iterators: whole table both ways, and ranges with mixed directions.
    let all: Vec<_> = table.entries().map(Result::unwrap).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
    let mut rev: Vec<_> = table.entries().rev().map(Result::unwrap).collect();
    rev.reverse();
    assert_eq!(rev, want);
    for pair in probes.chunks(2) {
        let (lo, hi) = match pair {
            [a, b] if a <= b => (a.clone(), b.clone()),
            [a, b] => (b.clone(), a.clone()),
            [a] => (a.clone(), vec![0xff; 13]),
            _ => unreachable!(),
        };
        let want: Vec<_> = model
            .range(lo.clone()..hi.clone())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let got: Vec<_> = table
            .range(lo.as_slice()..hi.as_slice())
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want, "range {lo:x?}..{hi:x?}");
        let want_incl: Vec<_> = model
            .range(lo.clone()..=hi.clone())
            .map(|e| e.0.clone())
            .collect();
        // Alternate ends; the result, put back in order, is the range.
        let mut r = table.range(lo.as_slice()..=hi.as_slice());
        let (mut front, mut back) = (Vec::new(), Vec::new());
        for step in 0.. {
            let item = if step % 3 == 1 {
                r.next_back()
            } else {
                r.next()
            };
            match item {
                Some(e) => {
                    let k = e.unwrap().0;
                    if step % 3 == 1 {
                        back.push(k)
                    } else {
                        front.push(k)
                    }
                }
                None => break,
            }
        }
        assert!(r.next().is_none() && r.next_back().is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, want_incl, "mixed range {lo:x?}..={hi:x?}");
    }

    // approximate_offset_of is monotonic and within the file.
    let mut last = 0;
    for k in model.keys() {
        let off = table.approximate_offset_of(k);
        assert!(off >= last && off <= table.properties().file_size);
        last = off;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn tables_agree_with_a_btreemap(model in entries(), p in params(), probes in probes()) {
        let bytes = build(&model, &p);
        if p.opaque {
            let table = Table::open(Opaque(bytes), read_options(&p)).unwrap();
            check(&table, &model, &probes);
        } else {
            let table = Table::open(bytes, read_options(&p)).unwrap();
            check(&table, &model, &probes);
        }
    }
}

#[test]
fn custom_comparator_orders_everything() {
    let keys: Vec<Vec<u8>> = (0..500u32)
        .rev()
        .map(|i| format!("k{i:04}").into_bytes())
        .collect();
    let cmp: Arc<dyn Comparator> = Arc::new(Reverse);
    let mut builder = TableBuilder::new(
        Vec::new(),
        BuildOptions::default()
            .comparator(Arc::clone(&cmp))
            .block_size(128),
    )
    .unwrap();
    for k in &keys {
        builder.add(k, k).unwrap();
    }
    // Ascending bytewise is out of order under Reverse.
    assert!(builder.add(b"k9999", b"").is_err());
    builder.finish().unwrap();
    let table = Table::open(builder.into_inner(), ReadOptions::default().comparator(cmp)).unwrap();
    table.verify().unwrap();
    for k in &keys {
        assert_eq!(table.get(k).unwrap().as_ref(), Some(k));
    }
    assert_eq!(table.get(b"k0100x").unwrap(), None);
    let scanned: Vec<Vec<u8>> = table.entries().map(|e| e.unwrap().0).collect();
    assert_eq!(scanned, keys);
    let mut it = table.iter();
    it.seek(b"k0100x"); // between k0101 and k0100 in reverse order: next is k0100
    assert_eq!(it.key(), b"k0100");
    let range: Vec<Vec<u8>> = table
        .range("k0300".."k0295")
        .map(|e| e.unwrap().0)
        .collect();
    assert_eq!(range.len(), 5);
    assert_eq!(range[0], b"k0300");
}

#[test]
fn bytewise_table_read_with_wrong_comparator_fails_verify() {
    let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default()).unwrap();
    for i in 0..100u32 {
        builder.add(format!("{i:03}").as_bytes(), b"").unwrap();
    }
    builder.finish().unwrap();
    let table = Table::open(
        builder.into_inner(),
        ReadOptions::default().comparator(Arc::new(Reverse)),
    )
    .unwrap();
    let err = table.verify().unwrap_err();
    assert!(err.to_string().contains("key order"), "{err}");
}

/// Bytewise order whose separators reach the next block's first key (`[start, limit]`
/// instead of `[start, limit)`): the index then sends a get of that key to the block before.
struct OverreachingSeparator;

impl Comparator for OverreachingSeparator {
    fn name(&self) -> &str {
        "test.OverreachingSeparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        start.clear();
        start.extend_from_slice(limit);
    }
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

#[test]
fn separator_at_the_next_blocks_first_key_fails_verify() {
    let cmp: Arc<dyn Comparator> = Arc::new(OverreachingSeparator);
    let options = BuildOptions::default()
        .comparator(Arc::clone(&cmp))
        .block_size(64);
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..100u32 {
        builder.add(format!("{i:03}").as_bytes(), b"value").unwrap();
    }
    builder.finish().unwrap();
    let table = Table::open(builder.into_inner(), ReadOptions::default().comparator(cmp)).unwrap();
    let missed = (0..100u32)
        .filter(|i| table.get(format!("{i:03}").as_bytes()).unwrap().is_none())
        .count();
    assert!(missed > 0, "every key found: the table is not malformed");
    let err = table.verify().unwrap_err();
    assert!(err.to_string().contains("key order"), "{err}");
}
