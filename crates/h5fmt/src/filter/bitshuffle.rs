//! Bitshuffle filter (registered id 32008), as written by the bitshuffle
//! HDF5 plugin.
//!
//! Client data: `[major, minor, element size, block size (elements, 0 =
//! default), compression (0 none, 2 LZ4, 3 zstd), zstd level]`.
//!
//! Data is cut into blocks of `block size` elements (a multiple of 8); a last
//! partial block is rounded down to a multiple of 8 elements, and the
//! remaining `count % 8` elements are stored verbatim at the end. Inside a
//! block, bit `b` of every element is gathered into one row of `n / 8` bytes
//! (element `i` at byte `i / 8`, bit `i % 8`), rows in order of the element's
//! bytes and, within a byte, from the least significant bit.
//!
//! With compression, the chunk starts with the decoded size (u64 big-endian)
//! and the block size in bytes (u32 big-endian); each block is then stored as
//! its compressed size (u32 big-endian) and the compressed bitshuffled block.

use crate::error::{Error, Result};
use alloc::vec::Vec;

/// Target block size in bytes of the default block size.
const TARGET_BLOCK_BYTES: usize = 8192;
/// Smallest default block size in elements.
const MIN_BLOCK: usize = 128;

fn default_block(es: usize) -> usize {
    (TARGET_BLOCK_BYTES / es / 8 * 8).max(MIN_BLOCK)
}

/// Undo the bit transposition of one block of `n` (a multiple of 8)
/// elements of `es` bytes from `src` into `dst` (both `n * es` bytes).
pub(super) fn untranspose(src: &[u8], dst: &mut [u8], n: usize, es: usize) {
    let row = n / 8;
    dst.fill(0);
    for (r, bits) in src.chunks_exact(row.max(1)).take(8 * es).enumerate() {
        let byte = r / 8;
        let mask = 1u8 << (r % 8);
        for (g, &v) in bits.iter().enumerate() {
            if v == 0 {
                continue;
            }
            for t in 0..8 {
                if v & (1 << t) != 0 {
                    if let Some(d) = dst.get_mut((g * 8 + t) * es + byte) {
                        *d |= mask;
                    }
                }
            }
        }
    }
}

/// Decode `data` (bitshuffled, optionally compressed), producing at most
/// `bound` bytes.
pub(super) fn decode(data: &[u8], cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    let es = cd
        .get(2)
        .and_then(|&v| usize::try_from(v).ok())
        .filter(|&v| v > 0)
        .ok_or_else(|| super::corrupt("bitshuffle client data lacks the element size"))?;
    let compression = cd.get(4).copied().unwrap_or(0);
    let (total, block, mut pos) = match compression {
        0 => {
            let block = match cd.get(3).copied().unwrap_or(0) {
                0 => default_block(es),
                b => usize::try_from(b).map_err(|_| super::corrupt("bitshuffle block size"))?,
            };
            if data.len() > bound {
                return Err(Error::limit(alloc::format!(
                    "bitshuffle data of {} bytes exceeds {bound} bytes",
                    data.len()
                )));
            }
            (data.len(), block, 0usize)
        }
        2 | 3 => {
            let (total, bytes) = super::be_size_header(data, bound, "bitshuffle")?;
            (total, bytes / es, 12usize)
        }
        c => {
            return Err(Error::unsupported(alloc::format!(
                "bitshuffle compression {c}"
            )))
        }
    };
    if block == 0 || block % 8 != 0 {
        return Err(super::corrupt(alloc::format!(
            "bitshuffle block size {block} is not a positive multiple of 8"
        )));
    }
    if total % es != 0 {
        return Err(super::corrupt(alloc::format!(
            "bitshuffle size {total} is not a whole number of {es}-byte elements"
        )));
    }
    let count = total / es;
    let mut out = super::alloc_zeroed(total)?;
    let mut tmp = super::alloc_zeroed(if compression == 0 {
        0
    } else {
        block.min(count) * es
    })?;
    let mut done = 0usize; // elements
    let last = count % block - count % block % 8;
    let n_blocks = count / block + usize::from(last > 0);
    for b in 0..n_blocks {
        let n = if b < count / block { block } else { last };
        let nbytes = n * es;
        let dst = out
            .get_mut(done * es..(done + n) * es)
            .ok_or_else(|| super::corrupt("bitshuffle block"))?;
        let src: &[u8] = if compression == 0 {
            let s = data
                .get(pos..pos + nbytes)
                .ok_or_else(|| super::corrupt("bitshuffle data is truncated"))?;
            pos += nbytes;
            s
        } else {
            let src = super::be_sized_block(data, &mut pos, "bitshuffle")?;
            let t = tmp
                .get_mut(..nbytes)
                .ok_or_else(|| super::corrupt("bitshuffle block"))?;
            let got = if compression == 2 {
                lz4_flex::block::decompress_into(src, t).map_err(|e| {
                    super::corrupt(alloc::format!("invalid lz4 block in bitshuffle: {e}"))
                })?
            } else {
                super::zstd::decode_into(src, t)?
            };
            if got != nbytes {
                return Err(super::corrupt(alloc::format!(
                    "bitshuffle block decoded to {got} bytes, expected {nbytes}"
                )));
            }
            t
        };
        untranspose(src, dst, n, es);
        done += n;
    }
    // Trailing elements that do not fill 8 are stored as they are.
    let rest = (count - done) * es;
    let src = data
        .get(pos..pos + rest)
        .ok_or_else(|| super::corrupt("bitshuffle trailing elements are truncated"))?;
    if let Some(dst) = out.get_mut(done * es..) {
        dst.copy_from_slice(src);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untransposes_one_block_of_eight() {
        // Eight u16 elements; element i has only bit i set (bits 0..7 of byte 0)
        // -> row r (bit r of byte 0) has only element r's bit: byte 1 << r.
        let mut src = [0u8; 16];
        for (r, b) in src.iter_mut().take(8).enumerate() {
            *b = 1 << r;
        }
        let mut dst = [0u8; 16];
        untranspose(&src, &mut dst, 8, 2);
        for i in 0..8 {
            assert_eq!(u16::from_le_bytes([dst[2 * i], dst[2 * i + 1]]), 1 << i);
        }
    }

    #[test]
    fn uncompressed_with_trailing_elements() {
        // 10 one-byte elements: one block of 8 (all 0xff -> every row 0xff), 2 raw.
        let mut data = alloc::vec![0xffu8; 8];
        data.extend([5, 6]);
        let out = decode(&data, &[0, 4, 1, 0, 0], 10).unwrap();
        assert_eq!(out, [255, 255, 255, 255, 255, 255, 255, 255, 5, 6]);
        assert!(decode(&data, &[0, 4, 1, 0, 0], 9).is_err());
    }
}
