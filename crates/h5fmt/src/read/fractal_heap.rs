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
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// An opened fractal heap.
#[derive(Debug, Clone)]
pub struct FractalHeap {
    st: Storage,
    ctx: Ctx,
    addr: Addr,
    hdr: FractalHeapHeader,
}

/// Blocks kept between lookups in one heap (its indirect blocks and up to
/// 1 MiB of direct blocks), so that reading many objects stored together (a
/// group's links, an object's attributes) reads each block once. Use one
/// per heap, with [`FractalHeap::get_cached`].
#[derive(Debug, Default)]
pub struct HeapReadCache {
    indirect: alloc::collections::BTreeMap<u64, IndirectBlock>,
    direct: alloc::collections::BTreeMap<u64, Vec<u8>>,
    direct_bytes: usize,
}

/// Bytes of direct blocks kept by one [`HeapReadCache`] (emptied when full).
const CACHED_DIRECT_BYTES: usize = 1 << 20;

/// Indirect blocks kept by one [`HeapReadCache`] (each is bounded by the
/// metadata block limit).
const CACHED_INDIRECT: usize = 64;

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
        self.get_inner(id, None)
    }

    /// As [`FractalHeap::get`], keeping the blocks read in `cache` for the
    /// next lookups (`cache` must only be used with this heap).
    ///
    /// # Errors
    /// As [`FractalHeap::get`].
    pub fn get_cached(&self, id: &[u8], cache: &mut HeapReadCache) -> Result<Vec<u8>> {
        self.get_inner(id, Some(cache))
    }

    fn get_inner(&self, id: &[u8], cache: Option<&mut HeapReadCache>) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(self.addr.0);
        let hid = HeapId::decode(id, &self.hdr, self.ctx.sizes).map_err(|e| e.with_offset(at))?;
        match hid {
            HeapId::Tiny { data } => Ok(data),
            HeapId::Managed { offset, length } => self.managed(offset, length, cache),
            HeapId::HugeDirect {
                addr,
                len,
                filtered,
            } => self.huge(addr, len, filtered),
            HeapId::HugeIndirect { key } => self.huge_indirect(key),
        }
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

    fn managed(
        &self,
        offset: u64,
        length: u64,
        mut cache: Option<&mut HeapReadCache>,
    ) -> Result<Vec<u8>> {
        let at = self.st.base().saturating_add(self.addr.0);
        let loc = self.locate(offset, cache.as_deref_mut())?;
        let hit = cache
            .as_ref()
            .is_some_and(|c| c.direct.contains_key(&loc.addr.0));
        let fresh = if hit {
            None
        } else {
            Some(self.read_direct(&loc)?)
        };
        let block: &[u8] = match (&fresh, &cache) {
            (Some(b), _) => b,
            (None, Some(c)) => c.direct.get(&loc.addr.0).map_or(&[][..], Vec::as_slice),
            (None, None) => &[],
        };
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
        let obj = match (s, e) {
            (Ok(s), Some(e)) => block.get(s..e).map(<[u8]>::to_vec),
            _ => None,
        }
        .ok_or_else(|| Error::corrupt("managed heap object outside its block", at));
        if let (Some(c), Some(b)) = (cache, fresh) {
            if c.direct_bytes.saturating_add(b.len()) > CACHED_DIRECT_BYTES {
                c.direct.clear();
                c.direct_bytes = 0;
            }
            if b.len() <= CACHED_DIRECT_BYTES {
                c.direct_bytes += b.len();
                c.direct.insert(loc.addr.0, b);
            }
        }
        obj
    }

    /// Find the direct block holding heap offset `offset`.
    fn locate(&self, offset: u64, mut cache: Option<&mut HeapReadCache>) -> Result<DirectLoc> {
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
            let ib = self.indirect_cached(iblock_addr, rows, &mut visited, cache.as_deref_mut())?;
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

    /// [`FractalHeap::read_indirect`], served from / kept in `cache`.
    fn indirect_cached<'c>(
        &self,
        addr: Addr,
        rows: u32,
        visited: &mut BTreeSet<u64>,
        cache: Option<&'c mut HeapReadCache>,
    ) -> Result<alloc::borrow::Cow<'c, IndirectBlock>> {
        use alloc::borrow::Cow;
        let Some(c) = cache else {
            return Ok(Cow::Owned(self.read_indirect(addr, rows, visited)?));
        };
        if !c.indirect.contains_key(&addr.0) {
            let ib = self.read_indirect(addr, rows, visited)?;
            if c.indirect.len() >= CACHED_INDIRECT {
                c.indirect.clear();
            }
            c.indirect.insert(addr.0, ib);
        } else if !visited.insert(addr.0) {
            return Err(Error::cycle(
                alloc::format!("fractal heap indirect block at {addr} reached twice"),
                self.st.base().saturating_add(addr.0),
            ));
        }
        c.indirect
            .get(&addr.0)
            .map(Cow::Borrowed)
            .ok_or_else(|| Error::corrupt("fractal heap indirect block", addr.0))
    }

    fn read_indirect(
        &self,
        addr: Addr,
        rows: u32,
        visited: &mut BTreeSet<u64>,
    ) -> Result<IndirectBlock> {
        let at = self.st.base().saturating_add(addr.0);
        if !visited.insert(addr.0) {
            return Err(Error::cycle(
                alloc::format!("fractal heap indirect block at {addr} reached twice"),
                at,
            ));
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
        IndirectBlock::decode(&mut Cursor::new(&raw, at), &self.hdr, self.ctx.sizes, rows)
    }

    /// Read a direct block (de-filtered) and check its prefix and checksum.
    fn read_direct(&self, loc: &DirectLoc) -> Result<Vec<u8>> {
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
