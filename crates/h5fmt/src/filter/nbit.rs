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
//!
//! Encoding ([`encode`]) packs the same stream; the stored chunk is
//! `floor(bits / 8) + 1` bytes (libhdf5 always counts the byte the bit
//! position is in, so a stream ending on a byte boundary gets one zero
//! byte more). [`client_data`] computes the parameters as libhdf5's
//! `set_local` does from the datatype and the chunk's element count.

use crate::error::{Error, Result};
use crate::format::datatype::{ByteOrder, Datatype};
use alloc::vec::Vec;

/// Most parameters libhdf5 lets the nbit filter have (`H5Z_NBIT_MAX_NPARMS`).
const MAX_PARAMS: usize = 4096;

/// The nbit client data libhdf5's `set_local` stores for a dataset of
/// `dtype` with chunks of `nelmts` elements.
///
/// # Errors
/// `Usage` for a datatype nbit does not apply to (at the top level only
/// integer, float, array and compound types; no variable-length array
/// base; an atomic type of more than 16 bytes, VAX order or a precision
/// and offset outside its size), or one needing more than 4096 parameters.
pub fn client_data(dtype: &Datatype, nelmts: u32) -> Result<Vec<u32>> {
    let mut cd = alloc::vec![0u32, 1, nelmts];
    let mut compress = false;
    match dtype {
        Datatype::Integer { .. } | Datatype::Float { .. } => {
            describe_atomic(dtype, &mut cd, &mut compress)?;
        }
        Datatype::Array { .. } => describe_array(dtype, &mut cd, &mut compress, 0)?,
        Datatype::Compound { .. } => describe_compound(dtype, &mut cd, &mut compress, 0)?,
        _ => {
            return Err(Error::usage(
                "the nbit filter applies to integer, float, array and compound datatypes",
            ))
        }
    }
    if cd.len() > MAX_PARAMS {
        return Err(Error::usage("the datatype needs too many nbit parameters"));
    }
    cd[0] = u32::try_from(cd.len()).map_err(|_| Error::usage("nbit parameters"))?;
    cd[1] = u32::from(!compress);
    Ok(cd)
}

fn size_u32(dtype: &Datatype) -> Result<u32> {
    u32::try_from(dtype.size()).map_err(|_| Error::usage("datatype too large for nbit"))
}

fn describe_atomic(dtype: &Datatype, cd: &mut Vec<u32>, compress: &mut bool) -> Result<()> {
    let (size, order, precision, offset) = match dtype {
        Datatype::Integer {
            size,
            order,
            bit_offset,
            precision,
            ..
        } => (*size, *order, *precision, *bit_offset),
        Datatype::Float {
            size,
            order,
            layout,
        } => (*size, *order, layout.precision, layout.bit_offset),
        _ => return Err(Error::usage("nbit: not an atomic datatype")),
    };
    let order = match order {
        ByteOrder::Little => 0,
        ByteOrder::Big => 1,
        ByteOrder::Vax => return Err(Error::usage("nbit: VAX byte order is not supported")),
    };
    let bits = size.saturating_mul(8);
    let (precision, offset) = (u32::from(precision), u32::from(offset));
    if size == 0 || size > 16 || precision == 0 || precision + offset > bits {
        return Err(Error::usage(alloc::format!(
            "nbit: invalid precision {precision} / offset {offset} for a {size}-byte type"
        )));
    }
    cd.extend_from_slice(&[1, size, order, precision, offset]);
    if offset != 0 || precision != bits {
        *compress = true;
    }
    Ok(())
}

fn describe_array(
    dtype: &Datatype,
    cd: &mut Vec<u32>,
    compress: &mut bool,
    depth: usize,
) -> Result<()> {
    let Datatype::Array { base, .. } = dtype else {
        return Err(Error::usage("nbit: not an array datatype"));
    };
    if depth > MAX_DEPTH || cd.len() > MAX_PARAMS {
        return Err(Error::usage("the datatype needs too many nbit parameters"));
    }
    cd.extend_from_slice(&[2, size_u32(dtype)?]);
    match &**base {
        Datatype::Integer { .. } | Datatype::Float { .. } => describe_atomic(base, cd, compress),
        Datatype::Array { .. } => describe_array(base, cd, compress, depth + 1),
        Datatype::Compound { .. } => describe_compound(base, cd, compress, depth + 1),
        Datatype::VarLenSequence { .. } | Datatype::VarLenString { .. } => Err(Error::usage(
            "nbit: arrays of variable-length elements are not supported (as in libhdf5)",
        )),
        other => {
            cd.extend_from_slice(&[4, size_u32(other)?]);
            Ok(())
        }
    }
}

fn describe_compound(
    dtype: &Datatype,
    cd: &mut Vec<u32>,
    compress: &mut bool,
    depth: usize,
) -> Result<()> {
    let Datatype::Compound { size, members } = dtype else {
        return Err(Error::usage("nbit: not a compound datatype"));
    };
    if depth > MAX_DEPTH || cd.len() > MAX_PARAMS {
        return Err(Error::usage("the datatype needs too many nbit parameters"));
    }
    let n = u32::try_from(members.len()).map_err(|_| Error::usage("nbit: too many members"))?;
    cd.extend_from_slice(&[3, *size, n]);
    for (i, m) in members.iter().enumerate() {
        cd.push(m.offset);
        match &m.dtype {
            Datatype::Integer { .. } | Datatype::Float { .. } => {
                describe_atomic(&m.dtype, cd, compress)?;
            }
            Datatype::Array { .. } => describe_array(&m.dtype, cd, compress, depth + 1)?,
            Datatype::Compound { .. } => describe_compound(&m.dtype, cd, compress, depth + 1)?,
            Datatype::VarLenSequence { .. } | Datatype::VarLenString { .. } => {
                // libhdf5 takes the distance to the next member (or the end).
                let next = members.get(i + 1).map_or(*size, |n| n.offset);
                let len = next.checked_sub(m.offset).ok_or_else(|| {
                    Error::usage("nbit: compound members with variable-length types out of order")
                })?;
                cd.extend_from_slice(&[4, len]);
            }
            other => cd.extend_from_slice(&[4, size_u32(other)?]),
        }
        if cd.len() > MAX_PARAMS {
            return Err(Error::usage("the datatype needs too many nbit parameters"));
        }
    }
    Ok(())
}

/// MSB-first bit writer (the packed stream of nbit and scale-offset).
pub(super) struct BitWriter {
    pub(super) out: Vec<u8>,
    /// Bits used in the last byte of `out` (8 when full or empty).
    used: u32,
}

impl BitWriter {
    pub(super) fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            used: 8,
        }
    }
    /// Append the low `n ≤ 64` bits of `v`, most significant first.
    pub(super) fn write(&mut self, v: u64, n: u32) {
        let mut left = n;
        while left > 0 {
            if self.used == 8 {
                self.out.push(0);
                self.used = 0;
            }
            let avail = 8 - self.used;
            let take = avail.min(left);
            let bits = (v >> (left - take)) & ((1u64 << take) - 1);
            if let Some(last) = self.out.last_mut() {
                #[allow(clippy::cast_possible_truncation)] // < 256
                {
                    *last |= (bits << (avail - take)) as u8;
                }
            }
            self.used += take;
            left -= take;
        }
    }
    /// The stream as libhdf5 sizes it: `floor(bits / 8) + 1` bytes.
    pub(super) fn finish_floor_plus_one(mut self) -> Vec<u8> {
        if self.used == 8 {
            self.out.push(0);
        }
        self.out
    }
}

/// Pack one atomic value (`elem`: its `size` bytes).
fn encode_atomic(
    elem: &[u8],
    order: u32,
    precision: u32,
    offset: u32,
    bw: &mut BitWriter,
) -> Result<()> {
    let size = elem.len();
    if size == 0
        || size > 16
        || precision == 0
        || u64::from(precision) + u64::from(offset) > 8 * size as u64
    {
        return Err(Error::usage(alloc::format!(
            "nbit: invalid precision {precision} / offset {offset} for a {size}-byte type"
        )));
    }
    let mut v = 0u128;
    for i in 0..size {
        let b = if order == 0 {
            elem[size - 1 - i]
        } else {
            elem[i]
        };
        v = (v << 8) | u128::from(b);
    }
    let v = v >> offset;
    if precision > 64 {
        #[allow(clippy::cast_possible_truncation)] // the high bits, < 2^64
        bw.write((v >> 64) as u64, precision - 64);
        #[allow(clippy::cast_possible_truncation)] // the low 64 bits
        bw.write(v as u64, 64);
    } else {
        #[allow(clippy::cast_possible_truncation)] // masked by write
        bw.write(v as u64, precision);
    }
    Ok(())
}

/// Pack one value of the type described at the parameters' position.
fn encode_value(
    class: u32,
    elem: &[u8],
    p: &mut Params<'_>,
    bw: &mut BitWriter,
    depth: usize,
) -> Result<()> {
    let bad = || Error::usage("nbit parameters do not describe the data");
    if depth > MAX_DEPTH {
        return Err(Error::usage("nbit type description nests too deeply"));
    }
    match class {
        1 => {
            let size = usz(p.next()?);
            let order = p.next()?;
            let precision = p.next()?;
            let offset = p.next()?;
            let src = elem.get(..size).ok_or_else(bad)?;
            encode_atomic(src, order, precision, offset, bw)
        }
        2 => {
            let total = usz(p.next()?);
            let base_class = p.next()?;
            let base_size = usz(p.peek()?);
            if base_size == 0 || total > elem.len() {
                return Err(bad());
            }
            let start = p.idx;
            let n = total / base_size;
            if base_class == 4 {
                // A no-op base: the array's bytes as they are.
                p.next()?;
                for &b in elem.get(..total).ok_or_else(bad)? {
                    bw.write(u64::from(b), 8);
                }
                return Ok(());
            }
            for i in 0..n {
                p.idx = start;
                let src = elem.get(i * base_size..).ok_or_else(bad)?;
                encode_value(base_class, src, p, bw, depth + 1)?;
            }
            if n == 0 {
                skip(base_class, p, depth + 1)?;
            }
            Ok(())
        }
        3 => {
            let size = usz(p.next()?);
            let nmembers = p.next()?;
            if size > elem.len() {
                return Err(bad());
            }
            for _ in 0..nmembers {
                let member_offset = usz(p.next()?);
                let member_class = p.next()?;
                let src = elem.get(member_offset..).ok_or_else(bad)?;
                encode_value(member_class, src, p, bw, depth + 1)?;
            }
            Ok(())
        }
        4 => {
            let size = usz(p.next()?);
            for &b in elem.get(..size).ok_or_else(bad)? {
                bw.write(u64::from(b), 8);
            }
            Ok(())
        }
        c => Err(Error::usage(alloc::format!("invalid nbit type class {c}"))),
    }
}

/// Pack a chunk (`data`: `cd[2]` elements of `cd[4]` bytes) as libhdf5's
/// nbit filter does; when `cd[1]` says no compression is needed the chunk
/// is returned as it is.
///
/// # Errors
/// `Usage` when the parameters are malformed or do not match the data.
pub(super) fn encode(data: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    if cd.len() < 5 || usz(cd[0]) != cd.len() {
        return Err(Error::usage("nbit parameters are malformed"));
    }
    if cd[1] != 0 {
        return Ok(data.to_vec());
    }
    let nelmts = usz(cd[2]);
    let class = cd[3];
    let size = usz(cd[4]);
    if size == 0 || nelmts.checked_mul(size) != Some(data.len()) {
        return Err(Error::usage(alloc::format!(
            "nbit: chunk of {} bytes is not {nelmts} elements of {size} bytes",
            data.len()
        )));
    }
    if !matches!(class, 1..=3) {
        return Err(Error::usage(alloc::format!(
            "invalid nbit top-level type class {class}"
        )));
    }
    let mut bw = BitWriter::with_capacity(data.len());
    for elem in data.chunks_exact(size) {
        let mut p = Params { cd, idx: 4 };
        encode_value(class, elem, &mut p, &mut bw, 0)?;
    }
    Ok(bw.finish_floor_plus_one())
}

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

#[cfg(test)]
mod encode_tests {
    use super::*;
    use crate::format::datatype::{CompoundMember, Datatype};

    fn int(size: u32, precision: u16, offset: u16, order: ByteOrder) -> Datatype {
        Datatype::Integer {
            size,
            order,
            signed: true,
            bit_offset: offset,
            precision,
        }
    }

    #[test]
    fn matches_libhdf5() {
        // h5py 3.16 / libhdf5 2.0: an I32LE of precision 12, offset 3,
        // chunks of 4, values arange(10) * 37 - 100 (converted by
        // libhdf5: the value shifted left by 3), `read_direct_chunk`.
        let dt = int(4, 12, 3, ByteOrder::Little);
        let cd = client_data(&dt, 4).unwrap();
        assert_eq!(cd, [8, 0, 4, 1, 4, 0, 12, 3]);
        let raw: [u32; 10] = [
            0x7ce0, 0x7e08, 0x7f30, 0x58, 0x180, 0x2a8, 0x3d0, 0x4f8, 0x620, 0x748,
        ];
        let want = ["f9cfc1fe600b00", "03005507a09f00", "0c40e900000000"];
        for (c, w) in raw.chunks(4).zip(want) {
            let mut bytes: Vec<u8> = c.iter().flat_map(|v| v.to_le_bytes()).collect();
            bytes.resize(16, 0);
            let got = encode(&bytes, &cd).unwrap();
            let w: Vec<u8> = (0..w.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&w[i..i + 2], 16).unwrap())
                .collect();
            assert_eq!(got, w);
            assert_eq!(decode(&got, &cd, 16).unwrap(), bytes);
        }
        // Full precision: "no compression needed", stored as is.
        let cd = client_data(&Datatype::int_le(2, true), 5).unwrap();
        assert_eq!(cd, [8, 1, 5, 1, 2, 0, 16, 0]);
        assert_eq!(encode(&[1, 2, 3, 4], &cd).unwrap(), [1, 2, 3, 4]);
    }

    #[test]
    fn compound_and_array_round_trip() {
        let arr = Datatype::Array {
            dims: alloc::vec![3],
            base: alloc::boxed::Box::new(int(2, 9, 0, ByteOrder::Big)),
        };
        let dt = Datatype::Compound {
            size: 16,
            members: alloc::vec![
                CompoundMember {
                    name: "a".into(),
                    offset: 0,
                    dtype: int(4, 20, 3, ByteOrder::Little),
                },
                CompoundMember {
                    name: "s".into(),
                    offset: 4,
                    dtype: Datatype::String {
                        size: 3,
                        pad: crate::format::datatype::StringPad::NullPad,
                        cset: crate::format::datatype::CharSet::Ascii,
                    },
                },
                CompoundMember {
                    name: "arr".into(),
                    offset: 8,
                    dtype: arr,
                },
            ],
        };
        let cd = client_data(&dt, 2).unwrap();
        assert_eq!(
            cd,
            [23, 0, 2, 3, 16, 3, 0, 1, 4, 0, 20, 3, 4, 4, 3, 8, 2, 6, 1, 2, 1, 9, 0]
        );
        let mut data = alloc::vec![0u8; 32];
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37);
        }
        let got = encode(&data, &cd).unwrap();
        // 2 x (20 + 24 + 3 x 9) = 142 bits: 17 whole bytes + 1.
        assert_eq!(got.len(), 18);
        let back = decode(&got, &cd, 32).unwrap();
        // Only the significant bits survive.
        let mut want = alloc::vec![0u8; 32];
        for e in 0..2 {
            let o = e * 16;
            let a = u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) & (((1 << 20) - 1) << 3);
            want[o..o + 4].copy_from_slice(&a.to_le_bytes());
            want[o + 4..o + 7].copy_from_slice(&data[o + 4..o + 7]);
            for k in 0..3 {
                let p = o + 8 + 2 * k;
                let v = u16::from_be_bytes([data[p], data[p + 1]]) & 0x1ff;
                want[p..p + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
        assert_eq!(back, want);
    }

    #[test]
    fn bad_types() {
        let s = Datatype::vlen_utf8();
        assert_eq!(
            client_data(&s, 4).unwrap_err().kind(),
            crate::error::ErrorKind::Usage
        );
        let bad = int(2, 12, 8, ByteOrder::Little);
        assert_eq!(
            client_data(&bad, 4).unwrap_err().kind(),
            crate::error::ErrorKind::Usage
        );
        let arr = Datatype::Array {
            dims: alloc::vec![2],
            base: alloc::boxed::Box::new(Datatype::vlen_utf8()),
        };
        assert!(client_data(&arr, 4).is_err());
    }
}
