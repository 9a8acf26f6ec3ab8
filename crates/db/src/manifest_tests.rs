//! Tests of the MANIFEST's replay and of edits applied one at a time.

use super::*;
use crate::dbformat::{ValueType, append_internal_key};
use crate::log_writer::LogWriter;
use leveltable_table::BytewiseComparator;

fn ikey(user: &[u8], seq: u64) -> Vec<u8> {
    let mut k = Vec::new();
    append_internal_key(&mut k, user, seq, ValueType::Value).unwrap();
    k
}

fn file(number: u64, a: &[u8], b: &[u8]) -> FileMetaData {
    FileMetaData {
        number,
        file_size: 100 * number,
        smallest: ikey(a, 1),
        largest: ikey(b, 1),
    }
}

fn manifest(edits: &[VersionEdit]) -> Vec<u8> {
    let mut w = LogWriter::new(Vec::new());
    for e in edits {
        w.add_record(&e.encode()).unwrap();
    }
    w.into_inner()
}

fn base() -> VersionEdit {
    VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        log_number: Some(4),
        next_file_number: Some(9),
        last_sequence: Some(77),
        ..VersionEdit::default()
    }
}

fn replay(bytes: &[u8]) -> Result<Manifest> {
    let cmp: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    Manifest::replay("MANIFEST-000002", bytes, &cmp)
}

/// Random histories of edits (adds, re-adds, deletes of present and absent files, a file
/// deleted and added in one edit), replayed whole and applied one edit at a time as a
/// refresh applies a MANIFEST's tail: the same levels either way.
#[test]
fn applying_edits_one_by_one_gives_the_replays_levels() {
    let cmp: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let icmp = InternalKeyComparator::new(Arc::clone(&cmp));
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..200 {
        // Each number keeps one level and one key range, so no level overlaps.
        let level_of = |n: u64| (n % NUM_LEVELS as u64) as usize;
        let meta = |n: u64| {
            file(
                n,
                format!("k{n:04}a").as_bytes(),
                format!("k{n:04}b").as_bytes(),
            )
        };
        let mut edits = vec![base()];
        for _ in 0..1 + next(12) {
            let mut edit = VersionEdit::default();
            for _ in 0..next(6) {
                let n = 10 + next(40);
                if next(3) == 0 {
                    edit.deleted_files.insert((level_of(n), n));
                } else {
                    edit.new_files.push((level_of(n), meta(n)));
                }
            }
            edits.push(edit);
        }
        let whole = replay(&manifest(&edits)).unwrap();
        let mut stepped = replay(&manifest(&edits[..1])).unwrap();
        for edit in &edits[1..] {
            apply_edit(&mut stepped, edit, &icmp, &cmp, 0).unwrap();
        }
        let numbers = |m: &Manifest| -> Vec<Vec<u64>> {
            m.levels
                .files
                .iter()
                .map(|l| l.iter().map(|f| f.number).collect())
                .collect()
        };
        assert_eq!(numbers(&stepped), numbers(&whole), "{edits:?}");
    }
}

#[test]
fn edits_apply_in_order() {
    let add = VersionEdit {
        new_files: vec![
            (0, file(5, b"m", b"z")),
            (0, file(6, b"a", b"c")),
            (1, file(7, b"a", b"b")),
        ],
        ..VersionEdit::default()
    };
    let mut change = VersionEdit {
        log_number: Some(8),
        last_sequence: Some(90),
        ..VersionEdit::default()
    };
    change.deleted_files.insert((1, 7));
    change.deleted_files.insert((0, 5));
    let back = VersionEdit {
        new_files: vec![(0, file(5, b"m", b"z"))],
        ..VersionEdit::default()
    };
    let m = replay(&manifest(&[base(), add, change, back])).unwrap();
    let numbers: Vec<Vec<u64>> = m
        .levels
        .files
        .iter()
        .map(|l| l.iter().map(|f| f.number).collect())
        .collect();
    assert_eq!(numbers[0], [6, 5], "sorted by smallest key");
    assert!(numbers[1].is_empty());
    assert_eq!(
        (
            m.log_number,
            m.last_sequence,
            m.next_file_number,
            m.prev_log_number
        ),
        (8, 90, 9, 0)
    );
    assert_eq!(m.comparator.as_deref(), Some("leveldb.BytewiseComparator"));
    assert_eq!(m.records, 4);
}

#[test]
fn leveldbs_checks() {
    let e = |edits: &[VersionEdit]| replay(&manifest(edits)).unwrap_err().to_string();
    let no = |f: fn(&mut VersionEdit)| {
        let mut edit = base();
        f(&mut edit);
        e(&[edit])
    };
    assert!(no(|e| e.next_file_number = None).contains("no meta-nextfile entry"));
    assert!(no(|e| e.log_number = None).contains("no meta-lognumber entry"));
    assert!(no(|e| e.last_sequence = None).contains("no last-sequence-number entry"));
    let mut other = base();
    other.comparator = Some("app.Reverse".into());
    assert_eq!(
        e(&[other]),
        "db: MANIFEST-000002: the database uses comparator app.Reverse, not \
         leveldb.BytewiseComparator; open it with a Comparator named app.Reverse in DbOptions"
    );
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&base().encode()).unwrap();
    w.add_record(&[8, 1]).unwrap();
    assert_eq!(
        replay(&w.into_inner()).unwrap_err().to_string(),
        "db: MANIFEST-000002: corrupt version edit (unknown tag) at offset 41"
    );
    let mut bytes = manifest(&[base()]);
    bytes[9] ^= 1;
    assert_eq!(
        replay(&bytes).unwrap_err().to_string(),
        "db: MANIFEST-000002: corrupt record (checksum mismatch, 41 bytes dropped) at offset 0"
    );
    // A torn tail is no error.
    let mut bytes = manifest(&[base(), base()]);
    bytes.truncate(bytes.len() - 3);
    assert_eq!(replay(&bytes).unwrap().records, 1);
    assert!(replay(&[]).is_err());
}

#[test]
fn every_bit_flip_is_an_error_or_the_same_answer() {
    let add = VersionEdit {
        new_files: vec![(2, file(5, b"a", b"k"))],
        ..VersionEdit::default()
    };
    let bytes = manifest(&[base(), add]);
    let good = replay(&bytes).unwrap();
    for bit in 0..bytes.len() * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        if let Ok(m) = replay(&b) {
            // Only a flip LevelDB reads as a torn tail can succeed: then it lost the
            // last edit, never changed one.
            assert!(m == good || m.records < good.records, "bit {bit}");
        }
    }
}

/// A last record whose end a power loss zeroed from a sector boundary on is an edit that
/// was never synced: read without it when asked (not by `replay`, as LevelDB); a last
/// record damaged otherwise, or one with a record after it, is still corruption.
#[test]
fn a_torn_last_record_is_an_edit_never_synced() {
    let cmp: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let add = VersionEdit {
        new_files: (10..40)
            .map(|n| (1, file(n, &[n as u8], &[n as u8])))
            .collect(),
        ..VersionEdit::default()
    };
    let whole = manifest(&[base(), add.clone()]);
    let start = manifest(&[base()]).len();
    assert!(whole.len() > 600, "{}", whole.len());
    let mut torn = whole.clone();
    torn[512..].fill(0);
    assert!(replay(&torn).is_err());
    let read = Manifest::replay_with("MANIFEST-000002", &torn, &cmp, true).unwrap();
    assert!(read.levels.files.iter().all(Vec::is_empty));
    assert_eq!(read.last_sequence, 77);
    // The whole file still reads whole.
    let all = Manifest::replay_with("MANIFEST-000002", &whole, &cmp, true).unwrap();
    assert_eq!(all.levels.files[1].len(), 30);
    // A flipped byte is no torn write.
    let mut flipped = whole.clone();
    flipped[start + 20] ^= 1;
    assert!(Manifest::replay_with("MANIFEST-000002", &flipped, &cmp, true).is_err());
    // Nor are zeros with a record after them.
    let mut followed = torn.clone();
    followed.extend_from_slice(&manifest(&[base()]));
    assert!(Manifest::replay_with("MANIFEST-000002", &followed, &cmp, true).is_err());
}

/// A last record that ends in zeros of its own (a key's sequence number) across a sector
/// boundary is no torn write when a record before it is damaged: the damage is corruption,
/// not an end that drops every edit after it.
#[test]
fn zeros_ending_the_last_record_do_not_excuse_damage_before_it() {
    let cmp: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let add = VersionEdit {
        new_files: vec![(1, file(12, b"a", b"z"))],
        ..VersionEdit::default()
    };
    // A compact pointer long enough that the file's own zeros cross byte 512.
    let (whole, filler_at) = (0..600)
        .map(|n| {
            let filler = VersionEdit {
                compact_pointers: vec![(0, ikey(&vec![b'p'; n], 5))],
                ..VersionEdit::default()
            };
            let whole = manifest(&[base(), filler, add.clone()]);
            (whole, manifest(&[base()]).len())
        })
        .find(|(whole, _)| {
            let zeros_from = whole.iter().rposition(|&b| b != 0).unwrap() + 1;
            zeros_from <= 512 && whole.len() > 512
        })
        .unwrap();
    let all = Manifest::replay_with("MANIFEST-000002", &whole, &cmp, true).unwrap();
    assert_eq!(all.levels.files[1].len(), 1);
    let mut flipped = whole;
    flipped[filler_at + HEADER_SIZE + 10] ^= 0x08;
    let e = Manifest::replay_with("MANIFEST-000002", &flipped, &cmp, true).unwrap_err();
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
}

/// A record of several fragments torn where one of its fragments begins (a block boundary,
/// a sector boundary too): the reader names the record's first fragment, wholly before the
/// zeros, and the record is still the torn one.
#[test]
fn a_record_torn_at_a_block_boundary_is_an_edit_never_synced() {
    let cmp: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let add = VersionEdit {
        new_files: (10..2000)
            .map(|n| {
                let (a, b) = (format!("k{n:05}a"), format!("k{n:05}b"));
                (1, file(n, a.as_bytes(), b.as_bytes()))
            })
            .collect(),
        ..VersionEdit::default()
    };
    let whole = manifest(&[base(), add]);
    assert!(whole.len() > BLOCK_SIZE + 512, "{}", whole.len());
    let mut torn = whole.clone();
    torn[BLOCK_SIZE..].fill(0);
    assert!(replay(&torn).is_err());
    let read = Manifest::replay_with("MANIFEST-000002", &torn, &cmp, true).unwrap();
    assert!(read.levels.files.iter().all(Vec::is_empty));
    assert_eq!(read.last_sequence, 77);
    // A byte flipped in its first fragment, before the zeros, is no torn write.
    torn[BLOCK_SIZE - 100] ^= 1;
    assert!(Manifest::replay_with("MANIFEST-000002", &torn, &cmp, true).is_err());
    let all = Manifest::replay_with("MANIFEST-000002", &whole, &cmp, true).unwrap();
    assert_eq!(all.levels.files[1].len(), 1990);
}
