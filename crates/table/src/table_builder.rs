//! Writes a table: data blocks, filter blocks, metaindex, index, footer.
//!
//! With the same entries and options (compression off), the bytes are those LevelDB 1.23's
//! `TableBuilder` writes. Call order: `(add | flush)* (finish | abandon)`.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;
use std::io::{self, Write};
use std::sync::Arc;

use crate::block_builder::BlockBuilder;
use crate::codec::Compressor;
use crate::comparator::{BytewiseComparator, Comparator, is_bytewise};
use crate::filter::{FilterSet, filter_meta_key};
use crate::format::{BlockHandle, BlockTrailer, Compression, Footer, MAX_BLOCK_HANDLE_LEN};
use crate::options::BuildOptions;
use crate::{Error, Result};

/// What [`TableBuilder::finish`] wrote.
///
/// Sizes of blocks are their stored sizes (after compression) without the 5-byte trailer,
/// as in their [`BlockHandle`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildSummary {
    /// Entries added.
    pub entries: u64,
    /// Data blocks written.
    pub data_blocks: u64,
    /// Total length of the keys added.
    pub raw_key_bytes: u64,
    /// Total length of the values added.
    pub raw_value_bytes: u64,
    /// Bytes of the data section: every data block with its trailer.
    pub data_size: u64,
    /// Stored size of the index block.
    pub index_size: u64,
    /// Stored size of all filter blocks together (0 without a filter policy).
    pub filter_size: u64,
    /// Stored size of the metaindex block.
    pub metaindex_size: u64,
    /// Size of the whole table.
    pub file_size: u64,
}

enum State {
    Building,
    Closed,
    /// A write (or the filter builder) failed; the table cannot be completed.
    Failed(io::ErrorKind, String),
}

/// Writes the blocks of a table to `W`, keeping track of the file offset.
struct BlockWriter<W> {
    writer: W,
    offset: u64,
    encoder: snap::raw::Encoder,
    /// Reused output buffer for compression; its length only grows.
    compressed: Vec<u8>,
    /// The other codecs' state.
    codecs: Compressor,
}

impl<W: Write> BlockWriter<W> {
    /// Compresses `raw` if asked and worthwhile, then writes it with its trailer. Returns the
    /// handle and whether the stored form is compressed.
    fn write_block(&mut self, raw: &[u8], compression: Compression) -> io::Result<BlockHandle> {
        if compression == Compression::Snappy {
            let max = snap::raw::max_compress_len(raw.len());
            // max_compress_len is 0 for inputs too large for Snappy: store those raw.
            if max > 0 {
                if self.compressed.len() < max {
                    self.compressed.resize(max, 0);
                }
                if let Ok(n) = self.encoder.compress(raw, &mut self.compressed[..max]) {
                    // Keep the compressed form only if it saves at least 1/8, as LevelDB does.
                    #[expect(clippy::arithmetic_side_effects, reason = "len / 8 <= len")]
                    let worth_it = n < raw.len() - raw.len() / 8;
                    if worth_it {
                        let compressed = std::mem::take(&mut self.compressed);
                        let result = self.write_raw(&compressed[..n], Compression::Snappy);
                        self.compressed = compressed;
                        return result;
                    }
                }
            }
        } else if compression != Compression::None {
            let mut compressed = std::mem::take(&mut self.compressed);
            let kept = self
                .codecs
                .compress(compression, raw, &mut compressed)
                .map_err(|e| {
                    io::Error::other(format!("{compression:?} compression failed: {e:?}"))
                });
            // Kept only if it saves at least 1/8, as LevelDB and Mojang's LevelDB do.
            #[expect(clippy::arithmetic_side_effects, reason = "len / 8 <= len")]
            let result = match kept {
                Ok(true) if compressed.len() < raw.len() - raw.len() / 8 => {
                    Some(self.write_raw(&compressed, compression))
                }
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            };
            self.compressed = compressed;
            if let Some(result) = result {
                return result;
            }
        }
        self.write_raw(raw, Compression::None)
    }

    /// Writes `contents` as stored, then the trailer.
    fn write_raw(&mut self, contents: &[u8], compression: Compression) -> io::Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        let end = handle.end_with_trailer().ok_or_else(offset_overflow)?;
        let trailer = BlockTrailer::for_block(contents, compression).to_bytes();
        self.writer.write_all(contents)?;
        self.writer.write_all(&trailer)?;
        self.offset = end;
        Ok(handle)
    }

    /// Writes `bytes` as they are (the footer).
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let end = self
            .offset
            .checked_add(bytes.len() as u64)
            .ok_or_else(offset_overflow)?;
        self.writer.write_all(bytes)?;
        self.offset = end;
        Ok(())
    }
}

/// A write that would take the table past `u64::MAX` bytes, where block offsets no longer
/// fit the format.
fn offset_overflow() -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        "the table would outgrow 2^64 bytes",
    )
}

impl<W: Write> BlockWriter<W> {}

/// Builds a table from entries added in increasing key order, writing it to `W` as it goes.
///
/// Memory stays at about one data block, the index block and the filter blocks, whatever
/// the table's size. Wrap a `File` in a `BufWriter`: blocks are written with two `write_all`
/// calls each. For a file that appears under its name only when complete, see
/// [`AtomicTableFile`](crate::AtomicTableFile).
///
/// ```
/// use leveltable_table::{BuildOptions, TableBuilder};
/// let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default())?;
/// builder.add(b"apple", b"red")?;
/// builder.add(b"banana", b"yellow")?;
/// assert!(builder.add(b"avocado", b"green").is_err()); // out of order; builder still usable
/// let summary = builder.finish()?;
/// assert_eq!(summary.entries, 2);
/// assert_eq!(builder.into_inner().len() as u64, summary.file_size);
/// # Ok::<(), leveltable_table::Error>(())
/// ```
pub struct TableBuilder<W: Write> {
    out: BlockWriter<W>,
    comparator: Arc<dyn Comparator>,
    bytewise: bool,
    block_size: usize,
    compression: Compression,
    metaindex_restart_interval: usize,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filters: FilterSet,
    /// The last key added; turned into an index separator when its block is closed.
    last_key: Vec<u8>,
    /// We delay the index entry of a block until the first key of the next block is known,
    /// so that its key can be a short separator between the two blocks rather than the
    /// block's last key.
    ///
    /// Invariant: `pending_index_entry` implies `data_block.is_empty()`.
    pending_index_entry: bool,
    pending_handle: BlockHandle,
    /// Reused buffer for encoding handles.
    handle_buf: Vec<u8>,
    summary: BuildSummary,
    state: State,
}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<TableBuilder<Vec<u8>>>();
    assert_send::<TableBuilder<std::io::BufWriter<std::fs::File>>>();
};

impl<W: Write> TableBuilder<W> {
    /// A builder that writes to `writer`, which should be empty: block offsets count from the
    /// first byte written.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `block_restart_interval` is 0 or two filter policies
    /// have the same name; [`Error::CodecNotBuilt`] for a compression whose cargo feature
    /// this build leaves out.
    pub fn new(writer: W, options: BuildOptions) -> Result<TableBuilder<W>> {
        if !options.compression.is_available() {
            return Err(Error::CodecNotBuilt {
                compression: options.compression,
                offset: 0,
            });
        }
        if options.block_restart_interval == 0 {
            return Err(Error::InvalidArgument(
                "block_restart_interval must be at least 1".into(),
            ));
        }
        let filters = FilterSet::new(
            options.filter_policy.as_ref(),
            &options.extra_filter_policies,
        )?;
        Ok(TableBuilder {
            out: BlockWriter {
                writer,
                offset: 0,
                encoder: snap::raw::Encoder::new(),
                compressed: Vec::new(),
                codecs: Compressor::default(),
            },
            bytewise: is_bytewise(&*options.comparator),
            comparator: options.comparator,
            block_size: options.block_size,
            compression: options.compression,
            metaindex_restart_interval: options.block_restart_interval,
            data_block: BlockBuilder::new(options.block_restart_interval),
            index_block: BlockBuilder::new(1),
            filters,
            last_key: Vec::new(),
            pending_index_entry: false,
            pending_handle: BlockHandle::default(),
            handle_buf: Vec::with_capacity(MAX_BLOCK_HANDLE_LEN),
            summary: BuildSummary::default(),
            state: State::Building,
        })
    }

    fn check_building(&self) -> Result<()> {
        match &self.state {
            State::Building => Ok(()),
            State::Closed => Err(Error::InvalidArgument(
                "table builder already finished or abandoned".into(),
            )),
            State::Failed(kind, msg) => Err(Error::Io(io::Error::new(
                *kind,
                format!("an earlier write failed: {msg}"),
            ))),
        }
    }

    /// Records a write failure so that every later call reports it.
    fn fail(&mut self, e: io::Error) -> Error {
        self.state = State::Failed(e.kind(), e.to_string());
        Error::Io(e)
    }

    /// Adds an entry. `key` must sort strictly after the previous key.
    ///
    /// # Errors
    /// - [`Error::KeyOutOfOrder`] if it does not; nothing changes and the builder stays
    ///   usable;
    /// - [`Error::InvalidArgument`] if the key or value is 4 GiB or longer (the format stores
    ///   lengths in 32 bits), or after [`finish`](Self::finish) or [`abandon`](Self::abandon);
    /// - [`Error::Io`] if writing a block fails; the builder then refuses further calls.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_building()?;
        if self.summary.entries > 0 {
            let order = if self.bytewise {
                BytewiseComparator.compare(key, &self.last_key)
            } else {
                self.comparator.compare(key, &self.last_key)
            };
            if order != Ordering::Greater {
                return Err(Error::KeyOutOfOrder {
                    previous: self.last_key.clone(),
                    got: key.to_vec(),
                });
            }
        }
        if u32::try_from(key.len()).is_err() || u32::try_from(value.len()).is_err() {
            return Err(Error::InvalidArgument(
                "keys and values must be shorter than 4 GiB".into(),
            ));
        }
        // Restart offsets are 32-bit: close a block before it could outgrow them. (With any
        // sane block size this never triggers before the size check below.) Saturating: a
        // sum past usize::MAX is past u32::MAX too.
        let worst_entry = key.len().saturating_add(value.len()).saturating_add(15);
        let worst_size = self
            .data_block
            .current_size_estimate()
            .saturating_add(worst_entry);
        if worst_size > u32::MAX as usize {
            self.flush_block()?;
        }

        if self.pending_index_entry {
            debug_assert!(self.data_block.is_empty());
            self.comparator
                .find_shortest_separator(&mut self.last_key, key);
            self.add_pending_index_entry();
        }

        self.filters.add_key(key);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.data_block.add(key, value);
        // The summary's counts of what was added saturate: the raw bytes are not bounded by
        // the (compressed) bytes written.
        let summary = &mut self.summary;
        summary.entries = summary.entries.saturating_add(1);
        summary.raw_key_bytes = summary.raw_key_bytes.saturating_add(key.len() as u64);
        summary.raw_value_bytes = summary.raw_value_bytes.saturating_add(value.len() as u64);

        if self.data_block.current_size_estimate() >= self.block_size {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Adds the index entry `last_key → pending_handle` (`last_key` already shortened).
    fn add_pending_index_entry(&mut self) {
        self.handle_buf.clear();
        self.pending_handle.encode_to(&mut self.handle_buf);
        self.index_block.add(&self.last_key, &self.handle_buf);
        self.pending_index_entry = false;
    }

    /// Closes the current data block now, whatever its size (LevelDB's `Flush`): the next
    /// entry starts a new block. Does nothing if the block is empty. Useful to align block
    /// boundaries with something the caller knows, such as key prefixes.
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails; [`Error::InvalidArgument`] after
    /// [`finish`](Self::finish) or [`abandon`](Self::abandon).
    pub fn flush(&mut self) -> Result<()> {
        self.check_building()?;
        self.flush_block()
    }

    /// Writes the current data block, if any, and starts the next filter.
    fn flush_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        debug_assert!(!self.pending_index_entry);
        let written = self
            .out
            .write_block(self.data_block.finish(), self.compression);
        self.data_block.reset();
        let handle = written.map_err(|e| self.fail(e))?;
        self.pending_handle = handle;
        self.pending_index_entry = true;
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "every data block written takes at least its 5-byte trailer of the offset, \
                      a u64"
        )]
        {
            self.summary.data_blocks += 1;
        }
        if let Err(e) = self.filters.start_block(self.out.offset) {
            // The filters can no longer describe the table: refuse to go on.
            self.state = State::Failed(io::ErrorKind::Other, e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Writes the last data block, the filter blocks, the metaindex and index blocks and the
    /// footer, then flushes the writer.
    ///
    /// # Errors
    /// [`Error::Io`] if writing fails; [`Error::InvalidArgument`] if the builder was already
    /// finished or abandoned.
    pub fn finish(&mut self) -> Result<BuildSummary> {
        self.check_building()?;
        let result = self.write_tail();
        if result.is_ok() {
            self.state = State::Closed;
        }
        result
    }

    fn write_tail(&mut self) -> Result<BuildSummary> {
        self.flush_block()?;
        self.summary.data_size = self.out.offset;

        let mut filter_handles = Vec::new();
        for (name, block) in self.filters.finish() {
            let handle = self
                .out
                .write_raw(&block, Compression::None)
                .map_err(|e| self.fail(e))?;
            #[expect(
                clippy::arithmetic_side_effects,
                reason = "the filter blocks are written one after another, so their sizes add \
                          up to at most the offset, a u64"
            )]
            {
                self.summary.filter_size += handle.size;
            }
            filter_handles.push((filter_meta_key(&name), handle));
        }

        // Metaindex keys are in bytewise order whatever the table's comparator.
        filter_handles.sort_by(|a, b| a.0.cmp(&b.0));
        let mut metaindex = BlockBuilder::new(self.metaindex_restart_interval);
        for (key, handle) in &filter_handles {
            self.handle_buf.clear();
            handle.encode_to(&mut self.handle_buf);
            metaindex.add(key.as_bytes(), &self.handle_buf);
        }
        let metaindex_handle = self
            .out
            .write_block(metaindex.finish(), self.compression)
            .map_err(|e| self.fail(e))?;

        if self.pending_index_entry {
            self.comparator.find_short_successor(&mut self.last_key);
            self.add_pending_index_entry();
        }
        let written = self
            .out
            .write_block(self.index_block.finish(), self.compression);
        let index_handle = written.map_err(|e| self.fail(e))?;

        let mut footer = Vec::with_capacity(crate::format::FOOTER_LEN);
        Footer {
            metaindex: metaindex_handle,
            index: index_handle,
        }
        .encode_to(&mut footer);
        let written = self
            .out
            .write_all(&footer)
            .and_then(|()| self.out.writer.flush());
        written.map_err(|e| self.fail(e))?;

        self.summary.metaindex_size = metaindex_handle.size;
        self.summary.index_size = index_handle.size;
        self.summary.file_size = self.out.offset;
        Ok(self.summary)
    }

    /// Stops building: nothing more is written (what was written stays in the writer).
    pub fn abandon(&mut self) {
        self.state = State::Closed;
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.summary.entries
    }

    /// Bytes written so far (the table's size once finished).
    pub fn file_size(&self) -> u64 {
        self.out.offset
    }

    /// The writer.
    pub fn get_ref(&self) -> &W {
        &self.out.writer
    }

    /// The writer, mutably. Writing to it directly corrupts the table.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out.writer
    }

    /// Gives back the writer (after [`finish`](Self::finish), it holds the table).
    pub fn into_inner(self) -> W {
        self.out.writer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
    use leveltable_filter_policy::BloomFilterPolicy;

    #[test]
    fn empty_table_bytes() {
        let mut b = TableBuilder::new(
            Vec::new(),
            BuildOptions::default().compression(Compression::None),
        )
        .unwrap();
        let s = b.finish().unwrap();
        let bytes = b.into_inner();
        // Empty metaindex block (8 bytes + trailer), empty index block (same), footer.
        assert_eq!(bytes.len(), 2 * (8 + BLOCK_TRAILER_LEN) + FOOTER_LEN);
        assert_eq!(s.file_size, bytes.len() as u64);
        assert_eq!((s.entries, s.data_blocks, s.data_size), (0, 0, 0));
        assert_eq!((s.metaindex_size, s.index_size, s.filter_size), (8, 8, 0));
        assert_eq!(&bytes[..8], &[0, 0, 0, 0, 1, 0, 0, 0]);
        // Footer: metaindex (0, 8), index (13, 8).
        assert_eq!(&bytes[26..30], &[0, 8, 13, 8]);
    }

    #[test]
    fn out_of_order_keeps_builder_usable() {
        let mut b = TableBuilder::new(Vec::new(), BuildOptions::default()).unwrap();
        b.add(b"b", b"1").unwrap();
        for bad in [&b"a"[..], b"b", b""] {
            match b.add(bad, b"x") {
                Err(Error::KeyOutOfOrder { previous, got }) => {
                    assert_eq!(previous, b"b");
                    assert_eq!(got, bad);
                }
                other => panic!("{other:?}"),
            }
        }
        b.add(b"c", b"2").unwrap();
        assert_eq!(b.num_entries(), 2);
        let s = b.finish().unwrap();
        assert_eq!(s.entries, 2);
        assert_eq!(s.raw_key_bytes, 2);
        let err = b.add(b"d", b"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "table: invalid argument: table builder already finished or abandoned"
        );
        assert!(b.finish().is_err());
    }

    #[test]
    fn flush_cuts_blocks_where_asked() {
        let mut b = TableBuilder::new(Vec::new(), BuildOptions::default()).unwrap();
        b.flush().unwrap(); // nothing to flush
        for prefix in ["a", "b", "c"] {
            for i in 0..3 {
                b.add(format!("{prefix}{i}").as_bytes(), b"v").unwrap();
            }
            b.flush().unwrap();
        }
        let s = b.finish().unwrap();
        assert_eq!(s.data_blocks, 3);
        assert!(b.flush().is_err());
    }

    #[test]
    fn zero_restart_interval_is_invalid() {
        let err = TableBuilder::new(
            Vec::new(),
            BuildOptions::default().block_restart_interval(0),
        )
        .err()
        .unwrap();
        assert!(matches!(err, Error::InvalidArgument(_)));
    }

    #[test]
    fn block_size_zero_makes_one_block_per_entry() {
        let mut b = TableBuilder::new(Vec::new(), BuildOptions::default().block_size(0)).unwrap();
        for i in 0..10u8 {
            b.add(&[i], &[i]).unwrap();
        }
        let s = b.finish().unwrap();
        assert_eq!(s.data_blocks, 10);
    }

    /// A writer that fails once more than `limit` bytes were written.
    struct FailAfter {
        written: usize,
        limit: usize,
    }

    impl Write for FailAfter {
        #[expect(clippy::arithmetic_side_effects, reason = "test sizes")]
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.written + buf.len() > self.limit {
                return Err(io::Error::other("disk full"));
            }
            self.written += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_surface_and_stick() {
        let options = BuildOptions::default()
            .block_size(64)
            .filter_policy(BloomFilterPolicy::new(10));
        // Find the full size first, then fail at every earlier byte count.
        let mut full = TableBuilder::new(Vec::new(), options.clone()).unwrap();
        for i in 0..50u32 {
            full.add(format!("{i:04}").as_bytes(), b"value").unwrap();
        }
        let size = full.finish().unwrap().file_size as usize;
        for limit in (0..size).step_by(7) {
            let mut b =
                TableBuilder::new(FailAfter { written: 0, limit }, options.clone()).unwrap();
            let mut failed = false;
            for i in 0..50u32 {
                if b.add(format!("{i:04}").as_bytes(), b"value").is_err() {
                    failed = true;
                    break;
                }
            }
            let err = if failed {
                b.add(b"9999", b"").unwrap_err()
            } else {
                b.finish().unwrap_err()
            };
            assert!(matches!(err, Error::Io(_)), "{err}");
            let again = b.finish().unwrap_err();
            assert!(again.to_string().contains("disk full"), "{again}");
        }
    }

    #[test]
    fn summary_sizes_add_up() {
        let options = BuildOptions::default()
            .block_size(256)
            .filter_policy(BloomFilterPolicy::new(10));
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for i in 0..1000u32 {
            b.add(format!("key{i:06}").as_bytes(), &[b'x'; 20]).unwrap();
        }
        let s = b.finish().unwrap();
        assert_eq!(s.file_size, b.file_size());
        let trailers = 3 * BLOCK_TRAILER_LEN as u64;
        assert_eq!(
            s.data_size
                + s.filter_size
                + s.metaindex_size
                + s.index_size
                + trailers
                + FOOTER_LEN as u64,
            s.file_size
        );
        assert_eq!(s.raw_key_bytes, 9000);
        assert_eq!(s.raw_value_bytes, 20000);
        assert!(s.data_blocks > 10);
    }

    /// A block or footer that would end past `u64::MAX` bytes is an error before anything is
    /// written, not a wrapped offset (or an overflow panic).
    #[test]
    fn writes_past_u64_max_are_refused() {
        let mut out = BlockWriter {
            writer: Vec::new(),
            offset: u64::MAX - 8,
            encoder: snap::raw::Encoder::new(),
            compressed: Vec::new(),
            codecs: Compressor::default(),
        };
        let err = out.write_raw(b"1234", Compression::None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        let err = out.write_all(&[0; 9]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(out.writer.is_empty());
        assert_eq!(out.offset, u64::MAX - 8);
        // What still fits is written.
        let handle = out.write_raw(b"123", Compression::None).unwrap();
        assert_eq!(handle, BlockHandle::new(u64::MAX - 8, 3));
        assert_eq!(out.offset, u64::MAX);
        out.write_all(&[]).unwrap();
        assert_eq!(out.writer.len(), 3 + BLOCK_TRAILER_LEN);
    }
}
