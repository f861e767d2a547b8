//! Pruned chunk-index walks for selection reads: only the parts of a chunk
//! index that can hold chunks inside a selection's bounding box are read.
//!
//! The box is kept in *scaled* chunk coordinates (chunk numbers per
//! dimension, inclusive bounds). Arrays indexed by a linear chunk number
//! (implicit, fixed array, extensible array) number the chunks row-major
//! over the chunk grid, the extensible array with its unlimited dimension
//! moved first; [`GridBox`] maps between the two and finds, for any linear
//! number, the next one inside the box, so a walk jumps from one needed
//! block or page to the next without visiting the others. The v2 B-tree
//! (record types 10 and 11) orders records by their scaled offsets compared
//! dimension by dimension: a child between two keys is descended only when
//! some box chunk lies strictly between them.
//!
//! Every walk reads at most what the full walk of the same index reads
//! (`chunks::chunk_records`), with the same checks: block sizes against
//! `max_metadata_block`, counts against `max_index_entries`, visited
//! addresses for cycles, checked arithmetic on file numbers.

use super::chunks::{count_check, read_block};
use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::extensible_array::{SuperBlock, SuperBlockInfo};
use crate::format::fixed_array::{self, bit_set, ChunkEntry, FixedArrayDataBlock};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// A box of chunks in scaled coordinates (inclusive bounds), compared in
/// lexicographic (row-major) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaledBox {
    lo: Vec<u64>,
    hi: Vec<u64>,
}

impl ScaledBox {
    /// The box `lo..=hi` (same rank); `None` when empty (some `lo > hi`) or
    /// the ranks differ.
    pub fn new(lo: Vec<u64>, hi: Vec<u64>) -> Option<Self> {
        if lo.len() != hi.len() || lo.iter().zip(&hi).any(|(l, h)| l > h) {
            return None;
        }
        Some(ScaledBox { lo, hi })
    }

    /// The chunks whose elements intersect the element box `lo..hi`
    /// (exclusive upper bounds) for chunks of `chunk` elements, clamped to
    /// `counts` chunks per dimension when given; `None` when empty.
    pub fn from_elements(
        lo: &[u64],
        hi: &[u64],
        chunk: &[u64],
        counts: Option<&[u64]>,
    ) -> Option<Self> {
        if lo.len() != chunk.len() || hi.len() != chunk.len() {
            return None;
        }
        let mut blo = Vec::with_capacity(chunk.len());
        let mut bhi = Vec::with_capacity(chunk.len());
        for (d, ((&l, &h), &c)) in lo.iter().zip(hi).zip(chunk).enumerate() {
            if h == 0 || l >= h || c == 0 {
                return None;
            }
            let mut top = (h - 1) / c;
            if let Some(counts) = counts {
                top = top.min(counts.get(d)?.checked_sub(1)?);
            }
            blo.push(l / c);
            bhi.push(top);
        }
        ScaledBox::new(blo, bhi)
    }

    /// Rank of the box.
    pub fn rank(&self) -> usize {
        self.lo.len()
    }

    /// Whether `c` lies inside the box.
    pub fn contains(&self, c: &[u64]) -> bool {
        c.len() == self.lo.len()
            && c.iter()
                .zip(self.lo.iter().zip(&self.hi))
                .all(|(x, (l, h))| l <= x && x <= h)
    }

    /// The first `k` coordinates of `p` made as small as possible while
    /// increasing the prefix `p[..k]` (each coordinate already inside the
    /// box) to its successor inside the box; `None` when it is the last.
    fn bump(&self, mut p: Vec<u64>, k: usize) -> Option<Vec<u64>> {
        let j = (0..k)
            .rev()
            .find(|&j| matches!((p.get(j), self.hi.get(j)), (Some(x), Some(h)) if x < h))?;
        let x = p.get_mut(j)?;
        *x = x.checked_add(1)?;
        for (x, &l) in p.iter_mut().zip(&self.lo).skip(j + 1) {
            *x = l;
        }
        Some(p)
    }

    /// The smallest box point `>= c` in lexicographic order.
    pub fn at_or_after(&self, c: &[u64]) -> Option<Vec<u64>> {
        if c.len() != self.lo.len() {
            return None;
        }
        let mut p = c.to_vec();
        let outside = p
            .iter()
            .zip(self.lo.iter().zip(&self.hi))
            .position(|(x, (l, h))| x < l || x > h);
        let Some(k) = outside else {
            return Some(p);
        };
        if p.get(k) < self.lo.get(k) {
            // Same prefix, then the box's lowest corner from here on.
            for (x, &l) in p.iter_mut().zip(&self.lo).skip(k) {
                *x = l;
            }
            return Some(p);
        }
        self.bump(p, k)
    }

    /// The smallest box point `> c` in lexicographic order.
    pub fn after(&self, c: &[u64]) -> Option<Vec<u64>> {
        let p = self.at_or_after(c)?;
        if p != c {
            return Some(p);
        }
        let n = p.len();
        self.bump(p, n)
    }
}

/// A [`ScaledBox`] over a chunk grid numbered linearly (row-major over
/// `counts`, dimension `first` moved to the front).
#[derive(Debug, Clone)]
pub struct GridBox {
    /// Dimension order of the linear numbering.
    order: Vec<usize>,
    /// Chunks per dimension, in `order`.
    counts: Vec<u64>,
    /// Number of chunks in the grid.
    total: u64,
    /// The box clamped to the grid, in `order` (`None`: no grid chunk in it).
    bx: Option<ScaledBox>,
}

impl GridBox {
    /// The box `bx` (scaled coordinates in dataspace order) over a grid of
    /// `counts` chunks per dimension numbered with dimension `first` moved
    /// to the front; the box is clamped to the grid. `None` when the ranks
    /// differ, `first` is out of range or the grid has more than `u64::MAX`
    /// chunks.
    pub fn new(counts: &[u64], first: usize, bx: &ScaledBox) -> Option<Self> {
        let rank = counts.len();
        if bx.rank() != rank || (rank > 0 && first >= rank) {
            return None;
        }
        let order: Vec<usize> = core::iter::once(first)
            .filter(|_| rank > 0)
            .chain((0..rank).filter(|&d| d != first))
            .collect();
        let pick =
            |v: &[u64]| -> Option<Vec<u64>> { order.iter().map(|&d| v.get(d).copied()).collect() };
        let counts = pick(counts)?;
        let total = counts.iter().try_fold(1u64, |n, &c| n.checked_mul(c))?;
        let hi: Vec<u64> = pick(&bx.hi)?
            .iter()
            .zip(&counts)
            .map(|(&h, &c)| h.min(c.saturating_sub(1)))
            .collect();
        let bx = if counts.contains(&0) {
            None
        } else {
            ScaledBox::new(pick(&bx.lo)?, hi)
        };
        Some(GridBox {
            order,
            counts,
            total,
            bx,
        })
    }

    /// Number of chunks in the grid.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of grid chunks inside the box (saturating).
    pub fn count(&self) -> u64 {
        self.bx.as_ref().map_or(0, |bx| {
            bx.lo
                .iter()
                .zip(&bx.hi)
                .map(|(&l, &h)| (h - l).saturating_add(1))
                .fold(1u64, u64::saturating_mul)
        })
    }

    fn coords(&self, mut idx: u64) -> Vec<u64> {
        let mut c = alloc::vec![0u64; self.counts.len()];
        for (x, &n) in c.iter_mut().zip(&self.counts).rev() {
            let n = n.max(1);
            *x = idx % n;
            idx /= n;
        }
        c
    }

    fn linear(&self, c: &[u64]) -> Option<u64> {
        c.iter().zip(&self.counts).try_fold(0u64, |acc, (&x, &n)| {
            if x >= n {
                return None;
            }
            acc.checked_mul(n)?.checked_add(x)
        })
    }

    /// The smallest linear chunk number `>= idx` inside the box and the grid.
    pub fn next(&self, idx: u64) -> Option<u64> {
        if idx >= self.total {
            return None;
        }
        let p = self.bx.as_ref()?.at_or_after(&self.coords(idx))?;
        self.linear(&p)
    }

    /// Whether linear chunk number `idx` lies inside the box and the grid.
    pub fn contains(&self, idx: u64) -> bool {
        idx < self.total
            && self
                .bx
                .as_ref()
                .is_some_and(|bx| bx.contains(&self.coords(idx)))
    }

    /// Dimension order of the numbering (the first dimension moved first).
    pub fn order(&self) -> &[usize] {
        &self.order
    }
}

/// Push the defined `entries` (element `i` has number `first + i`) that lie
/// in `bx`, stopping before `limit`.
fn push_in_box(
    entries: &[ChunkEntry],
    first: u64,
    limit: u64,
    bx: &GridBox,
    ctx: Ctx,
    out: &mut Vec<(u64, ChunkEntry)>,
) -> Result<()> {
    let end = first.saturating_add(entries.len() as u64).min(limit);
    let mut at = bx.next(first);
    while let Some(i) = at.filter(|&i| i < end) {
        let e = usize::try_from(i - first)
            .ok()
            .and_then(|k| entries.get(k))
            .copied();
        if let Some(e) = e.filter(|e| !e.addr.is_undef()) {
            out.push((i, e));
            count_check(out.len() as u64, ctx)?;
        }
        at = bx.next(i + 1);
    }
    Ok(())
}

/// The defined entries of a fixed array whose element numbers lie in `bx`,
/// with their numbers (as [`super::chunks::fixed_array_entries`] gives
/// them, restricted to the box). Reads the header, the data block (whole
/// when unpaged; only its prefix with the page-initialized bitmap when
/// paged) and only the pages holding box elements.
///
/// # Errors
/// `Corrupt`, `Checksum`, `Truncated`, `Limit`.
pub fn fixed_array_entries_in(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    bx: &GridBox,
) -> Result<Vec<(u64, ChunkEntry)>> {
    let hdr = super::chunks::fixed_array_header(st, ctx, addr)?;
    let mut out = Vec::new();
    let Some(db_addr) = hdr.data_block.defined() else {
        return Ok(out);
    };
    // An unpaged data block holds at most one page of elements (libhdf5
    // pages any larger block), so it is small by construction: read whole.
    // A paged one is read up to its bitmap; pages follow it.
    let db_size = hdr.data_block_size(ctx)?;
    let raw = read_block(st, ctx, db_addr, db_size, "fixed array data block")?;
    let db =
        FixedArrayDataBlock::decode(&mut Cursor::new(&raw, st.base() + db_addr.get()), ctx, &hdr)?;
    let limit = hdr.max_entries;
    if hdr.npages() == 0 {
        push_in_box(&db.entries, 0, limit, bx, ctx, &mut out)?;
        return Ok(out);
    }
    let pages_at = db_addr
        .get()
        .checked_add(db_size)
        .ok_or_else(|| Error::corrupt("page address", db_addr.get()))?;
    let pe = hdr.page_entries();
    let mut at = bx.next(0);
    // Each round reads one page holding a box element and moves past it.
    while let Some(i) = at.filter(|&i| i < limit) {
        let page = i / pe;
        let first = page * pe; // <= i
        let n = hdr.page_len(page);
        if bit_set(&db.page_bitmap, page) {
            let page_addr = page
                .checked_mul(hdr.page_size())
                .and_then(|o| o.checked_add(pages_at))
                .ok_or_else(|| Error::corrupt("page address", db_addr.get()))?;
            let psize = n
                .checked_mul(u64::from(hdr.entry_size))
                .and_then(|b| b.checked_add(4))
                .ok_or_else(|| Error::corrupt("page size", db_addr.get()))?;
            let raw = read_block(st, ctx, Addr(page_addr), psize, "fixed array page")?;
            let mut cur = Cursor::new(&raw, st.base() + page_addr);
            let entries =
                fixed_array::decode_page(&mut cur, ctx, hdr.client_id, hdr.entry_size, n)?;
            push_in_box(&entries, first, limit, bx, ctx, &mut out)?;
        }
        at = first.checked_add(pe).and_then(|next| bx.next(next));
    }
    Ok(out)
}

/// The defined entries of an extensible array whose element numbers lie in
/// `bx`, with their numbers (as [`super::chunks::extensible_array_entries`]
/// gives them, restricted to the box). Reads the header and the index block,
/// then, for each box element past the index block's own elements, only the
/// super block and data block holding it (each once) and, for a paged data
/// block, its prefix and the page holding it.
///
/// Element `i >= index_block_elements` is element `j = i -
/// index_block_elements` of the super blocks: super block number `u` holds
/// `ndblks(u)` data blocks of `dblk_nelmts(u)` elements from
/// `start_idx(u)` on ([`crate::format::extensible_array::ExtensibleArrayHeader::super_block_info`]); its
/// data block is `(j - start_idx(u)) / dblk_nelmts(u)`, and within a paged
/// data block its page is the offset in the block divided by the page size.
///
/// # Errors
/// `Corrupt`, `Checksum`, `Truncated`, `Limit`, `Cycle`, `Unsupported`.
pub fn extensible_array_entries_in(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    bx: &GridBox,
) -> Result<Vec<(u64, ChunkEntry)>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let Some((hdr, ib)) = super::chunks::extensible_array_open(st, ctx, addr, &mut seen)? else {
        return Ok(out);
    };
    let limit = hdr.max_index_set;
    let ib_elems = u64::from(hdr.index_block_elements);
    push_in_box(&ib.elements, 0, limit, bx, ctx, &mut out)?;
    let infos = hdr.super_block_info();
    let in_ib = hdr.index_block_super_blocks() as usize;
    let esize = u64::from(hdr.element_size);
    // The super block last read, by number.
    let mut held: Option<(usize, SuperBlock)> = None;
    let mut at = bx.next(ib_elems);
    // Each round handles the data block holding box element `i` (or skips
    // a block never allocated) and moves past it: `at` only grows.
    while let Some(i) = at.filter(|&i| i < limit) {
        let Some(j) = i.checked_sub(ib_elems) else {
            break;
        };
        let end = |f: &SuperBlockInfo| {
            f.start_idx
                .saturating_add(f.ndblks.saturating_mul(f.dblk_nelmts))
        };
        let Some((u, info)) = infos.iter().enumerate().find(|(_, f)| j < end(f)) else {
            break;
        };
        let Some(in_sb) = j.checked_sub(info.start_idx) else {
            break;
        };
        let n = info.dblk_nelmts.max(1);
        let d = in_sb / n;
        // First element number of the data block, and one past its last.
        let dfirst = (d * n)
            .checked_add(info.start_idx)
            .and_then(|x| x.checked_add(ib_elems))
            .ok_or_else(|| {
                Error::corrupt("extensible array element number", hdr.index_block.get())
            })?;
        let dend = dfirst.saturating_add(n);
        let (dblk, bitmap) = if u < in_ib {
            let slot = info
                .start_dblk
                .checked_add(d)
                .and_then(|s| usize::try_from(s).ok());
            let a = slot.and_then(|s| ib.data_blocks.get(s)).copied();
            (a.unwrap_or(Addr::UNDEF), None)
        } else {
            if held.as_ref().map(|(k, _)| *k) != Some(u) {
                held = None;
                let sb_addr = ib.super_blocks.get(u - in_ib).copied();
                let Some(sb_addr) = sb_addr.and_then(Addr::defined) else {
                    // Super block never allocated: skip all of it.
                    at = ib_elems
                        .checked_add(end(info))
                        .and_then(|next| bx.next(next));
                    continue;
                };
                let sb = super::chunks::extensible_array_super_block(
                    st, ctx, &hdr, info, sb_addr, &mut seen,
                )?;
                held = Some((u, sb));
            }
            let sb = held.as_ref().map(|(_, sb)| sb);
            let slot = usize::try_from(d).ok();
            let a = sb
                .zip(slot)
                .and_then(|(sb, s)| sb.data_blocks.get(s))
                .copied();
            let bm = sb.zip(slot).and_then(|(sb, s)| sb.page_bitmaps.get(s));
            (a.unwrap_or(Addr::UNDEF), bm.map(Vec::as_slice))
        };
        let Some(dblk) = dblk.defined() else {
            at = bx.next(dend);
            continue;
        };
        let (db, size) = super::chunks::extensible_array_data_block(
            st,
            ctx,
            &hdr,
            dblk,
            info.dblk_nelmts,
            &mut seen,
        )?;
        let pages = hdr.data_block_pages(info.dblk_nelmts);
        if pages == 0 {
            push_in_box(&db.elements, dfirst, limit, bx, ctx, &mut out)?;
            at = bx.next(dend);
            continue;
        }
        let bitmap = bitmap.ok_or_else(|| {
            Error::unsupported("paged extensible array data block addressed from the index block")
        })?;
        let pe = hdr.page_elements();
        let psize = pe
            .checked_mul(esize)
            .and_then(|b| b.checked_add(4))
            .ok_or_else(|| Error::limit("extensible array page size"))?;
        let pages_at = dblk
            .get()
            .checked_add(size)
            .ok_or_else(|| Error::corrupt("extensible array page address", dblk.get()))?;
        // The pages holding box elements, in order.
        let mut pi = i;
        at = loop {
            let p = (pi - dfirst) / pe; // dfirst <= pi < dend
            let pfirst = dfirst + p * pe; // <= pi
            if p < pages && bit_set(bitmap, p) {
                let paddr = p
                    .checked_mul(psize)
                    .and_then(|o| o.checked_add(pages_at))
                    .ok_or_else(|| Error::corrupt("extensible array page address", dblk.get()))?;
                let raw = read_block(st, ctx, Addr(paddr), psize, "extensible array page")?;
                let mut cur = Cursor::new(&raw, st.base() + paddr);
                let entries =
                    fixed_array::decode_page(&mut cur, ctx, hdr.client_id, hdr.element_size, pe)?;
                push_in_box(&entries, pfirst, limit, bx, ctx, &mut out)?;
            }
            match pfirst.checked_add(pe).and_then(|next| bx.next(next)) {
                Some(next) if next < dend && next < limit => pi = next,
                next => break next,
            }
        };
    }
    Ok(out)
}

/// The scaled offsets of a raw v2 B-tree chunk record (types 10 and 11):
/// its last `8 * rank` bytes. `None` when the record is too short.
fn scaled_key(rec: &[u8], rank: usize) -> Option<Vec<u64>> {
    let n = rank.checked_mul(8)?;
    let start = rec.len().checked_sub(n)?;
    let mut cur = Cursor::new(rec.get(start..)?, 0);
    (0..rank).map(|_| cur.read_u64().ok()).collect()
}

/// The raw records of a v2 B-tree chunk index (record types 10 and 11,
/// keyed by the chunk's scaled offsets compared dimension by dimension)
/// whose chunk lies in `bx`, reading only the nodes whose key range holds a
/// chunk of the box: a child between keys `a` and `b` is read only when the
/// smallest box chunk after `a` comes before `b`. Records whose key cannot be
/// read are kept (their decoding reports the error) and never prune.
///
/// # Errors
/// As [`super::btree_v2::BTreeV2::records`].
pub fn btree_v2_chunk_records_in(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    bx: &ScaledBox,
) -> Result<Vec<Vec<u8>>> {
    let rank = bx.rank();
    let tree = super::btree_v2::BTreeV2::open(st, ctx, addr)?;
    let mut descend = |lo: Option<&[u8]>, hi: Option<&[u8]>| {
        let first = match lo.and_then(|r| scaled_key(r, rank)) {
            None => Some(bx.lo.clone()),
            Some(k) => bx.after(&k),
        };
        match (first, hi.and_then(|r| scaled_key(r, rank))) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(p), Some(h)) => p < h,
        }
    };
    let mut keep = |r: &[u8]| scaled_key(r, rank).is_none_or(|k| bx.contains(&k));
    tree.records_pruned(&mut descend, &mut keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::extensible_array::ExtensibleArrayHeader;
    use crate::format::fixed_array::FixedArrayHeader;

    /// All box points of `bx` inside `0..n` per dimension, lexicographically.
    fn brute(bx: &ScaledBox, n: u64, rank: usize) -> Vec<Vec<u64>> {
        let total = n.pow(rank as u32);
        let mut v = Vec::new();
        for i in 0..total {
            let mut c = alloc::vec![0; rank];
            let mut x = i;
            for d in (0..rank).rev() {
                c[d] = x % n;
                x /= n;
            }
            if bx.contains(&c) {
                v.push(c);
            }
        }
        v
    }

    #[test]
    fn successor_matches_brute_force() {
        let n = 5u64;
        for rank in 1..=3usize {
            let total = n.pow(rank as u32);
            // A handful of boxes per rank.
            for seed in 0..40u64 {
                let mut lo = Vec::new();
                let mut hi = Vec::new();
                for d in 0..rank as u64 {
                    let a = (seed * 7 + d * 3) % n;
                    let b = (seed * 11 + d * 5 + 1) % n;
                    lo.push(a.min(b));
                    hi.push(a.max(b));
                }
                let bx = ScaledBox::new(lo, hi).unwrap();
                let pts = brute(&bx, n, rank);
                for i in 0..total {
                    let mut c = alloc::vec![0; rank];
                    let mut x = i;
                    for d in (0..rank).rev() {
                        c[d] = x % n;
                        x /= n;
                    }
                    let ge = pts.iter().find(|p| p.as_slice() >= c.as_slice());
                    let gt = pts.iter().find(|p| p.as_slice() > c.as_slice());
                    // Points past the grid (coordinate n) are never box points here.
                    assert_eq!(bx.at_or_after(&c).as_ref(), ge, "{bx:?} {c:?}");
                    assert_eq!(bx.after(&c).as_ref(), gt, "{bx:?} {c:?}");
                }
            }
        }
    }

    #[test]
    fn grid_box_numbers_swizzled() {
        // Grid 3 x 4, dimension 1 first: number = c1 * 3 + c0.
        let bx = ScaledBox::new(alloc::vec![1, 2], alloc::vec![2, 3]).unwrap();
        let g = GridBox::new(&[3, 4], 1, &bx).unwrap();
        let got: Vec<u64> = core::iter::successors(g.next(0), |&i| g.next(i + 1)).collect();
        // (c0, c1) in {1,2} x {2,3}: numbers 2*3+1, 2*3+2, 3*3+1, 3*3+2.
        assert_eq!(got, [7, 8, 10, 11]);
        assert_eq!(g.count(), 4);
        // Row-major: number = c0 * 4 + c1.
        let g = GridBox::new(&[3, 4], 0, &bx).unwrap();
        let got: Vec<u64> = core::iter::successors(g.next(0), |&i| g.next(i + 1)).collect();
        assert_eq!(got, [6, 7, 10, 11]);
        // A box reaching past the grid stops at the grid's end.
        let bx = ScaledBox::new(alloc::vec![2, 3], alloc::vec![9, 9]).unwrap();
        let g = GridBox::new(&[3, 4], 0, &bx).unwrap();
        assert_eq!(g.next(0), Some(11));
        assert_eq!(g.next(12), None);
        // Overflowing grids are refused.
        assert!(GridBox::new(&[u64::MAX, 2], 0, &bx).is_none());
    }

    #[test]
    fn element_box_to_chunks() {
        let b = ScaledBox::from_elements(&[1000, 2000], &[1010, 2010], &[64, 64], None).unwrap();
        assert_eq!(
            (b.lo.as_slice(), b.hi.as_slice()),
            (&[15, 31][..], &[15, 31][..])
        );
        assert!(ScaledBox::from_elements(&[0, 0], &[0, 5], &[4, 4], None).is_none());
        let b = ScaledBox::from_elements(&[0, 0], &[100, 5], &[4, 4], Some(&[3, 3])).unwrap();
        assert_eq!(b.hi, [2, 1]);
    }

    fn ctx() -> Ctx {
        Ctx {
            sizes: crate::Sizes {
                offsets: 8,
                lengths: 8,
            },
            limits: crate::Limits::default(),
        }
    }

    /// Element `i`'s chunk address in the built arrays.
    fn chunk_addr(i: u64) -> u64 {
        (i + 1) * 1000
    }

    /// Boxes over a `rows x cols` grid: single chunks, rows, columns,
    /// blocks, the whole grid, and boxes reaching past it.
    fn boxes(rows: u64, cols: u64) -> Vec<ScaledBox> {
        let mut v = Vec::new();
        for &(r0, r1, c0, c1) in &[
            (0, 0, 0, 0),
            (3, 3, 5, 5),
            (rows - 1, rows - 1, cols - 1, cols - 1),
            (0, rows - 1, 0, cols - 1),
            (10, 12, 0, cols - 1),
            (0, rows - 1, 2, 2),
            (rows / 2, rows / 2 + 40, 1, 3),
            (rows - 5, rows + 100, cols - 2, cols + 7),
            (1000, 1300, 7, 9),
            (4000, 4100, 0, 0),
        ] {
            if let Some(b) = ScaledBox::new(alloc::vec![r0, c0], alloc::vec![r1, c1]) {
                v.push(b);
            }
        }
        v
    }

    type PrunedWalk<'a> = dyn Fn(&GridBox) -> Result<Vec<(u64, ChunkEntry)>> + 'a;

    /// The pruned walk gives exactly the full walk's entries inside the box.
    fn check_against_full(
        full: &[(u64, ChunkEntry)],
        pruned: &PrunedWalk<'_>,
        counts: &[u64],
        first: usize,
    ) {
        let (rows, cols) = (counts[first], counts[1 - first]);
        for bx in boxes(rows, cols) {
            // Boxes are written (row, col) over the numbering order.
            let bx = if first == 0 {
                bx
            } else {
                ScaledBox::new(
                    alloc::vec![bx.lo[1], bx.lo[0]],
                    alloc::vec![bx.hi[1], bx.hi[0]],
                )
                .unwrap()
            };
            let g = GridBox::new(counts, first, &bx).unwrap();
            let want: Vec<(u64, ChunkEntry)> = full
                .iter()
                .filter(|(i, _)| g.contains(*i))
                .copied()
                .collect();
            let got = pruned(&g).unwrap();
            assert_eq!(got, want, "{bx:?} over {counts:?} first {first}");
        }
    }

    #[test]
    fn extensible_array_pruned_equals_full_in_box() {
        use crate::format::extensible_array::build_array;
        let ctx = ctx();
        let n = 70_000u64; // past 65524: paged data blocks of 2048 elements
        let present = |i: u64| i % 7 != 3 && !(20_000..60_000).contains(&i) && i != 66_000;
        let mut entries = Vec::new();
        for i in 0..n {
            entries.extend_from_slice(&chunk_addr(i).to_le_bytes());
        }
        let template = ExtensibleArrayHeader {
            client_id: 0,
            element_size: 8,
            max_nelmts_bits: 32,
            index_block_elements: 4,
            data_block_min_elements: 16,
            super_block_min_pointers: 4,
            page_bits: 10,
            num_super_blocks: 0,
            super_blocks_size: 0,
            num_data_blocks: 0,
            data_blocks_size: 0,
            max_index_set: 0,
            num_elements: 0,
            index_block: Addr::UNDEF,
        };
        let hsize = ExtensibleArrayHeader::encoded_size(ctx) as u64;
        let mut next = hsize;
        let built = build_array(
            &template,
            Addr(0),
            &entries,
            &u64::MAX.to_le_bytes(),
            &present,
            ctx,
            &mut |size| {
                let a = next;
                next += size;
                Addr(a)
            },
        )
        .unwrap();
        let mut file = alloc::vec![0u8; next as usize];
        let mut enc = crate::codec::Encoder::new();
        built.header.encode(&mut enc, ctx);
        file[..hsize as usize].copy_from_slice(&enc.into_vec());
        for (a, bytes) in &built.blocks {
            file[a.get() as usize..a.get() as usize + bytes.len()].copy_from_slice(bytes);
        }
        let st = Storage::new(alloc::sync::Arc::new(file));
        let full = super::super::chunks::extensible_array_entries(&st, ctx, Addr(0)).unwrap();
        assert_eq!(
            full.len() as u64,
            (0..n).filter(|&i| present(i)).count() as u64
        );
        assert!(full.iter().all(|(i, e)| e.addr.get() == chunk_addr(*i)));
        let pruned = |g: &GridBox| extensible_array_entries_in(&st, ctx, Addr(0), g);
        // 70000 = 4375 x 16 chunks; numbered row-major, or with the second
        // dimension (the unlimited one) first.
        check_against_full(&full, &pruned, &[4375, 16], 0);
        check_against_full(&full, &pruned, &[16, 4375], 1);
    }

    #[test]
    fn fixed_array_pruned_equals_full_in_box() {
        use crate::format::fixed_array::encode_data_block_paged;
        let ctx = ctx();
        for (n, rows) in [(5000u64, 250u64), (600, 30)] {
            let cols = n / rows;
            let mut entries = Vec::new();
            for i in 0..n {
                let a = if i % 5 == 2 { u64::MAX } else { chunk_addr(i) };
                entries.extend_from_slice(&a.to_le_bytes());
            }
            let hsize = FixedArrayHeader::encoded_size(ctx);
            let hdr = FixedArrayHeader {
                client_id: 0,
                entry_size: 8,
                page_bits: 10,
                max_entries: n,
                data_block: Addr(hsize as u64),
            };
            let mut enc = crate::codec::Encoder::new();
            hdr.encode(&mut enc, ctx);
            encode_data_block_paged(&mut enc, ctx, &hdr, Addr(0), &entries).unwrap();
            let st = Storage::new(alloc::sync::Arc::new(enc.into_vec()));
            let full = super::super::chunks::fixed_array_entries(&st, ctx, Addr(0)).unwrap();
            assert_eq!(full.len() as u64, n - n / 5);
            let pruned = |g: &GridBox| fixed_array_entries_in(&st, ctx, Addr(0), g);
            check_against_full(&full, &pruned, &[rows, cols], 0);
        }
    }

    #[test]
    fn btree_v2_pruned_equals_full_in_box() {
        use crate::format::btree_v2::{build_tree, BTreeV2Params};
        let ctx = ctx();
        let (rows, cols) = (40u64, 50u64);
        // Type 10 records (address, then scaled offsets), in key order;
        // every seventh chunk missing.
        let mut recs = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                if (r * cols + c) % 7 == 5 {
                    continue;
                }
                let mut v = chunk_addr(r * cols + c).to_le_bytes().to_vec();
                v.extend_from_slice(&r.to_le_bytes());
                v.extend_from_slice(&c.to_le_bytes());
                recs.push(v);
            }
        }
        let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
        let params = BTreeV2Params {
            record_type: 10,
            node_size: 256,
            record_size: 24,
            split_percent: 100,
            merge_percent: 40,
        };
        let hsize = crate::format::btree_v2::BTreeV2Header::encoded_len(ctx.sizes) as u64;
        let mut next = hsize;
        let built = build_tree(params, &refs, ctx.sizes, &mut || {
            let a = next;
            next += 256;
            Addr(a)
        })
        .unwrap();
        assert!(built.header.depth >= 2, "depth {}", built.header.depth);
        let mut file = alloc::vec![0u8; next as usize];
        let mut enc = crate::codec::Encoder::new();
        built.header.encode(&mut enc, ctx.sizes);
        file[..hsize as usize].copy_from_slice(&enc.into_vec());
        for (a, bytes) in &built.nodes {
            file[a.get() as usize..a.get() as usize + bytes.len()].copy_from_slice(bytes);
        }
        let st = Storage::new(alloc::sync::Arc::new(file));
        let full = super::super::btree_v2::BTreeV2::open(&st, ctx, Addr(0))
            .unwrap()
            .records()
            .unwrap();
        assert_eq!(full, recs);
        for bx in boxes(rows, cols) {
            let want: Vec<Vec<u8>> = full
                .iter()
                .filter(|r| bx.contains(&scaled_key(r, 2).unwrap()))
                .cloned()
                .collect();
            let got = btree_v2_chunk_records_in(&st, ctx, Addr(0), &bx).unwrap();
            assert_eq!(got, want, "{bx:?}");
        }
    }
}
