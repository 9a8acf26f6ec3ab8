//! A log's torn tail read again, for a repair.
//!
//! LevelDB's reader ends a log silently at a record that runs past its end: a writer dying
//! mid-record leaves one. So does damage to a record's length, and then every record after
//! it is lost without a word. A repair reads such a tail again, strictly, from where the
//! reader stopped ([`LogReader::torn_tail`]):
//!
//! - a physical record whose stored length fails (it runs past the end, or its checksum
//!   does not match over that many bytes) is taken with the length, within its block, over
//!   which its checksum matches, if one does: the length was damaged, the rest is whole,
//!   as the checksum (of its type and payload) proves;
//! - every record taken passes its checksum, is a well-formed write batch (its count
//!   matching its operations), and starts past the sequence numbers of every batch before
//!   it in the log, so that the log's order and the newest-wins order agree;
//! - at the first thing that fails (a record cut short by the end, a checksum that matches
//!   no length, a fragment out of order, a batch out of sequence) reading stops, and the
//!   bytes from the start of that record to the end of the log are lost: a torn tail no
//!   reader can tell from a write a crash cut short, reported as such when it holds a
//!   record header or more.
//!
//! Records are never looked for at other offsets than where the previous one ends (a write
//! batch's value may hold a log record of its own): what follows a record that cannot be
//! read is lost, and reported.

use std::sync::Arc;

use leveltable_table::Comparator;

use crate::live_memtable::LiveMemTable;
use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, Header, RecordType};
use crate::log_reader::LogReader;
use crate::options::LogInfo;
use crate::write_batch::WriteBatch;

/// What reading a log's torn tail again found.
pub(crate) struct TornTail {
    /// The write batches read from it, if any.
    pub(crate) table: Option<LiveMemTable>,
    /// How many.
    pub(crate) batches: u64,
    /// The sequence number of the first (0 for none).
    pub(crate) first_sequence: u64,
    /// The newest sequence number among their versions (0 for none).
    pub(crate) max_sequence: u64,
    /// Where the torn tail begins.
    pub(crate) start: u64,
    /// Where the bytes that could not be read begin and how many they are, when they hold
    /// a record header or more.
    pub(crate) lost: Option<(u64, u64)>,
}

/// Reads again the torn tail of the log `data`, replayed as `info` tells (its batches' newest
/// sequence number `after`); `None` if it has none of a record header or more.
pub(crate) fn read_torn_tail(
    data: &[u8],
    info: &LogInfo,
    after: Option<u64>,
    comparator: &Arc<dyn Comparator>,
) -> Option<TornTail> {
    if info.tail_bytes < HEADER_SIZE as u64 {
        return None;
    }
    // The torn tail lies past the last record read: the reader needs only the block that
    // record ends in, and what follows.
    let last_end = usize::try_from(info.size.saturating_sub(info.tail_bytes)).ok()?;
    let block_start = last_end - last_end % BLOCK_SIZE;
    let rest = data.get(block_start..)?;
    let mut reader = LogReader::new(rest, true);
    reader.by_ref().for_each(drop);
    let torn = block_start + usize::try_from(reader.torn_tail()?).ok()?;
    if data.len() - torn < HEADER_SIZE {
        return None;
    }
    let mut next = after.map(|last| last.saturating_add(1));
    let mem = LiveMemTable::new(comparator);
    let mut max_sequence = 0u64;
    let mut first_sequence = 0u64;
    let mut batches = 0u64;
    let mut records = Strict { data, pos: torn };
    let stop = loop {
        records.skip_padding();
        let start = records.pos;
        let Some(record) = records.next_record() else {
            break records.pos;
        };
        let Some(record) = record else {
            break start;
        };
        let Ok(batch) = WriteBatch::new(&record) else {
            break start;
        };
        if next.is_some_and(|n| batch.sequence() < n) || batch.for_each(drop).is_err() {
            break start;
        }
        let Some(end) = batch.sequence().checked_add(u64::from(batch.count())) else {
            break start;
        };
        if mem.insert_batch(&batch).is_err() {
            break start;
        }
        next = Some(end);
        if batches == 0 {
            first_sequence = batch.sequence();
        }
        if batch.count() > 0 {
            max_sequence = max_sequence.max(end - 1);
        }
        batches += 1;
    };
    let table = (batches > 0).then_some(mem);
    // Padding or preallocated space skipped may reach past the end.
    let stop = stop.min(data.len());
    let lost_bytes = data.len() - stop;
    Some(TornTail {
        table,
        batches,
        first_sequence,
        max_sequence,
        start: torn as u64,
        lost: (lost_bytes >= HEADER_SIZE).then_some((stop as u64, lost_bytes as u64)),
    })
}

/// Logical records read strictly from `pos` on.
struct Strict<'a> {
    data: &'a [u8],
    /// Where the next physical record begins (or the block padding before it).
    pos: usize,
}

/// A physical record: its type and payload.
struct Physical<'a> {
    kind: RecordType,
    payload: &'a [u8],
}

impl<'a> Strict<'a> {
    /// Moves past the padding at the end of a block, if `pos` is in it.
    fn skip_padding(&mut self) {
        let block_left = BLOCK_SIZE - self.pos % BLOCK_SIZE;
        if block_left < HEADER_SIZE {
            self.pos += block_left;
        }
    }

    /// The next logical record: `None` at the end of the log (less than a header left),
    /// `Some(None)` if it cannot be read (`pos` is then past what was tried).
    fn next_record(&mut self) -> Option<Option<Vec<u8>>> {
        let mut joined: Option<Vec<u8>> = None;
        loop {
            let physical = match self.next_physical() {
                None if joined.is_some() => return Some(None),
                None => return None,
                Some(None) => return Some(None),
                Some(Some(p)) => p,
            };
            match (physical.kind, &mut joined) {
                (RecordType::Full, None) => return Some(Some(physical.payload.to_vec())),
                (RecordType::First, None) => joined = Some(physical.payload.to_vec()),
                (RecordType::Middle, Some(j)) => j.extend_from_slice(physical.payload),
                (RecordType::Last, Some(j)) => {
                    j.extend_from_slice(physical.payload);
                    return joined.map(Some);
                }
                _ => return Some(None),
            }
        }
    }

    /// The next physical record: `None` at the end of the log (less than a header left,
    /// past block padding and preallocated zeros), `Some(None)` if it cannot be read.
    fn next_physical(&mut self) -> Option<Option<Physical<'a>>> {
        loop {
            self.skip_padding();
            let block_left = BLOCK_SIZE - self.pos % BLOCK_SIZE;
            let left = self.data.len().checked_sub(self.pos)?;
            if left < HEADER_SIZE {
                return None;
            }
            let p = self.pos;
            let header = Header::decode(&self.data[p..]);
            if header.is_preallocated() {
                // Preallocated space, as the reader skips it: the rest of the block.
                self.pos += block_left;
                continue;
            }
            let Some(kind) = RecordType::from_byte(header.kind).filter(|k| *k != RecordType::Zero)
            else {
                return Some(None);
            };
            let room = block_left.min(left) - HEADER_SIZE;
            let payload = &self.data[p + HEADER_SIZE..p + HEADER_SIZE + room];
            let Some(length) = verified_length(&header, payload) else {
                return Some(None);
            };
            self.pos = p + HEADER_SIZE + length;
            return Some(Some(Physical {
                kind,
                payload: &payload[..length],
            }));
        }
    }
}

/// The length of the payload, at the start of `room`, whose checksum is the header's: the
/// length the header claims if it fits and matches, else the shortest that matches.
fn verified_length(header: &Header, room: &[u8]) -> Option<usize> {
    if header.length <= room.len() && header.matches(&room[..header.length]) {
        return Some(header.length);
    }
    let mut crc = crc32c::crc32c(&[header.kind]);
    if crc == header.crc {
        return Some(0);
    }
    for (i, byte) in room.iter().enumerate() {
        crc = crc32c::crc32c_append(crc, std::slice::from_ref(byte));
        if crc == header.crc {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::ParsedInternalKey;
    use crate::log_writer::LogWriter;
    use crate::recovery::replay_log;
    use crate::write_batch::WriteBatchBuilder;
    use leveltable_table::BytewiseComparator;

    fn batch(sequence: u64, keys: &[&str]) -> Vec<u8> {
        let mut b = WriteBatchBuilder::new(sequence);
        for k in keys {
            b.put(k.as_bytes(), b"value");
        }
        b.into_bytes()
    }

    /// A log of batches of two keys each, from sequence 1; and each record's offset.
    fn log(batches: usize) -> (Vec<u8>, Vec<usize>) {
        let mut w = LogWriter::new(Vec::new());
        let mut offsets = Vec::new();
        let mut len = 0;
        for i in 0..batches {
            offsets.push(len);
            let a = format!("k{i:03}a");
            let b = format!("k{i:03}b");
            w.add_record(&batch(1 + 2 * i as u64, &[&a, &b])).unwrap();
            len = w.get_ref().len();
        }
        (w.into_inner(), offsets)
    }

    fn read(data: &[u8]) -> (LogInfo, Option<u64>, Option<TornTail>) {
        let user: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
        let replayed = replay_log(
            5,
            std::path::Path::new("000005.log"),
            data,
            true,
            false,
            &user,
        )
        .unwrap();
        let tail = read_torn_tail(data, &replayed.info, replayed.max_sequence, &user);
        (replayed.info, replayed.max_sequence, tail)
    }

    fn keys(tail: &TornTail) -> Vec<String> {
        tail.table.as_ref().map(user_keys).unwrap_or_default()
    }

    fn user_keys(table: &LiveMemTable) -> Vec<String> {
        let mut keys = Vec::new();
        table
            .try_for_each(|k, _| {
                keys.push(
                    String::from_utf8_lossy(ParsedInternalKey::parse(k).unwrap().user_key)
                        .into_owned(),
                );
                Ok(())
            })
            .unwrap();
        keys
    }

    #[test]
    fn a_whole_log_has_no_torn_tail() {
        let (data, offsets) = log(10);
        assert!(read(&data).2.is_none());
        // A header cut short: less than a header lost, nothing to say.
        assert!(read(&data[..offsets[9] + 3]).2.is_none());
        // A payload cut short: its header and what was written of it are lost.
        assert!(read(&data[..offsets[9] + 7]).2.is_some());
    }

    #[test]
    fn a_damaged_length_is_found_again_by_the_checksum() {
        let (mut data, offsets) = log(10);
        // The length of the fourth record now runs past the end of the log.
        data[offsets[3] + 5] ^= 0x10;
        let (info, after, tail) = read(&data);
        assert_eq!(info.records, 3);
        assert_eq!(after, Some(6));
        let tail = tail.unwrap();
        assert_eq!(tail.batches, 7);
        assert_eq!(tail.lost, None);
        assert_eq!(tail.max_sequence, 20);
        assert_eq!(keys(&tail).len(), 14);
        assert_eq!(keys(&tail)[0], "k003a");
    }

    #[test]
    fn a_write_cut_short_is_lost_from_its_header() {
        let (data, offsets) = log(10);
        let cut = &data[..offsets[9] + 12];
        let (_, _, tail) = read(cut);
        let tail = tail.unwrap();
        assert_eq!(tail.batches, 0);
        assert!(tail.table.is_none());
        assert_eq!(tail.lost, Some((offsets[9] as u64, 12)));
    }

    #[test]
    fn records_after_a_second_damage_are_lost_with_it() {
        let (mut data, offsets) = log(10);
        data[offsets[3] + 5] ^= 0x10;
        // The seventh record's payload flipped: its checksum matches no length.
        data[offsets[6] + HEADER_SIZE + 3] ^= 1;
        let tail = read(&data).2.unwrap();
        assert_eq!(tail.batches, 3);
        assert_eq!(
            tail.lost,
            Some((offsets[6] as u64, (data.len() - offsets[6]) as u64))
        );
    }

    #[test]
    fn a_batch_out_of_sequence_ends_the_tail() {
        let mut w = LogWriter::new(Vec::new());
        w.add_record(&batch(10, &["a"])).unwrap();
        let second = w.get_ref().len();
        w.add_record(&batch(11, &["b"])).unwrap();
        let third = w.get_ref().len();
        // Older than the batch before it: not taken, nor anything after it.
        w.add_record(&batch(5, &["c"])).unwrap();
        w.add_record(&batch(12, &["d"])).unwrap();
        let mut data = w.into_inner();
        data[second + 5] ^= 0x10;
        let tail = read(&data).2.unwrap();
        assert_eq!(keys(&tail), ["b"]);
        assert_eq!(tail.lost, Some((third as u64, (data.len() - third) as u64)));
    }

    #[test]
    fn fragments_are_joined_and_a_torn_fragmented_record_is_lost_whole() {
        let big = "x".repeat(BLOCK_SIZE + 100);
        let mut w = LogWriter::new(Vec::new());
        w.add_record(&batch(1, &["a"])).unwrap();
        let second = w.get_ref().len();
        w.add_record(&batch(2, &[big.as_str()])).unwrap();
        w.add_record(&batch(3, &["c"])).unwrap();
        let mut data = w.into_inner();
        // The big record's last fragment, at the start of the last block, runs past the end:
        // the tail begins at its first fragment, and reads again whole.
        data[BLOCK_SIZE + 5] ^= 0x10;
        let (info, _, tail) = read(&data);
        assert_eq!(info.records, 1);
        let tail = tail.unwrap();
        assert_eq!(tail.batches, 2);
        assert_eq!(tail.lost, None);
        assert_eq!(keys(&tail), ["c", big.as_str()]);
        // Cut inside the last fragment: lost from the first.
        let cut = &data[..BLOCK_SIZE + 50];
        let tail = read(cut).2.unwrap();
        assert!(tail.table.is_none());
        assert_eq!(
            tail.lost,
            Some((second as u64, (cut.len() - second) as u64))
        );
    }

    #[test]
    fn preallocated_zeros_after_the_tail_are_not_lost() {
        let (mut data, offsets) = log(10);
        data[offsets[3] + 5] ^= 0x10;
        data.extend_from_slice(&[0u8; 100]);
        let tail = read(&data).2.unwrap();
        assert_eq!(tail.batches, 7);
        assert_eq!(tail.lost, None);
    }

    #[test]
    fn every_bit_flip_reads_a_subset_and_a_flipped_length_loses_nothing() {
        let (data, offsets) = log(6);
        let all: Vec<String> = (0..6)
            .flat_map(|i| [format!("k{i:03}a"), format!("k{i:03}b")])
            .collect();
        let mut read_again = 0;
        for bit in 0..data.len() * 8 {
            let mut d = data.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            let user: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
            let replayed = replay_log(
                5,
                std::path::Path::new("000005.log"),
                &d[..],
                true,
                false,
                &user,
            )
            .unwrap();
            let tail = read_torn_tail(&d, &replayed.info, replayed.max_sequence, &user);
            let mut got = user_keys(&replayed.table);
            if let Some(t) = &tail {
                got.extend(keys(t));
            }
            got.sort();
            let before = got.len();
            got.dedup();
            assert_eq!(got.len(), before, "bit {bit}: a batch read twice");
            assert!(got.iter().all(|k| all.contains(k)), "bit {bit}: {got:?}");
            let in_length = offsets
                .iter()
                .any(|&o| bit / 8 == o + 4 || bit / 8 == o + 5);
            if in_length && let Some(t) = &tail {
                assert_eq!(got, all, "bit {bit}");
                assert_eq!(t.lost, None, "bit {bit}");
                read_again += 1;
            }
        }
        // Every flip of a length's high byte runs past the end.
        assert!(read_again >= 6 * 8, "{read_again}");
    }
}
