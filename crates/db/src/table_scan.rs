//! Reading what can be read of a damaged table, block by block, as `RepairDB`'s scan does:
//! the footer and the index must be readable; each data block that cannot be read or
//! decoded is skipped, and a block that breaks off mid-way keeps the entries before the
//! break. Checksums are not checked and a damaged metaindex is passed over (`RepairDB` reads
//! with LevelDB's default read options, and its `Table::Open` ignores meta errors); a repair
//! checks them, and keeps where each block lost lies.

use std::sync::Arc;

use leveltable_table::{Comparator, Profile, Table};

use crate::dbformat::ldb_read_options_for;
use crate::storage::Storage;
use crate::table_source::TableSource;

/// What a scan recovered.
pub(crate) struct Scan {
    /// Entries of the readable blocks, in file order.
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Data blocks skipped or broken off.
    pub(crate) damaged_blocks: u64,
    /// Each data block in file order: where it is (`None` for a handle that does not
    /// decode), and the index in `entries` of its first entry and one past its last read;
    /// `lost` for a block skipped or broken off.
    pub(crate) blocks: Vec<ScannedBlock>,
    /// With checksums checked: the entries of the blocks whose checksum failed, read
    /// without it (they may be garbled).
    pub(crate) suspect: Vec<(Vec<u8>, Vec<u8>)>,
    /// The size of the table's file.
    pub(crate) file_size: u64,
}

/// One data block of a scan.
pub(crate) struct ScannedBlock {
    /// Offset and stored size, if its handle decodes.
    pub(crate) handle: Option<(u64, u64)>,
    /// Its entries in [`Scan::entries`].
    pub(crate) entries: std::ops::Range<usize>,
    /// Skipped or broken off (the entries before a break are kept).
    pub(crate) lost: bool,
}

/// Scans the table file `name` of `storage`, a table of the database whose user comparator
/// is `user`; `None` if it cannot be opened or its footer or index cannot be read (the
/// table is lost, as `RepairDB` drops it). With `verify` (a repair), each data block's
/// checksum is checked: a block whose checksum fails is lost.
pub(crate) fn scan_table(
    storage: &dyn Storage,
    name: &str,
    user: Arc<dyn Comparator>,
    verify: bool,
) -> Option<Scan> {
    let file = storage.open_table(name, false).ok()?;
    // Any writer's blocks (Mojang's zlib and raw deflate too), with the table reader's
    // bound on the decompressed size; no filter is needed to read every block.
    let mut options = ldb_read_options_for(user)
        .verify_checksums(verify)
        .profile(Profile::Auto)
        .fill_cache(false)
        .ignore_meta_errors(true);
    options.filter_policy = None;
    options.extra_filter_policies.clear();
    let table = Table::open(file, options.clone()).ok()?;
    // Blocks whose checksum fails are read again without it, from a second reader.
    let loose = || {
        let file = storage.open_table(name, false).ok()?;
        Table::open(file, options.clone().verify_checksums(false)).ok()
    };
    let mut loose_table: Option<Option<Table<TableSource>>> = None;
    let mut scan = Scan {
        entries: Vec::new(),
        damaged_blocks: 0,
        blocks: Vec::new(),
        suspect: Vec::new(),
        file_size: table.properties().file_size,
    };
    for handle in table.data_blocks() {
        let start = scan.entries.len();
        let at = handle.as_ref().ok().map(|h| (h.offset, h.size));
        let read = handle.and_then(|h| table.read_block(&h)).and_then(|block| {
            table.entries_of_decoded(&block, |k, v| {
                scan.entries.push((k.to_vec(), v.to_vec()));
                true
            })
        });
        if read.is_err() {
            scan.damaged_blocks += 1;
            if verify
                && let Some((offset, size)) = at
                && let Some(loose) = loose_table.get_or_insert_with(loose)
            {
                let handle = leveltable_table::format::BlockHandle { offset, size };
                let suspect = &mut scan.suspect;
                let _ = loose.read_block(&handle).and_then(|block| {
                    loose.entries_of_decoded(&block, |k, v| {
                        suspect.push((k.to_vec(), v.to_vec()));
                        true
                    })
                });
            }
        }
        scan.blocks.push(ScannedBlock {
            handle: at,
            entries: start..scan.entries.len(),
            lost: read.is_err(),
        });
    }
    Some(scan)
}
