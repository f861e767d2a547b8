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
        let csize = usize::try_from(super::be_u32(data, pos, "lz4")?)
            .map_err(|_| super::corrupt("lz4 block size"))?;
        pos += 4;
        let src = pos
            .checked_add(csize)
            .and_then(|end| data.get(pos..end))
            .ok_or_else(|| {
                super::corrupt(alloc::format!(
                    "lz4 block of {csize} bytes at {pos} is truncated"
                ))
            })?;
        let dst = out
            .get_mut(done..done + this)
            .ok_or_else(|| super::corrupt("lz4 block"))?;
        if csize == this {
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
        pos += csize;
        done += this;
    }
    Ok(out)
}
