//! Entries given in key order on their way to a builder, with a key given twice in a row
//! resolved as [`Duplicates`] says: refused, naming it, or the last value given kept. Every
//! front end that feeds sorted input (the command line's `db build-part`, Python's
//! `build_part`) goes through it, so they agree.

use super::external_sort::{Duplicates, duplicate};
use crate::Result;

/// Where a [`SortedFeed`] passes entries on: a builder's `add`.
pub type Sink<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// Resolves keys given twice in a row before the entries reach a builder. The builder still
/// refuses keys out of order.
///
/// The entry given last is held until the next one shows whether its key repeats; rows given
/// as a batch ([`add_rows`](Self::add_rows)) are passed on where they lie, and only the
/// batch's last row is copied.
#[derive(Debug)]
pub struct SortedFeed {
    duplicates: Duplicates,
    held: Option<(Vec<u8>, Vec<u8>)>,
}

impl SortedFeed {
    /// A feed resolving keys given twice as `duplicates` says.
    pub fn new(duplicates: Duplicates) -> SortedFeed {
        SortedFeed {
            duplicates,
            held: None,
        }
    }

    /// Gives one entry; `sink` receives the entry before it once it is known not to repeat.
    ///
    /// # Errors
    /// [`Error::DuplicateKey`](crate::Error::DuplicateKey) for a key given twice in a row
    /// under [`Duplicates::Error`]; whatever `sink` returns.
    pub fn add(&mut self, key: &[u8], value: &[u8], sink: &mut Sink<'_>) -> Result<()> {
        self.add_rows(1, |_| (key, value), sink)
    }

    /// Gives rows `0..n`, row `i` being `row(i)`, passing on to `sink` each that is known
    /// not to repeat.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub fn add_rows<'a>(
        &mut self,
        n: usize,
        row: impl Fn(usize) -> (&'a [u8], &'a [u8]),
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let Some(last) = n.checked_sub(1) else {
            return Ok(());
        };
        if let Some((key, value)) = self.held.take() {
            if key.as_slice() != row(0).0 {
                sink(&key, &value)?;
            } else if self.duplicates == Duplicates::Error {
                return Err(duplicate(&key));
            }
        }
        for i in 0..last {
            let (key, value) = row(i);
            if key == row(i + 1).0 {
                if self.duplicates == Duplicates::Error {
                    return Err(duplicate(key));
                }
                continue;
            }
            sink(key, value)?;
        }
        let (key, value) = row(last);
        let mut held = self.held.take().unwrap_or_default();
        held.0.clear();
        held.0.extend_from_slice(key);
        held.1.clear();
        held.1.extend_from_slice(value);
        self.held = Some(held);
        Ok(())
    }

    /// Passes on the entry held last.
    ///
    /// # Errors
    /// Whatever `sink` returns.
    pub fn finish(mut self, sink: &mut Sink<'_>) -> Result<()> {
        match self.held.take() {
            Some((key, value)) => sink(&key, &value),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn run(duplicates: Duplicates, batches: &[&[(&str, &str)]]) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        let mut sink = |k: &[u8], v: &[u8]| -> Result<()> {
            out.push((
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ));
            Ok(())
        };
        let mut feed = SortedFeed::new(duplicates);
        for batch in batches {
            feed.add_rows(
                batch.len(),
                |i| (batch[i].0.as_bytes(), batch[i].1.as_bytes()),
                &mut sink,
            )?;
        }
        feed.finish(&mut sink)?;
        Ok(out)
    }

    #[test]
    fn the_last_of_a_run_of_equal_keys_is_kept_across_batches() {
        let batches: &[&[(&str, &str)]] = &[
            &[("a", "1"), ("b", "1")],
            &[("b", "2"), ("b", "3")],
            &[("c", "1")],
        ];
        let got = run(Duplicates::KeepLast, batches).unwrap();
        let want = [("a", "1"), ("b", "3"), ("c", "1")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }

    #[test]
    fn a_key_given_twice_is_refused_by_name() {
        for batches in [
            &[&[("a", "1"), ("b", "1"), ("b", "2")][..]][..],
            &[&[("a", "1"), ("b", "1")][..], &[("b", "2")][..]],
        ] {
            match run(Duplicates::Error, batches) {
                Err(Error::DuplicateKey { key }) => assert_eq!(key, b"b"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            run(Duplicates::Error, &[&[("a", "1")], &[], &[("b", "2")]])
                .unwrap()
                .len(),
            2
        );
    }
}
