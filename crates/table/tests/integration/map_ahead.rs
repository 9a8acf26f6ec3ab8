//! A forward scan asks its source to map in the stretch ahead of it (`ReadAt::will_read`),
//! in windows that grow from 128 KiB to 2 MiB, and a scan continued by another cursor
//! (`TableIter::with_map_ahead`) asks exactly what one long scan would. Stretches that an
//! earlier scan of the same table (from any thread) asked for are not asked again.

use std::io;
use std::sync::Mutex;

use leveltable_table::{
    BuildOptions, Compression, MapAhead, ReadAt, ReadOptions, Table, TableBuilder,
};

/// Bytes in memory that record every `will_read` asked of them.
struct Recorder {
    bytes: Vec<u8>,
    asked: Mutex<Vec<(u64, u64)>>,
}

impl Recorder {
    fn take(&self) -> Vec<(u64, u64)> {
        std::mem::take(&mut *self.asked.lock().unwrap())
    }
}

impl ReadAt for Recorder {
    fn size(&self) -> io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.bytes.read_exact_at(buf, offset)
    }
    fn as_bytes(&self) -> Option<&[u8]> {
        Some(&self.bytes)
    }
    fn will_read(&self, offset: u64, len: u64) {
        self.asked.lock().unwrap().push((offset, len));
    }
}

const ENTRIES: u32 = 60_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// A table of about 5 MB in 4 KiB blocks, uncompressed.
fn table() -> Table<Recorder> {
    let options = BuildOptions::default().compression(Compression::None);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..ENTRIES {
        b.add(&key(i), &[b'v'; 72]).unwrap();
    }
    b.finish().unwrap();
    let bytes = b.into_inner();
    let source = Recorder {
        bytes,
        asked: Mutex::new(Vec::new()),
    };
    Table::open(source, ReadOptions::default()).unwrap()
}

/// Reads the whole table, forward or backward; returns the entries read.
fn scan(t: &Table<Recorder>, forward: bool) -> u32 {
    let mut it = t.iter();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut n = 0;
    while it.valid() {
        n += 1;
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().unwrap();
    n
}

/// Checks that `asked` are back-to-back windows of 128 KiB doubling to 2 MiB, the first
/// starting within the first block read.
fn assert_growing_windows(asked: &[(u64, u64)]) {
    let mut want = 128 << 10;
    for pair in asked.windows(2) {
        assert_eq!(pair[1].0, pair[0].0 + pair[0].1, "{asked:?}");
    }
    for &(_, len) in asked {
        assert_eq!(len, want, "{asked:?}");
        want = (want * 2).min(2 << 20);
    }
}

#[test]
fn a_forward_scan_maps_in_ahead_in_growing_windows() {
    let t = table();
    let data_end = t.properties().footer.metaindex.offset;
    assert_eq!(scan(&t, true), ENTRIES);
    let asked = t.source().take();
    assert!(asked.len() >= 4, "{asked:?}");
    assert_growing_windows(&asked);
    let (last_at, last_len) = *asked.last().unwrap();
    assert!(last_at + last_len >= data_end, "{asked:?} end {data_end}");
    assert!(last_at < data_end, "a window past the data: {asked:?}");
}

#[test]
fn a_continued_scan_asks_what_one_long_scan_asks() {
    let whole = {
        let t = table();
        assert_eq!(scan(&t, true), ENTRIES);
        t.source().take()
    };

    // The same scan, of a table opened afresh, through cursors of 7,000 entries each, each handing on its mapping-in.
    let t_continued = table();
    let mut map = MapAhead::default();
    let mut from: Option<Vec<u8>> = None;
    let mut n = 0;
    loop {
        let mut it = t_continued.iter().with_map_ahead(map);
        match &from {
            None => it.seek_to_first(),
            Some(k) => {
                it.seek(k);
                it.next();
            }
        }
        let mut read = 0;
        while it.valid() && read < 7_000 {
            from = Some(it.key().to_vec());
            read += 1;
            it.next();
        }
        n += read;
        map = it.map_ahead();
        if read == 0 {
            break;
        }
    }
    assert_eq!(n, ENTRIES);
    assert_eq!(t_continued.source().take(), whole);

    // Fresh cursors each start again at the smallest window, from different places.
    let t = table();
    for i in 0..3 {
        let mut it = t.iter();
        it.seek(&key(ENTRIES / 4 * (i + 1)));
        for _ in 0..100 {
            it.next();
        }
    }
    let asked = t.source().take();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(asked.iter().all(|&(_, len)| len == 128 << 10), "{asked:?}");
}

/// What one scan asked for, a second scan of the table does not ask again; scans from two
/// threads at once ask for each stretch once, or twice where they reach it together.
#[test]
fn stretches_already_asked_for_are_not_asked_again() {
    let t = table();
    assert_eq!(scan(&t, true), ENTRIES);
    let first = t.source().take();
    assert!(!first.is_empty());
    assert_eq!(scan(&t, true), ENTRIES);
    assert_eq!(t.source().take(), vec![], "a second scan asks again");

    let t = table();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| assert_eq!(scan(&t, true), ENTRIES));
        }
    });
    // Two scans in step may both ask for a window they reach together, never more.
    let asked = t.source().take();
    for window in &first {
        let times = asked.iter().filter(|w| *w == window).count();
        assert!((1..=2).contains(&times), "{window:?} asked {times} times");
    }
    assert!(asked.iter().all(|w| first.contains(w)), "{asked:?}");
}

#[test]
fn backward_scans_and_gets_ask_nothing() {
    let t = table();
    assert_eq!(scan(&t, false), ENTRIES);
    for i in (0..ENTRIES).step_by(997) {
        assert!(t.get(&key(i)).unwrap().is_some());
    }
    assert_eq!(t.source().take(), Vec::new());
}
