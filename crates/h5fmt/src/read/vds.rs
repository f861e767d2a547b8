//! Reading virtual datasets (layout class 3).
//!
//! The mapping list ([`VdsBlock`]) is read from the global heap. Every
//! mapping copies the elements of a source selection of a source dataset, in
//! the selection's row-major order, onto the elements of a selection of the
//! virtual dataset, in its row-major order; everything not mapped (or mapped
//! from a source that cannot be found) reads as the virtual dataset's fill
//! value, as in libhdf5.
//!
//! Unlimited mappings follow libhdf5's default "last available" view:
//! - both selections unlimited in one dimension: the source selection is
//!   clipped to the source's current extent, the virtual selection to the same
//!   number of elements;
//! - virtual selection unlimited, source selection limited ("printf"
//!   mapping): block `j` of the virtual selection comes from the source whose
//!   file and dataset names have `%b` replaced by `j`, for `j = 0, 1, …` until
//!   the first missing source.
//!
//! The virtual dataset's extent in an unlimited dimension is then, as libhdf5
//! computes it on open, the largest extent any mapping reaches (at least the
//! extent the limited mappings need) — see [`virtual_dims`]; it can differ
//! from the dataspace stored in the file.

use crate::data::hyperslab::{Selection as Slice, SliceDim};
use crate::data::HeapResolver;
use crate::error::{Error, ErrorKind, Result};
use crate::format::message::Layout;
use crate::format::selection::{RegularDim, Selection, UNLIMITED};
use crate::format::vds::{VdsBlock, VdsMapping, SAME_FILE};
use crate::read::global_heap::GlobalHeap;
use crate::read::{Dataset, File};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Read the whole virtual dataset `ds`: its raw bytes (file element layout),
/// row-major over the extent [`virtual_dims`] returns.
///
/// # Errors
/// `Usage` when `ds` is not virtual; decode errors of the mapping block;
/// `Unsupported` when a source's datatype differs from the virtual one (no
/// conversion is done) or for mapping forms libhdf5 does not define;
/// `Limit` when sources nest deeper than `Limits::max_link_hops` or the data
/// exceeds `Limits::max_read_bytes`; errors of reading the sources (a missing
/// source file or dataset is not an error: it reads as fill).
pub fn read_virtual(ds: &Dataset) -> Result<Vec<u8>> {
    Ok(read_depth(ds, 0)?.1)
}

/// The current extent of the virtual dataset `ds` as libhdf5 computes it on
/// open: the stored dimensions, except that dimensions in which some mapping
/// is unlimited take the extent the sources currently fill.
///
/// # Errors
/// As [`read_virtual`] (the sources of unlimited mappings are opened).
pub fn virtual_dims(ds: &Dataset) -> Result<Vec<u64>> {
    Ok(plan(ds, 0)?.dims)
}

/// The decoded mapping list of the virtual dataset `ds` (read from the
/// global heap object its layout message names).
///
/// # Errors
/// `Usage` when `ds` is not virtual; errors reading the heap object or
/// decoding the block.
pub fn mapping_block(ds: &Dataset) -> Result<VdsBlock> {
    let file = ds.file();
    let ctx = file.ctx();
    let Layout::Virtual { heap_addr, index } = *ds.layout() else {
        return Err(Error::usage("not a virtual dataset"));
    };
    let heap = GlobalHeap::new(file.storage(), ctx);
    let bytes = heap.global_heap_object(heap_addr, index)?;
    let base = file.storage().base().saturating_add(heap_addr.0);
    VdsBlock::decode(&mut crate::codec::Cursor::new(&bytes, base), ctx)
}

/// A source opened for reading.
enum Source {
    /// A dataset stored in a file.
    Plain(Box<Dataset>),
    /// A virtual source, already read: its extent and bytes.
    Virtual(Vec<u64>, Vec<u8>),
}

impl Source {
    fn dims(&self) -> &[u64] {
        match self {
            Source::Plain(d) => d.shape(),
            Source::Virtual(dims, _) => dims,
        }
    }
}

/// One mapping ready to copy: finite selections, source opened (or missing).
struct Item {
    source: Option<Source>,
    src: Norm,
    virt: Norm,
}

/// The virtual side of a mapping: normalized now, or once the extent is known.
enum Virt<'a> {
    Ready(Norm),
    Later(&'a VdsMapping, Option<(usize, u64)>),
}

struct Plan {
    dims: Vec<u64>,
    items: Vec<Item>,
}

/// A finite selection, normalized for row-major iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Norm {
    /// The cartesian product of per-dimension sorted, disjoint intervals
    /// `(start, len)` (hyperslabs and "all").
    Grid(Vec<Vec<(u64, u64)>>),
    /// Runs along the last dimension, in selection order: start coordinates
    /// and length (irregular hyperslabs, points, none).
    Rows(Vec<(Vec<u64>, u64)>),
}

fn corrupt(msg: impl Into<String>) -> Error {
    Error::corrupt(msg, 0)
}

fn overflow() -> Error {
    corrupt("virtual dataset selection arithmetic overflows")
}

fn read_depth(ds: &Dataset, depth: usize) -> Result<(Vec<u64>, Vec<u8>)> {
    let p = plan(ds, depth)?;
    let elem = usize::try_from(ds.dtype().size()).map_err(|_| Error::limit("element too large"))?;
    let ctx = ds.file().ctx();
    let count = p
        .dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::limit("element count overflows"))?;
    let total = count
        .checked_mul(elem as u64)
        .ok_or_else(|| Error::limit("dataset size overflows"))?;
    if total > ctx.limits.max_read_bytes {
        return Err(Error::limit(format!(
            "virtual dataset of {total} bytes exceeds the read limit of {} bytes",
            ctx.limits.max_read_bytes
        )));
    }
    let fill = ds.fill_bytes();
    let mut out = repeat(&fill, count)?;
    let zeros = vec![0u64; p.dims.len()];
    for item in &p.items {
        let Some(src) = &item.source else { continue };
        let Some((lo, hi)) = item.src.bounds()? else {
            continue;
        };
        let buf = read_box(src, &lo, &hi, &fill, elem, ctx.limits.max_read_bytes)?;
        let shape: Vec<u64> = hi.iter().zip(&lo).map(|(h, l)| h - l).collect();
        let mut s = RunIter::new(&item.src, &lo, &shape)?;
        let mut v = RunIter::new(&item.virt, &zeros, &p.dims)?;
        copy_paired(&buf, &mut s, &mut out, &mut v, elem)?;
    }
    Ok((p.dims, out))
}

fn repeat(fill: &[u8], count: u64) -> Result<Vec<u8>> {
    let n = usize::try_from(count).map_err(|_| Error::limit("dataset larger than memory"))?;
    let bytes = n
        .checked_mul(fill.len())
        .ok_or_else(|| Error::limit("dataset larger than memory"))?;
    if fill.iter().all(|&b| b == 0) {
        return crate::io::large_buffer(bytes);
    }
    let mut v = crate::io::try_vec(bytes, "a virtual dataset")?;
    for _ in 0..n {
        v.extend_from_slice(fill);
    }
    Ok(v)
}

/// Copy element runs of `src` (offsets from `s`) to runs of `dst` (from `d`),
/// pairing elements in order, until either side runs out.
fn copy_paired(
    src: &[u8],
    s: &mut RunIter<'_>,
    dst: &mut [u8],
    d: &mut RunIter<'_>,
    elem: usize,
) -> Result<()> {
    let short = || corrupt("virtual dataset copy outside its buffer");
    let mut a: Option<(u64, u64)> = None;
    let mut b: Option<(u64, u64)> = None;
    loop {
        if a.is_none() {
            a = s.next_run()?;
        }
        if b.is_none() {
            b = d.next_run()?;
        }
        let (Some((so, sl)), Some((dof, dl))) = (a, b) else {
            return Ok(());
        };
        let n = sl.min(dl);
        let bytes = |x: u64| {
            usize::try_from(x)
                .ok()
                .and_then(|x| x.checked_mul(elem))
                .ok_or_else(short)
        };
        let (so_b, dof_b, n_b) = (bytes(so)?, bytes(dof)?, bytes(n)?);
        let from = src.get(so_b..so_b + n_b).ok_or_else(short)?;
        dst.get_mut(dof_b..dof_b + n_b)
            .ok_or_else(short)?
            .copy_from_slice(from);
        a = (sl > n).then(|| (so + n, sl - n));
        b = (dl > n).then(|| (dof + n, dl - n));
    }
}

/// Row-major runs `(linear offset, length)` of a [`Norm`] within a box of
/// `shape` whose first element has coordinates `origin`.
struct RunIter<'a> {
    norm: &'a Norm,
    origin: &'a [u64],
    shape: &'a [u64],
    strides: Vec<u64>,
    /// Grid: per outer dimension (interval index, offset in interval).
    counter: Vec<(usize, u64)>,
    /// Grid: interval index in the last dimension; Rows: row index.
    pos: usize,
    done: bool,
}

impl<'a> RunIter<'a> {
    fn new(norm: &'a Norm, origin: &'a [u64], shape: &'a [u64]) -> Result<Self> {
        let rank = shape.len();
        let mut strides = vec![1u64; rank];
        for i in (0..rank.saturating_sub(1)).rev() {
            let next = strides.get(i + 1).copied().unwrap_or(1);
            let dim = shape.get(i + 1).copied().unwrap_or(1);
            if let Some(s) = strides.get_mut(i) {
                *s = next.checked_mul(dim).ok_or_else(overflow)?;
            }
        }
        let done = match norm {
            Norm::Grid(dims) => {
                if dims.len() != rank {
                    return Err(corrupt(format!(
                        "selection of rank {} for a rank-{rank} dataspace",
                        dims.len()
                    )));
                }
                dims.iter().any(Vec::is_empty)
            }
            Norm::Rows(rows) => rows.is_empty(),
        };
        Ok(RunIter {
            norm,
            origin,
            shape,
            strides,
            counter: vec![(0, 0); rank.saturating_sub(1)],
            pos: 0,
            done,
        })
    }

    /// Linear offset of `coords` (the last one being `last`) in the box.
    fn linear(&self, coords: impl Iterator<Item = u64>, len: u64) -> Result<u64> {
        let mut off = 0u64;
        for (i, c) in coords.enumerate() {
            let o = self.origin.get(i).copied().unwrap_or(0);
            let n = self.shape.get(i).copied().unwrap_or(0);
            let is_last = i + 1 == self.shape.len();
            let r = c.checked_sub(o).filter(|&r| {
                if is_last {
                    r.checked_add(len).is_some_and(|e| e <= n)
                } else {
                    r < n
                }
            });
            let r = r.ok_or_else(|| {
                corrupt(format!(
                    "virtual dataset selection reaches coordinate {c} outside extent {n}"
                ))
            })?;
            let st = self.strides.get(i).copied().unwrap_or(1);
            off = r
                .checked_mul(st)
                .and_then(|x| x.checked_add(off))
                .ok_or_else(overflow)?;
        }
        Ok(off)
    }

    fn next_run(&mut self) -> Result<Option<(u64, u64)>> {
        if self.done {
            return Ok(None);
        }
        match self.norm {
            Norm::Rows(rows) => {
                let Some((c, len)) = rows.get(self.pos) else {
                    self.done = true;
                    return Ok(None);
                };
                self.pos += 1;
                if c.len() != self.shape.len() {
                    return Err(corrupt("selection rank differs from the dataspace rank"));
                }
                let off = self.linear(c.iter().copied(), *len)?;
                Ok(Some((off, *len)))
            }
            Norm::Grid(dims) => {
                let rank = dims.len();
                if rank == 0 {
                    self.done = true;
                    return Ok(Some((0, 1)));
                }
                let mut coords = Vec::with_capacity(rank);
                for (k, &(iv, o)) in self.counter.iter().enumerate() {
                    let (s, _) = dims
                        .get(k)
                        .and_then(|d| d.get(iv))
                        .copied()
                        .ok_or_else(overflow)?;
                    coords.push(s.checked_add(o).ok_or_else(overflow)?);
                }
                let last = dims.get(rank - 1).ok_or_else(overflow)?;
                let (s, len) = last.get(self.pos).copied().ok_or_else(overflow)?;
                coords.push(s);
                let off = self.linear(coords.into_iter(), len)?;
                // advance
                self.pos += 1;
                if self.pos >= last.len() {
                    self.pos = 0;
                    let mut k = rank - 1;
                    loop {
                        if k == 0 {
                            self.done = true;
                            break;
                        }
                        k -= 1;
                        let ivs = dims.get(k).ok_or_else(overflow)?;
                        let Some((iv, o)) = self.counter.get_mut(k) else {
                            return Err(overflow());
                        };
                        let ilen = ivs.get(*iv).map_or(0, |x| x.1);
                        *o += 1;
                        if *o < ilen {
                            break;
                        }
                        *o = 0;
                        *iv += 1;
                        if *iv < ivs.len() {
                            break;
                        }
                        *iv = 0;
                    }
                }
                Ok(Some((off, len)))
            }
        }
    }
}

impl Norm {
    /// Bounding box `(low, high exclusive)`; `None` when nothing is selected.
    fn bounds(&self) -> Result<Option<(Vec<u64>, Vec<u64>)>> {
        match self {
            Norm::Grid(dims) => {
                if dims.iter().any(Vec::is_empty) {
                    return Ok(None);
                }
                let mut lo = Vec::with_capacity(dims.len());
                let mut hi = Vec::with_capacity(dims.len());
                for d in dims {
                    let (Some(f), Some(l)) = (d.first(), d.last()) else {
                        return Ok(None);
                    };
                    lo.push(f.0);
                    hi.push(l.0.checked_add(l.1).ok_or_else(overflow)?);
                }
                Ok(Some((lo, hi)))
            }
            Norm::Rows(rows) => {
                let Some((first, _)) = rows.first() else {
                    return Ok(None);
                };
                let rank = first.len();
                let mut lo = vec![u64::MAX; rank];
                let mut hi = vec![0u64; rank];
                for (c, len) in rows {
                    if c.len() != rank {
                        return Err(corrupt("selection rows of different ranks"));
                    }
                    for (i, &x) in c.iter().enumerate() {
                        let end = if i + 1 == rank {
                            x.checked_add(*len)
                        } else {
                            x.checked_add(1)
                        }
                        .ok_or_else(overflow)?;
                        if let (Some(l), Some(h)) = (lo.get_mut(i), hi.get_mut(i)) {
                            *l = (*l).min(x);
                            *h = (*h).max(end);
                        }
                    }
                }
                Ok(Some((lo, hi)))
            }
        }
    }
}

/// The selected coordinates of one regular dimension below `clip`
/// (exclusive), as sorted disjoint intervals; at most `max` of them.
fn regular_intervals(d: &RegularDim, clip: u64, max: u64) -> Result<Vec<(u64, u64)>> {
    if d.count == 0 || d.block == 0 || d.start >= clip {
        return Ok(Vec::new());
    }
    let room = clip - d.start;
    if d.block == UNLIMITED {
        if d.count != 1 || clip == u64::MAX {
            return Err(Error::unsupported(
                "unlimited hyperslab block with a count other than 1",
            ));
        }
        return Ok(vec![(d.start, room)]);
    }
    let count = if d.count == UNLIMITED {
        if clip == u64::MAX {
            return Err(Error::unsupported("unlimited selection without an extent"));
        }
        room.div_ceil(d.stride.max(1))
    } else {
        d.count
    };
    if count > 1 && d.stride < d.block {
        return Err(corrupt("hyperslab stride smaller than its block"));
    }
    if count == 1 || d.stride == d.block {
        let len = count.checked_mul(d.block).ok_or_else(overflow)?.min(room);
        return Ok(vec![(d.start, len)]);
    }
    if count > max {
        return Err(Error::limit(format!(
            "hyperslab of {count} blocks in a dimension"
        )));
    }
    let mut v = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for k in 0..count {
        let s = k
            .checked_mul(d.stride)
            .and_then(|x| x.checked_add(d.start))
            .ok_or_else(overflow)?;
        if s >= clip {
            break;
        }
        v.push((s, d.block.min(clip - s)));
    }
    Ok(v)
}

/// Which dimension of a regular hyperslab is unlimited (at most one).
fn unlimited_dim(sel: &Selection) -> Result<Option<usize>> {
    let Selection::Regular(dims) = sel else {
        return Ok(None);
    };
    let mut found = None;
    for (i, d) in dims.iter().enumerate() {
        if d.count == UNLIMITED || d.block == UNLIMITED {
            if found.is_some() {
                return Err(corrupt("selection unlimited in more than one dimension"));
            }
            found = Some(i);
        }
    }
    Ok(found)
}

/// Normalize a finite selection against `extent` (used for "all"); the
/// unlimited dimension, if any, is clipped at `clip`.
fn normalize(
    sel: &Selection,
    extent: &[u64],
    clip: Option<(usize, u64)>,
    max: u64,
) -> Result<Norm> {
    let rank_ok = |r: usize| {
        if r == extent.len() {
            Ok(())
        } else {
            Err(corrupt(format!(
                "selection of rank {r} for a rank-{} dataspace",
                extent.len()
            )))
        }
    };
    match sel {
        Selection::None => Ok(Norm::Rows(Vec::new())),
        Selection::All => Ok(Norm::Grid(
            extent
                .iter()
                .map(|&n| if n == 0 { Vec::new() } else { vec![(0, n)] })
                .collect(),
        )),
        Selection::Regular(dims) => {
            rank_ok(dims.len())?;
            let mut out = Vec::with_capacity(dims.len());
            for (i, d) in dims.iter().enumerate() {
                let c = match clip {
                    Some((ci, c)) if ci == i => c,
                    _ => u64::MAX,
                };
                out.push(regular_intervals(d, c, max)?);
            }
            Ok(Norm::Grid(out))
        }
        Selection::Blocks { rank, corners } => {
            rank_ok(*rank)?;
            let rank = *rank;
            let mut rows: Vec<(Vec<u64>, u64)> = Vec::new();
            for b in corners.chunks_exact(2 * rank.max(1)) {
                let (lo, hi) = b.split_at(rank);
                let (Some(&l_last), Some(&h_last)) = (lo.last(), hi.last()) else {
                    continue;
                };
                let len = h_last
                    .checked_sub(l_last)
                    .and_then(|x| x.checked_add(1))
                    .ok_or_else(overflow)?;
                // Enumerate the outer coordinates of the block.
                let outer_lo = lo.get(..rank - 1).unwrap_or(&[]);
                let outer_hi = hi.get(..rank - 1).unwrap_or(&[]);
                let mut c: Vec<u64> = outer_lo.to_vec();
                loop {
                    if rows.len() as u64 >= max {
                        return Err(Error::limit("too many rows in a hyperslab selection"));
                    }
                    let mut coords = c.clone();
                    coords.push(l_last);
                    rows.push((coords, len));
                    // odometer
                    let mut k = c.len();
                    loop {
                        if k == 0 {
                            break;
                        }
                        k -= 1;
                        let (Some(x), Some(&l), Some(&h)) =
                            (c.get_mut(k), outer_lo.get(k), outer_hi.get(k))
                        else {
                            break;
                        };
                        if *x < h {
                            *x += 1;
                            k = usize::MAX;
                            break;
                        }
                        *x = l;
                    }
                    if k != usize::MAX {
                        break;
                    }
                }
            }
            // Row-major order of the union: sort, then merge overlapping runs.
            rows.sort();
            let mut merged: Vec<(Vec<u64>, u64)> = Vec::with_capacity(rows.len());
            for (c, len) in rows {
                if let Some((pc, plen)) = merged.last_mut() {
                    let same_row = pc.len() == c.len()
                        && pc
                            .iter()
                            .zip(&c)
                            .take(c.len().saturating_sub(1))
                            .all(|(a, b)| a == b);
                    let (ps, s) = (
                        pc.last().copied().unwrap_or(0),
                        c.last().copied().unwrap_or(0),
                    );
                    let pend = ps.saturating_add(*plen);
                    if same_row && s <= pend {
                        *plen = pend.max(s.saturating_add(len)) - ps;
                        continue;
                    }
                }
                merged.push((c, len));
            }
            Ok(Norm::Rows(merged))
        }
        Selection::Points { rank, coords } => {
            rank_ok(*rank)?;
            let rows = coords
                .chunks_exact((*rank).max(1))
                .map(|p| (p.to_vec(), 1u64))
                .collect();
            Ok(Norm::Rows(rows))
        }
    }
}

/// Number of coordinates the regular dimension `d` selects below `clip`.
fn count_below(d: &RegularDim, clip: u64) -> Result<u64> {
    if d.count == 0 || d.block == 0 || d.start >= clip {
        return Ok(0);
    }
    let room = clip - d.start;
    if d.block == UNLIMITED {
        return Ok(room);
    }
    let stride = d.stride.max(1);
    let full = room / stride;
    let rem = room % stride;
    let blocks = if d.count == UNLIMITED {
        full
    } else {
        full.min(d.count)
    };
    let mut n = blocks
        .checked_mul(d.block.min(stride))
        .ok_or_else(overflow)?;
    if d.count == UNLIMITED || full < d.count {
        n = n.checked_add(rem.min(d.block)).ok_or_else(overflow)?;
    }
    if d.count != UNLIMITED && d.count == 1 {
        n = d.block.min(room);
    }
    Ok(n)
}

/// The smallest extent at which the (unlimited) regular dimension `d` has
/// selected `n` coordinates.
fn extent_for(d: &RegularDim, n: u64) -> Result<u64> {
    if n == 0 {
        return Ok(0);
    }
    if d.block == UNLIMITED {
        return d.start.checked_add(n).ok_or_else(overflow);
    }
    let b = d.block.max(1);
    let (q, r) = (n / b, n % b);
    let x = if r == 0 {
        (q - 1)
            .checked_mul(d.stride)
            .and_then(|x| x.checked_add(d.start))
            .and_then(|x| x.checked_add(b))
    } else {
        q.checked_mul(d.stride)
            .and_then(|x| x.checked_add(d.start))
            .and_then(|x| x.checked_add(r))
    };
    x.ok_or_else(overflow)
}

/// Replace `%b` with `block` and `%%` with `%` (other `%` sequences are kept).
fn substitute(name: &str, block: Option<u64>) -> (String, bool) {
    let mut out = String::with_capacity(name.len());
    let mut subs = false;
    let mut it = name.chars().peekable();
    while let Some(ch) = it.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        match it.peek() {
            Some('%') => {
                it.next();
                out.push('%');
            }
            Some('b') => {
                it.next();
                subs = true;
                match block {
                    Some(b) => out.push_str(&format!("{b}")),
                    None => out.push_str("%b"),
                }
            }
            _ => out.push('%'),
        }
    }
    (out, subs)
}

/// Files opened during one read, by the name the mapping gives.
struct Opener<'a> {
    vds: &'a Dataset,
    files: Vec<(String, Option<File>)>,
}

impl Opener<'_> {
    /// The source dataset named by `file` and `dataset`, or `None` when it
    /// cannot be found.
    fn open(&mut self, file: &str, dataset: &str) -> Result<Option<Dataset>> {
        let f = if file == SAME_FILE {
            Some(self.vds.file().clone())
        } else if let Some((_, f)) = self.files.iter().find(|(n, _)| n == file) {
            f.clone()
        } else {
            let f = open_sibling(self.vds.file(), file)?;
            self.files.push((String::from(file), f.clone()));
            f
        };
        let Some(f) = f else { return Ok(None) };
        match f.object(dataset) {
            Ok(crate::read::Object::Dataset(d)) => Ok(Some(*d)),
            Ok(_) => Ok(None),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Usage) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Open the file `name` as libhdf5 looks for VDS sources and external link
/// targets: relative names in the directory of `from`, then as given
/// (relative to the working directory); absolute names as given, then their
/// last component in the directory of `from`. `Ok(None)` when none exists.
///
/// # Errors
/// Decode errors of a file that exists; `Unsupported` without `std`.
#[cfg(feature = "std")]
pub(crate) fn open_sibling(from: &File, name: &str) -> Result<Option<File>> {
    use std::path::{Path, PathBuf};
    let p = Path::new(name);
    let mut candidates: Vec<PathBuf> = Vec::new();
    if p.is_absolute() {
        candidates.push(p.to_path_buf());
        if let (Some(dir), Some(base)) = (from.dir(), p.file_name()) {
            candidates.push(dir.join(base));
        }
    } else {
        if let Some(dir) = from.dir() {
            candidates.push(dir.join(p));
        }
        candidates.push(p.to_path_buf());
    }
    for c in candidates {
        if c.is_file() {
            return File::open_with_limits(&c, from.ctx().limits).map(Some);
        }
    }
    Ok(None)
}

#[cfg(not(feature = "std"))]
pub(crate) fn open_sibling(_from: &File, name: &str) -> Result<Option<File>> {
    Err(Error::unsupported(format!(
        "opening the other file {name:?} needs the std feature"
    )))
}

fn open_source(src: Dataset, vds: &Dataset, depth: usize) -> Result<Source> {
    if src.dtype() != vds.dtype() {
        return Err(Error::unsupported(format!(
            "virtual dataset source {} has a different datatype (type conversion is not supported)",
            src.path()
        )));
    }
    if matches!(src.layout(), Layout::Virtual { .. }) {
        let (dims, data) = read_depth(&src, depth + 1)?;
        return Ok(Source::Virtual(dims, data));
    }
    Ok(Source::Plain(Box::new(src)))
}

fn plan(ds: &Dataset, depth: usize) -> Result<Plan> {
    let file = ds.file();
    let ctx = file.ctx();
    if depth > ctx.limits.max_link_hops {
        return Err(Error::limit(format!(
            "virtual dataset sources nest deeper than {} levels",
            ctx.limits.max_link_hops
        )));
    }
    let block = mapping_block(ds)?;

    let stored = ds.shape().to_vec();
    let rank = stored.len();
    let elem = ds.dtype().size().max(1);
    // No selection can usefully name more runs than the read limit has elements.
    let max = (ctx.limits.max_read_bytes / elem).saturating_add(1);
    let max_dims: Vec<u64> = ds
        .maxshape()
        .map(|m| m.into_iter().map(|d| d.unwrap_or(u64::MAX)).collect())
        .unwrap_or_else(|| stored.clone());

    let mut opener = Opener {
        vds: ds,
        files: Vec::new(),
    };
    // Per dimension: the extent some unlimited mapping reaches (None: no such mapping).
    let mut new_dims: Vec<Option<u64>> = vec![None; rank];
    // Per dimension: the extent the limited parts of the mappings need.
    let mut min_dims: Vec<u64> = vec![0; rank];
    // Mappings whose virtual selection is finished later (clip known after the scan).
    let mut pending: Vec<(Option<Source>, Norm, Virt<'_>)> = Vec::new();

    for m in &block.mappings {
        let vu = unlimited_dim(&m.virtual_sel)?;
        let su = unlimited_dim(&m.source)?;
        // min_dims from the limited dimensions of hyperslab virtual selections.
        if let Selection::Regular(_) | Selection::Blocks { .. } | Selection::Points { .. } =
            &m.virtual_sel
        {
            let clipped = normalize(&m.virtual_sel, &stored, vu.map(|d| (d, 0)), max);
            if let Ok(n) = clipped {
                if let Some((_, hi)) = n.bounds()? {
                    for (i, (md, h)) in min_dims.iter_mut().zip(hi).enumerate() {
                        if Some(i) != vu {
                            *md = (*md).max(h);
                        }
                    }
                }
            }
        }
        match (vu, su) {
            (None, None) => {
                let (fname, _) = substitute(&m.file, None);
                let (dname, _) = substitute(&m.dataset, None);
                let src = match opener.open(&fname, &dname)? {
                    Some(d) => Some(open_source(d, ds, depth)?),
                    None => None,
                };
                let sn = match &src {
                    Some(s) => normalize(&m.source, s.dims(), None, max)?,
                    None => Norm::Rows(Vec::new()),
                };
                pending.push((src, sn, Virt::Later(m, None)));
            }
            (Some(dv), Some(dsrc)) => {
                let (fname, _) = substitute(&m.file, None);
                let (dname, _) = substitute(&m.dataset, None);
                let (Selection::Regular(vd), Selection::Regular(sd)) = (&m.virtual_sel, &m.source)
                else {
                    return Err(corrupt("unlimited selection that is not a regular hyperslab"));
                };
                let (Some(vdim), Some(sdim)) = (vd.get(dv), sd.get(dsrc)) else {
                    return Err(overflow());
                };
                let src = match opener.open(&fname, &dname)? {
                    Some(d) => Some(open_source(d, ds, depth)?),
                    None => None,
                };
                let (clip, sn) = match &src {
                    Some(s) => {
                        let sext = s.dims().get(dsrc).copied().ok_or_else(|| {
                            corrupt("source selection rank differs from the source dataset's")
                        })?;
                        let n = count_below(sdim, sext)?;
                        let clip = extent_for(vdim, n)?;
                        (clip, normalize(&m.source, s.dims(), Some((dsrc, sext)), max)?)
                    }
                    None => (0, Norm::Rows(Vec::new())),
                };
                if let Some(nd) = new_dims.get_mut(dv) {
                    *nd = Some(nd.map_or(clip, |x| x.max(clip)));
                }
                pending.push((src, sn, Virt::Later(m, Some((dv, clip)))));
            }
            (Some(dv), None) => {
                // printf mapping: block j of the virtual selection from source j.
                let Selection::Regular(vd) = &m.virtual_sel else {
                    return Err(corrupt("unlimited selection that is not a regular hyperslab"));
                };
                let vdim = *vd.get(dv).ok_or_else(overflow)?;
                if vdim.count != UNLIMITED || vdim.block == UNLIMITED {
                    return Err(Error::unsupported(format!(
                        "virtual dataset {}: printf-style mapping with an unlimited block",
                        ds.path()
                    )));
                }
                let limit = max_dims.get(dv).copied().unwrap_or(u64::MAX);
                let mut found = 0u64;
                loop {
                    let start = found
                        .checked_mul(vdim.stride)
                        .and_then(|x| x.checked_add(vdim.start))
                        .ok_or_else(overflow)?;
                    if start >= limit || found >= ctx.limits.max_index_entries {
                        break;
                    }
                    let (fname, fs) = substitute(&m.file, Some(found));
                    let (dname, dsub) = substitute(&m.dataset, Some(found));
                    if !fs && !dsub {
                        return Err(corrupt(format!(
                            "virtual dataset {}: unlimited mapping to a limited source without %b in its names",
                            ds.path()
                        )));
                    }
                    let Some(d) = opener.open(&fname, &dname)? else {
                        break;
                    };
                    let s = open_source(d, ds, depth)?;
                    let sn = normalize(&m.source, s.dims(), None, max)?;
                    let mut vdims = vd.clone();
                    if let Some(x) = vdims.get_mut(dv) {
                        x.start = start;
                        x.count = 1;
                    }
                    let vn = normalize(&Selection::Regular(vdims), &stored, None, max)?;
                    pending.push((Some(s), sn, Virt::Ready(vn)));
                    found += 1;
                }
                let clip = if found == 0 {
                    0
                } else {
                    extent_for(
                        &RegularDim {
                            start: vdim.start,
                            stride: vdim.stride,
                            count: UNLIMITED,
                            block: vdim.block,
                        },
                        found.checked_mul(vdim.block).ok_or_else(overflow)?,
                    )?
                };
                if let Some(nd) = new_dims.get_mut(dv) {
                    *nd = Some(nd.map_or(clip, |x| x.max(clip)));
                }
            }
            (None, Some(_)) => {
                return Err(corrupt(format!(
                    "virtual dataset {}: limited virtual selection mapped from an unlimited source selection",
                    ds.path()
                )))
            }
        }
    }

    let mut dims = stored.clone();
    for ((d, nd), md) in dims.iter_mut().zip(&new_dims).zip(&min_dims) {
        if let Some(n) = nd {
            *d = (*n).max(*md);
        }
    }
    let mut items = Vec::with_capacity(pending.len());
    for (source, src, virt) in pending {
        let virt = match virt {
            Virt::Ready(n) => n,
            Virt::Later(m, clip) => normalize(&m.virtual_sel, &dims, clip, max)?,
        };
        items.push(Item { source, src, virt });
    }
    Ok(Plan { dims, items })
}

/// Row-major strides (in elements) of `shape`.
fn strides_of(shape: &[u64]) -> Result<Vec<u64>> {
    let mut st = vec![1u64; shape.len()];
    let mut acc = 1u64;
    for (s, &n) in st.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.checked_mul(n).ok_or_else(overflow)?;
    }
    Ok(st)
}

/// Copy the box of `size` at `from` in `src` (row-major, `src_shape`) to
/// `to` in `dst` (row-major, `dst_shape`).
#[allow(clippy::too_many_arguments)]
fn copy_box(
    src: &[u8],
    src_shape: &[u64],
    from: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    to: &[u64],
    size: &[u64],
    elem: usize,
) -> Result<()> {
    let short = || corrupt("virtual dataset box copy outside its buffer");
    let rank = size.len();
    if size.contains(&0) {
        return Ok(());
    }
    let (ss, ds) = (strides_of(src_shape)?, strides_of(dst_shape)?);
    let row = size.last().copied().unwrap_or(1);
    let row_b = usize::try_from(row)
        .ok()
        .and_then(|r| r.checked_mul(elem))
        .ok_or_else(short)?;
    let mut idx = vec![0u64; rank.saturating_sub(1)];
    loop {
        let mut so = 0u64;
        let mut dof = 0u64;
        for k in 0..rank {
            let i = idx.get(k).copied().unwrap_or(0);
            let f = from.get(k).copied().unwrap_or(0);
            let t = to.get(k).copied().unwrap_or(0);
            let a = f
                .checked_add(i)
                .and_then(|c| c.checked_mul(ss.get(k).copied().unwrap_or(1)))
                .and_then(|c| c.checked_add(so));
            let b = t
                .checked_add(i)
                .and_then(|c| c.checked_mul(ds.get(k).copied().unwrap_or(1)))
                .and_then(|c| c.checked_add(dof));
            so = a.ok_or_else(overflow)?;
            dof = b.ok_or_else(overflow)?;
        }
        let at = |x: u64| {
            usize::try_from(x)
                .ok()
                .and_then(|x| x.checked_mul(elem))
                .ok_or_else(short)
        };
        let (sb, db) = (at(so)?, at(dof)?);
        let from_bytes = src.get(sb..sb + row_b).ok_or_else(short)?;
        dst.get_mut(db..db + row_b)
            .ok_or_else(short)?
            .copy_from_slice(from_bytes);
        // Advance the odometer over the outer dimensions.
        let mut k = idx.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            let (Some(i), Some(&n)) = (idx.get_mut(k), size.get(k)) else {
                return Ok(());
            };
            *i += 1;
            if *i < n {
                break;
            }
            *i = 0;
        }
    }
}

/// The source's elements in the box `[lo, hi)`, row-major; the parts outside
/// the source's current extent read as `fill`.
fn read_box(
    src: &Source,
    lo: &[u64],
    hi: &[u64],
    fill: &[u8],
    elem: usize,
    max_bytes: u64,
) -> Result<Vec<u8>> {
    let dims = src.dims();
    if dims.len() != lo.len() || hi.len() != lo.len() {
        return Err(corrupt(format!(
            "source selection of rank {} for a rank-{} source dataset",
            lo.len(),
            dims.len()
        )));
    }
    let shape: Vec<u64> = hi
        .iter()
        .zip(lo)
        .map(|(h, l)| h.saturating_sub(*l))
        .collect();
    let n = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::limit("source selection size overflows"))?;
    if n.saturating_mul(elem as u64) > max_bytes {
        return Err(Error::limit(
            "virtual dataset source selection exceeds the read limit",
        ));
    }
    if let (Source::Plain(d), true) = (src, dims.is_empty()) {
        return d.read_raw();
    }
    let ihi: Vec<u64> = hi.iter().zip(dims).map(|(h, d)| (*h).min(*d)).collect();
    let sub: Vec<u64> = ihi
        .iter()
        .zip(lo)
        .map(|(h, l)| h.saturating_sub(*l))
        .collect();
    let slice = || {
        Slice::Hyperslab(
            lo.iter()
                .zip(&sub)
                .map(|(&start, &count)| SliceDim {
                    start,
                    stride: 1,
                    count,
                    block: 1,
                })
                .collect(),
        )
    };
    if let (Source::Plain(d), true) = (src, ihi.as_slice() == hi) {
        return d.read_slice_raw(&slice());
    }
    let mut out = repeat(fill, n)?;
    if sub.contains(&0) {
        return Ok(out);
    }
    let zeros = vec![0u64; lo.len()];
    match src {
        Source::Plain(d) => {
            let data = d.read_slice_raw(&slice())?;
            copy_box(&data, &sub, &zeros, &mut out, &shape, &zeros, &sub, elem)?;
        }
        Source::Virtual(vdims, data) => {
            copy_box(data, vdims, lo, &mut out, &shape, &zeros, &sub, elem)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(start: u64, stride: u64, count: u64, block: u64) -> RegularDim {
        RegularDim {
            start,
            stride,
            count,
            block,
        }
    }

    /// All runs of `n` over a box.
    fn runs(n: &Norm, origin: &[u64], shape: &[u64]) -> Vec<(u64, u64)> {
        let mut it = RunIter::new(n, origin, shape).unwrap();
        let mut v = Vec::new();
        while let Some(r) = it.next_run().unwrap() {
            v.push(r);
        }
        v
    }

    /// Selected linear indices, expanded, in order.
    fn elems(n: &Norm, shape: &[u64]) -> Vec<u64> {
        let zeros = vec![0; shape.len()];
        runs(n, &zeros, shape)
            .into_iter()
            .flat_map(|(o, l)| o..o + l)
            .collect()
    }

    #[test]
    fn regular_intervals_like_numpy() {
        // numpy: [s for s in range(1, 100) if (s - 1) % 4 < 2][:6] with count 3, block 2
        assert_eq!(
            regular_intervals(&rd(1, 4, 3, 2), u64::MAX, 100).unwrap(),
            vec![(1, 2), (5, 2), (9, 2)]
        );
        // contiguous blocks merge
        assert_eq!(
            regular_intervals(&rd(2, 3, 4, 3), u64::MAX, 100).unwrap(),
            vec![(2, 12)]
        );
        // unlimited count, clipped at 10: blocks at 0, 4, 8 (the last one partial)
        assert_eq!(
            regular_intervals(&rd(0, 4, UNLIMITED, 3), 10, 100).unwrap(),
            vec![(0, 3), (4, 3), (8, 2)]
        );
        // unlimited block
        assert_eq!(
            regular_intervals(&rd(3, 1, 1, UNLIMITED), 10, 100).unwrap(),
            vec![(3, 7)]
        );
        assert!(regular_intervals(&rd(3, 1, 1, UNLIMITED), 2, 100)
            .unwrap()
            .is_empty());
        // too many blocks for the limit
        assert_eq!(
            regular_intervals(&rd(0, 2, 1000, 1), u64::MAX, 10)
                .unwrap_err()
                .kind(),
            ErrorKind::Limit
        );
        // stride < block with several blocks
        assert_eq!(
            regular_intervals(&rd(0, 1, 3, 2), u64::MAX, 10)
                .unwrap_err()
                .kind(),
            ErrorKind::Corrupt
        );
    }

    #[test]
    fn clip_extent_matches_brute_force() {
        // For unlimited dimensions: count_below agrees with counting the
        // expanded selection, and extent_for is the smallest extent reaching n.
        for d in [
            rd(0, 1, UNLIMITED, 1),
            rd(2, 3, UNLIMITED, 2),
            rd(1, 5, UNLIMITED, 5),
            rd(4, 1, 1, UNLIMITED),
        ] {
            for clip in 0..40u64 {
                let brute: u64 = regular_intervals(&d, clip, 1000)
                    .unwrap()
                    .iter()
                    .map(|x| x.1)
                    .sum();
                assert_eq!(count_below(&d, clip).unwrap(), brute, "{d:?} {clip}");
            }
            for n in 0..20u64 {
                let x = extent_for(&d, n).unwrap();
                assert_eq!(count_below(&d, x).unwrap(), n, "{d:?} {n}");
                if x > 0 {
                    assert!(count_below(&d, x - 1).unwrap() < n, "{d:?} {n}");
                }
            }
        }
        // limited dimensions too
        for d in [rd(1, 4, 3, 2), rd(0, 1, 1, 7), rd(5, 2, 4, 1)] {
            for clip in 0..30u64 {
                let brute: u64 = regular_intervals(&d, clip, 1000)
                    .unwrap()
                    .iter()
                    .map(|x| x.1)
                    .sum();
                assert_eq!(count_below(&d, clip).unwrap(), brute, "{d:?} {clip}");
            }
        }
    }

    #[test]
    fn grid_runs_are_row_major() {
        // a[1:5:2, 0:7:3] of a 6x7 array (numpy indices 7i + j)
        let sel = Selection::Regular(vec![rd(1, 2, 2, 1), rd(0, 3, 3, 1)]);
        let n = normalize(&sel, &[6, 7], None, 100).unwrap();
        assert_eq!(elems(&n, &[6, 7]), vec![7, 10, 13, 21, 24, 27]);
        // the same within a box starting at (1, 0) of shape (3, 7)
        assert_eq!(
            runs(&n, &[1, 0], &[3, 7]),
            vec![(0, 1), (3, 1), (6, 1), (14, 1), (17, 1), (20, 1)]
        );
        // "all" of a 2x3 dataspace is one run per row
        let n = normalize(&Selection::All, &[2, 3], None, 100).unwrap();
        assert_eq!(runs(&n, &[0, 0], &[2, 3]), vec![(0, 3), (3, 3)]);
        // scalar
        let n = normalize(&Selection::All, &[], None, 100).unwrap();
        assert_eq!(runs(&n, &[], &[]), vec![(0, 1)]);
        // outside the box is corrupt, not a panic
        let sel = Selection::Regular(vec![rd(5, 1, 1, 3)]);
        let n = normalize(&sel, &[6], None, 100).unwrap();
        let mut it = RunIter::new(&n, &[0], &[6]).unwrap();
        assert_eq!(it.next_run().unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn irregular_blocks_are_sorted_and_merged() {
        // Blocks (0,0)-(1,1) and (1,1)-(3,3) of a 4x5 space: libhdf5 iterates
        // the union in row-major order (see tests/vds gen.py "irregular").
        let sel = Selection::Blocks {
            rank: 2,
            corners: vec![1, 1, 3, 3, 0, 0, 1, 1],
        };
        let n = normalize(&sel, &[4, 5], None, 100).unwrap();
        assert_eq!(
            elems(&n, &[4, 5]),
            vec![0, 1, 5, 6, 7, 8, 11, 12, 13, 16, 17, 18]
        );
        assert_eq!(n.bounds().unwrap(), Some((vec![0, 0], vec![4, 4])));
    }

    #[test]
    fn paired_copy_splits_runs() {
        // source runs (0,3),(5,2); destination runs (1,2),(4,3): 5 elements
        let src: Vec<u8> = (0..8).collect();
        let sn = Norm::Rows(vec![(vec![0], 3), (vec![5], 2)]);
        let dn = Norm::Rows(vec![(vec![1], 2), (vec![4], 3)]);
        let mut dst = vec![0xffu8; 8];
        let mut s = RunIter::new(&sn, &[0], &[8]).unwrap();
        let mut d = RunIter::new(&dn, &[0], &[8]).unwrap();
        copy_paired(&src, &mut s, &mut dst, &mut d, 1).unwrap();
        assert_eq!(dst, vec![0xff, 0, 1, 0xff, 2, 5, 6, 0xff]);
    }

    #[test]
    fn box_copy() {
        // copy the 2x2 box at (1,1) of a 3x4 array to (0,1) of a 2x3 array
        let src: Vec<u8> = (0..12).collect();
        let mut dst = vec![0u8; 6];
        copy_box(
            &src,
            &[3, 4],
            &[1, 1],
            &mut dst,
            &[2, 3],
            &[0, 1],
            &[2, 2],
            1,
        )
        .unwrap();
        assert_eq!(dst, vec![0, 5, 6, 0, 9, 10]);
        // a box past the source is an error, not a panic
        let e = copy_box(
            &src,
            &[3, 4],
            &[2, 3],
            &mut dst,
            &[2, 3],
            &[0, 0],
            &[2, 2],
            1,
        );
        assert!(e.is_err());
    }

    #[test]
    fn printf_names() {
        assert_eq!(
            substitute("f_%b.h5", Some(12)),
            (String::from("f_12.h5"), true)
        );
        assert_eq!(
            substitute("100%%_%b_%b", Some(3)),
            (String::from("100%_3_3"), true)
        );
        assert_eq!(substitute("a%%b", None), (String::from("a%b"), false));
        assert_eq!(substitute("x%y%", None), (String::from("x%y%"), false));
    }
}
