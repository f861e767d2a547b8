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
//!
//! The header's minimum is 8 bytes, sign-extended for signed integers,
//! the float's bits for floats; a chunk stored at full precision holds the
//! values little-endian (libhdf5 stores them in the writing machine's order:
//! little-endian on every machine it runs on today). Packed chunks are
//! `21 + floor(n * minbits / 8) + 1` bytes.
//!
//! [`encode`] follows libhdf5's `H5Z__filter_scaleoffset` step by step
//! (same minimum, bit count, rounding and special cases), so its output
//! is libhdf5's byte for byte; [`client_data`] computes the parameters as
//! libhdf5's `set_local` does.

use super::nbit::{BitReader, BitWriter};
use crate::error::{Error, Result};
use crate::format::datatype::{ByteOrder, Datatype};
use alloc::vec::Vec;

/// Scale type of integers (`H5Z_SO_INT`).
pub const SO_INT: u32 = 2;
/// Scale type of floats with a decimal scale factor (`H5Z_SO_FLOAT_DSCALE`).
pub const SO_FLOAT_DSCALE: u32 = 0;

/// The 20 scale-offset client data values libhdf5's `set_local` stores for
/// a dataset of `dtype` with chunks of `nelmts` elements: `factor` is the
/// minimum bits of an integer type (0: computed per chunk) or the decimal
/// scale factor D of a float type; `fill` is the fill value element in the
/// dataset's byte order (libhdf5's "default" zero fill counts as defined),
/// `None` when the fill value is undefined.
///
/// # Errors
/// `Usage` for a datatype other than an integer of 1, 2, 4 or 8 bytes or an
/// f32/f64 (little- or big-endian), integer minimum bits outside
/// `0..=bits`, or a fill value that is not one element.
pub fn client_data(
    dtype: &Datatype,
    nelmts: u32,
    factor: i32,
    fill: Option<&[u8]>,
) -> Result<Vec<u32>> {
    let (class, size, sign, order) = match dtype {
        Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => (0u32, *size, u32::from(*signed), *order),
        Datatype::Float { size, order, .. } => (1, *size, 0, *order),
        _ => {
            return Err(Error::usage(
                "the scaleoffset filter applies to integer and floating-point datatypes only",
            ))
        }
    };
    let order = match order {
        ByteOrder::Little => 0u32,
        ByteOrder::Big => 1,
        ByteOrder::Vax => return Err(Error::usage("scaleoffset: VAX byte order")),
    };
    if !matches!(size, 1 | 2 | 4 | 8) || (class == 1 && !matches!(size, 4 | 8)) {
        return Err(Error::usage(alloc::format!(
            "scaleoffset: no {size}-byte {} type",
            if class == 0 {
                "integer"
            } else {
                "floating-point"
            }
        )));
    }
    let scale_type = if class == 0 {
        if factor < 0 || factor.unsigned_abs() > size * 8 {
            return Err(Error::usage(alloc::format!(
                "scaleoffset: {factor} minimum bits for a {size}-byte integer"
            )));
        }
        SO_INT
    } else {
        SO_FLOAT_DSCALE
    };
    let mut cd = alloc::vec![0u32; 20];
    cd[0] = scale_type;
    #[allow(clippy::cast_sign_loss)] // stored as a C int
    {
        cd[1] = factor as u32;
    }
    cd[2] = nelmts;
    cd[3] = class;
    cd[4] = size;
    cd[5] = sign;
    cd[6] = order;
    if let Some(f) = fill {
        let n = usize::try_from(size).unwrap_or(usize::MAX);
        if f.len() != n {
            return Err(Error::usage("scaleoffset: fill value is not one element"));
        }
        cd[7] = 1;
        // The fill value as a number, little-endian, four bytes a value.
        for i in 0..n {
            let b = if order == 0 { f[i] } else { f[n - 1 - i] };
            cd[8 + i / 4] |= u32::from(b) << (8 * (i % 4));
        }
    }
    Ok(cd)
}

/// The smallest and largest of `values` in the order libhdf5 scans them
/// (the first value starts both; NaNs never replace it); `empty` when
/// there are none.
fn min_max<T: PartialOrd + Copy>(mut values: impl Iterator<Item = T>, empty: T) -> (T, T) {
    let Some(first) = values.next() else {
        return (empty, empty);
    };
    values.fold((first, first), |(min, max), x| {
        (if x < min { x } else { min }, if x > max { x } else { max })
    })
}

/// 10^d correctly rounded to f64 (as glibc's `pow(10, d)` gives).
fn pow10_f64(d: i32) -> f64 {
    alloc::format!("1e{d}")
        .parse::<f64>()
        .unwrap_or(f64::INFINITY)
}

/// 10^d correctly rounded to f32 (as glibc's `powf(10, d)` gives).
fn pow10_f32(d: i32) -> f32 {
    alloc::format!("1e{d}")
        .parse::<f32>()
        .unwrap_or(f32::INFINITY)
}

/// Round half away from zero (C's `round`; `core` has none without `std`).
fn round_f64(x: f64) -> f64 {
    if x.is_nan() || x.abs_c() >= 4_503_599_627_370_496.0 {
        return x; // already an integer (or NaN)
    }
    #[allow(clippy::cast_possible_truncation)] // |x| < 2^52
    let t = x as i64;
    #[allow(clippy::cast_precision_loss)] // exact below 2^52
    let frac = x - t as f64;
    #[allow(clippy::cast_precision_loss)]
    if frac >= 0.5 {
        (t + 1) as f64
    } else if frac <= -0.5 {
        (t - 1) as f64
    } else {
        t as f64
    }
}

/// As [`round_f64`] in f32 (C's `roundf`).
fn round_f32(x: f32) -> f32 {
    if x.is_nan() || x.abs_c() >= 8_388_608.0 {
        return x;
    }
    #[allow(clippy::cast_possible_truncation)] // |x| < 2^23
    let t = x as i32;
    #[allow(clippy::cast_precision_loss)] // exact below 2^23
    let frac = x - t as f32;
    #[allow(clippy::cast_precision_loss)]
    if frac >= 0.5 {
        (t + 1) as f32
    } else if frac <= -0.5 {
        (t - 1) as f32
    } else {
        t as f32
    }
}

/// `abs` without `std`.
trait AbsC {
    fn abs_c(self) -> Self;
}
impl AbsC for f64 {
    fn abs_c(self) -> f64 {
        f64::from_bits(self.to_bits() & !(1u64 << 63))
    }
}
impl AbsC for f32 {
    fn abs_c(self) -> f32 {
        f32::from_bits(self.to_bits() & !(1u32 << 31))
    }
}

/// Ceiling of log2 (libhdf5's `H5Z__scaleoffset_log2`; 0 for 0 and 1).
fn log2_ceil(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// The stored chunk: header, then the body.
fn with_header(minbits: u32, minval: u64, body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body_len);
    out.extend_from_slice(&minbits.to_le_bytes());
    out.push(8);
    out.extend_from_slice(&minval.to_le_bytes());
    out.resize(HEADER, 0);
    out
}

/// Pack the low `minbits` bits of every value: the whole stored chunk.
fn pack(values: &[u64], minbits: u32, minval: u64) -> Vec<u8> {
    let n = values.len();
    // libhdf5: 21 + nbytes * minbits / (size * 8) + 1.
    let body = n.saturating_mul(minbits as usize) / 8 + 1;
    let mut out = with_header(minbits, minval, body);
    if minbits > 0 {
        let mut bw = BitWriter::with_capacity(body);
        for &v in values {
            bw.write(v, minbits);
        }
        let mut packed = bw.out;
        packed.resize(body, 0);
        out.extend_from_slice(&packed);
    } else {
        // libhdf5 leaves this byte uninitialised; zero here.
        out.push(0);
    }
    out
}

/// Encode a chunk (`data`: `cd[2]` elements in the dataset's byte order) as
/// libhdf5's scale-offset filter does.
///
/// # Errors
/// `Usage` for malformed parameters or data of the wrong length,
/// `Unsupported` for the E-scale method (libhdf5 refuses it too).
pub(super) fn encode(data: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    let bad = |m: &str| Error::usage(alloc::format!("scaleoffset: {m}"));
    if cd.len() != 20 {
        return Err(bad("parameters are not 20 values"));
    }
    let scale_type = cd[0];
    #[allow(clippy::cast_possible_wrap)] // stored as a C int
    let mut factor = cd[1] as i32;
    let nelmts = usize::try_from(cd[2]).map_err(|_| bad("element count"))?;
    let (class, size, signed, order, fill_defined) = (cd[3], cd[4], cd[5] == 1, cd[6], cd[7] == 1);
    if !matches!(size, 1 | 2 | 4 | 8) || class > 1 || (class == 1 && !matches!(size, 4 | 8)) {
        return Err(bad("unsupported datatype"));
    }
    let size_us = size as usize;
    if nelmts.checked_mul(size_us) != Some(data.len()) {
        return Err(bad("chunk size does not match the parameters"));
    }
    let bits = size * 8;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let fill = u64::from(cd[8]) | (u64::from(cd[9]) << 32);
    let fill = fill & mask;
    // The values as numbers (little-endian raw bits).
    let mut values: Vec<u64> = data
        .chunks_exact(size_us)
        .map(|e| {
            let mut v = 0u64;
            for i in 0..size_us {
                let b = if order == 0 { e[size_us - 1 - i] } else { e[i] };
                v = (v << 8) | u64::from(b);
            }
            v
        })
        .collect();
    let full = |minbits: u32, minval: u64, values: &[u64]| {
        let mut out = with_header(minbits, minval, data.len());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes()[..size_us]);
        }
        out
    };
    if class == 0 {
        if scale_type != SO_INT {
            return Err(bad("integer data needs scale type H5Z_SO_INT (2)"));
        }
        factor = factor.max(0);
        if factor.unsigned_abs() > bits {
            return Err(bad("minimum bits exceed the type size"));
        }
        if factor.unsigned_abs() == bits {
            return Ok(data.to_vec());
        }
        let mut minbits = factor.unsigned_abs();
        let sext = |v: u64| -> i64 {
            let sh = 64 - bits;
            #[allow(clippy::cast_possible_wrap)]
            let s = ((v << sh) as i64) >> sh;
            s
        };
        let less = |a: u64, b: u64| if signed { sext(a) < sext(b) } else { a < b };
        let skip = |v: u64| fill_defined && v == fill;
        let mut it = values.iter().copied().filter(|&v| !skip(v));
        let (mut min, mut max) = match it.next() {
            Some(v) => (v, v),
            None => (0, 0),
        };
        for v in it {
            if less(v, min) {
                min = v;
            }
            if less(max, v) {
                max = v;
            }
        }
        // The minimum as libhdf5 stores it: sign-extended for signed types.
        #[allow(clippy::cast_sign_loss)]
        let minval = if signed { sext(min) as u64 } else { min };
        if minbits == 0 {
            let d = max.wrapping_sub(min) & mask;
            if d > mask - 2 {
                // Full precision; libhdf5 leaves the minimum at 0 except
                // for signed chars without a fill value.
                let mv = if size == 1 && signed && !fill_defined {
                    minval
                } else {
                    0
                };
                return Ok(full(bits, mv, &values));
            }
            let span = d + 1;
            minbits = log2_ceil(if fill_defined { span + 1 } else { span });
            if minbits == bits {
                // Full precision after all (the minimum is kept here).
                return Ok(full(bits, minval, &values));
            }
        }
        let marker = (1u64 << minbits).wrapping_sub(1);
        for v in &mut values {
            *v = if skip(*v) {
                marker
            } else {
                v.wrapping_sub(min) & mask
            };
        }
        return Ok(pack(&values, minbits, minval));
    }
    match scale_type {
        SO_FLOAT_DSCALE => {}
        1 => return Err(Error::unsupported("scaleoffset E-scale method")),
        _ => return Err(bad("float data needs scale type H5Z_SO_FLOAT_DSCALE (0)")),
    }
    let d = factor;
    // fabs(buf - fill) < pow(10, -D), in double (libhdf5's max/min search).
    let tiny = pow10_f64(-d);
    if size == 4 {
        let p = pow10_f32(d);
        #[allow(clippy::cast_possible_truncation)]
        let f: Vec<f32> = values.iter().map(|&v| f32::from_bits(v as u32)).collect();
        #[allow(clippy::cast_possible_truncation)]
        let filval = f32::from_bits(fill as u32);
        let is_fill_search = |x: f32| fill_defined && f64::from((x - filval).abs_c()) < tiny;
        let (min, max) = min_max(f.iter().copied().filter(|&x| !is_fill_search(x)), 0.0f32);
        let spread = max * p - min * p;
        if round_f32(spread) > 2_147_483_648.0f32 {
            return Ok(full(32, 0, &values));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let span = (round_f32(spread) as i64 as u64).wrapping_add(1);
        let minbits = log2_ceil(if fill_defined { span + 1 } else { span });
        let minval = u64::from(min.to_bits());
        if minbits == 32 {
            return Ok(full(32, minval, &values));
        }
        let tiny_f = pow10_f32(-d);
        let marker = (1u64 << minbits) - 1;
        for (v, x) in values.iter_mut().zip(&f) {
            *v = if fill_defined && (x - filval).abs_c() < tiny_f {
                marker
            } else {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let i = round_f32(x * p - min * p) as i64 as i32 as u32;
                u64::from(i)
            };
        }
        return Ok(pack(&values, minbits, minval));
    }
    let p = pow10_f64(d);
    let f: Vec<f64> = values.iter().map(|&v| f64::from_bits(v)).collect();
    let filval = f64::from_bits(fill);
    let is_fill = |x: f64| fill_defined && (x - filval).abs_c() < tiny;
    let (min, max) = min_max(f.iter().copied().filter(|&x| !is_fill(x)), 0.0f64);
    let spread = max * p - min * p;
    if round_f64(spread) > 9_223_372_036_854_775_808.0f64 {
        return Ok(full(64, 0, &values));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let span = (round_f64(spread) as i64 as u64).wrapping_add(1);
    let minbits = log2_ceil(if fill_defined {
        span.wrapping_add(1)
    } else {
        span
    });
    let minval = min.to_bits();
    if minbits == 64 {
        return Ok(full(64, minval, &values));
    }
    let marker = (1u64 << minbits) - 1;
    for (v, x) in values.iter_mut().zip(&f) {
        *v = if is_fill(*x) {
            marker
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let i = round_f64(x * p - min * p) as i64 as u64;
            i
        };
    }
    Ok(pack(&values, minbits, minval))
}

const HEADER: usize = 21;

fn cd_at(cd: &[u32], i: usize) -> Result<u32> {
    cd.get(i)
        .copied()
        .ok_or_else(|| super::corrupt("scaleoffset parameters are too short"))
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
        // Stored at full precision, little-endian (the writer's memory order).
        let src = payload
            .get(..total)
            .ok_or_else(|| super::corrupt("scaleoffset data is truncated"))?;
        let mut v = src.to_vec();
        if order == 1 {
            for e in v.chunks_exact_mut(size) {
                e.reverse();
            }
        }
        return Ok(v);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::datatype::Datatype;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Chunks of 4 elements of `values` (the last padded with `pad`).
    fn chunks<T: Copy>(values: &[T], pad: T) -> Vec<Vec<T>> {
        values
            .chunks(4)
            .map(|c| {
                let mut v = c.to_vec();
                v.resize(4, pad);
                v
            })
            .collect()
    }

    /// Expected chunk bytes and parameters were written by h5py 3.16 /
    /// libhdf5 2.0 (`create_dataset(shape=(10,), chunks=(4,),
    /// scaleoffset=..)` of `arange(10) * 3 - 5`, `read_direct_chunk`).
    fn check(
        dtype: &Datatype,
        factor: i32,
        fill: &[u8],
        elems: &[Vec<u8>],
        want_cd: &[u32],
        want: &[&str],
    ) {
        let cd = client_data(dtype, 4, factor, Some(fill)).unwrap();
        assert_eq!(cd, want_cd);
        for (e, w) in elems.iter().zip(want) {
            let got = encode(e, &cd).unwrap();
            assert_eq!(got, hex(w), "{dtype:?}");
            assert_eq!(decode(got, &cd, e.len()).unwrap(), *e);
        }
    }

    fn le<T: Copy, const N: usize>(c: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        c.iter().flat_map(|&v| f(v)).collect()
    }

    #[test]
    fn integers_match_libhdf5() {
        let v: Vec<i32> = (0..10).map(|i| i * 3 - 5).collect();
        let i4: Vec<Vec<u8>> = chunks(&v, 0)
            .iter()
            .map(|c| le(c, i32::to_le_bytes))
            .collect();
        let want_i4 = [
            "0400000008fbffffffffffffff0000000000000000036900",
            "040000000807000000000000000000000000000000036900",
            "0300000008130000000000000000000000000000000ff0",
        ];
        let mut cd = alloc::vec![0u32; 20];
        cd[..8].copy_from_slice(&[2, 0, 4, 0, 4, 1, 0, 1]);
        check(&Datatype::int_le(4, true), 0, &[0; 4], &i4, &cd, &want_i4);
        // Big-endian: the same stream (values in memory order).
        let be: Vec<Vec<u8>> = chunks(&v, 0)
            .iter()
            .map(|c| le(c, i32::to_be_bytes))
            .collect();
        let mut dt = Datatype::int_le(4, true);
        if let Datatype::Integer { order, .. } = &mut dt {
            *order = ByteOrder::Big;
        }
        cd[6] = 1;
        check(&dt, 0, &[0; 4], &be, &cd, &want_i4);
        // i16 with fill -7 (not in the data): the same stream.
        let v16: Vec<i16> = (0..10).map(|i| i * 3 - 5).collect();
        let i2: Vec<Vec<u8>> = chunks(&v16, -7)
            .iter()
            .map(|c| le(c, i16::to_le_bytes))
            .collect();
        cd[..9].copy_from_slice(&[2, 0, 4, 0, 2, 1, 0, 1, 65529]);
        check(
            &Datatype::int_le(2, true),
            0,
            &(-7i16).to_le_bytes(),
            &i2,
            &cd,
            &want_i4,
        );
        // u8: zeros are the (default) fill value.
        let u: Vec<u8> = (0..10).map(|i| i * 3).collect();
        let u1 = chunks(&u, 0);
        cd[..9].copy_from_slice(&[2, 0, 4, 0, 1, 0, 0, 1, 0]);
        check(
            &Datatype::int_le(1, false),
            0,
            &[0],
            &u1,
            &cd,
            &[
                "030000000803000000000000000000000000000000e1e0",
                "04000000080c000000000000000000000000000000036900",
                "0300000008180000000000000000000000000000000ff0",
            ],
        );
        // i64 with 13 fixed bits.
        let v64: Vec<i64> = (0..10).map(|i| i * 3 - 5).collect();
        let i8s: Vec<Vec<u8>> = chunks(&v64, 0)
            .iter()
            .map(|c| le(c, i64::to_le_bytes))
            .collect();
        cd[..9].copy_from_slice(&[2, 13, 4, 0, 8, 1, 0, 1, 0]);
        check(
            &Datatype::int_le(8, true),
            13,
            &[0; 8],
            &i8s,
            &cd,
            &[
                "0d00000008fbffffffffffffff0000000000000000000000c00c0090",
                "0d0000000807000000000000000000000000000000000000c00c0090",
                "0d0000000813000000000000000000000000000000000000fffffff0",
            ],
        );
    }

    #[test]
    fn floats_match_libhdf5() {
        let v: Vec<f32> = (0..10).map(|i| (i * 3 - 5) as f32).collect();
        let f4: Vec<Vec<u8>> = chunks(&v, 0.0)
            .iter()
            .map(|c| le(c, f32::to_le_bytes))
            .collect();
        let mut cd = alloc::vec![0u32; 20];
        cd[..8].copy_from_slice(&[0, 3, 4, 1, 4, 0, 0, 1]);
        let want = [
            "0e000000080000a0c00000000000000000000000000000bb85dc232800",
            "0e000000080000e0400000000000000000000000000000bb85dc232800",
            "0c0000000800009841000000000000000000000000000bb8ffffff00",
        ];
        let cd_got = client_data(&Datatype::float_le(4), 4, 3, Some(&[0; 4])).unwrap();
        assert_eq!(cd_got, cd);
        for (e, w) in f4.iter().zip(want) {
            let got = encode(e, &cd).unwrap();
            assert_eq!(got, hex(w));
            assert_eq!(decode(got, &cd, 16).unwrap(), *e);
        }
        let v: Vec<f64> = (0..10).map(|i| f64::from(i * 3 - 5)).collect();
        let f8: Vec<Vec<u8>> = chunks(&v, 0.0)
            .iter()
            .map(|c| le(c, f64::to_le_bytes))
            .collect();
        cd[..8].copy_from_slice(&[0, 2, 4, 1, 8, 0, 0, 1]);
        let want = [
            "0a0000000800000000000014c000000000000000000012c9638400",
            "0a000000080000000000001c4000000000000000000012c9638400",
            "090000000800000000000033400000000000000000004b3ffff0",
        ];
        assert_eq!(
            client_data(&Datatype::float_le(8), 4, 2, Some(&[0; 8])).unwrap(),
            cd
        );
        for (e, w) in f8.iter().zip(want) {
            let got = encode(e, &cd).unwrap();
            assert_eq!(got, hex(w));
            assert_eq!(decode(got, &cd, 32).unwrap(), *e);
        }
    }

    #[test]
    fn full_precision_and_constant_chunks() {
        // i8 spanning the whole range: stored at full precision (the
        // header's minimum left at 0, as libhdf5 does with a fill value).
        let cd = client_data(&Datatype::int_le(1, true), 4, 0, Some(&[0])).unwrap();
        let data = [0x80u8, 0x7f, 1, 2];
        let got = encode(&data, &cd).unwrap();
        assert_eq!(&got[..5], &[8, 0, 0, 0, 8]);
        assert_eq!(&got[5..21], &[0; 16]);
        assert_eq!(&got[21..], &data);
        assert_eq!(decode(got, &cd, 4).unwrap(), data);
        // No fill value and one value repeated: zero bits per value.
        let cd = client_data(&Datatype::int_le(2, false), 4, 0, None).unwrap();
        let data = [7u8, 1, 7, 1, 7, 1, 7, 1];
        let got = encode(&data, &cd).unwrap();
        assert_eq!(got.len(), 22);
        assert_eq!(&got[..7], &[0, 0, 0, 0, 8, 7, 1]);
        assert_eq!(decode(got, &cd, 8).unwrap(), data);
        // minbits = the type's bits: the chunk as it is, no header.
        let cd = client_data(&Datatype::int_le(2, false), 4, 16, None).unwrap();
        assert_eq!(encode(&data, &cd).unwrap(), data);
    }

    #[test]
    fn bad_arguments() {
        let s = Datatype::String {
            size: 4,
            pad: crate::format::datatype::StringPad::NullPad,
            cset: crate::format::datatype::CharSet::Ascii,
        };
        let e = client_data(&s, 4, 0, None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Usage);
        let e = client_data(&Datatype::int_le(2, true), 4, 17, None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Usage);
        let e = client_data(&Datatype::float_le(2), 4, 1, None).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Usage);
        let e = client_data(&Datatype::int_le(2, true), 4, 0, Some(&[0])).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Usage);
        let cd = client_data(&Datatype::int_le(2, true), 4, 0, None).unwrap();
        assert!(encode(&[0; 6], &cd).is_err());
    }
}
