//! What an open table knows about itself, and the metaindex entries it learns it from.

#![deny(clippy::arithmetic_side_effects)]

use crate::Result;
use crate::block::Block;
use crate::comparator::BytewiseComparator;
use crate::filter::FILTER_META_PREFIX;
use crate::format::{BlockHandle, Footer};
use crate::read_block::locate;

/// Facts about an open table, gathered by [`Table::open`](crate::Table::open).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableProperties {
    /// Size of the file.
    pub file_size: u64,
    /// The footer: where the metaindex and index blocks are.
    pub footer: Footer,
    /// Number of data blocks (entries of the index block).
    pub data_blocks: u64,
    /// Stored bytes of all data blocks, trailers included.
    pub data_size: u64,
    /// Stored size of the index block.
    pub index_size: u64,
    /// Stored size of the metaindex block.
    pub metaindex_size: u64,
    /// Name of the policy whose filter [`Table::get`](crate::Table::get) uses, if any.
    pub filter_policy: Option<String>,
    /// Stored size of that filter block (0 without one).
    pub filter_size: u64,
    /// Every `filter.<name>` entry of the metaindex, in metaindex order, whether or not the
    /// reader knows the policy.
    pub filters: Vec<FilterInfo>,
}

/// One filter block listed in a table's metaindex.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilterInfo {
    /// The policy name (the metaindex key without `filter.`).
    pub policy_name: String,
    /// Where the filter block is.
    pub handle: BlockHandle,
}

/// Lists the `filter.*` entries of a metaindex block.
pub(crate) fn read_filter_entries(
    metaindex: &[u8],
    at: u64,
    compressed: bool,
) -> Result<Vec<FilterInfo>> {
    let block = Block::new(metaindex).map_err(|e| locate(e, at, compressed))?;
    let mut it = block.iter(&BytewiseComparator);
    it.seek(FILTER_META_PREFIX.as_bytes());
    let mut filters = Vec::new();
    while it.valid() {
        let Some(name) = it.key().strip_prefix(FILTER_META_PREFIX.as_bytes()) else {
            break;
        };
        let mut value = it.value();
        let handle = BlockHandle::decode_from(&mut value)
            .map_err(|e| locate(e.at(it.entry_offset() as u64), at, compressed))?;
        filters.push(FilterInfo {
            policy_name: String::from_utf8_lossy(name).into_owned(),
            handle,
        });
        it.next();
    }
    it.status().map_err(|e| locate(e, at, compressed))?;
    Ok(filters)
}
