//! Reading what can be read of a damaged table, block by block, as `RepairDB`'s scan does:
//! the footer and the index must be readable; each data block that cannot be read or
//! decoded is skipped, and a block that breaks off mid-way keeps the entries before the
//! break. Checksums are not checked (`RepairDB` reads with LevelDB's default read options).

use std::fs::File;
use std::path::Path;

use leveltable_table::block::Block;
use leveltable_table::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer};
use leveltable_table::{Comparator, Compression, Profile, ReadAt, codec};

/// What a scan recovered.
pub(crate) struct Scan {
    /// Entries of the readable blocks, in file order.
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Data blocks skipped or broken off.
    pub(crate) damaged_blocks: u64,
}

/// The contents of the block at `handle`, decompressed; `None` if they cannot be read.
fn read_block(file: &File, size: u64, handle: &BlockHandle) -> Option<Vec<u8>> {
    // Validate the handle against the file before the layout math.
    let end = handle.end_with_trailer()?;
    if end > size {
        return None;
    }
    let len = usize::try_from(handle.size).ok()?;
    let mut raw = vec![0u8; len.checked_add(BLOCK_TRAILER_LEN)?];
    file.read_exact_at(&mut raw, handle.offset).ok()?;
    let block_type = raw[len];
    raw.truncate(len);
    // Any writer's blocks (Mojang's zlib and raw deflate too), with the table reader's
    // bound on the decompressed size.
    match Profile::Auto.compression(block_type, &raw)? {
        Compression::None => Some(raw),
        compression => {
            let mut out = Vec::new();
            codec::decompress(compression, &raw, &mut out).ok()?;
            Some(out)
        }
    }
}

/// Scans the table at `path` with the internal comparator `icmp`; `None` if its footer or
/// index cannot be read (the table is lost, as `RepairDB` drops it).
pub(crate) fn scan_table(path: &Path, icmp: &dyn Comparator) -> Option<Scan> {
    let (file, _) = crate::storage::open_regular(path).ok()?;
    let size = file.size().ok()?;
    let footer_at = size.checked_sub(FOOTER_LEN as u64)?;
    let mut footer = [0u8; FOOTER_LEN];
    file.read_exact_at(&mut footer, footer_at).ok()?;
    let footer = Footer::decode_from(&mut &footer[..]).ok()?;
    let index_bytes = read_block(&file, size, &footer.index)?;
    let index = Block::new(&index_bytes).ok()?;
    let mut scan = Scan {
        entries: Vec::new(),
        damaged_blocks: 0,
    };
    let mut it = index.iter(icmp);
    it.seek_to_first();
    while it.valid() {
        let handle = BlockHandle::decode_from(&mut it.value()).ok();
        let data = handle.and_then(|h| read_block(&file, size, &h));
        match data.as_deref().map(Block::new) {
            Some(Ok(block)) => {
                let mut entries = block.iter(icmp);
                entries.seek_to_first();
                while entries.valid() {
                    scan.entries
                        .push((entries.key().to_vec(), entries.value().to_vec()));
                    entries.next();
                }
                if entries.status().is_err() {
                    scan.damaged_blocks += 1;
                }
            }
            _ => scan.damaged_blocks += 1,
        }
        it.next();
    }
    Some(scan)
}
