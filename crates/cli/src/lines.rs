//! The line format every command reads and writes: `KEY<TAB>VALUE`, one entry per line.
//!
//! In text mode the fields are the bytes themselves, so neither can hold a tab or a newline
//! (a key or value that does is refused with a hint to use `--hex`). In hex mode both fields
//! are hex digits: upper or lower case on input, lowercase on output. A line ends at `\n`;
//! nothing else is stripped, so what `dump` writes, `build` reads back unchanged.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io::{self, BufRead, Read};

use memchr::{memchr, memchr2};

/// How a key or value is spelled in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The bytes as they are; no tab or newline allowed.
    Text,
    /// Two hex digits per byte.
    Hex,
}

/// The longest input line read by default: 256 MiB. Keys and values may be up to 4 GiB in
/// the format, but a line is held in memory whole, so the tool asks for a flag to go further.
pub const DEFAULT_MAX_LINE: usize = 256 << 20;

/// The most a shown key contributes to an error message before it is cut.
const MAX_SHOWN_BYTES: usize = 64;

impl Encoding {
    /// [`Hex`](Encoding::Hex) if `hex`, else [`Text`](Encoding::Text).
    pub fn from_hex_flag(hex: bool) -> Encoding {
        if hex { Encoding::Hex } else { Encoding::Text }
    }

    /// The bytes a field of input stands for.
    ///
    /// # Errors
    /// In hex mode, a field of odd length or with a character that is not a hex digit. In
    /// text mode, a field holding a tab or a newline.
    pub fn decode(self, field: &[u8]) -> Result<Cow<'_, [u8]>, FieldError> {
        match self {
            Encoding::Text => match unprintable(field) {
                Some(at) => Err(FieldError::Unprintable { at }),
                None => Ok(Cow::Borrowed(field)),
            },
            Encoding::Hex => decode_hex(field).map(Cow::Owned),
        }
    }

    /// The bytes a field of input stands for, decoded into `buf` (cleared first) when they
    /// need decoding, so that a caller reading many fields reuses one allocation.
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn decode_into<'a>(
        self,
        field: &'a [u8],
        buf: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], FieldError> {
        match self {
            Encoding::Text => match unprintable(field) {
                Some(at) => Err(FieldError::Unprintable { at }),
                None => Ok(field),
            },
            Encoding::Hex => {
                decode_hex_into(field, buf)?;
                Ok(buf)
            }
        }
    }

    /// Appends `field` spelled in this encoding to `out`.
    ///
    /// # Errors
    /// In text mode, [`FieldError::Unprintable`] if `field` holds a tab or a newline; `out`
    /// is then unchanged.
    pub fn encode(self, field: &[u8], out: &mut Vec<u8>) -> Result<(), FieldError> {
        match self {
            Encoding::Text => {
                if let Some(at) = unprintable(field) {
                    return Err(FieldError::Unprintable { at });
                }
                out.extend_from_slice(field);
            }
            Encoding::Hex => {
                let start = out.len();
                out.resize(start + field.len() * 2, 0);
                // The room is exactly twice the field's length: this cannot fail.
                let _ = const_hex::encode_to_slice(field, &mut out[start..]);
            }
        }
        Ok(())
    }

    /// Shows `key` in an error message: lowercase hex in hex mode, otherwise a quoted string
    /// with unprintable bytes escaped. Long keys are cut.
    pub fn show(self, key: &[u8]) -> Shown<'_> {
        Shown {
            encoding: self,
            bytes: key,
            whole: false,
        }
    }

    /// Shows `key` as [`show`](Self::show) does, but never cut: for output that programs
    /// read, such as JSON.
    pub fn show_whole(self, key: &[u8]) -> Shown<'_> {
        Shown {
            encoding: self,
            bytes: key,
            whole: true,
        }
    }

    /// The hint to add to an error about a tab or newline in text mode.
    pub fn hex_hint(self) -> &'static str {
        match self {
            Encoding::Text => "; use --hex for keys and values with tabs or newlines",
            Encoding::Hex => "",
        }
    }
}

/// A key shown in a message; see [`Encoding::show`].
pub struct Shown<'a> {
    encoding: Encoding,
    bytes: &'a [u8],
    /// Whether the key is shown whole rather than cut at [`MAX_SHOWN_BYTES`].
    whole: bool,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut = !self.whole && self.bytes.len() > MAX_SHOWN_BYTES;
        let shown = if cut {
            &self.bytes[..MAX_SHOWN_BYTES]
        } else {
            self.bytes
        };
        match self.encoding {
            Encoding::Hex => {
                for &b in shown {
                    write!(f, "{b:02x}")?;
                }
            }
            Encoding::Text => {
                f.write_char('"')?;
                for chunk in shown.utf8_chunks() {
                    for c in chunk.valid().chars() {
                        write!(f, "{}", c.escape_debug())?;
                    }
                    for &b in chunk.invalid() {
                        write!(f, "\\x{b:02x}")?;
                    }
                }
                f.write_char('"')?;
            }
        }
        if cut {
            write!(f, "... ({} bytes)", self.bytes.len())?;
        }
        Ok(())
    }
}

/// Why a field could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// Text mode, and the field holds a tab or newline at byte `at`.
    Unprintable {
        /// Position of the first tab or newline.
        at: usize,
    },
    /// Hex mode, and the field has an odd number of digits.
    OddHex {
        /// The number of digits.
        len: usize,
    },
    /// Hex mode, and the byte at `at` is not a hex digit.
    NotHex {
        /// Position of the byte in the field.
        at: usize,
        /// The byte.
        byte: u8,
    },
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldError::Unprintable { .. } => f.write_str("contains a tab or a newline"),
            FieldError::OddHex { len } => {
                write!(f, "has an odd number of hex digits ({len})")
            }
            FieldError::NotHex { at, byte } => write!(
                f,
                "is not hex: {} at position {}",
                Encoding::Text.show(&[byte]),
                at + 1
            ),
        }
    }
}

/// Where the first tab or newline of `field` lies: text mode cannot spell either.
fn unprintable(field: &[u8]) -> Option<usize> {
    memchr2(b'\t', b'\n', field)
}

fn decode_hex(field: &[u8]) -> Result<Vec<u8>, FieldError> {
    let mut out = Vec::new();
    decode_hex_into(field, &mut out)?;
    Ok(out)
}

/// Decodes the hex digits of `field` into `out`, cleared first.
fn decode_hex_into(field: &[u8], out: &mut Vec<u8>) -> Result<(), FieldError> {
    out.clear();
    if field.len() % 2 == 0 {
        out.resize(field.len() / 2, 0);
        if const_hex::decode_to_slice(field, out).is_ok() {
            return Ok(());
        }
        out.clear();
    }
    Err(hex_mistake(field))
}

/// What is wrong with `field`, which does not decode as hex: its first character that is
/// not a hex digit (reported before an odd length: it is the likelier mistake), or its odd
/// length.
#[cold]
fn hex_mistake(field: &[u8]) -> FieldError {
    match field.iter().position(|b| !b.is_ascii_hexdigit()) {
        Some(at) => FieldError::NotHex {
            at,
            byte: field[at],
        },
        None => FieldError::OddHex { len: field.len() },
    }
}

/// Why a line of input is not an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// The line has no tab.
    NoTab,
    /// Text mode, and the line has more than one tab.
    ExtraTab,
    /// The key does not decode.
    Key(FieldError),
    /// The value does not decode.
    Value(FieldError),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::NoTab => f.write_str("expected KEY<TAB>VALUE, found no tab"),
            LineError::ExtraTab => f.write_str(
                "more than one tab; in text mode neither the key nor the value may hold a tab \
                 (use --hex)",
            ),
            LineError::Key(e) => write!(f, "the key {e}"),
            LineError::Value(e) => write!(f, "the value {e}"),
        }
    }
}

/// A decoded key and value, borrowed from the line where no decoding was needed.
pub type Entry<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// Splits a line at its first tab into the key and value fields, as they are written.
fn split_entry(line: &[u8], encoding: Encoding) -> Result<(&[u8], &[u8]), LineError> {
    let tab = memchr(b'\t', line).ok_or(LineError::NoTab)?;
    let (key, value) = (&line[..tab], &line[tab + 1..]);
    if encoding == Encoding::Text && memchr(b'\t', value).is_some() {
        return Err(LineError::ExtraTab);
    }
    Ok((key, value))
}

/// Splits a line (without its `\n`) into a decoded key and value.
///
/// # Errors
/// See [`LineError`].
pub fn parse_entry(line: &[u8], encoding: Encoding) -> Result<Entry<'_>, LineError> {
    let (key, value) = split_entry(line, encoding)?;
    let key = encoding.decode(key).map_err(LineError::Key)?;
    let value = encoding.decode(value).map_err(LineError::Value)?;
    Ok((key, value))
}

/// Like [`parse_entry`], decoding hex fields into `key_buf` and `value_buf` (reused from line
/// to line) instead of new allocations.
///
/// # Errors
/// See [`LineError`].
pub fn parse_entry_into<'a>(
    line: &'a [u8],
    encoding: Encoding,
    key_buf: &'a mut Vec<u8>,
    value_buf: &'a mut Vec<u8>,
) -> Result<(&'a [u8], &'a [u8]), LineError> {
    let (key, value) = split_entry(line, encoding)?;
    let key = encoding.decode_into(key, key_buf).map_err(LineError::Key)?;
    let value = encoding
        .decode_into(value, value_buf)
        .map_err(LineError::Value)?;
    Ok((key, value))
}

/// Appends `KEY<TAB>VALUE\n` to `out`.
///
/// # Errors
/// As [`Encoding::encode`], saying which field failed; `out` is then unchanged.
pub fn write_entry(
    key: &[u8],
    value: &[u8],
    encoding: Encoding,
    out: &mut Vec<u8>,
) -> Result<(), LineError> {
    let start = out.len();
    let result = encoding
        .encode(key, out)
        .map_err(LineError::Key)
        .and_then(|()| {
            out.push(b'\t');
            encoding.encode(value, out).map_err(LineError::Value)
        });
    match result {
        Ok(()) => {
            out.push(b'\n');
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Reads lines one at a time, counting them and the bytes consumed, and refusing lines
/// longer than a limit instead of buffering them whole.
pub struct LineReader<R> {
    reader: R,
    buf: Vec<u8>,
    /// Bytes of the reader's buffer the last line (read in place) took, its `\n` included.
    pending: usize,
    line_number: u64,
    bytes_read: u64,
    max_line: usize,
}

/// A line longer than the reader's limit.
#[derive(Debug)]
pub enum ReadError {
    /// Reading failed.
    Io(io::Error),
    /// Line `line` is longer than `max` bytes.
    TooLong {
        /// Its number, from 1.
        line: u64,
        /// The limit.
        max: usize,
    },
}

impl<R: BufRead> LineReader<R> {
    /// A reader of lines of at most `max_line` bytes (not counting the `\n`).
    pub fn new(reader: R, max_line: usize) -> LineReader<R> {
        LineReader {
            reader,
            buf: Vec::new(),
            pending: 0,
            line_number: 0,
            bytes_read: 0,
            max_line,
        }
    }

    /// The next line without its `\n`, with its number (from 1), or `None` at the end of
    /// the input. A last line without `\n` counts; an empty input has no lines.
    ///
    /// # Errors
    /// [`ReadError::Io`] if reading fails, [`ReadError::TooLong`] for a line over the limit
    /// (nothing more than the limit and one byte is buffered).
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ReadError> {
        self.reader.consume(std::mem::take(&mut self.pending));
        // A line the reader's buffer holds whole, with its `\n`, is read where it lies.
        let in_place = match self.reader.fill_buf() {
            Ok(available) => memchr(b'\n', available).filter(|&end| end <= self.max_line),
            // Read again below, which retries an interrupted read and reports the rest.
            Err(_) => None,
        };
        if let Some(end) = in_place {
            self.pending = end + 1;
            self.line_number = self.line_number.saturating_add(1);
            self.bytes_read = self.bytes_read.saturating_add(end as u64 + 1);
            // The buffer is not empty: this reads nothing and returns it again.
            let available = self.reader.fill_buf().map_err(ReadError::Io)?;
            return Ok(Some((self.line_number, &available[..end])));
        }
        self.buf.clear();
        // One byte over the limit tells a line that is too long from one that fits. The
        // limit comes from --max-line, up to usize::MAX: saturate, never wrap to a limit of
        // 0 (which would read nothing and end the input silently).
        let limit = u64::try_from(self.max_line)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(ReadError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        self.line_number = self.line_number.saturating_add(1);
        self.bytes_read = self.bytes_read.saturating_add(n as u64);
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.len() > self.max_line {
            return Err(ReadError::TooLong {
                line: self.line_number,
                max: self.max_line,
            });
        }
        Ok(Some((self.line_number, &self.buf)))
    }

    /// Bytes consumed so far, newlines included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hex decoded a character at a time: the bytes, or the first character that is not a
    /// digit, or else the odd length.
    fn decode_slowly(field: &[u8]) -> Result<Vec<u8>, FieldError> {
        let digits: Vec<u8> = field
            .iter()
            .enumerate()
            .map(|(at, &byte)| match (byte as char).to_digit(16) {
                Some(d) => Ok(d as u8),
                None => Err(FieldError::NotHex { at, byte }),
            })
            .collect::<Result<_, _>>()?;
        if digits.len() % 2 == 1 {
            return Err(FieldError::OddHex { len: field.len() });
        }
        Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
    }

    proptest! {
        /// Long fields go through the vector code in blocks of 16 and 32 characters, then a
        /// tail: any bytes are appended as two lowercase digits each, and any length, any
        /// case, and a stray character anywhere (any byte at all) must decode, or fail, as
        /// one character at a time does. A `0x` in front is not hex either (the decoder we
        /// call would strip it).
        #[test]
        fn hex_decodes_as_one_digit_at_a_time(
            bytes in proptest::collection::vec(any::<u8>(), 0..160),
            upper in any::<bool>(),
            stray in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
            odd in any::<bool>(),
            prefixed in any::<bool>(),
        ) {
            let mut field = b"kept".to_vec();
            Encoding::Hex.encode(&bytes, &mut field).unwrap();
            let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let kept: Vec<u8> = field.drain(..4).collect();
            prop_assert_eq!(kept.as_slice(), b"kept");
            prop_assert_eq!(&field, digits.as_bytes());
            if upper {
                field.make_ascii_uppercase();
            }
            if let Some((at, byte)) = stray.filter(|_| !field.is_empty()) {
                let at = at.index(field.len());
                field[at] = byte;
            }
            if odd {
                field.push(b'7');
            }
            if prefixed {
                field.splice(0..0, *b"0x");
            }
            let mut buf = b"left over".to_vec();
            let got = Encoding::Hex.decode_into(&field, &mut buf).map(<[u8]>::to_vec);
            prop_assert_eq!(got, decode_slowly(&field));
        }
    }

    #[test]
    fn hex_round_trips_and_reports_mistakes() {
        let mut out = Vec::new();
        Encoding::Hex.encode(&[0, 0xab, 0xff], &mut out).unwrap();
        assert_eq!(out, b"00abff");
        assert_eq!(
            Encoding::Hex.decode(b"00ABff").unwrap().as_ref(),
            &[0, 0xab, 0xff]
        );
        assert_eq!(Encoding::Hex.decode(b"").unwrap().as_ref(), b"");
        for prefixed in [&b"0x41"[..], b"0x4142", b"0X41"] {
            assert_eq!(
                Encoding::Hex.decode(prefixed),
                Err(FieldError::NotHex {
                    at: 1,
                    byte: prefixed[1]
                })
            );
        }
        assert_eq!(
            Encoding::Hex.decode(b"abc"),
            Err(FieldError::OddHex { len: 3 })
        );
        assert_eq!(
            Encoding::Hex.decode(b"0g"),
            Err(FieldError::NotHex { at: 1, byte: b'g' })
        );
        assert_eq!(
            Encoding::Hex.decode(b"00z"),
            Err(FieldError::NotHex { at: 2, byte: b'z' })
        );
        assert_eq!(
            FieldError::NotHex { at: 1, byte: b'g' }.to_string(),
            "is not hex: \"g\" at position 2"
        );
    }

    /// The reusing decoders answer as the allocating ones, on every byte as a digit and on
    /// the malformed fields above.
    #[test]
    fn decoding_into_a_buffer_agrees() {
        let mut buf = b"left over".to_vec();
        for field in [
            &b"00ABff"[..],
            b"",
            b"abc",
            b"0g",
            b"00z",
            b"g0",
            b"0123456789abcdefABCDEF",
        ] {
            let got = Encoding::Hex
                .decode_into(field, &mut buf)
                .map(<[u8]>::to_vec);
            let want = Encoding::Hex.decode(field).map(|c| c.into_owned());
            assert_eq!(got, want, "{field:?}");
        }
        for b in 0..=255u8 {
            let want = match (b as char).to_digit(16) {
                Some(d) => Ok(vec![d as u8]),
                None => Err(FieldError::NotHex { at: 1, byte: b }),
            };
            let got = Encoding::Hex.decode(&[b'0', b]).map(|c| c.into_owned());
            assert_eq!(got, want, "{b}");
            let mut out = Vec::new();
            Encoding::Hex.encode(&[b], &mut out).unwrap();
            assert_eq!(out, format!("{b:02x}").as_bytes());
        }
        assert_eq!(
            Encoding::Text.decode_into(b"k v", &mut buf),
            Ok(&b"k v"[..])
        );
        let (mut k, mut v) = (Vec::new(), Vec::new());
        assert_eq!(
            parse_entry_into(b"6b\t0A", Encoding::Hex, &mut k, &mut v),
            Ok((&b"k"[..], &b"\n"[..]))
        );
        assert_eq!(
            parse_entry_into(b"a\tb\tc", Encoding::Text, &mut k, &mut v),
            Err(LineError::ExtraTab)
        );
        assert_eq!(
            parse_entry_into(b"6b\tzz", Encoding::Hex, &mut k, &mut v),
            Err(LineError::Value(FieldError::NotHex { at: 0, byte: b'z' }))
        );
    }

    #[test]
    fn text_refuses_tabs_and_newlines() {
        let mut out = b"x".to_vec();
        assert_eq!(
            write_entry(b"k", b"a\nb", Encoding::Text, &mut out),
            Err(LineError::Value(FieldError::Unprintable { at: 1 }))
        );
        assert_eq!(out, b"x");
        assert_eq!(
            write_entry(b"k\t", b"", Encoding::Text, &mut out),
            Err(LineError::Key(FieldError::Unprintable { at: 1 }))
        );
        write_entry(b"k\t", b"v\n", Encoding::Hex, &mut out).unwrap();
        assert_eq!(out, b"x6b09\t760a\n");
    }

    #[test]
    fn lines_split_at_the_first_tab() {
        let (k, v) = parse_entry(b"key\tvalue with spaces", Encoding::Text).unwrap();
        assert_eq!(
            (k.as_ref(), v.as_ref()),
            (&b"key"[..], &b"value with spaces"[..])
        );
        let (k, v) = parse_entry(b"\t", Encoding::Text).unwrap();
        assert_eq!((k.as_ref(), v.as_ref()), (&b""[..], &b""[..]));
        assert_eq!(
            parse_entry(b"novalue", Encoding::Text),
            Err(LineError::NoTab)
        );
        assert_eq!(
            parse_entry(b"a\tb\tc", Encoding::Text),
            Err(LineError::ExtraTab)
        );
        assert_eq!(
            parse_entry(b"6b\tzz", Encoding::Hex),
            Err(LineError::Value(FieldError::NotHex { at: 0, byte: b'z' }))
        );
        assert_eq!(
            parse_entry(b"6b\t0a\t", Encoding::Hex),
            Err(LineError::Value(FieldError::NotHex { at: 2, byte: b'\t' }))
        );
    }

    proptest! {
        /// Lines read where the reader's buffer holds them whole, or gathered across its
        /// refills (a buffer of a few bytes), are the input's lines: the same numbers, the
        /// same bytes, the same refusal of the first line over the limit.
        #[test]
        fn lines_read_in_place_or_across_refills_are_the_inputs(
            input in proptest::collection::vec(prop::sample::select(b"ab\t\n".to_vec()), 0..200),
            capacity in 1usize..24,
            max in 0usize..12,
        ) {
            let mut expected = Vec::new();
            let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
            if input.last().is_none_or(|&b| b == b'\n') {
                lines.pop();
            }
            for (i, line) in lines.iter().enumerate() {
                if line.len() > max {
                    expected.push(Err(i as u64 + 1));
                    break;
                }
                expected.push(Ok(line.to_vec()));
            }
            let mut r = LineReader::new(io::BufReader::with_capacity(capacity, input.as_slice()), max);
            let mut got = Vec::new();
            loop {
                match r.next_line() {
                    Ok(Some((n, line))) => {
                        prop_assert_eq!(n, got.len() as u64 + 1);
                        got.push(Ok(line.to_vec()));
                    }
                    Ok(None) => {
                        prop_assert_eq!(r.bytes_read(), input.len() as u64);
                        break;
                    }
                    Err(ReadError::TooLong { line, max: m }) => {
                        prop_assert_eq!(m, max);
                        got.push(Err(line));
                        break;
                    }
                    Err(ReadError::Io(e)) => panic!("{e}"),
                }
            }
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn shown_keys_are_escaped_and_cut() {
        assert_eq!(
            Encoding::Text.show(b"a\"\x00\xff").to_string(),
            r#""a\"\0\xff""#
        );
        assert_eq!(Encoding::Hex.show(b"\x01\xab").to_string(), "01ab");
        let long = vec![b'k'; 100];
        let shown = Encoding::Text.show(&long).to_string();
        assert!(shown.ends_with("\"... (100 bytes)"), "{shown}");
    }

    #[test]
    fn reader_counts_lines_and_refuses_long_ones() {
        let input = b"a\tb\n\nlast".as_slice();
        let mut r = LineReader::new(input, 100);
        assert_eq!(r.next_line().unwrap(), Some((1, &b"a\tb"[..])));
        assert_eq!(r.next_line().unwrap(), Some((2, &b""[..])));
        assert_eq!(r.next_line().unwrap(), Some((3, &b"last"[..])));
        assert_eq!(r.next_line().unwrap(), None);
        assert_eq!(r.bytes_read(), input.len() as u64);

        let mut r = LineReader::new(b"1234\n12345\n123456\n".as_slice(), 5);
        assert_eq!(r.next_line().unwrap(), Some((1, &b"1234"[..])));
        assert_eq!(r.next_line().unwrap(), Some((2, &b"12345"[..])));
        assert!(matches!(
            r.next_line(),
            Err(ReadError::TooLong { line: 3, max: 5 })
        ));
    }

    #[test]
    fn the_largest_limits_read_every_line() {
        for max in [usize::MAX, usize::MAX - 1, 1, 0] {
            let mut r = LineReader::new(b"\n\n".as_slice(), max);
            assert_eq!(r.next_line().unwrap(), Some((1, &b""[..])), "max {max}");
            assert_eq!(r.next_line().unwrap(), Some((2, &b""[..])), "max {max}");
            assert_eq!(r.next_line().unwrap(), None);
        }
        let mut r = LineReader::new(b"a\tb\nc\td".as_slice(), usize::MAX);
        assert_eq!(r.next_line().unwrap(), Some((1, &b"a\tb"[..])));
        assert_eq!(r.next_line().unwrap(), Some((2, &b"c\td"[..])));
    }
}
