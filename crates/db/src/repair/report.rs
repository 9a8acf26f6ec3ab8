//! What a repair lost, ignored and could not be sure of: [`RepairReport`], as a JSON document
//! and as a summary for people.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::dbformat::show_key;

/// What a repair read, wrote, lost and could not be sure of. Made by
/// [`repair`](crate::repair()); [`to_json`](Self::to_json) and [`summary`](Self::summary)
/// show it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// The damaged database read.
    pub source: PathBuf,
    /// The repaired database written.
    pub dest: PathBuf,
    /// The MANIFEST whose live files were trusted; `None` if none could be read, when
    /// every file counted as live and the newest sequence number won (`RepairDB`'s rule).
    pub manifest: Option<String>,
    /// Why no MANIFEST could be used, when [`manifest`](Self::manifest) is `None`.
    pub manifest_error: Option<String>,
    /// The user comparator's name.
    pub comparator: String,
    /// Every table, data block and log record that could not be read, and the torn tails
    /// of logs.
    pub lost: Vec<LostData>,
    /// Every file whose versions were not taken as they stand, and why.
    pub ignored: Vec<IgnoredFile>,
    /// For each lost table or block whose key range is known (by its index in
    /// [`lost`](Self::lost)): the keys it covers whose newest version found is no newer
    /// than it, so that a newer one may have been lost with it.
    pub uncertain: Vec<UncertainRange>,
    /// Distinct uncertain keys (a key covered by two lost ranges counts once).
    pub uncertain_keys: u64,
    /// Whether the uncertain keys were left out of the repaired database.
    pub uncertain_dropped: bool,
    /// Keys written to the repaired database.
    pub keys: u64,
    /// Keys whose newest version found is a deletion, left out.
    pub deleted: u64,
    /// Versions of files the MANIFEST no longer lists that were taken, for keys in a lost
    /// range where nothing newer was found (each key counted uncertain).
    pub obsolete_used: u64,
    /// Versions of files the MANIFEST no longer lists that were not taken.
    pub obsolete_ignored: u64,
    /// Table files of the repaired database.
    pub tables: u64,
    /// Of them, tables of the source copied as they are (no other file reaching their
    /// keys), verified whole; the others hold the merge's winners.
    pub tables_copied: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What a lost piece of the source held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostKind {
    /// A whole table file: missing, or its footer or index unreadable.
    Table,
    /// A data block of a table.
    Block,
    /// A log record (a write batch, or part of one), or a whole log.
    LogRecord,
    /// The last bytes of a log, from the first record of its torn tail that cannot be read
    /// to the end of the log: a record running past the end (or a fragmented record whose
    /// end never came) is what a write a crash cut short leaves (a batch never
    /// acknowledged, then: nothing lost), and no reader can tell it from a damaged record,
    /// which loses the batches after it too. The keys they held are unknown.
    LogTail,
}

impl LostKind {
    /// `table`, `block`, `log-record` or `log-tail`.
    pub fn name(self) -> &'static str {
        match self {
            LostKind::Table => "table",
            LostKind::Block => "block",
            LostKind::LogRecord => "log-record",
            LostKind::LogTail => "log-tail",
        }
    }
}

/// A piece of the source that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LostData {
    /// The file, as named in the directory (`000012.ldb`, `000014.log`).
    pub file: String,
    /// What it was.
    pub kind: LostKind,
    /// Where it starts in the file, when known.
    pub offset: Option<u64>,
    /// Its length in bytes, when known.
    pub length: Option<u64>,
    /// The user keys it covered, both included, when the table's index or the MANIFEST
    /// tells them (`None` inside: unbounded on that side); `None` if unknown (a log record
    /// or a log's tail may have held any key).
    pub range: Option<KeyRange>,
    /// Why it could not be read.
    pub reason: String,
}

/// User keys from `.0` to `.1`, both included; `None` is unbounded on that side.
pub type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A file whose versions were not taken as they stand.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IgnoredFile {
    /// The file, as named in the directory.
    pub file: String,
    /// Why.
    pub reason: String,
}

/// The uncertain keys of one lost range.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UncertainRange {
    /// The lost piece, by its index in [`RepairReport::lost`].
    pub lost: usize,
    /// Uncertain keys in its range.
    pub keys: u64,
    /// The first of them, at most [`RepairOptions::sample`](crate::RepairOptions::sample).
    pub sample: Vec<Vec<u8>>,
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn bound(key: &Option<Vec<u8>>) -> Value {
    key.as_deref()
        .map_or(Value::Null, |k| Value::String(hex(k)))
}

impl RepairReport {
    /// The report as a JSON document. Keys are lowercase hex; a range's `first` or `last`
    /// is `null` where it is unbounded, and `range` is `null` where it is unknown.
    pub fn to_json(&self) -> String {
        let lost: Vec<Value> = self
            .lost
            .iter()
            .map(|l| {
                json!({
                    "file": l.file,
                    "kind": l.kind.name(),
                    "offset": l.offset,
                    "length": l.length,
                    "range": l.range.as_ref().map(|(first, last)| json!({
                        "first": bound(first),
                        "last": bound(last),
                    })),
                    "reason": l.reason,
                })
            })
            .collect();
        let ignored: Vec<Value> = self
            .ignored
            .iter()
            .map(|i| json!({"file": i.file, "reason": i.reason}))
            .collect();
        let uncertain: Vec<Value> = self
            .uncertain
            .iter()
            .map(|u| {
                json!({
                    "lost": u.lost,
                    "file": self.lost.get(u.lost).map(|l| l.file.clone()),
                    "keys": u.keys,
                    "sample": u.sample.iter().map(|k| hex(k)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = json!({
            "source": self.source.display().to_string(),
            "dest": self.dest.display().to_string(),
            "manifest": self.manifest,
            "manifest_error": self.manifest_error,
            "comparator": self.comparator,
            "keys": self.keys,
            "deleted": self.deleted,
            "tables": self.tables,
            "tables_copied": self.tables_copied,
            "bytes": self.bytes,
            "uncertain_keys": self.uncertain_keys,
            "uncertain_dropped": self.uncertain_dropped,
            "obsolete_used": self.obsolete_used,
            "obsolete_ignored": self.obsolete_ignored,
            "lost": lost,
            "ignored": ignored,
            "uncertain": uncertain,
        });
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        text
    }

    /// A few lines for people: what was written, what was lost (the first ten pieces), how
    /// many keys are uncertain, and what was ignored.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "repaired {} into {}: {} keys in {} tables ({} copied as they were; {} deleted \
             keys left out)",
            self.source.display(),
            self.dest.display(),
            self.keys,
            self.tables,
            self.tables_copied,
            self.deleted
        );
        match (&self.manifest, &self.manifest_error) {
            (Some(m), _) => {
                let _ = writeln!(s, "live files: those {m} lists");
            }
            (None, e) => {
                let _ = writeln!(
                    s,
                    "no MANIFEST could be read ({}): every file counted, the newest version \
                     of each key won, as LevelDB's RepairDB does; deleted data may be back",
                    e.as_deref().unwrap_or("none")
                );
            }
        }
        let _ = writeln!(s, "lost: {} pieces", self.lost.len());
        for l in self.lost.iter().take(10) {
            let at = l
                .offset
                .map_or(String::new(), |o| format!(" at offset {o}"));
            let len = l.length.map_or(String::new(), |n| format!(", {n} bytes"));
            let range = match &l.range {
                None => String::new(),
                Some((first, last)) => format!(
                    ", keys {} to {}",
                    first.as_deref().map_or("(start)".into(), show_key),
                    last.as_deref().map_or("(end)".into(), show_key)
                ),
            };
            let _ = writeln!(
                s,
                "  {} {}{at}{len}{range}: {}",
                l.kind.name(),
                l.file,
                l.reason
            );
        }
        if self.lost.len() > 10 {
            let _ = writeln!(s, "  ... and {} more", self.lost.len() - 10);
        }
        let _ = writeln!(
            s,
            "uncertain: {} keys (a newer version may have been lost){}",
            self.uncertain_keys,
            if self.uncertain_dropped {
                ", left out"
            } else {
                ", kept"
            }
        );
        let _ = writeln!(
            s,
            "ignored: {} files; {} versions of obsolete files not taken, {} taken",
            self.ignored.len(),
            self.obsolete_ignored,
            self.obsolete_used
        );
        s
    }
}
