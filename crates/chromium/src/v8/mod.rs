//! Values that Chromium stores serialized: Blink's envelope around V8's `ValueSerializer`
//! format, as IndexedDB records hold them (after the record's version varint).
//!
//! [`deserialize`] turns one into JSON. JSON's own types carry what they can: `null`,
//! booleans, finite numbers, strings, arrays, plain objects. Everything else is an object
//! with a `"type"` tag:
//!
//! | JavaScript | JSON |
//! |---|---|
//! | `undefined` | `{"type":"undefined"}` |
//! | `NaN`, `±Infinity`, `-0` | `{"type":"number","value":"NaN"}` (see [`crate::json`]) |
//! | BigInt | `{"type":"bigint","value":"123"}` |
//! | `Date` | `{"type":"date","value":ms}` |
//! | `RegExp` | `{"type":"regexp","source":"a+","flags":"gi"}` |
//! | `Map` / `Set` | `{"type":"map","entries":[[k,v],…]}` / `{"type":"set","values":[…]}` |
//! | array with holes | holes are `{"type":"hole"}` |
//! | array with other properties | `{"type":"array","items":[…],"properties":{…}}` |
//! | sparse array | `{"type":"sparse_array","length":n,"properties":{"5":…}}` |
//! | `ArrayBuffer` | `{"type":"ArrayBuffer","base64":"…"}` |
//! | typed array | `{"type":"Uint8Array","byte_offset":0,"byte_length":3,"values":[1,2,3]}` (64-bit integers as strings) |
//! | `DataView` | `{"type":"DataView","byte_offset":…,"byte_length":…,"base64":"…"}` |
//! | `new Number(5)` … | `{"type":"Number","value":5}`, `"String"`, `"Boolean"`, `"BigInt"` |
//! | `Error` | `{"type":"error","name":"RangeError","message":…,"stack":…}` |
//! | `Blob`, `File` in a record | `{"type":"blob","index":0}`, `{"type":"file","index":0}`: the record's blob entry at that position |
//! | a plain object with a `type` property | `{"type":"object","value":{…}}` |
//! | an object reached again | a copy; inside itself, `{"type":"cycle","id":n}` |
//!
//! Limits: values nest at most [`MAX_DEPTH`] deep, written out with the objects they reach
//! again (values nested more than 150 deep are
//! decoded on a thread of their own with a 64 MiB stack); the JSON written (copies of objects
//! reached again included) is at most about one million values plus 64 bytes per input
//! byte; BigInts longer than 4 KiB are written in hexadecimal (`{"type":"bigint","hex":"0x…"}`)
//! rather than converted to decimal; nothing is
//! allocated by a length before the bytes it claims exist.

mod bigint;
mod deserializer;
pub mod envelope;
mod host;
mod node;
mod views;

use serde_json::{Value, json};

pub use envelope::{Envelope, Wrapping, unwrap_idb_value};

use crate::error::{Error, Result};
use deserializer::Deserializer;

/// Deserializes a value Blink serialized, as an IndexedDB record holds it after its version
/// varint: [IndexedDB's wrapping](envelope), then Blink's envelope, then V8's data.
///
/// A value stored in a blob because it was large becomes
/// `{"type":"wrapped_in_blob","size":n,"index":i}` (read the blob file and pass its bytes to
/// this function again).
pub fn deserialize(bytes: &[u8]) -> Result<Value> {
    match unwrap_idb_value(bytes)? {
        Wrapping::Plain(b) => deserialize_blink(b),
        Wrapping::InBlob { size, index } => {
            Ok(json!({ "type": "wrapped_in_blob", "size": size, "index": index }))
        }
        Wrapping::Snappy(compressed) => {
            let plain = decompress(compressed)?;
            deserialize_blink(&plain).map_err(|e| match e {
                // Offsets inside decompressed bytes mean nothing in the input: name the value.
                Error::Truncated { what, .. } => Error::Truncated { what, offset: 3 },
                other => other,
            })
        }
    }
}

/// Deserializes Blink's envelope and the V8 data inside it.
pub fn deserialize_blink(bytes: &[u8]) -> Result<Value> {
    let envelope = Envelope::parse(bytes)?;
    let v8 = &bytes[envelope.v8_start..envelope.v8_end];
    run(v8, envelope.v8_start, envelope.blink_version)
}

/// Deserializes bare V8 data (`FF <version> <value>`), as Node.js's `v8.serialize` writes it.
pub fn deserialize_v8(bytes: &[u8]) -> Result<Value> {
    run(bytes, 0, 0)
}

/// How deeply values may nest.
pub const MAX_DEPTH: usize = 2000;

/// How deeply values may nest when decoded on the caller's stack: well within a 2 MiB thread
/// stack even in an unoptimized build.
const SHALLOW_DEPTH: usize = 150;

/// The stack of the thread that decodes deeper values.
const DEEP_STACK_BYTES: usize = 64 << 20;

fn run(v8: &[u8], base: usize, blink_version: u32) -> Result<Value> {
    match run_with_limit(v8, base, blink_version, SHALLOW_DEPTH) {
        Err(Error::TooDeep { .. }) => {
            // Rare: decode again on a thread with a stack large enough for MAX_DEPTH.
            let bytes = v8.to_vec();
            let deep = std::thread::Builder::new()
                .name("leveltable-chromium-v8".into())
                .stack_size(DEEP_STACK_BYTES)
                .spawn(move || run_with_limit(&bytes, base, blink_version, MAX_DEPTH));
            match deep.map(|t| t.join()) {
                Ok(Ok(result)) => result,
                _ => Err(Error::TooDeep {
                    what: "V8 value",
                    offset: base,
                    limit: SHALLOW_DEPTH,
                }),
            }
        }
        other => other,
    }
}

fn run_with_limit(v8: &[u8], base: usize, blink_version: u32, depth: usize) -> Result<Value> {
    let mut d = Deserializer::new(v8, base, blink_version, depth);
    let root = d.read_root()?;
    let mut budget = 1_000_000usize.saturating_add(v8.len().saturating_mul(64));
    root.to_json(&mut budget)
}

/// Snappy's raw format, with the claimed length checked against what the input can hold
/// before anything is allocated.
fn decompress(compressed: &[u8]) -> Result<Vec<u8>> {
    let claimed = snap::raw::decompress_len(compressed)
        .map_err(|e| Error::invalid("Snappy-compressed value", 3, e.to_string()))?;
    // Every Snappy element of n input bytes yields at most 64 output bytes from 3 input
    // bytes (a copy), so no valid input expands more than 22 times.
    if claimed > compressed.len().saturating_mul(22).saturating_add(64) {
        return Err(Error::invalid(
            "Snappy-compressed value",
            3,
            format!("claims {claimed} bytes from {}", compressed.len()),
        ));
    }
    snap::raw::Decoder::new()
        .decompress_vec(compressed)
        .map_err(|e| Error::invalid("Snappy-compressed value", 3, e.to_string()))
}
