//! Szip filter (id 4): CCSDS 121.0-B Adaptive Entropy Coding (the format
//! libaec writes through its szip compatibility layer).
//!
//! Chunk layout written by libhdf5's szip filter: the decoded size as a u32
//! little-endian, then the AEC bit stream (most significant bit first).
//! Client data: options mask, pixels per block, bits per pixel, pixels per
//! scanline. Options used for decoding: `NN` (32: unit-delay predictor
//! preprocessing, one reference sample per reference sample interval) and
//! `MSB` (16: samples of more than one byte are big-endian; otherwise
//! little-endian). `EC`, `LSB`, `RAW`, `CHIP` and `K13` do not change the
//! decoding.
//!
//! The szip layer codes 32- and 64-bit pixels as bytes in byte-plane order
//! (all first bytes, then all second bytes, ...), and pads every scanline to
//! a whole number of blocks when the scanline length is not a multiple of the
//! block size.
//!
//! AEC blocks: an option id of `id_len` bits (3 for samples of up to 8 bits,
//! 4 up to 16 bits, 5 above), then
//! - id 0, then one bit: 0 = a run of zero blocks (fundamental-sequence coded
//!   count, with the "remainder of segment" code 4), 1 = second extension
//!   (pairs coded as one fundamental-sequence value);
//! - id all ones: the block's samples uncompressed;
//! - otherwise split samples with `k = id - 1`: every sample's high part as a
//!   fundamental sequence, then every sample's `k` low bits.
//!
//! With preprocessing, the first block of each reference sample interval
//! (RSI, `ceil(pixels per scanline / pixels per block)` blocks) carries the
//! reference sample (raw) after its option id (inside the samples for an
//! uncompressed block); the other values are mapped prediction residuals.

use crate::error::{Error, Result};
use alloc::vec::Vec;

const OPT_MSB: u32 = 16;
const OPT_NN: u32 = 32;

/// "Remainder of segment" code of a zero-block run.
const ROS: u64 = 5;

fn cd_usize(cd: &[u32], i: usize, what: &str) -> Result<usize> {
    let v = cd
        .get(i)
        .copied()
        .ok_or_else(|| super::corrupt(alloc::format!("szip client data lacks the {what}")))?;
    usize::try_from(v).map_err(|_| super::corrupt(alloc::format!("szip {what} too large")))
}

/// MSB-first bit reader over a byte slice.
struct Bits<'a> {
    data: &'a [u8],
    /// Next byte to load.
    pos: usize,
    /// Bits not yet consumed, right-aligned.
    acc: u64,
    /// Number of valid bits in `acc`.
    have: u32,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Self {
        Bits {
            data,
            pos: 0,
            acc: 0,
            have: 0,
        }
    }

    fn refill(&mut self) {
        while self.have <= 56 {
            match self.data.get(self.pos) {
                Some(&b) => {
                    self.acc = (self.acc << 8) | u64::from(b);
                    self.have += 8;
                    self.pos += 1;
                }
                None => break,
            }
        }
    }

    /// Read `n` (at most 32) bits.
    fn get(&mut self, n: u32) -> Result<u32> {
        if n == 0 {
            return Ok(0);
        }
        if self.have < n {
            self.refill();
            if self.have < n {
                return Err(truncated());
            }
        }
        self.have -= n;
        let v = (self.acc >> self.have) & ((1u64 << n) - 1);
        self.acc &= (1u64 << self.have) - 1;
        // n <= 32 so v fits.
        Ok(v as u32)
    }

    /// Read a fundamental-sequence codeword: the number of 0 bits before a 1.
    fn fs(&mut self) -> Result<u64> {
        let mut count = 0u64;
        loop {
            if self.have == 0 || self.acc == 0 {
                count += u64::from(self.have);
                self.have = 0;
                self.acc = 0;
                self.refill();
                if self.have == 0 {
                    return Err(truncated());
                }
                continue;
            }
            // acc != 0 and acc < 2^have: the highest set bit is below `have`.
            let top = 63 - self.acc.leading_zeros();
            count += u64::from(self.have - 1 - top);
            self.have = top;
            self.acc &= (1u64 << top) - 1;
            return Ok(count);
        }
    }
}

#[cold]
fn truncated() -> Error {
    super::corrupt("szip stream is truncated")
}

/// Decoded samples in output byte order, with the inverse preprocessor.
struct Sink {
    out: Vec<u8>,
    /// Samples still wanted.
    left: usize,
    bytes: usize,
    msb: bool,
    pp: bool,
    xmax: u64,
    last: u64,
}

impl Sink {
    fn full(&self) -> bool {
        self.left == 0
    }

    fn write(&mut self, v: u64) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let v = v & self.xmax;
        for i in 0..self.bytes {
            let shift = if self.msb { self.bytes - 1 - i } else { i } * 8;
            self.out.push((v >> shift) as u8);
        }
    }

    /// A reference sample: the raw value, and the next prediction.
    fn reference(&mut self, v: u64) {
        self.last = v & self.xmax;
        self.write(v);
    }

    /// A coded value: a mapped residual with preprocessing, else the sample.
    fn value(&mut self, d: u64) {
        if !self.pp {
            self.write(d);
            return;
        }
        let pred = self.last;
        // Distance from the prediction to the nearer end of the range.
        let theta = pred.min(self.xmax - pred);
        let x = if d <= theta.saturating_mul(2) {
            if d & 1 == 0 {
                pred + d / 2
            } else {
                pred.wrapping_sub(d.div_ceil(2))
            }
        } else if theta == pred {
            d
        } else {
            self.xmax.wrapping_sub(d)
        };
        let x = x & self.xmax;
        self.last = x;
        self.write(x);
    }
}

/// AEC stream parameters.
struct Params {
    bps: u32,
    block: usize,
    rsi_blocks: usize,
    pp: bool,
}

/// Decode AEC blocks until `sink` is full.
fn decode_aec(bits: &mut Bits<'_>, p: &Params, sink: &mut Sink) -> Result<()> {
    let id_len: u32 = if p.bps > 16 {
        5
    } else if p.bps > 8 {
        4
    } else {
        3
    };
    let uncompressed_id = (1u32 << id_len) - 1;
    let rsi_samples = p
        .rsi_blocks
        .checked_mul(p.block)
        .ok_or_else(|| super::corrupt("szip reference sample interval too large"))?;
    let mut fs_parts: Vec<u64> = Vec::with_capacity(p.block);
    // Samples already produced in the current RSI.
    let mut used = 0usize;
    while !sink.full() {
        if used >= rsi_samples {
            used = 0;
        }
        let has_ref = p.pp && used == 0;
        let coded = p.block - usize::from(has_ref);
        let id = bits.get(id_len)?;
        if id == 0 {
            let second_ext = bits.get(1)? == 1;
            if has_ref {
                let r = bits.get(p.bps)?;
                sink.reference(u64::from(r));
            }
            if second_ext {
                // Pairs (a, b) coded as m = (a+b)(a+b+1)/2 + b; with a
                // reference sample the first pair contributes only b.
                let mut i = usize::from(has_ref);
                while i < p.block {
                    let m = bits.fs()?;
                    if m > 90 {
                        return Err(super::corrupt(alloc::format!(
                            "szip second-extension code {m} out of range"
                        )));
                    }
                    // Row s = a + b: the largest s with s(s+1)/2 <= m.
                    let mut s = 0u64;
                    while (s + 1) * (s + 2) / 2 <= m {
                        s += 1;
                    }
                    let b = m - s * (s + 1) / 2;
                    let a = s - b;
                    if i & 1 == 0 {
                        sink.value(a);
                        i += 1;
                    }
                    sink.value(b);
                    i += 1;
                }
                used += p.block;
            } else {
                let f = bits.fs()?;
                let mut runs = f.saturating_add(1);
                let start_block = used / p.block;
                if runs == ROS {
                    // Zero blocks to the end of the 64-block segment or of the RSI.
                    let to_rsi = p.rsi_blocks.saturating_sub(start_block);
                    let to_seg = 64 - start_block % 64;
                    runs = to_rsi.min(to_seg) as u64;
                } else if runs > ROS {
                    runs -= 1;
                }
                let runs = usize::try_from(runs).unwrap_or(usize::MAX);
                let samples = runs
                    .checked_mul(p.block)
                    .filter(|&n| n <= rsi_samples - used)
                    .ok_or_else(|| {
                        super::corrupt("szip zero-block run exceeds the reference sample interval")
                    })?;
                for _ in 0..samples - usize::from(has_ref) {
                    if sink.full() {
                        break;
                    }
                    sink.value(0);
                }
                used += samples;
            }
        } else if id == uncompressed_id {
            for j in 0..p.block {
                let v = u64::from(bits.get(p.bps)?);
                if has_ref && j == 0 {
                    sink.reference(v);
                } else {
                    sink.value(v);
                }
                if sink.full() {
                    break;
                }
            }
            used += p.block;
        } else {
            let k = id - 1;
            if k >= p.bps {
                return Err(super::corrupt(alloc::format!(
                    "szip split option k={k} for {}-bit samples",
                    p.bps
                )));
            }
            if has_ref {
                let r = bits.get(p.bps)?;
                sink.reference(u64::from(r));
            }
            fs_parts.clear();
            for _ in 0..coded {
                let f = bits.fs()?;
                if f > sink.xmax {
                    return Err(super::corrupt("szip fundamental sequence too long"));
                }
                fs_parts.push(f);
            }
            for &f in &fs_parts {
                let low = bits.get(k)?;
                sink.value((f << k) | u64::from(low));
                if sink.full() {
                    break;
                }
            }
            used += p.block;
        }
    }
    Ok(())
}

pub(super) fn decode(data: &[u8], cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    let mask = cd
        .first()
        .copied()
        .ok_or_else(|| super::corrupt("szip client data is missing"))?;
    let block = cd_usize(cd, 1, "pixels per block")?;
    let bpp = cd_usize(cd, 2, "bits per pixel")?;
    let scanline = cd_usize(cd, 3, "pixels per scanline")?;
    let pp = mask & OPT_NN != 0;
    if block == 0 || block > 4096 || (pp && block < 2) {
        return Err(super::corrupt(alloc::format!(
            "szip pixels per block {block} is invalid"
        )));
    }
    if scanline == 0 {
        return Err(super::corrupt("szip pixels per scanline is zero"));
    }
    let interleave = bpp == 32 || bpp == 64;
    let bps: u32 = if interleave {
        8
    } else if (1..=24).contains(&bpp) {
        bpp as u32
    } else {
        return Err(Error::unsupported(alloc::format!(
            "szip with {bpp} bits per pixel"
        )));
    };
    let bytes = if bps > 16 {
        4
    } else if bps > 8 {
        2
    } else {
        1
    };
    let hdr = data
        .get(..4)
        .ok_or_else(|| super::corrupt("szip header is truncated"))?;
    let total = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
    let total = usize::try_from(total)
        .ok()
        .filter(|&t| t <= bound)
        .ok_or_else(|| Error::limit(alloc::format!("szip size {total} exceeds {bound} bytes")))?;
    let rsi_blocks = scanline.div_ceil(block);
    if rsi_blocks > 4096 {
        return Err(super::corrupt(alloc::format!(
            "szip reference sample interval of {rsi_blocks} blocks is too large"
        )));
    }
    let pad = scanline % block != 0;
    // Samples to decode: padded scanlines when the scanline is not a whole
    // number of blocks.
    let samples = if pad {
        let lines = (total / bytes).div_ceil(scanline);
        lines
            .checked_mul(rsi_blocks * block)
            .filter(|&n| n.saturating_mul(bytes) <= bound.saturating_mul(2).saturating_add(4096))
            .ok_or_else(|| Error::limit("szip padded scanlines exceed the bound"))?
    } else {
        total / bytes
    };
    let mut out = Vec::new();
    out.try_reserve_exact(samples * bytes)
        .map_err(|_| Error::limit(alloc::format!("cannot allocate {} bytes", samples * bytes)))?;
    let mut sink = Sink {
        out,
        left: samples,
        bytes,
        msb: mask & OPT_MSB != 0,
        pp,
        xmax: (1u64 << bps) - 1,
        last: 0,
    };
    let params = Params {
        bps,
        block,
        rsi_blocks,
        pp,
    };
    let mut bits = Bits::new(data.get(4..).unwrap_or(&[]));
    decode_aec(&mut bits, &params, &mut sink)?;
    let mut out = sink.out;
    if pad {
        let line = scanline * bytes;
        let padded = rsi_blocks * block * bytes;
        let mut kept = Vec::new();
        kept.try_reserve_exact(total)
            .map_err(|_| Error::limit(alloc::format!("cannot allocate {total} bytes")))?;
        for l in out.chunks(padded) {
            kept.extend_from_slice(l.get(..line).unwrap_or(l));
        }
        out = kept;
    }
    out.truncate(total);
    if out.len() < total {
        return Err(super::corrupt(alloc::format!(
            "szip stream decoded to {} bytes, expected {total}",
            out.len()
        )));
    }
    if interleave {
        let ws = bpp / 8;
        let n = total / ws;
        let mut d = super::alloc_zeroed(total)?;
        for (j, plane) in out.chunks_exact(n.max(1)).take(ws).enumerate() {
            for (i, &b) in plane.iter().enumerate() {
                if let Some(slot) = d.get_mut(i * ws + j) {
                    *slot = b;
                }
            }
        }
        // Bytes beyond whole words (if any) stay as decoded.
        if let (Some(dst), Some(src)) = (d.get_mut(n * ws..), out.get(n * ws..)) {
            dst.copy_from_slice(src);
        }
        out = d;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Pack (value, bit count) pairs MSB-first.
    fn pack(fields: &[(u64, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut acc = 0u64;
        let mut n = 0u32;
        for &(v, w) in fields {
            for i in (0..w).rev() {
                acc = (acc << 1) | ((v >> i) & 1);
                n += 1;
                if n == 8 {
                    out.push(acc as u8);
                    acc = 0;
                    n = 0;
                }
            }
        }
        if n > 0 {
            out.push((acc << (8 - n)) as u8);
        }
        out
    }

    fn with_header(len: u32, body: Vec<u8>) -> Vec<u8> {
        let mut v = len.to_le_bytes().to_vec();
        v.extend(body);
        v
    }

    #[test]
    fn split_block_without_preprocessing() {
        // 8-bit samples, block of 8, id = k+1 = 2 (k = 1): values 0..8.
        let vals = [0u64, 1, 2, 3, 4, 5, 6, 7];
        let mut f = vec![(2u64, 3u32)];
        for v in vals {
            f.push((1, (v >> 1) as u32 + 1)); // FS of the high part: zeros then a 1
        }
        for v in vals {
            f.push((v & 1, 1));
        }
        let d = with_header(8, pack(&f));
        let out = decode(&d, &[0, 8, 8, 8], 8).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn uncompressed_and_zero_blocks_with_preprocessing() {
        // 16-bit samples MSB, NN, block 4, scanline 8 (2 blocks per RSI).
        // Block 1: uncompressed (id 0b1111): ref 1000, residuals 2 (+1), 1 (-1), 0.
        // Block 2: zero block run of 1 (id 0, bit 0, FS 0): repeats the prediction.
        let f = [
            (15u64, 4u32),
            (1000, 16),
            (2, 16),
            (1, 16),
            (0, 16),
            (0, 4),
            (0, 1),
            (1, 1),
        ];
        let d = with_header(16, pack(&f));
        let out = decode(&d, &[OPT_NN | OPT_MSB, 4, 16, 8], 16).unwrap();
        let vals: Vec<u16> = out
            .chunks(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(vals, [1000, 1001, 1000, 1000, 1000, 1000, 1000, 1000]);
        // Truncated and over-long claims fail cleanly.
        assert!(decode(&d[..d.len() - 2], &[OPT_NN | OPT_MSB, 4, 16, 8], 16).is_err());
        assert!(decode(&d, &[OPT_NN | OPT_MSB, 4, 16, 8], 15).is_err());
    }

    #[test]
    fn second_extension_pairs() {
        // 8-bit, block 4, no preprocessing; id 0, bit 1, pairs (1,2) and (0,0):
        // m = (a+b)(a+b+1)/2 + b = 3*4/2 + 2 = 8, then 0.
        let f = [(0u64, 3u32), (1, 1), (1, 9), (1, 1)];
        let d = with_header(4, pack(&f));
        assert_eq!(decode(&d, &[0, 4, 8, 4], 4).unwrap(), [1, 2, 0, 0]);
    }

    #[test]
    fn unmapping_follows_the_spec() {
        let mut s = Sink {
            out: Vec::new(),
            left: 10,
            bytes: 1,
            msb: false,
            pp: true,
            xmax: 255,
            last: 0,
        };
        s.reference(250);
        s.value(3); // -2 -> 248
        s.value(20); // theta = 7, 20 > 14: 255 - 20 = 235
        s.reference(3);
        s.value(10); // theta = 3, 10 > 6: 10
        assert_eq!(s.out, [250, 248, 235, 3, 10]);
    }
}
