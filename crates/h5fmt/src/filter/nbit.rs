//! N-bit filter (id 5): the significant bits of every atomic value packed
//! into one MSB-first bit stream.
//!
//! Client data, as libhdf5's `set_local` stores it: `[0]` parameter count,
//! `[1]` 1 = "no compression needed" (data stored as is), `[2]` elements in
//! the chunk, then a type description starting at `[3]`:
//! - atomic (class 1): size, byte order (0 LE, 1 BE), precision, bit offset;
//! - array (class 2): size, then the base type's class and description;
//! - compound (class 3): size, member count, then per member its byte offset,
//!   class and description;
//! - other (class 4, "no-op"): size — all its bytes are packed, 8 bits each.
//!
//! An atomic value contributes its `precision` bits from bit `offset` upward,
//! most significant first; bits outside them decode as zero.

use crate::error::{Error, Result};
use alloc::vec::Vec;

/// MSB-first bit reader.
pub(super) struct BitReader<'a> {
    data: &'a [u8],
    /// Index of the next bit.
    bit: usize,
}

impl<'a> BitReader<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        BitReader { data, bit: 0 }
    }
    /// Read `n ≤ 64` bits as an unsigned value.
    pub(super) fn read(&mut self, n: u32) -> Result<u64> {
        let mut v = 0u64;
        let mut left = n;
        while left > 0 {
            let byte = self
                .data
                .get(self.bit / 8)
                .copied()
                .ok_or_else(|| super::corrupt("packed data is truncated"))?;
            #[allow(clippy::cast_possible_truncation)] // < 8
            let used = (self.bit % 8) as u32;
            let avail = 8 - used;
            let take = avail.min(left);
            let bits = (u64::from(byte) >> (avail - take)) & ((1u64 << take) - 1);
            v = (v << take) | bits;
            left -= take;
            self.bit += take as usize;
        }
        Ok(v)
    }
}

const MAX_DEPTH: usize = 32;

struct Params<'a> {
    cd: &'a [u32],
    idx: usize,
}

impl Params<'_> {
    fn next(&mut self) -> Result<u32> {
        let v = self
            .cd
            .get(self.idx)
            .copied()
            .ok_or_else(|| super::corrupt("nbit parameters are too short"))?;
        self.idx += 1;
        Ok(v)
    }
    fn peek(&self) -> Result<u32> {
        self.cd
            .get(self.idx)
            .copied()
            .ok_or_else(|| super::corrupt("nbit parameters are too short"))
    }
}

fn usz(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Decode one atomic value into `out` (exactly `size` bytes).
fn atomic(
    out: &mut [u8],
    order: u32,
    precision: u32,
    offset: u32,
    br: &mut BitReader<'_>,
) -> Result<()> {
    let size = out.len();
    let bits = u32::try_from(size)
        .ok()
        .and_then(|s| s.checked_mul(8))
        .ok_or_else(|| super::corrupt("nbit size"))?;
    if precision == 0 || precision > bits || offset.checked_add(precision).is_none_or(|e| e > bits)
    {
        return Err(super::corrupt(alloc::format!(
            "invalid nbit precision {precision} / offset {offset} for a {size}-byte type"
        )));
    }
    if order > 1 {
        return Err(super::corrupt(alloc::format!(
            "invalid nbit byte order {order}"
        )));
    }
    // Value bits from the most significant significant bit downward.
    let mut remaining = precision;
    while remaining > 0 {
        let take = remaining.min(32);
        let v = br.read(take)?;
        remaining -= take;
        for k in 0..take {
            if (v >> k) & 1 == 1 {
                let bit = offset + remaining + k; // logical bit number in the value
                let byte = usz(bit / 8);
                let idx = if order == 0 { byte } else { size - 1 - byte };
                if let Some(b) = out.get_mut(idx) {
                    *b |= 1 << (bit % 8);
                }
            }
        }
    }
    Ok(())
}

fn noop(out: &mut [u8], br: &mut BitReader<'_>) -> Result<()> {
    for b in out.iter_mut() {
        #[allow(clippy::cast_possible_truncation)] // 8 bits
        {
            *b = br.read(8)? as u8;
        }
    }
    Ok(())
}

/// Decode one value of the type described at the parameters' position, of
/// `class` (already read); `out` is the value's bytes.
fn value(
    class: u32,
    out: &mut [u8],
    p: &mut Params<'_>,
    br: &mut BitReader<'_>,
    depth: usize,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(super::corrupt("nbit type description nests too deeply"));
    }
    match class {
        1 => {
            let size = usz(p.next()?);
            let order = p.next()?;
            let precision = p.next()?;
            let offset = p.next()?;
            let dst = out
                .get_mut(..size)
                .ok_or_else(|| super::corrupt("nbit atomic size exceeds its container"))?;
            atomic(dst, order, precision, offset, br)
        }
        2 => {
            let total = usz(p.next()?);
            let base_class = p.next()?;
            let base_size = usz(p.peek()?);
            if base_size == 0 || total > out.len() {
                return Err(super::corrupt("invalid nbit array description"));
            }
            let start = p.idx;
            let n = total / base_size;
            for i in 0..n {
                p.idx = start;
                let dst = out
                    .get_mut(i * base_size..)
                    .ok_or_else(|| super::corrupt("nbit array"))?;
                value(base_class, dst, p, br, depth + 1)?;
            }
            if n == 0 {
                // Still consume the base description.
                skip(base_class, p, depth + 1)?;
            }
            Ok(())
        }
        3 => {
            let size = usz(p.next()?);
            let nmembers = p.next()?;
            if size > out.len() {
                return Err(super::corrupt("nbit compound size exceeds its container"));
            }
            let mut used = 0usize;
            for _ in 0..nmembers {
                let member_offset = usz(p.next()?);
                let member_class = p.next()?;
                let member_size = usz(p.peek()?);
                used = used.saturating_add(member_size);
                if member_size == 0
                    || used > size
                    || member_offset.saturating_add(member_size) > size
                {
                    return Err(super::corrupt("nbit compound member exceeds the compound"));
                }
                let dst = out
                    .get_mut(member_offset..member_offset + member_size)
                    .ok_or_else(|| super::corrupt("nbit compound member"))?;
                value(member_class, dst, p, br, depth + 1)?;
            }
            Ok(())
        }
        4 => {
            let size = usz(p.next()?);
            let dst = out
                .get_mut(..size)
                .ok_or_else(|| super::corrupt("nbit no-op size exceeds its container"))?;
            noop(dst, br)
        }
        c => Err(super::corrupt(alloc::format!(
            "invalid nbit type class {c}"
        ))),
    }
}

/// Consume a type description without decoding (for zero-length arrays).
fn skip(class: u32, p: &mut Params<'_>, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(super::corrupt("nbit type description nests too deeply"));
    }
    match class {
        1 => {
            for _ in 0..4 {
                p.next()?;
            }
        }
        2 => {
            p.next()?;
            let c = p.next()?;
            skip(c, p, depth + 1)?;
        }
        3 => {
            p.next()?;
            let n = p.next()?;
            for _ in 0..n {
                p.next()?;
                let c = p.next()?;
                skip(c, p, depth + 1)?;
            }
        }
        4 => {
            p.next()?;
        }
        c => {
            return Err(super::corrupt(alloc::format!(
                "invalid nbit type class {c}"
            )))
        }
    }
    Ok(())
}

pub(super) fn decode(data: &[u8], cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    if cd.len() < 5 {
        return Err(super::corrupt("nbit parameters are too short"));
    }
    if usz(cd[0]) != cd.len() {
        return Err(super::corrupt("nbit parameter count does not match"));
    }
    if cd[1] != 0 {
        // No compression was needed: stored as is.
        return Ok(data.to_vec());
    }
    let nelmts = usz(cd[2]);
    let class = cd[3];
    let size = usz(cd[4]);
    if size == 0 {
        return Err(super::corrupt("nbit datatype size is zero"));
    }
    let total = nelmts
        .checked_mul(size)
        .filter(|&t| t <= bound)
        .ok_or_else(|| {
            Error::limit(alloc::format!(
                "nbit output of {nelmts} x {size} bytes exceeds {bound} bytes"
            ))
        })?;
    if !matches!(class, 1..=3) {
        return Err(super::corrupt(alloc::format!(
            "invalid nbit top-level type class {class}"
        )));
    }
    let mut out = super::alloc_zeroed(total)?;
    let mut br = BitReader::new(data);
    for elem in out.chunks_exact_mut(size) {
        // The description after the class starts at index 4 (the size).
        let mut p = Params { cd, idx: 4 };
        value(class, elem, &mut p, &mut br, 0)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_reader_msb_first() {
        let mut br = BitReader::new(&[0b1010_1100, 0b0101_0000]);
        assert_eq!(br.read(3).unwrap(), 0b101);
        assert_eq!(br.read(7).unwrap(), 0b011_0001);
        assert!(br.read(7).is_err());
    }
}
