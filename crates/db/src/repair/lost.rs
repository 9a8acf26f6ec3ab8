//! What a repair lost: the tables, blocks and log records it could not read, the files it
//! ignored, and the key ranges of the lost pieces, which a sweep in key order tells each
//! key.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use leveltable_table::{Comparator, Compression, Profile, ReadAt, Table};

use super::LiveFiles;
use super::report::{IgnoredFile, LostData, LostKind, RepairReport};
use crate::db::Db;
use crate::dbformat::{extract_user_key, ldb_read_options_for};
use crate::filename::{log_file_name, sst_table_file_name, table_file_name};
use crate::manifest::Manifest;
use crate::salvage::Damage;
use crate::storage::open_regular;
use crate::version::Origin;

/// How new a file's versions are, for a key it shares with another file: logs first, then
/// level-0 tables newest first, then each level. `Unknown` without a MANIFEST, or for a
/// file it does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    /// The smaller the newer.
    Known(u64, u64),
    /// Nothing is known.
    Unknown,
}

impl Layer {
    /// Whether a version in this layer is surely newer than any in `other`.
    pub(crate) fn newer_than(self, other: Layer) -> bool {
        match (self, other) {
            (Layer::Known(a, b), Layer::Known(c, d)) => (a, b) < (c, d),
            _ => false,
        }
    }
}

/// The key range of a lost table or block.
#[derive(Debug)]
pub(crate) struct LostRange {
    /// The first user key it covers (`None`: unbounded).
    first: Option<Vec<u8>>,
    /// The last user key it covers (`None`: unbounded).
    last: Option<Vec<u8>>,
    /// How new its versions were.
    pub(crate) layer: Layer,
    /// Its index in [`RepairReport::lost`].
    pub(crate) lost: usize,
}

/// The lost ranges, swept in key order: [`advance`](Self::advance) to each key in turn,
/// then [`active`](Self::active) are the ranges covering it.
#[derive(Debug, Default)]
pub(crate) struct LostRanges {
    /// Sorted by first key.
    pub(crate) ranges: Vec<LostRange>,
    next: usize,
    /// Indexes in `ranges` of the ranges covering the last key advanced to.
    pub(crate) active: Vec<usize>,
}

impl LostRanges {
    fn new(mut ranges: Vec<LostRange>, user: &dyn Comparator) -> LostRanges {
        ranges.sort_by(|a, b| match (&a.first, &b.first) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => user.compare(x, y),
        });
        LostRanges {
            ranges,
            next: 0,
            active: Vec::new(),
        }
    }

    /// Every range's first and last user keys (`None`: unbounded).
    pub(crate) fn bounds(&self) -> impl Iterator<Item = (Option<&[u8]>, Option<&[u8]>)> {
        self.ranges
            .iter()
            .map(|r| (r.first.as_deref(), r.last.as_deref()))
    }

    /// Moves to `key`, which sorts after every key advanced to before.
    pub(crate) fn advance(&mut self, key: &[u8], user: &dyn Comparator) {
        while let Some(r) = self.ranges.get(self.next) {
            if r.first
                .as_deref()
                .is_some_and(|f| user.compare(f, key).is_gt())
            {
                break;
            }
            self.active.push(self.next);
            self.next += 1;
        }
        let ranges = &self.ranges;
        self.active.retain(|&i| {
            ranges[i]
                .last
                .as_deref()
                .is_none_or(|l| user.compare(key, l).is_le())
        });
    }
}

/// The user key of an internal key (the key itself if it is too short to be one).
fn user_of(internal: &[u8]) -> Vec<u8> {
    extract_user_key(internal).unwrap_or(internal).to_vec()
}

/// Lists in `report` what was lost and ignored of the source `db` (salvaged with its
/// checksums checked), and returns the key ranges of the lost live tables and blocks.
pub(crate) fn collect_lost(
    db: &Db,
    damage: &Damage,
    manifest: Option<&Manifest>,
    live: &LiveFiles,
    report: &mut RepairReport,
) -> LostRanges {
    let listed: BTreeMap<u64, (usize, Vec<u8>, Vec<u8>)> = manifest
        .map(|m| {
            m.levels
                .files
                .iter()
                .enumerate()
                .flat_map(|(level, files)| {
                    files.iter().map(move |f| {
                        (f.number, (level, user_of(&f.smallest), user_of(&f.largest)))
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let manifest_name = manifest.map_or(String::new(), |m| m.file.clone());
    let obsolete_table = || {
        format!(
            "{manifest_name} does not list it (a compaction's input or output left behind, or \
             a file of an older database): its versions are taken only for keys in a lost \
             range"
        )
    };
    let mut ranges = Vec::new();
    let mut seen = BTreeSet::new();
    for d in &damage.tables {
        seen.insert(d.number);
        let file = table_file_name(d.number);
        if !live.is_live_table(d.number) {
            report.ignored.push(IgnoredFile {
                file,
                reason: format!("{}; damaged: {}", obsolete_table(), d.error),
            });
            continue;
        }
        let entry = listed.get(&d.number);
        let layer = live.layer(Origin::Table {
            number: d.number,
            level: entry.map(|e| e.0),
        });
        let (smallest, largest) = (entry.map(|e| e.1.clone()), entry.map(|e| e.2.clone()));
        match &d.lost_blocks {
            None => {
                let range = entry.map(|_| (smallest.clone(), largest.clone()));
                push_lost(
                    report,
                    &mut ranges,
                    layer,
                    LostData {
                        file,
                        kind: LostKind::Table,
                        offset: None,
                        length: None,
                        range,
                        reason: d.error.clone(),
                    },
                );
            }
            Some(blocks) => {
                for b in blocks {
                    let first = b.after.clone().or_else(|| smallest.clone());
                    let last = b.before.clone().or_else(|| largest.clone());
                    push_lost(
                        report,
                        &mut ranges,
                        layer,
                        LostData {
                            file: file.clone(),
                            kind: LostKind::Block,
                            offset: b.handle.map(|h| h.0),
                            length: b.handle.map(|h| h.1),
                            range: Some((first, last)),
                            reason: d.error.clone(),
                        },
                    );
                }
            }
        }
    }
    let properties = &db.properties;
    for info in properties.levels.iter().flatten() {
        seen.insert(info.number);
        if !live.is_live_table(info.number)
            && !damage.tables.iter().any(|d| d.number == info.number)
        {
            report.ignored.push(IgnoredFile {
                file: table_file_name(info.number),
                reason: obsolete_table(),
            });
        }
    }
    for (&number, (level, smallest, largest)) in &listed {
        if seen.contains(&number) {
            continue;
        }
        let layer = live.layer(Origin::Table {
            number,
            level: Some(*level),
        });
        push_lost(
            report,
            &mut ranges,
            layer,
            LostData {
                file: table_file_name(number),
                kind: LostKind::Table,
                offset: None,
                length: None,
                range: Some((Some(smallest.clone()), Some(largest.clone()))),
                reason: format!("missing: {manifest_name} lists it at level {level}"),
            },
        );
    }
    for log in &properties.logs {
        let file = log_file_name(log.number);
        if !live.is_live_log(log.number) {
            report.ignored.push(IgnoredFile {
                file,
                reason: format!(
                    "{manifest_name} retired it (its log number is {}): its writes are in \
                     the tables; its versions are taken only for keys in a lost range",
                    manifest.map_or(0, |m| m.log_number)
                ),
            });
            continue;
        }
        let first_lost = report.lost.len();
        for d in &log.dropped {
            report.lost.push(LostData {
                file: file.clone(),
                kind: LostKind::LogRecord,
                offset: Some(d.offset),
                length: Some(d.bytes),
                range: None,
                reason: d.reason.to_string(),
            });
        }
        // The keys the lost records held, as far as a read without checksums tells them:
        // each is a lost range of its own, at the logs' layer.
        let suspect = damage.logs.iter().find(|l| l.number == log.number);
        if let Some(l) = suspect
            && first_lost < report.lost.len()
        {
            let layer = live.layer(Origin::Log { number: log.number });
            let keys: BTreeSet<&Vec<u8>> = l.suspect_keys.iter().collect();
            for key in keys {
                ranges.push(LostRange {
                    first: Some(key.clone()),
                    last: Some(key.clone()),
                    layer,
                    lost: first_lost,
                });
            }
        }
        for t in damage.tails.iter().filter(|t| t.number == log.number) {
            let read_again = if let Some(file) = &t.reused_by {
                format!(
                    "; it held {} write batches, not taken: {file} holds writes numbered as \
                     they are, made after them by a writer that went on without them (the \
                     log ends where they begin, to LevelDB's reader), so they are older",
                    t.batches
                )
            } else if t.batches > 0 {
                format!(
                    "; {} write batches before it were read past a damaged record length",
                    t.batches
                )
            } else {
                String::new()
            };
            report.lost.push(LostData {
                file: file.clone(),
                kind: LostKind::LogTail,
                offset: Some(t.offset),
                length: Some(t.bytes),
                range: None,
                reason: format!(
                    "the log's last {} bytes, from a record that cannot be read to its end: \
                     no reader can tell them from a write cut short by a crash{read_again}",
                    t.bytes
                ),
            });
        }
    }
    for (name, why) in &properties.skipped {
        // Logs that could not be read at all (tables are in `damage`).
        if name.ends_with(".log") {
            report.lost.push(LostData {
                file: name.clone(),
                kind: LostKind::LogRecord,
                offset: None,
                length: None,
                range: None,
                reason: why.clone(),
            });
        }
    }
    let user = Arc::clone(&db.user);
    LostRanges::new(ranges, user.as_ref())
}

/// Adds `lost` to the report, and its range, if known, to `ranges`.
fn push_lost(report: &mut RepairReport, ranges: &mut Vec<LostRange>, layer: Layer, lost: LostData) {
    if let Some((first, last)) = &lost.range {
        ranges.push(LostRange {
            first: first.clone(),
            last: last.clone(),
            layer,
            lost: report.lost.len(),
        });
    }
    report.lost.push(lost);
}

/// The compression of the first data block of the first table of `db` that can be read
/// (by its type byte and, for type 2, its first bytes, as [`Profile::Auto`] reads them).
pub(crate) fn source_compression(db: &Db) -> Option<Compression> {
    db.properties
        .levels
        .iter()
        .flatten()
        .find_map(|info| table_compression(&db.dir, info.number, &db.user))
}

fn table_compression(dir: &Path, number: u64, user: &Arc<dyn Comparator>) -> Option<Compression> {
    let ldb = dir.join(table_file_name(number));
    let path = if ldb.exists() {
        ldb
    } else {
        dir.join(sst_table_file_name(number))
    };
    let (file, _) = open_regular(&path).ok()?;
    let mut options = ldb_read_options_for(Arc::clone(user))
        .profile(Profile::Auto)
        .fill_cache(false)
        .ignore_meta_errors(true);
    options.filter_policy = None;
    options.extra_filter_policies.clear();
    let table = Table::open(file, options).ok()?;
    let handle = table.data_blocks().find_map(|h| h.ok())?;
    // The type byte follows the block; its first bytes tell zstd from zlib.
    let mut head = [0u8; 16];
    let head_len = usize::try_from(handle.size).map_or(head.len(), |n| n.min(head.len()));
    let source = table.source();
    source
        .read_exact_at(&mut head[..head_len], handle.offset)
        .ok()?;
    let mut kind = [0u8; 1];
    source
        .read_exact_at(&mut kind, handle.offset.checked_add(handle.size)?)
        .ok()?;
    Profile::Auto.compression(kind[0], &head[..head_len])
}
