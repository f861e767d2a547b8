//! The HEP001 value orderings (§10.5 "Ordering") and the canonical byte
//! representation of Bloom-filter keys (§10.7), shared by the search-index
//! builders, the verifier and the query engine.
//!
//! Everything here works on decoded [`Value`]s plus the column's [`Datatype`]:
//! byte order has already been resolved by the decoder, and fixed-length
//! strings come with their trailing padding stripped (as §10.5 and §10.7
//! require).

use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::format::datatype::{Datatype, StringPad};
use h5fmt::Value;

/// Whether the datatype has a HEP001-defined order (§10.5 "Ordering"):
/// integers, floats, the boolean, strings, opaque and enumerations. Such a
/// column may carry `CHUNK_MINMAX` and `SORTED_ROWS` indexes.
pub fn has_order(dtype: &Datatype) -> bool {
    match dtype {
        Datatype::Integer { .. }
        | Datatype::String { .. }
        | Datatype::VarLenString { .. }
        | Datatype::Opaque { .. } => true,
        Datatype::Float { size, .. } => matches!(size, 2 | 4 | 8),
        Datatype::Enum { base, .. } => matches!(**base, Datatype::Integer { .. }),
        _ => false,
    }
}

/// Whether the datatype is a boolean: an enumeration of exactly `FALSE = 0`
/// and `TRUE = 1` over a one-byte integer (the §6 encoding, and the upstream
/// draft's boolean columns).
pub fn is_boolean(dtype: &Datatype) -> bool {
    let Datatype::Enum { base, members } = dtype else {
        return false;
    };
    if !matches!(**base, Datatype::Integer { size: 1, .. }) || members.len() != 2 {
        return false;
    }
    let has = |name: &str, v: u8| members.iter().any(|m| m.name == name && m.value == [v]);
    has("FALSE", 0) && has("TRUE", 1)
}

/// Whether a `CHUNK_BLOOM` index may be built over the datatype (§10.7
/// "Canonical byte representation"): integers, IEEE floats, the boolean,
/// strings and opaque. References, compounds, other enums, arrays and
/// variable-length sequences have no canonical form in this revision.
pub fn has_canonical_bytes(dtype: &Datatype) -> bool {
    match dtype {
        Datatype::Integer { size, .. } => (1..=16).contains(size),
        Datatype::Float { size, .. } => matches!(size, 2 | 4 | 8),
        Datatype::String { .. } | Datatype::VarLenString { .. } | Datatype::Opaque { .. } => true,
        d => is_boolean(d),
    }
}

/// Whether a value is an IEEE NaN (of any width and payload).
pub fn is_nan(v: &Value) -> bool {
    match v {
        Value::F16(b) => (b & 0x7c00) == 0x7c00 && (b & 0x03ff) != 0,
        Value::F32(x) => x.is_nan(),
        Value::F64(x) => x.is_nan(),
        _ => false,
    }
}

/// An IEEE binary16 value (given as its bits) widened exactly to `f64`.
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * pow2(-24),
        0x1f if frac == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * pow2(e - 15),
    }
}

fn pow2(e: i32) -> f64 {
    // 2^e for |e| < 1023, exact (no libm in core).
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The numeric value of a float [`Value`] as `f64` (exact for every IEEE
/// width up to 64 bits); `None` for other values.
pub fn float_of(v: &Value) -> Option<f64> {
    match v {
        Value::F16(b) => Some(f16_to_f64(*b)),
        Value::F32(x) => Some(f64::from(*x)),
        Value::F64(x) => Some(*x),
        _ => None,
    }
}

fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::BigInt(i) => Some(*i),
        Value::BigUInt(u) => i128::try_from(*u).ok(),
        Value::Enum { code, .. } => Some(*code),
        _ => None,
    }
}

fn bytes_of(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Str(s) => Some(s.as_bytes()),
        Value::RawStr(b) | Value::Opaque(b) => Some(b),
        _ => None,
    }
}

/// Compare two values under the HEP001 order (§10.5): integers (and enum
/// codes) arithmetically, floats numerically with `-0 == +0`, strings and
/// opaque values byte-wise. `None` when the values are not ordered against
/// each other: a NaN on either side, or values of different families.
///
/// Integers and floats compare across families numerically (a query literal
/// `3` against a float column), exactly for every value either side holds.
pub fn cmp_values(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (int_of(a), int_of(b)) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (bytes_of(a), bytes_of(b)) {
        return Some(x.cmp(y));
    }
    if let (Value::BigUInt(x), Value::BigUInt(y)) = (a, b) {
        return Some(x.cmp(y));
    }
    match (float_of(a), float_of(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y),
        (Some(x), None) => cmp_float_int(x, int_of(b)?),
        (None, Some(y)) => cmp_float_int(y, int_of(a)?).map(Ordering::reverse),
        (None, None) => None,
    }
}

/// `x` against the integer `i`, exactly.
fn cmp_float_int(x: f64, i: i128) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    if x >= 1.8e38 {
        return Some(Ordering::Greater);
    }
    if x <= -1.8e38 {
        return Some(Ordering::Less);
    }
    // |x| < 2^127: its integer part fits i128 exactly.
    let t = x as i128; // truncation toward zero
    match t.cmp(&i) {
        Ordering::Equal => {
            let frac = x - t as f64;
            Some(if frac > 0.0 {
                Ordering::Greater
            } else if frac < 0.0 {
                Ordering::Less
            } else {
                Ordering::Equal
            })
        }
        o => Some(o),
    }
}

/// Equality under the HEP001 order: `cmp_values(a, b) == Some(Equal)`, so
/// `-0 == +0` and NaN equals nothing. Values without an order (compounds,
/// references …) are equal when their decoded trees are.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match cmp_values(a, b) {
        Some(o) => o == Ordering::Equal,
        None => !is_nan(a) && !is_nan(b) && float_of(a).is_none() && a == b,
    }
}

/// The §10.5 sort key of a row: ordinary values first (by [`cmp_values`]),
/// then the fill tail, then the NaN tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowClass {
    /// An orderable, non-missing value.
    Value,
    /// A missing row whose value is not NaN (matches a non-NaN fill).
    Fill,
    /// A NaN value (missing or not).
    Nan,
}

/// Which part of a `SORTED_ROWS` permutation a row belongs to (§10.5): NaN
/// values go to the NaN tail whatever the fill, otherwise missing rows go to
/// the fill tail.
pub fn row_class(v: &Value, missing: bool) -> RowClass {
    if is_nan(v) {
        RowClass::Nan
    } else if missing {
        RowClass::Fill
    } else {
        RowClass::Value
    }
}

/// Compare two rows for a `SORTED_ROWS` permutation: class first, then value
/// within the ordered class. Ties (and incomparable values) are `Equal`,
/// so a stable sort breaks them by increasing row number, as §10.5 requires.
pub fn cmp_rows(a: (&Value, bool), b: (&Value, bool)) -> Ordering {
    let (ca, cb) = (row_class(a.0, a.1), row_class(b.0, b.1));
    match ca.cmp(&cb) {
        Ordering::Equal if ca == RowClass::Value => cmp_values(a.0, b.0).unwrap_or(Ordering::Equal),
        o => o,
    }
}

/// The padding byte of a fixed-length string type (§10.5, §10.7): NUL for
/// `NULLTERM`/`NULLPAD`, space for `SPACEPAD`; `None` for other types.
pub fn string_pad_byte(dtype: &Datatype) -> Option<u8> {
    match dtype {
        Datatype::String { pad, .. } => Some(if *pad == StringPad::SpacePad { b' ' } else { 0 }),
        _ => None,
    }
}

fn strip_trailing(b: &[u8], pad: u8) -> &[u8] {
    let end = b.iter().rposition(|&c| c != pad).map_or(0, |i| i + 1);
    &b[..end]
}

/// The canonical byte representation of a value of a column of type `dtype`
/// (§10.7), the key hashed into a `CHUNK_BLOOM` filter:
///
/// * integers: two's complement (or unsigned) at the column's storage
///   width, little-endian, whatever the file's byte order;
/// * floats: the IEEE encoding at the column's width, little-endian, with
///   `-0` normalised to `+0`;
/// * the boolean: one byte, `0x00` or `0x01`;
/// * strings: the UTF-8 bytes, trailing padding of a fixed-length type
///   stripped (no normalisation);
/// * opaque: the raw bytes.
///
/// The value may be a query literal of another numeric family: it is
/// converted to the column's type when it is exactly representable there.
/// `None` when the value has no canonical form in this column: NaN (never
/// inserted nor queried), a value outside the column's range or not exactly
/// representable at its width, or a datatype without a canonical form
/// (see [`has_canonical_bytes`]).
pub fn canonical_bytes(dtype: &Datatype, v: &Value) -> Option<Vec<u8>> {
    match dtype {
        Datatype::Integer { size, signed, .. } => {
            let size = usize::try_from(*size)
                .ok()
                .filter(|s| (1..=16).contains(s))?;
            let i = integer_literal(v)?;
            let bits = size as u32 * 8;
            let fits = if *signed {
                bits >= 128 || (i >= -(1i128 << (bits - 1)) && i < (1i128 << (bits - 1)))
            } else {
                i >= 0 && (bits >= 128 || i < (1i128 << bits))
            };
            if !fits {
                return None;
            }
            Some(i.to_le_bytes()[..size].to_vec())
        }
        Datatype::Float { size, .. } => {
            let x = float_literal(v)?;
            if x.is_nan() {
                return None;
            }
            let x = if x == 0.0 { 0.0 } else { x };
            match size {
                8 => Some(x.to_le_bytes().to_vec()),
                4 => {
                    let y = x as f32;
                    (f64::from(y) == x).then(|| y.to_le_bytes().to_vec())
                }
                2 => {
                    let h = f64_to_f16_exact(x)?;
                    Some(h.to_le_bytes().to_vec())
                }
                _ => None,
            }
        }
        Datatype::String { .. } | Datatype::VarLenString { .. } => {
            let b = bytes_of(v).filter(|_| !matches!(v, Value::Opaque(_)))?;
            Some(match string_pad_byte(dtype) {
                Some(p) => strip_trailing(b, p).to_vec(),
                None => b.to_vec(),
            })
        }
        Datatype::Opaque { .. } => match v {
            Value::Opaque(b) => Some(b.clone()),
            _ => None,
        },
        d if is_boolean(d) => match int_of(v)? {
            0 => Some([0u8].to_vec()),
            1 => Some([1u8].to_vec()),
            _ => None,
        },
        _ => None,
    }
}

/// An integer literal: integers and enum codes, and floats with no fraction.
fn integer_literal(v: &Value) -> Option<i128> {
    if let Some(i) = int_of(v) {
        return Some(i);
    }
    let x = float_of(v)?;
    if x.is_finite() && x.abs() < 1.7e38 && x == (x as i128) as f64 {
        Some(x as i128)
    } else {
        None
    }
}

/// A float literal: floats, and integers exactly representable as `f64`.
fn float_literal(v: &Value) -> Option<f64> {
    if let Some(x) = float_of(v) {
        return Some(x);
    }
    let i = int_of(v)?;
    let x = i as f64;
    (x as i128 == i && x.abs() < 1.7e38).then_some(x)
}

/// `x` as binary16 bits when exactly representable (NaN excluded).
fn f64_to_f16_exact(x: f64) -> Option<u16> {
    if x.is_infinite() {
        return Some(if x > 0.0 { 0x7c00 } else { 0xfc00 });
    }
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a == 0.0 {
        return Some(sign);
    }
    // Subnormals: multiples of 2^-24 below 2^-14.
    if a < pow2(-14) {
        let m = a / pow2(-24);
        return (m == (m as u64) as f64 && m < 1024.0).then_some(sign | m as u16);
    }
    // Normal: find e with 2^e <= a < 2^(e+1).
    let mut e = -14;
    while e < 16 && a >= pow2(e + 1) {
        e += 1;
    }
    if e > 15 {
        return None;
    }
    let frac = (a / pow2(e) - 1.0) * 1024.0;
    if frac != (frac as u64) as f64 || frac >= 1024.0 {
        return None;
    }
    Some(sign | (((e + 15) as u16) << 10) | frac as u16)
}

/// MurmurHash3_x64_128 of `data` with a 32-bit seed: `(h_a, h_b)`, the low
/// and the high 64 bits of the 128-bit output (`out[0]`, `out[1]`), as §10.7
/// uses them.
pub fn murmur3_x64_128(data: &[u8], seed: u32) -> (u64, u64) {
    mur3::murmurhash3_x64_128(data, seed)
}

/// The `k` filter bit positions of a key (§10.7, Kirsch–Mitzenmacher double
/// hashing): `h_i = (h_a + i·h_b) mod m_bits` for `i = 0 … k−1`, computed
/// exactly (not with a wrapping 64-bit sum). Empty when `m_bits == 0`.
pub fn bloom_positions(canonical: &[u8], k: u16, m_bits: u64, seed: u32) -> Vec<u64> {
    let mut out = Vec::with_capacity(usize::from(k));
    for_each_bloom_position(canonical, k, m_bits, seed, |g| out.push(g));
    out
}

/// [`bloom_positions`] without the allocation: `f` gets each position in
/// turn (see [`BloomHasher`]).
#[inline]
pub fn for_each_bloom_position(
    canonical: &[u8],
    k: u16,
    m_bits: u64,
    seed: u32,
    f: impl FnMut(u64),
) {
    BloomHasher::new(k, m_bits, seed).for_each_position(canonical, f);
}

/// The §10.7 bit positions of keys under fixed parameters `k`, `m_bits`,
/// `seed`.
///
/// `(h_a + i·h_b) mod m = (a + i·b) mod m` with `a = h_a mod m`,
/// `b = h_b mod m`, so each position is the previous one plus `b`, less `m`
/// when that reaches `m` (never overflowing); the two reductions are done
/// by multiplication with a precomputed inverse (Barrett), not division.
#[derive(Debug, Clone, Copy)]
pub struct BloomHasher {
    k: u16,
    m: u64,
    /// `floor((2^64 − 1) / m)`.
    inv: u64,
    seed: u32,
}

impl BloomHasher {
    /// The hasher of filters of `m_bits` bits with `k` hash functions and
    /// seed `seed` (no position at all when `m_bits == 0`).
    pub fn new(k: u16, m_bits: u64, seed: u32) -> BloomHasher {
        BloomHasher {
            k,
            m: m_bits,
            inv: u64::MAX.checked_div(m_bits).unwrap_or(0),
            seed,
        }
    }

    /// `x mod m` (`m > 0`): the quotient estimate `x·inv / 2^64` is at most
    /// 2 below the true one, so at most two corrections follow.
    #[inline]
    fn rem(&self, x: u64) -> u64 {
        let q = ((u128::from(x) * u128::from(self.inv)) >> 64) as u64;
        let mut r = x - q * self.m;
        while r >= self.m {
            r -= self.m;
        }
        r
    }

    /// Call `f` with each of the `k` positions of a canonical key, in order.
    #[inline]
    pub fn for_each_position(&self, canonical: &[u8], mut f: impl FnMut(u64)) {
        if self.m == 0 {
            return;
        }
        let (ha, hb) = murmur3_x64_128(canonical, self.seed);
        let (mut g, b) = (self.rem(ha), self.rem(hb));
        let back = self.m - b;
        for _ in 0..self.k {
            f(g);
            g = if g >= back { g - back } else { g + b };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_roundtrip() {
        for bits in 0u16..=0xffff {
            let x = f16_to_f64(bits);
            if x.is_nan() {
                continue;
            }
            let back = f64_to_f16_exact(x).unwrap();
            assert_eq!(back, bits, "{bits:#x} {x}");
        }
        assert_eq!(f64_to_f16_exact(1.0 / 3.0), None);
        assert_eq!(f64_to_f16_exact(65520.0), None);
    }

    #[test]
    fn orders() {
        assert_eq!(
            cmp_values(&Value::F64(-0.0), &Value::F32(0.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(cmp_values(&Value::F64(f64::NAN), &Value::F64(1.0)), None);
        assert_eq!(
            cmp_values(&Value::Int(-1), &Value::UInt(u64::MAX)),
            Some(Ordering::Less)
        );
        assert_eq!(
            cmp_values(&Value::F64(2.5), &Value::Int(2)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp_values(&Value::Int(3), &Value::F64(2.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp_values(&Value::Str("b".into()), &Value::RawStr(b"a\xff".to_vec())),
            Some(Ordering::Greater)
        );
        assert!(values_equal(&Value::F64(0.0), &Value::F64(-0.0)));
        assert!(!values_equal(&Value::F64(f64::NAN), &Value::F64(f64::NAN)));
    }

    #[test]
    fn bloom_positions_are_exact() {
        for (i, m) in [8u64, 64, 1000, 1 << 40, u64::MAX - 7, (1 << 63) + 8]
            .iter()
            .enumerate()
        {
            let key = (i as u64 * 0x9e37_79b9).to_le_bytes();
            let (ha, hb) = murmur3_x64_128(&key, 7);
            let want: Vec<u64> = (0..40u128)
                .map(|j| ((u128::from(ha) + j * u128::from(hb)) % u128::from(*m)) as u64)
                .collect();
            assert_eq!(bloom_positions(&key, 40, *m, 7), want, "m = {m}");
        }
        assert!(bloom_positions(b"x", 3, 0, 0).is_empty());
        let mut x = 0x1234_5678u64;
        for m in [
            1u64,
            3,
            7,
            1 << 20,
            12_345_679,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let h = BloomHasher::new(1, m, 0);
            for v in [0, 1, m - 1, m, m.wrapping_add(1), u64::MAX, u64::MAX - 1] {
                assert_eq!(h.rem(v), v % m, "{v} mod {m}");
            }
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(h.rem(x), x % m, "{x} mod {m}");
            }
        }
    }

    #[test]
    fn canonical_literals() {
        let u8t = Datatype::int_le(1, false);
        assert_eq!(canonical_bytes(&u8t, &Value::Int(5)), Some([5u8].to_vec()));
        assert_eq!(canonical_bytes(&u8t, &Value::Int(300)), None);
        assert_eq!(canonical_bytes(&u8t, &Value::Int(-1)), None);
        assert_eq!(canonical_bytes(&u8t, &Value::F64(5.5)), None);
        let i16t = Datatype::int_le(2, true);
        assert_eq!(
            canonical_bytes(&i16t, &Value::Int(-2)),
            Some([0xfe, 0xff].to_vec())
        );
    }
}
