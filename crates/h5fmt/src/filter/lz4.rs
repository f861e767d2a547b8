//! LZ4 filter (registered id 32004), as written by the HDF5 LZ4 plugin: a
//! header of the original size (u64 big-endian) and block size (u32
//! big-endian), then per block its compressed size (u32 big-endian) and the
//! LZ4 block; a block whose compressed size equals its decoded size is stored raw.

use crate::error::Result;
use alloc::vec::Vec;

pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    let (total, mut block) = super::be_size_header(data, bound, "lz4")?;
    if block == 0 {
        if total == 0 {
            return Ok(Vec::new());
        }
        return Err(super::corrupt("lz4 block size is zero"));
    }
    block = block.min(total);
    let mut out = super::alloc_zeroed(total)?;
    let mut pos = 12usize;
    let mut done = 0usize;
    while done < total {
        let this = block.min(total - done);
        let src = super::be_sized_block(data, &mut pos, "lz4")?;
        let dst = out
            .get_mut(done..done + this)
            .ok_or_else(|| super::corrupt("lz4 block"))?;
        if src.len() == this {
            dst.copy_from_slice(src);
        } else {
            let n = lz4_flex::block::decompress_into(src, dst)
                .map_err(|e| super::corrupt(alloc::format!("invalid lz4 block: {e}")))?;
            if n != this {
                return Err(super::corrupt(alloc::format!(
                    "lz4 block decoded to {n} bytes, expected {this}"
                )));
            }
        }
        done += this;
    }
    Ok(out)
}

/// The LZ4 plugin's default block size (1 GiB) used when the filter's
/// client data gives none.
pub(super) const DEFAULT_BLOCK: usize = 1 << 30;

/// Compress `data` in the HDF5 LZ4 plugin's format with blocks of `block`
/// bytes (0: the default): the header, then per block its compressed size
/// and the LZ4 block, or the raw block when compression does not shrink it.
pub(super) fn encode(data: &[u8], block: usize) -> Vec<u8> {
    let block = if block == 0 { DEFAULT_BLOCK } else { block }.min(data.len());
    let mut out = Vec::with_capacity(12 + data.len() + data.len() / 200 + 64);
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    #[allow(clippy::cast_possible_truncation)] // ≤ 1 GiB or the data length
    out.extend_from_slice(&(block.min(u32::MAX as usize) as u32).to_be_bytes());
    if block == 0 {
        return out;
    }
    let mut scratch = alloc::vec![0u8; lz4_flex::block::get_maximum_output_size(block)];
    for src in data.chunks(block) {
        let n = lz4_flex::block::compress_into(src, &mut scratch).unwrap_or(usize::MAX);
        #[allow(clippy::cast_possible_truncation)] // blocks are below 4 GiB
        match scratch.get(..n) {
            Some(c) if n < src.len() => {
                out.extend_from_slice(&(n as u32).to_be_bytes());
                out.extend_from_slice(c);
            }
            _ => {
                out.extend_from_slice(&(src.len() as u32).to_be_bytes());
                out.extend_from_slice(src);
            }
        }
    }
    out
}
