//! The version set of a database open for writing (LevelDB's `VersionSet`): the state
//! recovered from `CURRENT` and the MANIFEST it names (the [`Manifest`] the replay gives:
//! the files of each level and the counters), the file numbers allocated from it, and each
//! change recorded in a MANIFEST ([`ManifestWriter`]) before it takes effect
//! (`LogAndApply`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::dbformat::InternalKeyComparator;
use crate::durable::{Plain, sync_dir_on};
use crate::filename::{FileType, manifest_file_name, parse_file_name};
use crate::manifest::{Manifest, apply_edit};
use crate::manifest_writer::{ManifestWriter, set_current};
use crate::version_edit::VersionEdit;
use crate::writer::file_system::FileSystem;
use crate::{Error, Limit, MAX_FILE_NUMBER, Result};

/// The database's current state, the one a MANIFEST's replay gives ([`Manifest`]: the files
/// of each level and the counters), and the MANIFEST each change is appended to before it
/// takes effect.
pub(crate) struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    pub(crate) icmp: Arc<InternalKeyComparator>,
    /// The state; `file` names the MANIFEST `CURRENT` names, which and any newer one are
    /// kept. Its counters are the set's: `next_file_number` only grows.
    pub(crate) current: Manifest,
    /// The number of the MANIFEST `CURRENT` names.
    pub(crate) manifest_number: u64,
    manifest: Option<ManifestWriter>,
    /// A change is being written ([`prepare`](Self::prepare) to [`finish`](Self::finish)).
    writing: bool,
}

/// A change to the MANIFEST prepared by [`VersionSet::prepare`], written by
/// [`write`](Self::write) with nothing locked, and applied by [`VersionSet::finish`].
pub(crate) struct ManifestChange {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// The state once the change is applied.
    next: Manifest,
    /// The edit, its counters set.
    edit: VersionEdit,
    /// The open MANIFEST the edit is appended to, or a new one to create (put here once
    /// written).
    log: std::result::Result<ManifestWriter, NewManifest>,
    /// The number of the new MANIFEST written, if any.
    new: Option<u64>,
}

/// A MANIFEST to create: its number, and its first record, the whole state before the edit.
struct NewManifest {
    number: u64,
    first: VersionEdit,
}

impl ManifestChange {
    /// Writes and syncs the records. On failure the change cannot be applied: a new
    /// MANIFEST is removed (`CURRENT` still names the old one, or it names the new one
    /// holding the edit: the next open reads whichever); an open one may end in part of a
    /// record, and the next change starts a new one rather than append after it.
    ///
    /// # Errors
    /// Writing or syncing the MANIFEST, the directory or `CURRENT`.
    pub(crate) fn write(&mut self) -> Result<()> {
        let fs = &*self.fs;
        let dir = &self.dir;
        let new = match &mut self.log {
            Ok(log) => return sync_dir_on(fs, dir).and_then(|()| log.append(&self.edit)),
            Err(new) => new,
        };
        let mut file = ManifestWriter::create(fs, dir, new.number)?;
        // The names of the tables and logs the MANIFEST lists, and its own, are durable
        // before CURRENT can name it; one sync makes both records durable.
        let written = file
            .append_unsynced(&new.first)
            .and_then(|()| file.append(&self.edit))
            .and_then(|()| sync_dir_on(fs, dir))
            .and_then(|()| set_current(fs, dir, new.number, &mut Plain));
        if let Err(e) = written {
            file.discard(fs);
            return Err(e);
        }
        // On failure CURRENT may name the new MANIFEST, which holds the edit, or the old
        // one: both are kept (the old number stays the one kept from). The caller stops
        // writes; the next open reads whichever it is.
        sync_dir_on(fs, dir)?;
        self.new = Some(new.number);
        self.log = Ok(file);
        Ok(())
    }
}

impl VersionSet {
    /// The state `manifest` describes; the first change writes a new MANIFEST holding it
    /// (LevelDB's `VersionSet::Recover` without reusing the MANIFEST).
    pub(crate) fn recovered(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        icmp: Arc<InternalKeyComparator>,
        manifest: &Manifest,
    ) -> VersionSet {
        let mut set = VersionSet {
            fs,
            dir: dir.to_path_buf(),
            icmp,
            current: manifest.clone(),
            manifest_number: 0,
            manifest: None,
            writing: false,
        };
        if let Some(FileType::Manifest(n)) = parse_file_name(&manifest.file) {
            set.manifest_number = n;
            set.mark_file_number_used(n);
        }
        set.mark_file_number_used(manifest.prev_log_number);
        set.mark_file_number_used(manifest.log_number);
        set
    }

    /// Allocates a file number.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] once every number up to [`MAX_FILE_NUMBER`] is used: the
    /// number is never reused nor saturated.
    pub(crate) fn new_file_number(&mut self) -> Result<u64> {
        self.check_file_numbers(1)?;
        let n = self.current.next_file_number;
        self.current.next_file_number += 1;
        Ok(n)
    }

    /// Checks that `count` more file numbers can be allocated.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] naming the number that would pass [`MAX_FILE_NUMBER`].
    pub(crate) fn check_file_numbers(&self, count: u64) -> Result<()> {
        let next = self.current.next_file_number;
        let last = next.saturating_add(count.saturating_sub(1));
        if count > 0 && (next > MAX_FILE_NUMBER || last > MAX_FILE_NUMBER) {
            return Err(Error::LimitExceeded {
                limit: Limit::FileNumbers,
                path: self.dir.clone(),
                value: next.max(MAX_FILE_NUMBER.saturating_add(1)),
            });
        }
        Ok(())
    }

    /// Makes sure `number` is never allocated. (`u64::MAX` leaves no number to allocate.)
    pub(crate) fn mark_file_number_used(&mut self, number: u64) {
        if self.current.next_file_number <= number {
            self.current.next_file_number = number.saturating_add(1);
        }
    }

    /// Records `edit` in the MANIFEST (a new one, holding the whole state first, if none is
    /// open yet) and applies it (LevelDB's `LogAndApply`). On failure nothing changes.
    ///
    /// The directory is synced before each record is written, so that no durable record
    /// names a table or log whose name is not durable (LevelDB syncs it at each MANIFEST
    /// sync), and, for a new MANIFEST, after `CURRENT` is renamed to name it.
    ///
    /// The edit is applied as a MANIFEST's replay applies it ([`apply_edit`]).
    ///
    /// # Errors
    /// Writing or syncing the MANIFEST or `CURRENT`; a new file whose smallest key is above
    /// its largest.
    pub(crate) fn log_and_apply(&mut self, edit: &mut VersionEdit) -> Result<()> {
        let mut change = self.prepare(edit)?;
        let written = change.write();
        self.finish(change, written)
    }

    /// The first step of [`log_and_apply`](Self::log_and_apply): the state after `edit`, and
    /// the MANIFEST records to write, taken out of the set so that they can be written
    /// without the set (and the lock guarding it) while the set's counters move on. Until
    /// [`finish`](Self::finish) takes the change back, no other change may be prepared.
    ///
    /// # Errors
    /// A new file whose smallest key is above its largest; no file number left for a new
    /// MANIFEST.
    pub(crate) fn prepare(&mut self, edit: &mut VersionEdit) -> Result<ManifestChange> {
        debug_assert!(!self.writing, "one MANIFEST change at a time");
        edit.log_number.get_or_insert(self.current.log_number);
        edit.prev_log_number
            .get_or_insert(self.current.prev_log_number);
        edit.next_file_number = Some(self.current.next_file_number);
        edit.last_sequence = Some(self.current.last_sequence);
        let mut next = self.current.clone();
        apply_edit(
            &mut next,
            edit,
            &self.icmp,
            self.icmp.user_comparator(),
            self.current.end,
        )?;
        let log = match self.manifest.take() {
            Some(log) => Ok(log),
            None => {
                let number = self.new_file_number()?;
                Err(NewManifest {
                    number,
                    first: self.snapshot(),
                })
            }
        };
        self.writing = true;
        Ok(ManifestChange {
            fs: Arc::clone(&self.fs),
            dir: self.dir.clone(),
            next,
            edit: edit.clone(),
            log,
            new: None,
        })
    }

    /// The last step of [`log_and_apply`](Self::log_and_apply): applies `change` if it was
    /// `written`, keeping the counters (the next file number, the last sequence) as they
    /// moved on meanwhile.
    ///
    /// # Errors
    /// `written`'s.
    pub(crate) fn finish(&mut self, change: ManifestChange, written: Result<()>) -> Result<()> {
        self.writing = false;
        written?;
        let ManifestChange {
            mut next, log, new, ..
        } = change;
        if let Ok(log) = log {
            self.manifest = Some(log);
        }
        if let Some(number) = new {
            self.manifest_number = number;
            next.file = manifest_file_name(number);
        }
        next.next_file_number = self.current.next_file_number;
        next.last_sequence = self.current.last_sequence;
        self.current = next;
        Ok(())
    }

    /// The whole state as one edit: the first record of a new MANIFEST (LevelDB's
    /// `WriteSnapshot`).
    fn snapshot(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            comparator: Some(self.icmp.user_comparator().name().to_string()),
            ..VersionEdit::default()
        };
        for (level, key) in self.current.compact_pointers.iter().enumerate() {
            if !key.is_empty() {
                edit.compact_pointers.push((level, key.clone()));
            }
        }
        for (level, files) in self.current.levels.files.iter().enumerate() {
            for f in files {
                edit.new_files.push((level, (**f).clone()));
            }
        }
        edit
    }
}

/// Writes the MANIFEST of a new, empty database and points `CURRENT` at it (LevelDB's
/// `DBImpl::NewDB`).
///
/// # Errors
/// Creating, writing or syncing the MANIFEST or `CURRENT`; a MANIFEST written is removed.
pub(crate) fn create_new_db(fs: &dyn FileSystem, dir: &Path, comparator: &str) -> Result<()> {
    let edit = VersionEdit {
        comparator: Some(comparator.to_string()),
        log_number: Some(0),
        next_file_number: Some(2),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    let mut log = ManifestWriter::create(fs, dir, 1)?;
    let number = log.number();
    if let Err(e) = log.append(&edit) {
        log.discard(fs);
        return Err(e);
    }
    // Closed before `CURRENT` names it, its error reported, as LevelDB's `NewDB` does.
    let result = log
        .close()
        .and_then(|()| sync_dir_on(fs, dir))
        .and_then(|()| set_current(fs, dir, number, &mut Plain));
    if let Err(e) = result {
        let _ = fs.remove(&dir.join(manifest_file_name(number)));
        return Err(e);
    }
    sync_dir_on(fs, dir)
}
