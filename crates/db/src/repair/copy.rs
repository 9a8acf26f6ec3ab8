//! Tables a repair copies as they are, instead of merging their entries again (as LevelDB's
//! `RepairDB` keeps each table it can read): a live table whose key range no other file,
//! memtable or lost range reaches holds every version of its keys, so its newest version
//! of each key is the one the merge would take, and a reader of the copy takes it too.
//!
//! The copy is the source's file under a second name where the file system allows (a hard
//! link: LevelDB never writes a table once made), else a copy. The copy, what the repaired
//! database holds, is verified, as thoroughly as a merge reads a table and more:
//! every block's checksum and encoding, the order of its keys, its index separators, that
//! its filter admits every key (a table with a filter the reader does not know is merged
//! instead), and that every key is an internal key. The copy's first and last keys must be
//! those the salvage found in the source. A table that fails is merged instead.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use leveltable_table::{Comparator, ReadOptions, Table};

use super::LiveFiles;
use super::lost::LostRanges;
use crate::bulk::part::PartFile;
use crate::dbformat::{ParsedInternalKey, ValueType, extract_user_key, ldb_read_options_for};
use crate::filename::{sst_table_file_name, table_file_name};
use crate::storage::open_regular;
use crate::syncer::{SyncQueue, Syncer};
use crate::version::{Origin, Source, Version};
use crate::version_edit::FileMetaData;
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{DbOptions, Error, Result};

/// How a copy is read for its verification.
pub(super) struct Reading {
    /// Checksums checked.
    pub(super) options: ReadOptions,
    /// The table memory budget: a table whose index and filter blocks take more is merged
    /// (where the table cache refuses it, as it refuses it in any read).
    pub(super) budget: u64,
}

/// Bytes copied at a time.
const COPY_BUFFER: usize = 1 << 20;

/// The live tables of `version` whose user-key range reaches no other source's (a table,
/// live or not, a log, what a salvage read of a damaged table) and no lost range, in key
/// order.
pub(super) fn copyable(
    version: &Version,
    lost: &LostRanges,
    live: &LiveFiles,
    user: &dyn Comparator,
) -> Vec<Arc<FileMetaData>> {
    /// A user-key range (`None`: unbounded on that side), and the table it is, if that
    /// table may be copied.
    struct Span<'a> {
        first: Option<&'a [u8]>,
        last: Option<&'a [u8]>,
        table: Option<&'a Arc<FileMetaData>>,
    }
    // The first and last internal keys of each source held in memory.
    let held: Vec<(Vec<u8>, Vec<u8>)> = version
        .sources
        .iter()
        .filter_map(|source| match source {
            Source::Mem { table, .. } => Some((table.first()?.0, table.last()?.0)),
            Source::Files { .. } => None,
        })
        .collect();
    let mut spans: Vec<Span<'_>> = Vec::new();
    for source in &version.sources {
        match source {
            Source::Files { level, files } => {
                for f in files {
                    let origin = Origin::Table {
                        number: f.number,
                        level: *level,
                    };
                    spans.push(Span {
                        first: Some(user_of(&f.smallest)),
                        last: Some(user_of(&f.largest)),
                        table: live.is_live(origin).then_some(f),
                    });
                }
            }
            Source::Mem { .. } => {}
        }
    }
    for (first, last) in &held {
        spans.push(Span {
            first: Some(user_of(first)),
            last: Some(user_of(last)),
            table: None,
        });
    }
    for (first, last) in lost.bounds() {
        spans.push(Span {
            first,
            last,
            table: None,
        });
    }
    spans.sort_by(|a, b| match (a.first, b.first) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => user.compare(x, y),
    });
    // Sorted by first key: a span reaches an earlier one if the furthest last key before it
    // is not below its first, and a later one if the next span's first is not above its
    // last.
    let mut reach: Option<Option<&[u8]>> = None;
    let mut out = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let clear_before = match reach {
            None => true,
            Some(None) => false,
            Some(Some(end)) => s.first.is_some_and(|f| user.compare(end, f).is_lt()),
        };
        let clear_after = spans
            .get(i + 1)
            .is_none_or(|next| match (s.last, next.first) {
                (Some(l), Some(f)) => user.compare(l, f).is_lt(),
                _ => false,
            });
        if clear_before
            && clear_after
            && let Some(t) = s.table
        {
            out.push(Arc::clone(t));
        }
        reach = Some(match (reach, s.last) {
            (None, last) => last,
            (Some(None), _) | (_, None) => None,
            (Some(Some(a)), Some(b)) => Some(if user.compare(a, b).is_lt() { b } else { a }),
        });
    }
    out
}

/// Copies and verifies the tables `candidates` of `src` into `dir`, calling
/// `copied` with each one's size; returns the copies, in key order. A table that cannot be
/// copied or fails the verification is left to the merge.
///
/// # Errors
/// Syncing the copies.
pub(super) fn copy_tables(
    src: &Path,
    candidates: &[Arc<FileMetaData>],
    dir: &Path,
    read: &DbOptions,
    user: &Arc<dyn Comparator>,
    copied: &mut dyn FnMut(u64),
) -> Result<Vec<Copied>> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let read = Reading {
        options: ldb_read_options_for(Arc::clone(user))
            .verify_checksums(true)
            .profile(read.profile)
            .fill_cache(false),
        budget: read.table_memory_budget,
    };
    let (mut syncer, syncs) = Syncer::start(COPY_SYNC_BACKLOG).map_err(|e| {
        Error::op(
            "cannot start a thread to sync the tables copied into",
            dir,
            e,
        )
    })?;
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for (i, table) in candidates.iter().enumerate() {
        let to = dir.join(table_file_name(i as u64 + 1));
        match copy_table(src, table, &to, &read, user.as_ref(), &syncs, &mut buf) {
            Ok(c) => {
                copied(c.file.size);
                out.push(c);
            }
            // Merged instead (where a damaged table makes the merge start again, reading
            // every table whole first).
            Err(_) => {
                let _ = std::fs::remove_file(&to);
            }
        }
    }
    drop(syncs);
    syncer.finish()?;
    Ok(out)
}

/// Copies waiting for their sync, at most.
const COPY_SYNC_BACKLOG: usize = 4;

/// `version` without the tables `skip`.
pub(super) fn without(version: &Version, skip: &BTreeSet<u64>) -> Version {
    let sources = version
        .sources
        .iter()
        .filter_map(|source| match source {
            Source::Mem { origin, table } => Some(Source::Mem {
                origin: *origin,
                table: Arc::clone(table),
            }),
            Source::Files { level, files } => {
                let files: Vec<_> = files
                    .iter()
                    .filter(|f| !skip.contains(&f.number))
                    .cloned()
                    .collect();
                (!files.is_empty()).then_some(Source::Files {
                    level: *level,
                    files,
                })
            }
        })
        .collect();
    Version::new(
        version.icmp.clone(),
        Arc::clone(&version.tables),
        sources,
        version.newest_wins,
    )
}

/// A table copied and verified.
#[derive(Debug, Clone)]
pub(super) struct Copied {
    /// The source table's number.
    pub(super) number: u64,
    /// The copy, as a part's file (user keys, the CRC32C of its bytes).
    pub(super) file: PartFile,
    /// Its newest sequence number.
    pub(super) max_sequence: u64,
    /// User keys whose newest version is a value.
    pub(super) keys: u64,
    /// User keys whose newest version is a deletion.
    pub(super) deleted: u64,
}

/// Copies the table `table` of `src` to `to` (named as a part's file; a hard link where the
/// file system makes one), hands it to `syncs`, and verifies the copy (see the module
/// documentation) as `read` says; `buf` is reused.
///
/// # Errors
/// Any failure to read, write or verify: the caller merges the table instead (and removes
/// the copy).
fn copy_table(
    src: &Path,
    table: &FileMetaData,
    to: &Path,
    read: &Reading,
    user: &dyn Comparator,
    syncs: &SyncQueue,
    buf: &mut Vec<u8>,
) -> Result<Copied> {
    let number = table.number;
    let ldb = src.join(table_file_name(number));
    let from = if ldb.exists() {
        ldb
    } else {
        src.join(sst_table_file_name(number))
    };
    let name = to
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let to = to.to_owned();
    // The source's file itself, under a second name, where the file system allows (LevelDB
    // never writes a table once made): nothing copied, and what is verified below is what
    // the repaired database holds. Else a copy.
    let linked = std::fs::hard_link(&from, &to).is_ok()
        && std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_file());
    let (crc, size) = if linked {
        let (file, _) = open_regular(&to).map_err(|e| Error::io(&to, e))?;
        let (crc, size) = checksum(&file, buf).map_err(|e| Error::io(&to, e))?;
        // Durable as its new name is (a file just written may not be yet).
        syncs.sync(to.clone(), Box::new(file))?;
        (crc, size)
    } else {
        let _ = std::fs::remove_file(&to);
        copy_file(&from, &to, syncs, buf)?
    };
    let checked = verify_copy(&to, number, read, user)?;
    let refuse = |what: &str| Error::corruption(table_file_name(number), what.to_owned(), 0);
    if checked.first != table.smallest || checked.last != table.largest {
        return Err(refuse(
            "its first or last key is not the one read before: it changed while read",
        ));
    }
    let smallest = user_of(&checked.first).to_vec();
    let largest = user_of(&checked.last).to_vec();
    Ok(Copied {
        number,
        file: PartFile {
            name,
            size,
            entries: checked.entries,
            crc32c: Some(crc),
            smallest,
            largest,
        },
        max_sequence: checked.max_sequence,
        keys: checked.keys,
        deleted: checked.deleted,
    })
}

/// Copies `from` to `to` (a new file), handed to `syncs`; returns the copy's CRC32C and
/// size.
fn copy_file(from: &Path, to: &Path, syncs: &SyncQueue, buf: &mut Vec<u8>) -> Result<(u32, u64)> {
    let (mut source, _) = open_regular(from).map_err(|e| Error::io(from, e))?;
    let mut out = LocalFileSystem
        .create_new(to)
        .map_err(|e| Error::op("cannot create", to, e))?;
    buf.resize(COPY_BUFFER, 0);
    let (mut crc, mut size) = (0u32, 0u64);
    loop {
        let n = match source.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(from, e)),
        };
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        size = size.saturating_add(n as u64);
        out.write_all(&buf[..n])
            .map_err(|e| Error::op(format!("cannot copy {} to", from.display()), to, e))?;
    }
    syncs.sync(to.to_owned(), out)?;
    Ok((crc, size))
}

/// The CRC32C and size of `file`'s bytes, read through `buf`.
fn checksum(mut file: &File, buf: &mut Vec<u8>) -> std::io::Result<(u32, u64)> {
    buf.resize(COPY_BUFFER, 0);
    let (mut crc, mut size) = (0u32, 0u64);
    loop {
        let n = match file.read(buf) {
            Ok(0) => return Ok((crc, size)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        size = size.saturating_add(n as u64);
    }
}

/// The user key of an internal key checked to be one.
fn user_of(internal: &[u8]) -> &[u8] {
    extract_user_key(internal).unwrap_or(internal)
}

/// What the verification of a copy read.
struct Checked {
    first: Vec<u8>,
    last: Vec<u8>,
    entries: u64,
    max_sequence: u64,
    keys: u64,
    deleted: u64,
}

/// Verifies the table at `path` (a copy of table `number`).
fn verify_copy(path: &Path, number: u64, read: &Reading, user: &dyn Comparator) -> Result<Checked> {
    let name = table_file_name(number);
    let bad = |what: String| Error::corruption(name.clone(), what, 0);
    let (file, _) = open_regular(path).map_err(|e| Error::io(path, e))?;
    let table = Table::open(file, read.options.clone()).map_err(|e| bad(e.to_string()))?;
    if table.resident_bytes() > read.budget {
        return Err(bad(format!(
            "{} bytes of index and filter blocks, more than the table memory budget",
            table.resident_bytes()
        )));
    }
    // A filter the reader does not load is not checked: a reader that knows its policy
    // would trust it.
    let properties = table.properties();
    if properties
        .filters
        .iter()
        .any(|f| properties.filter_policy.as_deref() != Some(f.policy_name.as_str()))
    {
        return Err(bad("a filter of a policy not known here".to_owned()));
    }
    let summary = table.verify().map_err(|e| bad(e.to_string()))?;
    let mut checked = Checked {
        first: Vec::new(),
        last: Vec::new(),
        entries: 0,
        max_sequence: 0,
        keys: 0,
        deleted: 0,
    };
    let mut it = table.iter().fill_cache(false);
    it.seek_to_first();
    while it.valid() {
        let key = it.key();
        let p = ParsedInternalKey::parse(key)
            .map_err(|e| bad(format!("internal key ({e}) at entry {}", checked.entries)))?;
        checked.max_sequence = checked.max_sequence.max(p.sequence);
        // The verification checked the order: a new user key's first entry is its newest.
        let new_key = checked.entries == 0
            || user.compare(user_of(&checked.last), p.user_key) != Ordering::Equal;
        if new_key {
            match p.value_type {
                ValueType::Value => checked.keys += 1,
                ValueType::Deletion => checked.deleted += 1,
            }
        }
        if checked.entries == 0 {
            checked.first.extend_from_slice(key);
        }
        checked.last.clear();
        checked.last.extend_from_slice(key);
        checked.entries += 1;
        it.next();
    }
    it.status().map_err(|e| bad(e.to_string()))?;
    if checked.entries == 0 || checked.entries != summary.entries {
        return Err(bad(format!(
            "{} entries read, {} verified",
            checked.entries, summary.entries
        )));
    }
    Ok(checked)
}
