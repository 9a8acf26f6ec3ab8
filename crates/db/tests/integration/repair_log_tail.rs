//! A log whose record length was damaged so that it runs past the end of the log: LevelDB's
//! reader takes it for a write a crash cut short and ends the log there, silently. A
//! repair reads the batches after it again when the record's checksum proves its true
//! length, and reports the log's tail as lost when nothing does.

use std::fs;
use std::path::Path;

use leveltable_db::log_format::HEADER_SIZE;
use leveltable_db::log_reader::LogReader;
use leveltable_db::{LostKind, RepairOptions, WritableDb, WriteOptions, repair};

use crate::common;

use common::dbs::{Model, files, view, writable};

/// Writes 24 batches into the log of a new database at `src` (nothing flushed: the write
/// buffer holds them all), every fourth a deletion of an earlier key; returns the model
/// after each batch, the log's path and each record's offset.
fn history(src: &Path) -> (Vec<Model>, std::path::PathBuf, Vec<u64>) {
    let db = WritableDb::open(src, writable(4 << 20)).unwrap();
    let w = WriteOptions::default();
    let mut model = Model::new();
    let mut models = Vec::new();
    for i in 0..24u32 {
        if i % 4 == 3 {
            let k = format!("key{:02}", i - 2).into_bytes();
            db.delete(&k, w).unwrap();
            model.remove(&k);
        } else {
            let (k, v) = (
                format!("key{i:02}").into_bytes(),
                format!("value {i}").repeat(10).into_bytes(),
            );
            db.put(&k, &v, w).unwrap();
            model.insert(k, v);
        }
        models.push(model.clone());
    }
    db.close().unwrap();
    let logs = files(src, "log");
    let log = logs.last().unwrap().clone();
    let data = fs::read(&log).unwrap();
    let mut reader = LogReader::new(&data, true);
    let offsets: Vec<u64> = reader.by_ref().map(|r| r.offset).collect();
    assert_eq!(offsets.len(), 24, "every batch is in the log");
    assert!(data.len() < 4096, "a length 4096 longer runs past the end");
    (models, log, offsets)
}

/// The length of the ninth record, flipped 4096 longer: past the end of the log.
fn damage_length(log: &Path, offsets: &[u64]) -> usize {
    let at = offsets[8] as usize;
    let mut data = fs::read(log).unwrap();
    data[at + 5] ^= 0x10;
    fs::write(log, data).unwrap();
    at
}

#[test]
fn batches_after_a_damaged_length_are_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let (models, log, offsets) = history(&src);
    damage_length(&log, &offsets);
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    // The damaged record's checksum proves its length: nothing is lost.
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    assert_eq!(view(&dest), models[23]);
}

#[test]
fn a_tail_that_cannot_be_read_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let (models, log, offsets) = history(&src);
    let at = damage_length(&log, &offsets);
    // A payload byte of the damaged record too: its checksum matches no length.
    let mut data = fs::read(&log).unwrap();
    data[at + HEADER_SIZE + 20] ^= 1;
    fs::write(&log, &data).unwrap();
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    let tails: Vec<_> = report
        .lost
        .iter()
        .filter(|l| l.kind == LostKind::LogTail)
        .collect();
    assert_eq!(tails.len(), 1, "{:?}", report.lost);
    let tail = tails[0];
    assert_eq!(tail.file, name);
    assert_eq!(tail.offset, Some(at as u64));
    assert_eq!(tail.length, Some((data.len() - at) as u64));
    assert_eq!(tail.range, None);
    assert!(tail.reason.contains("crash"), "{}", tail.reason);
    assert_eq!(report.lost.len(), 1, "{:?}", report.lost);
    // What the batches before it wrote is there, as after the eighth batch.
    assert_eq!(view(&dest), models[7]);
    let json = report.to_json();
    assert!(json.contains("\"kind\": \"log-tail\""), "{json}");
    assert!(
        report
            .summary()
            .contains(&format!("log-tail {name} at offset {at}"))
    );
}

#[test]
fn a_write_cut_short_is_reported_as_a_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let (models, log, offsets) = history(&src);
    // The last record cut after its header and a few bytes, as a crash leaves it.
    let at = offsets[23] as usize;
    let file = fs::File::options().write(true).open(&log).unwrap();
    file.set_len((at + HEADER_SIZE + 5) as u64).unwrap();
    drop(file);
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert_eq!(report.lost.len(), 1, "{:?}", report.lost);
    assert_eq!(report.lost[0].kind, LostKind::LogTail);
    assert_eq!(report.lost[0].offset, Some(at as u64));
    assert_eq!(report.lost[0].length, Some((HEADER_SIZE + 5) as u64));
    assert_eq!(view(&dest), models[22]);
    // A cut inside the header: less than a header, nothing to tell.
    let file = fs::File::options().write(true).open(&log).unwrap();
    file.set_len((at + 3) as u64).unwrap();
    drop(file);
    let dest = tmp.path().join("dest2");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    assert_eq!(view(&dest), models[22]);
}

/// After the damage, the writer reopened the database: LevelDB's reader ended the log at
/// the damaged length, and the writes after the reopen took the numbers the batches after
/// it hold. With the old log left behind and the MANIFEST lost, a repair must not let those
/// batches, read again, shadow the later writes (in a log, or flushed into a table): the
/// tail is lost, and reported, as LevelDB's `RepairDB` reads the same files.
#[test]
fn a_tail_whose_numbers_were_given_again_is_not_taken() {
    for flushed in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let (models, log, offsets) = history(&src);
        let at = damage_length(&log, &offsets);
        let kept = fs::read(&log).unwrap();
        let db = WritableDb::open(&src, writable(4 << 20)).unwrap();
        let mut model = models[7].clone();
        // Keys the tail holds newer versions of, and one it deletes (key09, by batch 12).
        for i in [8u32, 9, 12, 16, 20] {
            let (k, v) = (format!("key{i:02}").into_bytes(), b"after".to_vec());
            db.put(&k, &v, WriteOptions::default()).unwrap();
            model.insert(k, v);
        }
        if flushed {
            db.flush().unwrap();
        }
        db.close().unwrap();
        // The old log left behind (its deletion failed), the MANIFEST and CURRENT lost.
        fs::write(&log, &kept).unwrap();
        for f in fs::read_dir(&src).unwrap() {
            let path = f.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("MANIFEST") || name == "CURRENT" {
                fs::remove_file(path).unwrap();
            }
        }
        let dest = tmp.path().join("dest");
        let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
        assert_eq!(
            view(&dest),
            model,
            "flushed: {flushed}; {}",
            report.summary()
        );
        let name = log.file_name().unwrap().to_string_lossy().into_owned();
        let tail = report
            .lost
            .iter()
            .find(|l| l.kind == LostKind::LogTail && l.file == name)
            .unwrap_or_else(|| panic!("{:?}", report.lost));
        assert_eq!(tail.offset, Some(at as u64));
        assert_eq!(tail.length, Some((kept.len() - at) as u64));
        assert!(
            tail.reason.contains("16 write batches, not taken"),
            "{}",
            tail.reason
        );

        if leveltable_interop::require_leveldb() {
            let copy = tmp.path().join("leveldb");
            common::dbs::copy_dir(&src, &copy);
            leveltable_interop::db::repair(&copy, &Default::default()).unwrap();
            let ldb = leveltable_interop::db::Db::open(&copy, &Default::default()).unwrap();
            let theirs: Model = ldb.scan(None, false).unwrap().into_iter().collect();
            ldb.close();
            assert_eq!(theirs, model, "LevelDB's RepairDB, flushed: {flushed}");
        }
    }
}
