//! Scale-offset filter (id 6).
//!
//! Client data (20 values, as libhdf5's `set_local` stores them): `[0]` scale
//! type (0 float D-scale, 1 float E-scale — never written, 2 integer), `[1]`
//! scale factor (integers: minimum bits, 0 = computed; floats: decimal
//! digits D), `[2]` elements in the chunk, `[3]` class (0 integer, 1 float),
//! `[4]` size in bytes, `[5]` sign (0 unsigned, 1 two's complement), `[6]`
//! byte order (0 LE, 1 BE), `[7]` 1 when a fill value is defined, `[8..]` the
//! fill value's bytes, little-endian, four per value.
//!
//! The stored chunk starts with a 21-byte header: minimum bits (u32 LE), the
//! byte count of the minimum value, the minimum value (LE, up to 8 bytes used),
//! padding; then each element as `minbits` bits, MSB first. A decoded value
//! equal to `2^minbits - 1` is the fill value (when one is defined); any other
//! integer is `value + min` (wrapping in the type's width); a float is
//! `value as signed integer / 10^D + min` computed in the type's precision.

use super::nbit::BitReader;
use crate::error::{Error, Result};
use alloc::vec::Vec;

const HEADER: usize = 21;

fn cd_at(cd: &[u32], i: usize) -> Result<u32> {
    cd.get(i)
        .copied()
        .ok_or_else(|| super::corrupt("scaleoffset parameters are too short"))
}

/// 10^d in f64 (exact for |d| ≤ 22; `1 / 10^-d` for negative d).
fn pow10_f64(d: i32) -> f64 {
    let mut p = 1.0f64;
    for _ in 0..d.unsigned_abs().min(400) {
        p *= 10.0;
    }
    if d < 0 {
        1.0 / p
    } else {
        p
    }
}

/// 10^d in f32 (exact for |d| ≤ 10; `1 / 10^-d` for negative d).
fn pow10_f32(d: i32) -> f32 {
    let mut p = 1.0f32;
    for _ in 0..d.unsigned_abs().min(64) {
        p *= 10.0;
    }
    if d < 0 {
        1.0 / p
    } else {
        p
    }
}

pub(super) fn decode(data: Vec<u8>, cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    if cd.len() != 20 {
        return Err(super::corrupt(alloc::format!(
            "scaleoffset has {} parameters, expected 20",
            cd.len()
        )));
    }
    let scale_type = cd_at(cd, 0)?;
    #[allow(clippy::cast_possible_wrap)] // stored as a C int
    let scale_factor = cd_at(cd, 1)? as i32;
    let nelmts =
        usize::try_from(cd_at(cd, 2)?).map_err(|_| super::corrupt("scaleoffset element count"))?;
    let class = cd_at(cd, 3)?;
    let size = usize::try_from(cd_at(cd, 4)?).map_err(|_| super::corrupt("scaleoffset size"))?;
    let sign = cd_at(cd, 5)?;
    let order = cd_at(cd, 6)?;
    let fill_defined = cd_at(cd, 7)? == 1;
    if !matches!(size, 1 | 2 | 4 | 8) || (class == 1 && !matches!(size, 4 | 8)) {
        return Err(Error::unsupported(alloc::format!(
            "scaleoffset of a {size}-byte type"
        )));
    }
    if order > 1 || class > 1 || sign > 1 {
        return Err(super::corrupt("invalid scaleoffset type parameters"));
    }
    let bits = size * 8;
    match class {
        0 => {
            if scale_type != 2 {
                return Err(super::corrupt(
                    "invalid scaleoffset scale type for an integer",
                ));
            }
            let sf = usize::try_from(scale_factor.max(0)).unwrap_or(0);
            if sf > bits {
                return Err(super::corrupt(
                    "scaleoffset minimum bits exceed the type size",
                ));
            }
            if sf == bits {
                // Full precision requested: the filter stored the data as is.
                return Ok(data);
            }
        }
        _ => match scale_type {
            0 => {}
            1 => return Err(Error::unsupported("scaleoffset E-scale method")),
            _ => return Err(super::corrupt("invalid scaleoffset scale type for a float")),
        },
    }
    let total = nelmts
        .checked_mul(size)
        .filter(|&t| t <= bound)
        .ok_or_else(|| {
            Error::limit(alloc::format!(
                "scaleoffset output of {nelmts} x {size} bytes exceeds {bound}"
            ))
        })?;
    let hdr = data
        .get(..HEADER)
        .ok_or_else(|| super::corrupt("scaleoffset header is truncated"))?;
    let minbits = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
    let minval_len = usize::from(hdr[4]).min(8);
    let mut minval = 0u64;
    for (i, b) in hdr.iter().skip(5).take(minval_len).enumerate() {
        minval |= u64::from(*b) << (8 * i);
    }
    let minbits_us = usize::try_from(minbits).unwrap_or(usize::MAX);
    if minbits_us > bits {
        return Err(super::corrupt(alloc::format!(
            "scaleoffset minimum bits {minbits} exceed the type size"
        )));
    }
    let payload = data.get(HEADER..).unwrap_or(&[]);
    if minbits_us == bits {
        // Stored at full precision, in the dataset's byte order.
        let src = payload
            .get(..total)
            .ok_or_else(|| super::corrupt("scaleoffset data is truncated"))?;
        return Ok(src.to_vec());
    }
    let mut out = super::alloc_zeroed(total)?;
    let mut fill = [0u8; 8];
    for (i, b) in fill.iter_mut().enumerate().take(size) {
        let v = cd_at(cd, 8 + i / 4)?;
        *b = v.to_le_bytes()[i % 4];
    }
    let fill = u64::from_le_bytes(fill);
    let fill_marker = if minbits == 0 {
        0
    } else {
        (1u64 << minbits) - 1
    };
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut br = BitReader::new(payload);
    for elem in out.chunks_exact_mut(size) {
        let v = if minbits == 0 { 0 } else { br.read(minbits)? };
        let raw: u64 = if fill_defined && v == fill_marker {
            fill
        } else if class == 0 {
            v.wrapping_add(minval) & mask
        } else if size == 4 {
            #[allow(clippy::cast_possible_truncation)] // the low 4 bytes hold the f32 minimum
            let min = f32::from_bits(minval as u32);
            #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // value < 2^32
            let iv = v as u32 as i32;
            #[allow(clippy::cast_precision_loss)]
            let f = iv as f32 / pow10_f32(scale_factor) + min;
            u64::from(f.to_bits())
        } else {
            let min = f64::from_bits(minval);
            #[allow(clippy::cast_possible_wrap)]
            let iv = v as i64;
            #[allow(clippy::cast_precision_loss)]
            let f = iv as f64 / pow10_f64(scale_factor) + min;
            f.to_bits()
        };
        let le = raw.to_le_bytes();
        for (i, b) in elem.iter_mut().enumerate() {
            *b = if order == 0 { le[i] } else { le[size - 1 - i] };
        }
    }
    Ok(out)
}
