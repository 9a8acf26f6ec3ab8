//! Positional reads: the small trait [`Table`](crate::Table) reads through.
//!
//! [`ReadAt`] is implemented for `std::fs::File` (`pread`), for bytes in memory (`[u8]`,
//! `Vec<u8>`, and through the forwarding impls `&[u8]`, `Box<[u8]>`, `Arc<[u8]>`), for
//! `bytes::Bytes` (feature `bytes`) and for `memmap2::Mmap` (feature `mmap`). In-memory
//! sources hand out their bytes directly, so reading an uncompressed block copies nothing.

use std::fs::File;
use std::io;
use std::sync::Arc;

/// The message of the [`io::ErrorKind::UnexpectedEof`] error a [`File`] gives for a read
/// past its end. A table checks every block handle against the file size it saw when it
/// opened, so such a read means the file shrank since: it changed while being read.
pub const FILE_SHRANK: &str = "table is shorter than its footer says: file changed while reading?";

/// A byte source that can be read at any offset from many threads at once.
pub trait ReadAt: Send + Sync {
    /// The source's size in bytes.
    ///
    /// # Errors
    /// Whatever the underlying source reports.
    fn size(&self) -> io::Result<u64>;

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// # Errors
    /// [`io::ErrorKind::UnexpectedEof`] if the range runs past the end; any error of the
    /// underlying source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// All the bytes, if the source holds them in memory. Readers then borrow blocks instead
    /// of copying them. Default: `None`.
    fn as_bytes(&self) -> Option<&[u8]> {
        None
    }

    /// Hints that the bytes at `offset..offset + len` are about to be read in order, as a
    /// forward scan reads them. A memory map maps them in ahead of the reads (on Linux): left
    /// to the reads, each fault would stop the scan where it stands, and the cursor's
    /// prefetches of pages not yet mapped do nothing. The range may run past the end.
    /// Default: nothing.
    fn will_read(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// Reads `buf.len()` bytes at `offset` from an in-memory source.
fn read_slice_at(src: &[u8], buf: &mut [u8], offset: u64) -> io::Result<()> {
    let start = usize::try_from(offset).ok();
    let range = start.and_then(|s| Some(s..s.checked_add(buf.len())?));
    match range.and_then(|r| src.get(r)) {
        Some(bytes) => {
            buf.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "read past the end of the source",
        )),
    }
}

/// The stride at which [`ReadAt::will_read`] reads a memory map: Linux's default
/// `fault_around_bytes`. Measured against `MADV_POPULATE_READ` over the same windows, whose
/// per-page bookkeeping (`get_user_pages`) cost more than the faults it spares: forward
/// scans of a mapped 108 MB table, uncompressed 5.6–6.1 → 6.7–7.5 GB/s, snappy 4.5–4.6 →
/// 4.7–4.9 GB/s (`read_loop scan-none`, `scan-snappy`).
#[cfg(all(feature = "mmap", target_os = "linux"))]
const FAULT_AROUND: usize = 64 << 10;

/// Implements [`ReadAt`] for types holding their bytes in memory: reads copy from them, and
/// readers borrow blocks from [`as_bytes`](ReadAt::as_bytes). A type may add methods of its
/// own in braces.
macro_rules! read_at_in_memory {
    ($($(#[$attr:meta])* $ty:ty $({ $($extra:item)* })?),* $(,)?) => {$(
        $(#[$attr])*
        impl ReadAt for $ty {
            fn size(&self) -> io::Result<u64> {
                Ok(self.len() as u64)
            }
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                read_slice_at(self, buf, offset)
            }
            fn as_bytes(&self) -> Option<&[u8]> {
                Some(self)
            }
            $($($extra)*)?
        }
    )*};
}

read_at_in_memory!(
    [u8],
    Vec<u8>,
    #[cfg(feature = "bytes")]
    bytes::Bytes,
    #[cfg(feature = "mmap")]
    memmap2::Mmap {
        fn will_read(&self, offset: u64, len: u64) {
            #[cfg(target_os = "linux")]
            {
                let Ok(offset) = usize::try_from(offset) else {
                    return;
                };
                let len = usize::try_from(len)
                    .unwrap_or(usize::MAX)
                    .min(self.len().saturating_sub(offset));
                // One read in each aligned FAULT_AROUND bytes the range touches: a read of a
                // page not yet mapped faults, and the fault maps the pages of that aligned
                // stretch the page cache holds (Linux's fault-around, 64 KiB unless
                // configured otherwise). The reads are of bytes the map holds, as the
                // scan's own reads will be (a file shrunk under its map faults here as it
                // would there: see `memory_map(false)` in the database crate).
                let end = offset.saturating_add(len);
                let mut at = offset;
                while let Some(&byte) = self.get(at).filter(|_| at < end) {
                    std::hint::black_box(byte);
                    at = (at / FAULT_AROUND).saturating_add(1).saturating_mul(FAULT_AROUND);
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = (offset, len);
        }
    },
);

macro_rules! forward_read_at {
    ($($ptr:ty),*) => {$(
        impl<T: ReadAt + ?Sized> ReadAt for $ptr {
            #[inline]
            fn size(&self) -> io::Result<u64> {
                (**self).size()
            }
            #[inline]
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_exact_at(buf, offset)
            }
            #[inline]
            fn as_bytes(&self) -> Option<&[u8]> {
                (**self).as_bytes()
            }
            #[inline]
            fn will_read(&self, offset: u64, len: u64) {
                (**self).will_read(offset, len);
            }
        }
    )*};
}

forward_read_at!(&T, Box<T>, Arc<T>);

impl ReadAt for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    #[cfg(unix)]
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        // std's read_exact_at would say `failed to fill whole buffer`; say why instead.
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, FILE_SHRANK)),
                Ok(n) => {
                    buf = &mut buf[n..];
                    // Cannot overflow: `n` bytes were read at `offset`, so the file holds
                    // them, and a file's size is a u64.
                    offset = offset.saturating_add(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    #[cfg(windows)]
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match self.seek_read(buf, offset) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, FILE_SHRANK)),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset = offset.saturating_add(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    #[cfg(not(any(unix, windows)))]
    fn read_exact_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "positional file reads are not supported on this platform",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_read_exactly() {
        let data: Vec<u8> = (0..10).collect();
        let mut buf = [0u8; 3];
        data.read_exact_at(&mut buf, 7).unwrap();
        assert_eq!(buf, [7, 8, 9]);
        let e = data.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let e = data.read_exact_at(&mut buf, u64::MAX).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let arc: Arc<[u8]> = data.clone().into();
        assert_eq!(arc.size().unwrap(), 10);
        assert_eq!(arc.as_bytes(), Some(&data[..]));
        let slice: &[u8] = &data;
        assert_eq!(ReadAt::size(&slice).unwrap(), 10);
    }

    #[cfg(feature = "bytes")]
    #[test]
    fn bytes_are_a_source() {
        let data = bytes::Bytes::from_static(b"0123456789");
        let mut buf = [0u8; 2];
        data.read_exact_at(&mut buf, 8).unwrap();
        assert_eq!(&buf, b"89");
        assert_eq!(data.as_bytes(), Some(&b"0123456789"[..]));
    }

    #[cfg(feature = "mmap")]
    #[test]
    fn maps_are_a_source() {
        // An anonymous map is safe to create; a file map needs `unsafe` from the caller.
        let mut map = memmap2::MmapMut::map_anon(10).unwrap();
        map.copy_from_slice(b"0123456789");
        let map = map.make_read_only().unwrap();
        let mut buf = [0u8; 3];
        map.read_exact_at(&mut buf, 1).unwrap();
        assert_eq!(&buf, b"123");
        assert_eq!(ReadAt::size(&map).unwrap(), 10);
        assert!(map.read_exact_at(&mut buf, 9).is_err());
    }

    #[test]
    #[cfg(feature = "mmap")]
    fn maps_take_read_hints_anywhere() {
        let mut map = memmap2::MmapMut::map_anon(3 * 4096 + 10).unwrap();
        for (i, b) in map.iter_mut().enumerate() {
            *b = i as u8;
        }
        let map = map.make_read_only().unwrap();
        let len = map.len() as u64;
        // Within, across the end, past it, unaligned, empty and absurd ranges: hints only.
        for (offset, n) in [
            (0, len),
            (4095, 2),
            (5000, 1 << 40),
            (len, 1),
            (len + 4096, 10),
            (7, 0),
            (u64::MAX, u64::MAX),
        ] {
            map.will_read(offset, n);
        }
        let mut buf = vec![0u8; map.len()];
        map.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    #[test]
    fn files_read_at_offsets() {
        let mut f = tempfile::tempfile().unwrap();
        io::Write::write_all(&mut f, b"0123456789").unwrap();
        let mut buf = [0u8; 4];
        f.read_exact_at(&mut buf, 3).unwrap();
        assert_eq!(&buf, b"3456");
        assert_eq!(ReadAt::size(&f).unwrap(), 10);
        assert!(f.as_bytes().is_none());
        let e = f.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(e.to_string(), FILE_SHRANK);
    }
}
