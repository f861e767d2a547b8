//! Fractal heaps, spec III.G: the header (`FRHP`, including the filtered root
//! block fields and the I/O filter information when the heap has filters),
//! direct blocks (`FHDB`) and indirect blocks (`FHIB`), version 0, and the
//! version-0 heap ids (managed, huge, tiny).
//!
//! Doubling-table geometry follows libhdf5 (`H5HF__dtable_init`):
//! rows 0 and 1 hold blocks of the starting size, every further row doubles;
//! `max_direct_rows = log2(max_direct) - log2(start) + 2`; the root indirect
//! block holds at most `max_heap_bits - log2(start * width) + 1` rows; an
//! indirect block representing `size` bytes has `log2(size) - log2(start * width) + 1`
//! rows. Managed heap ids carry an offset of `ceil(max_heap_bits / 8)` bytes
//! and a length of `min(ceil(log2(max_direct) / 8), enc(max_managed_size))`
//! bytes, `enc(n) = floor(log2(n)) / 8 + 1` (`H5HF_hdr_finish_init_phase1`).
//! Block offsets in blocks are `ceil(max_heap_bits / 8)` bytes.

use crate::addr::Sizes;
use crate::codec::{lookup3, Cursor};
use crate::error::{Error, Result};
use crate::format::btree_v2::limit_enc_size;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Header flag: huge object ids have wrapped.
pub const FLAG_HUGE_IDS_WRAPPED: u8 = 0x01;
/// Header flag: direct blocks carry a checksum.
pub const FLAG_CHECKSUM_DIRECT: u8 = 0x02;

fn log2_floor(n: u64) -> u32 {
    if n == 0 {
        0
    } else {
        63 - n.leading_zeros()
    }
}

/// A decoded fractal heap header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FractalHeapHeader {
    /// Length in bytes of heap ids.
    pub id_len: u16,
    /// Length of the encoded I/O filter information (0: no filters).
    pub filter_len: u16,
    /// Flags (see `FLAG_*`).
    pub flags: u8,
    /// Objects larger than this are huge.
    pub max_managed_size: u32,
    /// Next huge object id.
    pub next_huge_id: u64,
    /// v2 B-tree of huge objects (UNDEF when none).
    pub huge_btree: Addr,
    /// Free space in managed blocks.
    pub free_space: u64,
    /// Free-space manager of managed blocks.
    pub free_space_manager: Addr,
    /// Managed space in the heap.
    pub managed_space: u64,
    /// Allocated managed space.
    pub allocated_space: u64,
    /// Offset of the direct block allocation iterator.
    pub iterator_offset: u64,
    /// Number of managed objects.
    pub managed_objects: u64,
    /// Total size of huge objects.
    pub huge_size: u64,
    /// Number of huge objects.
    pub huge_objects: u64,
    /// Total size of tiny objects.
    pub tiny_size: u64,
    /// Number of tiny objects.
    pub tiny_objects: u64,
    /// Doubling table width (columns).
    pub table_width: u16,
    /// Starting block size.
    pub start_block_size: u64,
    /// Maximum direct block size.
    pub max_direct_size: u64,
    /// log2 of the maximum heap size (bits of the heap's address space).
    pub max_heap_bits: u16,
    /// Starting number of rows of the root indirect block.
    pub start_root_rows: u16,
    /// Root block address (UNDEF: empty heap).
    pub root: Addr,
    /// Current number of rows of the root indirect block (0: the root is a direct block).
    pub root_rows: u16,
    /// Filtered size of a root direct block (filters only).
    pub filtered_root_size: Option<u64>,
    /// Filter mask of a root direct block (filters only).
    pub root_filter_mask: u32,
    /// Encoded filter pipeline message (filters only).
    pub filter_info: Vec<u8>,
}

impl FractalHeapHeader {
    /// Size of the header without the filter fields and checksum.
    pub fn fixed_len(sizes: Sizes) -> usize {
        let o = usize::from(sizes.offsets);
        let l = usize::from(sizes.lengths);
        4 + 1 + 2 + 2 + 1 + 4 + l + o + l + o + 8 * l + 2 + l + l + 2 + 2 + o + 2
    }

    /// Size of the whole header including filter fields and checksum, given
    /// its first [`FractalHeapHeader::fixed_len`] bytes.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature.
    pub fn total_len(prefix: &[u8], base: u64, sizes: Sizes) -> Result<usize> {
        let mut cur = Cursor::new(prefix, base);
        cur.expect_signature(b"FRHP")?;
        cur.skip(3)?;
        let filter_len = usize::from(cur.read_u16()?);
        let extra = if filter_len > 0 {
            usize::from(sizes.lengths) + 4 + filter_len
        } else {
            0
        };
        Ok(Self::fixed_len(sizes) + extra + 4)
    }

    /// Decode and checksum-verify a header; `cur` must hold at least
    /// [`FractalHeapHeader::total_len`] bytes. The doubling-table parameters
    /// are validated (powers of two, consistent sizes, row counts in range).
    ///
    /// # Errors
    /// `Truncated`, `Checksum`, `Corrupt`; `Unsupported` for a version other than 0.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let s = ctx.sizes;
        let window = cur.rest();
        let base = cur.offset();
        let total = Self::total_len(window, base, s)?;
        let body = window
            .get(..total - 4)
            .ok_or_else(|| Error::truncated("fractal heap header", base))?;
        let stored = window
            .get(total - 4..total)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::truncated("fractal heap header checksum", base))?;
        let computed = lookup3(body, 0);
        if stored != computed {
            return Err(Error::checksum(
                alloc::format!(
                    "fractal heap header: stored {stored:#010x}, computed {computed:#010x}"
                ),
                base.saturating_add(total as u64 - 4),
            ));
        }
        cur.expect_signature(b"FRHP")?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::unsupported(alloc::format!(
                "fractal heap header version {version}"
            ))
            .with_offset(base));
        }
        let id_len = cur.read_u16()?;
        let filter_len = cur.read_u16()?;
        let flags = cur.read_u8()?;
        let max_managed_size = cur.read_u32()?;
        let next_huge_id = cur.read_len(s)?;
        let huge_btree = cur.read_addr(s)?;
        let free_space = cur.read_len(s)?;
        let free_space_manager = cur.read_addr(s)?;
        let managed_space = cur.read_len(s)?;
        let allocated_space = cur.read_len(s)?;
        let iterator_offset = cur.read_len(s)?;
        let managed_objects = cur.read_len(s)?;
        let huge_size = cur.read_len(s)?;
        let huge_objects = cur.read_len(s)?;
        let tiny_size = cur.read_len(s)?;
        let tiny_objects = cur.read_len(s)?;
        let table_width = cur.read_u16()?;
        let start_block_size = cur.read_len(s)?;
        let max_direct_size = cur.read_len(s)?;
        let max_heap_bits = cur.read_u16()?;
        let start_root_rows = cur.read_u16()?;
        let root = cur.read_addr(s)?;
        let root_rows = cur.read_u16()?;
        let (filtered_root_size, root_filter_mask, filter_info) = if filter_len > 0 {
            let size = cur.read_len(s)?;
            let mask = cur.read_u32()?;
            let info = cur.read_bytes(usize::from(filter_len))?.to_vec();
            (Some(size), mask, info)
        } else {
            (None, 0, Vec::new())
        };
        cur.skip(4)?;
        let h = FractalHeapHeader {
            id_len,
            filter_len,
            flags,
            max_managed_size,
            next_huge_id,
            huge_btree,
            free_space,
            free_space_manager,
            managed_space,
            allocated_space,
            iterator_offset,
            managed_objects,
            huge_size,
            huge_objects,
            tiny_size,
            tiny_objects,
            table_width,
            start_block_size,
            max_direct_size,
            max_heap_bits,
            start_root_rows,
            root,
            root_rows,
            filtered_root_size,
            root_filter_mask,
            filter_info,
        };
        h.validate(s).map_err(|e| e.with_offset(base))?;
        Ok(h)
    }

    fn validate(&self, s: Sizes) -> Result<()> {
        let bad = |m: &str| {
            Err(Error::corrupt(
                alloc::format!("fractal heap header: {m}"),
                0,
            ))
        };
        if self.id_len == 0 {
            return bad("heap id length 0");
        }
        if self.table_width == 0 || !self.table_width.is_power_of_two() {
            return bad("table width is not a power of two");
        }
        if self.start_block_size == 0 || !self.start_block_size.is_power_of_two() {
            return bad("starting block size is not a power of two");
        }
        if self.max_direct_size < self.start_block_size || !self.max_direct_size.is_power_of_two() {
            return bad(
                "maximum direct block size is not a power of two at least the starting size",
            );
        }
        if self.max_heap_bits == 0
            || u32::from(self.max_heap_bits) > 8 * u32::from(s.lengths).min(8)
        {
            return bad("maximum heap size out of range");
        }
        if self.first_row_bits() > u32::from(self.max_heap_bits) {
            return bad("first row larger than the heap");
        }
        if log2_floor(self.max_direct_size) > u32::from(self.max_heap_bits) {
            return bad("maximum direct block size larger than the heap");
        }
        if u32::from(self.root_rows) > self.max_root_rows() {
            return bad("root indirect block has too many rows");
        }
        Ok(())
    }

    /// Whether the heap has I/O filters.
    pub fn has_filters(&self) -> bool {
        self.filter_len > 0
    }
    /// Whether direct blocks carry a checksum.
    pub fn checksummed_direct_blocks(&self) -> bool {
        self.flags & FLAG_CHECKSUM_DIRECT != 0
    }
    /// log2 of the starting block size.
    pub fn start_bits(&self) -> u32 {
        log2_floor(self.start_block_size)
    }
    /// log2 of (starting block size × width): the bits addressed by row 0.
    pub fn first_row_bits(&self) -> u32 {
        self.start_bits() + log2_floor(u64::from(self.table_width))
    }
    /// Maximum rows of the root indirect block.
    pub fn max_root_rows(&self) -> u32 {
        u32::from(self.max_heap_bits).saturating_sub(self.first_row_bits()) + 1
    }
    /// Maximum rows of direct blocks in any indirect block.
    pub fn max_direct_rows(&self) -> u32 {
        log2_floor(self.max_direct_size).saturating_sub(self.start_bits()) + 2
    }
    /// Bytes of a heap offset (block offsets, managed id offsets).
    pub fn heap_off_size(&self) -> usize {
        usize::from(self.max_heap_bits).div_ceil(8)
    }
    /// Bytes of a managed id's length field.
    pub fn heap_len_size(&self) -> usize {
        let dir = (log2_floor(self.max_direct_size) as usize).div_ceil(8);
        dir.min(limit_enc_size(u64::from(self.max_managed_size)))
    }
    /// Block size of `row` (rows 0 and 1: the starting size, then doubling).
    pub fn row_block_size(&self, row: u32) -> Option<u64> {
        if row == 0 {
            return Some(self.start_block_size);
        }
        1u64.checked_shl(row - 1)
            .and_then(|f| f.checked_mul(self.start_block_size))
    }
    /// Heap offset of the first block of `row`, relative to its indirect block.
    pub fn row_block_offset(&self, row: u32) -> Option<u64> {
        if row == 0 {
            return Some(0);
        }
        let first = self
            .start_block_size
            .checked_mul(u64::from(self.table_width))?;
        1u64.checked_shl(row - 1).and_then(|f| f.checked_mul(first))
    }
    /// `(row, column)` of heap offset `off` relative to an indirect block.
    pub fn lookup(&self, off: u64) -> Option<(u32, u64)> {
        let first = self
            .start_block_size
            .checked_mul(u64::from(self.table_width))?;
        if off < first {
            return Some((0, off / self.start_block_size));
        }
        let high = log2_floor(off);
        let row = high.checked_sub(self.first_row_bits())? + 1;
        let col = (off - (1u64 << high)) / self.row_block_size(row)?;
        Some((row, col))
    }
    /// Rows of an indirect block representing `size` bytes of heap space.
    pub fn rows_for_size(&self, size: u64) -> u32 {
        log2_floor(size).saturating_sub(self.first_row_bits()) + 1
    }
    /// Prefix of a direct block: signature, version, heap address, block offset, optional checksum.
    pub fn direct_prefix_len(&self, sizes: Sizes) -> usize {
        5 + usize::from(sizes.offsets)
            + self.heap_off_size()
            + if self.checksummed_direct_blocks() {
                4
            } else {
                0
            }
    }
    /// Bytes of one direct-block entry of an indirect block.
    pub fn direct_entry_len(&self, sizes: Sizes) -> usize {
        usize::from(sizes.offsets)
            + if self.has_filters() {
                usize::from(sizes.lengths) + 4
            } else {
                0
            }
    }
    /// On-disk size of an indirect block with `rows` rows.
    pub fn indirect_len(&self, sizes: Sizes, rows: u32) -> Option<u64> {
        let w = u64::from(self.table_width);
        let dir_rows = u64::from(rows.min(self.max_direct_rows()));
        let ind_rows = u64::from(rows.saturating_sub(self.max_direct_rows()));
        let d = dir_rows
            .checked_mul(w)?
            .checked_mul(self.direct_entry_len(sizes) as u64)?;
        let i = ind_rows
            .checked_mul(w)?
            .checked_mul(u64::from(sizes.offsets))?;
        (9 + u64::from(sizes.offsets) + self.heap_off_size() as u64)
            .checked_add(d)?
            .checked_add(i)
    }
}

/// Verify a direct block's checksum: lookup3 over the whole block with the
/// checksum field itself taken as zero (as libhdf5 computes it).
///
/// # Errors
/// `Truncated`, `Checksum`.
pub fn verify_direct_checksum(
    block: &[u8],
    base: u64,
    hdr: &FractalHeapHeader,
    sizes: Sizes,
) -> Result<()> {
    let at = 5 + usize::from(sizes.offsets) + hdr.heap_off_size();
    let stored = block
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| Error::truncated("fractal heap direct block", base))?;
    let mut copy = block.to_vec();
    if let Some(c) = copy.get_mut(at..at + 4) {
        c.fill(0);
    }
    let computed = lookup3(&copy, 0);
    if stored != computed {
        return Err(Error::checksum(
            alloc::format!(
                "fractal heap direct block: stored {stored:#010x}, computed {computed:#010x}"
            ),
            base.saturating_add(at as u64),
        ));
    }
    Ok(())
}

/// Decode a direct block's prefix; returns `(heap header address, block offset)`.
///
/// # Errors
/// `Truncated`; `Corrupt` for a bad signature or version.
pub fn decode_direct_prefix(
    cur: &mut Cursor<'_>,
    hdr: &FractalHeapHeader,
    sizes: Sizes,
) -> Result<(Addr, u64)> {
    cur.expect_signature(b"FHDB")?;
    let at = cur.offset();
    let version = cur.read_u8()?;
    if version != 0 {
        return Err(Error::corrupt(
            alloc::format!("fractal heap direct block version {version}"),
            at,
        ));
    }
    let heap = cur.read_addr(sizes)?;
    let off = cur.read_uint(hdr.heap_off_size())?;
    Ok((heap, off))
}

/// An encoded single-block heap: header bytes, block bytes, heap ids.
pub type EncodedHeap = (Vec<u8>, Vec<u8>, Vec<Vec<u8>>);

/// Encode a fractal heap whose root is one direct block holding `objects`
/// back to back (the form of a heap small enough for a single block): the
/// header (`FRHP`, no filters, unchecksummed direct blocks, width 4, 32-bit
/// heap offsets, starting and maximum direct block size `block_size`, the
/// largest managed object filling the block) and the block (`FHDB`).
///
/// Returns (header bytes, block bytes, managed heap ids of `id_len` bytes).
/// `block_size` must be a power of two holding the block prefix and every
/// object; `id_len` must hold the flag byte, the 4-byte offset and the
/// length field.
///
/// # Errors
/// `Usage` when the objects do not fit, one is empty, or the id is too short.
pub fn encode_single_block_heap(
    sizes: Sizes,
    header_addr: Addr,
    block_addr: Addr,
    block_size: u64,
    id_len: u16,
    objects: &[&[u8]],
) -> Result<EncodedHeap> {
    use crate::codec::Encoder;
    const HEAP_BITS: u16 = 32;
    let prefix = 5 + usize::from(sizes.offsets) + usize::from(HEAP_BITS / 8);
    let total: usize = prefix + objects.iter().map(|o| o.len()).sum::<usize>();
    if objects.iter().any(|o| o.is_empty()) {
        return Err(Error::usage("empty fractal heap object"));
    }
    if !block_size.is_power_of_two() || (total as u64) > block_size || block_size > 1 << 31 {
        return Err(Error::usage("fractal heap objects do not fit the block"));
    }
    let max_managed = u32::try_from(block_size - prefix as u64)
        .map_err(|_| Error::usage("fractal heap block too large"))?;
    let len_size = (log2_floor(block_size) as usize)
        .div_ceil(8)
        .min(limit_enc_size(u64::from(max_managed)));
    if 1 + usize::from(HEAP_BITS / 8) + len_size > usize::from(id_len) {
        return Err(Error::usage("fractal heap id too short for the block size"));
    }
    let mut ids = Vec::with_capacity(objects.len());
    let mut blk = Encoder::with_capacity(usize::try_from(block_size).unwrap_or(0));
    blk.put_bytes(b"FHDB");
    blk.put_u8(0);
    blk.put_addr(header_addr, sizes);
    blk.put_uint(0, usize::from(HEAP_BITS / 8));
    for o in objects {
        let mut id = Encoder::new();
        id.put_u8(0); // version 0, managed
        id.put_uint(blk.len() as u64, usize::from(HEAP_BITS / 8));
        id.put_uint(o.len() as u64, len_size);
        id.put_zeros(usize::from(id_len) - id.len());
        ids.push(id.into_vec());
        blk.put_bytes(o);
    }
    let free = block_size - blk.len() as u64;
    blk.put_zeros(usize::try_from(free).unwrap_or(0));
    let mut h = Encoder::new();
    h.put_bytes(b"FRHP");
    h.put_u8(0);
    h.put_u16(id_len);
    h.put_u16(0); // no I/O filters
    h.put_u8(0); // flags: direct blocks without checksum
    h.put_u32(max_managed);
    h.put_len(0, sizes); // next huge id
    h.put_addr(Addr::UNDEF, sizes); // huge object B-tree
    h.put_len(free, sizes); // free space in managed blocks
    h.put_addr(Addr::UNDEF, sizes); // free-space manager
    h.put_len(block_size, sizes); // managed space
    h.put_len(block_size, sizes); // allocated managed space
    h.put_len(block_size, sizes); // direct block allocation iterator
    h.put_len(objects.len() as u64, sizes); // managed objects
    h.put_len(0, sizes); // huge size
    h.put_len(0, sizes); // huge objects
    h.put_len(0, sizes); // tiny size
    h.put_len(0, sizes); // tiny objects
    h.put_u16(4); // table width
    h.put_len(block_size, sizes); // starting block size
    h.put_len(block_size, sizes); // maximum direct block size
    h.put_u16(HEAP_BITS);
    h.put_u16(1); // starting rows of the root indirect block
    h.put_addr(block_addr, sizes); // root: the direct block
    h.put_u16(0); // current rows of the root indirect block: none
    h.put_checksum_from(0);
    Ok((h.into_vec(), blk.into_vec(), ids))
}

/// A direct-block entry of an indirect block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectEntry {
    /// Block address (UNDEF: not allocated).
    pub addr: Addr,
    /// Filtered size (filters only).
    pub filtered_size: Option<u64>,
    /// Filter mask (filters only).
    pub filter_mask: u32,
}

/// A decoded indirect block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndirectBlock {
    /// Heap header address.
    pub heap: Addr,
    /// Offset of the block in heap space.
    pub block_offset: u64,
    /// Direct block entries, row-major (`min(rows, max_direct_rows) × width`).
    pub direct: Vec<DirectEntry>,
    /// Indirect block entries, row-major (rows beyond `max_direct_rows`).
    pub indirect: Vec<Addr>,
}

impl IndirectBlock {
    /// Decode and checksum-verify an indirect block of `rows` rows; `cur`
    /// must hold at least [`FractalHeapHeader::indirect_len`] bytes.
    ///
    /// # Errors
    /// `Truncated`, `Checksum`, `Corrupt`.
    pub fn decode(
        cur: &mut Cursor<'_>,
        hdr: &FractalHeapHeader,
        sizes: Sizes,
        rows: u32,
    ) -> Result<Self> {
        let base = cur.offset();
        let window = cur.rest();
        let len = hdr
            .indirect_len(sizes, rows)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| Error::corrupt("fractal heap indirect block size overflows", base))?;
        let body = window
            .get(..len - 4)
            .ok_or_else(|| Error::truncated("fractal heap indirect block", base))?;
        let stored = window
            .get(len - 4..len)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::truncated("fractal heap indirect block checksum", base))?;
        let computed = lookup3(body, 0);
        if stored != computed {
            return Err(Error::checksum(
                alloc::format!(
                    "fractal heap indirect block: stored {stored:#010x}, computed {computed:#010x}"
                ),
                base.saturating_add(len as u64 - 4),
            ));
        }
        cur.expect_signature(b"FHIB")?;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("fractal heap indirect block version {version}"),
                at,
            ));
        }
        let heap = cur.read_addr(sizes)?;
        let block_offset = cur.read_uint(hdr.heap_off_size())?;
        let w = usize::from(hdr.table_width);
        let dir_rows = rows.min(hdr.max_direct_rows()) as usize;
        let ind_rows = rows.saturating_sub(hdr.max_direct_rows()) as usize;
        let nd = cur.ensure_count(
            (dir_rows as u64).saturating_mul(w as u64),
            hdr.direct_entry_len(sizes),
        )?;
        let mut direct = Vec::with_capacity(nd);
        for _ in 0..nd {
            let addr = cur.read_addr(sizes)?;
            let (filtered_size, filter_mask) = if hdr.has_filters() {
                (Some(cur.read_len(sizes)?), cur.read_u32()?)
            } else {
                (None, 0)
            };
            direct.push(DirectEntry {
                addr,
                filtered_size,
                filter_mask,
            });
        }
        let ni = cur.ensure_count(
            (ind_rows as u64).saturating_mul(w as u64),
            usize::from(sizes.offsets),
        )?;
        let mut indirect = Vec::with_capacity(ni);
        for _ in 0..ni {
            indirect.push(cur.read_addr(sizes)?);
        }
        cur.skip(4)?;
        Ok(IndirectBlock {
            heap,
            block_offset,
            direct,
            indirect,
        })
    }
}

/// A decoded heap id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapId {
    /// A managed object: offset and length in the heap's address space.
    Managed {
        /// Heap offset.
        offset: u64,
        /// Length.
        length: u64,
    },
    /// A huge object addressed directly.
    HugeDirect {
        /// Object (filtered) address.
        addr: Addr,
        /// Stored length.
        len: u64,
        /// Filter mask and de-filtered size (filtered heaps only).
        filtered: Option<(u32, u64)>,
    },
    /// A huge object found through the heap's v2 B-tree by key.
    HugeIndirect {
        /// Huge object id.
        key: u64,
    },
    /// A tiny object stored in the id itself.
    Tiny {
        /// The object's bytes.
        data: Vec<u8>,
    },
}

impl HeapId {
    /// Decode heap id `id` of heap `hdr` (version 0).
    ///
    /// # Errors
    /// `Corrupt` for a wrong length, an unknown version or type, a tiny
    /// length that does not fit; `Truncated`.
    pub fn decode(id: &[u8], hdr: &FractalHeapHeader, sizes: Sizes) -> Result<Self> {
        if id.len() != usize::from(hdr.id_len) {
            return Err(Error::corrupt(
                alloc::format!(
                    "heap id of {} bytes, the heap uses {}",
                    id.len(),
                    hdr.id_len
                ),
                0,
            ));
        }
        let mut cur = Cursor::new(id, 0);
        let flags = cur.read_u8()?;
        if flags & 0xC0 != 0 {
            return Err(Error::corrupt(
                alloc::format!("heap id version {}", flags >> 6),
                0,
            ));
        }
        let idl = usize::from(hdr.id_len);
        match (flags >> 4) & 3 {
            0 => {
                let offset = cur.read_uint(hdr.heap_off_size())?;
                let length = cur.read_uint(hdr.heap_len_size())?;
                Ok(HeapId::Managed { offset, length })
            }
            1 => {
                let o = usize::from(sizes.offsets);
                let l = usize::from(sizes.lengths);
                let direct = if hdr.has_filters() {
                    idl > o + l + 4 + l
                } else {
                    idl > o + l
                };
                if direct {
                    let addr = cur.read_addr(sizes)?;
                    let len = cur.read_len(sizes)?;
                    let filtered = if hdr.has_filters() {
                        Some((cur.read_u32()?, cur.read_len(sizes)?))
                    } else {
                        None
                    };
                    Ok(HeapId::HugeDirect {
                        addr,
                        len,
                        filtered,
                    })
                } else {
                    let key = cur.read_uint((idl - 1).min(8))?;
                    Ok(HeapId::HugeIndirect { key })
                }
            }
            2 => {
                let (len, skip) = if idl - 1 <= 17 {
                    (usize::from(flags & 0x0F) + 1, 1)
                } else {
                    let b = id.get(1).copied().unwrap_or(0);
                    ((usize::from(flags & 0x0F) << 8 | usize::from(b)) + 1, 2)
                };
                let data = id.get(skip..).and_then(|d| d.get(..len)).ok_or_else(|| {
                    Error::corrupt(
                        alloc::format!("tiny heap object of {len} bytes in a {idl}-byte id"),
                        0,
                    )
                })?;
                Ok(HeapId::Tiny {
                    data: data.to_vec(),
                })
            }
            t => Err(Error::corrupt(alloc::format!("heap id type {t}"), 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> FractalHeapHeader {
        FractalHeapHeader {
            id_len: 7,
            filter_len: 0,
            flags: FLAG_CHECKSUM_DIRECT,
            max_managed_size: 4096 - 20,
            next_huge_id: 0,
            huge_btree: Addr::UNDEF,
            free_space: 0,
            free_space_manager: Addr::UNDEF,
            managed_space: 0,
            allocated_space: 0,
            iterator_offset: 0,
            managed_objects: 0,
            huge_size: 0,
            huge_objects: 0,
            tiny_size: 0,
            tiny_objects: 0,
            table_width: 4,
            start_block_size: 512,
            max_direct_size: 65536,
            max_heap_bits: 32,
            start_root_rows: 0,
            root: Addr::UNDEF,
            root_rows: 0,
            filtered_root_size: None,
            root_filter_mask: 0,
            filter_info: Vec::new(),
        }
    }

    #[test]
    fn geometry_matches_libhdf5_rules() {
        let h = hdr();
        assert_eq!(h.heap_off_size(), 4);
        assert_eq!(h.heap_len_size(), 2);
        assert_eq!(h.max_direct_rows(), 16 - 9 + 2);
        assert_eq!(h.first_row_bits(), 11);
        assert_eq!(h.max_root_rows(), 32 - 11 + 1);
        assert_eq!(h.row_block_size(0), Some(512));
        assert_eq!(h.row_block_size(1), Some(512));
        assert_eq!(h.row_block_size(2), Some(1024));
        assert_eq!(h.row_block_offset(1), Some(2048));
        assert_eq!(h.row_block_offset(2), Some(4096));
        assert_eq!(h.lookup(0), Some((0, 0)));
        assert_eq!(h.lookup(2047), Some((0, 3)));
        assert_eq!(h.lookup(2048), Some((1, 0)));
        assert_eq!(h.lookup(4096 + 1024 * 3 + 5), Some((2, 3)));
        // An indirect block representing a row-9 block (512 << 8 bytes).
        assert_eq!(h.rows_for_size(512 << 8), 8 + 9 - 11 + 1);
    }

    #[test]
    fn heap_ids() {
        let h = hdr();
        let s = Sizes::default();
        assert_eq!(
            HeapId::decode(&[0, 0x10, 0x02, 0, 0, 0x21, 0], &h, s).unwrap(),
            HeapId::Managed {
                offset: 0x210,
                length: 0x21
            }
        );
        assert_eq!(
            HeapId::decode(&[0x22, 1, 2, 3, 0, 0, 0], &h, s).unwrap(),
            HeapId::Tiny {
                data: alloc::vec![1, 2, 3]
            }
        );
        assert_eq!(
            HeapId::decode(&[0x26, 1, 2, 3, 0, 0, 0], &h, s)
                .unwrap_err()
                .kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            HeapId::decode(&[0x10, 5, 0, 0, 0, 0, 0], &h, s).unwrap(),
            HeapId::HugeIndirect { key: 5 }
        );
        assert_eq!(
            HeapId::decode(&[0x30, 5, 0, 0, 0, 0, 0], &h, s)
                .unwrap_err()
                .kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            HeapId::decode(&[0x40, 5, 0, 0, 0, 0, 0], &h, s)
                .unwrap_err()
                .kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            HeapId::decode(&[0, 5], &h, s).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
        let mut big = hdr();
        big.id_len = 17;
        let mut id = alloc::vec![0x10u8];
        id.extend_from_slice(&0x99u64.to_le_bytes());
        id.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(
            HeapId::decode(&id, &big, s).unwrap(),
            HeapId::HugeDirect {
                addr: Addr(0x99),
                len: 7,
                filtered: None
            }
        );
        // Extended tiny ids (id length > 18): 12-bit length over two bytes.
        let mut ext = hdr();
        ext.id_len = 20;
        let mut id = alloc::vec![0x20u8, 2];
        id.extend_from_slice(&[9; 18]);
        assert_eq!(
            HeapId::decode(&id, &ext, s).unwrap(),
            HeapId::Tiny {
                data: alloc::vec![9; 3]
            }
        );
    }
    #[test]
    fn single_block_heap_reads_back() {
        // Encoded heaps read back through the heap reader (libhdf5 reading
        // them is checked by the h5cli dense-storage test).
        use crate::io::Storage;
        let sizes = Sizes::default();
        let objs: [&[u8]; 3] = [b"first", b"x", &[7u8; 300]];
        for (id_len, block) in [(7u16, 512u64), (8, 1 << 20)] {
            let (h, b, ids) =
                encode_single_block_heap(sizes, Addr(0), Addr(512), block, id_len, &objs).unwrap();
            assert!(h.len() <= 512);
            assert_eq!(b.len() as u64, block);
            assert!(ids.iter().all(|i| i.len() == usize::from(id_len)));
            let mut file = h.clone();
            file.resize(512, 0);
            file.extend_from_slice(&b);
            let st = Storage::new(alloc::sync::Arc::new(file));
            let heap =
                crate::read::fractal_heap::FractalHeap::open(&st, Ctx::default(), Addr(0)).unwrap();
            for (o, id) in objs.iter().zip(&ids) {
                assert_eq!(heap.get(id).unwrap(), *o);
            }
        }
        // objects that do not fit, ids too short for the block
        assert!(encode_single_block_heap(sizes, Addr(0), Addr(0), 256, 7, &[&[0u8; 300]]).is_err());
        assert!(encode_single_block_heap(sizes, Addr(0), Addr(0), 1 << 20, 7, &objs).is_err());
        assert!(encode_single_block_heap(sizes, Addr(0), Addr(0), 512, 7, &[b""]).is_err());
    }
}
