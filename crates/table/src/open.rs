//! Opening a table as a plan that is fed bytes: it asks for the footer, then the index and
//! metaindex blocks, then the filter block it chose, and is given them by whoever reads the
//! file — [`Table::open`] with positional reads, an object-store reader with ranged
//! requests. The plan does no I/O and decodes each piece once (LevelDB's `Table::Open`, as
//! a state machine).

#![deny(clippy::arithmetic_side_effects)]

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use crate::block::Layout;
use crate::filter::LoadedFilter;
use crate::format::{BlockHandle, Compression, FOOTER_LEN, Footer};
use crate::options::ReadOptions;
use crate::properties::{FilterInfo, read_filter_entries};
use crate::read_block::{Decode, decode_raw, locate, read_range};
use crate::table::Opened;
use crate::{Error, FilterPolicy, ReadAt, Result, Table};

/// The bytes a plan has not decoded yet, in the order it needs them.
#[derive(Debug)]
enum Step {
    Footer,
    Index,
    Metaindex,
    Filter,
    Done,
}

/// A table being opened: what it has decoded so far, and what it needs next.
///
/// Call order: `new (need give)* finish`: while [`need`](Self::need) names a range, read
/// it (or more around it) and [`give`](Self::give) it; then [`finish`](Self::finish) with
/// the source later reads go to.
///
/// ```
/// use leveltable_table::{BuildOptions, OpenPlan, ReadOptions, TableBuilder};
/// let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default())?;
/// builder.add(b"k", b"v")?;
/// builder.finish()?;
/// let file = builder.into_inner();
/// let mut plan = OpenPlan::new(file.len() as u64, ReadOptions::default())?;
/// while let Some(range) = plan.need() {
///     let (start, end) = (range.start as usize, range.end as usize);
///     plan.give(range.start, &file[start..end])?;
/// }
/// let table = plan.finish(file)?;
/// assert_eq!(table.get(b"k")?, Some(b"v".to_vec()));
/// # Ok::<(), leveltable_table::Error>(())
/// ```
pub struct OpenPlan {
    file_size: u64,
    options: ReadOptions,
    decode: Decode,
    step: Step,
    footer: Option<Footer>,
    index: Option<(Vec<u8>, Compression)>,
    filters: Vec<FilterInfo>,
    /// The filter chosen from the metaindex, before and after its block is read.
    chosen: Option<(Arc<dyn FilterPolicy>, BlockHandle)>,
    filter: Option<LoadedFilter>,
    /// The stored size of the filter block loaded.
    filter_size: u64,
    /// The footer's metaindex handle points outside the file (and the options say to go
    /// on without it).
    meta_unreadable: bool,
}

impl std::fmt::Debug for OpenPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenPlan")
            .field("file_size", &self.file_size)
            .field("step", &self.step)
            .field("need", &self.need())
            .finish_non_exhaustive()
    }
}

impl OpenPlan {
    /// A plan to open a table of `file_size` bytes with `options`.
    ///
    /// # Errors
    /// [`Error::TooShort`] for a file too short to hold a footer.
    pub fn new(file_size: u64, options: ReadOptions) -> Result<OpenPlan> {
        if file_size < FOOTER_LEN as u64 {
            return Err(Error::TooShort { size: file_size });
        }
        Ok(OpenPlan {
            file_size,
            decode: Decode::new(&options),
            options,
            step: Step::Footer,
            footer: None,
            index: None,
            filters: Vec::new(),
            chosen: None,
            filter: None,
            filter_size: 0,
            meta_unreadable: false,
        })
    }

    /// Where the footer starts.
    fn footer_at(&self) -> u64 {
        // `new` checked that the file holds a footer.
        self.file_size.saturating_sub(FOOTER_LEN as u64)
    }

    /// The handle of the block the current step reads, with where that handle was found.
    fn block(&self) -> Option<(BlockHandle, u64)> {
        let footer = self.footer.as_ref()?;
        match self.step {
            Step::Index => Some((footer.index, self.footer_at())),
            Step::Metaindex => Some((footer.metaindex, self.footer_at())),
            Step::Filter => Some((self.chosen.as_ref()?.1, footer.metaindex.offset)),
            Step::Footer | Step::Done => None,
        }
    }

    /// The bytes the plan needs next, or `None` when it can [`finish`](Self::finish).
    pub fn need(&self) -> Option<Range<u64>> {
        match self.step {
            Step::Footer => Some(self.footer_at()..self.file_size),
            Step::Done => None,
            // Each block's span was checked against the file when its handle was read.
            _ => self
                .block()
                .and_then(|(h, _)| Some(h.offset..h.end_with_trailer()?)),
        }
    }

    /// The footer, once it has been given and decoded (and its index handle found inside
    /// the file): where the index and metaindex blocks lie, even if reading them fails later.
    pub fn footer(&self) -> Option<Footer> {
        self.footer
    }

    /// A range worth reading for [`need`](Self::need) when each read is costly (a request
    /// to an object store): the needed bytes, and before them, once the footer is known,
    /// a guess at the filter block, which lies before the metaindex and whose size only
    /// the metaindex tells. A reader that fetches this usually opens the table in two
    /// reads: the end of the file, then this.
    pub fn hint(&self) -> Option<Range<u64>> {
        let need = self.need()?;
        let Some(footer) = &self.footer else {
            return Some(need);
        };
        if !matches!(self.step, Step::Index | Step::Metaindex) {
            return Some(need);
        }
        let meta = footer.metaindex.offset.min(footer.index.offset);
        let guess = footer.index.size.saturating_mul(8).max(64 << 10);
        Some(meta.saturating_sub(guess).min(need.start)..self.footer_at())
    }

    /// Gives the plan `bytes`, read from the file at offset `at`; they must cover the range
    /// [`need`](Self::need) names, and may hold more on either side (the plan then uses
    /// what it can of them before asking again).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bytes that do not cover what the plan needs; for the
    /// table's own bytes, what [`Table::open`] reports.
    pub fn give(&mut self, at: u64, bytes: &[u8]) -> Result<()> {
        let mut used = false;
        while let Some(need) = self.need() {
            let start = need.start.checked_sub(at);
            let end = need.end.checked_sub(at);
            let piece = start
                .zip(end)
                .and_then(|(s, e)| bytes.get(usize::try_from(s).ok()?..usize::try_from(e).ok()?));
            let Some(piece) = piece else {
                if used {
                    return Ok(());
                }
                return Err(Error::InvalidArgument(
                    format!(
                        "the bytes given, {} at offset {at}, do not hold the {} bytes at \
                         offset {} the table needs",
                        bytes.len(),
                        need.end.saturating_sub(need.start),
                        need.start
                    )
                    .into(),
                ));
            };
            self.take(piece)?;
            used = true;
        }
        Ok(())
    }

    /// Decodes `piece`, the bytes of the current step, and moves to the next.
    fn take(&mut self, piece: &[u8]) -> Result<()> {
        match self.step {
            Step::Footer => {
                let at = self.footer_at();
                let footer = Footer::decode_from(&mut &piece[..]).map_err(|e| e.rebase(at))?;
                // Validate the handles against the file before any layout math.
                let fits = |handle: BlockHandle| {
                    handle
                        .end_with_trailer()
                        .is_some_and(|end| end <= self.file_size)
                };
                if !fits(footer.index) {
                    return Err(Error::corrupt("block handle", at));
                }
                self.meta_unreadable = !fits(footer.metaindex);
                if self.meta_unreadable && !self.options.ignore_meta_errors {
                    return Err(Error::corrupt("block handle", at));
                }
                self.footer = Some(footer);
                self.step = Step::Index;
            }
            Step::Index => {
                let (contents, compression) = self.decode_block(piece)?;
                self.index = Some((contents.into_owned(), compression));
                self.step = if self.meta_unreadable {
                    Step::Done
                } else {
                    Step::Metaindex
                };
            }
            Step::Metaindex | Step::Filter => match self.take_meta(piece) {
                // LevelDB's `Table::Open` goes on without the meta information.
                Err(_) if self.options.ignore_meta_errors => {
                    self.filters.clear();
                    self.chosen = None;
                    self.filter = None;
                    self.filter_size = 0;
                    self.step = Step::Done;
                }
                result => result?,
            },
            Step::Done => {}
        }
        Ok(())
    }

    /// [`take`](Self::take) of the metaindex or the filter block.
    fn take_meta(&mut self, piece: &[u8]) -> Result<()> {
        if let Step::Metaindex = self.step {
            let (contents, compression) = self.decode_block(piece)?;
            let Some(footer) = self.footer else {
                return Err(Error::corrupt("metaindex before footer", 0));
            };
            let at = footer.metaindex.offset;
            self.filters = read_filter_entries(&contents, at, compression != Compression::None)?;
            self.chosen = self.choose_filter();
            if let Some((_, handle)) = &self.chosen {
                if handle
                    .end_with_trailer()
                    .is_none_or(|end| end > self.file_size)
                {
                    return Err(Error::corrupt("block handle", at));
                }
            }
            self.step = if self.chosen.is_some() {
                Step::Filter
            } else {
                Step::Done
            };
        } else {
            let (contents, _) = self.decode_block(piece)?;
            if let Some((policy, handle)) = self.chosen.take() {
                self.filter_size = handle.size;
                self.filter = Some(LoadedFilter {
                    policy,
                    data: Arc::from(&*contents),
                });
            }
            self.step = Step::Done;
        }
        Ok(())
    }

    /// Decodes the stored block (with its trailer) of the current step.
    fn decode_block<'p>(&self, piece: &'p [u8]) -> Result<(Cow<'p, [u8]>, Compression)> {
        let Some((handle, _)) = self.block() else {
            return Err(Error::corrupt("block handle", 0));
        };
        let Decode { verify, profile } = self.decode;
        decode_raw(Cow::Borrowed(piece), &handle, verify, profile, Vec::new())
    }

    /// The filter gets use: of the first policy in the options (extra policies first) that
    /// the table has a filter for.
    fn choose_filter(&self) -> Option<(Arc<dyn FilterPolicy>, BlockHandle)> {
        let candidates = self
            .options
            .extra_filter_policies
            .iter()
            .chain(self.options.filter_policy.as_ref());
        for policy in candidates {
            if let Some(info) = self.filters.iter().find(|f| f.policy_name == policy.name()) {
                return Some((Arc::clone(policy), info.handle));
            }
        }
        None
    }

    /// The table, reading its data blocks from `source`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the plan still needs bytes; for a malformed index,
    /// what [`Table::open`] reports.
    pub fn finish<R: ReadAt>(self, source: R) -> Result<Table<R>> {
        let (Step::Done, Some(footer), Some((index, compression))) =
            (&self.step, self.footer, self.index)
        else {
            return Err(Error::InvalidArgument(
                "the table's metadata has not all been given".into(),
            ));
        };
        let compressed = compression != Compression::None;
        let layout =
            Layout::parse(&index).map_err(|e| locate(e, footer.index.offset, compressed))?;
        Table::assemble(
            source,
            self.options,
            Opened {
                file_size: self.file_size,
                decode: self.decode,
                footer,
                index,
                index_layout: layout,
                index_compression: compression,
                filters: self.filters,
                filter: self.filter,
                filter_size: self.filter_size,
            },
        )
    }
}

impl<R: ReadAt> Table<R> {
    /// Opens the table in `source`: reads the footer, the index and metaindex blocks, and
    /// the filter block of the first policy in the options (extra policies first) that the
    /// table has a filter for.
    ///
    /// # Errors
    /// [`Error::TooShort`] or [`Error::NotATable`] for a file that is not a table;
    /// [`Error::Corruption`] or [`Error::ChecksumMismatch`] for malformed footer, index,
    /// metaindex or filter blocks; [`Error::Io`] if reading fails.
    pub fn open(source: R, options: ReadOptions) -> Result<Table<R>> {
        let mut plan = OpenPlan::new(source.size()?, options)?;
        while let Some(range) = plan.need() {
            let bytes = read_range(&source, range.clone())?;
            plan.give(range.start, &bytes)?;
        }
        plan.finish(source)
    }
}
