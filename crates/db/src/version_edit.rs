//! One MANIFEST record: a change to the set of table files and to the database's counters
//! (LevelDB's `db/version_edit`).
//!
//! A record is a sequence of fields, each a varint32 tag followed by its value:
//!
//! | tag | field              | value                                                   |
//! |-----|--------------------|---------------------------------------------------------|
//! | 1   | comparator         | length-prefixed name                                    |
//! | 2   | log number         | varint64                                                |
//! | 3   | next file number   | varint64                                                |
//! | 4   | last sequence      | varint64                                                |
//! | 5   | compact pointer    | varint32 level, length-prefixed internal key            |
//! | 6   | deleted file       | varint32 level, varint64 file number                    |
//! | 7   | new file           | level, number, size, smallest and largest internal keys |
//! | 9   | prev log number    | varint64                                                |
//!
//! Tag 8 (large value references) was retired before LevelDB 1.0 and is refused.

use std::collections::BTreeSet;

use crate::coding::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64,
};

/// The number of levels of a LevelDB database (`config::kNumLevels`).
pub(crate) const NUM_LEVELS: usize = 7;

const TAG_COMPARATOR: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_COMPACT_POINTER: u32 = 5;
const TAG_DELETED_FILE: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
const TAG_PREV_LOG_NUMBER: u32 = 9;

/// A table file as the MANIFEST describes it (LevelDB's `FileMetaData`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileMetaData {
    /// The file number: the table is `NNNNNN.ldb` (or `NNNNNN.sst`).
    pub number: u64,
    /// The file's size in bytes.
    pub file_size: u64,
    /// The smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// The largest internal key in the file.
    pub largest: Vec<u8>,
}

/// A decoded MANIFEST record. Absent fields are `None`; lists keep record order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// The user comparator's name.
    pub comparator: Option<String>,
    /// Logs numbered below this are obsolete.
    pub log_number: Option<u64>,
    /// The log being compacted when the edit was written (0 or absent: none).
    pub prev_log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The last sequence number written to a table.
    pub last_sequence: Option<u64>,
    /// Where the next compaction of a level starts: `(level, internal key)`.
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Files removed: `(level, number)`.
    pub deleted_files: BTreeSet<(usize, u64)>,
    /// Files added: `(level, file)`.
    pub new_files: Vec<(usize, FileMetaData)>,
}

/// Why a record is not a version edit; the text is LevelDB's (`VersionEdit: <what>`).
pub(crate) type DecodeError = &'static str;

fn get_level(src: &mut &[u8]) -> Option<usize> {
    let level = usize::try_from(get_varint32(src)?).ok()?;
    (level < NUM_LEVELS).then_some(level)
}

/// LevelDB's `GetInternalKey`: a length-prefixed, non-empty key.
fn get_internal_key(src: &mut &[u8]) -> Option<Vec<u8>> {
    let key = get_length_prefixed(src)?;
    (!key.is_empty()).then(|| key.to_vec())
}

impl VersionEdit {
    /// Decodes a record as LevelDB's `VersionEdit::DecodeFrom` does.
    ///
    /// # Errors
    /// LevelDB's message for the first field that does not decode: `comparator name`,
    /// `log number`, `previous log number`, `next file number`, `last sequence number`,
    /// `compaction pointer`, `deleted file`, `new-file entry`, `unknown tag`, or
    /// `invalid tag` for bytes left that do not start with a tag.
    pub fn decode_from(src: &mut &[u8]) -> Result<VersionEdit, DecodeError> {
        let mut edit = VersionEdit::default();
        while let Some(tag) = get_varint32(src) {
            match tag {
                TAG_COMPARATOR => {
                    let name = get_length_prefixed(src).ok_or("comparator name")?;
                    edit.comparator = Some(String::from_utf8_lossy(name).into_owned());
                }
                TAG_LOG_NUMBER => edit.log_number = Some(get_varint64(src).ok_or("log number")?),
                TAG_PREV_LOG_NUMBER => {
                    edit.prev_log_number = Some(get_varint64(src).ok_or("previous log number")?);
                }
                TAG_NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(get_varint64(src).ok_or("next file number")?);
                }
                TAG_LAST_SEQUENCE => {
                    edit.last_sequence = Some(get_varint64(src).ok_or("last sequence number")?);
                }
                TAG_COMPACT_POINTER => {
                    let pointer = get_level(src).and_then(|l| Some((l, get_internal_key(src)?)));
                    edit.compact_pointers
                        .push(pointer.ok_or("compaction pointer")?);
                }
                TAG_DELETED_FILE => {
                    let deleted = get_level(src).and_then(|l| Some((l, get_varint64(src)?)));
                    edit.deleted_files.insert(deleted.ok_or("deleted file")?);
                }
                TAG_NEW_FILE => {
                    let file = (|| {
                        let level = get_level(src)?;
                        let number = get_varint64(src)?;
                        let file_size = get_varint64(src)?;
                        let smallest = get_internal_key(src)?;
                        let largest = get_internal_key(src)?;
                        Some((
                            level,
                            FileMetaData {
                                number,
                                file_size,
                                smallest,
                                largest,
                            },
                        ))
                    })();
                    edit.new_files.push(file.ok_or("new-file entry")?);
                }
                _ => return Err("unknown tag"),
            }
        }
        if !src.is_empty() {
            return Err("invalid tag");
        }
        Ok(edit)
    }

    /// Appends the record as LevelDB's `VersionEdit::EncodeTo` writes it (fields in
    /// LevelDB's order).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        if let Some(name) = &self.comparator {
            put_varint32(dst, TAG_COMPARATOR);
            put_length_prefixed(dst, name.as_bytes());
        }
        for (tag, value) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_PREV_LOG_NUMBER, self.prev_log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = value {
                put_varint32(dst, tag);
                put_varint64(dst, v);
            }
        }
        // Levels are below NUM_LEVELS for decoded edits; `as u32` is lossless for them.
        for (level, key) in &self.compact_pointers {
            put_varint32(dst, TAG_COMPACT_POINTER);
            put_varint32(dst, *level as u32);
            put_length_prefixed(dst, key);
        }
        for (level, number) in &self.deleted_files {
            put_varint32(dst, TAG_DELETED_FILE);
            put_varint32(dst, *level as u32);
            put_varint64(dst, *number);
        }
        for (level, f) in &self.new_files {
            put_varint32(dst, TAG_NEW_FILE);
            put_varint32(dst, *level as u32);
            put_varint64(dst, f.number);
            put_varint64(dst, f.file_size);
            put_length_prefixed(dst, &f.smallest);
            put_length_prefixed(dst, &f.largest);
        }
    }

    /// The encoded record.
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::new();
        self.encode_to(&mut dst);
        dst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VersionEdit {
        VersionEdit {
            comparator: Some("leveldb.BytewiseComparator".into()),
            log_number: Some(5),
            prev_log_number: Some(0),
            next_file_number: Some(7),
            last_sequence: Some(1 << 40),
            compact_pointers: vec![(2, b"k\x01\0\0\0\0\0\0\0".to_vec())],
            deleted_files: [(1, 3), (6, 4)].into(),
            new_files: vec![(
                0,
                FileMetaData {
                    number: 6,
                    file_size: 1234,
                    smallest: b"a\x01\x01\0\0\0\0\0\0".to_vec(),
                    largest: b"z\x01\x02\0\0\0\0\0\0".to_vec(),
                },
            )],
        }
    }

    #[test]
    fn round_trips() {
        let edit = sample();
        let bytes = edit.encode();
        assert_eq!(VersionEdit::decode_from(&mut &bytes[..]), Ok(edit));
        assert_eq!(
            VersionEdit::decode_from(&mut &[][..]),
            Ok(VersionEdit::default())
        );
    }

    #[test]
    fn golden_bytes_of_a_new_database() {
        // The first edit LevelDB 1.23 writes to MANIFEST-000001 of a new database.
        let edit = VersionEdit {
            comparator: Some("leveldb.BytewiseComparator".into()),
            log_number: Some(0),
            next_file_number: Some(2),
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        let mut expected = vec![1, 26];
        expected.extend_from_slice(b"leveldb.BytewiseComparator");
        expected.extend_from_slice(&[2, 0, 3, 2, 4, 0]);
        assert_eq!(edit.encode(), expected);
    }

    #[test]
    fn malformed_edits() {
        for (bytes, error) in [
            (&[1, 5, b'a'][..], "comparator name"),
            (&[2][..], "log number"),
            (&[9, 0x80][..], "previous log number"),
            (&[3][..], "next file number"),
            (&[4][..], "last sequence number"),
            (&[5, 7, 1, b'k'][..], "compaction pointer"),
            (&[5, 1, 0][..], "compaction pointer"),
            (&[6, 7, 1][..], "deleted file"),
            (&[7, 0, 1, 2, 1, b'a', 0][..], "new-file entry"),
            (&[7, 0, 1, 2, 1, b'a'][..], "new-file entry"),
            (&[8, 0][..], "unknown tag"),
            (&[0x80][..], "invalid tag"),
            (&[2, 1, 0xff][..], "invalid tag"),
        ] {
            assert_eq!(
                VersionEdit::decode_from(&mut &bytes[..]),
                Err(error),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn every_truncation_and_flip_decodes_or_errs() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            let _ = VersionEdit::decode_from(&mut &bytes[..len]);
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            if let Ok(edit) = VersionEdit::decode_from(&mut &b[..]) {
                // What decodes re-encodes to a record that decodes the same.
                let again = edit.encode();
                assert_eq!(VersionEdit::decode_from(&mut &again[..]), Ok(edit));
            }
        }
    }
}
