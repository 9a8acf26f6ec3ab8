//! A forward run through a block: the entries from the current one on, decoded in one tight
//! pass and handed to a visitor, with every check of a step ([`Cursor::next`]): each entry's
//! header must decode, its key delta and value must end before the restart array, and its
//! shared prefix must not be longer than the key before it.

#![deny(clippy::arithmetic_side_effects)]

use super::{Cursor, decode_entry};

/// Sets `key` to its first `shared` bytes followed by the `non_shared` bytes of `data` at
/// `delta_at`, which the caller checked lie in `data` (`shared <= key.len()`).
#[inline(always)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "delta_at + non_shared <= data.len() (checked by decode_entry) and \
              shared + non_shared is a key length held in memory"
)]
pub(super) fn set_key(
    key: &mut Vec<u8>,
    data: &[u8],
    shared: usize,
    delta_at: usize,
    non_shared: usize,
) {
    if let Some((w0, w1)) = short_key_words(key, data, shared, delta_at, non_shared) {
        key.clear();
        key.extend_from_slice(&w0);
        key.extend_from_slice(&w1);
        key.truncate(shared + non_shared);
        return;
    }
    key.truncate(shared);
    // Most keys' unshared bytes are short: copy a fixed 16 bytes (in registers, where a
    // copy of varying length is a call) when the block has them, and cut the excess.
    let chunk = data
        .get(delta_at..delta_at + 16)
        .and_then(|c| <&[u8; 16]>::try_from(c).ok());
    match chunk {
        Some(chunk) if non_shared <= 16 => {
            key.extend_from_slice(chunk);
            key.truncate(shared + non_shared);
        }
        _ => key.extend_from_slice(
            data.get(delta_at..delta_at + non_shared)
                .unwrap_or_default(),
        ),
    }
}

/// A key of at most 32 bytes that shares at most 16 with the one before it, as the two
/// 16-byte words it is written with: the first word blends the shared bytes of the key
/// before with the delta, the second is the delta's rest. `None` when the key is longer,
/// shares more, or `data` lacks the 32 bytes read from `delta_at - shared` on.
///
/// Written as two stores from the start of the buffer, each load of the key that follows
/// (its tag, its 8-byte words as compared, its copies) lies within one store and is served
/// from it; a 16-byte store of the delta at the shared length would make such loads wait
/// until it reaches the cache, on every entry.
#[inline(always)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "shared <= 16 and non_shared <= 32 are checked first"
)]
fn short_key_words(
    key: &[u8],
    data: &[u8],
    shared: usize,
    delta_at: usize,
    non_shared: usize,
) -> Option<([u8; 16], [u8; 16])> {
    if shared > 16 || non_shared > 32 || shared + non_shared > 32 {
        return None;
    }
    // Byte `i >= shared` of the key is `data[from + i]`.
    let from = delta_at.checked_sub(shared)?;
    let words = data.get(from..from.checked_add(32)?)?;
    let (d0, d1) = words.split_at(16);
    let d0 = <[u8; 16]>::try_from(d0).ok()?;
    let d1 = <[u8; 16]>::try_from(d1).ok()?;
    if shared == 0 {
        return Some((d0, d1));
    }
    let before = <[u8; 16]>::try_from(key.get(..16)?).ok()?;
    // A select under a mask loaded from a table, which compiles to three vector
    // operations: the word stays in a vector register and is written with one store.
    let mask = PREFIX_MASKS.get(shared)?;
    let mut w0 = [0u8; 16];
    for (((w, b), d), m) in w0.iter_mut().zip(before).zip(d0).zip(mask) {
        *w = (b & m) | (d & !m);
    }
    Some((w0, d1))
}

/// `PREFIX_MASKS[n]`: 0xff in the first `n` bytes, 0 in the others.
const PREFIX_MASKS: [[u8; 16]; 17] = {
    let mut masks = [[0u8; 16]; 17];
    let mut n = 0;
    while n < 17 {
        let mut i = 0;
        while i < n {
            masks[n][i] = 0xff;
            i += 1;
        }
        n += 1;
    }
    masks
};

impl Cursor {
    /// Hands `visit` the current entry and those after it in the block, each as it is
    /// decoded, until `visit` returns `false` — the cursor then stays at that entry, and
    /// this returns `true` — or the block's entries end: the cursor is then past the last
    /// one (not valid), or not valid with the error in [`status`](Self::status) if an entry
    /// does not decode. Does nothing and returns `false` when not valid.
    ///
    /// The same entries, checked the same way, as [`next`](Self::next) steps through; the
    /// restart block the cursor is in is worked out only where it stops.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "decode_entry checked delta_at + non_shared + value_len within \
                  restarts_offset - next; restart_index < num_restarts in the fix-up"
    )]
    pub(crate) fn run_forward(
        &mut self,
        data: &[u8],
        visit: &mut impl FnMut(&[u8], &[u8]) -> bool,
    ) -> bool {
        if !self.valid() {
            return false;
        }
        let end = self.layout.restarts_offset;
        let (mut current, mut next) = (self.current, self.next);
        let (mut value_at, mut value_len) = (self.value_at, self.value_len);
        loop {
            let value = data.get(value_at..value_at + value_len).unwrap_or_default();
            if !visit(&self.key, value) {
                self.current = current;
                self.next = next;
                self.value_at = value_at;
                self.value_len = value_len;
                while self.next_restart <= current {
                    self.set_restart(data, self.restart_index + 1);
                }
                return true;
            }
            if next >= end {
                self.invalidate();
                return false;
            }
            let header = data.get(next..end).and_then(decode_entry);
            let Some(h) = header.filter(|h| h.shared <= self.key.len()) else {
                self.corruption(next);
                return false;
            };
            let delta_at = next + h.delta_at;
            set_key(&mut self.key, data, h.shared, delta_at, h.non_shared);
            current = next;
            value_at = delta_at + h.non_shared;
            value_len = h.value_len;
            next = value_at + value_len;
        }
    }
}
