//! Conversion of raw elements to native Rust numbers: byte order, integer
//! widening/narrowing with range checks, float widening/narrowing.

use crate::error::{Error, Result};
use crate::format::datatype::{ByteOrder, Datatype};
use alloc::format;
use alloc::vec::Vec;

/// A native numeric type that file data can be converted to.
pub trait H5Native: Copy + 'static {
    /// Type name for messages.
    const NAME: &'static str;
    /// From an integer, if it fits.
    fn from_i128(v: i128) -> Option<Self>;
    /// From a float; `None` when `Self` is an integer type.
    fn from_f64(v: f64) -> Option<Self>;
    /// From a float as numpy's `astype` converts it: floats as
    /// [`H5Native::from_f64`]; integers truncated toward zero, `None` for the
    /// values whose result numpy leaves undefined ("invalid value encountered
    /// in cast": NaN, ±infinity, and values outside the integer's range).
    fn from_f64_cast(v: f64) -> Option<Self> {
        Self::from_f64(v)
    }
}

/// How [`convert_slice_with`] converts floating-point values to integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FloatToInt {
    /// Refuse: a float file type does not convert to an integer `T`
    /// (`Unrepresentable`). What [`crate::Dataset::read`] does.
    #[default]
    Refuse,
    /// numpy's `astype`: truncate toward zero; NaN, ±infinity and values out
    /// of the integer's range (where numpy's result is undefined and it warns)
    /// are `Unrepresentable`, naming the element.
    Truncate,
}

macro_rules! native_int {
    ($($t:ty),*) => {$(
        impl H5Native for $t {
            const NAME: &'static str = stringify!($t);
            fn from_i128(v: i128) -> Option<Self> { <$t>::try_from(v).ok() }
            fn from_f64(_v: f64) -> Option<Self> { None }
            #[allow(clippy::cast_possible_truncation)]
            fn from_f64_cast(v: f64) -> Option<Self> {
                // `as i128` truncates toward zero and is exact below 2^127;
                // the bound keeps saturation (and NaN's 0) out.
                if v.is_finite() && v.abs() < 1.7e38 {
                    <$t>::try_from(v as i128).ok()
                } else {
                    None
                }
            }
        }
    )*};
}
native_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl H5Native for f32 {
    const NAME: &'static str = "f32";
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    fn from_i128(v: i128) -> Option<Self> {
        Some(v as f32)
    }
    #[allow(clippy::cast_possible_truncation)]
    fn from_f64(v: f64) -> Option<Self> {
        Some(v as f32)
    }
}

impl H5Native for f64 {
    const NAME: &'static str = "f64";
    #[allow(clippy::cast_precision_loss)]
    fn from_i128(v: i128) -> Option<Self> {
        Some(v as f64)
    }
    fn from_f64(v: f64) -> Option<Self> {
        Some(v)
    }
}

pub(crate) fn load_u128(b: &[u8], order: ByteOrder) -> u128 {
    let mut v = 0u128;
    match order {
        ByteOrder::Big => {
            for &x in b {
                v = (v << 8) | u128::from(x);
            }
        }
        _ => {
            for &x in b.iter().rev() {
                v = (v << 8) | u128::from(x);
            }
        }
    }
    v
}

/// Integer value of raw bytes: the `precision` bits at `bit_offset`,
/// sign-extended when `signed` (what libhdf5's conversion yields).
pub fn int_value(
    b: &[u8],
    order: ByteOrder,
    signed: bool,
    bit_offset: u16,
    precision: u16,
) -> i128 {
    let raw = load_u128(b, order);
    let prec = u32::from(precision).min(128);
    let off = u32::from(bit_offset).min(127);
    let shifted = raw >> off;
    let masked = if prec >= 128 {
        shifted
    } else {
        shifted & ((1u128 << prec) - 1)
    };
    if signed && prec > 0 && prec < 128 && (masked >> (prec - 1)) & 1 == 1 {
        #[allow(clippy::cast_possible_wrap)]
        let v = (masked | (!0u128 << prec)) as i128;
        v
    } else {
        #[allow(clippy::cast_possible_wrap)]
        let v = masked as i128;
        v
    }
}

/// IEEE binary16 bits to f64 (exact; no libm needed).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = u64::from(bits >> 15) << 63;
    let exp = u64::from((bits >> 10) & 0x1f);
    let mant = u64::from(bits & 0x3ff);
    match exp {
        0 => {
            let v = mant as f64 / 16_777_216.0; // mant * 2^-24
            if sign != 0 {
                -v
            } else {
                v
            }
        }
        31 => f64::from_bits(sign | (0x7ff << 52) | (mant << 42)),
        e => f64::from_bits(sign | ((e + 1023 - 15) << 52) | (mant << 42)),
    }
}

type Converter<T> = dyn Fn(&[u8]) -> Option<T>;

/// Convert a buffer of raw elements of `dtype` to native numbers `T`.
///
/// # Errors
/// `Unrepresentable` when the type or a value does not fit `T`.
pub fn convert_slice<T: H5Native>(dtype: &Datatype, raw: &[u8]) -> Result<Vec<T>> {
    convert_slice_with(dtype, raw, FloatToInt::Refuse)
}

/// As [`convert_slice`], converting floats to integers as `float_to_int`
/// says.
///
/// # Errors
/// `Unrepresentable` when the type or a value does not fit `T`.
pub fn convert_slice_with<T: H5Native>(
    dtype: &Datatype,
    raw: &[u8],
    float_to_int: FloatToInt,
) -> Result<Vec<T>> {
    let from_f64: fn(f64) -> Option<T> = match float_to_int {
        FloatToInt::Refuse => T::from_f64,
        FloatToInt::Truncate => T::from_f64_cast,
    };
    // An enum converts as its integer base type.
    let storage = match dtype {
        Datatype::Enum { base, .. } => base.as_ref(),
        other => other,
    };
    let (size, conv): (usize, &Converter<T>) = match storage {
        Datatype::Integer {
            size,
            order,
            signed,
            bit_offset,
            precision,
        } => {
            let (o, s, bo, p) = (*order, *signed, *bit_offset, *precision);
            (size_of(*size)?, &move |b: &[u8]| {
                T::from_i128(int_value(b, o, s, bo, p))
            })
        }
        // A bitfield reads as its bits, an unsigned integer (as numpy/h5py).
        Datatype::Bitfield {
            size,
            order,
            bit_offset,
            precision,
        } => {
            let (o, bo, p) = (*order, *bit_offset, *precision);
            (size_of(*size)?, &move |b: &[u8]| {
                T::from_i128(int_value(b, o, false, bo, p))
            })
        }
        Datatype::Float { size, order, .. } if storage.is_ieee_standard() => {
            let o = *order;
            match size {
                2 => (2, &move |b: &[u8]| {
                    #[allow(clippy::cast_possible_truncation)]
                    let bits = load_u128(b, o) as u16;
                    from_f64(f16_to_f64(bits))
                }),
                4 => (4, &move |b: &[u8]| {
                    #[allow(clippy::cast_possible_truncation)]
                    let bits = load_u128(b, o) as u32;
                    from_f64(f64::from(f32::from_bits(bits)))
                }),
                8 => (8, &move |b: &[u8]| {
                    #[allow(clippy::cast_possible_truncation)]
                    let bits = load_u128(b, o) as u64;
                    from_f64(f64::from_bits(bits))
                }),
                _ => return Err(unrep::<T>(dtype)),
            }
        }
        _ => return Err(unrep::<T>(dtype)),
    };
    if size == 0 {
        return Err(unrep::<T>(dtype));
    }
    let mut out = crate::io::try_vec(raw.len() / size, "converted elements")?;
    for chunk in raw.chunks_exact(size) {
        match conv(chunk) {
            Some(v) => out.push(v),
            None => {
                return Err(Error::unrepresentable(format!(
                    "value at element {} does not fit {}",
                    out.len(),
                    T::NAME
                )))
            }
        }
    }
    Ok(out)
}

fn size_of(size: u32) -> Result<usize> {
    usize::try_from(size).map_err(|_| Error::unrepresentable("element size"))
}

fn unrep<T: H5Native>(dtype: &Datatype) -> Error {
    Error::unrepresentable(format!("cannot convert {dtype} to {}", T::NAME))
}

/// Rewrite raw elements of `dtype` in place from the file's byte order to the
/// machine's (integers, floats, bitfields, enums, time, complex, and those
/// inside compounds and arrays; strings and opaque bytes are left alone).
///
/// # Errors
/// `Unrepresentable` for variable-length data and references, which have no
/// fixed native layout.
pub fn to_native_order(dtype: &Datatype, data: &mut [u8]) -> Result<()> {
    let size = usize::try_from(dtype.size()).map_err(|_| Error::unrepresentable("element size"))?;
    if size == 0 || !needs_swap(dtype)? {
        return Ok(());
    }
    for elem in data.chunks_exact_mut(size) {
        swap_element(dtype, elem)?;
    }
    Ok(())
}

/// Whether any part of `dtype` is stored in the other byte order than the machine's.
fn needs_swap(dtype: &Datatype) -> Result<bool> {
    let native_big = cfg!(target_endian = "big");
    Ok(match dtype {
        Datatype::Integer { order, size, .. }
        | Datatype::Float { order, size, .. }
        | Datatype::Bitfield { order, size, .. }
        | Datatype::Time { order, size, .. } => {
            *size > 1 && (*order == ByteOrder::Big) != native_big
        }
        Datatype::Enum { base, .. }
        | Datatype::Complex { base, .. }
        | Datatype::Array { base, .. } => needs_swap(base)?,
        Datatype::Compound { members, .. } => {
            let mut any = false;
            for m in members {
                any |= needs_swap(&m.dtype)?;
            }
            any
        }
        Datatype::String { .. } | Datatype::Opaque { .. } => false,
        Datatype::VarLenSequence { .. }
        | Datatype::VarLenString { .. }
        | Datatype::Reference { .. } => {
            return Err(Error::unrepresentable(
                "variable-length data and references have no raw native form",
            ))
        }
    })
}

fn swap_element(dtype: &Datatype, e: &mut [u8]) -> Result<()> {
    let native_big = cfg!(target_endian = "big");
    let swap_if = |order: ByteOrder, e: &mut [u8]| {
        if (order == ByteOrder::Big) != native_big {
            e.reverse();
        }
    };
    match dtype {
        Datatype::Integer { order, .. }
        | Datatype::Float { order, .. }
        | Datatype::Bitfield { order, .. }
        | Datatype::Time { order, .. } => swap_if(*order, e),
        Datatype::Enum { base, .. } => swap_element(base, e)?,
        Datatype::Complex { base, .. } => {
            let half = e.len() / 2;
            let (re, im) = e.split_at_mut(half);
            swap_element(base, re)?;
            swap_element(base, im)?;
        }
        Datatype::Compound { members, .. } => {
            for m in members {
                let off = usize::try_from(m.offset)
                    .map_err(|_| Error::unrepresentable("member offset"))?;
                let n = usize::try_from(m.dtype.size())
                    .map_err(|_| Error::unrepresentable("member size"))?;
                let part = off
                    .checked_add(n)
                    .and_then(|end| e.get_mut(off..end))
                    .ok_or_else(|| Error::unrepresentable("compound member outside its element"))?;
                swap_element(&m.dtype, part)?;
            }
        }
        Datatype::Array { base, .. } => {
            let n =
                usize::try_from(base.size()).map_err(|_| Error::unrepresentable("element size"))?;
            if n > 0 {
                for part in e.chunks_exact_mut(n) {
                    swap_element(base, part)?;
                }
            }
        }
        Datatype::String { .. } | Datatype::Opaque { .. } => {}
        Datatype::VarLenSequence { .. }
        | Datatype::VarLenString { .. }
        | Datatype::Reference { .. } => {
            return Err(Error::unrepresentable(
                "variable-length data and references have no raw native form",
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_precision_sign_extends() {
        // 3-bit signed value 0b101 (= -3) at bit offset 2 in one byte.
        assert_eq!(int_value(&[0b1_0100], ByteOrder::Little, true, 2, 3), -3);
        assert_eq!(
            int_value(&[0x80, 0x00], ByteOrder::Big, true, 0, 16),
            -32768
        );
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
    }
}
