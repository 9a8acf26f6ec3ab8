//! Profiles: which compression a block's type byte names, for each family of writers.
//!
//! The type byte in a block trailer is not one registry: Google's LevelDB (after 1.23)
//! stores zstd as 2, Mojang's LevelDB (the fork in which Minecraft Bedrock keeps its worlds)
//! stores zlib as 2, zstd as 3 and raw deflate as 4. A [`Profile`] picks a meaning.
//! [`Profile::Auto`], the default, reads both families: it tells the two meanings of type 2
//! apart by the block's first bytes (a zstd frame starts with its magic number, a zlib
//! stream with a header whose 16 bits are a multiple of 31 and name deflate).

use std::fmt;
use std::str::FromStr;

use crate::compression::Compression;

/// The four bytes every zstd frame starts with (0xFD2FB528, little-endian).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// How a reader maps a block's type byte to a compression.
///
/// | type | `leveldb` | `mojang` | `auto` |
/// | --- | --- | --- | --- |
/// | 0 | none | none | none |
/// | 1 | snappy | snappy | snappy |
/// | 2 | zstd | zlib | zstd or zlib, by content |
/// | 3 | – | zstd | zstd |
/// | 4 | – | raw deflate | raw deflate |
///
/// ```
/// use leveltable_table::{Compression, Profile};
/// assert_eq!(Profile::Mojang.compression(2, b"\x78\x9c..."), Some(Compression::Zlib));
/// assert_eq!(Profile::LevelDb.compression(2, b"\x78\x9c..."), Some(Compression::Zstd));
/// assert_eq!(Profile::Auto.compression(2, b"\x28\xb5\x2f\xfd..."), Some(Compression::Zstd));
/// assert_eq!(Profile::LevelDb.compression(4, b""), None);
/// assert_eq!("mojang".parse::<Profile>(), Ok(Profile::Mojang));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Profile {
    /// Both families: type 2 by content, every other type by its single meaning.
    #[default]
    Auto,
    /// Google's LevelDB: 0 none, 1 snappy, 2 zstd (LevelDB 1.23 itself writes 0 and 1).
    LevelDb,
    /// Mojang's LevelDB: 0 none, 1 snappy, 2 zlib, 3 zstd, 4 raw deflate.
    Mojang,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 3] = [Profile::Auto, Profile::LevelDb, Profile::Mojang];

    /// The profile's name: `auto`, `leveldb` or `mojang`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Auto => "auto",
            Profile::LevelDb => "leveldb",
            Profile::Mojang => "mojang",
        }
    }

    /// One line for users choosing a profile: which writers' type bytes it reads.
    pub fn description(self) -> &'static str {
        match self {
            Profile::Auto => {
                "Google's and Mojang's LevelDB alike: type 2 is zstd or zlib by its first bytes"
            }
            Profile::LevelDb => "Google's LevelDB: 0 none, 1 snappy, 2 zstd",
            Profile::Mojang => {
                "Mojang's LevelDB (Minecraft Bedrock): 0 none, 1 snappy, 2 zlib, 3 zstd, 4 raw \
                 deflate"
            }
        }
    }

    /// The compression of a block with trailer type `type_byte` whose stored bytes start
    /// with `contents`; `None` if the profile gives the type no meaning, or (for
    /// [`Auto`](Profile::Auto) and type 2) if the bytes are neither a zstd frame nor a zlib
    /// stream.
    pub fn compression(self, type_byte: u8, contents: &[u8]) -> Option<Compression> {
        match (self, type_byte) {
            (_, 0) => Some(Compression::None),
            (_, 1) => Some(Compression::Snappy),
            (Profile::LevelDb, 2) => Some(Compression::Zstd),
            (Profile::Mojang, 2) => Some(Compression::Zlib),
            (Profile::Auto, 2) => {
                if contents.starts_with(&ZSTD_MAGIC) {
                    Some(Compression::Zstd)
                } else if is_zlib_header(contents) {
                    Some(Compression::Zlib)
                } else {
                    None
                }
            }
            (Profile::Mojang | Profile::Auto, 3) => Some(Compression::ZstdMojang),
            (Profile::Mojang | Profile::Auto, 4) => Some(Compression::RawDeflate),
            _ => None,
        }
    }

    /// The profiles, other than `Auto`, that give `type_byte` a meaning, as
    /// `"mojang"`-style names joined by `, `; empty if none does.
    pub fn knowing(type_byte: u8) -> String {
        let names: Vec<&str> = [Profile::LevelDb, Profile::Mojang]
            .into_iter()
            .filter(|p| known_type(*p, type_byte))
            .map(Profile::name)
            .collect();
        names.join(", ")
    }
}

/// Whether `profile` gives `type_byte` a meaning (whatever the contents).
fn known_type(profile: Profile, type_byte: u8) -> bool {
    match profile {
        Profile::LevelDb => type_byte <= 2,
        Profile::Mojang | Profile::Auto => type_byte <= 4,
    }
}

/// Whether `bytes` start with a zlib header (RFC 1950 section 2.2): compression method 8
/// (deflate), a window of at most 32 KiB, no preset dictionary (LevelDB's writers never use
/// one), and the two bytes, big-endian, a multiple of 31.
fn is_zlib_header(bytes: &[u8]) -> bool {
    let [cmf, flg, ..] = *bytes else {
        return false;
    };
    let method = cmf & 0x0f;
    let window_log = cmf >> 4;
    let dictionary = flg & 0x20 != 0;
    method == 8
        && window_log <= 7
        && !dictionary
        && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`Profile`] from a name it does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table: unknown profile {:?} (expected auto, leveldb or mojang)",
            self.0
        )
    }
}

impl std::error::Error for UnknownProfile {}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Profile, UnknownProfile> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_byte_in_every_profile() {
        use Compression as C;
        let zlib = [0x78, 0x9c, 0];
        let zstd = [0x28, 0xb5, 0x2f, 0xfd, 0];
        for (profile, byte, contents, want) in [
            (Profile::Auto, 0, &[][..], Some(C::None)),
            (Profile::Auto, 1, &[], Some(C::Snappy)),
            (Profile::Auto, 2, &zlib, Some(C::Zlib)),
            (Profile::Auto, 2, &zstd, Some(C::Zstd)),
            (Profile::Auto, 2, &[0, 0, 0, 0], None),
            (Profile::Auto, 2, &[], None),
            (Profile::Auto, 3, &[], Some(C::ZstdMojang)),
            (Profile::Auto, 4, &[], Some(C::RawDeflate)),
            (Profile::Auto, 5, &[], None),
            (Profile::LevelDb, 2, &zlib, Some(C::Zstd)),
            (Profile::LevelDb, 3, &[], None),
            (Profile::LevelDb, 4, &[], None),
            (Profile::Mojang, 2, &zstd, Some(C::Zlib)),
            (Profile::Mojang, 3, &[], Some(C::ZstdMojang)),
            (Profile::Mojang, 4, &[], Some(C::RawDeflate)),
            (Profile::Mojang, 255, &[], None),
        ] {
            assert_eq!(
                profile.compression(byte, contents),
                want,
                "{profile} {byte}"
            );
        }
    }

    #[test]
    fn every_compression_reads_back_under_its_writers_profile() {
        for c in Compression::ALL {
            let profile = match c {
                Compression::Zstd => Profile::LevelDb,
                _ => Profile::Mojang,
            };
            assert_eq!(profile.compression(c.type_byte(), &[]), Some(c));
        }
    }

    #[test]
    fn zlib_headers_of_every_level() {
        // The second byte zlib writes for levels 1, 2-5, 6 and 7-9 with a 32 KiB window.
        for flg in [0x01, 0x5e, 0x9c, 0xda] {
            assert!(is_zlib_header(&[0x78, flg]));
        }
        assert!(!is_zlib_header(&[0x78, 0x9d]));
        assert!(!is_zlib_header(&[0x79, 0x9c]));
        assert!(!is_zlib_header(&[0x78]));
    }

    #[test]
    fn names_parse_back() {
        for p in Profile::ALL {
            assert_eq!(p.name().parse::<Profile>(), Ok(p));
        }
        assert_eq!(
            "bedrock".parse::<Profile>().unwrap_err().to_string(),
            "table: unknown profile \"bedrock\" (expected auto, leveldb or mojang)"
        );
        assert_eq!(Profile::knowing(2), "leveldb, mojang");
        assert_eq!(Profile::knowing(4), "mojang");
        assert_eq!(Profile::knowing(7), "");
    }
}
