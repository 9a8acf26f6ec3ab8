//! BigInt digits (a little-endian magnitude) as text: decimal up to [`DECIMAL_LIMIT_BYTES`]
//! bytes of digits (the conversion takes time quadratic in the length), hexadecimal beyond.

/// The longest magnitude written in decimal: 4 KiB, about 9,900 decimal digits.
pub(crate) const DECIMAL_LIMIT_BYTES: usize = 4096;

/// The hexadecimal form (`0x…`, `-0x…`) of the little-endian magnitude `bytes`.
pub(crate) fn to_hex(bytes: &[u8], negative: bool) -> String {
    let digits: String = bytes
        .iter()
        .rev()
        .skip_while(|&&b| b == 0)
        .map(|b| format!("{b:02x}"))
        .collect();
    let digits = digits.trim_start_matches('0');
    match (digits.is_empty(), negative) {
        (true, _) => "0x0".into(),
        (false, true) => format!("-0x{digits}"),
        (false, false) => format!("0x{digits}"),
    }
}

/// The decimal form of the little-endian magnitude `bytes`, with a `-` if `negative` (and the
/// magnitude is not zero).
pub(crate) fn to_decimal(bytes: &[u8], negative: bool) -> String {
    // Base 2^32 limbs, least significant first.
    let mut limbs: Vec<u32> = bytes
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    if limbs.is_empty() {
        return "0".into();
    }
    // Repeated division by 10^9 gives nine decimal digits a step.
    let mut groups = Vec::new();
    while !limbs.is_empty() {
        let mut rem: u64 = 0;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        groups.push(rem as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut iter = groups.iter().rev();
    if let Some(first) = iter.next() {
        out.push_str(&first.to_string());
    }
    for g in iter {
        out.push_str(&format!("{g:09}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{to_decimal, to_hex};

    #[test]
    fn magnitudes_become_hex() {
        assert_eq!(to_hex(&[], true), "0x0");
        assert_eq!(to_hex(&[0x0f, 0x01, 0], false), "0x10f");
        assert_eq!(to_hex(&[0xff], true), "-0xff");
    }

    #[test]
    fn magnitudes_become_decimal() {
        assert_eq!(to_decimal(&[], false), "0");
        assert_eq!(to_decimal(&[0, 0], true), "0");
        assert_eq!(to_decimal(&[5], true), "-5");
        assert_eq!(
            to_decimal(&u64::MAX.to_le_bytes(), false),
            "18446744073709551615"
        );
        let mut big = vec![0u8; 16];
        big[12] = 1; // 2^96
        assert_eq!(to_decimal(&big, false), "79228162514264337593543950336");
    }
}
