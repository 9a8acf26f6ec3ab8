//! V8's `ValueDeserializer` format (`v8/src/objects/value-serializer.cc`), versions 13 to 16.
//!
//! Tag by tag: the primitives (`_` undefined, `0` null, `T`/`F`, `I` zigzag int32, `U`
//! uint32, `N` double, `Z` BigInt, strings `"` Latin-1, `c` UTF-16LE, `S` UTF-8), objects
//! (`o`…`{`), dense (`A`…`$`) and sparse (`a`…`@`) arrays, `D` dates, `R` regular expressions,
//! `;`…`:` maps, `'`…`,` sets, `B`/`C`/`~` array buffers and the `V` views that follow them,
//! `y`/`x`/`n`/`z`/`s` wrapped primitives, `r` errors, `^` back-references, `\` host objects
//! (Blink's, see `host.rs`), `\0` padding and `?` object-count checks. Any other tag is an
//! [`Error::UnknownTag`] naming the tag and its offset.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::bigint;
use super::node::Node;
use crate::error::{Error, Result};
use crate::json;

const WHAT: &str = "V8 value";

pub(crate) struct Deserializer<'a> {
    data: &'a [u8],
    pub(crate) pos: usize,
    /// Offset of `data` in the input the caller gave, for error offsets.
    pub(crate) base: usize,
    /// V8's format version from the header.
    pub(crate) version: u32,
    /// Blink's format version from its envelope (0 for bare V8 data).
    pub(crate) blink_version: u32,
    /// Every object by V8 id; `None` while it is being decoded.
    objects: Vec<Option<Rc<Node>>>,
    /// How many levels each finished object nests, written out (references included).
    heights: Vec<usize>,
    /// The bytes of the array buffers among them.
    buffers: HashMap<u32, Rc<[u8]>>,
    depth: usize,
    /// The deepest level the value being read reaches, written out: a reference to an
    /// object reaches as deep as the object nests below it.
    deepest: usize,
    max_depth: usize,
}

/// What reading one value gave: an array buffer is remembered so that a view may follow it.
enum Read {
    Value(Rc<Node>),
    Buffer(u32, Rc<Node>),
}

impl<'a> Deserializer<'a> {
    pub(crate) fn new(data: &'a [u8], base: usize, blink_version: u32, max_depth: usize) -> Self {
        Deserializer {
            data,
            pos: 0,
            base,
            version: 0,
            blink_version,
            objects: Vec::new(),
            heights: Vec::new(),
            buffers: HashMap::new(),
            depth: 0,
            deepest: 0,
            max_depth,
        }
    }

    /// Offset of the next byte in the caller's input.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn truncated(&self, what: &'static str) -> Error {
        Error::Truncated {
            what,
            offset: self.offset(),
        }
    }

    pub(crate) fn invalid_at(&self, at: usize, detail: impl Into<String>) -> Error {
        Error::invalid(WHAT, self.base + at, detail)
    }

    /// Reads the header (`0xFF`, version) and the one value after it.
    pub(crate) fn read_root(&mut self) -> Result<Rc<Node>> {
        if self.data.first() != Some(&0xff) {
            return Err(Error::invalid(WHAT, self.base, "no version tag (0xff)"));
        }
        self.pos = 1;
        let at = self.pos;
        self.version = self.varint32("V8 version")?;
        if !(13..=16).contains(&self.version) {
            return Err(self.invalid_at(
                at,
                format!(
                    "format version {} (versions 13 to 16 are known)",
                    self.version
                ),
            ));
        }
        let value = self.read_value()?;
        while self.pos < self.data.len() && self.data[self.pos] == 0 {
            self.pos += 1;
        }
        if self.pos < self.data.len() {
            return Err(self.invalid_at(
                self.pos,
                format!("{} bytes after the value", self.data.len() - self.pos),
            ));
        }
        Ok(value)
    }

    pub(crate) fn byte(&mut self, what: &'static str) -> Result<u8> {
        let b = *self.data.get(self.pos).ok_or(self.truncated(what))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.data.len() - self.pos)
            .ok_or(self.truncated(what))?;
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A base-128 varint of up to 64 bits, least significant group first.
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.byte(what)?;
            if shift < 64 {
                value |= u64::from(b & 0x7f) << shift;
            }
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.invalid_at(start, format!("{what}: varint longer than ten bytes")))
    }

    /// A varint V8 reads as 32 bits (bits beyond are dropped, as V8 drops them).
    pub(crate) fn varint32(&mut self, what: &'static str) -> Result<u32> {
        Ok(self.varint(what)? as u32)
    }

    pub(crate) fn double(&mut self, what: &'static str) -> Result<f64> {
        let b = self.bytes(8, what)?;
        Ok(f64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// A Blink UTF-8 string: a varint length, then the bytes.
    pub(crate) fn utf8(&mut self, what: &'static str) -> Result<String> {
        let len = self.varint(what)?;
        Ok(String::from_utf8_lossy(self.bytes(len, what)?).into_owned())
    }

    /// The next tag, skipping padding.
    fn read_tag(&mut self) -> Result<u8> {
        loop {
            let t = self.byte("V8 tag")?;
            if t != 0 {
                return Ok(t);
            }
        }
    }

    /// The next tag without consuming it (padding before it is consumed).
    fn peek_tag(&mut self) -> Result<u8> {
        while self.data.get(self.pos) == Some(&0) {
            self.pos += 1;
        }
        self.data
            .get(self.pos)
            .copied()
            .ok_or(self.truncated("V8 tag"))
    }

    /// Reserves the next object id.
    pub(crate) fn new_id(&mut self) -> u32 {
        self.objects.push(None);
        self.heights.push(1);
        (self.objects.len() - 1) as u32
    }

    pub(crate) fn finish(&mut self, id: u32, node: Rc<Node>) -> Rc<Node> {
        self.objects[id as usize] = Some(Rc::clone(&node));
        self.heights[id as usize] = self.deepest + 1 - self.depth;
        node
    }

    /// Notes that the value being read reaches `level`, which must be within the limit.
    fn reach(&mut self, level: usize) -> Result<()> {
        if level > self.max_depth {
            return Err(Error::TooDeep {
                what: WHAT,
                offset: self.offset(),
                limit: self.max_depth,
            });
        }
        self.deepest = self.deepest.max(level);
        Ok(())
    }

    pub(crate) fn read_value(&mut self) -> Result<Rc<Node>> {
        if self.depth >= self.max_depth {
            return Err(Error::TooDeep {
                what: WHAT,
                offset: self.offset(),
                limit: self.max_depth,
            });
        }
        self.depth += 1;
        let outer = std::mem::replace(&mut self.deepest, self.depth);
        let out = self.read_value_and_view();
        self.deepest = self.deepest.max(outer);
        self.depth -= 1;
        out
    }

    fn read_value_and_view(&mut self) -> Result<Rc<Node>> {
        match self.read_internal()? {
            Read::Value(v) => Ok(v),
            Read::Buffer(id, buffer_node) => {
                // Padding may end the input after a buffer: then no view follows.
                if matches!(self.peek_tag(), Ok(b'V')) {
                    self.pos += 1;
                    let bytes = self.buffers.get(&id).cloned().ok_or_else(|| {
                        self.invalid_at(self.pos - 1, "a view of an unknown buffer")
                    })?;
                    self.read_view(&bytes)
                } else {
                    Ok(buffer_node)
                }
            }
        }
    }

    #[inline(never)]
    fn read_internal(&mut self) -> Result<Read> {
        let mut tag = self.read_tag()?;
        // Object counts before the value are read and ignored, however many there are.
        while tag == b'?' {
            self.varint32("V8 object count")?;
            tag = self.read_tag()?;
        }
        let tag_at = self.pos - 1;
        let node = match tag {
            b'_' => Rc::new(Node::Tagged("undefined", Vec::new())),
            b'0' => Node::leaf(Value::Null),
            b'T' => Node::leaf(true),
            b'F' => Node::leaf(false),
            b'I' => {
                let z = self.varint32("V8 int32")?;
                let v = ((z >> 1) as i32) ^ -((z & 1) as i32);
                Node::leaf(v)
            }
            b'U' => Node::leaf(self.varint32("V8 uint32")?),
            b'N' => Node::leaf(json::number(self.double("V8 double")?)),
            b'Z' => Rc::new(Node::Tagged("bigint", self.bigint()?)),
            b'"' | b'c' | b'S' => Node::leaf(self.string_body(tag, tag_at)?),
            b'^' => {
                let id = self.varint32("V8 object reference")?;
                let node = match self.objects.get(id as usize) {
                    None => {
                        return Err(self.invalid_at(
                            tag_at,
                            format!(
                                "reference to object {id}, but only {} objects precede it",
                                self.objects.len()
                            ),
                        ));
                    }
                    Some(None) => Rc::new(Node::Cycle(id)),
                    Some(Some(n)) => Rc::clone(n),
                };
                // Written out, the object nests below the reference as deep as it does.
                self.reach(self.depth + self.heights[id as usize] - 1)?;
                if self.buffers.contains_key(&id) {
                    return Ok(Read::Buffer(id, node));
                }
                node
            }
            b'o' => self.read_object(tag_at)?,
            b'A' => self.read_dense_array(tag_at)?,
            b'a' => self.read_sparse_array(tag_at)?,
            b'D' => {
                let id = self.new_id();
                let ms = self.double("V8 date")?;
                let node =
                    Node::Tagged("date", vec![("value", Node::leaf(json::plain_number(ms)))]);
                self.finish(id, Rc::new(node))
            }
            b'y' | b'x' => {
                let id = self.new_id();
                let node = Node::Tagged("Boolean", vec![("value", Node::leaf(tag == b'y'))]);
                self.finish(id, Rc::new(node))
            }
            b'n' => {
                let id = self.new_id();
                let n = self.double("V8 number object")?;
                let node = Node::Tagged("Number", vec![("value", Node::leaf(json::number(n)))]);
                self.finish(id, Rc::new(node))
            }
            b'z' => {
                let id = self.new_id();
                let node = Node::Tagged("BigInt", self.bigint()?);
                self.finish(id, Rc::new(node))
            }
            b's' => {
                let id = self.new_id();
                let s = self.string()?;
                let node = Node::Tagged("String", vec![("value", Node::leaf(s))]);
                self.finish(id, Rc::new(node))
            }
            b'R' => self.read_regexp()?,
            b';' => self.read_map(tag_at)?,
            b'\'' => self.read_set(tag_at)?,
            b'B' | b'C' | b'~' => return self.array_buffer(tag),
            b'r' => self.error()?,
            b'\\' => {
                let id = self.new_id();
                let node = self.read_host_object()?;
                self.finish(id, node)
            }
            b'-' => return Err(self.invalid_at(tag_at, "an array hole outside a dense array")),
            b'V' => {
                return Err(self.invalid_at(tag_at, "an array buffer view without its buffer"));
            }
            b't' | b'u' | b'p' | b'w' | b'm' => {
                return Err(self.invalid_at(
                    tag_at,
                    format!(
                        "tag '{}' refers to transferred or shared data, which is never stored",
                        char::from(tag)
                    ),
                ));
            }
            tag => {
                return Err(Error::UnknownTag {
                    what: "V8 value tag",
                    tag,
                    offset: self.base + tag_at,
                });
            }
        };
        Ok(Read::Value(node))
    }

    #[inline(never)]
    fn read_object(&mut self, tag_at: usize) -> Result<Rc<Node>> {
        let id = self.new_id();
        let props = self.properties(b'{')?;
        let count = self.varint32("V8 object property count")?;
        self.check_count(tag_at, "object properties", count as usize, props.len())?;
        Ok(self.finish(id, Rc::new(Node::Object(props))))
    }

    #[inline(never)]
    fn read_dense_array(&mut self, tag_at: usize) -> Result<Rc<Node>> {
        let length = self.varint32("V8 array length")?;
        let id = self.new_id();
        let mut items = Vec::new();
        for _ in 0..length {
            if self.peek_tag()? == b'-' {
                self.pos += 1;
                items.push(Rc::new(Node::Tagged("hole", Vec::new())));
            } else {
                items.push(self.read_value()?);
            }
        }
        let props = self.properties(b'$')?;
        let count = self.varint32("V8 array property count")?;
        let end_length = self.varint32("V8 array length")?;
        self.check_count(tag_at, "array properties", count as usize, props.len())?;
        self.check_count(tag_at, "array length", end_length as usize, items.len())?;
        let node = if props.is_empty() {
            Node::Array(items)
        } else {
            Node::Tagged(
                "array",
                vec![
                    ("items", Rc::new(Node::Array(items))),
                    ("properties", Rc::new(Node::Object(props))),
                ],
            )
        };
        Ok(self.finish(id, Rc::new(node)))
    }

    #[inline(never)]
    fn read_sparse_array(&mut self, tag_at: usize) -> Result<Rc<Node>> {
        let length = self.varint32("V8 sparse array length")?;
        let id = self.new_id();
        let props = self.properties(b'@')?;
        let count = self.varint32("V8 sparse array property count")?;
        let end_length = self.varint32("V8 sparse array length")?;
        self.check_count(
            tag_at,
            "sparse array properties",
            count as usize,
            props.len(),
        )?;
        self.check_count(
            tag_at,
            "sparse array length",
            end_length as usize,
            length as usize,
        )?;
        let node = Node::Tagged(
            "sparse_array",
            vec![
                ("length", Node::leaf(length)),
                ("properties", Rc::new(Node::Object(props))),
            ],
        );
        Ok(self.finish(id, Rc::new(node)))
    }

    #[inline(never)]
    fn read_map(&mut self, tag_at: usize) -> Result<Rc<Node>> {
        let id = self.new_id();
        let mut entries = Vec::new();
        while self.peek_tag()? != b':' {
            let k = self.read_value()?;
            let v = self.read_value()?;
            entries.push(Rc::new(Node::Array(vec![k, v])));
        }
        self.pos += 1;
        let length = self.varint32("V8 map length")?;
        self.check_count(tag_at, "map length", length as usize, entries.len() * 2)?;
        let node = Node::Tagged("map", vec![("entries", Rc::new(Node::Array(entries)))]);
        Ok(self.finish(id, Rc::new(node)))
    }

    #[inline(never)]
    fn read_set(&mut self, tag_at: usize) -> Result<Rc<Node>> {
        let id = self.new_id();
        let mut values = Vec::new();
        while self.peek_tag()? != b',' {
            values.push(self.read_value()?);
        }
        self.pos += 1;
        let length = self.varint32("V8 set length")?;
        self.check_count(tag_at, "set length", length as usize, values.len())?;
        let node = Node::Tagged("set", vec![("values", Rc::new(Node::Array(values)))]);
        Ok(self.finish(id, Rc::new(node)))
    }

    #[inline(never)]
    fn read_regexp(&mut self) -> Result<Rc<Node>> {
        let id = self.new_id();
        let source = self.string()?;
        let flags_at = self.pos;
        let flags = self.varint32("V8 regexp flags")?;
        if flags >= 1 << 9 {
            return Err(self.invalid_at(flags_at, format!("regexp flags {flags:#x}")));
        }
        let node = Node::Tagged(
            "regexp",
            vec![
                ("source", Node::leaf(source)),
                ("flags", Node::leaf(regexp_flags(flags))),
            ],
        );
        Ok(self.finish(id, Rc::new(node)))
    }

    fn check_count(&self, at: usize, what: &str, claimed: usize, found: usize) -> Result<()> {
        if claimed == found {
            Ok(())
        } else {
            Err(self.invalid_at(
                at,
                format!("{what}: the end tag says {claimed}, found {found}"),
            ))
        }
    }

    /// Key–value pairs up to `end`, which is consumed.
    fn properties(&mut self, end: u8) -> Result<Vec<(String, Rc<Node>)>> {
        let mut props = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while self.peek_tag()? != end {
            let key_at = self.pos;
            let key = self.read_value()?;
            let key = property_key(&key).ok_or_else(|| {
                self.invalid_at(key_at, "a property key that is not a string or a number")
            })?;
            // V8 refuses an object that defines a property twice.
            if !seen.insert(key.clone()) {
                return Err(self.invalid_at(key_at, format!("property {key:?} defined twice")));
            }
            let value = self.read_value()?;
            props.push((key, value));
        }
        self.pos += 1;
        Ok(props)
    }

    /// A BigInt's value: `value` in decimal, or `hex` for magnitudes too long to convert
    /// quickly.
    fn bigint(&mut self) -> Result<Vec<(&'static str, Rc<Node>)>> {
        let bitfield = self.varint32("V8 BigInt")?;
        let digits = self.bytes(u64::from(bitfield >> 1), "V8 BigInt digits")?;
        let negative = bitfield & 1 == 1;
        Ok(if digits.len() <= bigint::DECIMAL_LIMIT_BYTES {
            vec![("value", Node::leaf(bigint::to_decimal(digits, negative)))]
        } else {
            vec![("hex", Node::leaf(bigint::to_hex(digits, negative)))]
        })
    }

    /// A string value: its tag, then its body (versions 12 and later).
    pub(crate) fn string(&mut self) -> Result<Value> {
        let tag = self.read_tag()?;
        let at = self.pos - 1;
        match tag {
            b'"' | b'c' | b'S' => self.string_body(tag, at),
            _ => Err(self.invalid_at(
                at,
                format!("tag '{}' where a string was expected", char::from(tag)),
            )),
        }
    }

    fn string_body(&mut self, tag: u8, at: usize) -> Result<Value> {
        let len = self.varint("V8 string length")?;
        let bytes = self.bytes(len, "V8 string")?;
        Ok(match tag {
            b'"' => Value::String(crate::coding::latin1_to_string(bytes)),
            b'S' => Value::String(String::from_utf8_lossy(bytes).into_owned()),
            _ => {
                if bytes.len() % 2 != 0 {
                    return Err(self.invalid_at(at, "a two-byte string of odd byte length"));
                }
                let units: Vec<u16> = bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                json::utf16(&units)
            }
        })
    }

    /// An error: an optional prototype tag, `m` message, then `s` stack and `c` cause in
    /// either order (V8 has written both), each at most once, then `.`; any other tag where
    /// the next is expected is an error.
    fn error(&mut self) -> Result<Rc<Node>> {
        let id = self.new_id();
        let mut at = self.pos;
        let mut tag = self.varint("V8 error tag")? as u8;
        let name = match tag {
            b'E' => Some("EvalError"),
            b'R' => Some("RangeError"),
            b'F' => Some("ReferenceError"),
            b'S' => Some("SyntaxError"),
            b'T' => Some("TypeError"),
            b'U' => Some("URIError"),
            _ => None,
        };
        let mut fields = vec![("name", Node::leaf(name.unwrap_or("Error")))];
        if name.is_some() {
            at = self.pos;
            tag = self.varint("V8 error tag")? as u8;
        }
        if tag == b'm' {
            fields.push(("message", Node::leaf(self.string()?)));
            at = self.pos;
            tag = self.varint("V8 error tag")? as u8;
        }
        // V8 before 12 writes the cause before the stack, later versions after it.
        let (mut stack, mut cause) = (false, false);
        loop {
            if tag == b's' && !stack {
                stack = true;
                fields.push(("stack", Node::leaf(self.string()?)));
            } else if tag == b'c' && !cause {
                cause = true;
                fields.push(("cause", self.read_value()?));
            } else {
                break;
            }
            at = self.pos;
            tag = self.varint("V8 error tag")? as u8;
        }
        if tag != b'.' {
            return Err(Error::UnknownTag {
                what: "V8 error tag",
                tag,
                offset: self.base + at,
            });
        }
        Ok(self.finish(id, Rc::new(Node::Tagged("error", fields))))
    }

    fn array_buffer(&mut self, tag: u8) -> Result<Read> {
        let id = self.new_id();
        let len = self.varint("V8 array buffer length")?;
        let mut fields = Vec::new();
        if tag == b'~' {
            let at = self.pos;
            let max = self.varint("V8 array buffer max length")?;
            if len > max {
                return Err(self.invalid_at(at, "array buffer longer than its maximum"));
            }
            fields.push(("max_byte_length", Node::leaf(max)));
        }
        if tag == b'C' {
            fields.push(("immutable", Node::leaf(true)));
        }
        let bytes: Rc<[u8]> = Rc::from(self.bytes(len, "V8 array buffer")?);
        fields.insert(0, ("base64", Node::leaf(json::base64(&bytes))));
        self.buffers.insert(id, bytes);
        let node = self.finish(id, Rc::new(Node::Tagged("ArrayBuffer", fields)));
        Ok(Read::Buffer(id, node))
    }
}

fn property_key(key: &Node) -> Option<String> {
    match key {
        Node::Leaf(Value::String(s)) => Some(s.clone()),
        Node::Leaf(Value::Number(n)) => Some(n.to_string()),
        // Strings with unpaired surrogates and numbers JSON cannot hold are tagged leaves.
        Node::Leaf(Value::Object(m)) => match m.get("value") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn regexp_flags(flags: u32) -> String {
    // In the order JavaScript's `RegExp.prototype.flags` lists them; `l` is V8's linear flag.
    [
        (128, 'd'),
        (1, 'g'),
        (2, 'i'),
        (4, 'm'),
        (32, 's'),
        (16, 'u'),
        (256, 'v'),
        (8, 'y'),
        (64, 'l'),
    ]
    .iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|&(_, c)| c)
    .collect()
}
