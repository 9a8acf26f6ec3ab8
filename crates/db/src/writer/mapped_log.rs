//! A write-ahead log written through a shared memory map (Linux): a record is in the page
//! cache, where it survives the end of the process, as soon as it is copied, without a
//! system call per write. LevelDB wrote its logs this way before 1.13, and its log format
//! keeps room for it: a log reader skips the zeros of a region reserved but not yet
//! written, without reporting them (`kZeroType`).
//!
//! The file grows a window at a time: the next window's blocks are reserved with
//! `fallocate` (so that a full disk is an error there, not a SIGBUS at a later copy), then
//! mapped. Dropping the log cuts the file to what was written; a process killed before
//! that leaves the reserved zeros, which readers skip.

use std::fs::File;
use std::io::{self, Write};

use memmap2::{MmapMut, MmapOptions};

use crate::writer::file_system::WritableFile;

/// Bytes mapped (and reserved) at a time: a multiple of every page size.
const WINDOW: u64 = 1 << 20;

/// A log file written through a map of its last window.
pub(crate) struct MappedLog {
    file: File,
    map: Option<MmapMut>,
    /// Where the map starts in the file.
    map_start: u64,
    /// Bytes written.
    len: u64,
    /// Bytes reserved in the file.
    reserved: u64,
}

/// Maps `len` bytes of `file` from `offset` for writing.
#[allow(
    unsafe_code,
    reason = "memory-mapping a file is unsafe in Rust's terms"
)]
fn map(file: &File, offset: u64, len: u64) -> io::Result<MmapMut> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    // SAFETY: the file is a log this database created (a new regular file, see
    // `create_regular`) and holds under its LOCK: no other program of the format writes
    // it (LevelDB respects the lock), and readers only read.
    // The mapped range lies within the file, whose blocks are reserved (`fallocate`)
    // before it is mapped, so no store through the map can fault for want of space. The
    // map is dropped before the file is cut back to its written length. What the map
    // cannot guard against is another program truncating the log while it is being
    // written, which would end the process with SIGBUS, as LevelDB's mapped logs would.
    unsafe {
        MmapOptions::new()
            .offset(offset)
            .len(len)
            .populate()
            .map_mut(file)
    }
}

impl MappedLog {
    /// Writes `file` (new and empty, open for reading and writing) through maps, if the
    /// file system can reserve blocks.
    ///
    /// # Errors
    /// `Unsupported` where blocks cannot be reserved (the caller writes the file with
    /// `write` instead); the system's error otherwise.
    pub(crate) fn new(file: File) -> io::Result<MappedLog> {
        let mut log = MappedLog {
            file,
            map: None,
            map_start: 0,
            len: 0,
            reserved: 0,
        };
        log.next_window()?;
        Ok(log)
    }

    /// Maps the window holding offset `len`, reserving it first.
    fn next_window(&mut self) -> io::Result<()> {
        let start = self.len / WINDOW * WINDOW;
        let end = start + WINDOW;
        self.map = None;
        if self.reserved < end {
            reserve(&self.file, self.reserved, end - self.reserved)?;
            self.reserved = end;
        }
        self.map = Some(map(&self.file, start, WINDOW)?);
        self.map_start = start;
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn reserve(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use rustix::fs::{FallocateFlags, fallocate};
    fallocate(file, FallocateFlags::empty(), offset, len).map_err(|e| {
        if e == rustix::io::Errno::OPNOTSUPP {
            io::Error::new(io::ErrorKind::Unsupported, "blocks cannot be reserved")
        } else {
            io::Error::from(e)
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn reserve(_: &File, _: u64, _: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "blocks are reserved on Linux only",
    ))
}

impl Write for MappedLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let window_end = self.map_start + self.map.as_ref().map_or(0, |m| m.len() as u64);
            if self.map.is_none() || self.len >= window_end {
                self.next_window()?;
            }
            let map = self.map.as_mut().expect("mapped above");
            // Within the window: `len` lies in [map_start, map_start + WINDOW).
            let at = (self.len - self.map_start) as usize;
            let n = (map.len() - at).min(buf.len() - done);
            map[at..at + n].copy_from_slice(&buf[done..done + n]);
            self.len += n as u64;
            done += n;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // A copy into the map is already in the page cache.
        Ok(())
    }
}

impl WritableFile for MappedLog {
    fn sync(&mut self) -> io::Result<()> {
        if let Some(map) = &self.map {
            map.flush()?;
        }
        // Pages of earlier windows, and the file's size.
        self.file.sync_data()
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        self.map = None;
        // The reserved zeros past the records go; were they kept, readers would skip them.
        let _ = self.file.set_len(self.len);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::log_reader::LogReader;
    use crate::log_writer::LogWriter;

    fn records() -> Vec<Vec<u8>> {
        (0..3000u32)
            .map(|i| vec![i as u8; (i as usize * 37) % 3000])
            .collect()
    }

    /// Records written through maps across several windows read back; a log left with its
    /// reserved zeros (a killed process) reads back the same, with nothing reported dropped.
    #[test]
    fn records_cross_windows_and_a_zero_tail_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for (name, cut) in [("closed.log", true), ("killed.log", false)] {
            let path = dir.path().join(name);
            let file = crate::regular_file::create_regular(&path, true).unwrap();
            let log = match MappedLog::new(file) {
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    eprintln!("skipped: this file system reserves no blocks");
                    return;
                }
                other => other.unwrap(),
            };
            let mut writer = LogWriter::new(log);
            for r in records() {
                writer.add_record(&r).unwrap();
            }
            let mut log = writer.into_inner();
            log.sync().unwrap();
            let written = log.len;
            assert!(written > 2 * WINDOW);
            if cut {
                drop(log);
            } else {
                std::mem::forget(log);
            }
            let data = std::fs::read(&path).unwrap();
            if cut {
                assert_eq!(data.len() as u64, written);
            } else {
                assert_eq!(data.len() as u64 % WINDOW, 0);
                assert!(data[written as usize..].iter().all(|&b| b == 0));
            }
            let mut reader = LogReader::new(&data, true);
            let mut got = Vec::new();
            while let Some(r) = reader.read_record() {
                got.push(r.data.to_vec());
            }
            assert_eq!(got, records(), "{name}");
            assert!(
                reader.dropped().is_empty(),
                "{name}: {:?}",
                reader.dropped()
            );
        }
    }
}
