//! Chunked datasets: splitting the data into chunks, running the filters,
//! streaming the chunks out, and building the chunk index where libhdf5
//! would choose it.

use super::{FileWriter, Format, ISTORE_K};
use crate::codec::Encoder;
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_CHUNK};
use crate::format::btree_v2::{self, BTreeV2Params};
use crate::format::datatype::Datatype;
use crate::format::extensible_array::{self, ExtensibleArrayHeader};
use crate::format::fixed_array;
use crate::format::message::{ChunkIndex, ChunkedLayout, Dataspace, FilterPipeline, Layout};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Build a v1 B-tree bottom-up over `(left key, child)` pairs of level 0
/// and the key right of the last child. Nodes hold at most `cap` children;
/// `alloc` gives each node its address. Returns the root address and the
/// nodes (with sibling pointers) to encode.
pub(super) fn build_btree(
    node_type: u8,
    leaves: Vec<(Key, Addr)>,
    final_key: Key,
    cap: usize,
    alloc: &mut dyn FnMut() -> Addr,
) -> (Addr, Vec<(Addr, BTreeV1Node)>) {
    let mut out = Vec::new();
    let mut level_entries = leaves;
    let mut level = 0u8;
    loop {
        let groups: Vec<Vec<(Key, Addr)>> = level_entries
            .chunks(cap.max(1))
            .map(<[(Key, Addr)]>::to_vec)
            .collect();
        let addrs: Vec<Addr> = groups.iter().map(|_| alloc()).collect();
        let mut parent = Vec::with_capacity(groups.len());
        for (i, g) in groups.iter().enumerate() {
            let right_key = groups
                .get(i + 1)
                .and_then(|n| n.first())
                .map_or_else(|| final_key.clone(), |(k, _)| k.clone());
            let mut keys: Vec<Key> = g.iter().map(|(k, _)| k.clone()).collect();
            keys.push(right_key);
            let node = BTreeV1Node {
                node_type,
                level,
                left: if i == 0 {
                    Addr::UNDEF
                } else {
                    addrs.get(i - 1).copied().unwrap_or(Addr::UNDEF)
                },
                right: addrs.get(i + 1).copied().unwrap_or(Addr::UNDEF),
                keys,
                children: g.iter().map(|(_, a)| *a).collect(),
            };
            let a = addrs.get(i).copied().unwrap_or(Addr::UNDEF);
            if let Some((k, _)) = g.first() {
                parent.push((k.clone(), a));
            }
            out.push((a, node));
        }
        if addrs.len() <= 1 {
            return (addrs.first().copied().unwrap_or(Addr::UNDEF), out);
        }
        level_entries = parent;
        level = level.saturating_add(1);
    }
}

/// One stored chunk.
pub(super) struct StoredChunk {
    /// Element coordinates of its first element.
    pub(super) offsets: Vec<u64>,
    pub(super) addr: Addr,
    pub(super) size: u64,
    /// Filters skipped (v1 B-tree indexes record it; 0 elsewhere).
    pub(super) filter_mask: u32,
}

/// The bytes of chunk `origin` (element coordinates) straight from `data`
/// when the chunk lies wholly inside the dataset and its rows are
/// contiguous there (1-D, or chunks spanning the trailing dimensions).
fn chunk_slice<'d>(
    data: &'d [u8],
    dims: &[u64],
    chunk: &[u64],
    origin: &[u64],
    es: usize,
) -> Option<&'d [u8]> {
    let rank = dims.len();
    let inside = (0..rank).all(|k| origin[k].saturating_add(chunk[k]) <= dims[k]);
    if !inside || !(1..rank).all(|k| chunk[k] == dims[k]) {
        return None;
    }
    let clen: usize = chunk
        .iter()
        .try_fold(1usize, |a, &c| a.checked_mul(usize::try_from(c).ok()?))?;
    let start = origin.iter().zip(dims).fold(0u64, |a, (o, d)| a * d + o);
    let s = usize::try_from(start).ok()?.checked_mul(es)?;
    data.get(s..s.checked_add(clen.checked_mul(es)?)?)
}

/// Copy the part of chunk `origin` (element coordinates) that lies inside
/// the dataset from `data` into `buf`, a whole chunk prefilled with the
/// fill value.
fn gather_into(
    data: &[u8],
    dims: &[u64],
    chunk: &[u64],
    origin: &[u64],
    es: usize,
    fill: &[u8],
    buf: &mut Vec<u8>,
) {
    let clen: usize = chunk
        .iter()
        .map(|&c| usize::try_from(c).unwrap_or(0))
        .product();
    let rank = dims.len();
    let extent: Vec<u64> = (0..rank)
        .map(|k| {
            let (d, c, o) = (dims[k], chunk[k], origin[k]);
            c.min(d.saturating_sub(o))
        })
        .collect();
    let last = rank - 1;
    let run = usize::try_from(extent[last]).unwrap_or(0) * es;
    buf.clear();
    if fill.iter().all(|&b| b == 0) {
        buf.resize(clen.saturating_mul(es), 0);
    } else {
        for _ in 0..clen {
            buf.extend_from_slice(fill);
        }
    }
    if extent.contains(&0) {
        return;
    }
    // Iterate over index tuples of the leading dimensions.
    let mut idx = alloc::vec![0u64; last];
    loop {
        let mut src = 0u64;
        let mut dst = 0u64;
        for k in 0..rank {
            let i = if k < last { idx[k] } else { 0 };
            src = src * dims[k] + origin[k] + i;
            dst = dst * chunk[k] + i;
        }
        let (s, d) = (
            usize::try_from(src).unwrap_or(0) * es,
            usize::try_from(dst).unwrap_or(0) * es,
        );
        if let (Some(from), Some(to)) = (data.get(s..s + run), buf.get_mut(d..d + run)) {
            to.copy_from_slice(from);
        }
        // Next tuple.
        let mut k = last;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < extent[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Which chunk index to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexKind {
    BTreeV1,
    Single,
    Implicit,
    Fixed,
    Extensible,
    BTreeV2,
}

/// The chunk index libhdf5 2.0 picks for a layout-4 dataset
/// (`H5D__layout_set_latest_indexing`; checked against h5py files written
/// with `libver='latest'`): one unlimited dimension → extensible array;
/// more → v2 B-tree; none → a single chunk when the current and maximum
/// dims both equal the chunk dims, else the implicit index for unfiltered
/// datasets allocated early, else a fixed array. Earlier formats use the
/// v1 B-tree.
fn choose_index(format: Format, space: &Dataspace, chunks: &[u64], implicit_ok: bool) -> IndexKind {
    if !format.layout4() {
        return IndexKind::BTreeV1;
    }
    let max = space.max_dims.as_deref().unwrap_or(&space.dims);
    let unlimited = max.iter().filter(|&&m| m == Dataspace::UNLIMITED).count();
    match unlimited {
        0 if max == chunks && space.dims == chunks => IndexKind::Single,
        0 if implicit_ok => IndexKind::Implicit,
        0 => IndexKind::Fixed,
        1 => IndexKind::Extensible,
        _ => IndexKind::BTreeV2,
    }
}

/// The layout message libhdf5 2.0 gives a new chunked dataset under
/// `format` before any chunk is stored: the index [`choose_index`] picks,
/// with libhdf5's creation parameters (`H5D__layout_set_latest_indexing`)
/// and the layout message version of `format`, every address undefined.
/// Shared by the writer (which then fills in the addresses) and the
/// in-place editor's `create_dataset`.
pub(super) fn empty_layout(
    format: Format,
    space: &Dataspace,
    chunks: &[u64],
    element_size: u64,
    filtered: bool,
    implicit_ok: bool,
) -> ChunkedLayout {
    let kind = choose_index(format, space, chunks, implicit_ok);
    let index = match kind {
        IndexKind::BTreeV1 => ChunkIndex::BTreeV1 { addr: Addr::UNDEF },
        IndexKind::Single => ChunkIndex::SingleChunk {
            addr: Addr::UNDEF,
            filtered: filtered.then_some((0, 0)),
        },
        IndexKind::Implicit => ChunkIndex::Implicit { addr: Addr::UNDEF },
        IndexKind::Fixed => ChunkIndex::FixedArray {
            addr: Addr::UNDEF,
            page_bits: FA_PAGE_BITS,
        },
        IndexKind::Extensible => ChunkIndex::ExtensibleArray {
            addr: Addr::UNDEF,
            max_bits: EA_MAX_NELMTS_BITS,
            index_elements: EA_IDX_BLK_ELMTS,
            min_pointers: EA_SUP_BLK_MIN_DATA_PTRS,
            min_elements: EA_DATA_BLK_MIN_ELMTS,
            page_bits: EA_MAX_DBLK_PAGE_NELMTS_BITS,
        },
        IndexKind::BTreeV2 => ChunkIndex::BTreeV2 {
            addr: Addr::UNDEF,
            node_size: BT2_NODE_SIZE,
            split_percent: BT2_SPLIT_PERCENT,
            merge_percent: BT2_MERGE_PERCENT,
        },
    };
    let single_filtered = kind == IndexKind::Single && filtered;
    ChunkedLayout {
        dims: chunks.to_vec(),
        element_size,
        flags: if single_filtered {
            crate::format::message::layout::FLAG_SINGLE_INDEX_WITH_FILTER
        } else {
            0
        },
        index,
        layout_version: if kind == IndexKind::BTreeV1 {
            3
        } else {
            layout_version(format, filtered)
        },
    }
}

/// libhdf5's extensible array parameters for chunk indexes (`H5Dpkg.h`:
/// `H5D_EARRAY_*`), as written in the layout message and the array header.
const EA_MAX_NELMTS_BITS: u8 = 32;
const EA_IDX_BLK_ELMTS: u8 = 4;
const EA_SUP_BLK_MIN_DATA_PTRS: u8 = 4;
const EA_DATA_BLK_MIN_ELMTS: u8 = 16;
const EA_MAX_DBLK_PAGE_NELMTS_BITS: u8 = 10;
/// libhdf5's fixed array data block page size (`H5D_FARRAY_MAX_DBLK_PAGE_NELMTS_BITS`).
const FA_PAGE_BITS: u8 = 10;
/// libhdf5's v2 B-tree parameters for chunk indexes (`H5Dbtree2.c`).
const BT2_NODE_SIZE: u32 = 2048;
const BT2_SPLIT_PERCENT: u8 = 100;
const BT2_MERGE_PERCENT: u8 = 40;

/// Chunks of the dataset in row-major order of the chunk grid (the file
/// order of the chunks), as element offsets.
fn chunk_origins(dims: &[u64], chunks: &[u64]) -> Vec<Vec<u64>> {
    let grid: Vec<u64> = dims
        .iter()
        .zip(chunks)
        .map(|(d, c)| d.div_ceil(*c))
        .collect();
    let total: u64 = grid.iter().product();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut scaled = alloc::vec![0u64; grid.len()];
    for _ in 0..total {
        out.push(scaled.iter().zip(chunks).map(|(s, c)| s * c).collect());
        for k in (0..grid.len()).rev() {
            scaled[k] += 1;
            if scaled[k] < grid[k] {
                break;
            }
            scaled[k] = 0;
        }
    }
    out
}

/// Chunks in flight at once per worker thread when compressing in parallel.
#[cfg(feature = "std")]
const CHUNKS_PER_WORKER: usize = 4;

/// What every chunk of one dataset needs.
struct ChunkJob<'a> {
    data: &'a [u8],
    dims: &'a [u64],
    chunks: &'a [u64],
    es: usize,
    fill: &'a [u8],
    pipeline: Option<&'a FilterPipeline>,
}

/// Reusable buffers of one thread encoding chunks.
#[derive(Default)]
struct Scratch {
    gathered: Vec<u8>,
    filter: crate::filter::EncodeScratch,
}

impl ChunkJob<'_> {
    /// The raw bytes of chunk `origin`: borrowed from the data when they
    /// are contiguous there, else gathered into `gathered`.
    fn raw<'s>(&'s self, origin: &[u64], gathered: &'s mut Vec<u8>) -> &'s [u8] {
        match chunk_slice(self.data, self.dims, self.chunks, origin, self.es) {
            Some(s) => s,
            None => {
                gather_into(
                    self.data,
                    self.dims,
                    self.chunks,
                    origin,
                    self.es,
                    self.fill,
                    gathered,
                );
                gathered
            }
        }
    }

    /// Filter chunk `origin` into `out`; returns the encoded length
    /// (`out[..n]`).
    fn encode_into(
        &self,
        origin: &[u64],
        scratch: &mut Scratch,
        out: &mut Vec<u8>,
    ) -> Result<usize> {
        let Scratch { gathered, filter } = scratch;
        let raw = self.raw(origin, gathered);
        match self.pipeline {
            Some(p) => crate::filter::encode_chunk_into(p, raw, self.es, filter, out),
            None => {
                out.clear();
                out.extend_from_slice(raw);
                Ok(out.len())
            }
        }
    }
}

/// Shared state of the parallel chunk encoder: chunks are taken in order,
/// at most `window` ahead of the next one to write; finished chunks wait
/// in `done` for the writer, which hands their buffers back via `pool`.
#[cfg(feature = "std")]
struct Pipeline {
    next: usize,
    written: usize,
    done: alloc::collections::BTreeMap<usize, Result<(Vec<u8>, usize)>>,
    pool: Vec<Vec<u8>>,
    failed: bool,
}

/// Encode and write the chunks at `origins` in order, recording them in
/// `stored`. With several cores and a filter, worker threads (each
/// reusing its compressor and buffers) encode up to
/// `CHUNKS_PER_WORKER` chunks per thread ahead of the writer while this
/// thread writes finished chunks in file order and encodes when it has
/// nothing to write.
fn stream_chunks(
    fw: &mut FileWriter,
    job: &ChunkJob<'_>,
    origins: &[Vec<u64>],
    stored: &mut Vec<StoredChunk>,
) -> Result<()> {
    let mut put = |fw: &mut FileWriter, origin: &Vec<u64>, bytes: &[u8]| -> Result<()> {
        let addr = fw.write_new(bytes)?;
        stored.push(StoredChunk {
            offsets: origin.clone(),
            addr,
            size: bytes.len() as u64,
            filter_mask: 0,
        });
        Ok(())
    };
    let threads = worker_threads();
    #[cfg(feature = "std")]
    if threads > 1 && job.pipeline.is_some() && origins.len() > 1 {
        return stream_parallel(fw, job, origins, threads, &mut put);
    }
    let _ = threads;
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    for o in origins {
        if job.pipeline.is_none() {
            // Unfiltered: write the caller's bytes when contiguous.
            let raw = job.raw(o, &mut scratch.gathered);
            put(fw, o, raw)?;
        } else {
            let n = job.encode_into(o, &mut scratch, &mut out)?;
            put(fw, o, out.get(..n).unwrap_or(&out))?;
        }
    }
    Ok(())
}

/// Writes one encoded chunk and records it.
#[cfg(feature = "std")]
type PutChunk<'a> = dyn FnMut(&mut FileWriter, &Vec<u64>, &[u8]) -> Result<()> + 'a;

#[cfg(feature = "std")]
fn stream_parallel(
    fw: &mut FileWriter,
    job: &ChunkJob<'_>,
    origins: &[Vec<u64>],
    threads: usize,
    put: &mut PutChunk<'_>,
) -> Result<()> {
    use std::sync::{Condvar, Mutex, PoisonError};
    let total = origins.len();
    let window = threads * CHUNKS_PER_WORKER;
    let state = Mutex::new(Pipeline {
        next: 0,
        written: 0,
        done: alloc::collections::BTreeMap::new(),
        pool: Vec::new(),
        failed: false,
    });
    let cv = Condvar::new();
    let lock = || state.lock().unwrap_or_else(PoisonError::into_inner);
    // Take the next chunk to encode, with a buffer to encode it into.
    let can_take = |p: &Pipeline| p.next < total && p.next < p.written + window && !p.failed;
    let encode_one = |i: usize, buf: Vec<u8>, scratch: &mut Scratch| {
        let mut buf = buf;
        let r = match origins.get(i) {
            Some(o) => job.encode_into(o, scratch, &mut buf).map(|n| (buf, n)),
            None => Err(Error::usage("chunk index out of range")),
        };
        let mut p = lock();
        if r.is_err() {
            p.failed = true;
        }
        p.done.insert(i, r);
        drop(p);
        cv.notify_all();
    };
    std::thread::scope(|s| -> Result<()> {
        for _ in 1..threads {
            s.spawn(|| {
                let mut scratch = Scratch::default();
                loop {
                    let mut p = lock();
                    while !can_take(&p) {
                        if p.next >= total || p.failed {
                            return;
                        }
                        p = cv.wait(p).unwrap_or_else(PoisonError::into_inner);
                    }
                    let i = p.next;
                    p.next += 1;
                    let buf = p.pool.pop().unwrap_or_default();
                    drop(p);
                    encode_one(i, buf, &mut scratch);
                }
            });
        }
        // This thread: write finished chunks in order, else encode one.
        let mut scratch = Scratch::default();
        let result = loop {
            let mut p = lock();
            let w = p.written;
            if w >= total {
                break Ok(());
            }
            if let Some(r) = p.done.remove(&w) {
                drop(p);
                let (buf, n) = match r {
                    Ok(v) => v,
                    Err(e) => break Err(e),
                };
                let origin = origins.get(w).ok_or_else(|| Error::usage("chunk index"));
                let r = origin.and_then(|o| put(fw, o, buf.get(..n).unwrap_or(&buf)));
                let mut p = lock();
                p.pool.push(buf);
                p.written += 1;
                if let Err(e) = r {
                    p.failed = true;
                    drop(p);
                    cv.notify_all();
                    break Err(e);
                }
                drop(p);
                cv.notify_all();
            } else if can_take(&p) {
                let i = p.next;
                p.next += 1;
                let buf = p.pool.pop().unwrap_or_default();
                drop(p);
                encode_one(i, buf, &mut scratch);
            } else {
                drop(cv.wait(p).unwrap_or_else(PoisonError::into_inner));
            }
        };
        if result.is_err() {
            lock().failed = true;
            cv.notify_all();
        }
        result
    })
}

/// Worker threads for chunk compression: the available cores (std), else 1.
fn worker_threads() -> usize {
    #[cfg(feature = "std")]
    {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
    #[cfg(not(feature = "std"))]
    {
        1
    }
}

/// Write the chunks of `data` (or none, when `data` is `None`) and their
/// index; return the layout message.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_chunked(
    fw: &mut FileWriter,
    dtype: &Datatype,
    space: &Dataspace,
    chunks: &[u64],
    pipeline: Option<&FilterPipeline>,
    data: Option<&[u8]>,
    fill: &[u8],
    early_alloc: bool,
) -> Result<Layout> {
    let es = usize::try_from(dtype.size()).map_err(|_| Error::usage("element size"))?;
    let dims = &space.dims;
    let max_dims: Vec<u64> = space.max_dims.clone().unwrap_or_else(|| dims.clone());
    let filtered = pipeline.is_some();
    let mut layout = empty_layout(
        fw.format,
        space,
        chunks,
        es as u64,
        filtered,
        early_alloc && !filtered,
    );
    let kind = match &layout.index {
        ChunkIndex::BTreeV1 { .. } => IndexKind::BTreeV1,
        ChunkIndex::SingleChunk { .. } => IndexKind::Single,
        ChunkIndex::Implicit { .. } => IndexKind::Implicit,
        _ => IndexKind::Fixed, // the array and v2 B-tree indexes: write_index
    };
    // Early allocation writes every chunk: the fill value where no data.
    let filled;
    let data = match data {
        None if early_alloc => {
            let n: u64 = dims.iter().product();
            let n = usize::try_from(n).map_err(|_| Error::usage("dataset too large"))?;
            filled = fill.repeat(n);
            Some(filled.as_slice())
        }
        d => d,
    };
    let mut stored = Vec::new();
    if let Some(data) = data {
        // The implicit index addresses chunks by their number over the
        // maximum dims: every one of those chunks is stored, in that order.
        let origins = if kind == IndexKind::Implicit {
            chunk_origins(&max_dims, chunks)
        } else {
            chunk_origins(dims, chunks)
        };
        let job = ChunkJob {
            data,
            dims,
            chunks,
            es,
            fill,
            pipeline,
        };
        stream_chunks(fw, &job, &origins, &mut stored)?;
    }
    let chunk_bytes = chunks.iter().product::<u64>().saturating_mul(es as u64);
    layout.index = match kind {
        IndexKind::BTreeV1 => ChunkIndex::BTreeV1 {
            addr: write_btree(fw, chunks, &stored)?,
        },
        IndexKind::Single => {
            let c = stored.first();
            ChunkIndex::SingleChunk {
                addr: c.map_or(Addr::UNDEF, |c| c.addr),
                filtered: filtered.then(|| (c.map_or(0, |c| c.size), 0)),
            }
        }
        IndexKind::Implicit => ChunkIndex::Implicit {
            addr: stored.first().map_or(Addr::UNDEF, |c| c.addr),
        },
        _ => {
            let g = IndexGeometry {
                ctx: fw.ctx,
                chunks,
                max_dims: &max_dims,
                filtered,
                size_len: size_field(layout.layout_version, fw.ctx.sizes, filtered, chunk_bytes),
            };
            write_index(fw, &g, &layout.index, &stored)?
        }
    };
    Ok(Layout::Chunked(layout))
}

pub(super) fn write_btree(
    fw: &mut FileWriter,
    chunks: &[u64],
    stored: &[StoredChunk],
) -> Result<Addr> {
    let Some(last) = stored.last() else {
        return Ok(Addr::UNDEF);
    };
    let ndims = chunks.len() + 1;
    let key = |offsets: &[u64], size: u64, filter_mask: u32| -> Result<Key> {
        let mut o = offsets.to_vec();
        o.push(0);
        Ok(Key::Chunk {
            size: u32::try_from(size).map_err(|_| Error::usage("chunk of 4 GiB or more"))?,
            filter_mask,
            offsets: o,
        })
    };
    let leaves = stored
        .iter()
        .map(|c| Ok((key(&c.offsets, c.size, c.filter_mask)?, c.addr)))
        .collect::<Result<Vec<_>>>()?;
    let end: Vec<u64> = last
        .offsets
        .iter()
        .zip(chunks)
        .map(|(o, c)| o + c)
        .collect();
    let final_key = key(&end, 0, 0)?;
    let node_len = BTreeV1Node::encoded_len(NODE_TYPE_CHUNK, fw.ctx.sizes, ndims, ISTORE_K)? as u64;
    let mut next = fw.eof;
    let (root, nodes) = build_btree(
        NODE_TYPE_CHUNK,
        leaves,
        final_key,
        2 * usize::from(ISTORE_K),
        &mut || {
            let a = Addr(next);
            next += node_len;
            a
        },
    );
    fw.eof = next;
    for (a, node) in &nodes {
        let mut enc = Encoder::new();
        node.encode(&mut enc, fw.ctx, ndims, ISTORE_K)?;
        fw.sink.write_at(a.get(), enc.as_bytes())?;
    }
    Ok(root)
}

/// The layout message version libhdf5 2.0 writes: 5 for filtered chunked
/// datasets under [`Format::V200`], else 4.
fn layout_version(format: Format, filtered: bool) -> u8 {
    if format == Format::V200 && filtered {
        5
    } else {
        4
    }
}

/// Where the blocks of a chunk index go: the writer appends them at its end
/// of file, the in-place editor puts them in space no commit refers to (and
/// records it, to free it when a later commit replaces the index). The
/// index encoders below only allocate and write through this, so the writer
/// and the editor share them.
pub(super) trait IndexSink {
    /// Fresh space of `len` bytes.
    fn alloc_index(&mut self, len: u64) -> Addr;
    /// Write `bytes` at `addr` (space from [`IndexSink::alloc_index`]).
    ///
    /// # Errors
    /// `Io`.
    fn write_index(&mut self, addr: Addr, bytes: &[u8]) -> Result<()>;
}

impl IndexSink for FileWriter {
    fn alloc_index(&mut self, len: u64) -> Addr {
        self.alloc(len)
    }

    fn write_index(&mut self, addr: Addr, bytes: &[u8]) -> Result<()> {
        self.sink.write_at(addr.get(), bytes)
    }
}

/// What a fixed array, extensible array or v2 B-tree chunk index is built
/// over.
pub(super) struct IndexGeometry<'a> {
    /// Sizes of the file.
    pub(super) ctx: Ctx,
    /// Chunk dimensions in elements.
    pub(super) chunks: &'a [u64],
    /// The dataspace's maximum dims (`Dataspace::UNLIMITED` for unlimited).
    pub(super) max_dims: &'a [u64],
    /// Whether the dataset has filters (entries carry size and mask).
    pub(super) filtered: bool,
    /// Width of the stored-size field of filtered entries ([`size_field`]).
    pub(super) size_len: usize,
}

/// Width of the stored-size field of filtered chunk entries (0 when
/// unfiltered): derived from the unfiltered chunk size under layout
/// version 4, "size of lengths" under version 5 (libhdf5's rule when it
/// creates the index; the chunk size never changes, so neither does the
/// width when a dataset is resized).
pub(super) fn size_field(
    layout_version: u8,
    sizes: crate::Sizes,
    filtered: bool,
    chunk_bytes: u64,
) -> usize {
    if filtered {
        btree_v2::chunk_size_len(layout_version, chunk_bytes, sizes)
    } else {
        0
    }
}

/// Encode one fixed/extensible array element for `c` (`None`: not
/// allocated).
///
/// # Errors
/// `Usage` when the chunk's stored size does not fit the size field.
fn put_entry(
    enc: &mut Encoder,
    sizes: crate::Sizes,
    c: Option<&StoredChunk>,
    size_len: usize,
) -> Result<()> {
    enc.put_addr(c.map_or(Addr::UNDEF, |c| c.addr), sizes);
    if size_len > 0 {
        let size = c.map_or(0, |c| c.size);
        if size_len < 8 && size >> (8 * size_len) != 0 {
            return Err(Error::usage(alloc::format!(
                "a filtered chunk of {size} bytes does not fit the index's {size_len}-byte size field"
            )));
        }
        enc.put_uint(size, size_len);
        enc.put_u32(c.map_or(0, |c| c.filter_mask));
    }
    Ok(())
}

/// Linear element number of the chunk at element `offsets` over the chunk
/// grid of the maximum dims, with dimension `first` (the unlimited one of
/// an extensible array) moved to the front (libhdf5's "swizzled" order).
fn linear_index(offsets: &[u64], chunks: &[u64], max_dims: &[u64], first: Option<usize>) -> u64 {
    let rank = offsets.len();
    let order: Vec<usize> = match first {
        Some(f) => core::iter::once(f)
            .chain((0..rank).filter(|&d| d != f))
            .collect(),
        None => (0..rank).collect(),
    };
    let mut idx = 0u64;
    for (k, &d) in order.iter().enumerate() {
        let c = chunks.get(d).copied().unwrap_or(1).max(1);
        let count = if k == 0 {
            1
        } else {
            max_dims.get(d).copied().unwrap_or(0).div_ceil(c)
        };
        let o = offsets.get(d).copied().unwrap_or(0);
        idx = idx.saturating_mul(count).saturating_add(o / c);
    }
    idx
}

/// Chunk entries of an array index ordered by linear index, with gaps.
fn array_entries(
    g: &IndexGeometry<'_>,
    stored: &[StoredChunk],
    n: u64,
    first: Option<usize>,
) -> Result<(Vec<u8>, Vec<bool>)> {
    let n = usize::try_from(n).map_err(|_| Error::usage("too many chunks"))?;
    let mut slot: Vec<Option<usize>> = alloc::vec![None; n];
    for (i, c) in stored.iter().enumerate() {
        let at = usize::try_from(linear_index(&c.offsets, g.chunks, g.max_dims, first))
            .ok()
            .and_then(|k| slot.get_mut(k))
            .ok_or_else(|| Error::usage("chunk outside the maximum dims"))?;
        *at = Some(i);
    }
    let mut enc = Encoder::with_capacity(n.saturating_mul(8 + g.size_len + 4));
    for s in &slot {
        put_entry(
            &mut enc,
            g.ctx.sizes,
            s.and_then(|i| stored.get(i)),
            g.size_len,
        )?;
    }
    Ok((enc.into_vec(), slot.iter().map(Option::is_some).collect()))
}

fn entry_size(g: &IndexGeometry<'_>) -> Result<u8> {
    let o = usize::from(g.ctx.sizes.offsets);
    u8::try_from(if g.filtered { o + g.size_len + 4 } else { o })
        .map_err(|_| Error::usage("entry size"))
}

/// Write a fixed array, extensible array or v2 B-tree chunk index holding
/// `stored`, of the kind and with the creation parameters of `template`
/// (its address is ignored), through `out`. Returns the index with its
/// address: undefined when nothing is stored (libhdf5 creates these indexes
/// with the first chunk).
///
/// # Errors
/// `Usage` for another index kind, chunks outside the maximum dims, sizes
/// that do not fit; `Io` from `out`.
pub(super) fn write_index(
    out: &mut dyn IndexSink,
    g: &IndexGeometry<'_>,
    template: &ChunkIndex,
    stored: &[StoredChunk],
) -> Result<ChunkIndex> {
    let mut index = template.clone();
    let addr = match &mut index {
        ChunkIndex::FixedArray { addr, .. }
        | ChunkIndex::ExtensibleArray { addr, .. }
        | ChunkIndex::BTreeV2 { addr, .. } => addr,
        _ => {
            return Err(Error::usage(
                "only fixed array, extensible array and v2 B-tree indexes are built here",
            ))
        }
    };
    *addr = Addr::UNDEF;
    if stored.is_empty() {
        return Ok(index);
    }
    *addr = match template {
        ChunkIndex::FixedArray { page_bits, .. } => write_fixed_array(out, g, stored, *page_bits)?,
        ChunkIndex::ExtensibleArray {
            max_bits,
            index_elements,
            min_pointers,
            min_elements,
            page_bits,
            ..
        } => {
            let template = ExtensibleArrayHeader {
                client_id: u8::from(g.filtered),
                element_size: entry_size(g)?,
                max_nelmts_bits: *max_bits,
                index_block_elements: *index_elements,
                data_block_min_elements: *min_elements,
                super_block_min_pointers: *min_pointers,
                page_bits: *page_bits,
                num_super_blocks: 0,
                super_blocks_size: 0,
                num_data_blocks: 0,
                data_blocks_size: 0,
                max_index_set: 0,
                num_elements: 0,
                index_block: Addr::UNDEF,
            };
            write_extensible_array(out, g, stored, &template)?
        }
        ChunkIndex::BTreeV2 {
            node_size,
            split_percent,
            merge_percent,
            ..
        } => write_btree_v2(out, g, stored, *node_size, *split_percent, *merge_percent)?,
        _ => Addr::UNDEF,
    };
    Ok(index)
}

fn write_fixed_array(
    out: &mut dyn IndexSink,
    g: &IndexGeometry<'_>,
    stored: &[StoredChunk],
    page_bits: u8,
) -> Result<Addr> {
    let ctx = g.ctx;
    let n = g
        .max_dims
        .iter()
        .zip(g.chunks)
        .try_fold(1u64, |acc, (m, c)| acc.checked_mul(m.div_ceil((*c).max(1))))
        .ok_or_else(|| Error::usage("fixed array size overflows"))?;
    let (entries, _) = array_entries(g, stored, n, None)?;
    let hdr = fixed_array::FixedArrayHeader {
        client_id: u8::from(g.filtered),
        entry_size: entry_size(g)?,
        page_bits,
        max_entries: n,
        data_block: Addr::UNDEF,
    };
    let hdr_addr = out.alloc_index(fixed_array::FixedArrayHeader::encoded_size(ctx) as u64);
    let mut db = Encoder::new();
    fixed_array::encode_data_block_paged(&mut db, ctx, &hdr, hdr_addr, &entries)?;
    let db_addr = out.alloc_index(db.len() as u64);
    out.write_index(db_addr, db.as_bytes())?;
    let mut enc = Encoder::new();
    fixed_array::FixedArrayHeader {
        data_block: db_addr,
        ..hdr
    }
    .encode(&mut enc, ctx);
    out.write_index(hdr_addr, enc.as_bytes())?;
    Ok(hdr_addr)
}

fn write_extensible_array(
    out: &mut dyn IndexSink,
    g: &IndexGeometry<'_>,
    stored: &[StoredChunk],
    template: &ExtensibleArrayHeader,
) -> Result<Addr> {
    let ctx = g.ctx;
    let unlim = g
        .max_dims
        .iter()
        .position(|&m| m == Dataspace::UNLIMITED)
        .unwrap_or(0);
    let n = stored
        .iter()
        .map(|c| linear_index(&c.offsets, g.chunks, g.max_dims, Some(unlim)).saturating_add(1))
        .max()
        .unwrap_or(0);
    let (entries, present) = array_entries(g, stored, n, Some(unlim))?;
    let mut fill = Encoder::new();
    put_entry(&mut fill, ctx.sizes, None, g.size_len)?;
    let hdr_addr = out.alloc_index(ExtensibleArrayHeader::encoded_size(ctx) as u64);
    let built = extensible_array::build_array(
        template,
        hdr_addr,
        &entries,
        fill.as_bytes(),
        &|i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| present.get(i))
                .copied()
                .unwrap_or(false)
        },
        ctx,
        &mut |len| out.alloc_index(len),
    )?;
    for (a, bytes) in &built.blocks {
        out.write_index(*a, bytes)?;
    }
    let mut enc = Encoder::new();
    built.header.encode(&mut enc, ctx);
    out.write_index(hdr_addr, enc.as_bytes())?;
    Ok(hdr_addr)
}

fn write_btree_v2(
    out: &mut dyn IndexSink,
    g: &IndexGeometry<'_>,
    stored: &[StoredChunk],
    node_size: u32,
    split_percent: u8,
    merge_percent: u8,
) -> Result<Addr> {
    let ctx = g.ctx;
    let rank = g.chunks.len();
    let record_size =
        usize::from(ctx.sizes.offsets) + if g.filtered { g.size_len + 4 } else { 0 } + 8 * rank;
    // Records in key order: scaled offsets compared dimension by dimension
    // (row-major order of the chunk grid).
    let scaled = |c: &StoredChunk| -> Vec<u64> {
        c.offsets
            .iter()
            .zip(g.chunks)
            .map(|(o, ch)| o / (*ch).max(1))
            .collect()
    };
    let mut order: Vec<(Vec<u64>, &StoredChunk)> = stored.iter().map(|c| (scaled(c), c)).collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut recs = Encoder::with_capacity(record_size.saturating_mul(stored.len()));
    for (s, c) in &order {
        put_entry(&mut recs, ctx.sizes, Some(c), g.size_len)?;
        for v in s {
            recs.put_u64(*v);
        }
    }
    let raw = recs.into_vec();
    let records: Vec<&[u8]> = raw.chunks(record_size.max(1)).collect();
    let params = BTreeV2Params {
        record_type: if g.filtered { 11 } else { 10 },
        node_size,
        record_size: u16::try_from(record_size).map_err(|_| Error::usage("record size"))?,
        split_percent,
        merge_percent,
    };
    let hdr_addr = out.alloc_index(btree_v2::BTreeV2Header::encoded_len(ctx.sizes) as u64);
    let node = u64::from(node_size);
    let built = btree_v2::build_tree(params, &records, ctx.sizes, &mut || out.alloc_index(node))?;
    for (a, bytes) in &built.nodes {
        out.write_index(*a, bytes)?;
    }
    let mut enc = Encoder::new();
    built.header.encode(&mut enc, ctx.sizes);
    out.write_index(hdr_addr, enc.as_bytes())?;
    Ok(hdr_addr)
}
