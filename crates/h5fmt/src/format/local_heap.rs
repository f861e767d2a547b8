//! Local heap header (`HEAP`), spec III.D: version 0.
//!
//! The header names the data segment (size and address); the segment holds
//! NUL-terminated strings (link names of old-style groups, external file
//! names). Reading the segment is [`crate::read::local_heap`]'s job.

use crate::addr::Sizes;
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};

/// A decoded local heap header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalHeapHeader {
    /// Size in bytes of the data segment.
    pub data_size: u64,
    /// Offset of the first free block in the data segment (`None`: no free block).
    pub free_list: Option<u64>,
    /// Address of the data segment.
    pub data_addr: Addr,
}

impl LocalHeapHeader {
    /// Encoded size of the header: signature, version, reserved, two lengths, one address.
    pub fn encoded_len(sizes: Sizes) -> usize {
        8 + 2 * usize::from(sizes.lengths) + usize::from(sizes.offsets)
    }

    /// Decode a header.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature or a version other than 0.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        cur.expect_signature(b"HEAP")?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("local heap version {version}"),
                cur.offset().saturating_sub(1),
            ));
        }
        cur.skip(3)?;
        let data_size = cur.read_len(ctx.sizes)?;
        let free_list = cur.read_len_opt(ctx.sizes)?;
        let data_addr = cur.read_addr(ctx.sizes)?;
        Ok(LocalHeapHeader {
            data_size,
            free_list,
            data_addr,
        })
    }
}

impl LocalHeapHeader {
    /// Encode the header; a missing free list is written as libhdf5's
    /// "no free block" marker, offset 1 (`H5HL_FREE_NULL`).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        enc.put_bytes(b"HEAP");
        enc.put_u8(0);
        enc.put_zeros(3);
        enc.put_len(self.data_size, ctx.sizes);
        enc.put_len(self.free_list.unwrap_or(1), ctx.sizes);
        enc.put_addr(self.data_addr, ctx.sizes);
    }
}

/// Build a local heap data segment holding `names` after the empty string
/// at offset 0, each NUL-terminated and padded to 8 bytes, followed by one
/// free block (next = 1 "none", size) as libhdf5 leaves it. Returns the
/// segment and each name's offset.
pub fn build_data_segment(
    names: &[&str],
    sizes: Sizes,
) -> (alloc::vec::Vec<u8>, alloc::vec::Vec<u64>) {
    let mut enc = Encoder::new();
    enc.put_zeros(8);
    let mut offsets = alloc::vec::Vec::with_capacity(names.len());
    for n in names {
        offsets.push(enc.len() as u64);
        enc.put_cstr(n);
        enc.pad_to(8);
    }
    let free_at = enc.len() as u64;
    let free_len = 2 * u64::from(sizes.lengths);
    let free_len = free_len.max(16);
    enc.put_len(1, sizes);
    enc.put_len(free_len, sizes);
    enc.put_zeros(
        usize::try_from(free_len)
            .unwrap_or(16)
            .saturating_sub(2 * usize::from(sizes.lengths)),
    );
    let _ = free_at;
    (enc.into_vec(), offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_hand_built_header() {
        let mut b = alloc::vec::Vec::new();
        b.extend_from_slice(b"HEAP\0\0\0\0");
        b.extend_from_slice(&88u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&0x2a0u64.to_le_bytes());
        let h = LocalHeapHeader::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(
            h,
            LocalHeapHeader {
                data_size: 88,
                free_list: None,
                data_addr: Addr(0x2a0)
            }
        );
        b[4] = 1;
        let e = LocalHeapHeader::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        b[4] = 0;
        let e = LocalHeapHeader::decode(&mut Cursor::new(&b[..20], 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Truncated);
    }
}
