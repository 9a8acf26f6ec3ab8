//! A commit checks every staged table against its part record before it creates or moves
//! anything, and a commit that fails (here: a database on a full file system) leaves every
//! staging directory exactly as it was and the database directory without its files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, Error, Part, PartBuilder, commit};

use crate::common;

use common::mkfifo;

/// Sorted entries `key000000…` with `value_len`-byte values that do not compress.
fn entries(range: std::ops::Range<u32>, value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    range
        .map(|i| {
            let mut state = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let value = (0..value_len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            (format!("key{i:06}").into_bytes(), value)
        })
        .collect()
}

fn part(staging: &Path, entries: &[(Vec<u8>, Vec<u8>)], options: &BulkOptions) -> Part {
    let mut builder = PartBuilder::create(staging, options.clone()).unwrap();
    for (k, v) in entries {
        builder.add(k, v).unwrap();
    }
    builder.finish().unwrap()
}

/// Every file under `dir` (one level of subdirectories) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            files.extend(snapshot(&path));
        } else if meta.is_file() {
            files.insert(path.clone(), fs::read(&path).unwrap());
        } else {
            files.insert(path.clone(), b"<not a file>".to_vec());
        }
    }
    files
}

fn read_back(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    db.iter().collect::<Result<Vec<_>, _>>().unwrap()
}

/// Replaces the `n`-th `file` line's fields of the part record in `staging` with `edit`'s.
fn edit_record(staging: &Path, n: usize, edit: impl Fn(&mut Vec<String>)) {
    let path = staging.join("PART");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut fields: Vec<String> = lines[2 + n].split(' ').map(str::to_owned).collect();
    edit(&mut fields);
    lines[2 + n] = fields.join(" ");
    fs::write(&path, lines.join("\n") + "\n").unwrap();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Commits `parts` (loaded from their staging directories) into `root/db`, expects a
/// refusal whose message holds every one of `wanted`, and checks nothing moved.
fn refused(root: &Path, staging: &[PathBuf], wanted: &[&str]) {
    let before: Vec<_> = staging.iter().map(|s| snapshot(s)).collect();
    let parts: Vec<Part> = staging.iter().map(|s| Part::load(s).unwrap()).collect();
    let db = root.join("db");
    let err = commit(&db, &parts).unwrap_err();
    let text = err.to_string();
    for w in wanted {
        assert!(text.contains(w), "{w:?} not in {text}");
    }
    assert!(!db.exists(), "{text}");
    let after: Vec<_> = staging.iter().map(|s| snapshot(s)).collect();
    assert!(before == after, "staging changed: {text}");
}

#[test]
fn tables_overlapping_under_disjoint_records_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let options = BulkOptions::default().max_file_size(16 << 10);
    let all = entries(0..1000, 50);
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    part(&a, &all[..600], &options);
    part(&b, &all[500..], &options);
    // b's record says its first file starts after a's last key: it does not.
    edit_record(&b, 0, |f| f[5] = hex(b"key000700"));
    refused(
        tmp.path(),
        &[a.clone(), b.clone()],
        &[
            "part 1",
            &b.display().to_string(),
            "000001.ldb",
            "its first key is \"key000500\", its record says \"key000700\"",
        ],
    );
    // With the real first key in the record, the real ranges overlap.
    edit_record(&b, 0, |f| f[5] = hex(b"key000500"));
    refused(
        tmp.path(),
        &[a.clone(), b.clone()],
        &["part 1", "000001.ldb", "out of order or overlapping"],
    );
    // The last key too.
    edit_record(&a, 0, |f| f[6] = hex(b"key000001"));
    refused(
        tmp.path(),
        &[a, b],
        &["part 0", "000001.ldb", "its last key is"],
    );
}

#[test]
fn a_symlink_a_fifo_or_other_bytes_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let options = BulkOptions::default();
    let a = tmp.path().join("a");
    part(&a, &entries(0..100, 20), &options);
    let table = a.join("000001.ldb");
    let original = fs::read(&table).unwrap();

    // A link to an unrelated file, its size put in the record.
    let unrelated = tmp.path().join("unrelated");
    fs::write(&unrelated, vec![7u8; 4096]).unwrap();
    fs::remove_file(&table).unwrap();
    std::os::unix::fs::symlink(&unrelated, &table).unwrap();
    edit_record(&a, 0, |f| f[2] = "4096".to_owned());
    refused(
        tmp.path(),
        std::slice::from_ref(&a),
        &[
            "part 0",
            "000001.ldb",
            "is a symbolic link, not a regular file",
        ],
    );
    // A link to a real table of that size is refused all the same.
    fs::write(&unrelated, &original).unwrap();
    edit_record(&a, 0, |f| f[2] = original.len().to_string());
    refused(
        tmp.path(),
        std::slice::from_ref(&a),
        &["000001.ldb", "is a symbolic link"],
    );

    // A FIFO: refused, not waited on.
    fs::remove_file(&table).unwrap();
    mkfifo(&table);
    refused(
        tmp.path(),
        std::slice::from_ref(&a),
        &["000001.ldb", "is a FIFO"],
    );

    // The right size, other bytes: the checksum differs.
    fs::remove_file(&table).unwrap();
    let mut changed = original.clone();
    changed[10] ^= 0x40;
    fs::write(&table, &changed).unwrap();
    refused(
        tmp.path(),
        std::slice::from_ref(&a),
        &["000001.ldb", "its CRC32C is", "its record says"],
    );

    // Not a table at all, with a version 1 record (no checksum) of its size.
    fs::write(&table, vec![0u8; original.len()]).unwrap();
    let record = fs::read_to_string(a.join("PART")).unwrap();
    let v1: Vec<String> = record
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => "leveltable-part 1".to_owned(),
            1 => l.to_owned(),
            _ => {
                let mut f: Vec<&str> = l.split(' ').collect();
                f.remove(4);
                f.join(" ")
            }
        })
        .collect();
    fs::write(a.join("PART"), v1.join("\n") + "\n").unwrap();
    refused(
        tmp.path(),
        std::slice::from_ref(&a),
        &["000001.ldb", "not a readable table"],
    );

    // The original bytes under the version 1 record: committed.
    fs::write(&table, &original).unwrap();
    let parts = [Part::load(&a).unwrap()];
    assert_eq!(parts[0].files[0].crc32c, None);
    commit(tmp.path().join("db"), &parts).unwrap();
    assert_eq!(read_back(&tmp.path().join("db")), entries(0..100, 20));
    assert!(!a.exists());
}

/// A tmpfs mounted for a test, unmounted when dropped (also when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`8m`) at `dir`, or `None` when not root.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        // Root is needed to mount; the uid of the owner of /proc/self is ours.
        let uid = std::os::unix::fs::MetadataExt::uid(&fs::metadata("/proc/self").ok()?);
        if uid != 0 {
            println!("skipping: needs root to mount a tmpfs");
            return None;
        }
        fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount a tmpfs at {}", dir.display());
        Some(Tmpfs(dir.to_owned()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_commit_onto_a_full_file_system_leaves_staging_as_it_was_and_can_be_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(&tmp.path().join("small"), "8m") else {
        return;
    };
    let options = BulkOptions::default().max_file_size(1 << 20);
    let all = entries(0..12_000, 1000);
    let staging: Vec<PathBuf> = (0..3)
        .map(|i| tmp.path().join(format!("part-{i}")))
        .collect();
    for (i, s) in staging.iter().enumerate() {
        part(s, &all[i * 4000..(i + 1) * 4000], &options);
    }
    let before: Vec<_> = staging.iter().map(|s| snapshot(s)).collect();
    let parts: Vec<Part> = staging.iter().map(|s| Part::load(s).unwrap()).collect();
    let db = mount.0.join("db");

    let err = commit(&db, &parts).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::FileOp { .. }), "{text}");
    assert!(text.contains("cannot copy"), "{text}");
    assert!(text.contains(&db.display().to_string()), "{text}");
    assert!(text.to_lowercase().contains("no space left"), "{text}");
    let after: Vec<_> = staging.iter().map(|s| snapshot(s)).collect();
    assert!(before == after, "the staging directories changed");
    assert_eq!(
        fs::read_dir(&mount.0).unwrap().count(),
        0,
        "the target holds files of the failed commit"
    );

    mount.resize("64m");
    let summary = commit(&db, &parts).unwrap();
    assert_eq!(summary.entries, 12_000);
    assert_eq!(read_back(&db), all);
    for s in &staging {
        assert!(!s.exists(), "{} removed after the commit", s.display());
    }
}

#[test]
fn a_build_into_a_full_file_system_leaves_nothing_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    // The database is the mount point: its staging directory, beside it, is on another
    // file system.
    let Some(mount) = Tmpfs::mount(&tmp.path().join("small"), "8m") else {
        return;
    };
    let all = entries(0..12_000, 1000);
    let mut builder = DbBuilder::create(&mount.0, BulkOptions::default()).unwrap();
    for (k, v) in &all {
        builder.add(k, v).unwrap();
    }
    let err = builder.finish().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot copy"), "{text}");
    assert!(text.contains(&mount.0.display().to_string()), "{text}");
    assert_eq!(fs::read_dir(&mount.0).unwrap().count(), 0, "{text}");
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "the staging directory is removed"
    );

    // The staging directory on the full file system: the write that fails names its file.
    mount.resize("8m");
    let db = mount.0.join("db");
    let mut builder = DbBuilder::create(&db, BulkOptions::default()).unwrap();
    let mut failed = None;
    for (k, v) in &all {
        if let Err(e) = builder.add(k, v) {
            failed = Some(e);
            break;
        }
    }
    let err = match failed {
        Some(e) => {
            builder.abandon();
            e
        }
        None => builder.finish().unwrap_err(),
    };
    let text = err.to_string();
    assert!(text.contains("cannot write"), "{text}");
    assert!(text.contains(".ldb"), "{text}");
    assert!(text.contains(&mount.0.display().to_string()), "{text}");
    assert_eq!(fs::read_dir(&mount.0).unwrap().count(), 0, "{text}");
}

#[test]
fn a_part_record_that_is_a_link_or_a_fifo_or_too_short_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    part(&a, &entries(0..10, 5), &BulkOptions::default());
    let record = a.join("PART");
    let text = fs::read_to_string(&record).unwrap();

    let elsewhere = tmp.path().join("record");
    fs::write(&elsewhere, &text).unwrap();
    fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &record).unwrap();
    let err = Part::load(&a).unwrap_err().to_string();
    assert!(
        err.contains("is a symbolic link, not a part record"),
        "{err}"
    );

    fs::remove_file(&record).unwrap();
    mkfifo(&record);
    let err = Part::load(&a).unwrap_err().to_string();
    assert!(err.contains("is a FIFO, not a part record"), "{err}");

    // A record cut short loses its last line's fields: refused, not read as fewer files.
    fs::remove_file(&record).unwrap();
    fs::write(&record, &text[..text.len() - 3]).unwrap();
    let err = Part::load(&a).unwrap_err().to_string();
    let wanted = format!("{}: not a part record: line 3", record.display());
    assert!(err.contains(&wanted), "{err}");
}
