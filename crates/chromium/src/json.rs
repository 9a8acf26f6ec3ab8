//! How values JSON has no type for are written: explicit `{"type": ...}` objects.
//!
//! - numbers that are not finite: `{"type":"number","value":"NaN"}` (`"Infinity"`,
//!   `"-Infinity"`); negative zero: `{"type":"number","value":"-0"}`;
//! - bytes: `{"type":"binary","base64":"..."}` (standard alphabet, padded);
//! - UTF-16 strings with unpaired surrogates, which have no JSON string form:
//!   `{"type":"string","value":"<lossy text>","utf16":[55357]}` with every code unit.

use serde_json::{Map, Value, json};

/// A number as JSON: a plain JSON number when it is finite and not negative zero, a tagged
/// object otherwise.
pub fn number(value: f64) -> Value {
    if value.is_finite() && !(value == 0.0 && value.is_sign_negative()) {
        if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
            return Value::from(value as i64);
        }
        if let Some(n) = serde_json::Number::from_f64(value) {
            return Value::Number(n);
        }
    }
    tagged("number", non_finite_name(value))
}

/// The name of a number JSON cannot carry as a number.
pub fn non_finite_name(value: f64) -> Value {
    if value.is_nan() {
        Value::from("NaN")
    } else if value == f64::INFINITY {
        Value::from("Infinity")
    } else if value == f64::NEG_INFINITY {
        Value::from("-Infinity")
    } else if value == 0.0 {
        Value::from("-0")
    } else {
        Value::from(value)
    }
}

/// A finite number as plain JSON, anything else by name (for the values of tagged objects).
pub fn plain_number(value: f64) -> Value {
    match number(value) {
        Value::Object(mut m) => m.remove("value").unwrap_or(Value::Null),
        v => v,
    }
}

/// `{"type": kind, "value": value}`.
pub fn tagged(kind: &str, value: Value) -> Value {
    json!({ "type": kind, "value": value })
}

/// `{"type": "binary", "base64": ...}`.
pub fn binary(bytes: &[u8]) -> Value {
    json!({ "type": "binary", "base64": base64(bytes) })
}

/// UTF-16 code units as a JSON string, or as a tagged object keeping every unit when they hold
/// an unpaired surrogate.
pub fn utf16(units: &[u16]) -> Value {
    match String::from_utf16(units) {
        Ok(s) => Value::String(s),
        Err(_) => {
            let lossy = String::from_utf16_lossy(units);
            let mut m = Map::new();
            m.insert("type".into(), "string".into());
            m.insert("value".into(), lossy.into());
            m.insert(
                "utf16".into(),
                units.iter().map(|&u| Value::from(u)).collect(),
            );
            Value::Object(m)
        }
    }
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want);
        }
    }

    #[test]
    fn numbers_json_cannot_hold_are_tagged() {
        assert_eq!(number(1.0), json!(1));
        assert_eq!(number(1.5), json!(1.5));
        assert_eq!(number(f64::NAN), json!({"type": "number", "value": "NaN"}));
        assert_eq!(number(-0.0), json!({"type": "number", "value": "-0"}));
        assert_eq!(
            number(f64::NEG_INFINITY),
            json!({"type": "number", "value": "-Infinity"})
        );
    }

    #[test]
    fn lone_surrogates_keep_their_code_units() {
        assert_eq!(utf16(&[0x61, 0x62]), json!("ab"));
        assert_eq!(
            utf16(&[0xd83d]),
            json!({"type": "string", "value": "\u{fffd}", "utf16": [0xd83d]})
        );
    }
}
