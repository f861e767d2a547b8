//! Reading objects from a fractal heap (`FRHP`/`FHDB`/`FHIB`) by heap id.
//!
//! Managed objects are located through the doubling table from the root
//! block down (indirect block depth bounded by `ctx.limits.max_btree_depth`,
//! block addresses recorded to detect cycles, every block size checked
//! against `max_metadata_block` and the end of file). Huge objects are read
//! directly or through the heap's v2 B-tree (record types 1–4); tiny
//! objects come out of the id itself. Filtered heaps go through the heap's
//! filter pipeline with [`crate::filter::decode_chunk`]; where a filter is
//! not available this fails with `Unsupported`.

use crate::codec::Cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::format::btree_v2::{decode_record, Record};
use crate::format::fractal_heap::{
    decode_direct_prefix, verify_direct_checksum, FractalHeapHeader, HeapId, IndirectBlock,
};
use crate::format::message::FilterPipeline;
use crate::io::Storage;
use crate::read::btree_v2::BTreeV2;
use crate::{Addr, Ctx};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;

/// Bytes of validated direct blocks an opened heap keeps, so that reading
/// many objects (listing a dense group) reads and checks each block once.
const DIRECT_CACHE_BYTES: u64 = 4 << 20;

/// An opened fractal heap.
#[derive(Debug, Clone)]
pub struct FractalHeap {
    st: Storage,
    ctx: Ctx,
    addr: Addr,
    hdr: FractalHeapHeader,
    cache: RefCell<BlockCache>,
}

/// Blocks already read and validated, by (address, heap offset, size) for
/// direct blocks and (address, rows) for indirect blocks.
#[derive(Debug, Clone, Default)]
struct BlockCache {
    direct: BTreeMap<(u64, u64, u64), Arc<Vec<u8>>>,
    direct_bytes: u64,
    indirect: BTreeMap<(u64, u32), Arc<IndirectBlock>>,
}

/// A managed block of a fractal heap, as [`FractalHeap::blocks`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapBlock {
    /// Block address.
    pub addr: Addr,
    /// Bytes on disk (the filtered size for filtered direct blocks).
    pub len: u64,
    /// An indirect block (else a direct block).
    pub indirect: bool,
    /// Heap offset of the block, from its place in the doubling table
    /// (saturating on a corrupt table).
    pub offset: u64,
}

/// Where a managed direct block is and how big it is.
struct DirectLoc {
    addr: Addr,
    /// Block size in heap space (the de-filtered size).
    size: u64,
    /// Heap offset of the block.
    block_offset: u64,
    /// Stored size and filter mask, for filtered heaps.
    filtered: Option<(u64, u32)>,
}

impl FractalHeap {
    /// Open the heap whose header is at `addr`.
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`.
    pub fn open(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        let fixed = FractalHeapHeader::fixed_len(ctx.sizes) as u64;
        let prefix = st.read(addr, fixed)?;
        let abs = st.absolute(addr, fixed)?;
        let total = FractalHeapHeader::total_len(&prefix, abs, ctx.sizes)?;
        let raw = st.read(addr, total as u64)?;
        let hdr = FractalHeapHeader::decode(&mut Cursor::new(&raw, abs), ctx)?;
        if hdr.max_direct_size > ctx.limits.max_metadata_block {
            return Err(Error::limit(alloc::format!(
                "fractal heap at {addr}: direct blocks of {} bytes",
                hdr.max_direct_size
            )));
        }
        Ok(FractalHeap {
            st: st.clone(),
            ctx,
            addr,
            hdr,
            cache: RefCell::new(BlockCache::default()),
        })
    }
    /// Heap id length in bytes.
    pub fn id_len(&self) -> usize {
        usize::from(self.hdr.id_len)
    }
    /// The decoded header.
    pub fn header(&self) -> &FractalHeapHeader {
        &self.hdr
    }
    /// The object named by heap id `id` (managed, huge or tiny).
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`, `Cycle`, `Limit`, `Unsupported` (e.g. a filter).
    pub fn get(&self, id: &[u8]) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(self.addr.0);
        let hid = HeapId::decode(id, &self.hdr, self.ctx.sizes).map_err(|e| e.with_offset(at))?;
        match hid {
            HeapId::Tiny { data } => Ok(data),
            HeapId::Managed { offset, length } => self.managed(offset, length),
            HeapId::HugeDirect {
                addr,
                len,
                filtered,
            } => self.huge(addr, len, filtered),
            HeapId::HugeIndirect { key } => self.huge_indirect(key),
        }
    }

    /// Every managed block of the heap (root, direct and indirect blocks
    /// reachable through the doubling table) with its address and size on
    /// disk, for validators. Bounded like object lookups (depth, cycles,
    /// `max_index_entries` blocks).
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`, `Cycle`, `Limit`.
    pub fn blocks(&self) -> Result<Vec<HeapBlock>> {
        let h = &self.hdr;
        let mut out = Vec::new();
        if h.root.is_undef() {
            return Ok(out);
        }
        if h.root_rows == 0 {
            out.push(HeapBlock {
                addr: h.root,
                len: h.filtered_root_size.unwrap_or(h.start_block_size),
                indirect: false,
                offset: 0,
            });
            return Ok(out);
        }
        let mut visited = BTreeSet::new();
        self.indirect_blocks(h.root, u32::from(h.root_rows), 0, 0, &mut visited, &mut out)?;
        Ok(out)
    }

    fn indirect_blocks(
        &self,
        addr: Addr,
        rows: u32,
        offset: u64,
        depth: usize,
        visited: &mut BTreeSet<u64>,
        out: &mut Vec<HeapBlock>,
    ) -> Result<()> {
        let h = &self.hdr;
        if depth > self.ctx.limits.max_btree_depth {
            return Err(Error::limit("fractal heap indirect blocks nested too deep"));
        }
        let ib = self.read_indirect(addr, rows, visited)?;
        out.push(HeapBlock {
            addr,
            len: h.indirect_len(self.ctx.sizes, rows).unwrap_or(0),
            indirect: true,
            offset,
        });
        let w = u64::from(h.table_width.max(1));
        // Heap offset of the block in row `row`, column `col` of this block.
        let at = |row: u32, col: u64| {
            let size = h.row_block_size(row).unwrap_or(u64::MAX);
            h.row_block_offset(row)
                .unwrap_or(u64::MAX)
                .saturating_add(col.saturating_mul(size))
                .saturating_add(offset)
        };
        for (i, e) in ib.direct.iter().enumerate() {
            if e.addr.is_undef() {
                continue;
            }
            let row = u32::try_from(i as u64 / w).unwrap_or(u32::MAX);
            let size = h.row_block_size(row).unwrap_or(0);
            out.push(HeapBlock {
                addr: e.addr,
                len: e.filtered_size.unwrap_or(size),
                indirect: false,
                offset: at(row, i as u64 % w),
            });
        }
        if out.len() as u64 > self.ctx.limits.max_index_entries {
            return Err(Error::limit("too many fractal heap blocks"));
        }
        for (i, &child) in ib.indirect.iter().enumerate() {
            if child.is_undef() {
                continue;
            }
            let row = h
                .max_direct_rows()
                .saturating_add(u32::try_from(i as u64 / w).unwrap_or(u32::MAX));
            let size = h
                .row_block_size(row)
                .ok_or_else(|| Error::corrupt("block size overflows", 0))?;
            let child_offset = at(row, i as u64 % w);
            self.indirect_blocks(
                child,
                h.rows_for_size(size),
                child_offset,
                depth + 1,
                visited,
                out,
            )?;
        }
        Ok(())
    }

    fn pipeline(&self) -> Result<FilterPipeline> {
        let at = self.st.base().saturating_add(self.addr.0);
        FilterPipeline::decode(&mut Cursor::new(&self.hdr.filter_info, at), self.ctx).map_err(|e| {
            if e.kind() == ErrorKind::Unsupported {
                Error::unsupported(alloc::format!(
                    "filtered fractal heap at {}: {}",
                    self.addr,
                    e.message()
                ))
            } else {
                e
            }
        })
    }

    fn defilter(&self, data: Vec<u8>, mask: u32, size: u64) -> Result<Vec<u8>> {
        let pipeline = self.pipeline()?;
        let n =
            usize::try_from(size).map_err(|_| Error::limit("de-filtered heap object too large"))?;
        crate::filter::decode_chunk(&pipeline, mask, data, n, 1)
    }

    fn huge(&self, addr: Addr, len: u64, filtered: Option<(u32, u64)>) -> Result<Vec<u8>> {
        if len > self.ctx.limits.max_read_bytes {
            return Err(Error::limit(alloc::format!(
                "huge heap object of {len} bytes"
            )));
        }
        let data = self
            .st
            .read(addr, len)
            .map_err(|e| e.context("huge fractal heap object"))?;
        match filtered {
            None => Ok(data),
            Some((mask, size)) => {
                if size > self.ctx.limits.max_read_bytes {
                    return Err(Error::limit(alloc::format!(
                        "huge heap object of {size} bytes"
                    )));
                }
                self.defilter(data, mask, size)
            }
        }
    }

    fn huge_indirect(&self, key: u64) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(self.addr.0);
        if self.hdr.huge_btree.is_undef() {
            return Err(Error::corrupt(
                "huge heap id but the heap has no huge object B-tree",
                at,
            ));
        }
        let bt = BTreeV2::open(&self.st, self.ctx, self.hdr.huge_btree)?;
        let want = if self.hdr.has_filters() { 2 } else { 1 };
        if bt.record_type() != want {
            return Err(Error::corrupt(
                alloc::format!(
                    "huge object B-tree has record type {}, expected {want}",
                    bt.record_type()
                ),
                at,
            ));
        }
        for raw in bt.records()? {
            match decode_record(want, &raw, self.ctx, 0, 0)? {
                Record::HugeIndirect { addr, len, id } if id == key => {
                    return self.huge(addr, len, None)
                }
                Record::HugeIndirectFiltered {
                    addr,
                    len,
                    filter_mask,
                    size,
                    id,
                } if id == key => return self.huge(addr, len, Some((filter_mask, size))),
                _ => {}
            }
        }
        Err(Error::corrupt(
            alloc::format!("huge heap object {key} not in the heap's B-tree"),
            at,
        ))
    }

    fn managed(&self, offset: u64, length: u64) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(self.addr.0);
        let loc = self.locate(offset)?;
        let block = self.read_direct(&loc)?;
        let rel = offset - loc.block_offset;
        let prefix = self.hdr.direct_prefix_len(self.ctx.sizes) as u64;
        let end = rel.checked_add(length);
        if rel < prefix || end.is_none_or(|e| e > loc.size) || length == 0 {
            return Err(Error::corrupt(
                alloc::format!(
                    "managed heap object at offset {offset} of {length} bytes outside its block"
                ),
                at,
            ));
        }
        let (s, e) = (
            usize::try_from(rel),
            end.and_then(|e| usize::try_from(e).ok()),
        );
        match (s, e) {
            (Ok(s), Some(e)) => block.get(s..e).map(<[u8]>::to_vec),
            _ => None,
        }
        .ok_or_else(|| Error::corrupt("managed heap object outside its block", at))
    }

    /// Find the direct block holding heap offset `offset`.
    fn locate(&self, offset: u64) -> Result<DirectLoc> {
        let h = &self.hdr;
        let at = self.st.base().saturating_add(self.addr.0);
        if h.root.is_undef() {
            return Err(Error::corrupt(
                "managed heap object in an empty fractal heap",
                at,
            ));
        }
        if offset >> h.max_heap_bits.min(63) != 0 && h.max_heap_bits < 64 {
            return Err(Error::corrupt(
                alloc::format!("heap offset {offset} beyond the heap's address space"),
                at,
            ));
        }
        if h.root_rows == 0 {
            let size = h.start_block_size;
            if offset >= size {
                return Err(Error::corrupt(
                    alloc::format!("heap offset {offset} beyond the root direct block"),
                    at,
                ));
            }
            let filtered = h.filtered_root_size.map(|s| (s, h.root_filter_mask));
            return Ok(DirectLoc {
                addr: h.root,
                size,
                block_offset: 0,
                filtered,
            });
        }
        let mut visited = BTreeSet::new();
        let mut iblock_addr = h.root;
        let mut rows = u32::from(h.root_rows);
        let mut iblock_off = 0u64;
        let mut rel = offset;
        for _ in 0..=self.ctx.limits.max_btree_depth {
            let ib = self.read_indirect(iblock_addr, rows, &mut visited)?;
            if ib.block_offset != iblock_off {
                return Err(Error::corrupt(
                    alloc::format!(
                        "indirect block at {iblock_addr} has offset {}, expected {iblock_off}",
                        ib.block_offset
                    ),
                    self.st.base().saturating_add(iblock_addr.0),
                ));
            }
            let (row, col) = h
                .lookup(rel)
                .filter(|&(r, c)| r < rows && c < u64::from(h.table_width))
                .ok_or_else(|| {
                    Error::corrupt(
                        alloc::format!("heap offset {offset} outside the doubling table"),
                        at,
                    )
                })?;
            let bsize = h
                .row_block_size(row)
                .ok_or_else(|| Error::corrupt("block size overflows", at))?;
            let start = h
                .row_block_offset(row)
                .and_then(|o| o.checked_add(bsize.checked_mul(col)?))
                .ok_or_else(|| Error::corrupt("block offset overflows", at))?;
            let w = u64::from(h.table_width);
            if row < h.max_direct_rows() {
                let idx = usize::try_from(u64::from(row) * w + col).unwrap_or(usize::MAX);
                let e = ib
                    .direct
                    .get(idx)
                    .ok_or_else(|| Error::corrupt("direct block entry missing", at))?;
                if e.addr.is_undef() {
                    return Err(Error::corrupt(
                        alloc::format!("heap offset {offset} lies in an unallocated block"),
                        at,
                    ));
                }
                return Ok(DirectLoc {
                    addr: e.addr,
                    size: bsize,
                    block_offset: iblock_off + start,
                    filtered: e.filtered_size.map(|s| (s, e.filter_mask)),
                });
            }
            let idx = usize::try_from(u64::from(row - h.max_direct_rows()) * w + col)
                .unwrap_or(usize::MAX);
            let child = *ib
                .indirect
                .get(idx)
                .ok_or_else(|| Error::corrupt("indirect block entry missing", at))?;
            if child.is_undef() {
                return Err(Error::corrupt(
                    alloc::format!("heap offset {offset} lies in an unallocated block"),
                    at,
                ));
            }
            iblock_addr = child;
            rows = h.rows_for_size(bsize);
            iblock_off += start;
            rel -= start;
        }
        Err(Error::limit(alloc::format!(
            "fractal heap indirect blocks deeper than {}",
            self.ctx.limits.max_btree_depth
        )))
    }

    fn read_indirect(
        &self,
        addr: Addr,
        rows: u32,
        visited: &mut BTreeSet<u64>,
    ) -> Result<Arc<IndirectBlock>> {
        let at = self.st.base().saturating_add(addr.0);
        if !visited.insert(addr.0) {
            return Err(Error::cycle(
                alloc::format!("fractal heap indirect block at {addr} reached twice"),
                at,
            ));
        }
        if let Some(ib) = self.cache.borrow().indirect.get(&(addr.0, rows)) {
            return Ok(ib.clone());
        }
        if rows > self.hdr.max_root_rows() {
            return Err(Error::corrupt(
                alloc::format!("indirect block of {rows} rows"),
                at,
            ));
        }
        let len = self
            .hdr
            .indirect_len(self.ctx.sizes, rows)
            .filter(|&l| l <= self.ctx.limits.max_metadata_block)
            .ok_or_else(|| {
                Error::limit(alloc::format!("fractal heap indirect block of {rows} rows"))
            })?;
        let raw = self.st.read(addr, len)?;
        let ib = Arc::new(IndirectBlock::decode(
            &mut Cursor::new(&raw, at),
            &self.hdr,
            self.ctx.sizes,
            rows,
        )?);
        let mut cache = self.cache.borrow_mut();
        // Indirect blocks are few (one per subtree); bound them anyway.
        if cache.indirect.len() < 256 {
            cache.indirect.insert((addr.0, rows), ib.clone());
        }
        Ok(ib)
    }

    /// A direct block, de-filtered and validated, from the cache or read.
    fn read_direct(&self, loc: &DirectLoc) -> Result<Arc<Vec<u8>>> {
        let key = (loc.addr.0, loc.block_offset, loc.size);
        if let Some(b) = self.cache.borrow().direct.get(&key) {
            return Ok(b.clone());
        }
        let block = Arc::new(self.load_direct(loc)?);
        let mut cache = self.cache.borrow_mut();
        let bytes = cache.direct_bytes.saturating_add(loc.size);
        if bytes <= DIRECT_CACHE_BYTES {
            cache.direct_bytes = bytes;
            cache.direct.insert(key, block.clone());
        }
        Ok(block)
    }

    /// Read a direct block (de-filtered) and check its prefix and checksum.
    fn load_direct(&self, loc: &DirectLoc) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(loc.addr.0);
        let block = match loc.filtered {
            None => self.st.read(loc.addr, loc.size)?,
            Some((stored, mask)) => {
                if stored > self.ctx.limits.max_metadata_block {
                    return Err(Error::limit(alloc::format!(
                        "filtered direct block of {stored} bytes"
                    )));
                }
                let raw = self.st.read(loc.addr, stored)?;
                self.defilter(raw, mask, loc.size)?
            }
        };
        if block.len() as u64 != loc.size {
            return Err(Error::corrupt(
                alloc::format!(
                    "direct block of {} bytes, expected {}",
                    block.len(),
                    loc.size
                ),
                at,
            ));
        }
        let (heap, off) =
            decode_direct_prefix(&mut Cursor::new(&block, at), &self.hdr, self.ctx.sizes)?;
        if heap != self.addr || off != loc.block_offset {
            return Err(Error::corrupt(
                alloc::format!(
                    "direct block at {} belongs to heap {heap} at offset {off}, expected heap {} offset {}",
                    loc.addr, self.addr, loc.block_offset
                ),
                at,
            ));
        }
        if self.hdr.checksummed_direct_blocks() {
            verify_direct_checksum(&block, at, &self.hdr, self.ctx.sizes)?;
        }
        Ok(block)
    }
}
