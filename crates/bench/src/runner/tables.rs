//! The tables the workloads build and read: the entries as fixed-length records, each
//! system's builder and options, and the [`Fixture`] of shared read tables.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{BuildOptions, Cache, Compression, ReadOptions, Table, TableBuilder};

use super::config::{BITS_PER_KEY, Config, Result};
use super::harness::{leveldb_on, peer_error};
use crate::leveldb::{self, Records};
use crate::mmap;
use crate::workload::{KeyShape, VALUE_LEN, table_entries};

/// Keys of a shape and the table values, as fixed-length records.
#[derive(Debug)]
pub struct Entries {
    /// Keys, ascending.
    pub keys: Vec<u8>,
    /// Key length.
    pub key_len: usize,
    /// Values, `VALUE_LEN` bytes each.
    pub values: Vec<u8>,
}

impl Entries {
    /// The benchmark table's `n` entries with keys `2i` of `shape`.
    ///
    /// # Panics
    ///
    /// For a shape without a fixed length.
    pub fn new(n: u64, shape: KeyShape) -> Entries {
        let key_len = shape.fixed_len().expect("bench: fixed-length keys");
        let mut keys = Vec::with_capacity(n as usize * key_len);
        let mut values = Vec::with_capacity(n as usize * VALUE_LEN);
        let mut buf = Vec::new();
        for (i, (_, value)) in table_entries(n).enumerate() {
            shape.key_into(2 * i as u64, &mut buf);
            keys.extend_from_slice(&buf);
            values.extend_from_slice(&value);
        }
        Entries {
            keys,
            key_len,
            values,
        }
    }

    /// The keys.
    pub fn keys(&self) -> Records<'_> {
        Records::new(&self.keys, self.key_len)
    }

    /// The values.
    pub fn values(&self) -> Records<'_> {
        Records::new(&self.values, VALUE_LEN)
    }

    /// Key plus value bytes.
    pub fn raw_bytes(&self) -> u64 {
        (self.keys.len() + self.values.len()) as u64
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keys.len() / self.key_len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Query keys of `shape` for the numbers `ids`, as records.
pub fn shaped_queries(ids: &[u64], shape: KeyShape) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for &j in ids {
        shape.key_into(j, &mut buf);
        out.extend_from_slice(&buf);
    }
    out
}

pub(super) fn sstable_options(
    compression: Compression,
    filter: bool,
    cache_blocks: usize,
) -> sstable::Options {
    let mut opt = sstable::Options::default().with_cache_capacity(cache_blocks.max(1));
    opt.compression_type = match compression {
        Compression::None => sstable::CompressionType::CompressionNone,
        _ => sstable::CompressionType::CompressionSnappy,
    };
    opt.filter_policy = if filter {
        Arc::new(Box::new(sstable::filter::BloomPolicy::new(
            BITS_PER_KEY as u32,
        )))
    } else {
        Arc::new(Box::new(sstable::filter::NoFilterPolicy::new()))
    };
    opt
}

pub(super) fn build_options(compression: Compression) -> BuildOptions {
    BuildOptions::default()
        .compression(compression)
        .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY))
}

/// Builds a leveltable table at `path`.
pub(super) fn build_ours(path: &Path, entries: &Entries, options: BuildOptions) -> Result<u64> {
    let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
    let mut builder = TableBuilder::new(file, options)?;
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v)?;
    }
    builder.finish()?;
    let size = builder.file_size();
    builder.into_inner().flush()?;
    Ok(size)
}

pub(super) fn build_leveldb(path: &Path, entries: &Entries, snappy: bool) -> Result<u64> {
    let mut builder = leveldb::TableBuilder::create(path, snappy, BITS_PER_KEY)?;
    builder.add(entries.keys(), entries.values())?;
    Ok(builder.finish()?)
}

pub(super) fn build_sstable(
    path: &Path,
    entries: &Entries,
    compression: Compression,
) -> Result<u64> {
    let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
    let mut builder = sstable::TableBuilder::new(sstable_options(compression, true, 1), file);
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v).map_err(peer_error)?;
    }
    Ok(builder.finish().map_err(peer_error)? as u64)
}

/// Opens a leveltable table over a map of `path`, without checksums unless asked, with the
/// LevelDB Bloom filter if `filter`.
pub(super) fn open_ours(
    path: &Path,
    filter: bool,
    cache: Option<Arc<Cache>>,
    verify: bool,
) -> Result<Table<memmap2::Mmap>> {
    let mut options = ReadOptions::default().verify_checksums(verify);
    if filter {
        options = options.filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    }
    if let Some(cache) = cache {
        options = options.block_cache(cache);
    }
    Ok(Table::open(mmap::map(path)?, options)?)
}

/// The table files shared by the read workloads, built once per run (untimed), with snappy
/// and without compression.
pub(super) struct Fixture {
    pub(super) entries: Entries,
    /// The tables ours and LevelDB read: written by LevelDB when it is in the build, else by
    /// leveltable. Snappy, then uncompressed.
    shared: [PathBuf; 2],
    /// sstable's own tables, likewise.
    sstable: [PathBuf; 2],
}

impl Fixture {
    pub(super) fn new(config: &Config) -> Result<Fixture> {
        let entries = Entries::new(config.entries, KeyShape::Decimal);
        let mut shared = Vec::new();
        let mut sst = Vec::new();
        for compression in [Compression::Snappy, Compression::None] {
            let label = compression_label(compression);
            let path = config.dir.join(format!("read-shared-{label}.ldb"));
            if leveldb_on() {
                build_leveldb(&path, &entries, compression == Compression::Snappy)?;
            } else {
                build_ours(&path, &entries, build_options(compression))?;
            }
            shared.push(path);
            let path = config.dir.join(format!("read-sstable-{label}.ldb"));
            build_sstable(&path, &entries, compression)?;
            sst.push(path);
        }
        Ok(Fixture {
            entries,
            shared: shared.try_into().expect("two compressions"),
            sstable: sst.try_into().expect("two compressions"),
        })
    }

    /// (the table ours and LevelDB read, sstable's table) for `compression`.
    pub(super) fn paths(&self, compression: Compression) -> (&Path, &Path) {
        let i = usize::from(compression == Compression::None);
        (&self.shared[i], &self.sstable[i])
    }
}

pub(super) fn compression_label(compression: Compression) -> &'static str {
    if compression == Compression::None {
        "uncompressed"
    } else {
        "snappy"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_the_workload_table() {
        let e = Entries::new(3, KeyShape::BigEndianU64);
        assert_eq!(e.len(), 3);
        assert_eq!(e.keys().iter().nth(2), Some(&[0, 0, 0, 0, 0, 0, 0, 4][..]));
        assert_eq!(e.raw_bytes(), 3 * (8 + 100));
    }
}
