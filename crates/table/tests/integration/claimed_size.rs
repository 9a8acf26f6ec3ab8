//! A source whose size is a claim (a server's `Content-Length`) and whose footer points at
//! blocks as large as that claim: opening fails on the bytes that do not arrive, having
//! allocated no more than a step ahead of them.

use std::io;
use std::sync::Mutex;

use leveltable_table::format::{BlockHandle, Footer};
use leveltable_table::{ReadAt, ReadOptions, Table};

/// Claims a terabyte; holds a footer at its end and 1 MiB of zeros at its start; records
/// the largest buffer a read asked to fill.
struct Claims {
    footer: Vec<u8>,
    largest_read: Mutex<usize>,
}

const CLAIMED: u64 = 1 << 40;
const HELD: u64 = 1 << 20;

impl ReadAt for Claims {
    fn size(&self) -> io::Result<u64> {
        Ok(CLAIMED)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut largest = self.largest_read.lock().unwrap();
        *largest = (*largest).max(buf.len());
        let footer_at = CLAIMED - self.footer.len() as u64;
        if offset >= footer_at {
            let start = (offset - footer_at) as usize;
            buf.copy_from_slice(&self.footer[start..start + buf.len()]);
            return Ok(());
        }
        if offset + buf.len() as u64 <= HELD {
            buf.fill(0);
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the body ended",
        ))
    }
}

#[test]
fn a_block_as_large_as_a_claimed_size_is_read_in_steps() {
    let huge = BlockHandle {
        offset: 0,
        size: CLAIMED / 2,
    };
    let mut footer = Vec::new();
    Footer {
        metaindex: huge,
        index: huge,
    }
    .encode_to(&mut footer);
    let source = Claims {
        footer,
        largest_read: Mutex::new(0),
    };
    let err = Table::open(&source, ReadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("the body ended"), "{err}");
    let largest = *source.largest_read.lock().unwrap();
    assert!(
        largest <= 4 << 20,
        "a read asked for {largest} bytes at once"
    );
}
