//! Tests of the block reader: malformed blocks, seeks, and every step of the cursor.

use super::*;
use crate::block_builder::BlockBuilder;
use crate::comparator::BytewiseComparator;
use std::collections::BTreeMap;

fn build(entries: &[(&[u8], &[u8])], interval: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    b.finish().to_vec()
}

fn collect_forward(block: &Block<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = block.iter(&BytewiseComparator);
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn collect_backward(block: &Block<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = block.iter(&BytewiseComparator);
    it.seek_to_last();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

#[test]
fn empty_block() {
    let data = build(&[], 16);
    let block = Block::new(&data).unwrap();
    assert!(block.is_empty());
    assert_eq!(block.check(&BytewiseComparator).unwrap(), 0);
    let mut it = block.iter(&BytewiseComparator);
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(b"a");
    assert!(!it.valid());
    assert_eq!(it.key(), b"");
    assert_eq!(it.value(), b"");
    it.status().unwrap();
}

#[test]
fn model_all_intervals() {
    let mut model = BTreeMap::new();
    let mut rng = crate::test_rng::Lcg::new(1);
    for i in 0..300u32 {
        let x = rng.next();
        let key = format!("key{:05}{}", i * 3, "x".repeat((x >> 60) as usize));
        let value = vec![b'v'; (x >> 56) as usize % 40];
        model.insert(key.into_bytes(), value);
    }
    let entries: Vec<(&[u8], &[u8])> = model
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for interval in [1, 2, 3, 16, 1000] {
        let data = build(&entries, interval);
        let block = Block::new(&data).unwrap();
        assert_eq!(block.num_restarts(), 300usize.div_ceil(interval));
        assert_eq!(block.check(&BytewiseComparator).unwrap(), 300);
        assert_eq!(collect_forward(&block), want);
        assert_eq!(collect_backward(&block), want);
        let mut it = block.iter(&BytewiseComparator);
        for i in 0..=900u32 {
            let target = format!("key{i:05}");
            let expected = model.range(target.as_bytes().to_vec()..).next();
            it.seek(target.as_bytes());
            match expected {
                Some((k, v)) => {
                    assert!(it.valid(), "{target}");
                    assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                }
                None => assert!(!it.valid()),
            }
            // Seeking from the current position gives the same answer as a fresh seek;
            // alternate directions to exercise the narrowing.
            if i % 7 == 0 {
                it.seek(b"key00450");
                let k = model.range(b"key00450".to_vec()..).next().unwrap().0;
                assert_eq!(it.key(), &k[..]);
            }
        }
        // prev from the first entry ends the iteration.
        it.seek_to_first();
        it.prev();
        assert!(!it.valid());
        it.status().unwrap();
    }
}

#[test]
fn random_walks_agree_with_positions() {
    // Long keys push the backward cache past its byte bound; many entries per restart
    // point push it past its entry bound.
    let keys: Vec<Vec<u8>> = (0..400u32)
        .map(|i| {
            let len = if i % 50 == 7 {
                40_000
            } else {
                (i % 13) as usize
            };
            let mut k = format!("{i:05}").into_bytes();
            k.resize(5 + len, b'k');
            k
        })
        .collect();
    let entries: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &k[..3])).collect();
    for interval in [1, 16, 100, 1000] {
        let data = build(&entries, interval);
        let block = Block::new(&data).unwrap();
        let mut it = block.iter(&BytewiseComparator);
        let mut pos: Option<usize> = None;
        let mut rng = crate::test_rng::Lcg::new(7);
        for _ in 0..3000 {
            let x = rng.next();
            match (x >> 60) % 8 {
                0 => {
                    it.seek_to_first();
                    pos = Some(0);
                }
                1 => {
                    it.seek_to_last();
                    pos = Some(keys.len() - 1);
                }
                2 => {
                    let i = (x >> 20) as usize % keys.len();
                    it.seek(&keys[i]);
                    pos = Some(i);
                }
                3 | 4 => {
                    it.next();
                    pos = pos.and_then(|p| (p + 1 < keys.len()).then_some(p + 1));
                }
                _ => {
                    it.prev();
                    pos = pos.and_then(|p| p.checked_sub(1));
                }
            }
            match pos {
                Some(p) => {
                    assert!(it.valid());
                    assert_eq!(it.key(), &keys[p][..]);
                    assert_eq!(it.value(), &keys[p][..3]);
                }
                None => {
                    assert!(!it.valid());
                    it.seek_to_first();
                    pos = Some(0);
                }
            }
        }
        it.status().unwrap();
    }
}

fn restart_error(data: &[u8]) -> String {
    Block::new(data).unwrap_err().to_string()
}

#[test]
fn malformed_restart_arrays() {
    let good = build(&[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], 2);
    // entries at 0, 5, 10 (5 bytes each); restarts [0, 10] at 15 and 19; count at 23
    assert_eq!(good.len(), 15 + 8 + 4);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "table: corrupt block restart array at offset 0"),
        (
            vec![1, 0, 0],
            "table: corrupt block restart array at offset 0",
        ),
        // Zero restarts.
        (
            vec![0, 0, 0, 0],
            "table: corrupt block restart array at offset 0",
        ),
        // Count bigger than the block.
        (
            vec![0, 0, 0, 0, 2, 0, 0, 0],
            "table: corrupt block restart array at offset 4",
        ),
        (
            vec![0xff, 0xff, 0xff, 0xff],
            "table: corrupt block restart array at offset 0",
        ),
        // Empty block whose single restart is not 0.
        (
            vec![1, 0, 0, 0, 1, 0, 0, 0],
            "table: corrupt block restart array at offset 0",
        ),
        (
            {
                let mut d = good.clone();
                d[15] = 5; // first restart must be 0
                d
            },
            "table: corrupt block restart array at offset 15",
        ),
        (
            {
                let mut d = good.clone();
                d[19] = 15; // past the entries
                d
            },
            "table: corrupt block restart array at offset 19",
        ),
        (
            {
                let mut d = good.clone();
                d[19] = 0; // not increasing
                d
            },
            "table: corrupt block restart array at offset 19",
        ),
    ];
    for (data, want) in cases {
        assert_eq!(restart_error(&data), want, "{data:?}");
    }
}

fn iterate_everything(data: &[u8]) -> Result<()> {
    let block = Block::new(data)?;
    let cmp = BytewiseComparator;
    let mut it = block.iter(&cmp);
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() {
        it.next();
        steps += 1;
        assert!(steps <= data.len());
    }
    it.status()?;
    it.seek_to_last();
    while it.valid() {
        it.prev();
        steps += 1;
        assert!(steps <= 2 * data.len());
    }
    it.status()?;
    it.seek(b"b");
    it.status()?;
    block.check(&cmp)?;
    Ok(())
}

#[test]
fn malformed_entries() {
    let good = build(&[(b"a", b"1"), (b"ab", b"2"), (b"c", b"3")], 2);
    // entries: [0,1,1,a,1] at 0, [1,1,1,b,2] at 5, [0,1,1,c,3] at 10; restarts [0, 10]
    iterate_everything(&good).unwrap();
    let with = |at: usize, byte: u8| {
        let mut d = good.clone();
        d[at] = byte;
        d
    };
    let cases = vec![
        // Shared longer than the previous key.
        (with(5, 2), "table: corrupt block entry at offset 5"),
        // Restart entry claims a shared prefix (caught by seek and check).
        (with(10, 1), "table: corrupt block entry at offset 10"),
        // Value running into the restart array.
        (with(12, 9), "table: corrupt block entry at offset 10"),
        // Unterminated varint at the end of the entries.
        (with(12, 0x80), "table: corrupt block entry at offset 10"),
        // Keys out of order.
        (with(3, b'z'), "table: corrupt key order at offset 10"),
    ];
    for (data, want) in cases {
        assert_eq!(iterate_everything(&data).unwrap_err().to_string(), want);
    }
}

#[test]
fn restart_inside_an_entry_is_caught_by_check() {
    let mut data = build(&[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], 2);
    // Move the second restart from 10 (an entry start) to 11 (inside it).
    data[19] = 11;
    let block = Block::new(&data).unwrap();
    let err = block.check(&BytewiseComparator).unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: corrupt block restart array at offset 11"
    );
}

#[test]
fn every_byte_flip_and_truncation_is_safe() {
    let mut entries = Vec::new();
    for i in 0..40u32 {
        entries.push((
            format!("k{:03}", i * 7).into_bytes(),
            vec![i as u8; i as usize % 5],
        ));
    }
    let refs: Vec<(&[u8], &[u8])> = entries
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let good = build(&refs, 4);
    for i in 0..good.len() {
        for bit in 0..8 {
            let mut d = good.clone();
            d[i] ^= 1 << bit;
            let _ = iterate_everything(&d);
        }
        let _ = iterate_everything(&good[..i]);
    }
}

/// The entries a pass reads, and its status (`Debug`).
type Pass = (Vec<(Vec<u8>, Vec<u8>)>, String);

/// Every entry stepping with `next` reads, and how the stepping ended.
fn stepped(data: &[u8]) -> Pass {
    let Ok(block) = Block::new(data) else {
        return (Vec::new(), String::new());
    };
    let mut cursor = Cursor::new(block.layout, Vec::new());
    cursor.seek_to_first(data);
    let mut out = Vec::new();
    while cursor.valid() {
        out.push((cursor.key().to_vec(), cursor.value(data).to_vec()));
        cursor.next(data);
    }
    (out, format!("{:?}", cursor.status()))
}

/// The same through `run_forward`, its visitor stopping after every `every`th entry (then
/// checked to stand at that entry and, in a sound block (`sound`), a step back from it to
/// reach the one before) and the run going on with a `next`.
fn in_runs(data: &[u8], every: usize, sound: bool) -> Pass {
    let Ok(block) = Block::new(data) else {
        return (Vec::new(), String::new());
    };
    let mut cursor = Cursor::new(block.layout, Vec::new());
    cursor.seek_to_first(data);
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut n = 0;
    while cursor.run_forward(data, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        n += 1;
        n % every != 0
    }) {
        let (key, value) = out.last().unwrap();
        assert_eq!((cursor.key(), cursor.value(data)), (&key[..], &value[..]));
        let mut back = cursor.clone();
        back.prev(data);
        if let (true, Some(i)) = (sound, out.len().checked_sub(2)) {
            assert_eq!(back.key(), &out[i].0[..]);
        }
        cursor.next(data);
    }
    (out, format!("{:?}", cursor.status()))
}

#[test]
fn runs_read_what_steps_read() {
    let mut entries = Vec::new();
    for i in 0..60u32 {
        entries.push((
            format!("key{:04}", i * 13).into_bytes(),
            vec![i as u8; i as usize % 23],
        ));
    }
    let refs: Vec<(&[u8], &[u8])> = entries
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    for interval in [1, 3, 16] {
        let good = build(&refs, interval);
        let (all, status) = stepped(&good);
        assert_eq!(all.len(), entries.len());
        assert_eq!(status, "Ok(())");
        for every in [1, 2, 7, 100] {
            assert_eq!(in_runs(&good, every, true), (all.clone(), status.clone()));
        }
        // Damaged blocks: the same entries, then the same error.
        for i in 0..good.len() {
            for bit in [0, 3, 7] {
                let mut d = good.clone();
                d[i] ^= 1 << bit;
                let want = stepped(&d);
                for every in [1, 5, 1000] {
                    assert_eq!(
                        in_runs(&d, every, false),
                        want,
                        "byte {i} bit {bit} every {every}"
                    );
                }
            }
        }
    }
}

/// Keys of every length up to 40 sharing from 0 to 40 bytes with the key before (the short
/// keys sharing at most 16 are assembled as two 16-byte words), with values from empty up,
/// so that entries near the block's end lack the 32 bytes the words are read from: a
/// cursor's steps and runs read back exactly the keys and values built.
#[test]
fn keys_of_every_shared_length_read_back() {
    let mut rng = crate::test_rng::Lcg::new(11);
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    while keys.len() < 400 {
        // A prefix of a key made before, then letters up to 40 bytes in all.
        let base = &keys[(rng.next() >> 33) as usize % keys.len()];
        let shared = (rng.next() >> 33) as usize % (base.len() + 1);
        let mut key = base[..shared].to_vec();
        let len = shared + (rng.next() >> 33) as usize % (41 - shared);
        key.extend((shared..len).map(|_| b'a' + (rng.next() >> 62) as u8));
        keys.push(key);
    }
    keys.sort();
    keys.dedup();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, vec![i as u8; i % 37]))
        .collect();
    let refs: Vec<(&[u8], &[u8])> = entries
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let shared = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let shares: std::collections::BTreeSet<usize> = entries
        .windows(2)
        .map(|w| shared(&w[0].0, &w[1].0))
        .collect();
    assert!((0..=20).all(|s| shares.contains(&s)), "{shares:?}");
    for interval in [1, 4, 16, 1000] {
        let data = build(&refs, interval);
        let block = Block::new(&data).unwrap();
        assert_eq!(collect_forward(&block), entries, "interval {interval}");
        assert_eq!(collect_backward(&block), entries, "interval {interval}");
        for every in [1, 3, 1000] {
            assert_eq!(
                in_runs(&data, every, true),
                (entries.clone(), "Ok(())".to_owned())
            );
        }
    }
}
