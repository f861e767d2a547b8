//! Chunked datasets: collecting chunk records from any chunk index and
//! assembling the dataset's bytes (with fill values and partial edge chunks).
//!
//! Linear chunk numbers (implicit, fixed array and extensible array indexes)
//! count chunks in row-major order over the chunk grid of the *maximum*
//! dimensions; for the extensible array the one unlimited dimension is moved
//! first ("swizzled") before linearizing.

use crate::data::native::Conv;
use crate::error::{Error, Result};
use crate::filter;
use crate::format::extensible_array::{DataBlock, ExtensibleArrayHeader, IndexBlock, SuperBlock};
use crate::format::fixed_array::{
    self, bit_set, ChunkEntry, FixedArrayDataBlock, FixedArrayHeader,
};
use crate::format::message::{ChunkIndex, ChunkedLayout, FilterPipeline};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// One allocated chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    /// Element coordinates of the chunk's first element (one per dataspace dimension).
    pub offsets: Vec<u64>,
    /// Address of the stored chunk.
    pub addr: Addr,
    /// Stored (possibly filtered) size in bytes.
    pub size: u64,
    /// Filter mask: bit i set means filter i was not applied.
    pub filter_mask: u32,
}

/// What is needed to read a chunked dataset's bytes.
#[derive(Debug, Clone)]
pub struct ChunkedRead<'a> {
    /// The layout message.
    pub layout: &'a ChunkedLayout,
    /// The filter pipeline (empty when none).
    pub pipeline: &'a FilterPipeline,
    /// Current dataspace dims.
    pub dims: &'a [u64],
    /// Maximum dataspace dims (`u64::MAX` = unlimited), same rank as `dims`.
    pub max_dims: &'a [u64],
    /// Element size in bytes.
    pub element_size: usize,
    /// The fill element (`element_size` bytes) for chunks never written.
    pub fill: &'a [u8],
}

fn coords(offsets: &[u64]) -> String {
    let mut s = String::from("chunk [");
    for (i, o) in offsets.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&format!("{o}"));
    }
    s.push(']');
    s
}

/// Uncompressed size in bytes of one chunk.
fn chunk_bytes(layout: &ChunkedLayout, element_size: usize) -> Result<u64> {
    let mut n = element_size as u64;
    for &d in &layout.dims {
        if d == 0 {
            return Err(Error::corrupt("chunk dimension of 0", 0));
        }
        n = n
            .checked_mul(d)
            .ok_or_else(|| Error::limit("chunk size overflows"))?;
    }
    Ok(n)
}

/// Chunks per dimension of the grid used for linear chunk numbers: the
/// maximum dims where bounded, else the current dims.
pub(crate) fn grid(layout: &ChunkedLayout, dims: &[u64], max_dims: &[u64]) -> Vec<u64> {
    layout
        .dims
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let cur = dims.get(i).copied().unwrap_or(0);
            let m = max_dims
                .get(i)
                .copied()
                .filter(|&m| m != u64::MAX && m >= cur)
                .unwrap_or(cur);
            m.div_ceil(c.max(1))
        })
        .collect()
}

/// Element offsets of linear chunk number `idx` over `counts` (row-major),
/// with dimension `first` moved to the front before linearizing.
pub(crate) fn unlinearize(mut idx: u64, counts: &[u64], chunk: &[u64], first: usize) -> Vec<u64> {
    let rank = counts.len();
    // Swizzled order: `first`, then the others in order.
    let order: Vec<usize> = core::iter::once(first)
        .chain((0..rank).filter(|&d| d != first))
        .collect();
    let mut scaled = vec![0u64; rank];
    for (k, &d) in order.iter().enumerate().rev() {
        if k == 0 {
            scaled[d] = idx;
        } else {
            let c = counts[d].max(1);
            scaled[d] = idx % c;
            idx /= c;
        }
    }
    scaled
        .iter()
        .zip(chunk)
        .map(|(s, c)| s.saturating_mul(*c))
        .collect()
}

fn within(offsets: &[u64], dims: &[u64]) -> bool {
    offsets.iter().zip(dims).all(|(o, d)| o < d)
}

pub(crate) fn read_block(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    size: u64,
    what: &str,
) -> Result<Vec<u8>> {
    if size > ctx.limits.max_metadata_block {
        return Err(Error::limit(format!(
            "{what} of {size} bytes exceeds the metadata block limit"
        )));
    }
    st.read(addr, size)
}

pub(crate) fn visit(seen: &mut BTreeSet<u64>, addr: Addr, what: &str) -> Result<()> {
    if !seen.insert(addr.get()) {
        return Err(Error::cycle(
            format!("{what} at {addr} is referenced twice"),
            addr.get(),
        ));
    }
    Ok(())
}

pub(crate) fn count_check(n: u64, ctx: Ctx) -> Result<()> {
    if n > ctx.limits.max_index_entries {
        return Err(Error::limit(format!(
            "chunk index has more than {} entries",
            ctx.limits.max_index_entries
        )));
    }
    Ok(())
}

/// The extensible-array super block at `addr` described by `info`
/// (recorded in `seen`).
pub(crate) fn extensible_array_super_block(
    st: &Storage,
    ctx: Ctx,
    hdr: &ExtensibleArrayHeader,
    info: &crate::format::extensible_array::SuperBlockInfo,
    addr: Addr,
    seen: &mut BTreeSet<u64>,
) -> Result<SuperBlock> {
    visit(seen, addr, "extensible array super block")?;
    let size = hdr.super_block_size(ctx, info)?;
    let raw = read_block(st, ctx, addr, size, "extensible array super block")?;
    SuperBlock::decode(
        &mut crate::codec::Cursor::new(&raw, st.base() + addr.get()),
        ctx,
        hdr,
        info,
    )
}

/// The extensible-array data block of `nelmts` elements at `addr`
/// (recorded in `seen`) and its size without pages (they follow it).
pub(crate) fn extensible_array_data_block(
    st: &Storage,
    ctx: Ctx,
    hdr: &ExtensibleArrayHeader,
    addr: Addr,
    nelmts: u64,
    seen: &mut BTreeSet<u64>,
) -> Result<(DataBlock, u64)> {
    visit(seen, addr, "extensible array data block")?;
    let size = hdr.data_block_size(ctx, nelmts)?;
    let raw = read_block(st, ctx, addr, size, "extensible array data block")?;
    let db = DataBlock::decode(
        &mut crate::codec::Cursor::new(&raw, st.base() + addr.get()),
        ctx,
        hdr,
        nelmts,
    )?;
    Ok((db, size))
}

/// The fixed-array header at `addr`.
pub(crate) fn fixed_array_header(st: &Storage, ctx: Ctx, addr: Addr) -> Result<FixedArrayHeader> {
    let hsize = FixedArrayHeader::encoded_size(ctx);
    let raw = st.read(addr, hsize as u64)?;
    FixedArrayHeader::decode(
        &mut crate::codec::Cursor::new(&raw, st.base() + addr.get()),
        ctx,
    )
}

/// The extensible-array header at `addr` and its index block (recorded in
/// `seen`); `None` when no index block is allocated.
pub(crate) fn extensible_array_open(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    seen: &mut BTreeSet<u64>,
) -> Result<Option<(ExtensibleArrayHeader, IndexBlock)>> {
    use crate::codec::Cursor;
    let hsize = ExtensibleArrayHeader::encoded_size(ctx);
    let raw = st.read(addr, hsize as u64)?;
    let hdr = ExtensibleArrayHeader::decode(&mut Cursor::new(&raw, st.base() + addr.get()), ctx)?;
    let Some(ib_addr) = hdr.index_block.defined() else {
        return Ok(None);
    };
    visit(seen, ib_addr, "extensible array index block")?;
    let raw = read_block(
        st,
        ctx,
        ib_addr,
        hdr.index_block_size(ctx)?,
        "extensible array index block",
    )?;
    let ib = IndexBlock::decode(&mut Cursor::new(&raw, st.base() + ib_addr.get()), ctx, &hdr)?;
    Ok(Some((hdr, ib)))
}

/// All defined entries of a fixed array, with their element index.
///
/// # Errors
/// `Corrupt`, `Checksum`, `Truncated`, `Limit`.
pub fn fixed_array_entries(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Vec<(u64, ChunkEntry)>> {
    let hdr = fixed_array_header(st, ctx, addr)?;
    let mut out = Vec::new();
    let Some(db_addr) = hdr.data_block.defined() else {
        return Ok(out);
    };
    let db_size = hdr.data_block_size(ctx)?;
    let raw = read_block(st, ctx, db_addr, db_size, "fixed array data block")?;
    let db = FixedArrayDataBlock::decode(
        &mut crate::codec::Cursor::new(&raw, st.base() + db_addr.get()),
        ctx,
        &hdr,
    )?;
    if hdr.npages() == 0 {
        count_check(db.entries.len() as u64, ctx)?;
        out.extend(
            db.entries
                .into_iter()
                .enumerate()
                .filter(|(_, e)| !e.addr.is_undef())
                .map(|(i, e)| (i as u64, e)),
        );
        return Ok(out);
    }
    let mut page_addr = db_addr
        .get()
        .checked_add(db_size)
        .ok_or_else(|| Error::corrupt("page address", db_addr.get()))?;
    for page in 0..hdr.npages() {
        let n = hdr.page_len(page);
        let psize = n * u64::from(hdr.entry_size) + 4;
        if bit_set(&db.page_bitmap, page) {
            let raw = read_block(st, ctx, Addr(page_addr), psize, "fixed array page")?;
            let mut cur = crate::codec::Cursor::new(&raw, st.base() + page_addr);
            let entries =
                fixed_array::decode_page(&mut cur, ctx, hdr.client_id, hdr.entry_size, n)?;
            let first = page * hdr.page_entries();
            for (i, e) in entries.into_iter().enumerate() {
                if !e.addr.is_undef() {
                    out.push((first + i as u64, e));
                }
            }
            count_check(out.len() as u64, ctx)?;
        }
        page_addr = page_addr
            .checked_add(hdr.page_size())
            .ok_or_else(|| Error::corrupt("page address", page_addr))?;
    }
    Ok(out)
}

/// All defined entries of an extensible array, with their element index.
///
/// # Errors
/// `Corrupt`, `Checksum`, `Truncated`, `Limit`, `Cycle`, `Unsupported`.
pub fn extensible_array_entries(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
) -> Result<Vec<(u64, ChunkEntry)>> {
    use crate::codec::Cursor;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let Some((hdr, ib)) = extensible_array_open(st, ctx, addr, &mut seen)? else {
        return Ok(out);
    };
    let limit = hdr.max_index_set;
    for (i, e) in ib.elements.iter().enumerate() {
        if (i as u64) < limit && !e.addr.is_undef() {
            out.push((i as u64, *e));
        }
    }
    let base_idx = u64::from(hdr.index_block_elements);
    let in_ib = hdr.index_block_super_blocks() as usize;
    let esize = u64::from(hdr.element_size);
    // Read the elements of one data block (paged or not) at `dblk`.
    let data_block = |dblk: Addr,
                      first: u64,
                      nelmts: u64,
                      bitmap: Option<&[u8]>,
                      out: &mut Vec<(u64, ChunkEntry)>,
                      seen: &mut BTreeSet<u64>|
     -> Result<()> {
        let (db, size) = extensible_array_data_block(st, ctx, &hdr, dblk, nelmts, seen)?;
        let pages = hdr.data_block_pages(nelmts);
        let push = |idx: u64, e: ChunkEntry, out: &mut Vec<(u64, ChunkEntry)>| {
            if idx < limit && !e.addr.is_undef() {
                out.push((idx, e));
            }
        };
        if pages == 0 {
            for (i, e) in db.elements.into_iter().enumerate() {
                push(first + i as u64, e, out);
            }
        } else {
            let bitmap = bitmap.ok_or_else(|| {
                Error::unsupported(
                    "paged extensible array data block addressed from the index block",
                )
            })?;
            let pe = hdr.page_elements();
            let psize = pe * esize + 4;
            for p in 0..pages {
                if !bit_set(bitmap, p) {
                    continue;
                }
                let paddr = dblk
                    .get()
                    .saturating_add(size)
                    .saturating_add(p.saturating_mul(psize));
                let raw = read_block(st, ctx, Addr(paddr), psize, "extensible array page")?;
                let mut cur = Cursor::new(&raw, st.base() + paddr);
                let entries =
                    fixed_array::decode_page(&mut cur, ctx, hdr.client_id, hdr.element_size, pe)?;
                for (i, e) in entries.into_iter().enumerate() {
                    push(first + p * pe + i as u64, e, out);
                }
            }
        }
        count_check(out.len() as u64, ctx)
    };
    for (u, info) in hdr.super_block_info().iter().enumerate() {
        let sb_first = base_idx.saturating_add(info.start_idx);
        if sb_first >= limit {
            break;
        }
        if u < in_ib {
            for d in 0..info.ndblks {
                let slot = usize::try_from(info.start_dblk + d).unwrap_or(usize::MAX);
                let dblk = ib.data_blocks.get(slot).copied().unwrap_or(Addr::UNDEF);
                if dblk.is_undef() {
                    continue;
                }
                let first = sb_first + d * info.dblk_nelmts;
                data_block(dblk, first, info.dblk_nelmts, None, &mut out, &mut seen)?;
            }
        } else {
            let sb_addr = ib
                .super_blocks
                .get(u - in_ib)
                .copied()
                .unwrap_or(Addr::UNDEF);
            let Some(sb_addr) = sb_addr.defined() else {
                continue;
            };
            let sb = extensible_array_super_block(st, ctx, &hdr, info, sb_addr, &mut seen)?;
            for (d, dblk) in sb.data_blocks.iter().enumerate() {
                let Some(dblk) = dblk.defined() else { continue };
                let first = sb_first + d as u64 * info.dblk_nelmts;
                if first >= limit {
                    break;
                }
                let bitmap = sb.page_bitmaps.get(d).map(Vec::as_slice);
                data_block(dblk, first, info.dblk_nelmts, bitmap, &mut out, &mut seen)?;
            }
        }
    }
    Ok(out)
}

/// Decode the raw records of a v2 B-tree chunk index (record types 10 and 11).
pub(crate) fn btree_v2_record(
    rec: &[u8],
    ctx: Ctx,
    layout: &ChunkedLayout,
    filtered: bool,
    chunk_len: u64,
) -> Result<ChunkRecord> {
    let rank = layout.dims.len();
    let o = usize::from(ctx.sizes.offsets);
    let mut cur = crate::codec::Cursor::new(rec, 0);
    let addr = cur.read_addr(ctx.sizes)?;
    let (size, filter_mask) = if filtered {
        let n = rec
            .len()
            .checked_sub(o + 4 + 8 * rank)
            .filter(|n| (1..=8).contains(n))
            .ok_or_else(|| {
                Error::corrupt("v2 B-tree filtered chunk record of unexpected size", 0)
            })?;
        (cur.read_uint(n)?, cur.read_u32()?)
    } else {
        (chunk_len, 0)
    };
    let mut offsets = Vec::with_capacity(rank);
    for &c in &layout.dims {
        offsets.push(
            cur.read_u64()?
                .checked_mul(c)
                .ok_or_else(|| Error::corrupt("chunk offset overflows", 0))?,
        );
    }
    cur.finish("v2 B-tree chunk record")?;
    Ok(ChunkRecord {
        offsets,
        addr,
        size,
        filter_mask,
    })
}

/// Chunk records of array-index entries (linear chunk number, entry):
/// offsets from the number over the chunk grid `counts` (dimension `first`
/// numbered first), unfiltered sizes `clen`.
fn entry_records(
    entries: Vec<(u64, ChunkEntry)>,
    counts: &[u64],
    cdims: &[u64],
    first: usize,
    clen: u64,
) -> Vec<ChunkRecord> {
    entries
        .into_iter()
        .map(|(idx, e)| ChunkRecord {
            offsets: unlinearize(idx, counts, cdims, first),
            addr: e.addr,
            size: e.size.unwrap_or(clen),
            filter_mask: e.filter_mask,
        })
        .collect()
}

/// All allocated chunks of a chunked dataset, from whichever index it uses.
/// `dims`/`max_dims` are the dataspace's current and maximum dims (`max_dims`
/// may be empty when unknown: the current dims are used for the grid).
///
/// # Errors
/// `Corrupt`, `Truncated`, `Checksum`, `Cycle`, `Limit`, `Unsupported`.
pub fn chunk_records(
    st: &Storage,
    ctx: Ctx,
    layout: &ChunkedLayout,
    dims: &[u64],
    max_dims: &[u64],
    element_size: usize,
    filtered: bool,
) -> Result<Vec<ChunkRecord>> {
    let rank = dims.len();
    if layout.dims.len() != rank {
        return Err(Error::corrupt(
            format!(
                "chunk rank {} differs from the dataspace rank {rank}",
                layout.dims.len()
            ),
            0,
        ));
    }
    let clen = chunk_bytes(layout, element_size)?;
    let counts = grid(layout, dims, max_dims);
    let from_entries = |entries: Vec<(u64, ChunkEntry)>, first: usize| {
        entry_records(entries, &counts, &layout.dims, first, clen)
    };
    let records = match &layout.index {
        ChunkIndex::BTreeV1 { addr } => {
            if addr.is_undef() {
                Vec::new()
            } else {
                crate::read::btree_v1::chunk_records(st, ctx, *addr, rank)?
            }
        }
        ChunkIndex::BTreeV2 { addr, .. } => {
            if addr.is_undef() {
                Vec::new()
            } else {
                let tree = crate::read::btree_v2::BTreeV2::open(st, ctx, *addr)?;
                let raw = tree.records()?;
                count_check(raw.len() as u64, ctx)?;
                raw.iter()
                    .map(|r| btree_v2_record(r, ctx, layout, filtered, clen))
                    .collect::<Result<_>>()?
            }
        }
        ChunkIndex::SingleChunk { addr, filtered } => match addr.defined() {
            None => Vec::new(),
            Some(a) => {
                let (size, filter_mask) = filtered.unwrap_or((clen, 0));
                vec![ChunkRecord {
                    offsets: vec![0; rank],
                    addr: a,
                    size,
                    filter_mask,
                }]
            }
        },
        ChunkIndex::Implicit { addr } => match addr.defined() {
            None => Vec::new(),
            Some(a) => {
                let total = counts.iter().try_fold(1u64, |n, &c| n.checked_mul(c));
                let total = total.ok_or_else(|| Error::limit("implicit chunk count overflows"))?;
                count_check(total, ctx)?;
                let mut v = Vec::new();
                for idx in 0..total {
                    let offsets = unlinearize(idx, &counts, &layout.dims, 0);
                    if !within(&offsets, dims) {
                        continue;
                    }
                    let at = idx.checked_mul(clen).and_then(|o| o.checked_add(a.get()));
                    let at = at.ok_or_else(|| {
                        Error::corrupt("implicit chunk address overflows", a.get())
                    })?;
                    v.push(ChunkRecord {
                        offsets,
                        addr: Addr(at),
                        size: clen,
                        filter_mask: 0,
                    });
                }
                v
            }
        },
        ChunkIndex::FixedArray { addr, .. } => match addr.defined() {
            None => Vec::new(),
            Some(a) => from_entries(fixed_array_entries(st, ctx, a)?, 0),
        },
        ChunkIndex::ExtensibleArray { addr, .. } => match addr.defined() {
            None => Vec::new(),
            Some(a) => {
                let unlim = max_dims.iter().position(|&m| m == u64::MAX).unwrap_or(0);
                from_entries(extensible_array_entries(st, ctx, a)?, unlim)
            }
        },
    };
    Ok(records)
}

/// Copy the part of a decoded chunk (`chunk`, full chunk size, row-major)
/// at element `offsets` that lies inside the dataset into `out`, converting
/// its elements with `conv`.
fn copy_chunk(
    out: &mut [u8],
    chunk: &[u8],
    offsets: &[u64],
    cdims: &[u64],
    dims: &[u64],
    conv: Conv,
) -> Result<()> {
    let (es, os) = (conv.src_size(), conv.dst_size());
    let rank = dims.len();
    if rank == 0 {
        return match (chunk.get(..es), out.get_mut(..os)) {
            (Some(from), Some(to)) => conv.run(from, to),
            _ => Ok(()),
        };
    }
    // Extent of the intersection per dimension.
    let mut ext = Vec::with_capacity(rank);
    for d in 0..rank {
        let e = dims[d].saturating_sub(offsets[d]).min(cdims[d]);
        if e == 0 {
            return Ok(());
        }
        ext.push(e);
    }
    let to_usize = |v: u64| {
        usize::try_from(v).map_err(|_| Error::limit("dataset larger than the address space"))
    };
    let run = to_usize(ext[rank - 1])?;
    let (run_in, run_out) = match (run.checked_mul(es), run.checked_mul(os)) {
        (Some(i), Some(o)) => (i, o),
        _ => return Err(Error::limit("run size")),
    };
    let mut idx = vec![0u64; rank - 1];
    loop {
        // Linear element positions of the run start in the chunk and in the dataset.
        let mut src = 0u64;
        let mut dst = 0u64;
        for d in 0..rank {
            let i = if d + 1 < rank { idx[d] } else { 0 };
            src = src * cdims[d] + i;
            dst = dst * dims[d] + offsets[d] + i;
        }
        let s = to_usize(src)? * es;
        let t = to_usize(dst)? * os;
        let from = chunk
            .get(s..s + run_in)
            .ok_or_else(|| Error::corrupt("chunk shorter than its dimensions", 0))?;
        let to = out
            .get_mut(t..t + run_out)
            .ok_or_else(|| Error::corrupt("chunk outside the dataset", 0))?;
        conv.run(from, to)?;
        // Next row (odometer over all but the last dimension).
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < ext[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Read the whole dataset into a row-major buffer of `product(dims) * element_size` bytes.
///
/// # Errors
/// `Corrupt`, `Truncated`, `Unsupported` (filter), `Checksum`, `Limit`, naming the chunk.
pub fn read_all(st: &Storage, ctx: Ctx, req: &ChunkedRead<'_>) -> Result<Vec<u8>> {
    let total = check_whole(ctx, req)?;
    let mut out = crate::io::large_buffer(total)?;
    read_all_into(st, ctx, req, Conv::identity(req.element_size), &mut out)?;
    Ok(out)
}

/// The checks [`read_all`] makes before it allocates the output; the
/// dataset's size in bytes.
///
/// # Errors
/// `Corrupt` for a chunk rank that is not the dataspace's; `Limit` for a
/// dataset or chunk above the limits.
pub(crate) fn check_whole(ctx: Ctx, req: &ChunkedRead<'_>) -> Result<usize> {
    let es = req.element_size;
    let layout = req.layout;
    let rank = req.dims.len();
    if layout.dims.len() != rank {
        return Err(Error::corrupt(
            format!(
                "chunk rank {} differs from the dataspace rank {rank}",
                layout.dims.len()
            ),
            0,
        ));
    }
    let total = req
        .dims
        .iter()
        .try_fold(es as u64, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= ctx.limits.max_read_bytes)
        .ok_or_else(|| {
            Error::limit(format!(
                "dataset of {:?} x {es} bytes exceeds the read limit",
                req.dims
            ))
        })?;
    let total = usize::try_from(total)
        .map_err(|_| Error::limit("dataset larger than the address space"))?;
    let clen = chunk_bytes(layout, es)?;
    if clen > ctx.limits.max_chunk_bytes {
        return Err(Error::limit(format!(
            "chunk of {clen} bytes exceeds the chunk limit"
        )));
    }
    Ok(total)
}

/// Read the whole dataset (checked by [`check_whole`]) into `out`, all zero
/// bytes, of the dataset's elements converted by `conv` (row-major).
///
/// # Errors
/// As [`read_all`]; as [`Conv::run`].
pub(crate) fn read_all_into(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    conv: Conv,
    out: &mut [u8],
) -> Result<()> {
    let (es, layout, rank) = (req.element_size, req.layout, req.dims.len());
    let clen = chunk_bytes(layout, es)?;
    if out.is_empty() {
        return Ok(());
    }
    let filtered = !req.pipeline.filters.is_empty();
    let records = chunk_records(st, ctx, layout, req.dims, req.max_dims, es, filtered)?;
    let wanted: Vec<&ChunkRecord> = records
        .iter()
        .filter(|rec| rec.offsets.len() == rank && within(&rec.offsets, req.dims))
        .collect();
    let zero = vec![0u64; rank];
    if req.fill.len() == es && !covers(&wanted, &layout.dims, &zero, req.dims) {
        conv.fill(req.fill, out)?;
    }
    if row_regions(st, ctx, req, &wanted, clen, conv, out)? {
        return Ok(());
    }
    for_each_decoded(st, ctx, req, &wanted, Need::whole(clen), |rec, data| {
        copy_chunk(out, &data, &rec.offsets, &layout.dims, req.dims, conv)?;
        Ok(Some(data))
    })
}

/// Whether the chunks `recs` cover every chunk of the grid `cdims` that
/// meets the element box `lo..hi` (then no element of the box is left to
/// the fill value). Chunks off the grid, and repeated ones, do not count.
fn covers(recs: &[&ChunkRecord], cdims: &[u64], lo: &[u64], hi: &[u64]) -> bool {
    // Per dimension: the first chunk that meets the box, and how many do.
    let mut span = Vec::with_capacity(cdims.len());
    let mut cells = 1u64;
    for ((&c, &l), &h) in cdims.iter().zip(lo).zip(hi) {
        if c == 0 || h <= l {
            return false;
        }
        let (first, last) = (l / c, (h - 1) / c);
        span.push((first, last - first + 1));
        let Some(n) = cells.checked_mul(last - first + 1) else {
            return false;
        };
        cells = n;
    }
    if (recs.len() as u64) < cells || span.len() != cdims.len() {
        return false;
    }
    let mut seen: Vec<u64> = Vec::new();
    if seen.try_reserve_exact(recs.len()).is_err() {
        return false;
    }
    'rec: for rec in recs {
        let mut idx = 0u64;
        for ((&o, &c), &(first, n)) in rec.offsets.iter().zip(cdims).zip(&span) {
            if o % c != 0 || o / c < first || o / c - first >= n {
                continue 'rec;
            }
            // Below `cells`: no overflow.
            idx = idx * n + (o / c - first);
        }
        seen.push(idx);
    }
    seen.sort_unstable();
    seen.dedup();
    seen.len() as u64 == cells
}

/// When every chunk spans all the dataset's trailing dimensions (always so
/// for 1-D), each chunk fills one contiguous byte range of the output: split
/// `out` into those disjoint ranges and let the worker threads decode and
/// copy in parallel, with no lock. Returns `false` (nothing done) when the
/// shape does not allow it or the chunks' ranges overlap (a corrupt index).
#[cfg(feature = "std")]
fn row_regions(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    clen: u64,
    conv: Conv,
    out: &mut [u8],
) -> Result<bool> {
    let (cdims, dims) = (&req.layout.dims, req.dims);
    let threads = worker_threads(recs.len(), clen);
    let (Some(&c0), Some(&d0)) = (cdims.first(), dims.first()) else {
        return Ok(false);
    };
    if threads <= 1 || cdims.iter().zip(dims).skip(1).any(|(c, d)| c < d) {
        return Ok(false);
    }
    // Bytes of one output row (dimension 0).
    let row_bytes = dims
        .iter()
        .skip(1)
        .try_fold(conv.dst_size() as u64, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok());
    let Some(row_bytes) = row_bytes else {
        return Ok(false);
    };
    let mut order: Vec<&ChunkRecord> = recs.to_vec();
    if order
        .iter()
        .any(|r| r.offsets.iter().skip(1).any(|&o| o != 0))
    {
        return Ok(false);
    }
    order.sort_by_key(|r| r.offsets.first().copied().unwrap_or(0));
    let mut items = Vec::with_capacity(order.len());
    let mut rest = out;
    let mut pos = 0usize;
    for rec in order {
        let o0 = rec.offsets.first().copied().unwrap_or(0);
        let rows = c0.min(d0.saturating_sub(o0));
        let start = usize::try_from(o0)
            .ok()
            .and_then(|o| o.checked_mul(row_bytes));
        let len = usize::try_from(rows)
            .ok()
            .and_then(|r| r.checked_mul(row_bytes));
        let (Some(start), Some(len)) = (start, len) else {
            return Ok(false);
        };
        if start < pos || start - pos + len > rest.len() {
            return Ok(false); // overlapping or out-of-range chunks
        }
        let (_, tail) = core::mem::take(&mut rest).split_at_mut(start - pos);
        let (region, tail) = tail.split_at_mut(len);
        rest = tail;
        pos = start + len;
        let mut local = dims.to_vec();
        if let Some(l) = local.first_mut() {
            *l = rows;
        }
        items.push((rec, region, local));
    }
    let name = |rec: &ChunkRecord, e: Error| {
        e.context(&coords(&rec.offsets))
            .with_offset(st.base().saturating_add(rec.addr.get()))
    };
    // The error reported is that of the first failing chunk in this order,
    // whatever the threads' timing: a chunk after a recorded failure is
    // skipped, those before it still decode.
    //
    // Chunks are handed out so that the threads work far apart in `out`
    // (thread-count interleaved strides): neighbouring chunks share huge
    // pages, and two threads faulting one fresh huge page at once each clear
    // a whole page of their own, one of which the kernel then throws away.
    let queue = std::sync::Mutex::new(strided(items.into_iter().enumerate().collect(), threads));
    let failed = std::sync::Mutex::new(None::<(usize, Error)>);
    let fail = |i: usize, e: Error| {
        if let Ok(mut f) = failed.lock() {
            if f.as_ref().is_none_or(|(j, _)| i < *j) {
                *f = Some((i, e));
            }
        }
    };
    let zero = alloc::vec![0u64; dims.len()];
    let work = || loop {
        let item = match queue.lock() {
            Ok(mut q) => q.next(),
            Err(_) => None,
        };
        let Some((i, (rec, region, local))) = item else {
            return;
        };
        // Skip (do not stop at) a chunk after a recorded failure: chunks
        // before the failure may still be further along in the queue.
        if failed
            .lock()
            .map_or(true, |f| f.as_ref().is_some_and(|(j, _)| *j < i))
        {
            continue;
        }
        // Whole chunks decode straight into the output when its elements
        // are as large as the file's, and are converted there while in the
        // cache.
        let full = local.first() == cdims.first() && conv.same_size();
        let direct = if full { Some(&mut *region) } else { None };
        match decode_one_into(st, ctx, req, rec, clen, direct) {
            Ok(None) if full => {
                if let Err(e) = conv.run_in_place(region) {
                    fail(i, name(rec, e));
                }
            }
            Ok(Some(data)) => {
                let r = copy_chunk(region, &data, &zero, cdims, &local, conv);
                crate::io::recycle(data);
                if let Err(e) = r {
                    fail(i, name(rec, e));
                }
            }
            Ok(None) => {}
            Err(e) => fail(i, name(rec, e)),
        }
    };
    // The calling thread is one of the workers.
    let panicked = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err();
        handles
            .into_iter()
            .fold(mine, |p, h| h.join().is_err() || p)
    });
    if panicked {
        return Err(Error::corrupt("a chunk decoding thread panicked", 0));
    }
    if let Some((_, e)) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(true)
}

/// `items` reordered as `threads` interleaved runs: item 0, item n/t,
/// item 2n/t, ..., then item 1, item n/t + 1, ...
#[cfg(feature = "std")]
fn strided<T>(items: Vec<T>, threads: usize) -> std::vec::IntoIter<T> {
    let n = items.len();
    let per = n.div_ceil(threads.max(1)).max(1);
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    for i in 0..per {
        for k in (i..n).step_by(per) {
            if let Some(item) = slots.get_mut(k).and_then(Option::take) {
                out.push(item);
            }
        }
    }
    out.into_iter()
}

#[cfg(not(feature = "std"))]
fn row_regions(
    _st: &Storage,
    _ctx: Ctx,
    _req: &ChunkedRead<'_>,
    _recs: &[&ChunkRecord],
    _clen: u64,
    _conv: Conv,
    _out: &mut [u8],
) -> Result<bool> {
    Ok(false)
}

/// Read the chunks that intersect `sel` and copy the selected elements into
/// `out` (row-major in `sel.out_shape()`, pre-filled with the fill value).
/// Chunks outside the selection's bounding box are never read.
///
/// # Errors
/// As [`read_all`].
pub fn read_selection(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    sel: &crate::data::hyperslab::Selection,
    out: &mut [u8],
) -> Result<()> {
    let conv = Conv::identity(req.element_size);
    selection_inner(st, ctx, req, sel, conv, out, None, false)
}

/// As [`read_selection`], serving chunks held by `cache` from it and keeping
/// the chunks it decodes there (within the cache's budget), so overlapping
/// or repeated selections decode each chunk once while it stays cached.
///
/// # Errors
/// As [`read_all`].
#[cfg(feature = "std")]
pub fn read_selection_cached(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    sel: &crate::data::hyperslab::Selection,
    out: &mut [u8],
    cache: &crate::read::chunk_cache::ChunkCache,
) -> Result<()> {
    let conv = Conv::identity(req.element_size);
    selection_inner(st, ctx, req, sel, conv, out, Some(cache), false)
}

/// As [`read_selection`] into `out`, all zero bytes, of the selected
/// elements converted by `conv`; the fill value goes in first unless the
/// chunks cover the whole selection. With `std`, chunks are served from
/// and kept in `cache` (see [`read_selection_cached`]).
///
/// # Errors
/// As [`read_all`]; as [`Conv::run`].
pub(crate) fn read_selection_into(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    sel: &crate::data::hyperslab::Selection,
    conv: Conv,
    out: &mut [u8],
    cache: CacheRef<'_>,
) -> Result<()> {
    selection_inner(st, ctx, req, sel, conv, out, cache, true)
}

#[cfg(feature = "std")]
pub(crate) type CacheRef<'a> = Option<&'a crate::read::chunk_cache::ChunkCache>;
#[cfg(not(feature = "std"))]
pub(crate) type CacheRef<'a> = Option<&'a ()>;

/// The allocated chunks that may intersect the element box `lo..hi`
/// (exclusive upper bounds), reading only the parts of the chunk index that
/// can hold them (see [`crate::read::chunk_select`]). May return chunks
/// outside the box (the caller filters); `None` when the index has no
/// pruned walk (the caller reads the whole index).
fn records_in_box(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    lo: &[u64],
    hi: &[u64],
    filtered: bool,
    clen: u64,
) -> Result<Option<Vec<ChunkRecord>>> {
    use crate::read::chunk_select::{GridBox, ScaledBox};
    let layout = req.layout;
    let rank = req.dims.len();
    if lo.len() != rank || hi.len() != rank || layout.dims.len() != rank {
        return Ok(None);
    }
    let Some(bx) = ScaledBox::from_elements(lo, hi, &layout.dims, None) else {
        // An empty box: no chunk intersects it.
        return Ok(Some(Vec::new()));
    };
    let counts = grid(layout, req.dims, req.max_dims);
    let records = |entries: Vec<(u64, ChunkEntry)>, first: usize| {
        entry_records(entries, &counts, &layout.dims, first, clen)
    };
    Ok(Some(match &layout.index {
        // Walk only the part of the B-tree between the box's first and last
        // chunk (row-major order).
        ChunkIndex::BTreeV1 { addr } => {
            if addr.is_undef() {
                return Ok(Some(Vec::new()));
            }
            let corner = |v: &[u64], minus: u64| -> Vec<u64> {
                v.iter()
                    .zip(&layout.dims)
                    .map(|(&x, &c)| x.saturating_sub(minus) / c.max(1) * c.max(1))
                    .collect()
            };
            let (first, last) = (corner(lo, 0), corner(hi, 1));
            crate::read::btree_v1::chunk_records_between(st, ctx, *addr, rank, &first, &last)?
        }
        ChunkIndex::FixedArray { addr, .. } => {
            let Some(a) = addr.defined() else {
                return Ok(Some(Vec::new()));
            };
            let Some(g) = GridBox::new(&counts, 0, &bx) else {
                return Ok(None);
            };
            let entries = crate::read::chunk_select::fixed_array_entries_in(st, ctx, a, &g)?;
            records(entries, 0)
        }
        ChunkIndex::BTreeV2 { addr, .. } => {
            let Some(a) = addr.defined() else {
                return Ok(Some(Vec::new()));
            };
            let raw = crate::read::chunk_select::btree_v2_chunk_records_in(st, ctx, a, &bx)?;
            raw.iter()
                .map(|r| btree_v2_record(r, ctx, layout, filtered, clen))
                .collect::<Result<_>>()?
        }
        ChunkIndex::ExtensibleArray { addr, .. } => {
            let Some(a) = addr.defined() else {
                return Ok(Some(Vec::new()));
            };
            // The unlimited dimension is numbered first (as `chunk_records`).
            let unlim = req
                .max_dims
                .iter()
                .position(|&m| m == u64::MAX)
                .unwrap_or(0);
            let Some(g) = GridBox::new(&counts, unlim, &bx) else {
                return Ok(None);
            };
            let entries = crate::read::chunk_select::extensible_array_entries_in(st, ctx, a, &g)?;
            records(entries, unlim)
        }
        // Chunks lie back to back in linear order: enumerate the box's
        // chunks only (their count checked first), no I/O.
        ChunkIndex::Implicit { addr } => {
            let Some(a) = addr.defined() else {
                return Ok(Some(Vec::new()));
            };
            let Some(g) = GridBox::new(&counts, 0, &bx) else {
                return Ok(None);
            };
            count_check(g.count(), ctx)?;
            let mut v = Vec::new();
            let mut at = g.next(0);
            while let Some(idx) = at {
                let offsets = unlinearize(idx, &counts, &layout.dims, 0);
                if within(&offsets, req.dims) {
                    let addr = idx.checked_mul(clen).and_then(|o| o.checked_add(a.get()));
                    let addr = addr.ok_or_else(|| {
                        Error::corrupt("implicit chunk address overflows", a.get())
                    })?;
                    v.push(ChunkRecord {
                        offsets,
                        addr: Addr(addr),
                        size: clen,
                        filter_mask: 0,
                    });
                }
                // `idx` < the grid's total: no overflow.
                at = g.next(idx + 1);
            }
            v
        }
        _ => return Ok(None),
    }))
}

/// The selection read; with `fill`, the fill value (converted) goes in
/// first when the chunks do not cover the selection.
#[allow(clippy::too_many_arguments)]
fn selection_inner(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    sel: &crate::data::hyperslab::Selection,
    conv: Conv,
    out: &mut [u8],
    cache: CacheRef<'_>,
    fill: bool,
) -> Result<()> {
    let es = req.element_size;
    let layout = req.layout;
    let rank = req.dims.len();
    if layout.dims.len() != rank {
        return Err(Error::corrupt(
            "chunk rank differs from the dataspace rank",
            0,
        ));
    }
    let clen = chunk_bytes(layout, es)?;
    if clen > ctx.limits.max_chunk_bytes {
        return Err(Error::limit(format!(
            "chunk of {clen} bytes exceeds the chunk limit"
        )));
    }
    let (lo, hi) = sel.bounds(rank);
    let need = Need {
        clen,
        rows_start: lo.first().copied().unwrap_or(0),
        rows_end: hi.first().copied().unwrap_or(u64::MAX),
        not_kept: false,
    };
    let filtered = !req.pipeline.filters.is_empty();
    let records = match records_in_box(st, ctx, req, &lo, &hi, filtered, clen)? {
        Some(records) => records,
        None => chunk_records(st, ctx, layout, req.dims, req.max_dims, es, filtered)?,
    };
    let wanted: Vec<&ChunkRecord> = records
        .iter()
        .filter(|rec| {
            rec.offsets.len() == rank
                && within(&rec.offsets, req.dims)
                && rec
                    .offsets
                    .iter()
                    .zip(&layout.dims)
                    .zip(lo.iter().zip(&hi))
                    .all(|((&o, &c), (&l, &h))| o < h && o.saturating_add(c) > l)
        })
        .collect();
    if fill && req.fill.len() == es && !covers(&wanted, &layout.dims, &lo, &hi) {
        conv.fill(req.fill, out)?;
    }
    // A small run of elements of an unfiltered rank-1 chunk is read in
    // place, not the whole chunk (a binary search over a column probes one
    // element per chunk).
    let mut wanted = wanted;
    if !filtered && rank == 1 {
        if let (Some(&l), Some(&h), Some(&c0)) = (lo.first(), hi.first(), layout.dims.first()) {
            // A run of consecutive elements (one block of a rank-1
            // hyperslab): read as stored, each chunk's
            // part is read straight to its place in `out` (a scan reading a
            // column batch by batch copies once, not twice).
            let run = matches!(sel, crate::data::hyperslab::Selection::Hyperslab(d)
                if d.len() == 1 && d[0].count.saturating_mul(d[0].block) == h.saturating_sub(l)
                    && (d[0].count == 1 || d[0].stride == d[0].block));
            let to_place = run && conv.is_identity();
            if sel.num_elements() == Some(h.saturating_sub(l)) {
                let small = |rec: &&ChunkRecord| {
                    let off = rec.offsets[0];
                    let a = l.max(off);
                    let b = h.min(off.saturating_add(c0));
                    // A quarter of the chunk or less (any part, read in
                    // place), and not cached already.
                    (to_place
                        || b.saturating_sub(a)
                            .saturating_mul(es as u64)
                            .saturating_mul(4)
                            <= clen)
                        && rec.size >= clen
                        && cached(cache, rec.addr.get()).is_none()
                };
                let (direct, rest): (Vec<&ChunkRecord>, Vec<&ChunkRecord>) =
                    wanted.into_iter().partition(small);
                for rec in direct {
                    let off = rec.offsets[0];
                    let (a, b) = (l.max(off), h.min(off.saturating_add(c0)));
                    let es64 = es as u64;
                    let at = (a - off)
                        .checked_mul(es64)
                        .and_then(|x| rec.addr.get().checked_add(x))
                        .ok_or_else(|| Error::corrupt("chunk address overflow", rec.addr.get()))?;
                    let n = usize::try_from((b - a) * es64)
                        .map_err(|_| Error::limit("selection too large"))?;
                    if to_place {
                        let place = usize::try_from((a - l) * es64)
                            .ok()
                            .and_then(|p| out.get_mut(p..p.checked_add(n)?))
                            .ok_or_else(|| Error::usage("output smaller than the selection"))?;
                        st.read_into(Addr(at), place).map_err(|e| {
                            e.context(&coords(&rec.offsets))
                                .with_offset(st.base().saturating_add(rec.addr.get()))
                        })?;
                        conv.run_in_place(place)?;
                        continue;
                    }
                    // At most a quarter of a chunk within the chunk limit.
                    let mut raw = crate::io::scratch_buffer(n)?;
                    st.read_into(Addr(at), &mut raw).map_err(|e| {
                        e.context(&coords(&rec.offsets))
                            .with_offset(st.base().saturating_add(rec.addr.get()))
                    })?;
                    sel.convert_from_region(conv, &raw, &[a], &[b - a], out)?;
                }
                wanted = rest;
            }
        }
    }
    // One whole chunk of a filtered rank-1 dataset read as a run of
    // elements (a scan's batch): decoded straight into its place in `out`
    // (no scratch buffer and no copy) and not cached, the caller holding it.
    if filtered && rank == 1 && conv.is_identity() && wanted.len() == 1 {
        if let (Some(&l), Some(&h), Some(&c0), Some(rec)) =
            (lo.first(), hi.first(), layout.dims.first(), wanted.first())
        {
            let run = matches!(sel, crate::data::hyperslab::Selection::Hyperslab(d)
                if d.len() == 1 && d[0].count.saturating_mul(d[0].block) == h.saturating_sub(l)
                    && (d[0].count == 1 || d[0].stride == d[0].block));
            let off = rec.offsets.first().copied().unwrap_or(u64::MAX);
            if run
                && off >= l
                && off.saturating_add(c0) <= h
                && cached(cache, rec.addr.get()).is_none()
            {
                let at = |e: Error| {
                    e.context(&coords(&rec.offsets))
                        .with_offset(st.base().saturating_add(rec.addr.get()))
                };
                let place = usize::try_from((off - l).saturating_mul(es as u64))
                    .ok()
                    .zip(usize::try_from(clen).ok())
                    .and_then(|(p, n)| out.get_mut(p..p.checked_add(n)?))
                    .ok_or_else(|| Error::usage("output smaller than the selection"))?;
                if let Some(data) =
                    decode_one_into(st, ctx, req, rec, clen, Some(place)).map_err(at)?
                {
                    let src = data
                        .get(..place.len())
                        .ok_or_else(|| at(Error::corrupt("decoded chunk too short", 0)))?;
                    place.copy_from_slice(src);
                }
                return Ok(());
            }
        }
    }
    #[cfg(feature = "std")]
    if let Some(cache) = cache {
        let mut misses = Vec::with_capacity(wanted.len());
        for rec in wanted {
            match cache.get(rec.addr.get(), need.bytes(req, rec)) {
                Some(data) => sel
                    .convert_from_region(conv, &data, &rec.offsets, &layout.dims, out)
                    .map_err(|e| {
                        e.context(&coords(&rec.offsets))
                            .with_offset(st.base().saturating_add(rec.addr.get()))
                    })?,
                None => misses.push(rec),
            }
        }
        let mut keep = usize::try_from(clen).is_ok_and(|n| cache.admits(n));
        let mut need = need;
        // One element (a binary search's probe) of a chunk not cached: the
        // chunk is kept when it is read again, not the first time (see
        // `ChunkCache::seen_before`), and the first time only the part up
        // to the element is decoded when the filters can stop early.
        if sel.num_elements() == Some(1) {
            if let [rec] = misses.as_slice() {
                if !cache.seen_before(rec.addr.get()) {
                    keep = false;
                    need.not_kept = true;
                }
            }
        }
        return for_each_decoded(st, ctx, req, &misses, need, |rec, data| {
            sel.convert_from_region(conv, &data, &rec.offsets, &layout.dims, out)?;
            // A chunk's first rows alone are cached too (see `Need`).
            if keep {
                cache.insert(rec.addr.get(), alloc::sync::Arc::new(data));
                Ok(None)
            } else {
                Ok(Some(data))
            }
        });
    }
    #[cfg(not(feature = "std"))]
    let _ = cache;
    for_each_decoded(st, ctx, req, &wanted, need, |rec, data| {
        sel.convert_from_region(conv, &data, &rec.offsets, &layout.dims, out)?;
        Ok(Some(data))
    })
}

/// Whether the cache holds the chunk at `addr` (without counting a lookup).
#[cfg(feature = "std")]
fn cached(cache: CacheRef<'_>, addr: u64) -> Option<()> {
    cache.and_then(|c| c.contains(addr).then_some(()))
}

#[cfg(not(feature = "std"))]
fn cached(_cache: CacheRef<'_>, _addr: u64) -> Option<()> {
    None
}

/// What a read needs of each chunk: `clen`, the decoded chunk's size, and
/// `rows_start`..`rows_end`, the rows of dimension 0 (in dataset
/// coordinates) that it reads from any chunk (`0..u64::MAX`: all rows).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "std"), allow(dead_code))] // prefixes: std only
struct Need {
    clen: u64,
    rows_start: u64,
    rows_end: u64,
    /// The decoded chunk is not kept (a first probe, see
    /// `ChunkCache::seen_before`): a prefix serves even when the read
    /// starts inside the chunk.
    not_kept: bool,
}

impl Need {
    fn whole(clen: u64) -> Self {
        Need {
            clen,
            rows_start: 0,
            rows_end: u64::MAX,
            not_kept: false,
        }
    }

    /// The bytes of `rec`'s decoded chunk that hold its rows before
    /// `rows_end` (at most the whole chunk).
    #[cfg(feature = "std")]
    fn bytes(&self, req: &ChunkedRead<'_>, rec: &ChunkRecord) -> usize {
        let whole = usize::try_from(self.clen).unwrap_or(usize::MAX);
        let rows = |()| -> Option<usize> {
            let (&c0, rest) = req.layout.dims.split_first()?;
            let rows = self.rows_end.checked_sub(*rec.offsets.first()?)?;
            if rows >= c0 {
                return None;
            }
            let row_bytes = rest
                .iter()
                .try_fold(req.element_size as u64, |n, &d| n.checked_mul(d))?;
            usize::try_from(rows.checked_mul(row_bytes)?).ok()
        };
        rows(()).map_or(whole, |n| n.min(whole))
    }

    /// [`Need::bytes`] when well short of the whole chunk (decoding a
    /// prefix costs ~1.2x per byte, see `filter::decode_prefix`) and the
    /// read takes the chunk's first rows. A read that starts inside the chunk
    /// decodes it whole, to be cached: it is most likely one of a sequence
    /// of reads going through the chunk (`h5 dump`'s blocks, a batched
    /// scan), each of which would decode a longer prefix again.
    #[cfg(feature = "std")]
    fn prefix(&self, req: &ChunkedRead<'_>, rec: &ChunkRecord) -> Option<usize> {
        if !self.not_kept && rec.offsets.first().is_some_and(|&o| self.rows_start > o) {
            return None;
        }
        let n = self.bytes(req, rec);
        (n > 0 && (n as u64).saturating_mul(5) <= self.clen.saturating_mul(4)).then_some(n)
    }
}

/// Read and decode one stored chunk (`need.clen` bytes decoded, or with
/// `need.rows_end` and a deflate-only pipeline possibly only the bytes of
/// the rows before it: the caller copies no others).
fn decode_one(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    rec: &ChunkRecord,
    need: Need,
) -> Result<Vec<u8>> {
    #[cfg(feature = "std")]
    if let Some(n) = need.prefix(req, rec) {
        if let Some(v) = decode_prefix(st, ctx, req, rec, need.clen, n)? {
            return Ok(v);
        }
    }
    decode_one_into(st, ctx, req, rec, need.clen, None)?
        .ok_or_else(|| Error::corrupt("chunk not decoded", 0))
}

/// The first `n` decoded bytes of a filtered chunk when its filters can
/// stop early (see `filter::decode_prefix`); `None` to decode it whole.
#[cfg(feature = "std")]
fn decode_prefix(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    rec: &ChunkRecord,
    clen: u64,
    n: usize,
) -> Result<Option<Vec<u8>>> {
    if !filters_applied(req, rec) || rec.filter_mask != 0 {
        return Ok(None);
    }
    if rec.size > max_stored(ctx, clen) {
        return Ok(None); // the whole-chunk path reports it
    }
    match st.slice(rec.addr, rec.size) {
        Some(stored) => filter::decode_prefix(req.pipeline, rec.filter_mask, stored, n),
        None => {
            let raw = st.read_scratch(rec.addr, rec.size)?;
            let r = filter::decode_prefix(req.pipeline, rec.filter_mask, &raw, n);
            crate::io::recycle(raw);
            r
        }
    }
}

/// As [`decode_one`]; when `direct` (exactly `clen` bytes) is given and the
/// chunk can be decoded straight into it (no filters, or a pipeline whose
/// last filter to undo is the shuffle, deflate or zstd), does so and returns
/// `None`.
fn decode_one_into(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    rec: &ChunkRecord,
    clen: u64,
    direct: Option<&mut [u8]>,
) -> Result<Option<Vec<u8>>> {
    let es = req.element_size;
    let clen_us =
        usize::try_from(clen).map_err(|_| Error::limit("chunk larger than the address space"))?;
    let apply_filters = filters_applied(req, rec);
    let stored_len = if apply_filters { rec.size } else { clen };
    if stored_len > max_stored(ctx, clen) {
        return Err(Error::limit(format!(
            "stored chunk of {stored_len} bytes exceeds the chunk limit"
        )));
    }
    let direct = direct.filter(|d| d.len() == clen_us);
    // Stored bytes already in memory only through an overlay (coalesced
    // reads, see `for_each_decoded`): copy from there rather than read again.
    // (Memory-mapped sources keep reading large unfiltered chunks with
    // `pread`, which is faster than faulting the map in.)
    if !apply_filters && st.source().as_slice().is_none() {
        if let Some(stored) = st.slice(rec.addr, stored_len) {
            return match direct {
                Some(d) if d.len() == stored.len() => {
                    d.copy_from_slice(stored);
                    Ok(None)
                }
                _ => {
                    let mut v = crate::io::scratch_buffer(stored.len())?;
                    v.copy_from_slice(stored);
                    Ok(Some(v))
                }
            };
        }
    }
    if apply_filters {
        // A memory-mapped file: decode the stored bytes where they lie.
        if let Some(stored) = st.slice(rec.addr, stored_len) {
            let data = filter::decode_chunk_borrowed(
                req.pipeline,
                rec.filter_mask,
                stored,
                clen_us,
                es,
                direct,
            )?;
            return match data {
                Some(d) if d.len() < clen_us => Err(Error::corrupt(
                    format!("decoded chunk has {} bytes, expected {clen_us}", d.len()),
                    st.base().saturating_add(rec.addr.get()),
                )),
                d => Ok(d),
            };
        }
    }
    let (raw, direct) = match direct {
        Some(d) if !apply_filters => {
            st.read_into(rec.addr, d)?;
            return Ok(None);
        }
        d => (st.read_scratch(rec.addr, stored_len)?, d),
    };
    let data = if apply_filters {
        let raw = match direct {
            Some(d) => {
                match filter::decode_chunk_into(req.pipeline, rec.filter_mask, raw, es, d)? {
                    None => return Ok(None),
                    Some(raw) => raw,
                }
            }
            None => raw,
        };
        filter::decode_chunk(req.pipeline, rec.filter_mask, raw, clen_us, es)?
    } else {
        raw
    };
    if data.len() < clen_us {
        return Err(Error::corrupt(
            format!("decoded chunk has {} bytes, expected {clen_us}", data.len()),
            st.base().saturating_add(rec.addr.get()),
        ));
    }
    Ok(Some(data))
}

/// Receives each decoded chunk (or its error).
type ChunkSink<'a> = dyn FnMut(&ChunkRecord, Result<Vec<u8>>) -> Result<()> + Send + 'a;

/// Decode `recs` (in parallel across cores with `std`) and hand each decoded
/// chunk to `sink` (in record order when single-threaded), which may give
/// the buffer back for reuse. Errors name the chunk coordinates.
fn for_each_decoded(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    need: Need,
    mut sink: impl FnMut(&ChunkRecord, Vec<u8>) -> Result<Option<Vec<u8>>> + Send,
) -> Result<()> {
    // Sources not in memory: chunks stored back to back are read together.
    if st.source().as_slice().is_none() && st.overlay().is_none() && recs.len() > 1 {
        return coalesced(st, ctx, req, recs, need, &mut sink);
    }
    each_decoded(st, ctx, req, recs, need, sink)
}

/// The most stored bytes a chunk of `clen` decoded bytes may take (a
/// filter can expand incompressible data a little).
fn max_stored(ctx: Ctx, clen: u64) -> u64 {
    ctx.limits
        .max_chunk_bytes
        .max(clen)
        .saturating_mul(2)
        .saturating_add(4096)
}

/// Whether `rec`'s stored bytes went through the filter pipeline: a
/// filtered dataset's chunks do, except partial edge chunks when the
/// layout says those are stored unfiltered (flag bit 0).
fn filters_applied(req: &ChunkedRead<'_>, rec: &ChunkRecord) -> bool {
    if req.pipeline.filters.is_empty() {
        return false;
    }
    let partial = rec
        .offsets
        .iter()
        .zip(&req.layout.dims)
        .zip(req.dims)
        .any(|((o, c), d)| o.saturating_add(*c) > *d);
    !(req.layout.flags & 1 != 0 && partial)
}

/// Stored bytes of `rec` as [`decode_one_into`] reads them.
fn stored_len(req: &ChunkedRead<'_>, rec: &ChunkRecord, clen: u64) -> u64 {
    if filters_applied(req, rec) {
        rec.size
    } else {
        clen
    }
}

/// Chunks adjacent in the file are read with one read (groups of at most
/// `GROUP_MAX` bytes, batches of at most `BATCH_MAX` bytes held at once) and
/// decoded from memory, through an overlay of the storage.
fn coalesced(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    need: Need,
    sink: &mut (impl FnMut(&ChunkRecord, Vec<u8>) -> Result<Option<Vec<u8>>> + Send),
) -> Result<()> {
    const GROUP_MAX: u64 = 8 << 20;
    const BATCH_MAX: u64 = 64 << 20;
    let mut order: Vec<&ChunkRecord> = recs.to_vec();
    order.sort_by_key(|r| r.addr.get());
    let mut i = 0;
    while i < order.len() {
        let start = i;
        let mut overlay = crate::io::Overlay::new();
        let mut batch = 0u64;
        while i < order.len() && batch < BATCH_MAX {
            let Some(first) = order.get(i) else { break };
            let g0 = i;
            let addr = first.addr.get();
            let mut end = addr.saturating_add(stored_len(req, first, need.clen));
            i += 1;
            while let Some(next) = order.get(i) {
                let len = stored_len(req, next, need.clen);
                if next.addr.get() != end || end.saturating_add(len) - addr > GROUP_MAX {
                    break;
                }
                end = end.saturating_add(len);
                i += 1;
            }
            let len = end - addr;
            batch = batch.saturating_add(len);
            // A group of one is read by its decoder as usual; a group that
            // cannot be read whole (past the end of file) too, chunk by chunk,
            // so that the error names the chunk.
            if i - g0 > 1 {
                if let Ok(bytes) = st.read(Addr(addr), len) {
                    overlay.insert(addr, bytes);
                }
            }
        }
        let batch_recs = order.get(start..i).unwrap_or(&[]);
        // Overlapping ranges (a corrupt index) are refused by the overlay:
        // then each chunk is read on its own, as without coalescing.
        let r = match st.with_overlay(overlay) {
            Ok(mem) if mem.overlay().is_some() => {
                each_decoded(&mem, ctx, req, batch_recs, need, &mut *sink)
            }
            _ => each_decoded(st, ctx, req, batch_recs, need, &mut *sink),
        };
        if let Err(e) = r {
            // The error to report is that of the first failing chunk in
            // record order (as for sources in memory), not in file order.
            for rec in recs {
                if let Err(first) = decode_one(st, ctx, req, rec, need) {
                    return Err(first
                        .context(&coords(&rec.offsets))
                        .with_offset(st.base().saturating_add(rec.addr.get())));
                }
            }
            return Err(e);
        }
    }
    Ok(())
}

/// [`for_each_decoded`] without coalescing.
fn each_decoded(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    need: Need,
    mut sink: impl FnMut(&ChunkRecord, Vec<u8>) -> Result<Option<Vec<u8>>> + Send,
) -> Result<()> {
    let name = |rec: &ChunkRecord, e: Error| {
        e.context(&coords(&rec.offsets))
            .with_offset(st.base().saturating_add(rec.addr.get()))
    };
    let threads = worker_threads(recs.len(), need.clen);
    if threads <= 1 {
        for rec in recs {
            let data = decode_one(st, ctx, req, rec, need).map_err(|e| name(rec, e))?;
            if let Some(d) = sink(rec, data).map_err(|e| name(rec, e))? {
                crate::io::recycle(d);
            }
        }
        return Ok(());
    }
    parallel_waves(st, ctx, req, recs, need, threads, &mut |rec, res| {
        let data = res.map_err(|e| name(rec, e))?;
        if let Some(d) = sink(rec, data).map_err(|e| name(rec, e))? {
            crate::io::recycle(d);
        }
        Ok(())
    })
}

#[cfg(feature = "std")]
fn worker_threads(n_chunks: usize, clen: u64) -> usize {
    // Threads pay off only for several chunks of real size.
    if n_chunks < 2 || clen < 16 * 1024 {
        return 1;
    }
    crate::io::cores().min(n_chunks).min(16)
}

#[cfg(not(feature = "std"))]
fn worker_threads(_n_chunks: usize, _clen: u64) -> usize {
    1
}

#[cfg(feature = "std")]
fn parallel_waves(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    need: Need,
    threads: usize,
    sink: &mut ChunkSink<'_>,
) -> Result<()> {
    use core::sync::atomic::{AtomicUsize, Ordering};
    // Workers take the next chunk from a shared counter, decode it and copy
    // it out themselves (the copy, a small part of the work, under a lock);
    // each keeps its buffers for the next chunk (`io::recycle`).
    // The error reported is that of the first failing chunk in record
    // order, whatever the threads' timing (as the sequential loop does):
    // after a failure, chunks before it are still decoded, later ones not.
    let next = AtomicUsize::new(0);
    let stop = AtomicUsize::new(usize::MAX);
    let shared = std::sync::Mutex::new((sink, None::<(usize, Error)>));
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= stop.load(Ordering::Relaxed) {
            break;
        }
        let Some(rec) = recs.get(i) else { break };
        let res = decode_one(st, ctx, req, rec, need);
        let Ok(mut guard) = shared.lock() else { break };
        let (sink, failed) = &mut *guard;
        if failed.as_ref().is_some_and(|(j, _)| *j < i) {
            break;
        }
        let r = match res {
            // The sink borrows the data; give the buffer back afterwards.
            Ok(data) => sink(rec, Ok(data)),
            Err(e) => match sink(rec, Err(e)) {
                Ok(()) => Err(Error::corrupt("chunk not decoded", 0)),
                Err(e) => Err(e),
            },
        };
        if let Err(e) = r {
            stop.fetch_min(i, Ordering::Relaxed);
            *failed = Some((i, e));
        }
    };
    // The calling thread is one of the workers: one thread fewer to start,
    // and decoding begins at once.
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
    match shared.into_inner() {
        Ok((_, None)) => Ok(()),
        Ok((_, Some((_, e)))) => Err(e),
        Err(_) => Err(Error::corrupt("a chunk decoding thread panicked", 0)),
    }
}

#[cfg(not(feature = "std"))]
fn parallel_waves(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    recs: &[&ChunkRecord],
    need: Need,
    _threads: usize,
    sink: &mut ChunkSink<'_>,
) -> Result<()> {
    for rec in recs {
        sink(rec, decode_one(st, ctx, req, rec, need))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "std")]
    #[test]
    fn strided_interleaves_thread_runs_and_keeps_every_item() {
        let order = |n: usize, t: usize| strided((0..n).collect(), t).collect::<Vec<_>>();
        assert_eq!(order(7, 2), [0, 4, 1, 5, 2, 6, 3]);
        assert_eq!(order(9, 3), [0, 3, 6, 1, 4, 7, 2, 5, 8]);
        assert_eq!(order(5, 1), [0, 1, 2, 3, 4]);
        assert_eq!(order(3, 8), [0, 1, 2]);
        assert!(order(0, 2).is_empty());
        for n in 0..40 {
            for t in 1..6 {
                let mut o = order(n, t);
                o.sort_unstable();
                assert_eq!(o, (0..n).collect::<Vec<_>>(), "n {n} t {t}");
            }
        }
    }

    #[test]
    fn unlinearize_row_major_and_swizzled() {
        // Grid 3 x 4 chunks of 2 x 5 elements.
        assert_eq!(unlinearize(6, &[3, 4], &[2, 5], 0), [2, 10]);
        // Unlimited dim 1 moved first: idx = c1 * 3 + c0.
        assert_eq!(unlinearize(7, &[3, 4], &[2, 5], 1), [2, 10]);
    }

    #[test]
    fn copy_partial_edge_chunk() {
        // Dataset 3 x 3 of u8, chunk 2 x 2 at [2, 2] holds [a b; c d]: only `a` lands.
        let mut out = vec![0u8; 9];
        let one = Conv::identity(1);
        copy_chunk(&mut out, &[1, 2, 3, 4], &[2, 2], &[2, 2], &[3, 3], one).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 0, 1]);
        copy_chunk(&mut out, &[5, 6, 7, 8], &[0, 1], &[2, 2], &[3, 3], one).unwrap();
        assert_eq!(out, [0, 5, 6, 0, 7, 8, 0, 0, 1]);
    }
}
