//! LevelDB's internal keys: the keys of a database's `.ldb` table files.
//!
//! A LevelDB database never stores a user key alone. Each write gets a sequence number, and
//! its table files hold *internal keys*: the user key followed by an 8-byte tag,
//! `sequence << 8 | type` as a little-endian fixed64, where the type is
//! [`ValueType::Value`] (1) or [`ValueType::Deletion`] (0). The files are sorted by
//! [`InternalKeyComparator`] (user key ascending, then tag descending, so the newest version
//! of a key comes first) and filtered on user keys by [`InternalFilterPolicy`].
//!
//! - [`ParsedInternalKey`], [`ValueType`], [`pack_tag`], [`append_internal_key`],
//!   [`lookup_key`], [`extract_user_key`]: the key encoding.
//! - [`InternalKeyComparator`] and [`InternalFilterPolicy`]: LevelDB's wrappers around a user
//!   comparator and a user filter policy.
//! - [`ldb_build_options`] and [`ldb_read_options`]: options for tables exactly as a LevelDB
//!   database with the bytewise comparator and (optionally) its Bloom filter writes them.
//! - [`LookupKey`]: the two keys that bound a lookup of one user key at a snapshot;
//!   [`LookupResult`]: what a lookup finds in one source.
//!
//! [`InternalTable`](crate::internal_table::InternalTable) reads a `.ldb` file with them.
//!
//! The encoding is drawn byte by byte in `docs/format.md` ("Internal keys").

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy};
use smallvec::SmallVec;

use leveltable_table::{BuildOptions, BytewiseComparator, Comparator, ReadOptions};

use crate::table_options::TableOptions;
use crate::{Error, Result};

/// Length of the tag that ends every internal key: a fixed64.
pub(crate) const TAG_LEN: usize = 8;

/// The largest sequence number: the tag keeps 8 bits for the type, leaving 64 − 8 = 56.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// The name of [`InternalKeyComparator`], whatever its user comparator (LevelDB checks the
/// user comparator's name in the MANIFEST, not in the tables).
pub(crate) const INTERNAL_KEY_COMPARATOR_NAME: &str = "leveldb.InternalKeyComparator";

/// What an entry records about its user key. The values are stored in the tag's low byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueType {
    /// A deletion (tombstone); the entry's value is empty.
    Deletion = 0,
    /// A value.
    Value = 1,
}

impl ValueType {
    /// The type a lookup key carries. Tags sort in descending order and the type is the
    /// tag's low byte, so the highest type makes `(user key, sequence)` sort before every
    /// entry of that user key with that sequence or less.
    pub(crate) const FOR_SEEK: ValueType = ValueType::Value;

    /// The type stored as `byte`, if it is one.
    pub(crate) const fn from_byte(byte: u8) -> Option<ValueType> {
        match byte {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            _ => None,
        }
    }

    /// The byte stored for this type.
    pub(crate) const fn to_byte(self) -> u8 {
        self as u8
    }
}

/// A misuse of the table layer: this module's keys and tables are the table crate's, so its
/// argument errors read as that crate's (`table: invalid argument: …`).
pub(crate) fn invalid_argument(message: String) -> Error {
    Error::Table(leveltable_table::Error::InvalidArgument(message.into()))
}

/// The tag of an internal key: `sequence << 8 | type`.
///
/// # Errors
/// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`].
pub fn pack_tag(sequence: u64, value_type: ValueType) -> Result<u64> {
    if sequence > MAX_SEQUENCE {
        return Err(invalid_argument(format!(
            "sequence number {sequence} exceeds 2^56 - 1"
        )));
    }
    Ok(sequence << 8 | u64::from(value_type.to_byte()))
}

/// Appends the internal key `user_key ++ fixed64(sequence << 8 | type)` to `dst`.
///
/// # Errors
/// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`]; `dst` is then unchanged.
pub fn append_internal_key(
    dst: &mut Vec<u8>,
    user_key: &[u8],
    sequence: u64,
    value_type: ValueType,
) -> Result<()> {
    let tag = pack_tag(sequence, value_type)?;
    dst.reserve(user_key.len() + TAG_LEN);
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&tag.to_le_bytes());
    Ok(())
}

/// The key LevelDB seeks to find the newest version of `user_key` at or below `sequence`:
/// `user_key` with the tag `(sequence, ValueType::FOR_SEEK)`. Every entry of `user_key` with
/// a sequence number `<= sequence` sorts at or after it, every newer one before.
///
/// # Errors
/// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`].
pub fn lookup_key(user_key: &[u8], sequence: u64) -> Result<Vec<u8>> {
    let mut key = Vec::with_capacity(user_key.len() + TAG_LEN);
    append_internal_key(&mut key, user_key, sequence, ValueType::FOR_SEEK)?;
    Ok(key)
}

/// User keys up to this length make a [`LookupKey`] without allocating.
const LOOKUP_INLINE_USER_KEY: usize = 56;

/// The two internal keys that bound the versions of one user key a lookup at a snapshot may
/// return (LevelDB's `LookupKey`), built once per lookup and shared by the memtable and every
/// table consulted: [`target`](Self::target), `user_key @ sequence`, where the search starts,
/// and [`floor`](Self::floor), `user_key @ 0` (type deletion), the last internal key of
/// `user_key`. The first entry at or after the target is a version of `user_key` exactly
/// when it sorts at or before the floor.
#[derive(Debug, Clone)]
pub struct LookupKey {
    /// `target ++ floor`.
    bytes: SmallVec<[u8; 2 * (LOOKUP_INLINE_USER_KEY + TAG_LEN)]>,
}

impl LookupKey {
    /// The keys of a lookup of `user_key` at `sequence`.
    ///
    /// # Errors
    /// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`].
    pub fn new(user_key: &[u8], sequence: u64) -> Result<Self> {
        let seek = pack_tag(sequence, ValueType::FOR_SEEK)?;
        let mut bytes = SmallVec::with_capacity(2 * (user_key.len() + TAG_LEN));
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(&seek.to_le_bytes());
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(&u64::from(ValueType::Deletion.to_byte()).to_le_bytes());
        Ok(LookupKey { bytes })
    }

    /// `user_key @ sequence`: every version of the user key at or below the sequence sorts
    /// at or after it, every newer one before.
    pub fn target(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() / 2]
    }

    /// `user_key @ 0`, type deletion: the last internal key of the user key.
    pub fn floor(&self) -> &[u8] {
        &self.bytes[self.bytes.len() / 2..]
    }

    /// The user key.
    pub fn user_key(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() / 2 - TAG_LEN]
    }
}

/// The user key of an internal key (all but the last 8 bytes); `None` if it is shorter than
/// its tag.
pub fn extract_user_key(internal_key: &[u8]) -> Option<&[u8]> {
    internal_key
        .len()
        .checked_sub(TAG_LEN)
        .map(|n| &internal_key[..n])
}

/// Splits any key into `(user key, tag)`. A key too short to hold a tag is treated as a user
/// key with tag 0. LevelDB asserts such keys never reach its comparator or filter; treating
/// them the same way everywhere keeps our order total and our filters free of false
/// negatives for them, and nothing panics on a malformed file.
#[inline]
fn split_tag(key: &[u8]) -> (&[u8], u64) {
    match key.split_last_chunk::<TAG_LEN>() {
        Some((user_key, tag)) => (user_key, u64::from_le_bytes(*tag)),
        None => (key, 0),
    }
}

/// Why bytes are not an internal key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InternalKeyError {
    /// Shorter than the 8-byte tag.
    TooShort {
        /// The key's length.
        len: usize,
    },
    /// The tag's low byte is neither 0 (deletion) nor 1 (value).
    UnknownType {
        /// The byte found.
        value_type: u8,
    },
}

impl InternalKeyError {
    /// The table-layer corruption this makes of an entry of a table at `offset`.
    pub(crate) fn corruption_at(&self, offset: u64) -> Error {
        Error::Table(leveltable_table::Error::Corruption {
            what: self.what().into(),
            offset,
        })
    }

    /// Names the problem as a table's corruption error names its structure.
    fn what(&self) -> String {
        match self {
            InternalKeyError::TooShort { len } => {
                format!("internal key ({len} bytes, shorter than its tag)")
            }
            InternalKeyError::UnknownType { value_type } => {
                format!("internal key (value type {value_type})")
            }
        }
    }
}

impl fmt::Display for InternalKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InternalKeyError::TooShort { len } => write!(
                f,
                "internal key of {len} bytes is shorter than its {TAG_LEN}-byte tag"
            ),
            InternalKeyError::UnknownType { value_type } => {
                write!(f, "internal key has unknown value type {value_type}")
            }
        }
    }
}

impl std::error::Error for InternalKeyError {}

/// An internal key taken apart (LevelDB's `ParsedInternalKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParsedInternalKey<'a> {
    /// The key the application wrote.
    pub user_key: &'a [u8],
    /// The write's sequence number, at most [`MAX_SEQUENCE`].
    pub sequence: u64,
    /// Value or deletion.
    pub value_type: ValueType,
}

impl<'a> ParsedInternalKey<'a> {
    /// A key from its parts.
    pub const fn new(user_key: &'a [u8], sequence: u64, value_type: ValueType) -> Self {
        ParsedInternalKey {
            user_key,
            sequence,
            value_type,
        }
    }

    /// Takes `key` apart.
    ///
    /// # Errors
    /// [`InternalKeyError::TooShort`] for fewer than 8 bytes,
    /// [`InternalKeyError::UnknownType`] for a type byte other than 0 or 1 (LevelDB's
    /// `ParseInternalKey` fails on the same keys).
    pub fn parse(key: &'a [u8]) -> std::result::Result<Self, InternalKeyError> {
        let Some((user_key, tag)) = key.split_last_chunk::<TAG_LEN>() else {
            return Err(InternalKeyError::TooShort { len: key.len() });
        };
        let tag = u64::from_le_bytes(*tag);
        let type_byte = (tag & 0xff) as u8;
        let value_type = ValueType::from_byte(type_byte).ok_or(InternalKeyError::UnknownType {
            value_type: type_byte,
        })?;
        Ok(ParsedInternalKey {
            user_key,
            sequence: tag >> 8,
            value_type,
        })
    }

    /// The tag, `sequence << 8 | type`.
    ///
    /// # Errors
    /// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`].
    pub fn tag(&self) -> Result<u64> {
        pack_tag(self.sequence, self.value_type)
    }

    /// Appends the encoded key to `dst`.
    ///
    /// # Errors
    /// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`]; `dst` is then
    /// unchanged.
    pub fn encode_to(&self, dst: &mut Vec<u8>) -> Result<()> {
        append_internal_key(dst, self.user_key, self.sequence, self.value_type)
    }

    /// The encoded key.
    ///
    /// # Errors
    /// As [`encode_to`](Self::encode_to).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut key = Vec::with_capacity(self.user_key.len() + TAG_LEN);
        self.encode_to(&mut key)?;
        Ok(key)
    }
}

/// LevelDB's `InternalKeyComparator`: orders internal keys by user key (under the user
/// comparator `C`) ascending, then by tag descending, so that for each user key the newest
/// entry comes first (and, for equal sequence numbers, a value before a deletion).
///
/// Its separators shorten only the user key, and only when the user comparator makes it
/// both shorter and greater; the shortened key then gets the tag
/// `(MAX_SEQUENCE, ValueType::FOR_SEEK)`, the first possible internal key of that user key.
/// Index blocks of tables written with it are therefore those of LevelDB's `.ldb` files.
///
/// `C` is usually [`BytewiseComparator`] (statically dispatched) or, by default,
/// `dyn Comparator`.
///
/// Keys shorter than 8 bytes are not internal keys; they compare as a user key with tag 0
/// (LevelDB would assert), so the order stays total.
pub struct InternalKeyComparator<C: Comparator + ?Sized = dyn Comparator> {
    user: Arc<C>,
}

impl InternalKeyComparator<BytewiseComparator> {
    /// The internal comparator over [`BytewiseComparator`], LevelDB's default.
    pub fn bytewise() -> Self {
        InternalKeyComparator::new(Arc::new(BytewiseComparator))
    }
}

impl<C: Comparator + ?Sized> InternalKeyComparator<C> {
    /// The internal comparator over `user`.
    pub fn new(user: Arc<C>) -> Self {
        InternalKeyComparator { user }
    }

    /// The user comparator.
    pub fn user_comparator(&self) -> &Arc<C> {
        &self.user
    }
}

impl<C: Comparator + ?Sized> Clone for InternalKeyComparator<C> {
    fn clone(&self) -> Self {
        InternalKeyComparator {
            user: Arc::clone(&self.user),
        }
    }
}

impl<C: Comparator + ?Sized> fmt::Debug for InternalKeyComparator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InternalKeyComparator")
            .field("user", &self.user.name())
            .finish()
    }
}

/// The tag LevelDB gives a shortened separator: `(MAX_SEQUENCE, ValueType::FOR_SEEK)`.
const SEPARATOR_TAG: u64 = MAX_SEQUENCE << 8 | ValueType::FOR_SEEK as u64;

impl<C: Comparator + ?Sized> InternalKeyComparator<C> {
    /// Whether the user comparator made `shortened` physically shorter than `original` but
    /// logically greater: only then does a separator or successor replace the key.
    fn shorter_and_greater(&self, original: &[u8], shortened: &[u8]) -> bool {
        shortened.len() < original.len() && self.user.compare(original, shortened) == Ordering::Less
    }
}

impl<C: Comparator + ?Sized> Comparator for InternalKeyComparator<C> {
    fn name(&self) -> &str {
        INTERNAL_KEY_COMPARATOR_NAME
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let (a_user, a_tag) = split_tag(a);
        let (b_user, b_tag) = split_tag(b);
        self.user
            .compare(a_user, b_user)
            .then_with(|| b_tag.cmp(&a_tag))
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let start_user = split_tag(start).0;
        let mut shortened = start_user.to_vec();
        self.user
            .find_shortest_separator(&mut shortened, split_tag(limit).0);
        // The user comparator keeps `shortened` in [start_user, limit_user). Strictly greater
        // than start_user, it sorts after `start` whatever its tag, and before `limit`, whose
        // user key is greater still.
        if self.shorter_and_greater(start_user, &shortened) {
            shortened.extend_from_slice(&SEPARATOR_TAG.to_le_bytes());
            *start = shortened;
        }
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        let user = split_tag(key).0;
        let mut shortened = user.to_vec();
        self.user.find_short_successor(&mut shortened);
        if self.shorter_and_greater(user, &shortened) {
            shortened.extend_from_slice(&SEPARATOR_TAG.to_le_bytes());
            *key = shortened;
        }
    }

    /// The user comparator's view of the user key: internal keys order by user key first.
    #[inline]
    fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        self.user.bytewise_view(split_tag(key).0)
    }
}

/// LevelDB's `InternalFilterPolicy`: the user policy `P` applied to the user keys of
/// internal keys. Its name is `P`'s, so a table's filter is stored under
/// `filter.<user policy name>` (`filter.leveldb.BuiltinBloomFilter2` for LevelDB's Bloom
/// filter), as LevelDB stores it.
///
/// Keys shorter than 8 bytes are filtered whole (see [`InternalKeyComparator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InternalFilterPolicy<P> {
    user: P,
}

impl<P> InternalFilterPolicy<P> {
    /// Wraps the user policy `user`.
    pub const fn new(user: P) -> Self {
        InternalFilterPolicy { user }
    }

    /// Gives back the user policy.
    pub fn into_inner(self) -> P {
        self.user
    }
}

impl<P: FilterPolicy> FilterPolicy for InternalFilterPolicy<P> {
    fn name(&self) -> &str {
        self.user.name()
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        // Several versions of a user key in the same blocks repeat it here, as in LevelDB;
        // a Bloom filter is the same with or without the duplicates' bits set twice.
        let user_keys: Vec<&[u8]> = keys.iter().map(|k| split_tag(k).0).collect();
        self.user.create_filter(&user_keys, dst);
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        self.user.key_may_match(split_tag(key).0, filter)
    }
}

/// Options that make [`TableBuilder`](leveltable_table::TableBuilder) write tables as a LevelDB 1.23
/// database with the bytewise comparator does: [`InternalKeyComparator`] over
/// [`BytewiseComparator`], and with `Some(bits_per_key)`, LevelDB's Bloom filter over user
/// keys (`leveldb::NewBloomFilterPolicy(bits_per_key)`). Everything else is LevelDB's default
/// (4 KiB blocks, restart interval 16, Snappy); set the database's own values with the
/// setters, or start from [`TableOptions::build_options`]. With compression off, a table of
/// a compaction's entries is byte for byte the file LevelDB wrote.
pub fn ldb_build_options(bloom_bits_per_key: Option<usize>) -> BuildOptions {
    TableOptions::default()
        .filter_policy(bloom_bits_per_key.map(BloomFilterPolicy::new))
        .build_options()
}

/// How table options become a table builder's: every writer of the crate (a database open
/// for writing, a bulk build, [`ldb_build_options`]) writes its tables through these.
impl TableOptions {
    /// Options writing tables as a LevelDB database with the bytewise comparator does,
    /// laid out as `self` says: internal keys under [`InternalKeyComparator`] over
    /// [`BytewiseComparator`], the filters over user keys.
    pub fn build_options(&self) -> BuildOptions {
        self.build_options_for(Arc::new(InternalKeyComparator::bytewise()))
    }

    /// [`build_options`](Self::build_options) with internal keys ordered by the user
    /// comparator `user` (bytewise if `None`).
    pub(crate) fn build_options_ordered(&self, user: Option<&Arc<dyn Comparator>>) -> BuildOptions {
        match user {
            Some(user) => {
                self.build_options_for(Arc::new(InternalKeyComparator::new(Arc::clone(user))))
            }
            None => self.build_options(),
        }
    }

    /// Options writing tables of internal keys ordered by `icmp` (an
    /// [`InternalKeyComparator`]), laid out as `self` says.
    pub(crate) fn build_options_for(&self, icmp: Arc<dyn Comparator>) -> BuildOptions {
        let mut options = BuildOptions::default()
            .comparator(icmp)
            .block_size(self.block_size)
            .block_restart_interval(self.block_restart_interval)
            .compression(self.compression);
        if let Some(policy) = self.filter_policy {
            options = options.filter_policy(InternalFilterPolicy::new(policy));
        }
        if let Some(bits) = self.cache_local_bits_per_key {
            options = options
                .extra_filter_policy(InternalFilterPolicy::new(CacheLocalBloomPolicy::new(bits)));
        }
        options
    }
}

/// Options to read the `.ldb` files of a LevelDB database with the bytewise comparator:
/// [`InternalKeyComparator`] over [`BytewiseComparator`], and every filter this workspace
/// knows by its stored name ([`ReadOptions::known_filter_policies`]) over user keys. The
/// file's cache-local filter answers gets when it has one, LevelDB's Bloom filter otherwise,
/// and a file with neither is read without filter. Checksums are verified; add a cache with
/// [`ReadOptions::block_cache`].
pub fn ldb_read_options() -> ReadOptions {
    ldb_read_options_for(Arc::new(BytewiseComparator))
}

/// How the `.ldb` files of a database ordered by `user` are read: as
/// [`ldb_read_options`], with [`InternalKeyComparator`] over `user`. Every reader of a
/// database's tables (a [`Db`](crate::Db), a salvage, the command line) starts from this.
pub(crate) fn ldb_read_options_for(user: Arc<dyn Comparator>) -> ReadOptions {
    let known = ReadOptions::default().known_filter_policies();
    let mut options = ReadOptions::default().comparator(Arc::new(InternalKeyComparator::new(user)));
    if let Some(policy) = known.filter_policy {
        options = options.filter_policy(InternalFilterPolicy::new(policy));
    }
    for policy in known.extra_filter_policies {
        options = options.extra_filter_policy(InternalFilterPolicy::new(policy));
    }
    options
}

/// What a LevelDB lookup finds for a user key in one table file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    /// The newest version at or below the snapshot is a value.
    Value {
        /// Its sequence number.
        sequence: u64,
        /// The value.
        value: Vec<u8>,
    },
    /// The newest version at or below the snapshot is a deletion: the key is absent, and
    /// older files must not be consulted.
    Deleted {
        /// Its sequence number.
        sequence: u64,
    },
    /// The file has no version of the key at or below the snapshot (or the filter says so):
    /// an older file may have one.
    NotFound,
}

impl LookupResult {
    /// What a lookup finds when the version that decides it is `key`, holding `value`: the
    /// value, or the deletion, with the version's sequence number.
    pub(crate) fn decided_by(key: &ParsedInternalKey<'_>, value: &[u8]) -> LookupResult {
        match key.value_type {
            ValueType::Value => LookupResult::Value {
                sequence: key.sequence,
                value: value.to_vec(),
            },
            ValueType::Deletion => LookupResult::Deleted {
                sequence: key.sequence,
            },
        }
    }

    /// The value, if the result is one.
    pub fn into_value(self) -> Option<Vec<u8>> {
        match self {
            LookupResult::Value { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// An internal key for a message: its user key, escaped and cut to 64 bytes, with its
/// sequence number (or the raw bytes, if it is too short to hold a tag).
pub(crate) fn show_key(key: &[u8]) -> String {
    const SHOWN: usize = 64;
    let (user, tag) = match key.len().checked_sub(TAG_LEN) {
        Some(n) => (&key[..n], Some(&key[n..])),
        None => (key, None),
    };
    let mut s = String::from("\"");
    s.extend(
        user.iter()
            .take(SHOWN)
            .flat_map(|&b| std::ascii::escape_default(b))
            .map(char::from),
    );
    if user.len() > SHOWN {
        s.push_str("...");
    }
    s.push('"');
    if let Some(tag) = tag {
        let mut bytes = [0u8; TAG_LEN];
        bytes.copy_from_slice(tag);
        s.push_str(&format!(" @ {}", u64::from_le_bytes(bytes) >> 8));
    }
    s
}

#[cfg(test)]
mod tests;
