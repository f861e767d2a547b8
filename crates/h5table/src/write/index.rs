//! Writing and maintaining search indexes (§10, §11) through a
//! [`h5fmt::FileEditor`].
//!
//! Every index dataset written here lives in the table's `SEARCH_INDEXES`
//! group under the name `<column>.<KIND>` (a `BITMAP`'s values dataset as
//! `<column>.BITMAP.VALUES`), is chunked and growable (so appends extend it
//! in place), carries `KIND` (fixed-length ASCII) and the upstream draft's
//! validity tokens `SOURCE_GENERATION` / `SOURCE_NROWS` (scalar `uint64`),
//! and is linked from the column's `SEARCH_INDEX_LIST` (`H5T_STD_REF`).
//!
//! Content, per family, exactly as [`crate::index`] recomputes it:
//!
//! * `CHUNK_MINMAX`: compound `{min, max, nan_count, fill_count, n}`
//!   (`min`/`max` of the column's datatype, counts `uint64`, packed); `min`
//!   and `max` hold the file bytes of the *first* row of the chunk attaining
//!   the extreme (so of `-0` and `+0`, whichever comes first), the column's
//!   fill value for a chunk with no orderable value.
//! * `SORTED_ROWS`: `uint64` row positions, `nan_tail_length`,
//!   `fill_tail_length` (`uint64`), `ordered` = true (§6 boolean).
//! * `BITMAP`: `uint8` `(K, ceil(NROWS/8))`; the values dataset holds the
//!   distinct non-missing, non-NaN values in the HEP001 order, each as the
//!   file bytes of its first row; `VALUES` (scalar reference), `ordered` =
//!   true.
//! * `CHUNK_BLOOM`: `uint8` `(n_chunks, m_bits/8)`, `k` (`uint16`),
//!   `m_bits` (`uint64`), `seed` (`uint32`), `hash_family` (fixed ASCII).
//!   Sized by [`bloom_size`] from the target false-positive rate and the
//!   largest number of distinct values in one chunk.

use crate::error::{Error, Result};
use crate::index::bloom::{insert, insertable, BloomParams};
use crate::index::order::{cmp_rows, cmp_values, has_canonical_bytes, has_order, is_nan};
use crate::index::typed::{self, Src, Typed};
use crate::index::{bitmap, chunk_count, chunk_ranges, sorted, IndexInfo, IndexKind, HASH_FAMILY};
use crate::model::{Column, ColumnSlice};
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;
use core::cmp::Ordering;
use core::ops::Range;
use h5fmt::format::datatype::Datatype;
use h5fmt::write::edit::NewDataset;
use h5fmt::write::{compound_dtype, AttrValue};
use h5fmt::{FileEditor, Value};

/// A search index to build on a column ([`super::ColumnSpec::index`],
/// [`super::TableEditor::build_index`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IndexSpec {
    /// `CHUNK_MINMAX` (§10.4).
    ChunkMinMax,
    /// `SORTED_ROWS` (§10.5).
    SortedRows,
    /// `BITMAP` (§10.6) over the column's distinct values; refused when
    /// there are more than `max_values` of them.
    Bitmap {
        /// The most distinct values accepted.
        max_values: usize,
    },
    /// `CHUNK_BLOOM` (§10.7).
    ChunkBloom {
        /// Target false-positive rate per chunk, in (0, 1).
        fpr: f64,
        /// MurmurHash3 seed.
        seed: u32,
    },
}

impl IndexSpec {
    /// `CHUNK_MINMAX`.
    pub fn minmax() -> IndexSpec {
        IndexSpec::ChunkMinMax
    }
    /// `SORTED_ROWS`.
    pub fn sorted() -> IndexSpec {
        IndexSpec::SortedRows
    }
    /// `BITMAP` over at most 4096 distinct values.
    pub fn bitmap() -> IndexSpec {
        IndexSpec::Bitmap { max_values: 4096 }
    }
    /// `CHUNK_BLOOM` with a 1 % false-positive rate and seed 0.
    pub fn bloom() -> IndexSpec {
        IndexSpec::ChunkBloom { fpr: 0.01, seed: 0 }
    }
    /// The family.
    pub fn kind(&self) -> IndexKind {
        match self {
            IndexSpec::ChunkMinMax => IndexKind::ChunkMinMax,
            IndexSpec::SortedRows => IndexKind::SortedRows,
            IndexSpec::Bitmap { .. } => IndexKind::Bitmap,
            IndexSpec::ChunkBloom { .. } => IndexKind::ChunkBloom,
        }
    }
}

/// What an append does to a column's `SORTED_ROWS` and `BITMAP` indexes
/// (`CHUNK_MINMAX` and `CHUNK_BLOOM` are always updated incrementally).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppendIndexes {
    /// Recompute them over the new rows `[0, NROWS)` before the commit (a
    /// `BITMAP` over the new rows' distinct values, whatever their number).
    #[default]
    Rebuild,
    /// Delete them before the commit.
    Drop,
}

/// Whether `kind` may be built on a column of `dtype` (§10.4–§10.7):
/// `CHUNK_MINMAX`, `SORTED_ROWS` and `BITMAP` need a HEP001 order,
/// `CHUNK_BLOOM` a canonical byte representation.
pub fn kind_allowed(kind: &IndexKind, dtype: &Datatype) -> bool {
    match kind {
        IndexKind::ChunkMinMax | IndexKind::SortedRows | IndexKind::Bitmap => has_order(dtype),
        IndexKind::ChunkBloom => has_canonical_bytes(dtype),
        IndexKind::Unknown(_) => false,
    }
}

/// `(m_bits, k)` of a Bloom filter for `n` distinct values at
/// false-positive rate `fpr`: `m = ceil(−n·ln p / ln²2)` rounded up to a
/// multiple of 8 (at least 64), `k = round(m/n · ln 2)` in `1..=32`.
pub fn bloom_size(n: u64, fpr: f64) -> (u64, u16) {
    let n = n.max(1) as f64;
    let p = if fpr > 0.0 && fpr < 1.0 { fpr } else { 0.01 };
    let ln2 = core::f64::consts::LN_2;
    let m = (-n * std::primitive::f64::ln(p) / (ln2 * ln2)).ceil();
    let m = if m.is_finite() && m > 0.0 {
        m.min(1e12) as u64
    } else {
        64
    };
    let m = m.max(64).div_ceil(8) * 8;
    let k = ((m as f64 / n) * ln2).round().clamp(1.0, 32.0) as u16;
    (m, k)
}

std::thread_local! {
    static GENERIC_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Testing aid: while `on`, index builds and refreshes on this thread take
/// the generic [`Value`] path for every column, not the typed fast path of
/// numeric columns ([`crate::index::typed`]); both must write the same
/// bytes.
#[doc(hidden)]
pub fn force_generic_index_paths(on: bool) {
    GENERIC_ONLY.with(|g| g.set(on));
}

/// The typed fast path of a column, unless disabled on this thread.
fn typed_of(col: &Column) -> Option<Typed> {
    if GENERIC_ONLY.with(Cell::get) {
        None
    } else {
        Typed::of(col)
    }
}

/// The bytes of one element to be written: fixed-size file bytes, or the
/// content of a variable-length string (stored through the global heap).
#[derive(Debug, Clone)]
enum Elem {
    Fixed(Vec<u8>),
    Var(Vec<u8>),
}

/// A column's rows `[base, base + n)`: decoded values with the missing
/// mask, and the file bytes (fixed-size columns).
pub(crate) struct Rows {
    base: u64,
    slice: ColumnSlice,
    raw: Vec<u8>,
    es: usize,
    var: bool,
}

impl Rows {
    pub(crate) fn read(col: &Column, rows: Range<u64>) -> Result<Rows> {
        let var = col.dtype().is_variable_length();
        let slice = col.read(rows.clone())?;
        let raw = if var {
            Vec::new()
        } else {
            col.read_raw(rows.clone())?
        };
        Ok(Rows {
            base: rows.start,
            slice,
            raw,
            es: col.dtype().size() as usize,
            var,
        })
    }
    fn value(&self, r: u64) -> &Value {
        &self.slice.values[(r - self.base) as usize]
    }
    fn missing(&self, r: u64) -> bool {
        self.slice.missing[(r - self.base) as usize]
    }
    fn elem(&self, r: u64) -> Elem {
        let i = (r - self.base) as usize;
        if self.var {
            Elem::Var(value_bytes(&self.slice.values[i]))
        } else {
            Elem::Fixed(self.raw[i * self.es..(i + 1) * self.es].to_vec())
        }
    }
}

fn value_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) => s.as_bytes().to_vec(),
        Value::RawStr(b) | Value::Opaque(b) => b.clone(),
        _ => Vec::new(),
    }
}

fn fill_elem(col: &Column) -> Elem {
    let f = col.fill();
    if col.dtype().is_variable_length() {
        Elem::Var(f.value.as_ref().map(value_bytes).unwrap_or_default())
    } else if f.bytes.len() == col.dtype().size() as usize {
        Elem::Fixed(f.bytes.clone())
    } else {
        Elem::Fixed(vec![0; col.dtype().size() as usize])
    }
}

/// File bytes of `elems` (variable-length ones stored in the global heap).
fn encode_elems(ed: &mut FileEditor, dtype: &Datatype, elems: &[Elem]) -> Result<Vec<u8>> {
    if !dtype.is_variable_length() {
        let mut out = Vec::new();
        for e in elems {
            if let Elem::Fixed(b) = e {
                out.extend_from_slice(b);
            }
        }
        return Ok(out);
    }
    let vals: Vec<Vec<u8>> = elems
        .iter()
        .map(|e| match e {
            Elem::Var(b) | Elem::Fixed(b) => b.clone(),
        })
        .collect();
    let mut out = Vec::new();
    for part in vals.chunks(30_000) {
        out.extend(ed.put_varlen(dtype, part)?);
    }
    Ok(out)
}

/// One computed `CHUNK_MINMAX` entry, extremes as rows.
struct MinMaxRows {
    min: Option<u64>,
    max: Option<u64>,
    nan: u64,
    fill: u64,
    n: u64,
}

fn minmax_rows(rows: &Rows, r: Range<u64>) -> MinMaxRows {
    let mut e = MinMaxRows {
        min: None,
        max: None,
        nan: 0,
        fill: 0,
        n: r.end - r.start,
    };
    for i in r {
        let v = rows.value(i);
        let nan = is_nan(v);
        let miss = rows.missing(i);
        if nan {
            e.nan += 1;
        }
        if miss {
            e.fill += 1;
        }
        if nan || miss {
            continue;
        }
        if e.min
            .is_none_or(|m| cmp_values(v, rows.value(m)) == Some(Ordering::Less))
        {
            e.min = Some(i);
        }
        if e.max
            .is_none_or(|m| cmp_values(v, rows.value(m)) == Some(Ordering::Greater))
        {
            e.max = Some(i);
        }
    }
    e
}

/// The `CHUNK_MINMAX` compound datatype of a column.
pub fn minmax_dtype(col: &Datatype) -> Datatype {
    let u64le = Datatype::int_le(8, false);
    compound_dtype(&[
        ("min", col.clone()),
        ("max", col.clone()),
        ("nan_count", u64le.clone()),
        ("fill_count", u64le.clone()),
        ("n", u64le),
    ])
}

/// The file bytes of the `CHUNK_MINMAX` entries of chunks `chunks`
/// (`rows` covering them).
fn minmax_bytes(
    ed: &mut FileEditor,
    col: &Column,
    rows: &Rows,
    nrows: u64,
    chunks: Range<u64>,
) -> Result<Vec<u8>> {
    let cl = col.chunk_len();
    let fill = fill_elem(col);
    let mut extremes = Vec::new();
    let mut counts = Vec::new();
    for c in chunks {
        let r = crate::index::chunk_range(c, nrows, cl);
        let e = minmax_rows(rows, r);
        extremes.push(e.min.map_or_else(|| fill.clone(), |m| rows.elem(m)));
        extremes.push(e.max.map_or_else(|| fill.clone(), |m| rows.elem(m)));
        counts.push([e.nan, e.fill, e.n]);
    }
    let ext = encode_elems(ed, col.dtype(), &extremes)?;
    let es = col.dtype().size() as usize;
    let mut out = Vec::with_capacity(counts.len() * (2 * es + 24));
    for (i, c) in counts.iter().enumerate() {
        out.extend_from_slice(&ext[2 * i * es..(2 * i + 2) * es]);
        for x in c {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    Ok(out)
}

/// [`minmax_bytes`] on the typed fast path.
fn minmax_bytes_typed(src: &Src, nrows: u64, chunks: Range<u64>) -> Result<Vec<u8>> {
    let stats = typed::minmax(src, nrows, chunks)?;
    let t = src.typed();
    let fill = match fill_elem(src.column()) {
        Elem::Fixed(b) | Elem::Var(b) => b,
    };
    let es = t.num.size();
    let mut out = Vec::new();
    out.try_reserve_exact(stats.len() * (2 * es + 24))
        .map_err(|_| too_large("CHUNK_MINMAX"))?;
    for e in stats {
        for x in [e.min, e.max] {
            match x {
                Some(b) => out.extend(t.num.file_bytes(b)),
                None => out.extend_from_slice(&fill),
            }
        }
        for x in [e.nan_count, e.fill_count, e.n] {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    Ok(out)
}

fn too_large(what: &str) -> Error {
    Error::Hdf5(h5fmt::Error::limit(format!("{what}: cannot allocate")))
}

/// The bytes of the Bloom filters of chunks `chunks`.
fn bloom_bytes(
    col: &Column,
    rows: &Rows,
    nrows: u64,
    chunks: Range<u64>,
    p: BloomParams,
) -> Vec<u8> {
    let m = p.m_bytes();
    let mut out = Vec::new();
    for c in chunks {
        let mut f = vec![0u8; m];
        for i in crate::index::chunk_range(c, nrows, col.chunk_len()) {
            if let Some(key) = insertable(col.dtype(), rows.value(i), rows.missing(i)) {
                insert(&mut f, &key, p);
            }
        }
        out.extend(f);
    }
    out
}

/// The largest number of distinct canonical keys in one chunk.
fn max_distinct(col: &Column, rows: &Rows, nrows: u64) -> u64 {
    chunk_ranges(nrows, col.chunk_len())
        .into_iter()
        .map(|r| {
            let mut s = BTreeSet::new();
            for i in r {
                if let Some(k) = insertable(col.dtype(), rows.value(i), rows.missing(i)) {
                    s.insert(k);
                }
            }
            s.len() as u64
        })
        .max()
        .unwrap_or(0)
}

/// The distinct non-missing, non-NaN values in the HEP001 order, each as
/// its first row.
fn distinct_rows(rows: &Rows, nrows: u64) -> Vec<u64> {
    let mut idx: Vec<u64> = (0..nrows)
        .filter(|&i| !rows.missing(i) && !is_nan(rows.value(i)))
        .collect();
    idx.sort_by(|&a, &b| cmp_rows((rows.value(a), false), (rows.value(b), false)));
    idx.dedup_by(|b, a| cmp_values(rows.value(*a), rows.value(*b)) == Some(Ordering::Equal));
    idx
}

/// Write the permutation `perm` (`uint64`, little-endian) into the 1-D
/// dataset `path` from element 0, a million entries at a time (no byte
/// copy of the whole permutation).
fn write_perm(ed: &mut FileEditor, path: &str, perm: &[u64]) -> Result<()> {
    const PIECE: usize = 1 << 20;
    let mut buf = Vec::new();
    for (i, part) in perm.chunks(PIECE).enumerate() {
        buf.clear();
        buf.try_reserve_exact(part.len() * 8)
            .map_err(|_| too_large("SORTED_ROWS"))?;
        for x in part {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        ed.write_box(path, &[(i * PIECE) as u64], &[part.len() as u64], &buf)?;
    }
    Ok(())
}

/// The `SORTED_ROWS` permutation of rows `[0, nrows)`.
fn sorted_perm(col: &Column, fast: Option<Src>, nrows: u64) -> Result<sorted::SortedRows> {
    match fast {
        Some(src) => typed::sorted_rows(&src, nrows),
        None => Ok(sorted::compute(&Rows::read(col, 0..nrows)?.slice, nrows)),
    }
}

/// A computed `BITMAP`: `k` values as file bytes, bit rows of `row_bytes`.
struct BitmapBytes {
    k: u64,
    values: Vec<u8>,
    row_bytes: u64,
    bits: Vec<u8>,
}

/// The `BITMAP` of rows `[0, nrows)` over the distinct non-missing,
/// non-NaN values (at most `max_values` of them).
fn bitmap_bytes(
    ed: &mut FileEditor,
    col: &Column,
    fast: Option<Src>,
    nrows: u64,
    max_values: usize,
) -> Result<BitmapBytes> {
    if let Some(src) = fast {
        let b = typed::bitmap(&src, nrows, max_values)?;
        return Ok(BitmapBytes {
            k: b.k as u64,
            values: b.values,
            row_bytes: b.row_bytes as u64,
            bits: b.bits,
        });
    }
    let rows = Rows::read(col, 0..nrows)?;
    let d = distinct_rows(&rows, nrows);
    if d.len() > max_values {
        return Err(Error::Usage(format!(
            "column {:?} has {} distinct values, more than the {max_values} a BITMAP \
             index is built for",
            col.name(),
            d.len()
        )));
    }
    let elems: Vec<Elem> = d.iter().map(|&r| rows.elem(r)).collect();
    let values = encode_elems(ed, col.dtype(), &elems)?;
    let vals: Vec<Value> = d.iter().map(|&r| rows.value(r).clone()).collect();
    let b = bitmap::compute(&rows.slice, nrows, &vals);
    Ok(BitmapBytes {
        k: d.len() as u64,
        values,
        row_bytes: b.row_bytes as u64,
        bits: b.bits,
    })
}

/// The `CHUNK_MINMAX` entries of chunks `chunks` of rows `[0, nrows)`.
fn minmax_chunks(
    ed: &mut FileEditor,
    col: &Column,
    fast: Option<Src>,
    nrows: u64,
    chunks: Range<u64>,
) -> Result<Vec<u8>> {
    if chunks.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(src) = fast {
        return minmax_bytes_typed(&src, nrows, chunks);
    }
    let first = crate::index::chunk_range(chunks.start, nrows, col.chunk_len()).start;
    let rows = Rows::read(col, first..nrows)?;
    minmax_bytes(ed, col, &rows, nrows, chunks)
}

/// The Bloom filters of chunks `chunks` of rows `[0, nrows)`.
fn bloom_chunks(
    col: &Column,
    fast: Option<Src>,
    nrows: u64,
    chunks: Range<u64>,
    p: BloomParams,
) -> Result<Vec<u8>> {
    if chunks.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(src) = fast {
        let keys = typed::bloom_keys(&src, nrows, chunks)?;
        return typed::bloom_filters(&src.typed().num, &keys, p);
    }
    let first = crate::index::chunk_range(chunks.start, nrows, col.chunk_len()).start;
    let rows = Rows::read(col, first..nrows)?;
    Ok(bloom_bytes(col, &rows, nrows, chunks, p))
}

fn chunk_of(n: u64, cap: u64) -> u64 {
    n.clamp(1, cap)
}

/// The chunk shape of a `BITMAP` of `k` bit rows of `rb` bytes: rows of
/// 64 KiB or more one per chunk (a query reads the rows of its values and
/// no others), cut into equal pieces of at most 1 MiB; shorter rows
/// grouped, up to 16 and 64 KiB a chunk.
fn bitmap_chunks(k: u64, rb: u64) -> [u64; 2] {
    const PIECE: u64 = 1 << 20;
    let width = rb.div_ceil(rb.div_ceil(PIECE).max(1)).max(1);
    [chunk_of(k, (65536 / width).clamp(1, 16)), width]
}

/// The chunk shape of a `CHUNK_BLOOM` of `nch` filters of `mb` bytes:
/// about 64 KiB a chunk, cut across the filters into pieces of at most
/// 256 bytes, so that probing a literal (its `k` bits in each filter)
/// reads some `k` chunks of many filters each rather than every filter
/// whole.
fn bloom_chunk_shape(nch: u64, mb: u64) -> [u64; 2] {
    const WIDTH: u64 = 256;
    let width = mb.clamp(1, WIDTH);
    [chunk_of(nch, (65536 / width).max(1)), width]
}

/// Paths of the index (and accompanying) datasets of a column/kind.
pub(crate) fn index_name(column: &str, kind: &IndexKind) -> String {
    format!("{column}.{}", kind.as_str())
}

fn bool_true() -> AttrValue {
    AttrValue::raw(Datatype::bool_enum(), None, vec![1])
}

/// Write new indexes of `specs` on `col` (rows `[0, nrows)`) as datasets
/// in group `sidx`, with tokens `generation`/`nrows`; returns the index
/// datasets' paths, in the order of `specs`. Nothing links them yet. A
/// column with a typed path is read once for all of them (when there are
/// several).
pub(crate) fn create_indexes(
    ed: &mut FileEditor,
    sidx: &str,
    col: &Column,
    specs: &[IndexSpec],
    nrows: u64,
    generation: u64,
) -> Result<Vec<String>> {
    let pre = match typed_of(col) {
        Some(t) if specs.len() > 1 => Some(typed::load(col, &t, 0..nrows)?),
        _ => None,
    };
    let mut paths = Vec::new();
    for s in specs {
        paths.push(create_index_from(
            ed,
            sidx,
            col,
            *s,
            nrows,
            generation,
            pre.as_deref(),
        )?);
    }
    Ok(paths)
}

/// One index of [`create_indexes`], rows `[0, nrows)` given as their bit patterns
/// (`pre`, from [`typed::load`]) when they are already read.
fn create_index_from(
    ed: &mut FileEditor,
    sidx: &str,
    col: &Column,
    spec: IndexSpec,
    nrows: u64,
    generation: u64,
    pre: Option<&[u64]>,
) -> Result<String> {
    let fast = typed_of(col).map(|t| match pre {
        Some(b) => Src::with_rows(col, t, 0, b),
        None => Src::new(col, t),
    });
    let kind = spec.kind();
    if !kind_allowed(&kind, col.dtype()) {
        return Err(Error::Usage(format!(
            "a {} index is not permitted on column {:?}: its datatype has no HEP001 {}",
            kind.as_str(),
            col.name(),
            if kind == IndexKind::ChunkBloom {
                "canonical byte representation"
            } else {
                "order"
            }
        )));
    }
    let name = index_name(col.name(), &kind);
    let path = format!("{sidx}/{name}");
    let cl = col.chunk_len();
    let nch = chunk_count(nrows, cl);
    match spec {
        IndexSpec::ChunkMinMax => {
            let bytes = minmax_chunks(ed, col, fast, nrows, 0..nch)?;
            let ds = NewDataset::new(minmax_dtype(col.dtype()), &[nch])
                .maxshape(&[None])
                .chunks(&[chunk_of(nch, 1024)]);
            ed.create_dataset(sidx, &name, &ds)?;
            if nch > 0 {
                ed.write_box(&path, &[0], &[nch], &bytes)?;
            }
        }
        IndexSpec::SortedRows => {
            let s = sorted_perm(col, fast, nrows)?;
            let ds = NewDataset::new(u64_dtype(), &[nrows])
                .maxshape(&[None])
                .chunks(&[chunk_of(nrows, 65536)]);
            ed.create_dataset(sidx, &name, &ds)?;
            write_perm(ed, &path, &s.perm)?;
            ed.set_attr(&path, "nan_tail_length", s.nan_tail_length)?;
            ed.set_attr(&path, "fill_tail_length", s.fill_tail_length)?;
            ed.set_attr(&path, "ordered", bool_true())?;
        }
        IndexSpec::Bitmap { max_values } => {
            let b = bitmap_bytes(ed, col, fast, nrows, max_values)?;
            let (k, rb, vbytes) = (b.k, b.row_bytes, &b.values);
            let vname = format!("{name}.VALUES");
            let vpath = format!("{sidx}/{vname}");
            let vds = NewDataset::new(col.dtype().clone(), &[k])
                .maxshape(&[None])
                .chunks(&[chunk_of(k, 4096)]);
            ed.create_dataset(sidx, &vname, &vds)?;
            if k > 0 {
                ed.write_box(&vpath, &[0], &[k], vbytes)?;
            }
            let ds = NewDataset::new(u8_dtype(), &[k, rb])
                .maxshape(&[None, None])
                .chunks(&bitmap_chunks(k, rb));
            ed.create_dataset(sidx, &name, &ds)?;
            if k > 0 && rb > 0 {
                ed.write_box(&path, &[0, 0], &[k, rb], &b.bits)?;
            }
            ed.set_attr_object_refs(&path, "VALUES", &[vpath.as_str()], true)?;
            ed.set_attr(&path, "ordered", bool_true())?;
        }
        IndexSpec::ChunkBloom { fpr, seed } => {
            let (p, bytes) = match fast {
                Some(src) => {
                    let keys = typed::bloom_keys(&src, nrows, 0..nch)?;
                    let (m_bits, k) = bloom_size(keys.max_distinct(), fpr);
                    let p = BloomParams { k, m_bits, seed };
                    (p, typed::bloom_filters(&src.typed().num, &keys, p)?)
                }
                None => {
                    let rows = Rows::read(col, 0..nrows)?;
                    let (m_bits, k) = bloom_size(max_distinct(col, &rows, nrows), fpr);
                    let p = BloomParams { k, m_bits, seed };
                    (p, bloom_bytes(col, &rows, nrows, 0..nch, p))
                }
            };
            let (k, m_bits) = (p.k, p.m_bits);
            let mb = m_bits / 8;
            let ds = NewDataset::new(u8_dtype(), &[nch, mb])
                .maxshape(&[None, Some(mb)])
                .chunks(&bloom_chunk_shape(nch, mb));
            ed.create_dataset(sidx, &name, &ds)?;
            if nch > 0 {
                ed.write_box(&path, &[0, 0], &[nch, mb], &bytes)?;
            }
            ed.set_attr(&path, "k", k)?;
            ed.set_attr(&path, "m_bits", m_bits)?;
            ed.set_attr(&path, "seed", seed)?;
            ed.set_attr(&path, "hash_family", AttrValue::fixed_ascii(HASH_FAMILY))?;
        }
    }
    ed.set_attr(&path, "KIND", AttrValue::fixed_ascii(kind.as_str()))?;
    ed.set_attr(&path, "SOURCE_GENERATION", generation)?;
    ed.set_attr(&path, "SOURCE_NROWS", nrows)?;
    Ok(path)
}

fn u64_dtype() -> Datatype {
    Datatype::int_le(8, false)
}

fn u8_dtype() -> Datatype {
    Datatype::int_le(1, false)
}

/// How an index must be brought up to date for the pending commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// Content still right: only the tokens change.
    Tokens,
    /// `CHUNK_MINMAX` / `CHUNK_BLOOM`: recompute these chunks.
    Chunks(Range<u64>),
    /// Recompute everything.
    Full,
}

/// Bring one existing index of `col` up to date with rows `[0, nrows)`
/// (already written and flushed), as `how` says. Returns `Ok(false)` when
/// the index cannot be maintained (its structure is not ours: not
/// growable, wrong parameters) and must be deleted instead.
pub(crate) fn refresh_index(
    ed: &mut FileEditor,
    col: &Column,
    info: &IndexInfo,
    how: &Refresh,
    nrows: u64,
) -> Result<bool> {
    let path = info.path.clone();
    let fast = typed_of(col).map(|t| Src::new(col, t));
    let cl = col.chunk_len();
    let nch = chunk_count(nrows, cl);
    let shape = info.dataset.shape().to_vec();
    let growable = |dim: usize, want: u64| -> bool {
        shape.get(dim).is_some_and(|&s| s >= want)
            || info
                .dataset
                .maxshape()
                .and_then(|m| m.get(dim).copied())
                .is_some_and(|m| m.is_none_or(|m| m >= want))
    };
    match (&info.kind, how) {
        (_, Refresh::Tokens) => {}
        (IndexKind::ChunkMinMax, how) => {
            if shape.len() != 1 || !growable(0, nch) {
                return Ok(false);
            }
            let chunks = match how {
                Refresh::Chunks(r) => r.start.min(nch)..r.end.min(nch),
                _ => 0..nch,
            };
            if shape[0] < nch {
                ed.resize(&path, &[nch])?;
            }
            if !chunks.is_empty() {
                let bytes = minmax_chunks(ed, col, fast, nrows, chunks.clone())?;
                ed.write_box(&path, &[chunks.start], &[chunks.end - chunks.start], &bytes)?;
            }
        }
        (IndexKind::ChunkBloom, how) => {
            let p = &info.params;
            let (Some(k), Some(m_bits), Some(seed)) = (p.k, p.m_bits, p.seed) else {
                return Ok(false);
            };
            let bp = BloomParams { k, m_bits, seed };
            let mb = bp.m_bytes() as u64;
            if shape.len() != 2 || shape[1] != mb || !m_bits.is_multiple_of(8) || k == 0 {
                return Ok(false);
            }
            if !growable(0, nch) {
                return Ok(false);
            }
            let chunks = match how {
                Refresh::Chunks(r) => r.start.min(nch)..r.end.min(nch),
                _ => 0..nch,
            };
            if shape[0] < nch {
                ed.resize(&path, &[nch, mb])?;
            }
            if !chunks.is_empty() {
                let bytes = bloom_chunks(col, fast, nrows, chunks.clone(), bp)?;
                ed.write_box(
                    &path,
                    &[chunks.start, 0],
                    &[chunks.end - chunks.start, mb],
                    &bytes,
                )?;
            }
        }
        (IndexKind::SortedRows, _) => {
            if shape.len() != 1 || !growable(0, nrows) {
                return Ok(false);
            }
            let s = sorted_perm(col, fast, nrows)?;
            if shape[0] < nrows {
                ed.resize(&path, &[nrows])?;
            }
            write_perm(ed, &path, &s.perm)?;
            ed.set_attr(&path, "nan_tail_length", s.nan_tail_length)?;
            ed.set_attr(&path, "fill_tail_length", s.fill_tail_length)?;
            ed.set_attr(&path, "ordered", bool_true())?;
        }
        (IndexKind::Bitmap, _) => {
            // Rebuilt with the distinct values of the new rows: the values
            // dataset and the bit rows are resized to the new K.
            let Some(vpath) = info.params.values.clone() else {
                return Ok(false);
            };
            let Ok(vds) = ed.reader().dataset(&vpath) else {
                return Ok(false);
            };
            let rb = nrows.div_ceil(8);
            let v_growable = vds.shape().len() == 1
                && vds.maxshape().and_then(|m| m.first().copied()) == Some(None);
            let b_growable = shape.len() == 2
                && info
                    .dataset
                    .maxshape()
                    .is_some_and(|m| m.len() == 2 && m[0].is_none() && m[1].is_none());
            if !v_growable || !b_growable {
                return Ok(false);
            }
            let b = bitmap_bytes(ed, col, fast, nrows, usize::MAX)?;
            let (k, vbytes) = (b.k, &b.values);
            let width = shape[1].max(rb);
            ed.resize(&vpath, &[k])?;
            if k > 0 {
                ed.write_box(&vpath, &[0], &[k], vbytes)?;
            }
            ed.resize(&path, &[k, width])?;
            if k > 0 && rb > 0 {
                ed.write_box(&path, &[0, 0], &[k, rb], &b.bits)?;
            }
        }
        (IndexKind::Unknown(_), _) => return Ok(true),
    }
    Ok(true)
}
