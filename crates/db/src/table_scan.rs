//! Reading what can be read of a damaged table, block by block, as `RepairDB`'s scan does:
//! the footer and the index must be readable; each data block that cannot be read or
//! decoded is skipped, and a block that breaks off mid-way keeps the entries before the
//! break. Checksums are not checked and a damaged metaindex is passed over (`RepairDB` reads
//! with LevelDB's default read options, and its `Table::Open` ignores meta errors).

use std::path::Path;
use std::sync::Arc;

use leveltable_table::{Comparator, Profile, Table};

use crate::dbformat::ldb_read_options_for;

/// What a scan recovered.
pub(crate) struct Scan {
    /// Entries of the readable blocks, in file order.
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Data blocks skipped or broken off.
    pub(crate) damaged_blocks: u64,
}

/// Scans the table at `path`, a table of the database whose user comparator is `user`;
/// `None` if its footer or index cannot be read (the table is lost, as `RepairDB` drops it).
pub(crate) fn scan_table(path: &Path, user: Arc<dyn Comparator>) -> Option<Scan> {
    let (file, _) = crate::storage::open_regular(path).ok()?;
    // Any writer's blocks (Mojang's zlib and raw deflate too), with the table reader's
    // bound on the decompressed size; no filter is needed to read every block.
    let mut options = ldb_read_options_for(user)
        .verify_checksums(false)
        .profile(Profile::Auto)
        .fill_cache(false)
        .ignore_meta_errors(true);
    options.filter_policy = None;
    options.extra_filter_policies.clear();
    let table = Table::open(file, options).ok()?;
    let mut scan = Scan {
        entries: Vec::new(),
        damaged_blocks: 0,
    };
    for handle in table.data_blocks() {
        let read = handle.and_then(|h| table.read_block(&h)).and_then(|block| {
            table.entries_of_decoded(&block, |k, v| {
                scan.entries.push((k.to_vec(), v.to_vec()));
                true
            })
        });
        if read.is_err() {
            scan.damaged_blocks += 1;
        }
    }
    Some(scan)
}
