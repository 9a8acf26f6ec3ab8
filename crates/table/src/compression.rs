//! How a block's bytes are stored: the codec and type byte of each [`Compression`], and
//! its name as users write it (`snappy`, `none`, `zlib`, `deflate`, `zstd`, `zstd-mojang`).

use std::fmt;
use std::str::FromStr;

/// How a block's bytes are stored, and so the type byte its trailer carries.
///
/// The type byte means different things to different writers: LevelDB (after 1.23) stores
/// zstd as 2, Mojang's LevelDB (Minecraft Bedrock) stores zlib as 2, zstd as 3 and raw
/// deflate as 4. Each variant is one (codec, type byte) pair; a
/// [`Profile`](crate::Profile) maps type bytes back to variants when reading. LevelDB 1.23
/// reads only [`None`](Compression::None) and [`Snappy`](Compression::Snappy);
/// [`readers`](Compression::readers) says who reads each.
///
/// Zlib, raw deflate and zstd need this crate's `zlib` and `zstd` features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Stored as is (type 0).
    None,
    /// Compressed with Snappy's raw format (type 1).
    #[default]
    Snappy,
    /// A zlib stream (RFC 1950: header, deflate, Adler-32), type 2 as Mojang's LevelDB
    /// writes it.
    Zlib,
    /// Raw deflate (RFC 1951, no header), type 4: Mojang's LevelDB's default, in which
    /// Minecraft Bedrock stores its worlds.
    RawDeflate,
    /// A zstd frame, type 2 as LevelDB writes it after 1.23 (`kZstdCompression`).
    Zstd,
    /// A zstd frame, type 3 as Mojang's LevelDB writes it.
    ZstdMojang,
}

impl Compression {
    /// Every compression, in type-byte order.
    pub const ALL: [Compression; 6] = [
        Compression::None,
        Compression::Snappy,
        Compression::Zlib,
        Compression::Zstd,
        Compression::ZstdMojang,
        Compression::RawDeflate,
    ];

    /// The compression LevelDB 1.23 means by a trailer's type byte, if any: only 0 and 1
    /// have a meaning there. [`Profile::compression`](crate::Profile::compression) reads
    /// the other writers' type bytes.
    pub fn from_type_byte(b: u8) -> Option<Compression> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Snappy),
            _ => None,
        }
    }

    /// The trailer's type byte for this compression.
    pub fn type_byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Snappy => 1,
            Compression::Zlib | Compression::Zstd => 2,
            Compression::ZstdMojang => 3,
            Compression::RawDeflate => 4,
        }
    }

    /// The codec's name: `none`, `snappy`, `zlib`, `deflate` or `zstd`.
    pub fn codec_name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Zlib => "zlib",
            Compression::RawDeflate => "deflate",
            Compression::Zstd | Compression::ZstdMojang => "zstd",
        }
    }

    /// Which readers open a table whose blocks are stored so (besides this crate, built with
    /// the codec's feature).
    pub fn readers(self) -> &'static str {
        match self {
            Compression::None | Compression::Snappy => "every LevelDB, including 1.23 and Mojang's",
            Compression::Zstd => {
                "LevelDB after 1.23 built with zstd; not LevelDB 1.23 nor Mojang's"
            }
            Compression::Zlib | Compression::RawDeflate | Compression::ZstdMojang => {
                "Mojang's LevelDB (Minecraft Bedrock); not Google's LevelDB"
            }
        }
    }

    /// Whether this build of the crate can compress and decompress with this codec (the
    /// `zlib` and `zstd` features).
    pub fn is_available(self) -> bool {
        match self {
            Compression::None | Compression::Snappy => true,
            Compression::Zlib | Compression::RawDeflate => cfg!(feature = "zlib"),
            Compression::Zstd | Compression::ZstdMojang => cfg!(feature = "zstd"),
        }
    }

    /// The cargo feature this codec needs, if any.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Compression::None | Compression::Snappy => None,
            Compression::Zlib | Compression::RawDeflate => Some("zlib"),
            Compression::Zstd | Compression::ZstdMojang => Some("zstd"),
        }
    }
}

impl Compression {
    /// The name users give it: `none`, `snappy`, `zlib`, `deflate`, `zstd` (type 2, as
    /// LevelDB after 1.23 writes it) or `zstd-mojang` (type 3). [`FromStr`] takes these.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Zlib => "zlib",
            Compression::RawDeflate => "deflate",
            Compression::Zstd => "zstd",
            Compression::ZstdMojang => "zstd-mojang",
        }
    }
}

impl Compression {
    /// One line for users choosing a codec: what it is, its type byte, and who reads it.
    pub fn description(self) -> &'static str {
        match self {
            Compression::None => "stored as is (type 0); every LevelDB reads it",
            Compression::Snappy => "Snappy (type 1), LevelDB's default; every LevelDB reads it",
            Compression::Zlib => {
                "zlib (type 2), as Mojang's LevelDB writes it; Google's LevelDB cannot read it"
            }
            Compression::RawDeflate => {
                "raw deflate (type 4), Mojang's LevelDB's default (Minecraft Bedrock); Google's \
                 LevelDB cannot read it"
            }
            Compression::Zstd => {
                "zstd (type 2), as LevelDB after 1.23 writes it; LevelDB 1.23 and Mojang's \
                 cannot read it"
            }
            Compression::ZstdMojang => {
                "zstd (type 3), as Mojang's LevelDB writes it; Google's LevelDB cannot read it"
            }
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = UnknownCompression;

    fn from_str(s: &str) -> Result<Compression, UnknownCompression> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| UnknownCompression(s.to_owned()))
    }
}

/// The error of parsing a [`Compression`] from a name it does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCompression(pub String);

impl fmt::Display for UnknownCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table: unknown compression {:?} (expected none, snappy, zlib, deflate, zstd or \
             zstd-mojang)",
            self.0
        )
    }
}

impl std::error::Error for UnknownCompression {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for c in Compression::ALL {
            assert_eq!(c.to_string().parse::<Compression>(), Ok(c));
        }
        let err = "lz4".parse::<Compression>().unwrap_err();
        assert!(err.to_string().contains("\"lz4\""));
    }
}
