//! Tests of the fence: searches agree with linear search and binary search, for bytewise
//! keys and for views of keys, with the handles and filters kept beside the prefixes.

use super::*;
use crate::block_builder::BlockBuilder;

fn check(keys: &[&[u8]], interval: usize, probes: &[&[u8]]) {
    let mut b = BlockBuilder::new(interval);
    for k in keys {
        b.add(k, b"");
    }
    let data = b.finish().to_vec();
    let layout = Layout::parse(&data).unwrap();
    let fence = Fence::build(&data, layout, false, None, |k| Some(k)).unwrap();
    let restart_keys: Vec<&[u8]> = (0..layout.num_restarts)
        .map(|i| restart_key(&data, layout, i).unwrap())
        .collect();
    let targets: Vec<&[u8]> = probes.iter().chain(keys).copied().collect();
    let mut many = vec![0; targets.len()];
    for (chunk, out) in targets.chunks(BATCH).zip(many.chunks_mut(BATCH)) {
        fence.first_at_or_after_batch(
            chunk,
            |j, i| Some(restart_key(&data, layout, i)? < chunk[j]),
            out,
        );
    }
    for (&t, got_many) in targets.iter().zip(many) {
        let want = restart_keys
            .iter()
            .position(|k| *k >= t)
            .unwrap_or(restart_keys.len());
        let got = fence.first_at_or_after(t, |i| Some(restart_key(&data, layout, i)? < t));
        assert_eq!(got, want, "target {t:?}");
        assert_eq!(got_many, want, "target {t:?} in a batch");
    }
}

/// Common prefixes of every length up to past 16 bytes, against targets shorter and longer
/// than 16 bytes that sort before, inside and after the prefix (the one-load comparison
/// and the slice comparison answer alike).
#[test]
fn common_prefixes_of_every_length() {
    for c in 0..=18usize {
        let common: Vec<u8> = (0..c).map(|i| b'a' + (i % 7) as u8).collect();
        let keys: Vec<Vec<u8>> = (0..40u32)
            .map(|i| {
                let mut k = common.clone();
                k.extend_from_slice(format!("{:03}", i * 5).as_bytes());
                k.extend_from_slice(&[b'x'; 9][..(i % 10) as usize]);
                k
            })
            .collect();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for len in [0, 1, c.saturating_sub(1), c, c + 1, 15, 16, 17, 24] {
            for fill in [0u8, b'0', b'5', b'a', b'g', 0xff] {
                // The common prefix cut or padded to `len`, then with one byte changed.
                let mut p: Vec<u8> = common.iter().copied().chain([fill; 24]).take(len).collect();
                probes.push(p.clone());
                for at in [0, c / 2, c.saturating_sub(1)] {
                    if let Some(b) = p.get_mut(at) {
                        *b = fill;
                        probes.push(p.clone());
                    }
                }
            }
        }
        let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let probes: Vec<&[u8]> = probes.iter().map(|p| &p[..]).collect();
        for interval in [1, 3] {
            check(&keys, interval, &probes);
        }
    }
}

/// Internal-key style ordering: the key without its last 8 bytes bytewise, then those 8
/// bytes (little-endian) descending, viewed through the first part only.
struct Suffixed;

impl crate::Comparator for Suffixed {
    fn name(&self) -> &str {
        "test.Suffixed"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let ((au, at), (bu, bt)) = (
            a.split_at(a.len().saturating_sub(8)),
            b.split_at(b.len().saturating_sub(8)),
        );
        au.cmp(bu)
            .then_with(|| bt.iter().rev().cmp(at.iter().rev()))
    }
    fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
    fn find_short_successor(&self, _: &mut Vec<u8>) {}
    fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.len().checked_sub(8).map(|n| &key[..n])
    }
}

/// With a comparator whose view is a part of the key, the fence still finds what a
/// linear search with the comparator finds: runs of one user key under many tags tie on
/// the view and are resolved with the comparator.
#[test]
fn views_agree_with_linear_search_by_comparator() {
    use crate::Comparator;
    let with_tag = |user: &[u8], tag: u64| {
        let mut k = user.to_vec();
        k.extend_from_slice(&tag.to_le_bytes());
        k
    };
    let users: Vec<Vec<u8>> = [&b"a"[..], b"a\x00", b"ab", b"abcdefgh", b"abcdefghi", b"b"]
        .iter()
        .map(|u| u.to_vec())
        .chain((0..60).map(|i| format!("user{:05}", i * 3).into_bytes()))
        .collect();
    let mut keys: Vec<Vec<u8>> = users
        .iter()
        .flat_map(|u| [9u64, 5, 1].map(|t| with_tag(u, t << 8 | 1)))
        .collect();
    keys.sort_by(|a, b| Suffixed.compare(a, b));
    let probes: Vec<Vec<u8>> = users
        .iter()
        .cloned()
        .chain([
            b"".to_vec(),
            b"a\x00\x00".to_vec(),
            b"user00004".to_vec(),
            b"z".to_vec(),
        ])
        .flat_map(|u| [u64::MAX, 6 << 8 | 1, 0].map(|t| with_tag(&u, t)))
        .collect();
    for interval in [1, 2, 5] {
        let mut b = BlockBuilder::new(interval);
        for k in &keys {
            b.add(k, b"");
        }
        let data = b.finish().to_vec();
        let layout = Layout::parse(&data).unwrap();
        let fence =
            Fence::build(&data, layout, false, None, |k| Suffixed.bytewise_view(k)).unwrap();
        let restart_keys: Vec<&[u8]> = (0..layout.num_restarts)
            .map(|i| restart_key(&data, layout, i).unwrap())
            .collect();
        for t in &probes {
            let want = restart_keys
                .iter()
                .position(|k| Suffixed.compare(k, t) != Ordering::Less)
                .unwrap_or(restart_keys.len());
            let view = Suffixed.bytewise_view(t).unwrap();
            let got = fence.first_at_or_after(view, |i| {
                Some(Suffixed.compare(restart_key(&data, layout, i)?, t) == Ordering::Less)
            });
            assert_eq!(got, want, "interval {interval}, target {t:?}");
        }
    }
}

/// The line tree counts exactly what a binary search over the sorted prefixes counts,
/// for every size from one line to four levels, with runs of equal prefixes and prefixes
/// of `u64::MAX` (which equal the padding).
#[test]
fn rank_agrees_with_partition_point() {
    let mut rng = crate::test_rng::Lcg::new(7);
    let mut next = move || rng.next() >> 20;
    for len in (1..=80).chain([511, 512, 513, 4095, 4096, 4097, 5000]) {
        let mut prefixes: Vec<u64> = (0..len).map(|_| next() % 1000 * 3).collect();
        if len % 3 == 0 {
            prefixes[len - 1] = u64::MAX;
        }
        prefixes.sort_unstable();
        let keep = Keep {
            handles: true,
            filters: len % 2 == 0,
        };
        let fence = Fence::from_entries(Vec::new(), len, false, keep, |i| {
            Some(Entry {
                prefix: prefixes[i],
                handle: i as u64,
                filter: pack_filter(Some(i..2 * i)),
            })
        })
        .unwrap();
        if let Some(top) = fence.upper.last() {
            assert_eq!(top.len(), 1);
        }
        for t in (0..3002).chain([u64::MAX - 1, u64::MAX]) {
            let want = prefixes.partition_point(|&p| p < t);
            assert_eq!(fence.rank(t), want, "len {len}, target {t}");
            let mut batched = [None; 3];
            fence.ranks(&[Some(t), None, Some(t)], &mut batched);
            assert_eq!(batched, [Some(want), None, Some(want)]);
            if want < len {
                assert_eq!(fence.prefix(want), prefixes[want]);
                assert_eq!(fence.handle(want), Some(BlockHandle::new(0, want as u64)));
                let filter = fence.filter(want).map(unpack_filter);
                assert_eq!(filter, keep.filters.then_some(Some(want..2 * want)));
            } else {
                assert_eq!(fence.handle(want), None);
                assert_eq!(fence.filter(want), None);
            }
        }
    }
}

/// Filter ranges pack and unpack; what does not fit in 32 bits is not recorded, and a
/// range the reader could not decide stays undecided.
#[test]
fn filters_pack() {
    for range in [0..0, 0..7, 5..5, 1..u32::MAX as usize, 0..u32::MAX as usize] {
        assert_eq!(unpack_filter(pack_filter(Some(range.clone()))), Some(range));
    }
    assert_eq!(unpack_filter(pack_filter(None)), None);
    assert_eq!(pack_filter(None), FILTER_UNDECIDED);
    assert_eq!(pack_filter(Some(0..1 << 32)), NO_FILTER);
    assert_eq!(pack_filter(Some(1 << 32..1 << 32)), NO_FILTER);
}

#[test]
fn agrees_with_linear_search() {
    let decimal: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("{:016}", i * 7).into_bytes())
        .collect();
    let keys: Vec<&[u8]> = decimal.iter().map(|k| &k[..]).collect();
    let probes: Vec<Vec<u8>> = (0..2200)
        .map(|i| format!("{:016}", i).into_bytes())
        .chain([
            b"".to_vec(),
            b"0".to_vec(),
            b"00000000000000000".to_vec(),
            b"1".to_vec(),
        ])
        .collect();
    let probes: Vec<&[u8]> = probes.iter().map(|k| &k[..]).collect();
    for interval in [1, 3, 16] {
        check(&keys, interval, &probes);
    }
    // Keys with zero bytes and lengths around the 8-byte window.
    let odd: Vec<&[u8]> = vec![
        b"a",
        b"a\x00",
        b"a\x00\x00",
        b"a\x00\x00\x00\x00\x00\x00\x00\x00\x01",
        b"a\x01",
        b"ab",
        b"abcdefgh",
        b"abcdefghi",
        b"abcdefghij",
        b"b",
        b"\xff\xff",
    ];
    let probes: Vec<&[u8]> = vec![b"", b"a\x00\x00\x00", b"abcdefgh\x00", b"c", b"\xff"];
    for interval in [1, 2] {
        check(&odd, interval, &probes);
    }
    // All keys identical up to the end of the shortest: common prefix is a whole key.
    check(
        &[b"same", b"same1", b"same2"],
        1,
        &[b"sam", b"same0", b"same3"],
    );
    check(&[b"only"], 1, &[b"", b"only", b"zz"]);
    // A short-successor tail, as the index of a table of decimal keys ends.
    check(
        &[
            b"0000000000000000",
            b"0000000000000074",
            b"0000000001999998",
            b"1",
        ],
        1,
        &[
            b"0",
            b"00000000019999989",
            b"05",
            b"1",
            b"10",
            b"2",
            b"0000000000000075",
        ],
    );
    check(&[b"a", b"b"], 1, &[b"", b"a", b"a0", b"b", b"c"]);
    // Long runs of restart keys whose 8 fenced bytes are equal, ending in different
    // lengths and bytes past the window: ties are resolved on the full keys.
    let mut tied: Vec<Vec<u8>> = vec![b"k".to_vec()];
    for run in [b"aaaaaaaa", b"aaaaaaab", b"bbbbbbbb"] {
        for i in 0..40u32 {
            let mut k = b"k".to_vec();
            k.extend_from_slice(run);
            k.extend_from_slice(format!("{i:03}").as_bytes());
            tied.push(k);
        }
    }
    tied.push(b"kzzzzzzzzzz".to_vec());
    tied.push(b"l".to_vec());
    let tied_keys: Vec<&[u8]> = tied.iter().map(|k| &k[..]).collect();
    let mut tied_probes: Vec<Vec<u8>> = tied
        .iter()
        .flat_map(|k| {
            let mut after = k.clone();
            after.push(b'5');
            [k[..k.len() - 1].to_vec(), after]
        })
        .collect();
    tied_probes.extend([
        b"kaaaaaaaa".to_vec(),
        b"kaaaaaaab999".to_vec(),
        b"kb".to_vec(),
    ]);
    let tied_probes: Vec<&[u8]> = tied_probes.iter().map(|k| &k[..]).collect();
    for interval in [1, 2, 7] {
        check(&tied_keys, interval, &tied_probes);
    }
}

/// Each leaf line's span covers the filters of its blocks (undecided ones and the last
/// line's padding left out), and spans too long to request, or past the end of the filter
/// block, are not kept.
#[test]
fn leaf_lines_span_their_filters() {
    let len = 50;
    let keep = Keep {
        handles: true,
        filters: true,
    };
    // Block i's filter: 10 bytes from 10 * i, but block 9's 200 bytes, block 13's undecided
    // and blocks 40..48's 100 bytes each.
    let filter_of = |i: usize| match i {
        9 => pack_filter(Some(90..290)),
        13 => pack_filter(None),
        40..48 => pack_filter(Some(400 + 100 * (i - 40)..500 + 100 * (i - 40))),
        _ => pack_filter(Some(10 * i..10 * i + 10)),
    };
    let spans = |block_len: usize| {
        let fence = Fence::from_entries(Vec::new(), len, false, keep, |i| {
            Some(Entry {
                prefix: i as u64,
                handle: i as u64,
                filter: filter_of(i),
            })
        })
        .unwrap()
        .with_filter_block(Arc::from(vec![0u8; block_len]));
        assert_eq!(fence.spans.len(), len.div_ceil(FANOUT));
        let unpack = |s| (s != NO_FILTER).then(|| unpack_filter(s)).flatten();
        fence.spans.iter().map(|&s| unpack(s)).collect::<Vec<_>>()
    };
    assert_eq!(
        spans(1200),
        [
            Some(0..80),
            Some(80..290),
            Some(160..240),
            Some(240..320),
            Some(320..400),
            None, // 800 bytes: past SPAN_LIMIT
            Some(480..500),
        ]
    );
    assert_eq!(
        spans(300),
        [
            Some(0..80),
            Some(80..290),
            Some(160..240),
            None,
            None,
            None,
            None
        ]
    );
}
