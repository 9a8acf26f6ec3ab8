//! A repair of every directory the database targets make (their seeds, kept crashes and
//! random inputs): the damaged and lying databases of the corpora.
//!
//! What must hold: no panic; the source left byte for byte as it was; a refused repair
//! leaves nothing at DEST nor beside it; a repair that succeeds writes a database that
//! opens, verifies and holds the report's count of keys; and where the source opens and
//! verifies, nothing was lost or set aside, and no two versions of a key share a sequence
//! number, the repair reads as the source's open does.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use leveltable_db::log_format::HEADER_SIZE;
use leveltable_db::{Db, DbOptions, RepairOptions, repair};

type View = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every file of `dir` with its bytes (unreadable entries as empty).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let bytes = fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

/// The view of the source's open, if it opens, verifies, lists every table of the
/// directory, no log ends in a torn tail, no version is newer than its last sequence
/// number and no two versions of a key share one: the view a repair that lost nothing
/// must read.
fn clean_view(src: &Path) -> Option<View> {
    let db = Db::open(src, DbOptions::default()).ok()?;
    db.verify().ok()?;
    // The open ends a log silently at a record that runs past its end, as LevelDB does; a
    // repair reads such a tail again and keeps the records a damaged length hid, which
    // the open never reads.
    if db
        .properties()
        .logs
        .iter()
        .any(|log| log.tail_bytes >= HEADER_SIZE as u64)
    {
        return None;
    }
    let listed: BTreeSet<u64> = db
        .properties()
        .levels
        .iter()
        .flatten()
        .map(|t| t.number)
        .collect();
    let tables = fs::read_dir(src).ok()?.filter_map(Result::ok).all(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        match name
            .strip_suffix(".ldb")
            .or_else(|| name.strip_suffix(".sst"))
        {
            Some(n) => n.parse().is_ok_and(|n: u64| listed.contains(&n)),
            None => true,
        }
    });
    if !tables {
        return None;
    }
    // A version newer than the MANIFEST's last sequence is hidden from the open, and seen
    // by a repair (as by LevelDB's `RepairDB`, which counts every sequence number found).
    let last = db.properties().last_sequence;
    let mut pairs = BTreeSet::new();
    for v in db.versions() {
        let v = v.ok()?;
        if v.sequence > last || !pairs.insert((v.user_key, v.sequence)) {
            return None;
        }
    }
    db.iter().collect::<Result<View, _>>().ok()
}

/// How a checked repair went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repaired {
    /// Refused (an error), with nothing written.
    Refused,
    /// Written, and the database written opens and verifies.
    Written,
    /// Written, and read as the sound source's open reads.
    AsOpened,
}

/// Repairs the database `src` into a new directory and checks what the module says.
pub fn repair_checked(src: &Path) -> Repaired {
    let before = files(src);
    let clean = clean_view(src);
    let out = tempfile::tempdir().expect("a temporary directory");
    let dest = out.path().join("fixed");
    let options = RepairOptions::default().sample(usize::MAX);
    let result = repair(src, &dest, &options);
    assert_eq!(files(src), before, "a repair changed its source");
    let report = match result {
        Ok(report) => report,
        Err(_) => {
            assert!(!dest.exists(), "a refused repair left {}", dest.display());
            let left = fs::read_dir(out.path()).map_or(0, Iterator::count);
            assert_eq!(left, 0, "a refused repair left a directory beside DEST");
            return Repaired::Refused;
        }
    };
    let db = Db::open(&dest, DbOptions::default()).expect("a repaired database opens");
    db.verify().expect("a repaired database verifies");
    let view = db
        .iter()
        .collect::<Result<View, _>>()
        .expect("a repaired database reads");
    assert_eq!(view.len() as u64, report.keys, "the report's count of keys");
    if let Some(clean) = clean
        && report.lost.is_empty()
        && report.ignored.is_empty()
        && report.manifest_error.is_none()
    {
        assert_eq!(view, clean, "a repair of a sound database reads otherwise");
        return Repaired::AsOpened;
    }
    Repaired::Written
}
