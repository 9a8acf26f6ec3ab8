//! The repaired database being written: the merge's winners built into table files, the
//! tables copied as they are between them, all committed on the last level in key order.
//!
//! The built tables must not overlap the copied ones: the merge's keys are cut into parts
//! at each copied table (no merged key falls in one's range), and the parts and the copies
//! are committed together, the copies' sequence numbers kept and the MANIFEST's last
//! sequence the newest of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_process::TemporaryDir;
use leveltable_table::Comparator;

use super::copy::Copied;
use crate::bulk::commit::{CommitSummary, commit_built};
use crate::bulk::part::Part;
use crate::bulk::part_builder::PartBuilder;
use crate::filename::parent_dir;
use crate::writer::file_system::LocalFileSystem;
use crate::{BulkOptions, Error, Result};

/// Where the repaired database `dest` is built (see the module documentation).
pub(super) struct Output {
    dest: PathBuf,
    /// Beside `dest`: the parts' staging directories and the copies.
    staging: TemporaryDir,
    bulk: BulkOptions,
    /// The user comparator; `None` for bytewise, as the MANIFEST records it.
    order: Option<Arc<dyn Comparator>>,
    user: Arc<dyn Comparator>,
    /// The copies, in key order, and the next one the merge has not passed.
    copied: Vec<Copied>,
    next_copied: usize,
    /// The part the merge's keys go to, once it has one.
    current: Option<PartBuilder>,
    parts: Vec<Part>,
}

impl Output {
    /// An output for `dest` (which does not exist).
    pub(super) fn create(
        dest: &Path,
        bulk: BulkOptions,
        order: Option<Arc<dyn Comparator>>,
        user: Arc<dyn Comparator>,
    ) -> Result<Output> {
        bulk.check()?;
        let parent = parent_dir(dest);
        let staging = TemporaryDir::new_in(parent, ".leveltable-tmp-repair-")
            .map_err(|e| Error::op("cannot create a directory in", parent, e))?;
        let copies = staging.path().join("copied");
        std::fs::create_dir(&copies).map_err(|e| Error::op("cannot create", &copies, e))?;
        Ok(Output {
            dest: dest.to_owned(),
            staging,
            bulk,
            order,
            user,
            copied: Vec::new(),
            next_copied: 0,
            current: None,
            parts: Vec::new(),
        })
    }

    /// Where the copies are made.
    pub(super) fn copies_dir(&self) -> PathBuf {
        self.staging.path().join("copied")
    }

    /// Sets the copies (made in [`copies_dir`](Self::copies_dir)), in key order.
    pub(super) fn set_copied(&mut self, copied: Vec<Copied>) {
        self.copied = copied;
    }

    /// Adds a winner of the merge; its key sorts after the previous one's, and in no
    /// copy's range.
    pub(super) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.pass(Some(key))?;
        let part = match &mut self.current {
            Some(part) => part,
            None => {
                let staging = self
                    .staging
                    .path()
                    .join(format!("part-{}", self.parts.len()));
                self.current.insert(PartBuilder::create_ordered(
                    Arc::new(LocalFileSystem),
                    staging,
                    self.bulk.clone(),
                    self.order.clone(),
                )?)
            }
        };
        part.add(key, value)
    }

    /// Ends the current part before each copy that sorts before `key` (every copy left, for
    /// `None`), and lists those copies as parts of their own.
    fn pass(&mut self, key: Option<&[u8]>) -> Result<()> {
        while let Some(c) = self.copied.get(self.next_copied) {
            if key.is_some_and(|k| self.user.compare(&c.file.smallest, k).is_ge()) {
                break;
            }
            if let Some(part) = self.current.take() {
                self.parts.push(part.finish()?);
            }
            self.parts.push(Part {
                staging: self.copies_dir(),
                files: vec![c.file.clone()],
            });
            self.next_copied += 1;
        }
        Ok(())
    }

    /// Builds the last table files and commits the database at `dest`.
    ///
    /// # Errors
    /// Building or committing; nothing is left at `dest`.
    pub(super) fn finish(mut self) -> Result<CommitSummary> {
        if let Some(part) = self.current.take() {
            self.parts.push(part.finish()?);
        }
        self.pass(None)?;
        let last_sequence = self.copied.iter().map(|c| c.max_sequence).max();
        let summary = commit_built(
            &LocalFileSystem,
            &self.dest,
            &self.parts,
            self.order.as_deref(),
            last_sequence,
        )?;
        drop(self.staging);
        Ok(summary)
    }
}
