//! Array buffer views: what follows V8's `V` tag after an array buffer (typed arrays and
//! `DataView`s), checked against the buffer they view.

use std::rc::Rc;

use serde_json::Value;

use super::deserializer::Deserializer;
use super::node::Node;
use crate::error::{Error, Result};
use crate::json;

impl Deserializer<'_> {
    pub(crate) fn read_view(&mut self, buffer: &[u8]) -> Result<Rc<Node>> {
        let at = self.pos - 1;
        let sub = self.varint("V8 view type")? as u8;
        let offset = self.varint("V8 view offset")?;
        let length = self.varint("V8 view length")?;
        let flags = if self.version >= 14 {
            self.varint32("V8 view flags")?
        } else {
            0
        };
        let (name, size) = match view_type(sub) {
            Some(t) => t,
            None => {
                return Err(Error::UnknownTag {
                    what: "V8 array buffer view type",
                    tag: sub,
                    offset: self.base + at + 1,
                });
            }
        };
        let end = offset
            .checked_add(length)
            .filter(|&e| e <= buffer.len() as u64);
        let Some(end) = end else {
            return Err(self.invalid_at(at, "a view beyond its buffer"));
        };
        if offset % size != 0 || length % size != 0 {
            return Err(self.invalid_at(at, format!("a {name} not aligned to its elements")));
        }
        let id = self.new_id();
        let bytes = &buffer[offset as usize..end as usize];
        let mut fields = vec![
            ("byte_offset", Node::leaf(offset)),
            ("byte_length", Node::leaf(length)),
        ];
        if flags & 1 != 0 {
            fields.push(("length_tracking", Node::leaf(true)));
        }
        if flags & 2 != 0 {
            fields.push(("backed_by_resizable_buffer", Node::leaf(true)));
        }
        if sub == b'?' {
            fields.push(("base64", Node::leaf(json::base64(bytes))));
        } else {
            fields.push(("values", Node::leaf(view_values(sub, bytes))));
        }
        Ok(self.finish(id, Rc::new(Node::Tagged(name, fields))))
    }
}

fn view_type(sub: u8) -> Option<(&'static str, u64)> {
    Some(match sub {
        b'b' => ("Int8Array", 1),
        b'B' => ("Uint8Array", 1),
        b'C' => ("Uint8ClampedArray", 1),
        b'w' => ("Int16Array", 2),
        b'W' => ("Uint16Array", 2),
        b'd' => ("Int32Array", 4),
        b'D' => ("Uint32Array", 4),
        b'h' => ("Float16Array", 2),
        b'f' => ("Float32Array", 4),
        b'F' => ("Float64Array", 8),
        b'q' => ("BigInt64Array", 8),
        b'Q' => ("BigUint64Array", 8),
        b'?' => ("DataView", 1),
        _ => return None,
    })
}

fn view_values(sub: u8, bytes: &[u8]) -> Value {
    fn each<const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> Value) -> Value {
        Value::Array(
            bytes
                .chunks_exact(N)
                .map(|c| f(c.try_into().expect("N bytes")))
                .collect(),
        )
    }
    match sub {
        b'b' => each::<1>(bytes, |b| (b[0] as i8).into()),
        b'B' | b'C' => each::<1>(bytes, |b| b[0].into()),
        b'w' => each::<2>(bytes, |b| i16::from_le_bytes(b).into()),
        b'W' => each::<2>(bytes, |b| u16::from_le_bytes(b).into()),
        b'd' => each::<4>(bytes, |b| i32::from_le_bytes(b).into()),
        b'D' => each::<4>(bytes, |b| u32::from_le_bytes(b).into()),
        b'h' => each::<2>(bytes, |b| json::number(f16_to_f64(u16::from_le_bytes(b)))),
        b'f' => each::<4>(bytes, |b| json::number(f64::from(f32::from_le_bytes(b)))),
        b'F' => each::<8>(bytes, |b| json::number(f64::from_le_bytes(b))),
        b'q' => each::<8>(bytes, |b| i64::from_le_bytes(b).to_string().into()),
        _ => each::<8>(bytes, |b| u64::from_le_bytes(b).to_string().into()),
    }
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}
