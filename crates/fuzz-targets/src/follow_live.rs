//! The change feed over logs that grow while they are followed: a writer made from the
//! fuzzer's decisions appends write batches (numbered on from what is committed, of one to
//! four puts and deletes, some with values that cross block boundaries or leave exactly a
//! few bytes, or a header's room, at a block's end) through the log writer, and its bytes
//! reach the log file in chunks of any size, so that a [`Follower`] polling between chunks
//! finds records half written. Now and then the writer moves on to a new log with a higher
//! number, as LevelDB does when it switches memtables or reopens, or ends a block with an
//! empty FIRST fragment, as LevelDB's writers before 2011 could.
//!
//! Without damage, after each chunk the follower has handed out exactly the batches whose
//! records are whole in the files, each once, in order, with their sequences and
//! operations (from the sequence it was asked to start at, a gap first for what no log
//! holds). With damage — a byte flipped in what the writer writes, a log cut short where
//! a writer died — every log is finished by a newer one at the end, and the follower must
//! then have handed out what LevelDB's log reader reads from the logs: the same batches,
//! with gaps between them for what it skipped. Either way it never panics, fails or
//! hands out events without end.

use std::fs::{File, OpenOptions};
use std::io::Write;

use arbitrary::{Result, Unstructured};
use leveltable_db::log_format::mask_crc;
use leveltable_db::log_reader::LogReader;
use leveltable_db::log_writer::LogWriter;
use leveltable_db::write_batch::{WriteBatch, WriteBatchBuilder};
use leveltable_db::{Change, ChangeOp, FollowEvent, Follower};
use leveltable_table::format::varint_len;

/// The size of a log block.
const BLOCK: usize = 32 * 1024;
/// The size of a physical record's header.
const HEADER: usize = 7;
/// The most steps (a batch, a chunk, a new log, ...) of one run.
const MAX_STEPS: usize = 96;
/// The most bytes the writer produces in one run, over all its logs.
const MAX_BYTES: usize = 160 * 1024;

/// A write batch: the sequence of its first operation, and its operations.
type Batch = (u64, Vec<ChangeOp>);

/// A log the writer writes or wrote.
struct Log {
    writer: LogWriter<Vec<u8>>,
    /// How many of the writer's bytes are in the file.
    on_disk: usize,
    /// The ends of its records in the writer's bytes.
    ends: Vec<usize>,
    file: File,
    /// Once the writer is done with it: the newest sequence LevelDB's log reader reads in
    /// it and the logs before it (or the base).
    newest_read: Option<u64>,
}

impl Log {
    fn bytes(&self) -> &[u8] {
        self.writer.get_ref()
    }

    fn pending(&self) -> usize {
        self.bytes().len() - self.on_disk
    }

    /// Ends the block, which has exactly a header's room left, with an empty FIRST
    /// fragment, as LevelDB's writers before 2011 could before a FULL or a FIRST in the
    /// next block.
    fn empty_first(&mut self) {
        let writer = std::mem::replace(&mut self.writer, LogWriter::new(Vec::new()));
        let mut bytes = writer.into_inner();
        let first = 2;
        bytes.extend_from_slice(&mask_crc(crc32c::crc32c(&[first])).to_le_bytes());
        bytes.extend_from_slice(&[0, 0, first]);
        let len = bytes.len() as u64;
        self.writer = LogWriter::with_offset(bytes, len);
    }
}

/// A batch as written: the log it is in (an index into [`Live::logs`]), the end of its
/// record there, and the batch.
struct Written {
    log: usize,
    end: usize,
    batch: Batch,
}

/// A follower and what it handed out.
struct Watch {
    follower: Follower,
    from: u64,
    committed: u64,
    events: Vec<FollowEvent>,
    /// Events compared with the model already.
    checked: usize,
}

/// The writer's directory and everything written to it.
struct Live {
    dir: tempfile::TempDir,
    /// Whether the writer may damage what it writes.
    damage: bool,
    /// Its logs, oldest first: the last is the one being written.
    logs: Vec<Log>,
    number: u64,
    /// The newest sequence committed before the first log (in tables by now).
    base: u64,
    /// The sequence the next batch gets.
    next_sequence: u64,
    written: Vec<Written>,
    bytes: usize,
    watch: Option<Watch>,
}

/// Follows logs a writer writes in torn chunks; see the module's documentation.
pub fn follow_live(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let damage = u.ratio(1, 4)?;
    let base = match u.int_in_range(0..=3)? {
        0 => 0,
        1 => u.int_in_range(1..=3)?,
        2 => u.int_in_range(1..=1_000)?,
        _ => (1 << 40) + u64::from(u.arbitrary::<u16>()?),
    };
    let mut live = Live {
        dir: tempfile::tempdir().expect("a temporary directory"),
        damage,
        logs: Vec::new(),
        number: u.int_in_range(3..=9)?,
        base,
        next_sequence: base + 1,
        written: Vec::new(),
        bytes: 0,
        watch: None,
    };
    live.new_log();
    if u.ratio(3, 4)? {
        live.start(u)?;
    }
    for _ in 0..MAX_STEPS {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0..=11)? {
            0..=3 => live.append(u)?,
            4..=8 => {
                live.write_chunk(u)?;
                live.drain();
            }
            9 => {
                live.rotate(u)?;
                live.drain();
            }
            10 => {
                if live.watch.is_none() {
                    live.start(u)?;
                }
                live.drain();
            }
            _ => live.flip(u)?,
        }
    }
    // The writer writes the rest of what it has; a damaged log is finished by a new one,
    // after which LevelDB's rules say what it holds.
    let last = live.logs.len() - 1;
    let rest = live.logs[last].pending();
    live.write(rest);
    if live.damage {
        live.number += 1;
        live.new_log();
    }
    if live.watch.is_none() {
        live.start(u)?;
    }
    live.drain();
    live.check_end();
    Ok(())
}

impl Live {
    /// Creates the log `self.number`, empty, and writes to it from now on.
    fn new_log(&mut self) {
        let path = self.dir.path().join(format!("{:06}.log", self.number));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .expect("creating a log");
        self.logs.push(Log {
            writer: LogWriter::new(Vec::new()),
            on_disk: 0,
            ends: Vec::new(),
            file,
            newest_read: None,
        });
    }

    /// Starts following, told what an open now reads as committed, from a sequence at or
    /// before the one after it.
    fn start(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let committed = self.committed();
        let from = match u.int_in_range(0..=3)? {
            0 | 1 => committed + 1,
            2 => self.base + 1,
            _ => u.int_in_range(1..=committed + 1)?,
        };
        let follower = Follower::new(self.dir.path(), from, committed).poll_only(true);
        self.watch = Some(Watch {
            follower,
            from,
            committed,
            events: Vec::new(),
            checked: 0,
        });
        Ok(())
    }

    /// The newest sequence an open reads: the base, or the last of a batch LevelDB's
    /// reader reads from the logs as they are on disk.
    fn committed(&self) -> u64 {
        if !self.damage {
            return self
                .written
                .iter()
                .rev()
                .find(|w| self.whole(w))
                .map_or(self.base, |w| last_sequence(&w.batch));
        }
        self.newest_read()
    }

    /// The newest sequence of a batch LevelDB's log reader reads from the logs as they are
    /// on disk, or the base.
    fn newest_read(&self) -> u64 {
        let mut newest = self.base;
        for log in &self.logs {
            if let Some(finished) = log.newest_read {
                newest = newest.max(finished);
                continue;
            }
            for record in LogReader::new(&log.bytes()[..log.on_disk], true) {
                let batch = WriteBatch::new(&record.data).expect("a record of ours is a batch");
                newest = newest.max(batch.last_sequence());
            }
        }
        newest
    }

    /// Whether the record of `w` is whole in its file.
    fn whole(&self, w: &Written) -> bool {
        w.end <= self.logs[w.log].on_disk
    }

    /// The batches LevelDB's log reader reads from every log as it is on disk.
    fn read_logs(&self) -> Vec<Batch> {
        let mut batches = Vec::new();
        for log in &self.logs {
            for record in LogReader::new(&log.bytes()[..log.on_disk], true) {
                // A damaged record fails its checksum: what is read was written whole.
                let batch = WriteBatch::new(&record.data).expect("a record of ours is a batch");
                let mut ops = Vec::new();
                batch
                    .for_each(|op| ops.push(ChangeOp::from(op)))
                    .expect("a record of ours holds a whole batch");
                batches.push((batch.sequence(), ops));
            }
        }
        batches
    }

    /// Appends a batch of one to four operations to the log being written (not yet to
    /// its file).
    fn append(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.bytes >= MAX_BYTES {
            return Ok(());
        }
        let count = u.int_in_range(1..=4)?;
        let fill = u.ratio(1, 3)?;
        let mut ops = Vec::new();
        for i in 0..count {
            let key = key(u)?;
            if !(fill && i + 1 == count) && u.ratio(1, 4)? {
                ops.push(ChangeOp::Delete { key });
                continue;
            }
            let len = match u.int_in_range(0..=7)? {
                0..=3 => u.int_in_range(0..=16)?,
                4..=6 => u.int_in_range(0..=2_000)?,
                _ => u.int_in_range(0..=70_000)?,
            };
            let value = vec![u.arbitrary::<u8>()?; len];
            ops.push(ChangeOp::Put { key, value });
        }
        if fill {
            // The last value sized for the record to leave `left` bytes in its block, after
            // `extra` more blocks: a header's room or less, or a few bytes more.
            let left = u.int_in_range(0..=HEADER + 3)?;
            let extra = u.int_in_range(0..=2)?;
            let log = self.logs.last().expect("a log is being written");
            let last_key = op_key(&ops[count - 1]).len();
            let without =
                encoded_len(&ops[..count - 1]) + 1 + varint_len(last_key as u64) + last_key;
            let want = record_len(log.bytes().len(), left, without + 1, extra);
            let len = value_len(want - without);
            if let Some(ChangeOp::Put { value, .. }) = ops.last_mut() {
                let byte = value.first().copied().unwrap_or(b'v');
                *value = vec![byte; len];
            }
        }
        let mut builder = WriteBatchBuilder::new(self.next_sequence);
        for op in &ops {
            match op {
                ChangeOp::Put { key, value } => builder.put(key, value),
                ChangeOp::Delete { key } => builder.delete(key),
            };
        }
        let index = self.logs.len() - 1;
        let log = &mut self.logs[index];
        let before = log.bytes().len();
        if BLOCK - before % BLOCK == HEADER && u.ratio(1, 2)? {
            log.empty_first();
        }
        log.writer
            .add_record(builder.as_bytes())
            .expect("writing to memory");
        let end = log.bytes().len();
        log.ends.push(end);
        self.bytes += end - before;
        let batch = (self.next_sequence, ops);
        self.next_sequence = last_sequence(&batch) + 1;
        self.written.push(Written {
            log: index,
            end,
            batch,
        });
        Ok(())
    }

    /// Writes a chunk of what the writer has not written to its file yet: a few bytes,
    /// many, all, or up to a block's or a record's end give or take a few.
    fn write_chunk(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let log = self.logs.last().expect("a log is being written");
        let (at, pending) = (log.on_disk, log.pending());
        // Up to `target`, give or take four bytes.
        let near = |target: usize, shift: usize| (target + shift).saturating_sub(4 + at);
        let len = match u.int_in_range(0..=5)? {
            0 => u.int_in_range(0..=8)?,
            1 => u.int_in_range(0..=300)?,
            2 => u.int_in_range(0..=40_000)?,
            3 => pending,
            4 => {
                let boundary = (at / BLOCK + 1) * BLOCK;
                near(boundary, u.int_in_range(0..=8)?)
            }
            _ => {
                let ends: Vec<usize> = log.ends.iter().copied().filter(|&e| e > at).collect();
                if ends.is_empty() {
                    pending
                } else {
                    let end = ends[u.choose_index(ends.len())?];
                    near(end, u.int_in_range(0..=8)?)
                }
            }
        };
        self.write(len.min(pending));
        Ok(())
    }

    /// Writes the next `len` bytes of the log being written to its file.
    fn write(&mut self, len: usize) {
        let log = self.logs.last_mut().expect("a log is being written");
        let at = log.on_disk;
        let chunk = &log.writer.get_ref()[at..at + len];
        log.file.write_all(chunk).expect("appending to the log");
        log.on_disk += len;
    }

    /// The writer moves on to a new log: it writes what it has to the old one first, or
    /// (damaged) dies having written only part of it, and reopens after what LevelDB reads.
    fn rotate(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let pending = self.logs.last().expect("a log is being written").pending();
        let died = self.damage && u.ratio(1, 2)?;
        let len = if died {
            u.int_in_range(0..=pending)?
        } else {
            pending
        };
        self.write(len);
        if died {
            self.next_sequence = self.newest_read() + 1;
        }
        // The old log is finished: what LevelDB's reader reads in it no longer changes.
        let newest = self.newest_read();
        self.logs
            .last_mut()
            .expect("a log was being written")
            .newest_read = Some(newest);
        self.number += u.int_in_range(1..=3)?;
        self.new_log();
        Ok(())
    }

    /// Damage: a byte the writer has not written yet changes.
    fn flip(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if !self.damage {
            return Ok(());
        }
        let log = self.logs.last_mut().expect("a log is being written");
        let pending = log.pending();
        if pending == 0 {
            return Ok(());
        }
        let at = log.on_disk + u.choose_index(pending)?;
        let mask = u.int_in_range(1..=255)?;
        log.writer.get_mut()[at] ^= mask;
        Ok(())
    }

    /// Takes every event the follower has now; without damage, checks them against the
    /// batches whole on disk.
    fn drain(&mut self) {
        let bound = 2 * self.written.len() + 16;
        let Some(watch) = self.watch.as_mut() else {
            return;
        };
        let mut ended = false;
        for _ in 0..bound {
            match watch.follower.try_next_event() {
                Ok(Some(event)) => watch.events.push(event),
                Ok(None) => {
                    ended = true;
                    break;
                }
                Err(e) => panic!("the follower failed: {e}"),
            }
        }
        assert!(
            ended,
            "the follower handed out over {bound} events for {} batches",
            self.written.len()
        );
        if !self.damage {
            let logs = &self.logs;
            let model = self
                .written
                .iter()
                .filter(|w| w.end <= logs[w.log].on_disk)
                .map(|w| &w.batch);
            let watch = self.watch.as_mut().expect("checked above");
            check(watch, model);
        }
    }

    /// At the end: without damage, LevelDB's reader reads every batch written; with it,
    /// the follower handed out what LevelDB's reader reads.
    fn check_end(&mut self) {
        let read = self.read_logs();
        if !self.damage {
            let written: Vec<&Batch> = self.written.iter().map(|w| &w.batch).collect();
            assert!(
                read.iter().eq(written.iter().copied()),
                "LevelDB's reader reads other batches than were written"
            );
        }
        let watch = self
            .watch
            .as_mut()
            .expect("started at the end at the latest");
        // A gap named when the logs ended, and one more found when the next batch came
        // after a damaged one, are one gap.
        let mut events: Vec<FollowEvent> = Vec::new();
        for event in watch.events.drain(..) {
            match (events.last_mut(), event) {
                (Some(FollowEvent::Gap { last, .. }), FollowEvent::Gap { first, last: to })
                    if first == *last + 1 =>
                {
                    *last = to;
                }
                (_, event) => events.push(event),
            }
        }
        watch.events = events;
        watch.checked = 0;
        check(watch, read.iter());
    }
}

/// What a follower from `watch.from`, told `watch.committed`, hands out of `model` (the
/// batches the logs hold, in order): the batches from `from` on, the first cut to start
/// there, and a gap before each for sequences no log holds, and one at the end up to
/// `committed`. Checks the events not checked yet against it, and that there are as many.
fn check<'a>(watch: &mut Watch, model: impl Iterator<Item = &'a Batch>) {
    let mut next = watch.from.max(1);
    let mut index = 0usize;
    let events = &watch.events;
    let mut expect = |wanted: Expected<'_>| {
        if index >= watch.checked {
            let got = events.get(index);
            assert!(
                got.is_some_and(|got| wanted.is(got)),
                "event {index}: wanted {}, the follower handed out {:?}",
                wanted.shown(),
                got.map(shown)
            );
        }
        index += 1;
    };
    for (sequence, ops) in model {
        let last = sequence + (ops.len() as u64).max(1) - 1;
        if last < next {
            continue;
        }
        if *sequence > next {
            expect(Expected::Gap(next, sequence - 1));
        }
        let skip = usize::try_from(next.saturating_sub(*sequence)).expect("a few operations");
        expect(Expected::Batch(sequence + skip as u64, &ops[skip..]));
        next = last + 1;
    }
    if next <= watch.committed {
        expect(Expected::Gap(next, watch.committed));
    }
    assert_eq!(
        events.len(),
        index,
        "the follower handed out {} events, {index} wanted: {:?}",
        events.len(),
        events.iter().map(shown).collect::<Vec<_>>()
    );
    watch.checked = index;
}

/// An event a follower must hand out.
enum Expected<'a> {
    Gap(u64, u64),
    Batch(u64, &'a [ChangeOp]),
}

impl Expected<'_> {
    fn shown(&self) -> String {
        match self {
            Expected::Gap(first, last) => format!("gap {first}..={last}"),
            Expected::Batch(sequence, ops) => format!("batch at {sequence} of {} ops", ops.len()),
        }
    }

    fn is(&self, event: &FollowEvent) -> bool {
        match (self, event) {
            (Expected::Gap(first, last), FollowEvent::Gap { first: f, last: l }) => {
                first == f && last == l
            }
            (
                Expected::Batch(sequence, ops),
                FollowEvent::Batch(Change {
                    sequence: s,
                    ops: o,
                }),
            ) => sequence == s && *ops == o.as_slice(),
            _ => false,
        }
    }
}

/// An event, shown without its values.
fn shown(event: &FollowEvent) -> String {
    match event {
        FollowEvent::Gap { first, last } => format!("gap {first}..={last}"),
        FollowEvent::Batch(c) => format!("batch at {} of {} ops", c.sequence, c.ops.len()),
    }
}

/// The last sequence of a batch.
fn last_sequence(batch: &Batch) -> u64 {
    batch.0 + (batch.1.len() as u64).max(1) - 1
}

/// A user key: mostly short, from a small alphabet, so that keys repeat.
fn key(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    if u.ratio(1, 16)? {
        return Ok(vec![b'k'; u.int_in_range(0..=400)?]);
    }
    (0..u.int_in_range(0..=3)?)
        .map(|_| Ok(b'a' + u.int_in_range(0..=3)?))
        .collect()
}

fn op_key(op: &ChangeOp) -> &[u8] {
    match op {
        ChangeOp::Put { key, .. } | ChangeOp::Delete { key } => key,
    }
}

/// The length of a write batch of `ops`.
fn encoded_len(ops: &[ChangeOp]) -> usize {
    12 + ops
        .iter()
        .map(|op| match op {
            ChangeOp::Put { key, value } => {
                1 + varint_len(key.len() as u64)
                    + key.len()
                    + varint_len(value.len() as u64)
                    + value.len()
            }
            ChangeOp::Delete { key } => 1 + varint_len(key.len() as u64) + key.len(),
        })
        .sum::<usize>()
}

/// The length of a record that, appended to a log of `len` bytes, ends leaving `left`
/// bytes in its block, `extra` blocks after the first block it can end in, and is at least
/// `min` bytes long.
fn record_len(len: usize, left: usize, min: usize, extra: usize) -> usize {
    let mut offset = len % BLOCK;
    if BLOCK - offset < HEADER {
        offset = 0; // the writer pads the block's tail
    }
    // Payload that fits in the rest of this block; each further block holds a header less.
    let room = BLOCK - offset - HEADER;
    let mut want = room as i64 - left as i64;
    while want < min as i64 {
        want += (BLOCK - HEADER) as i64;
    }
    usize::try_from(want).expect("positive") + extra * (BLOCK - HEADER)
}

/// The length of a value whose length prefix and bytes take `total` bytes (or one more,
/// where no length does).
fn value_len(total: usize) -> usize {
    (total.saturating_sub(5)..=total)
        .rev()
        .find(|&len| len + varint_len(len as u64) == total)
        .unwrap_or_else(|| total.saturating_sub(varint_len(total as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_record_leaves_what_was_asked() {
        for start in [0, 5, 100, BLOCK - 7, BLOCK - 8, BLOCK - 3, BLOCK + 40] {
            for left in 0..=HEADER + 3 {
                for extra in 0..=1 {
                    let without = 12 + 1 + 1 + 1;
                    let want = record_len(start, left, without + 1, extra);
                    let len = value_len(want - without);
                    let mut builder = WriteBatchBuilder::new(1);
                    builder.put(b"k", &vec![b'v'; len]);
                    let mut writer = LogWriter::with_offset(vec![b'x'; start], start as u64);
                    writer.add_record(builder.as_bytes()).unwrap();
                    let end = writer.get_ref().len();
                    if builder.as_bytes().len() == want {
                        assert_eq!(
                            (BLOCK - end % BLOCK) % BLOCK,
                            left,
                            "{start} {left} {extra}"
                        );
                    }
                }
            }
        }
    }
}
