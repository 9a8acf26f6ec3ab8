//! The data blocks one by one, each with its own outcome: for reading what can be read of a
//! damaged table (LevelDB's `RepairDB` scans a table this way) and for tools that walk a
//! table's blocks. A handle that does not decode, or a block that cannot be read, is an
//! error for that block alone; the next one is still listed.

#![deny(clippy::arithmetic_side_effects)]

use crate::block::Cursor;
use crate::block_plan::DecodedBlock;
use crate::format::BlockHandle;
use crate::read_block::read_raw;
use crate::{ReadAt, Result, Table};

/// The data blocks of a table in file order, as the index lists them; see
/// [`Table::data_blocks`].
pub struct DataBlocks<'t, R: ReadAt> {
    table: &'t Table<R>,
    index: Cursor,
    /// The index cursor's error has been reported (or there was none): the listing is over.
    ended: bool,
}

impl<R: ReadAt> std::fmt::Debug for DataBlocks<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataBlocks")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<R: ReadAt> Iterator for DataBlocks<'_, R> {
    type Item = Result<BlockHandle>;

    fn next(&mut self) -> Option<Result<BlockHandle>> {
        let bytes = &self.table.index.bytes;
        if self.index.valid() {
            let entry = self.index.entry_offset();
            let handle = BlockHandle::decode_from(&mut self.index.value(bytes))
                .map_err(|e| self.table.locate_in_index(e, entry));
            self.index.next(bytes);
            return Some(handle);
        }
        if self.ended {
            return None;
        }
        self.ended = true;
        self.index
            .status()
            .err()
            .map(|e| Err(self.table.locate_index_error(e)))
    }
}

impl<R: ReadAt> Table<R> {
    /// The handles of the data blocks, in file order. An index entry whose handle does not
    /// decode is an `Err` item and the listing goes on; an index that breaks off ends it
    /// with an `Err` item. Reads nothing.
    pub fn data_blocks(&self) -> DataBlocks<'_, R> {
        let mut index = Cursor::new(self.index.layout, Vec::new());
        index.seek_to_first(&self.index.bytes);
        DataBlocks {
            table: self,
            index,
            ended: false,
        }
    }

    /// Reads the data block `handle` points to from the table's source and decodes it (its
    /// checksum checked if the read options ask, decompressed), for
    /// [`entries_of_decoded`](Self::entries_of_decoded), which gives its entries up to any
    /// break in the block. The cache is consulted and filled as for a get.
    ///
    /// # Errors
    /// [`Error::Corruption`](crate::Error::Corruption) for a handle outside the file or bad
    /// block bytes, [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch),
    /// [`Error::Io`](crate::Error::Io).
    pub fn read_block(&self, handle: &BlockHandle) -> Result<DecodedBlock> {
        let index_at = self.properties.footer.index.offset;
        let stored = read_raw(&self.source, self.file_size, handle, index_at)?;
        self.decode_block(handle, &stored)
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use crate::{BuildOptions, Compression, Error, ReadOptions, Table, TableBuilder};

    fn table_bytes() -> Vec<u8> {
        let options = BuildOptions::default()
            .compression(Compression::None)
            .block_size(128);
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for i in 0..500u32 {
            b.add(format!("k{i:05}").as_bytes(), b"value").unwrap();
        }
        b.finish().unwrap();
        b.into_inner()
    }

    fn entries(t: &Table<Vec<u8>>) -> (Vec<Vec<u8>>, usize) {
        let (mut keys, mut bad) = (Vec::new(), 0);
        for handle in t.data_blocks() {
            let block = handle.and_then(|h| t.read_block(&h));
            let read = block.and_then(|b| {
                t.entries_of_decoded(&b, |k, _| {
                    keys.push(k.to_vec());
                    true
                })
            });
            bad += usize::from(read.is_err());
        }
        (keys, bad)
    }

    #[test]
    fn every_block_in_order() {
        let t = Table::open(table_bytes(), ReadOptions::default()).unwrap();
        let (keys, bad) = entries(&t);
        assert_eq!(bad, 0);
        let want: Vec<Vec<u8>> = (0..500u32)
            .map(|i| format!("k{i:05}").into_bytes())
            .collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn a_damaged_block_costs_that_block_only() {
        let clean = table_bytes();
        let t = Table::open(clean.clone(), ReadOptions::default()).unwrap();
        let second = t.data_blocks().nth(1).unwrap().unwrap();
        let mut bytes = clean;
        bytes[second.offset as usize + 2] ^= 0x40;
        let t = Table::open(bytes, ReadOptions::default()).unwrap();
        let (keys, bad) = entries(&t);
        assert_eq!(bad, 1);
        let first = t.read_block(&t.data_blocks().next().unwrap().unwrap());
        assert!(first.is_ok());
        assert!(matches!(
            t.read_block(&second),
            Err(Error::ChecksumMismatch { .. })
        ));
        // Everything but the damaged block's entries.
        assert!(keys.len() < 500 && keys.len() > 400, "{}", keys.len());
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }
}
