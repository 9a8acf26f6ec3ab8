//! The entries before a block cursor's position, remembered so that stepping backwards
//! through a prefix-compressed block decodes each entry once.

#![deny(clippy::arithmetic_side_effects)]

/// Most entries [`PrevCache`] keeps: more than any sane restart interval needs.
const PREV_CACHE_MAX_ENTRIES: usize = 64;
/// Most key bytes [`PrevCache`] keeps.
const PREV_CACHE_MAX_KEY_BYTES: usize = 64 * 1024;

/// One entry remembered for stepping backwards.
#[derive(Debug, Clone, Copy)]
pub(super) struct PrevEntry {
    pub(super) offset: usize,
    pub(super) next: usize,
    /// Start of its key in [`PrevCache::keys`]; the key ends where the next one starts.
    pub(super) key_start: usize,
    pub(super) value_at: usize,
    pub(super) value_len: usize,
    pub(super) restart_index: usize,
}

/// The entries before the current one, decoded by the last slow `prev`.
///
/// Stepping back in a prefix-compressed block means decoding forward from a restart point.
/// Remembering the entries decoded on the way makes a backward scan of an interval cost one
/// decode per entry instead of one per entry per step. Bounded: a block with a huge restart
/// interval keeps only the last entries before the position (a sliding window).
#[derive(Debug, Clone, Default)]
pub(super) struct PrevCache {
    pub(super) entries: Vec<PrevEntry>,
    pub(super) keys: Vec<u8>,
}

impl PrevCache {
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.keys.clear();
    }

    /// Remembers an entry, dropping the oldest half when full. Returns false (and forgets
    /// everything) for a key too long to keep.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "keys hold at most 64 KiB and key at most 32 KiB; the entries kept start at \
                  or after `cut`"
    )]
    pub(super) fn push(&mut self, key: &[u8], mut entry: PrevEntry) -> bool {
        if key.len() > PREV_CACHE_MAX_KEY_BYTES / 2 {
            self.clear();
            return false;
        }
        if self.entries.len() == PREV_CACHE_MAX_ENTRIES
            || self.keys.len() + key.len() > PREV_CACHE_MAX_KEY_BYTES
        {
            let keep_from = self.entries.len() / 2;
            let cut = self
                .entries
                .get(keep_from)
                .map_or(self.keys.len(), |e| e.key_start);
            self.entries.drain(..keep_from);
            self.keys.drain(..cut);
            for e in &mut self.entries {
                e.key_start -= cut;
            }
        }
        entry.key_start = self.keys.len();
        self.keys.extend_from_slice(key);
        self.entries.push(entry);
        true
    }
}
