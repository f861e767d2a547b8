//! Lazy reads of a remote file, sans-IO: the reader runs over a [`RangeCache`] of fixed-size
//! blocks; a read that touches a block not fetched yet fails, and the cache remembers which
//! blocks it wanted. The JS side (`index.js`, `H5File.fromUrl`) fetches those ranges with HTTP
//! `Range` requests (coalesced, concurrently), supplies them, and runs the operation again.
//! Every round adds at least one block and blocks are evicted only between operations, so an
//! operation ends after at most as many rounds as it reads blocks.

use h5fmt::data::hyperslab::Selection;
use h5fmt::format::message::{ChunkIndex, Layout};
use h5fmt::io::ReadAt;
use h5fmt::read::btree_v1::chunk_records_between;
use h5fmt::read::chunks::chunk_records;
use h5fmt::{Dataset, Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use wasm_bindgen::prelude::*;

/// The message of the error a read of missing blocks fails with (never shown when the JS
/// side drives the retries).
const MISSING: &str = "bytes of the remote file not fetched yet";

struct Block {
    data: Vec<u8>,
    /// The operation count when the block was last read (least recently used goes first).
    used: u64,
}

#[derive(Default)]
struct State {
    blocks: BTreeMap<u64, Block>,
    missing: BTreeSet<u64>,
    bytes: u64,
    ops: u64,
}

/// The fetched blocks of a remote file; the byte source of an `H5File.fromUrl` file.
pub(crate) struct Blocks {
    len: u64,
    block: u64,
    budget: u64,
    state: Mutex<State>,
}

impl Blocks {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held; a poisoned lock still holds whole blocks.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The length of block `b` (the last block of the file may be short).
    fn block_len(&self, b: u64) -> u64 {
        let start = b.saturating_mul(self.block);
        self.len.saturating_sub(start).min(self.block)
    }
}

impl ReadAt for Blocks {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len() as u64;
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                Error::truncated(
                    format!("read of {n} bytes past end of file ({} bytes)", self.len),
                    pos,
                )
            })?;
        if n == 0 {
            return Ok(());
        }
        let (first, last) = (pos / self.block, (end - 1) / self.block);
        let mut st = self.lock();
        let absent: Vec<u64> = (first..=last)
            .filter(|b| !st.blocks.contains_key(b))
            .collect();
        if !absent.is_empty() {
            st.missing.extend(absent);
            return Err(Error::io(MISSING));
        }
        let ops = st.ops;
        let mut at = pos;
        let mut out = buf;
        for b in first..=last {
            let Some(blk) = st.blocks.get_mut(&b) else {
                return Err(Error::io(MISSING));
            };
            blk.used = ops;
            let from = usize::try_from(at - b * self.block).map_err(|_| Error::io(MISSING))?;
            let part = blk.data.get(from..).unwrap_or(&[]);
            let take = part.len().min(out.len());
            let (head, rest) = out.split_at_mut(take);
            head.copy_from_slice(part.get(..take).unwrap_or(&[]));
            out = rest;
            at += take as u64;
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(Error::io(MISSING))
        }
    }
}

/// The block cache of a remote file, driven by `index.js`: it starts an operation with
/// [`RangeCache::begin`], runs it, and while [`RangeCache::take_missing`] returns ranges,
/// fetches them, [`RangeCache::supply`]s the bytes and runs the operation again.
#[wasm_bindgen]
pub struct RangeCache {
    pub(crate) blocks: Arc<Blocks>,
}

#[wasm_bindgen]
impl RangeCache {
    /// A cache of a file of `len` bytes read in blocks of `block_size` bytes, keeping about
    /// `cache_bytes` between operations.
    ///
    /// # Errors
    /// Thrown for a zero or non-integer block size or length.
    #[wasm_bindgen(constructor)]
    pub fn new(len: f64, block_size: f64, cache_bytes: f64) -> Result<RangeCache, JsError> {
        let len = js_u64(len, "file length")?;
        let block = js_u64(block_size, "block size")?;
        if block == 0 {
            return Err(JsError::new("usage: the block size must be positive"));
        }
        Ok(RangeCache {
            blocks: Arc::new(Blocks {
                len,
                block,
                budget: js_u64(cache_bytes, "cache size")?,
                state: Mutex::new(State::default()),
            }),
        })
    }

    /// Start an operation: forget what the last one missed, and evict the least recently used
    /// blocks down to the budget.
    pub fn begin(&self) {
        let b = &self.blocks;
        let mut st = b.lock();
        st.ops += 1;
        st.missing.clear();
        if st.bytes <= b.budget {
            return;
        }
        let mut by_age: Vec<(u64, u64)> = st.blocks.iter().map(|(&k, v)| (v.used, k)).collect();
        by_age.sort_unstable();
        for (_, k) in by_age {
            if st.bytes <= b.budget {
                break;
            }
            if let Some(old) = st.blocks.remove(&k) {
                st.bytes = st.bytes.saturating_sub(old.data.len() as u64);
            }
        }
    }

    /// The byte ranges the last run wanted and did not find, adjacent blocks merged:
    /// `[start0, end0, start1, end1, …]` (end exclusive). Empty when the run saw all it read.
    #[wasm_bindgen(js_name = takeMissing)]
    pub fn take_missing(&self) -> Vec<f64> {
        let b = &self.blocks;
        let missing = std::mem::take(&mut b.lock().missing);
        let mut out: Vec<f64> = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        for k in missing {
            run = match run {
                Some((s, e)) if e == k => Some((s, k + 1)),
                Some((s, e)) => {
                    push_range(&mut out, b, s, e);
                    Some((k, k + 1))
                }
                None => Some((k, k + 1)),
            };
        }
        if let Some((s, e)) = run {
            push_range(&mut out, b, s, e);
        }
        out
    }

    /// Mark the blocks of `[start, end)` not held yet as missing (a prefetch: the chunks of a
    /// selection, fetched together before the read).
    ///
    /// # Errors
    /// Thrown for bounds that are not non-negative integers.
    pub fn want(&self, start: f64, end: f64) -> Result<(), JsError> {
        let b = &self.blocks;
        let end = js_u64(end, "range end")?.min(b.len);
        let start = js_u64(start, "range start")?;
        if start >= end {
            return Ok(());
        }
        let mut st = b.lock();
        for k in start / b.block..=(end - 1) / b.block {
            if !st.blocks.contains_key(&k) {
                st.missing.insert(k);
            }
        }
        Ok(())
    }

    /// The bytes fetched for the range starting at `start` (a block boundary): whole blocks,
    /// the file's last block short.
    ///
    /// # Errors
    /// Thrown when `start` is not a block boundary or the bytes do not end at a block
    /// boundary or at the end of the file (a server that sent too few or too many).
    pub fn supply(&self, start: f64, bytes: &[u8]) -> Result<(), JsError> {
        let b = &self.blocks;
        let start = js_u64(start, "range start")?;
        let n = bytes.len() as u64;
        let fits = start
            .checked_add(n)
            .is_some_and(|e| e <= b.len && (e % b.block == 0 || e == b.len));
        if start % b.block != 0 || !fits {
            return Err(JsError::new(&format!(
                "corrupt: the server sent {n} bytes at {start}, which do not make whole blocks \
                 of {} bytes of a file of {} bytes",
                b.block, b.len
            )));
        }
        let mut st = b.lock();
        let ops = st.ops;
        let mut k = start / b.block;
        let mut rest = bytes;
        while !rest.is_empty() {
            let take = usize::try_from(b.block_len(k))
                .unwrap_or(usize::MAX)
                .min(rest.len());
            let (data, tail) = rest.split_at(take);
            let old = st.blocks.insert(
                k,
                Block {
                    data: data.to_vec(),
                    used: ops,
                },
            );
            st.bytes = st.bytes.saturating_add(take as u64);
            if let Some(old) = old {
                st.bytes = st.bytes.saturating_sub(old.data.len() as u64);
            }
            rest = tail;
            k += 1;
        }
        Ok(())
    }

    /// Bytes held now.
    #[wasm_bindgen(getter, js_name = cachedBytes)]
    pub fn cached_bytes(&self) -> f64 {
        self.blocks.lock().bytes as f64
    }

    /// The file's length.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.blocks.len as f64
    }
}

fn push_range(out: &mut Vec<f64>, b: &Blocks, first: u64, end: u64) {
    let s = first.saturating_mul(b.block);
    let e = end.saturating_mul(b.block).min(b.len);
    out.push(s as f64);
    out.push(e as f64);
}

/// A non-negative integer from JS (exact below 2^53).
pub(crate) fn js_u64(v: f64, what: &str) -> Result<u64, JsError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
        Ok(v as u64)
    } else {
        Err(JsError::new(&format!(
            "usage: {what} must be a non-negative integer, not {v}"
        )))
    }
}

/// The absolute byte ranges (`[start, end, …]`) of the stored chunks of `d` that `sel`'s
/// bounding box touches, for fetching them together before the read; empty when `d` is not
/// chunked. A version-1 B-tree index is walked only along the box (as the read itself does),
/// other indexes are read whole (they are arrays a few blocks long).
///
/// # Errors
/// As reading the chunk index.
pub(crate) fn chunk_ranges(d: &Dataset, sel: &Selection) -> Result<Vec<f64>> {
    let Layout::Chunked(layout) = d.layout() else {
        return Ok(Vec::new());
    };
    let rank = d.shape().len();
    let (lo, hi) = sel.bounds(rank);
    if lo.len() != rank || hi.len() != rank || hi.iter().zip(&lo).any(|(h, l)| h <= l) {
        return Ok(Vec::new());
    }
    let file = d.file();
    let records = match &layout.index {
        ChunkIndex::BTreeV1 { addr } if !addr.is_undef() => {
            // The chunk offsets of the box's first and last corners.
            let corner = |v: &[u64], minus: u64| -> Vec<u64> {
                v.iter()
                    .zip(&layout.dims)
                    .map(|(&x, &c)| x.saturating_sub(minus) / c.max(1) * c.max(1))
                    .collect()
            };
            let (first, last) = (corner(&lo, 0), corner(&hi, 1));
            chunk_records_between(file.storage(), file.ctx(), *addr, rank, &first, &last)?
        }
        _ => {
            let es =
                usize::try_from(d.dtype().size()).map_err(|_| Error::limit("element too large"))?;
            chunk_records(
                file.storage(),
                file.ctx(),
                layout,
                d.shape(),
                d.space().max_dims_or_dims(),
                es,
                !d.filters().filters.is_empty(),
            )?
        }
    };
    let base = file.superblock().base_address;
    let mut out = Vec::new();
    for r in records {
        let touches = r.offsets.len() == rank
            && r.offsets
                .iter()
                .zip(&layout.dims)
                .zip(lo.iter().zip(&hi))
                .all(|((&o, &c), (&l, &h))| o < h && o.saturating_add(c) > l);
        if touches && !r.addr.is_undef() {
            let start = base.saturating_add(r.addr.0);
            out.push(start as f64);
            out.push(start.saturating_add(r.size) as f64);
        }
    }
    Ok(out)
}
