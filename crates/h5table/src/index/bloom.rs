//! `CHUNK_BLOOM` (§10.7): per data-bearing chunk, a Bloom filter of the
//! canonical bytes of its non-missing, non-NaN values.
//!
//! Verification policy: a filter is *tampered* (an error citing §12, §10.7
//! and §16) when a value present in its chunk has one of its `k` bits unset —
//! a false negative, the only defect that makes pruning drop matching rows.
//! A filter that merely has bits set that the recomputation with the stored
//! `k`, `m_bits` and `seed` does not set only causes false positives: it is
//! reported as a warning (§10.7), not as tampering.

use super::order::{canonical_bytes, for_each_bloom_position, is_nan};
use super::prune::Predicate;
use super::{chunk_ranges, IndexInfo, HASH_FAMILY};
use crate::model::ColumnSlice;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use h5fmt::format::datatype::Datatype;
use h5fmt::Value;

/// The parameters of a Bloom filter index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomParams {
    /// Number of hash functions.
    pub k: u16,
    /// Bits per filter (a multiple of 8).
    pub m_bits: u64,
    /// MurmurHash3 seed.
    pub seed: u32,
}

impl BloomParams {
    /// Bytes per filter.
    pub fn m_bytes(&self) -> usize {
        (self.m_bits / 8) as usize
    }
}

/// Per-chunk Bloom filters: `filters.len() / m_bytes` rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkBloom {
    /// The parameters.
    pub params: BloomParams,
    /// The packed filters, one row of `m_bytes` per chunk, row-major.
    pub filters: Vec<u8>,
}

impl ChunkBloom {
    /// The number of filter rows.
    pub fn nchunks(&self) -> usize {
        self.filters
            .len()
            .checked_div(self.params.m_bytes())
            .unwrap_or(0)
    }
    /// The filter of chunk `c`.
    pub fn filter(&self, c: usize) -> Option<&[u8]> {
        let m = self.params.m_bytes();
        self.filters.get(c * m..(c + 1) * m)
    }
    /// Whether chunk `c`'s filter has every bit of the canonical key set
    /// (`true` when the chunk has no filter row: nothing is known).
    pub fn may_contain(&self, c: usize, canonical: &[u8]) -> bool {
        let Some(f) = self.filter(c) else { return true };
        let p = self.params;
        let mut all = true;
        for_each_bloom_position(canonical, p.k, p.m_bits, p.seed, |g| {
            all &= f
                .get((g / 8) as usize)
                .is_some_and(|b| b & (1 << (g % 8)) != 0);
        });
        all
    }
}

/// Set the key's bits in one filter (`filter` of `m_bits / 8` bytes).
pub fn insert(filter: &mut [u8], canonical: &[u8], params: BloomParams) {
    for_each_bloom_position(canonical, params.k, params.m_bits, params.seed, |g| {
        if let Some(b) = filter.get_mut((g / 8) as usize) {
            *b |= 1 << (g % 8);
        }
    });
}

/// Compute the filters of rows `[0, nrows)` of a column of type `dtype`
/// (`slice` holds at least those rows), one per data-bearing chunk. Missing
/// and NaN values are never inserted; values without a canonical form are
/// skipped (the datatype then admits no Bloom index, see
/// [`super::order::has_canonical_bytes`]).
pub fn compute(
    dtype: &Datatype,
    slice: &ColumnSlice,
    nrows: u64,
    chunk_len: Option<u64>,
    params: BloomParams,
) -> ChunkBloom {
    let nrows = nrows
        .min(slice.values.len() as u64)
        .min(slice.missing.len() as u64);
    let ranges = chunk_ranges(nrows, chunk_len);
    let m = params.m_bytes();
    let mut filters = alloc::vec![0u8; ranges.len() * m];
    for (c, r) in ranges.iter().enumerate() {
        let f = &mut filters[c * m..(c + 1) * m];
        for i in r.start as usize..r.end as usize {
            if let Some(key) = insertable(dtype, &slice.values[i], slice.missing[i]) {
                insert(f, &key, params);
            }
        }
    }
    ChunkBloom { params, filters }
}

/// The canonical key a row contributes to its chunk's filter, if any.
pub fn insertable(dtype: &Datatype, v: &Value, missing: bool) -> Option<Vec<u8>> {
    if missing || is_nan(v) {
        return None;
    }
    canonical_bytes(dtype, v)
}

/// Read a stored `CHUNK_BLOOM`: rank 2 `uint8` of shape
/// `(≥ nchunks, m_bytes)` with `m_bits = 8 · m_bytes`, `k`, `seed` and
/// `hash_family = "murmur3_x64_128_double"`.
///
/// # Errors
/// A message describing the structural problem.
pub fn load(info: &IndexInfo, nchunks: u64) -> Result<ChunkBloom, String> {
    let params = check_structure_params(info, nchunks)?;
    let ds = &info.dataset;
    let shape = ds.shape();
    let filters = ds.read_raw().map_err(|e| format!("cannot be read: {e}"))?;
    if filters.len() as u64 != shape[0].saturating_mul(shape[1]) {
        return Err("the data does not match the shape".into());
    }
    Ok(ChunkBloom { params, filters })
}

/// The chunks of `chunks` (increasing, below `nchunks`) whose stored
/// filter may hold a row equal to the predicate's literal(s), as
/// [`candidate_chunks`] answers from the whole index, but reading only the
/// filter bytes the literals' bit positions fall in (one point selection
/// over the listed chunks' rows): a few bytes per chunk instead of
/// `m_bits / 8`. Range predicates and literals without a canonical form
/// keep every listed chunk.
///
/// # Errors
/// A message describing a structural problem or a read error.
pub fn probe_chunks(
    info: &IndexInfo,
    nchunks: u64,
    dtype: &Datatype,
    chunks: &[u64],
    pred: &Predicate,
) -> Result<Vec<u64>, String> {
    let params = check_structure_params(info, nchunks)?;
    let Some(keys) = literal_keys(dtype, pred) else {
        return Ok(chunks.to_vec());
    };
    // Each key's bit positions, and the sorted distinct bytes they fall in.
    let mut bits: Vec<Vec<u64>> = Vec::new();
    let mut bytes: Vec<u64> = Vec::new();
    for k in &keys {
        let mut b = Vec::new();
        for_each_bloom_position(k, params.k, params.m_bits, params.seed, |g| b.push(g));
        bytes.extend(b.iter().map(|g| g / 8));
        bits.push(b);
    }
    bytes.sort_unstable();
    bytes.dedup();
    if bytes.len() as u64 > params.m_bits / 64 {
        // Many literals: whole filter rows cost less than the byte columns.
        let b = load(info, nchunks)?;
        return Ok(chunks
            .iter()
            .copied()
            .filter(|&c| keys.iter().any(|k| b.may_contain(c as usize, k)))
            .collect());
    }
    let (Some(&first), Some(&last)) = (chunks.first(), chunks.last()) else {
        return Ok(Vec::new());
    };
    // One column of filter bytes at a time, over the filters from the first
    // listed chunk to the last: a read touches only the storage chunks
    // holding that byte (a point selection would read their bounding box).
    let span = usize::try_from(last - first + 1).map_err(|_| String::from("too many chunks"))?;
    let mut got: Vec<u8> = Vec::new();
    got.try_reserve_exact(span.saturating_mul(bytes.len()))
        .map_err(|_| String::from("too many filter bytes to probe"))?;
    got.resize(span * bytes.len(), 0);
    for (j, &b) in bytes.iter().enumerate() {
        let sel = h5fmt::data::hyperslab::Selection::Hyperslab(alloc::vec![
            h5fmt::data::hyperslab::SliceDim {
                start: first,
                stride: 1,
                count: last - first + 1,
                block: 1,
            },
            h5fmt::data::hyperslab::SliceDim {
                start: b,
                stride: 1,
                count: 1,
                block: 1,
            },
        ]);
        let col = info
            .dataset
            .read_slice_raw(&sel)
            .map_err(|e| format!("cannot be read: {e}"))?;
        for (i, v) in col.into_iter().enumerate().take(span) {
            got[i * bytes.len() + j] = v;
        }
    }
    let set = |row: &[u8], g: u64| {
        bytes
            .binary_search(&(g / 8))
            .ok()
            .and_then(|i| row.get(i))
            .is_some_and(|b| b & (1 << (g % 8)) != 0)
    };
    Ok(chunks
        .iter()
        .copied()
        .filter(|&c| {
            let i = (c - first) as usize * bytes.len();
            // (Always within `got`; a chunk it could not cover is kept.)
            got.get(i..i + bytes.len())
                .is_none_or(|row| bits.iter().any(|b| b.iter().all(|&g| set(row, g))))
        })
        .collect())
}

/// The canonical keys of an `=` or `IN` predicate's literals; `None` when
/// the filter cannot answer it (a range predicate, a NaN literal, one
/// without a canonical form in the column).
fn literal_keys(dtype: &Datatype, pred: &Predicate) -> Option<Vec<Vec<u8>>> {
    let lits: Vec<&Value> = match pred {
        Predicate::Eq(v) => alloc::vec![v],
        Predicate::In(vs) => vs.iter().collect(),
        _ => return None,
    };
    lits.into_iter()
        .map(|v| canonical_bytes(dtype, v).filter(|_| !is_nan(v)))
        .collect()
}

/// Check a stored `CHUNK_BLOOM`'s structure (as [`load`] does) without
/// reading its filters.
///
/// # Errors
/// A message describing the structural problem.
pub fn check_structure(info: &IndexInfo, nchunks: u64) -> Result<(), String> {
    check_structure_params(info, nchunks).map(|_| ())
}

fn check_structure_params(info: &IndexInfo, nchunks: u64) -> Result<BloomParams, String> {
    let ds = &info.dataset;
    let shape = ds.shape();
    if shape.len() != 2 {
        return Err(format!("the dataset has rank {}, not 2", shape.len()));
    }
    if !matches!(
        ds.dtype(),
        Datatype::Integer {
            size: 1,
            signed: false,
            ..
        }
    ) {
        return Err("the datatype is not uint8".into());
    }
    let p = &info.params;
    match p.hash_family.as_deref() {
        Some(HASH_FAMILY) => {}
        Some(other) => {
            return Err(format!(
                "hash_family is {other:?}, not {HASH_FAMILY:?}; the filter cannot be evaluated"
            ))
        }
        None => return Err("hash_family is absent".into()),
    }
    let (Some(k), Some(m_bits), Some(seed)) = (p.k, p.m_bits, p.seed) else {
        return Err("k (uint16), m_bits (uint64) and seed (uint32) must all be present".into());
    };
    if m_bits == 0 || m_bits % 8 != 0 {
        return Err(format!("m_bits = {m_bits} is not a positive multiple of 8"));
    }
    if m_bits / 8 != shape[1] {
        return Err(format!(
            "m_bits = {m_bits} but rows have {} bytes (m_bits must be 8 · m_bytes)",
            shape[1]
        ));
    }
    if shape[0] < nchunks {
        return Err(format!(
            "it has {} filters, fewer than the column's {nchunks} data-bearing chunks",
            shape[0]
        ));
    }
    Ok(BloomParams { k, m_bits, seed })
}

/// A false negative: a row whose value is present in its chunk but whose
/// key has a bit unset in the stored filter (the first one found), as
/// `(chunk, row)`.
pub fn first_false_negative(
    stored: &ChunkBloom,
    dtype: &Datatype,
    slice: &ColumnSlice,
    nrows: u64,
    chunk_len: Option<u64>,
) -> Option<(u64, u64)> {
    let nrows = nrows
        .min(slice.values.len() as u64)
        .min(slice.missing.len() as u64);
    for (c, r) in chunk_ranges(nrows, chunk_len).into_iter().enumerate() {
        for i in r {
            if let Some(key) =
                insertable(dtype, &slice.values[i as usize], slice.missing[i as usize])
            {
                if !stored.may_contain(c, &key) {
                    return Some((c as u64, i));
                }
            }
        }
    }
    None
}

/// The first chunk (below `nchunks`) whose stored filter differs from the
/// recomputation, with the number of bits set in the stored filter but not
/// in the recomputed one.
pub fn first_extra_bits(
    stored: &ChunkBloom,
    computed: &ChunkBloom,
    nchunks: u64,
) -> Option<(u64, u32)> {
    (0..nchunks as usize).find_map(|c| {
        let (s, k) = (stored.filter(c)?, computed.filter(c)?);
        let extra: u32 = s.iter().zip(k).map(|(a, b)| (a & !b).count_ones()).sum();
        (s != k).then_some((c as u64, extra))
    })
}

/// The chunks (below `nchunks`) that may hold a row equal to the predicate's
/// literal(s): those whose filter has every bit of the literal's canonical
/// key set. Only `=` and `IN` prune; range predicates, NaN literals (never
/// queried, §10.7) and literals without a canonical form in the column
/// keep every chunk.
pub fn candidate_chunks(
    bloom: &ChunkBloom,
    dtype: &Datatype,
    nchunks: u64,
    pred: &Predicate,
) -> Vec<u64> {
    let Some(keys) = literal_keys(dtype, pred) else {
        return (0..nchunks).collect();
    };
    (0..nchunks)
        .filter(|&c| keys.iter().any(|k| bloom.may_contain(c as usize, k)))
        .collect()
}
