//! A follower over damaged logs reads what LevelDB's reader reads in them, as the open that
//! counted the batches did: a batch past a damaged record is handed out, not reported as
//! gone, and a record that is not a write batch is reported once and passed.

use std::fs;
use std::path::{Path, PathBuf};

use leveltable_db::log_writer::LogWriter;
use leveltable_db::{
    Change, ChangeOp, Db, DbOptions, FollowEvent, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};

/// A database whose newest log is empty, and the sequence its open reads as.
fn database(dir: &Path) -> u64 {
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(dir, options).unwrap();
    db.put(b"a", b"0", WriteOptions { sync: true }).unwrap();
    drop(db);
    // Reopened: the put goes into a table, and a new log is made, empty.
    drop(WritableDb::open(dir, WritableOptions::default()).unwrap());
    let s = Db::open(dir, DbOptions::default()).unwrap().snapshot();
    assert_eq!(fs::metadata(newest_log(dir)).unwrap().len(), 0);
    s
}

fn newest_log(dir: &Path) -> PathBuf {
    let n = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse::<u64>().ok()
        })
        .max()
        .unwrap();
    dir.join(format!("{n:06}.log"))
}

/// A write batch of one put, numbered `sequence`.
fn put(sequence: u64, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut b = WriteBatchBuilder::default();
    b.put(key, value);
    b.set_sequence(sequence);
    b.as_bytes().to_vec()
}

fn batch(sequence: u64, key: &[u8], value: &[u8]) -> FollowEvent {
    FollowEvent::Batch(Change {
        sequence,
        ops: vec![ChangeOp::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        }],
    })
}

/// Every event the follower has now, and the errors among them.
fn drain(follower: &mut leveltable_db::Follower) -> (Vec<FollowEvent>, Vec<String>) {
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        match follower.try_next_event() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => break,
            Err(e) => errors.push(e.to_string()),
        }
    }
    (events, errors)
}

/// The second of three batches in the live log fails its checksum: LevelDB's reader drops
/// the rest of its block and reads the third, in the next block, and the open counts the
/// third as committed. The follower hands out the first, then the third, with the second's
/// sequence as a gap, and follows the writer's next append.
#[test]
fn a_batch_past_a_damaged_record_of_the_live_log_is_handed_out() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let s = database(&dir);
    let log = newest_log(&dir);
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&put(s + 1, b"k1", b"v1")).unwrap();
    let second = w.get_ref().len();
    // Long enough to end in the second block: the third batch begins there.
    w.add_record(&put(s + 2, b"k2", &[b'x'; 40_000])).unwrap();
    w.add_record(&put(s + 3, b"k3", b"v3")).unwrap();
    let mut data = w.into_inner();
    data[second + 7 + 20] ^= 1;
    fs::write(&log, &data).unwrap();

    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    assert_eq!(reader.snapshot(), s + 3, "the open reads the third batch");
    assert_eq!(reader.get(b"k3").unwrap().as_deref(), Some(&b"v3"[..]));
    let mut follower = reader.follow(Some(s + 1));
    let (events, errors) = drain(&mut follower);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        events,
        [
            batch(s + 1, b"k1", b"v1"),
            FollowEvent::Gap {
                first: s + 2,
                last: s + 2
            },
            batch(s + 3, b"k3", b"v3"),
        ],
        "{}",
        log.display()
    );
    // The writer appends on, in the same block: the next batch is read where the third
    // ended.
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&put(s + 4, b"k4", b"v4")).unwrap();
    assert!(32 * 1024 - data.len() % (32 * 1024) > w.get_ref().len());
    let mut appended = data.clone();
    appended.extend_from_slice(w.get_ref());
    fs::write(&log, &appended).unwrap();
    let (events, errors) = drain(&mut follower);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(events, [batch(s + 4, b"k4", b"v4")]);
}

/// A log the writer is done with holds a whole, checksummed record that is not a write
/// batch: the follower reports it once, naming the log, and goes on to the next log.
#[test]
fn a_record_that_is_not_a_batch_in_a_finished_log_is_passed() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let s = database(&dir);
    let log = newest_log(&dir);
    let number: u64 = log.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&put(s + 1, b"k1", b"v1")).unwrap();
    let second = w.get_ref().len();
    w.add_record(&put(s + 2, b"k2", &[b'x'; 1000])).unwrap();
    // Padding to the block's end, then a record too short to be a batch.
    let pad = 32 * 1024 - w.get_ref().len() - 7;
    w.add_record(&vec![0u8; pad]).unwrap();
    assert_eq!(w.get_ref().len(), 32 * 1024);
    w.add_record(b"short").unwrap();
    let mut data = w.into_inner();
    // The second batch's checksum fails: the live log's reading stops there.
    data[second + 7 + 20] ^= 1;
    fs::write(&log, &data).unwrap();

    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let mut follower = reader.follow(Some(s + 1));
    assert_eq!(
        follower.try_next_event().unwrap(),
        Some(batch(s + 1, b"k1", b"v1"))
    );
    // The writer moves on to a new log.
    let mut next = LogWriter::new(Vec::new());
    next.add_record(&put(s + 3, b"k3", b"v3")).unwrap();
    fs::write(dir.join(format!("{:06}.log", number + 2)), next.get_ref()).unwrap();
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for _ in 0..50 {
        let (e, r) = drain(&mut follower);
        events.extend(e);
        errors.extend(r);
        if !events.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(15));
    }
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(errors.len(), 1, "reported once: {errors:?}");
    assert!(errors[0].contains(&name), "{errors:?}");
    assert_eq!(
        events,
        [
            FollowEvent::Gap {
                first: s + 2,
                last: s + 2
            },
            batch(s + 3, b"k3", b"v3"),
        ]
    );
}

/// An empty FIRST fragment: its 7 header bytes, with type 2 and no payload.
fn empty_first() -> [u8; 7] {
    let crc = leveltable_db::log_format::mask_crc(crc32c::crc32c(&[2]));
    let mut header = [0u8; 7];
    header[..4].copy_from_slice(&crc.to_le_bytes());
    header[6] = 2;
    header
}

/// Writers before 2011 could end a block with an empty FIRST and begin the next with a FULL
/// or a FIRST: LevelDB's reader drops the empty one. A follower that has read the live log
/// up to the empty FIRST hands out the batch the writer appends after it, as an open reads
/// it, instead of waiting for the log to end.
#[test]
fn an_empty_first_at_a_block_end_does_not_hold_the_follower() {
    for next_len in [10, 40_000] {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("db");
        let s = database(&dir);
        let log = newest_log(&dir);
        // A first batch that leaves exactly a header's room in the block.
        let value = (32_000..32_768)
            .map(|v| vec![b'a'; v])
            .find(|v| put(s + 1, b"k1", v).len() == 32 * 1024 - 14)
            .unwrap();
        let mut w = LogWriter::new(Vec::new());
        w.add_record(&put(s + 1, b"k1", &value)).unwrap();
        let mut data = w.into_inner();
        data.extend_from_slice(&empty_first());
        assert_eq!(data.len(), 32 * 1024);
        fs::write(&log, &data).unwrap();
        let reader = Db::open(&dir, DbOptions::default()).unwrap();
        let mut follower = reader.follow(Some(s + 1));
        let (events, errors) = drain(&mut follower);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(events, [batch(s + 1, b"k1", &value)]);

        // The writer appends the next batch in the next block.
        let next = vec![b'b'; next_len];
        let mut w = LogWriter::with_offset(data, 32 * 1024);
        w.add_record(&put(s + 2, b"k2", &next)).unwrap();
        fs::write(&log, w.into_inner()).unwrap();
        let opened = Db::open(&dir, DbOptions::default()).unwrap();
        assert_eq!(opened.snapshot(), s + 2, "an open reads the second batch");
        let (events, errors) = drain(&mut follower);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            events,
            [batch(s + 2, b"k2", &next)],
            "a second batch of {next_len} bytes"
        );
    }
}
