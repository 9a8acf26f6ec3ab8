//! The error type of this crate.

use std::borrow::Cow;
use std::fmt;
use std::io;

use crate::compression::Compression;
use crate::profile::Profile;

/// Everything that can go wrong building or reading a table.
///
/// Messages are lowercase and start with `table: `, for example
/// `table: corrupt block handle at offset 4096`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The file's bytes are not a well-formed table.
    ///
    /// `what` names the structure that failed to decode (`block handle`, `block entry`,
    /// `restart array`, ...). `offset` is the position in the file where the bad structure
    /// starts; for a structure inside a compressed block, which has no position of its own in
    /// the file, it is the offset of that block.
    Corruption {
        /// The structure that failed to decode.
        what: Cow<'static, str>,
        /// Where in the file it is (see above).
        offset: u64,
    },
    /// A block's stored checksum does not match its contents.
    ChecksumMismatch {
        /// File offset of the block.
        offset: u64,
        /// The checksum stored in the block trailer (unmasked).
        expected: u32,
        /// The checksum of the bytes read.
        got: u32,
    },
    /// The last 8 bytes of the file are not the table magic number.
    NotATable,
    /// The file is shorter than a footer.
    TooShort {
        /// The file size.
        size: u64,
    },
    /// [`TableBuilder::add`](crate::TableBuilder::add) was given a key that does not sort
    /// strictly after the previous one. The builder is unchanged and still usable.
    KeyOutOfOrder {
        /// The key added before.
        previous: Vec<u8>,
        /// The key that was refused.
        got: Vec<u8>,
    },
    /// An argument or option is out of its allowed range, or a builder was used after it
    /// finished.
    InvalidArgument(Cow<'static, str>),
    /// A block's type byte names no compression the reading [`Profile`] knows: a block of
    /// another writer's family (read it with the profile [`Profile::knowing`] names) or of
    /// no known writer.
    UnsupportedCompression {
        /// The type byte of the block trailer.
        block_type: u8,
        /// File offset of the block.
        offset: u64,
        /// The profile the block was read with.
        profile: Profile,
    },
    /// A block is stored with a codec this build of the crate leaves out (see
    /// [`Compression::feature`]), or a builder was asked to write one.
    CodecNotBuilt {
        /// The block's compression.
        compression: Compression,
        /// File offset of the block (0 when building).
        offset: u64,
    },
    /// The filter block builder refused an operation.
    Filter(leveltable_filter_block::Error),
    /// Reading or writing failed.
    Io(io::Error),
}

impl Error {
    /// A corruption error for `what` at `offset`.
    pub(crate) fn corrupt(what: impl Into<Cow<'static, str>>, offset: u64) -> Error {
        Error::Corruption {
            what: what.into(),
            offset,
        }
    }

    /// Moves a position relative to some structure to a position in the file: adds `base` to
    /// the offset of a corruption or checksum error. Other errors pass through.
    pub(crate) fn rebase(self, base: u64) -> Error {
        match self {
            Error::Corruption { what, offset } => Error::Corruption {
                what,
                offset: offset.saturating_add(base),
            },
            Error::ChecksumMismatch {
                offset,
                expected,
                got,
            } => Error::ChecksumMismatch {
                offset: offset.saturating_add(base),
                expected,
                got,
            },
            other => other,
        }
    }

    /// Replaces the offset of a corruption error by `offset` (used for structures inside a
    /// compressed block, whose inner positions have no place in the file).
    pub(crate) fn at(self, offset: u64) -> Error {
        match self {
            Error::Corruption { what, .. } => Error::Corruption { what, offset },
            other => other,
        }
    }

    /// A copy of this error for reporting it again; an I/O error keeps its kind and message
    /// but loses its source chain.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Corruption { what, offset } => Error::Corruption {
                what: what.clone(),
                offset: *offset,
            },
            Error::ChecksumMismatch {
                offset,
                expected,
                got,
            } => Error::ChecksumMismatch {
                offset: *offset,
                expected: *expected,
                got: *got,
            },
            Error::NotATable => Error::NotATable,
            Error::TooShort { size } => Error::TooShort { size: *size },
            Error::KeyOutOfOrder { previous, got } => Error::KeyOutOfOrder {
                previous: previous.clone(),
                got: got.clone(),
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::UnsupportedCompression {
                block_type,
                offset,
                profile,
            } => Error::UnsupportedCompression {
                block_type: *block_type,
                offset: *offset,
                profile: *profile,
            },
            Error::CodecNotBuilt {
                compression,
                offset,
            } => Error::CodecNotBuilt {
                compression: *compression,
                offset: *offset,
            },
            Error::Filter(e) => Error::Filter(e.clone()),
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
        }
    }

    /// Whether this error says the file's contents are bad (as opposed to I/O or misuse).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corruption { .. }
                | Error::ChecksumMismatch { .. }
                | Error::NotATable
                | Error::TooShort { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Corruption { what, offset } => {
                write!(f, "table: corrupt {what} at offset {offset}")
            }
            Error::ChecksumMismatch {
                offset,
                expected,
                got,
            } => write!(
                f,
                "table: block checksum mismatch at offset {offset} \
                 (stored {expected:#010x}, computed {got:#010x})"
            ),
            Error::NotATable => f.write_str("table: not an sstable (bad magic number)"),
            Error::TooShort { size } => write!(
                f,
                "table: file is too short to be an sstable ({size} bytes, a footer alone is {})",
                crate::format::FOOTER_LEN
            ),
            Error::KeyOutOfOrder { previous, got } => write!(
                f,
                "table: key {} does not sort after the previous key {}",
                Escaped(got),
                Escaped(previous)
            ),
            Error::InvalidArgument(msg) => write!(f, "table: invalid argument: {msg}"),
            Error::UnsupportedCompression {
                block_type,
                offset,
                profile,
            } => {
                write!(
                    f,
                    "table: unsupported block compression type {block_type} at offset {offset} \
                     (profile {profile}"
                )?;
                match Profile::knowing(*block_type) {
                    known if known.is_empty() => f.write_str("; no known writer uses it)"),
                    known => write!(f, "; known to profiles: {known}, auto)"),
                }
            }
            Error::CodecNotBuilt {
                compression,
                offset,
            } => write!(
                f,
                "table: {} compression (block type {}, at offset {offset}) is left out of this \
                 build: enable leveltable-table's `{}` feature",
                compression.codec_name(),
                compression.type_byte(),
                compression.feature().unwrap_or("default"),
            ),
            Error::Filter(e) => write!(f, "table: {e}"),
            Error::Io(e) => write!(f, "table: i/o error: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Filter(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl From<leveltable_filter_block::Error> for Error {
    fn from(e: leveltable_filter_block::Error) -> Error {
        Error::Filter(e)
    }
}

/// Shows a key as a quoted string with non-printable bytes escaped, truncated when long.
struct Escaped<'a>(&'a [u8]);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX_SHOWN: usize = 64;
        f.write_str("\"")?;
        for &b in self.0.iter().take(MAX_SHOWN) {
            write!(f, "{}", std::ascii::escape_default(b))?;
        }
        f.write_str("\"")?;
        if self.0.len() > MAX_SHOWN {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        assert_eq!(
            Error::corrupt("block handle", 4096).to_string(),
            "table: corrupt block handle at offset 4096"
        );
        assert_eq!(
            Error::NotATable.to_string(),
            "table: not an sstable (bad magic number)"
        );
        assert_eq!(
            Error::KeyOutOfOrder {
                previous: b"b".to_vec(),
                got: b"a\x00".to_vec()
            }
            .to_string(),
            "table: key \"a\\x00\" does not sort after the previous key \"b\""
        );
        assert_eq!(
            Error::ChecksumMismatch {
                offset: 7,
                expected: 1,
                got: 0xabcdef
            }
            .to_string(),
            "table: block checksum mismatch at offset 7 (stored 0x00000001, computed 0x00abcdef)"
        );
    }

    #[test]
    fn compression_messages() {
        let unsupported = |block_type, profile| {
            Error::UnsupportedCompression {
                block_type,
                offset: 2149793,
                profile,
            }
            .to_string()
        };
        assert_eq!(
            unsupported(4, Profile::LevelDb),
            "table: unsupported block compression type 4 at offset 2149793 \
             (profile leveldb; known to profiles: mojang, auto)"
        );
        assert_eq!(
            unsupported(7, Profile::Auto),
            "table: unsupported block compression type 7 at offset 2149793 \
             (profile auto; no known writer uses it)"
        );
        assert_eq!(
            Error::CodecNotBuilt {
                compression: Compression::RawDeflate,
                offset: 10
            }
            .to_string(),
            "table: deflate compression (block type 4, at offset 10) is left out of this \
             build: enable leveltable-table's `zlib` feature"
        );
    }

    #[test]
    fn rebase_moves_corruption_only() {
        match Error::corrupt("x", 3).rebase(100) {
            Error::Corruption { offset, .. } => assert_eq!(offset, 103),
            e => panic!("{e}"),
        }
        assert!(matches!(Error::NotATable.rebase(5), Error::NotATable));
        match Error::corrupt("x", 3).at(9) {
            Error::Corruption { offset, .. } => assert_eq!(offset, 9),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn io_source() {
        use std::error::Error as _;
        let e = Error::from(io::Error::other("disk"));
        assert!(e.source().is_some());
        assert_eq!(e.to_string(), "table: i/o error: disk");
    }
}
