//! What a database open for writing tells about itself (LevelDB's `DB::GetProperty` and
//! `DB::GetApproximateSizes`): the files per level, a table listing, the memory in use and
//! the table bytes a key range spans.

use std::fmt::Write as _;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::Result;
use crate::dbformat::ParsedInternalKey;
use crate::levels::total_size;
use crate::version_edit::NUM_LEVELS;
use crate::writer::compaction_stats::stats_table;
use crate::writer::writable_db::WritableDb;

/// `leveldb.num-files-at-level<N>`: LevelDB's property name before the level.
const FILES_AT_LEVEL: &str = "leveldb.num-files-at-level";

impl WritableDb {
    /// The comparator the database's keys are ordered by.
    pub fn comparator(&self) -> &Arc<dyn Comparator> {
        &self.shared.user
    }

    /// The value of LevelDB's property `name`, `None` for a name LevelDB does not know:
    ///
    /// - `leveldb.num-files-at-level<N>`: the number of table files at level `N` (0 to 6);
    /// - `leveldb.stats`: LevelDB's table of the levels, for each holding files or written
    ///   to since the open: its file count, their size in MiB, and the seconds, MiB read
    ///   and MiB written of the flushes and compactions that wrote to it;
    /// - `leveldb.sstables`: per level, each table's number, size and internal key range,
    ///   as LevelDB's `Version::DebugString` writes them;
    /// - `leveldb.approximate-memory-usage`: the bytes of the memtables, of the memory kept
    ///   from flushed memtables for the next ones, and of the block cache.
    pub fn property(&self, name: &str) -> Option<String> {
        if let Some(level) = name.strip_prefix(FILES_AT_LEVEL) {
            // Digits only, as LevelDB's `ConsumeDecimalNumber` reads them: no sign.
            if level.is_empty() || !level.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let level: usize = level.parse().ok()?;
            return (level < NUM_LEVELS).then(|| self.files_at_level(level).to_string());
        }
        let st = self.shared.state();
        let levels = &st.versions.current.levels.files;
        match name {
            "leveldb.stats" => {
                let mut sizes = [(0, 0); NUM_LEVELS];
                for (size, files) in sizes.iter_mut().zip(levels) {
                    *size = (files.len(), total_size(files));
                }
                Some(stats_table(&sizes, &st.stats))
            }
            "leveldb.sstables" => {
                let mut out = String::new();
                for (level, files) in levels.iter().enumerate() {
                    let _ = writeln!(out, "--- level {level} ---");
                    for f in files {
                        let _ = writeln!(
                            out,
                            " {}:{}[{} .. {}]",
                            f.number,
                            f.file_size,
                            debug_key(&f.smallest),
                            debug_key(&f.largest)
                        );
                    }
                }
                Some(out)
            }
            "leveldb.approximate-memory-usage" => {
                let mut bytes = (st.mem.memory_usage() + self.shared.blocks.memory_usage()) as u64;
                if let Some(imm) = &st.imm {
                    bytes += imm.memory_usage() as u64;
                }
                if let Some(cache) = &self.shared.options.read.block_cache {
                    bytes += cache.weight();
                }
                Some(bytes.to_string())
            }
            _ => None,
        }
    }

    /// The approximate bytes of table files holding the user keys in `[start, limit)`
    /// (LevelDB's `GetApproximateSizes`: the memtables and the logs are not counted), by
    /// [`Db::approximate_size`](crate::Db::approximate_size) over the current version.
    ///
    /// # Errors
    /// A table that cannot be opened, or a key too long to search for.
    pub fn approximate_size(&self, start: &[u8], limit: &[u8]) -> Result<u64> {
        self.reader()?.approximate_size(start, limit)
    }
}

/// An internal key as LevelDB's `InternalKey::DebugString` writes it: `'user key' @
/// sequence : type`, bytes outside printable ASCII as `\xNN`.
fn debug_key(key: &[u8]) -> String {
    let Ok(p) = ParsedInternalKey::parse(key) else {
        let mut out = String::from("(bad)");
        escape(&mut out, key);
        return out;
    };
    let mut out = String::from("'");
    escape(&mut out, p.user_key);
    let _ = write!(out, "' @ {} : {}", p.sequence, p.value_type as u8);
    out
}

/// LevelDB's `EscapeString`.
fn escape(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        if (b' '..=b'~').contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}
