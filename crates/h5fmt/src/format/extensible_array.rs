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
use crate::codec::{Cursor, Encoder};
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
    /// Page-initialized bitmaps, one per data block (empty when not paged;
    /// bit `i`, most significant bit first, set when page `i` was written).
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
            // The stored bitmap is one bit array over all data blocks (bit
            // `dblk * pages + page`, as libhdf5 indexes it) padded to
            // `ndblks * ceil(pages / 8)` bytes; split it per data block.
            let len = usize::try_from(pages.div_ceil(8))
                .map_err(|_| cur.corrupt("page bitmap too large"))?;
            let n = cur.ensure_count(info.ndblks, len)?;
            let all = cur.read_bytes(n * len)?;
            for d in 0..n as u64 {
                let mut bm = alloc::vec![0u8; len];
                for p in 0..pages {
                    if super::fixed_array::bit_set(all, d.saturating_mul(pages).saturating_add(p)) {
                        let p = usize::try_from(p).unwrap_or(0);
                        if let Some(b) = bm.get_mut(p / 8) {
                            *b |= 0x80 >> (p % 8);
                        }
                    }
                }
                page_bitmaps.push(bm);
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

// ---------------------------------------------------------------------------
// Encoding.

impl ExtensibleArrayHeader {
    /// Encode the header with its checksum ([`Self::encoded_size`] bytes).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        let start = enc.len();
        enc.put_bytes(b"EAHD");
        enc.put_u8(0);
        enc.put_u8(self.client_id);
        enc.put_u8(self.element_size);
        enc.put_u8(self.max_nelmts_bits);
        enc.put_u8(self.index_block_elements);
        enc.put_u8(self.data_block_min_elements);
        enc.put_u8(self.super_block_min_pointers);
        enc.put_u8(self.page_bits);
        for v in [
            self.num_super_blocks,
            self.super_blocks_size,
            self.num_data_blocks,
            self.data_blocks_size,
            self.max_index_set,
            self.num_elements,
        ] {
            enc.put_len(v, ctx.sizes);
        }
        enc.put_addr(self.index_block, ctx.sizes);
        enc.put_checksum_from(start);
    }
}

fn block_prefix(enc: &mut Encoder, sig: &[u8; 4], client_id: u8, header: Addr, ctx: Ctx) {
    enc.put_bytes(sig);
    enc.put_u8(0);
    enc.put_u8(client_id);
    enc.put_addr(header, ctx.sizes);
}

/// A built extensible array: the header (statistics and index block address
/// filled in; encode it at the header address given to [`build_array`]) and
/// every block with its address.
#[derive(Debug, Clone)]
pub struct BuiltArray {
    /// The header.
    pub header: ExtensibleArrayHeader,
    /// `(address, bytes)` of the index, super and data blocks.
    pub blocks: Vec<(Addr, Vec<u8>)>,
}

/// Build the blocks of an extensible array holding `entries` (encoded
/// elements of `template.element_size` bytes each, element `i` at index `i`)
/// as libhdf5 would after setting the elements for which `present(i)` holds:
/// the index block, and only the super and data blocks that contain a set
/// element (data blocks whole, paged data blocks with all their pages and
/// the page-initialized bits of the pages that hold a set element). Unset
/// elements are written as `fill` (one encoded element). `template` gives
/// the creation parameters; its statistics and index block address are
/// ignored. `alloc(size)` returns the address of a new block of `size` bytes.
///
/// # Errors
/// `Usage` for entries that are not whole elements, a fill of the wrong size
/// or more elements than `max_nelmts_bits` allows; `Limit` on overflow.
pub fn build_array(
    template: &ExtensibleArrayHeader,
    header_addr: Addr,
    entries: &[u8],
    fill: &[u8],
    present: &dyn Fn(u64) -> bool,
    ctx: Ctx,
    alloc: &mut dyn FnMut(u64) -> Addr,
) -> Result<BuiltArray> {
    let mut hdr = ExtensibleArrayHeader {
        num_super_blocks: 0,
        super_blocks_size: 0,
        num_data_blocks: 0,
        data_blocks_size: 0,
        max_index_set: 0,
        num_elements: 0,
        index_block: Addr::UNDEF,
        ..template.clone()
    };
    let es = usize::from(hdr.element_size);
    if es == 0 || !entries.len().is_multiple_of(es) || fill.len() != es {
        return Err(Error::usage(
            "extensible array entries are not whole elements",
        ));
    }
    if !hdr.data_block_min_elements.is_power_of_two()
        || !hdr.super_block_min_pointers.is_power_of_two()
        || hdr.max_nelmts_bits == 0
        || hdr.max_nelmts_bits > 64
        || hdr.page_bits >= 64
    {
        return Err(Error::usage("extensible array parameters out of range"));
    }
    let n = (entries.len() / es) as u64;
    if hdr.max_nelmts_bits < 64 && n > (1u64 << hdr.max_nelmts_bits) {
        return Err(Error::usage(
            "more elements than the extensible array holds",
        ));
    }
    let Some(last) = (0..n).rev().find(|&i| present(i)) else {
        return Ok(BuiltArray {
            header: hdr,
            blocks: Vec::new(),
        });
    };
    hdr.max_index_set = last + 1;
    let element = |i: u64| -> &[u8] {
        usize::try_from(i)
            .ok()
            .and_then(|i| entries.get(i * es..(i + 1) * es))
            .filter(|_| present(i))
            .unwrap_or(fill)
    };
    // Whether any element in `start..start + len` is set.
    let any_set = |start: u64, len: u64| (start..start.saturating_add(len).min(n)).any(present);
    let mut blocks = Vec::new();
    let ib_size = hdr.index_block_size(ctx)?;
    let ib_addr = alloc(ib_size);
    hdr.index_block = ib_addr;
    let ib_elems = u64::from(hdr.index_block_elements);
    hdr.num_elements = ib_elems;
    let in_ib = hdr.index_block_super_blocks() as usize;
    let mut ib_dblks =
        alloc::vec![Addr::UNDEF; usize::try_from(hdr.index_block_data_blocks()).unwrap_or(0)];
    let mut ib_sblks =
        alloc::vec![Addr::UNDEF; usize::try_from(hdr.index_block_super_block_addrs()).unwrap_or(0)];
    let aos = hdr.array_offset_size();
    let pe = hdr.page_elements();
    for (u, info) in hdr.clone().super_block_info().iter().enumerate() {
        let first = ib_elems.saturating_add(info.start_idx);
        if first >= n {
            break;
        }
        let sb_len = info.ndblks.saturating_mul(info.dblk_nelmts);
        if !any_set(first, sb_len) {
            continue;
        }
        let pages = hdr.data_block_pages(info.dblk_nelmts);
        let mut dblk_addrs = alloc::vec![Addr::UNDEF; usize::try_from(info.ndblks).unwrap_or(0)];
        let bitmap_len = usize::try_from(pages.div_ceil(8)).unwrap_or(0);
        let mut bitmaps = alloc::vec![0u8; bitmap_len * dblk_addrs.len()];
        for d in 0..info.ndblks {
            let dfirst = first.saturating_add(d.saturating_mul(info.dblk_nelmts));
            if dfirst >= n || !any_set(dfirst, info.dblk_nelmts) {
                continue;
            }
            let prefix_len = hdr.data_block_size(ctx, info.dblk_nelmts)?;
            let page_size = pe.saturating_mul(u64::from(hdr.element_size)) + 4;
            let total = prefix_len.saturating_add(pages.saturating_mul(page_size));
            let mut enc = Encoder::with_capacity(usize::try_from(total).unwrap_or(0));
            block_prefix(&mut enc, b"EADB", hdr.client_id, header_addr, ctx);
            enc.put_uint(info.start_idx + d * info.dblk_nelmts, aos);
            if pages == 0 {
                for i in 0..info.dblk_nelmts {
                    enc.put_bytes(element(dfirst + i));
                }
                enc.put_checksum_from(0);
            } else {
                enc.put_checksum_from(0);
                for p in 0..pages {
                    let pstart = enc.len();
                    let pfirst = dfirst + p * pe;
                    for i in 0..pe {
                        enc.put_bytes(element(pfirst + i));
                    }
                    enc.put_checksum_from(pstart);
                    if any_set(pfirst, pe) {
                        // One bit array over the super block's data blocks
                        // (libhdf5: bit `dblk * npages + page`, MSB first).
                        let bit = usize::try_from(d * pages + p).unwrap_or(usize::MAX);
                        if let Some(b) = bitmaps.get_mut(bit / 8) {
                            *b |= 0x80 >> (bit % 8);
                        }
                    }
                }
            }
            let bytes = enc.into_vec();
            let a = alloc(bytes.len() as u64);
            hdr.num_data_blocks += 1;
            hdr.data_blocks_size = hdr.data_blocks_size.saturating_add(bytes.len() as u64);
            hdr.num_elements = hdr.num_elements.saturating_add(info.dblk_nelmts);
            if let Some(slot) = dblk_addrs.get_mut(usize::try_from(d).unwrap_or(usize::MAX)) {
                *slot = a;
            }
            blocks.push((a, bytes));
        }
        if u < in_ib {
            for (d, a) in dblk_addrs.iter().enumerate() {
                let slot = usize::try_from(info.start_dblk).unwrap_or(usize::MAX) + d;
                if let Some(s) = ib_dblks.get_mut(slot) {
                    *s = *a;
                }
            }
        } else {
            let mut enc = Encoder::new();
            block_prefix(&mut enc, b"EASB", hdr.client_id, header_addr, ctx);
            enc.put_uint(info.start_idx, aos);
            enc.put_bytes(&bitmaps);
            for a in &dblk_addrs {
                enc.put_addr(*a, ctx.sizes);
            }
            enc.put_checksum_from(0);
            let bytes = enc.into_vec();
            let a = alloc(bytes.len() as u64);
            hdr.num_super_blocks += 1;
            hdr.super_blocks_size = hdr.super_blocks_size.saturating_add(bytes.len() as u64);
            if let Some(s) = ib_sblks.get_mut(u - in_ib) {
                *s = a;
            }
            blocks.push((a, bytes));
        }
    }
    let mut enc = Encoder::with_capacity(usize::try_from(ib_size).unwrap_or(0));
    block_prefix(&mut enc, b"EAIB", hdr.client_id, header_addr, ctx);
    for i in 0..ib_elems {
        enc.put_bytes(element(i));
    }
    for a in ib_dblks.iter().chain(&ib_sblks) {
        enc.put_addr(*a, ctx.sizes);
    }
    enc.put_checksum_from(0);
    blocks.push((ib_addr, enc.into_vec()));
    Ok(BuiltArray {
        header: hdr,
        blocks,
    })
}
