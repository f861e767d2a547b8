//! Extensible array chunk index (spec III.H "Disk Format: Level 1H –
//! Extensible Array"): header (`EAHD`), index block (`EAIB`), secondary
//! ("super") blocks (`EASB`) and data blocks (`EADB`), all version 0, and the
//! element-count arithmetic that places element indexes in blocks.
//!
//! Elements `0..index_block_elements` live in the index block. The rest are
//! grouped by super block number `u = 0, 1, …`: super block `u` has
//! `2^(u/2)` data blocks of `2^((u+1)/2) * data_block_min_elements` elements
//! each. The first `2 * log2(super_block_min_pointers)` super blocks have no
//! block of their own: their data block addresses sit in the index block;
//! later ones are reached through super block addresses in the index block.
//! A data block with more elements than a page (`2^page_bits`) is paged: its
//! super block holds a page-initialized bitmap for it, and the pages (each
//! with its own checksum) follow the data block's prefix.

use super::fixed_array::{decode_entries, verify_checksum, ChunkEntry, CLIENT_FILTERED_CHUNK};
use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// The extensible array header (`EAHD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensibleArrayHeader {
    /// Client id: 0 unfiltered chunks, 1 filtered chunks.
    pub client_id: u8,
    /// Size in bytes of one element.
    pub element_size: u8,
    /// log2 of the maximum number of elements.
    pub max_nelmts_bits: u8,
    /// Elements stored in the index block.
    pub index_block_elements: u8,
    /// Minimum elements per data block.
    pub data_block_min_elements: u8,
    /// Minimum data block pointers per super block.
    pub super_block_min_pointers: u8,
    /// log2 of the elements per data block page.
    pub page_bits: u8,
    /// Statistics: number of super blocks.
    pub num_super_blocks: u64,
    /// Statistics: size of super blocks.
    pub super_blocks_size: u64,
    /// Statistics: number of data blocks.
    pub num_data_blocks: u64,
    /// Statistics: size of data blocks.
    pub data_blocks_size: u64,
    /// One more than the highest element index set.
    pub max_index_set: u64,
    /// Statistics: number of elements realized.
    pub num_elements: u64,
    /// Index block address (UNDEF: empty array).
    pub index_block: Addr,
}

/// Geometry of one super block number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuperBlockInfo {
    /// Data blocks in it.
    pub ndblks: u64,
    /// Elements per data block.
    pub dblk_nelmts: u64,
    /// Index of its first element, counted after the index block's elements.
    pub start_idx: u64,
    /// Global number of its first data block.
    pub start_dblk: u64,
}

fn log2_exact(v: u8, what: &str, cur: &Cursor<'_>) -> Result<u32> {
    if v == 0 || !v.is_power_of_two() {
        return Err(cur.corrupt(alloc::format!(
            "extensible array {what} {v} is not a power of two"
        )));
    }
    Ok(v.trailing_zeros())
}

impl ExtensibleArrayHeader {
    /// Encoded size of the header for these sizes.
    pub fn encoded_size(ctx: Ctx) -> usize {
        4 + 1 + 1 + 6 + 6 * usize::from(ctx.sizes.lengths) + usize::from(ctx.sizes.offsets) + 4
    }

    /// Decode and checksum-verify the header; `cur` covers exactly
    /// [`Self::encoded_size`] bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`, `Unsupported` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        verify_checksum(cur.rest(), cur.offset(), "extensible array header")?;
        cur.expect_signature(b"EAHD")?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(
                cur.unsupported(alloc::format!("extensible array header version {version}"))
            );
        }
        let h = ExtensibleArrayHeader {
            client_id: cur.read_u8()?,
            element_size: cur.read_u8()?,
            max_nelmts_bits: cur.read_u8()?,
            index_block_elements: cur.read_u8()?,
            data_block_min_elements: cur.read_u8()?,
            super_block_min_pointers: cur.read_u8()?,
            page_bits: cur.read_u8()?,
            num_super_blocks: cur.read_len(ctx.sizes)?,
            super_blocks_size: cur.read_len(ctx.sizes)?,
            num_data_blocks: cur.read_len(ctx.sizes)?,
            data_blocks_size: cur.read_len(ctx.sizes)?,
            max_index_set: cur.read_len(ctx.sizes)?,
            num_elements: cur.read_len(ctx.sizes)?,
            index_block: cur.read_addr(ctx.sizes)?,
        };
        cur.read_u32()?;
        if h.client_id > CLIENT_FILTERED_CHUNK {
            return Err(cur.corrupt(alloc::format!(
                "unknown extensible array client id {}",
                h.client_id
            )));
        }
        if h.element_size == 0
            || h.max_nelmts_bits == 0
            || h.max_nelmts_bits > 64
            || h.page_bits >= 64
        {
            return Err(cur.corrupt("extensible array parameters out of range"));
        }
        let min_bits = log2_exact(
            h.data_block_min_elements,
            "data block minimum elements",
            cur,
        )?;
        log2_exact(
            h.super_block_min_pointers,
            "super block minimum pointers",
            cur,
        )?;
        if min_bits > u32::from(h.max_nelmts_bits) {
            return Err(
                cur.corrupt("extensible array data block minimum exceeds its maximum elements")
            );
        }
        Ok(h)
    }

    /// Number of super block numbers: `1 + max_nelmts_bits - log2(data_block_min_elements)`.
    pub fn num_super_block_numbers(&self) -> u32 {
        1 + u32::from(self.max_nelmts_bits) - self.data_block_min_elements.trailing_zeros()
    }

    /// Geometry of every super block number.
    pub fn super_block_info(&self) -> Vec<SuperBlockInfo> {
        let mut v = Vec::new();
        let mut start_idx = 0u64;
        let mut start_dblk = 0u64;
        for u in 0..self.num_super_block_numbers() {
            let ndblks = 1u64.checked_shl(u / 2).unwrap_or(u64::MAX);
            let dblk_nelmts = 1u64
                .checked_shl(u.div_ceil(2))
                .unwrap_or(u64::MAX)
                .saturating_mul(u64::from(self.data_block_min_elements));
            v.push(SuperBlockInfo {
                ndblks,
                dblk_nelmts,
                start_idx,
                start_dblk,
            });
            start_idx = start_idx.saturating_add(ndblks.saturating_mul(dblk_nelmts));
            start_dblk = start_dblk.saturating_add(ndblks);
        }
        v
    }

    /// Super block numbers whose data blocks are addressed from the index block.
    pub fn index_block_super_blocks(&self) -> u32 {
        2 * self.super_block_min_pointers.trailing_zeros()
    }

    /// Data block addresses in the index block.
    pub fn index_block_data_blocks(&self) -> u64 {
        2 * (u64::from(self.super_block_min_pointers) - 1)
    }

    /// Super block addresses in the index block.
    pub fn index_block_super_block_addrs(&self) -> u64 {
        u64::from(
            self.num_super_block_numbers()
                .saturating_sub(self.index_block_super_blocks()),
        )
    }

    /// Bytes of the "array offset" field of super and data blocks.
    pub fn array_offset_size(&self) -> usize {
        usize::from(self.max_nelmts_bits).div_ceil(8)
    }

    /// Elements per data block page.
    pub fn page_elements(&self) -> u64 {
        1u64 << self.page_bits
    }

    /// Pages of a data block of `nelmts` elements (0: not paged).
    pub fn data_block_pages(&self, nelmts: u64) -> u64 {
        if nelmts > self.page_elements() {
            nelmts / self.page_elements()
        } else {
            0
        }
    }

    /// Size of the index block.
    ///
    /// # Errors
    /// `Limit` on overflow.
    pub fn index_block_size(&self, ctx: Ctx) -> Result<u64> {
        let o = u64::from(ctx.sizes.offsets);
        let elems = u64::from(self.index_block_elements) * u64::from(self.element_size);
        let addrs = (self.index_block_data_blocks() + self.index_block_super_block_addrs()) * o;
        Ok(4 + 1 + 1 + o + elems + addrs + 4)
    }

    /// Size of the prefix of a data block (with its checksum when paged; the
    /// elements follow the prefix and precede the checksum when not paged).
    pub fn data_block_size(&self, ctx: Ctx, nelmts: u64) -> Result<u64> {
        let prefix = 4 + 1 + 1 + u64::from(ctx.sizes.offsets) + self.array_offset_size() as u64 + 4;
        if self.data_block_pages(nelmts) > 0 {
            return Ok(prefix);
        }
        nelmts
            .checked_mul(u64::from(self.element_size))
            .and_then(|b| b.checked_add(prefix))
            .ok_or_else(|| Error::limit("extensible array data block size"))
    }

    /// Size of a super block holding `info.ndblks` data blocks.
    pub fn super_block_size(&self, ctx: Ctx, info: &SuperBlockInfo) -> Result<u64> {
        let o = u64::from(ctx.sizes.offsets);
        let pages = self.data_block_pages(info.dblk_nelmts);
        let bitmaps = info.ndblks.checked_mul(pages.div_ceil(8));
        let addrs = info.ndblks.checked_mul(o);
        let fixed = 4 + 1 + 1 + o + self.array_offset_size() as u64 + 4;
        bitmaps
            .zip(addrs)
            .and_then(|(b, a)| b.checked_add(a))
            .and_then(|s| s.checked_add(fixed))
            .ok_or_else(|| Error::limit("extensible array super block size"))
    }
}

fn prefix(
    cur: &mut Cursor<'_>,
    sig: &[u8; 4],
    what: &str,
    hdr: &ExtensibleArrayHeader,
    ctx: Ctx,
) -> Result<()> {
    verify_checksum(cur.rest(), cur.offset(), what)?;
    cur.expect_signature(sig)?;
    let version = cur.read_u8()?;
    if version != 0 {
        return Err(cur.unsupported(alloc::format!("{what} version {version}")));
    }
    if cur.read_u8()? != hdr.client_id {
        return Err(cur.corrupt(alloc::format!("{what} client id differs from the header's")));
    }
    let _header_addr = cur.read_addr(ctx.sizes)?;
    Ok(())
}

/// A decoded index block (`EAIB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexBlock {
    /// Elements stored directly in the index block.
    pub elements: Vec<ChunkEntry>,
    /// Data block addresses (for the first super block numbers).
    pub data_blocks: Vec<Addr>,
    /// Super block addresses.
    pub super_blocks: Vec<Addr>,
}

fn read_addrs(cur: &mut Cursor<'_>, ctx: Ctx, n: u64) -> Result<Vec<Addr>> {
    let n = cur.ensure_count(n, usize::from(ctx.sizes.offsets))?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(cur.read_addr(ctx.sizes)?);
    }
    Ok(v)
}

impl IndexBlock {
    /// Decode and verify; `cur` covers exactly `hdr.index_block_size(ctx)` bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx, hdr: &ExtensibleArrayHeader) -> Result<Self> {
        prefix(cur, b"EAIB", "extensible array index block", hdr, ctx)?;
        let elements = decode_entries(
            cur,
            ctx,
            hdr.client_id,
            hdr.element_size,
            u64::from(hdr.index_block_elements),
        )?;
        let data_blocks = read_addrs(cur, ctx, hdr.index_block_data_blocks())?;
        let super_blocks = read_addrs(cur, ctx, hdr.index_block_super_block_addrs())?;
        Ok(IndexBlock {
            elements,
            data_blocks,
            super_blocks,
        })
    }
}

/// A decoded super block (`EASB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuperBlock {
    /// Array offset of its first element.
    pub block_offset: u64,
    /// Page-initialized bitmaps, one per data block (empty when not paged).
    pub page_bitmaps: Vec<Vec<u8>>,
    /// Data block addresses.
    pub data_blocks: Vec<Addr>,
}

impl SuperBlock {
    /// Decode and verify; `cur` covers exactly `hdr.super_block_size(ctx, info)` bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(
        cur: &mut Cursor<'_>,
        ctx: Ctx,
        hdr: &ExtensibleArrayHeader,
        info: &SuperBlockInfo,
    ) -> Result<Self> {
        prefix(cur, b"EASB", "extensible array super block", hdr, ctx)?;
        let block_offset = cur.read_uint(hdr.array_offset_size())?;
        let pages = hdr.data_block_pages(info.dblk_nelmts);
        let mut page_bitmaps = Vec::new();
        if pages > 0 {
            let len = usize::try_from(pages.div_ceil(8))
                .map_err(|_| cur.corrupt("page bitmap too large"))?;
            let n = cur.ensure_count(info.ndblks, len)?;
            for _ in 0..n {
                page_bitmaps.push(cur.read_bytes(len)?.to_vec());
            }
        }
        let data_blocks = read_addrs(cur, ctx, info.ndblks)?;
        Ok(SuperBlock {
            block_offset,
            page_bitmaps,
            data_blocks,
        })
    }
}

/// A decoded data block (`EADB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataBlock {
    /// Array offset of its first element.
    pub block_offset: u64,
    /// Its elements (empty when paged: read the pages).
    pub elements: Vec<ChunkEntry>,
}

impl DataBlock {
    /// Decode and verify a data block of `nelmts` elements; `cur` covers
    /// exactly `hdr.data_block_size(ctx, nelmts)` bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(
        cur: &mut Cursor<'_>,
        ctx: Ctx,
        hdr: &ExtensibleArrayHeader,
        nelmts: u64,
    ) -> Result<Self> {
        prefix(cur, b"EADB", "extensible array data block", hdr, ctx)?;
        let block_offset = cur.read_uint(hdr.array_offset_size())?;
        let elements = if hdr.data_block_pages(nelmts) > 0 {
            Vec::new()
        } else {
            decode_entries(cur, ctx, hdr.client_id, hdr.element_size, nelmts)?
        };
        Ok(DataBlock {
            block_offset,
            elements,
        })
    }
}
