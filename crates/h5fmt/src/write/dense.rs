//! Dense link and attribute storage (spec III.G fractal heaps, III.A.2
//! version 2 B-trees, IV.A.2.c/IV.A.2.v link and attribute info messages):
//! the messages go to a fractal heap and a v2 B-tree indexes them by the
//! lookup3 hash of their names (record type 5 for links, 8 for attributes);
//! when creation order is indexed, a second v2 B-tree indexes them by
//! creation order (record type 6 for links, 9 for attributes).
//!
//! libhdf5 switches a group or an object to dense storage when it has more
//! than 8 links or attributes (`max_compact`, the default of the group info
//! message and of the object creation property list) or, for attributes,
//! when one does not fit an object header message (64 KiB).
//!
//! [`build`] lays out storage of any size, sink-agnostic (the writer and
//! the editor give it their allocator and write what it returns):
//!
//! * a heap small enough for one direct block gets a root direct block of
//!   the smallest power of two (≥ 512 bytes) that holds it, which is also
//!   the heap's starting block size;
//! * larger heaps get a root indirect block whose rows of direct blocks
//!   follow libhdf5's doubling table (rows 0 and 1 of the starting size,
//!   then doubling up to the maximum direct block size), filled in
//!   allocation order with no block skipped; the starting block size holds
//!   the largest object, and the table is made wider (more columns, a power
//!   of two) until every object fits the root's direct rows, so no child
//!   indirect block is needed;
//! * heap header fields follow libhdf5's accounting (managed space: the
//!   span of the root's rows; free space: that span minus the bytes the
//!   objects use; allocation iterator after the last block, 0 for a root
//!   direct block), with checksummed direct blocks and no free-space
//!   manager (libhdf5 creates one when it next inserts);
//! * links use 7-byte heap ids (32-bit heap offsets, 64 KiB direct blocks
//!   at most), attributes 8-byte ids (16 MiB direct blocks at most); a
//!   message too large for a direct block (a link name of 64 KiB, say) is
//!   a huge object: written on its own, its heap id holds a counter from 1
//!   that the heap's huge-object v2 B-tree (record type 1: address,
//!   length, id) maps to it, as libhdf5 stores them;
//! * B-trees use libhdf5's 512-byte nodes and as many levels as needed.

use super::FileWriter;
use crate::addr::Sizes;
use crate::codec::{lookup3, Encoder};
use crate::error::{Error, Result};
use crate::format::btree_v2::{build_tree, BTreeV2Params};
use crate::format::fractal_heap::FractalHeapHeader;
use crate::Addr;
use alloc::vec;
use alloc::vec::Vec;

/// Links or attributes beyond this count are stored densely (libhdf5's default).
pub(crate) const MAX_COMPACT: usize = 8;
/// Heap id length of dense links (`H5G_DENSE_FHEAP_ID_LEN`).
pub(crate) const LINK_ID_LEN: u16 = 7;
/// Heap id length of dense attributes (`H5O_FHEAP_ID_LEN`).
pub(crate) const ATTR_ID_LEN: u16 = 8;
/// v2 B-tree record type of a heap's huge objects (not filtered, found
/// through the B-tree by id).
const REC_HUGE: u8 = 1;
/// v2 B-tree record type of the link name index.
const REC_LINK_NAME: u8 = 5;
/// v2 B-tree record type of the link creation-order index.
const REC_LINK_ORDER: u8 = 6;
/// v2 B-tree record type of the attribute name index.
const REC_ATTR_NAME: u8 = 8;
/// v2 B-tree record type of the attribute creation-order index.
const REC_ATTR_ORDER: u8 = 9;
/// libhdf5's node size of dense-storage B-trees.
const NODE_SIZE: u32 = 512;
/// Heap offsets are 32 bits (4-byte offsets in ids and blocks).
const HEAP_BITS: u16 = 32;
const OFF_BYTES: usize = 4;
/// Smallest starting block size (libhdf5's default).
const MIN_BLOCK: u64 = 512;
/// Widest doubling table libhdf5 accepts (`H5HF_WIDTH_LIMIT`).
const MAX_WIDTH: u64 = 1 << 16;

/// Which kind of dense storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum DenseKind {
    /// Link messages of a group.
    Links,
    /// Attribute messages of an object.
    Attrs,
}

impl DenseKind {
    fn id_len(self) -> u16 {
        match self {
            DenseKind::Links => LINK_ID_LEN,
            DenseKind::Attrs => ATTR_ID_LEN,
        }
    }
    /// The largest direct block: the id's length field (after the flag
    /// byte and the 4-byte offset) must encode offsets within it.
    fn max_direct(self) -> u64 {
        match self {
            DenseKind::Links => 1 << 16,
            DenseKind::Attrs => 1 << 24,
        }
    }
}

/// One link or attribute to store.
#[derive(Debug, Clone)]
pub(crate) struct DenseEntry {
    /// Name (hashed for the name index).
    pub name: Vec<u8>,
    /// The encoded link or attribute message.
    pub msg: Vec<u8>,
    /// Creation order (0 when not tracked).
    pub order: u64,
    /// Attribute message flags (records of the attribute indexes).
    pub flags: u8,
}

/// Dense storage laid out by [`build`]: the addresses for the link or
/// attribute info message and every `(address, bytes)` to write.
#[derive(Debug, Clone)]
pub(crate) struct DenseOut {
    /// Fractal heap header.
    pub heap: Addr,
    /// Name index header.
    pub name_index: Addr,
    /// Creation-order index header (UNDEF unless requested).
    pub order_index: Addr,
    /// Blocks and nodes to write.
    pub writes: Vec<(u64, Vec<u8>)>,
}

/// Bytes of a direct block's prefix (signature, version, heap address,
/// 4-byte block offset, checksum).
fn direct_prefix(sizes: Sizes) -> u64 {
    5 + u64::from(sizes.offsets) + OFF_BYTES as u64 + 4
}

/// Whether a message of `len` bytes can be stored densely: in a direct
/// block, or else as a huge object (up to 4 GiB), for links and
/// attributes alike.
pub(crate) fn fits_dense(len: usize) -> bool {
    len > 0 && len as u64 <= u64::from(u32::MAX)
}

/// Whether a message of `len` bytes is stored in a direct block (else it
/// is a huge object).
fn managed(kind: DenseKind, len: u64, sizes: Sizes) -> bool {
    len + direct_prefix(sizes) <= kind.max_direct()
}

/// Heap header fields that vary; the rest are fixed.
struct HeapShape {
    width: u16,
    start: u64,
    max_direct: u64,
    max_managed: u32,
    root: Addr,
    rows: u16,
    managed: u64,
    allocated: u64,
    iterator: u64,
    free: u64,
    objects: u64,
}

fn encode_heap_header(sizes: Sizes, id_len: u16, s: &HeapShape, huge: &HugeObjects) -> Vec<u8> {
    let mut h = Encoder::new();
    h.put_bytes(b"FRHP");
    h.put_u8(0);
    h.put_u16(id_len);
    h.put_u16(0); // no I/O filters
    h.put_u8(crate::format::fractal_heap::FLAG_CHECKSUM_DIRECT);
    h.put_u32(s.max_managed);
    h.put_len(huge.count, sizes); // the last huge id given (libhdf5 counts from 1)
    h.put_addr(huge.btree, sizes); // huge object B-tree
    h.put_len(s.free, sizes);
    h.put_addr(Addr::UNDEF, sizes); // free-space manager
    h.put_len(s.managed, sizes);
    h.put_len(s.allocated, sizes);
    h.put_len(s.iterator, sizes);
    h.put_len(s.objects, sizes);
    h.put_len(huge.size, sizes);
    h.put_len(huge.count, sizes);
    h.put_len(0, sizes); // tiny size
    h.put_len(0, sizes); // tiny objects
    h.put_u16(s.width);
    h.put_len(s.start, sizes);
    h.put_len(s.max_direct, sizes);
    h.put_u16(HEAP_BITS);
    h.put_u16(1); // starting rows of the root indirect block
    h.put_addr(s.root, sizes);
    h.put_u16(s.rows);
    h.put_checksum_from(0);
    h.into_vec()
}

/// One direct block: (heap offset, size, objects' indexes).
struct Block {
    offset: u64,
    size: u64,
    objs: Vec<usize>,
    used: u64,
}

fn encode_direct(
    sizes: Sizes,
    heap: Addr,
    b: &Block,
    objects: &[&[u8]],
    ids: &mut [Vec<u8>],
    id_len: u16,
    len_size: usize,
) -> Result<Vec<u8>> {
    let n = usize::try_from(b.size).map_err(|_| Error::usage("heap block too large"))?;
    let mut e = Encoder::with_capacity(n);
    e.put_bytes(b"FHDB");
    e.put_u8(0);
    e.put_addr(heap, sizes);
    e.put_uint(b.offset, OFF_BYTES);
    let sum_at = e.len();
    e.put_u32(0);
    for &i in &b.objs {
        let o = objects.get(i).copied().unwrap_or(&[]);
        let mut id = Encoder::with_capacity(usize::from(id_len));
        id.put_u8(0); // version 0, managed
        id.put_uint(b.offset + e.len() as u64, OFF_BYTES);
        id.put_uint(o.len() as u64, len_size);
        id.put_zeros(usize::from(id_len).saturating_sub(id.len()));
        if let Some(slot) = ids.get_mut(i) {
            *slot = id.into_vec();
        }
        e.put_bytes(o);
    }
    if e.len() > n {
        return Err(Error::usage("heap block overflows"));
    }
    e.put_zeros(n - e.len());
    let mut v = e.into_vec();
    let sum = lookup3(&v, 0);
    if let Some(s) = v.get_mut(sum_at..sum_at + 4) {
        s.copy_from_slice(&sum.to_le_bytes());
    }
    Ok(v)
}

/// Pack `lens` into the root direct rows of a doubling table of `width`
/// columns starting at `start`; `None` when they do not fit.
fn pack(lens: &[u64], start: u64, width: u64, max_rows: u32, prefix: u64) -> Option<Vec<Block>> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut slot = 0u64;
    let mut offset = 0u64;
    for (i, &len) in lens.iter().enumerate() {
        let fits_last = blocks
            .last()
            .is_some_and(|b| b.used.checked_add(len).is_some_and(|u| u <= b.size));
        if !fits_last {
            let row = u32::try_from(slot / width).ok()?;
            if row >= max_rows {
                return None;
            }
            let size = if row == 0 {
                start
            } else {
                start.checked_mul(1u64.checked_shl(row - 1)?)?
            };
            blocks.push(Block {
                offset,
                size,
                objs: Vec::new(),
                used: prefix,
            });
            offset = offset.checked_add(size)?;
            slot += 1;
        }
        let b = blocks.last_mut()?;
        b.objs.push(i);
        b.used += len;
    }
    Some(blocks)
}

/// Lay out a fractal heap holding `objects`; returns (header address, ids).
fn build_heap(
    sizes: Sizes,
    kind: DenseKind,
    objects: &[&[u8]],
    alloc: &mut dyn FnMut(u64) -> u64,
    writes: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(Addr, Vec<Vec<u8>>)> {
    let id_len = kind.id_len();
    if objects.iter().any(|o| o.is_empty() || !fits_dense(o.len())) {
        return Err(Error::usage("empty or 4 GiB fractal heap object"));
    }
    // Objects too large for a direct block are huge objects: stored on
    // their own and found through the heap's v2 B-tree (record type 1) by
    // an id counted from 1; the rest go to direct blocks as below.
    let (small, big): (Vec<usize>, Vec<usize>) =
        (0..objects.len()).partition(|&i| managed(kind, objects[i].len() as u64, sizes));
    let hdr_len = FractalHeapHeader::fixed_len(sizes) as u64 + 4;
    let hdr_addr = Addr(alloc(hdr_len));
    let mut ids = vec![Vec::new(); objects.len()];
    let mut huge = HugeObjects {
        btree: Addr::UNDEF,
        count: 0,
        size: 0,
    };
    if !big.is_empty() {
        let mut recs = Vec::with_capacity(big.len());
        for (k, &i) in big.iter().enumerate() {
            let obj = objects[i];
            let addr = alloc(obj.len() as u64);
            writes.push((addr, obj.to_vec()));
            let key = k as u64 + 1;
            let mut id = vec![0x10];
            id.extend_from_slice(&key.to_le_bytes()[..usize::from(id_len) - 1]);
            ids[i] = id;
            let mut r = Encoder::new();
            r.put_addr(Addr(addr), sizes);
            r.put_len(obj.len() as u64, sizes);
            r.put_len(key, sizes);
            recs.push(r.into_vec());
            huge.size += obj.len() as u64;
        }
        huge.count = big.len() as u64;
        let rsize = u16::from(sizes.offsets) + 2 * u16::from(sizes.lengths);
        huge.btree = build_index(sizes, REC_HUGE, rsize, &recs, alloc, writes)?;
    }
    let objects: Vec<&[u8]> = small.iter().map(|&i| objects[i]).collect();
    let mut small_ids = vec![Vec::new(); objects.len()];
    let shape = managed_blocks(
        sizes,
        kind,
        &objects,
        hdr_addr,
        alloc,
        writes,
        &mut small_ids,
    )?;
    for (&i, id) in small.iter().zip(small_ids) {
        ids[i] = id;
    }
    writes.push((
        hdr_addr.get(),
        encode_heap_header(sizes, id_len, &shape, &huge),
    ));
    Ok((hdr_addr, ids))
}

/// The huge objects of a heap: their B-tree, count and total size.
struct HugeObjects {
    btree: Addr,
    count: u64,
    size: u64,
}

/// Lay out the direct (and root indirect) blocks of the managed objects
/// `objects` of the heap whose header is at `hdr_addr`, setting `ids`.
fn managed_blocks(
    sizes: Sizes,
    kind: DenseKind,
    objects: &[&[u8]],
    hdr_addr: Addr,
    alloc: &mut dyn FnMut(u64) -> u64,
    writes: &mut Vec<(u64, Vec<u8>)>,
    ids: &mut [Vec<u8>],
) -> Result<HeapShape> {
    let id_len = kind.id_len();
    let max_direct = kind.max_direct();
    let prefix = direct_prefix(sizes);
    let lens: Vec<u64> = objects.iter().map(|o| o.len() as u64).collect();
    let largest = lens.iter().copied().max().unwrap_or(0);
    let total: u64 = lens.iter().sum();
    let max_managed = u32::try_from(max_direct - prefix).unwrap_or(u32::MAX);
    let len_size = (63 - max_direct.leading_zeros() as usize).div_ceil(8).min(
        crate::format::btree_v2::limit_enc_size(u64::from(max_managed)),
    );
    if 1 + OFF_BYTES + len_size > usize::from(id_len) {
        return Err(Error::usage("fractal heap id too short"));
    }
    if objects.is_empty() {
        // Only huge objects: no managed block yet.
        return Ok(HeapShape {
            width: 4,
            start: MIN_BLOCK,
            max_direct,
            max_managed,
            root: Addr::UNDEF,
            rows: 0,
            managed: 0,
            allocated: 0,
            iterator: 0,
            free: 0,
            objects: 0,
        });
    }
    let shape = if total + prefix <= max_direct {
        // One root direct block.
        let size = (total + prefix).next_power_of_two().max(MIN_BLOCK);
        let b = Block {
            offset: 0,
            size,
            objs: (0..objects.len()).collect(),
            used: prefix + total,
        };
        let addr = alloc(size);
        writes.push((
            addr,
            encode_direct(sizes, hdr_addr, &b, objects, ids, id_len, len_size)?,
        ));
        HeapShape {
            width: 4,
            start: size,
            max_direct,
            max_managed,
            root: Addr(addr),
            rows: 0,
            managed: size,
            allocated: size,
            iterator: 0,
            free: size - prefix - total,
            objects: objects.len() as u64,
        }
    } else {
        let start = (largest + prefix).next_power_of_two().max(MIN_BLOCK);
        let mut width = 4u64;
        let (blocks, geo) = loop {
            let geo = FractalHeapHeader {
                id_len,
                filter_len: 0,
                flags: 0,
                max_managed_size: max_managed,
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
                table_width: u16::try_from(width).unwrap_or(0),
                start_block_size: start,
                max_direct_size: max_direct,
                max_heap_bits: HEAP_BITS,
                start_root_rows: 1,
                root: Addr::UNDEF,
                root_rows: 0,
                filtered_root_size: None,
                root_filter_mask: 0,
                filter_info: Vec::new(),
            };
            // Width × starting size must leave room in the heap's address space.
            let max_rows = geo.max_direct_rows().min(geo.max_root_rows());
            if geo.first_row_bits() < u32::from(HEAP_BITS) {
                if let Some(b) = pack(&lens, start, width, max_rows, prefix) {
                    break (b, geo);
                }
            }
            width *= 2;
            if width >= MAX_WIDTH {
                return Err(Error::unsupported("dense storage too large for one heap"));
            }
        };
        let w = usize::from(geo.table_width);
        let rows = u32::try_from(blocks.len().div_ceil(w))
            .map_err(|_| Error::usage("too many heap rows"))?;
        let mut entries = vec![Addr::UNDEF; rows as usize * w];
        let mut allocated = 0u64;
        let mut used = 0u64;
        for (slot, b) in blocks.iter().enumerate() {
            let addr = alloc(b.size);
            writes.push((
                addr,
                encode_direct(sizes, hdr_addr, b, objects, ids, id_len, len_size)?,
            ));
            if let Some(e) = entries.get_mut(slot) {
                *e = Addr(addr);
            }
            allocated += b.size;
            used += b.used;
        }
        let ib_len = geo
            .indirect_len(sizes, rows)
            .ok_or_else(|| Error::usage("indirect block size"))?;
        let ib_addr = alloc(ib_len);
        let mut e = Encoder::with_capacity(usize::try_from(ib_len).unwrap_or(0));
        e.put_bytes(b"FHIB");
        e.put_u8(0);
        e.put_addr(hdr_addr, sizes);
        e.put_uint(0, OFF_BYTES);
        for a in &entries {
            e.put_addr(*a, sizes);
        }
        e.put_checksum_from(0);
        writes.push((ib_addr, e.into_vec()));
        let managed = geo
            .row_block_offset(rows)
            .ok_or_else(|| Error::usage("heap span"))?;
        HeapShape {
            width: geo.table_width,
            start,
            max_direct,
            max_managed,
            root: Addr(ib_addr),
            rows: u16::try_from(rows).map_err(|_| Error::usage("heap rows"))?,
            managed,
            allocated,
            iterator: allocated,
            free: managed - used,
            objects: objects.len() as u64,
        }
    };
    Ok(shape)
}

fn build_index(
    sizes: Sizes,
    record_type: u8,
    record_size: u16,
    records: &[Vec<u8>],
    alloc: &mut dyn FnMut(u64) -> u64,
    writes: &mut Vec<(u64, Vec<u8>)>,
) -> Result<Addr> {
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let built = build_tree(
        BTreeV2Params {
            record_type,
            node_size: NODE_SIZE,
            record_size,
            split_percent: 100,
            merge_percent: 40,
        },
        &refs,
        sizes,
        &mut || Addr(alloc(u64::from(NODE_SIZE))),
    )?;
    for (a, bytes) in built.nodes {
        writes.push((a.get(), bytes));
    }
    let mut h = Encoder::new();
    built.header.encode(&mut h, sizes);
    let a = alloc(h.len() as u64);
    writes.push((a, h.into_vec()));
    Ok(Addr(a))
}

/// Lay out dense storage of `entries` (any order) with `alloc` giving the
/// address of each new structure of the given size. `order_index` adds a
/// creation-order index.
///
/// # Errors
/// `Unsupported` for a message too large for the heap; `Usage` for an
/// empty message.
pub(crate) fn build(
    sizes: Sizes,
    kind: DenseKind,
    entries: &[DenseEntry],
    order_index: bool,
    alloc: &mut dyn FnMut(u64) -> u64,
) -> Result<DenseOut> {
    let mut writes = Vec::new();
    // A shared attribute (flag bit 1) is not stored in this heap: its
    // message is the shared-message reference (version 3, type 1, the
    // 8-byte id in the SOHM heap) and its records hold that id, as
    // libhdf5's `H5A__dense_insert` writes them.
    let shared_id = |e: &DenseEntry| -> Result<Option<Vec<u8>>> {
        if kind != DenseKind::Attrs || e.flags & crate::format::message::flags::SHARED == 0 {
            return Ok(None);
        }
        match (e.msg.first(), e.msg.get(1), e.msg.get(2..10)) {
            (Some(3), Some(1), Some(id)) if e.msg.len() == 10 => Ok(Some(id.to_vec())),
            _ => Err(Error::usage(
                "shared attribute without a SOHM heap reference",
            )),
        }
    };
    let mut shared = Vec::with_capacity(entries.len());
    for e in entries {
        shared.push(shared_id(e)?);
    }
    let objs: Vec<&[u8]> = entries
        .iter()
        .zip(&shared)
        .filter(|(_, s)| s.is_none())
        .map(|(e, _)| e.msg.as_slice())
        .collect();
    let (heap, heap_ids) = build_heap(sizes, kind, &objs, alloc, &mut writes)?;
    let mut heap_ids = heap_ids.into_iter();
    let ids: Vec<Vec<u8>> = shared
        .into_iter()
        .map(|s| s.or_else(|| heap_ids.next()).unwrap_or_default())
        .collect();
    let mut by_name: Vec<(u32, &[u8], Vec<u8>)> = Vec::with_capacity(entries.len());
    let mut by_order: Vec<(u64, Vec<u8>)> = Vec::new();
    for (e, id) in entries.iter().zip(&ids) {
        let hash = lookup3(&e.name, 0);
        let mut r = Vec::with_capacity(17);
        match kind {
            DenseKind::Links => {
                r.extend_from_slice(&hash.to_le_bytes());
                r.extend_from_slice(id);
                if order_index {
                    let mut o = e.order.to_le_bytes().to_vec();
                    o.extend_from_slice(id);
                    by_order.push((e.order, o));
                }
            }
            DenseKind::Attrs => {
                let order =
                    u32::try_from(e.order).map_err(|_| Error::usage("attribute creation order"))?;
                r.extend_from_slice(id);
                r.push(e.flags);
                r.extend_from_slice(&order.to_le_bytes());
                r.extend_from_slice(&hash.to_le_bytes());
                if order_index {
                    let mut o = id.clone();
                    o.push(e.flags);
                    o.extend_from_slice(&order.to_le_bytes());
                    by_order.push((e.order, o));
                }
            }
        }
        by_name.push((hash, e.name.as_slice(), r));
    }
    by_name.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    by_order.sort_by_key(|o| o.0);
    let id_len = kind.id_len();
    let (name_type, name_size, order_type, order_size) = match kind {
        DenseKind::Links => (REC_LINK_NAME, 4 + id_len, REC_LINK_ORDER, 8 + id_len),
        DenseKind::Attrs => (REC_ATTR_NAME, id_len + 9, REC_ATTR_ORDER, id_len + 5),
    };
    let recs: Vec<Vec<u8>> = by_name.into_iter().map(|r| r.2).collect();
    let name_index = build_index(sizes, name_type, name_size, &recs, alloc, &mut writes)?;
    let order_index = if order_index {
        let recs: Vec<Vec<u8>> = by_order.into_iter().map(|r| r.1).collect();
        build_index(sizes, order_type, order_size, &recs, alloc, &mut writes)?
    } else {
        Addr::UNDEF
    };
    Ok(DenseOut {
        heap,
        name_index,
        order_index,
        writes,
    })
}

/// Build with the writer's allocator and write it out.
fn write_dense(
    fw: &mut FileWriter,
    kind: DenseKind,
    entries: &[DenseEntry],
    order_index: bool,
) -> Result<DenseOut> {
    let sizes = fw.ctx.sizes;
    let mut out = {
        let mut alloc = |n: u64| fw.alloc(n).get();
        build(sizes, kind, entries, order_index, &mut alloc)?
    };
    for (a, bytes) in core::mem::take(&mut out.writes) {
        fw.sink.write_at(a, &bytes)?;
    }
    Ok(out)
}

/// Write dense link storage for `(name, encoded link message, creation
/// order)` triples; returns (heap, name index, order index).
pub(super) fn write_links(
    fw: &mut FileWriter,
    links: &[(&str, Vec<u8>, u64)],
    order_index: bool,
) -> Result<(Addr, Addr, Addr)> {
    let entries: Vec<DenseEntry> = links
        .iter()
        .map(|(n, m, o)| DenseEntry {
            name: n.as_bytes().to_vec(),
            msg: m.clone(),
            order: *o,
            flags: 0,
        })
        .collect();
    let d = write_dense(fw, DenseKind::Links, &entries, order_index)?;
    Ok((d.heap, d.name_index, d.order_index))
}

/// Write dense attribute storage for `(name, encoded attribute message)`
/// pairs; returns (heap, name index).
pub(super) fn write_attrs(fw: &mut FileWriter, attrs: &[(&str, Vec<u8>)]) -> Result<(Addr, Addr)> {
    let entries: Vec<DenseEntry> = attrs
        .iter()
        .map(|(n, m)| DenseEntry {
            name: n.as_bytes().to_vec(),
            msg: m.clone(),
            order: 0,
            flags: 0,
        })
        .collect();
    let d = write_dense(fw, DenseKind::Attrs, &entries, false)?;
    Ok((d.heap, d.name_index))
}
